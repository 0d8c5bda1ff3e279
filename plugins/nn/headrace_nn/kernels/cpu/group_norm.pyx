# cython: language_level=3
"""group_norm and its gradient with NumPy's reductions over [N, groups, C / groups * S]."""
import numpy as np

DTYPES = ("float32", "float64")


def _grouped(x, int groups, op):
    a = np.asarray(x)
    if a.ndim < 2 or groups < 1 or a.shape[1] % groups:
        raise ValueError(f"{op}: X of shape {list(a.shape)} cannot form {groups} groups of "
                         f"channels")
    return a, a.reshape(a.shape[0], groups, -1).astype(np.float64)


def _per_channel(p, c, op, slot):
    if p is None:
        return None
    v = np.asarray(p, np.float64).reshape(-1)
    if v.size != c:
        raise ValueError(f"{op}: {slot} holds {v.size} values, X has {c} channels")
    return v


def _channel_shape(a):
    return (1, a.shape[1]) + (1,) * (a.ndim - 2)


cdef class GroupNorm:
    cdef double eps
    cdef int groups

    def __init__(self, dict attrs, info=None):
        self.eps, self.groups = attrs["epsilon"], attrs["groups"]

    def __call__(self, x, scale, bias):
        a, g = _grouped(x, self.groups, "group_norm")
        size = max(g.shape[2], 1)  # an empty group (no positions): zero statistics
        mean = g.sum(axis=2) / size
        var = np.square(g - mean[..., None]).sum(axis=2) / size
        y = ((g - mean[..., None]) / np.sqrt(var[..., None] + self.eps)).reshape(a.shape)
        s = _per_channel(scale, a.shape[1], "group_norm", "Scale")
        b = _per_channel(bias, a.shape[1], "group_norm", "Bias")
        if s is not None:
            y = y * s.reshape(_channel_shape(a))
        if b is not None:
            y = y + b.reshape(_channel_shape(a))
        return y.astype(a.dtype), mean.astype(a.dtype), var.astype(a.dtype)


cdef class GroupNormGrad:
    cdef double eps
    cdef int groups

    def __init__(self, dict attrs, info=None):
        self.eps, self.groups = attrs["epsilon"], attrs["groups"]

    def __call__(self, x, scale, bias, mean, variance, dy):
        op = "group_norm_grad"
        a, g = _grouped(x, self.groups, op)
        n = a.shape[0]
        m = np.asarray(mean, np.float64)
        v = np.asarray(variance, np.float64)
        d = np.asarray(dy, np.float64)
        if m.shape != (n, self.groups) or v.shape != m.shape or d.shape != a.shape:
            raise ValueError(f"{op}: Mean/Variance must be [{n}, {self.groups}] and Y@GRAD "
                             f"{list(a.shape)}; found {list(m.shape)}, {list(v.shape)}, "
                             f"{list(d.shape)}")
        inv = 1 / np.sqrt(v[..., None] + self.eps)
        xhat = ((g - m[..., None]) * inv).reshape(a.shape)
        axes = (0,) + tuple(range(2, a.ndim))
        s = _per_channel(scale, a.shape[1], op, "Scale")
        ds = None if scale is None else (d * xhat).sum(axis=axes)
        db = None if bias is None else d.sum(axis=axes)
        gs = d * s.reshape(_channel_shape(a)) if s is not None else d
        gs = gs.reshape(g.shape)
        xh = xhat.reshape(g.shape)
        size = max(g.shape[2], 1)
        dx = inv * (gs - gs.sum(axis=2, keepdims=True) / size -
                    xh * (gs * xh).sum(axis=2, keepdims=True) / size)
        return (dx.reshape(a.shape).astype(a.dtype),
                None if ds is None else ds.reshape(np.shape(scale)).astype(a.dtype),
                None if db is None else db.reshape(np.shape(bias)).astype(a.dtype))


KERNELS = [("group_norm", GroupNorm, DTYPES), ("group_norm_grad", GroupNormGrad, DTYPES)]
