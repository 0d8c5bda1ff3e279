# cython: language_level=3
"""instance_norm and its gradient with NumPy's reductions over [N * C, positions]."""
import numpy as np

DTYPES = ("float32", "float64")


def _instances(x, op):
    a = np.asarray(x)
    if a.ndim < 3:
        raise ValueError(f"{op}: X must be [N, C, positions...], found {list(a.shape)}")
    return a, a.reshape(a.shape[0] * a.shape[1], -1).astype(np.float64)


def _per_channel(p, a, op, slot):
    if p is None:
        return None
    v = np.asarray(p, np.float64).reshape(-1)
    if v.size != a.shape[1]:
        raise ValueError(f"{op}: {slot} holds {v.size} values, X has {a.shape[1]} channels")
    return np.tile(v, a.shape[0])[:, None]   # one row per instance (n, c)


cdef class InstanceNorm:
    cdef double eps

    def __init__(self, dict attrs, info=None):
        self.eps = attrs["epsilon"]

    def __call__(self, x, scale, bias):
        a, r = _instances(x, "instance_norm")
        size = max(r.shape[1], 1)
        mean = r.sum(axis=1) / size
        inv = 1 / np.sqrt(np.square(r - mean[:, None]).sum(axis=1) / size + self.eps)
        y = (r - mean[:, None]) * inv[:, None]
        s, b = _per_channel(scale, a, "instance_norm", "Scale"), \
            _per_channel(bias, a, "instance_norm", "Bias")
        if s is not None:
            y = y * s
        if b is not None:
            y = y + b
        return y.reshape(a.shape).astype(a.dtype), mean.astype(a.dtype), inv.astype(a.dtype)


cdef class InstanceNormGrad:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, scale, bias, saved_mean, saved_inv, dy):
        op = "instance_norm_grad"
        a, r = _instances(x, op)
        m = np.asarray(saved_mean, np.float64).reshape(-1)
        inv = np.asarray(saved_inv, np.float64).reshape(-1)
        d = np.asarray(dy, np.float64)
        if m.size != r.shape[0] or inv.size != r.shape[0] or d.shape != a.shape:
            raise ValueError(f"{op}: SavedMean/SavedVariance must hold {r.shape[0]} values and "
                             f"Y@GRAD be {list(a.shape)}; found {m.size}, {inv.size}, "
                             f"{list(d.shape)}")
        d = d.reshape(r.shape)
        xhat = (r - m[:, None]) * inv[:, None]
        n, c = a.shape[0], a.shape[1]
        ds = None if scale is None else (d * xhat).reshape(n, c, -1).sum(axis=(0, 2))
        db = None if bias is None else d.reshape(n, c, -1).sum(axis=(0, 2))
        s = _per_channel(scale, a, op, "Scale")
        g = d * s if s is not None else d
        size = max(r.shape[1], 1)
        dx = inv[:, None] * (g - g.sum(axis=1, keepdims=True) / size -
                             xhat * (g * xhat).sum(axis=1, keepdims=True) / size)
        return (dx.reshape(a.shape).astype(a.dtype),
                None if ds is None else ds.reshape(np.shape(scale)).astype(a.dtype),
                None if db is None else db.reshape(np.shape(bias)).astype(a.dtype))


KERNELS = [("instance_norm", InstanceNorm, DTYPES),
           ("instance_norm_grad", InstanceNormGrad, DTYPES)]
