# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""CPU kernels of sync_batch_norm: per-channel sums in Cython, reduced over the ranks with MPI.

X is viewed as [outer, C, inner] (NCHW: [N, C, H*W]; NHWC: [N*H*W, C, 1]), one loop nest for
both layouts. Sums are float64 whatever X's type (as batch_norm's reference). The statistics
are two-pass (the mean first, then the mean squared deviation, one all-reduce each), so N ranks
of batch B give the numbers of one rank with batch N*B to rounding rather than the
cancellation of E[x^2] - E[x]^2. The backward pass all-reduces sum(dY) and sum(dY * xhat)
together; Scale@GRAD and Bias@GRAD stay this rank's own sums.
"""
import numpy as np

cimport numpy as cnp
from headrace.kernels.common cimport real

from headrace_distributed.comm import collective, communicator, mpi

cnp.import_array()

RING = 0


cdef void _sums(const real[:, :, ::1] x, double[::1] out) noexcept nogil:
    cdef Py_ssize_t o, c, i
    cdef double s
    for c in range(x.shape[1]):
        out[c] = 0
    for o in range(x.shape[0]):
        for c in range(x.shape[1]):
            s = 0
            for i in range(x.shape[2]):
                s += x[o, c, i]
            out[c] += s


cdef void _sq_dev(const real[:, :, ::1] x, const double[::1] mean, double[::1] out) noexcept nogil:
    cdef Py_ssize_t o, c, i
    cdef double s, d
    for c in range(x.shape[1]):
        out[c] = 0
    for o in range(x.shape[0]):
        for c in range(x.shape[1]):
            s = 0
            for i in range(x.shape[2]):
                d = x[o, c, i] - mean[c]
                s += d * d
            out[c] += s


cdef void _affine(const real[:, :, ::1] x, const double[::1] a, const double[::1] b,
                  real[:, :, ::1] y) noexcept nogil:
    """y = x * a[c] + b[c]: the normalization with its scale and shift folded per channel."""
    cdef Py_ssize_t o, c, i
    for o in range(x.shape[0]):
        for c in range(x.shape[1]):
            for i in range(x.shape[2]):
                y[o, c, i] = <real>(x[o, c, i] * a[c] + b[c])


cdef void _grad_sums(const real[:, :, ::1] x, const real[:, :, ::1] dy, const double[::1] mean,
                     const double[::1] inv, double[::1] sum_dy,
                     double[::1] sum_dy_xhat) noexcept nogil:
    cdef Py_ssize_t o, c, i
    cdef double s, t, g
    for c in range(x.shape[1]):
        sum_dy[c] = 0
        sum_dy_xhat[c] = 0
    for o in range(x.shape[0]):
        for c in range(x.shape[1]):
            s = 0
            t = 0
            for i in range(x.shape[2]):
                g = dy[o, c, i]
                s += g
                t += g * (x[o, c, i] - mean[c])
            sum_dy[c] += s
            sum_dy_xhat[c] += t * inv[c]


cdef void _grad_x(const real[:, :, ::1] x, const real[:, :, ::1] dy, const double[::1] mean,
                  const double[::1] inv, const double[::1] g, const double[::1] mean_dy,
                  const double[::1] mean_dy_xhat, real[:, :, ::1] dx) noexcept nogil:
    """dx = g[c] * (dy - mean_dy[c] - xhat * mean_dy_xhat[c]), g = Scale * inv (mean_dy and
    mean_dy_xhat zero with global statistics)."""
    cdef Py_ssize_t o, c, i
    cdef double xhat
    for o in range(x.shape[0]):
        for c in range(x.shape[1]):
            for i in range(x.shape[2]):
                xhat = (x[o, c, i] - mean[c]) * inv[c]
                dx[o, c, i] = <real>(g[c] * (dy[o, c, i] - mean_dy[c] - xhat * mean_dy_xhat[c]))


def _view(x, str layout):
    """X as a C-contiguous [outer, C, inner] array, and its channel count."""
    x = np.ascontiguousarray(x)
    if layout == "NHWC":
        c = x.shape[x.ndim - 1]
        return x.reshape(-1, c, 1), c
    c = x.shape[1]
    return x.reshape(x.shape[0], c, -1), c


def _check_float(op_type, **arrays):
    for name, a in arrays.items():
        if a is not None and a.dtype.name not in ("float32", "float64"):
            raise TypeError(f"{op_type}: {name} must be float32 or float64, got {a.dtype}")


def _global_stats(attrs):
    test_mode = attrs["is_test"] and not attrs["trainable_statistics"]
    return bool(test_mode or attrs["use_global_stats"])


def _allreduce(values, what):
    comm = communicator(RING, what)
    out = np.empty_like(values)
    collective(comm.Iallreduce, values, out, op=mpi().SUM, what=f"{what} (ring {RING})",
               comm=comm)
    return out


def _sums_of(v):
    out = np.empty(v.shape[1])
    if v.dtype == np.float32:
        _sums[float](v, out)
    else:
        _sums[double](v, out)
    return out


def _sq_dev_of(v, mean):
    out = np.empty(v.shape[1])
    if v.dtype == np.float32:
        _sq_dev[float](v, mean, out)
    else:
        _sq_dev[double](v, mean, out)
    return out


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


class SyncBatchNorm:
    def __init__(self, attrs, info=None):
        self.attrs = attrs
        self.global_stats = _global_stats(attrs)
        self.reserve = info is None or info.n_outputs("ReserveSpace") > 0

    def __call__(self, x, scale, bias, mean, variance, momentum_tensor=None):
        a = self.attrs
        _check_float("sync_batch_norm", X=x, Scale=scale, Bias=bias, Mean=mean,
                     Variance=variance)
        if not 2 <= x.ndim <= 5:
            raise ValueError(f"sync_batch_norm: X must be 2-D to 5-D, got shape {x.shape}")
        v, channels = _view(x, a["data_layout"])
        for name, s in (("Scale", scale), ("Bias", bias), ("Mean", mean),
                        ("Variance", variance)):
            if s.shape != (channels,):
                raise ValueError(f"sync_batch_norm: {name} must have shape [{channels}], got "
                                 f"{list(s.shape)}")
        eps = float(a["epsilon"])
        momentum = float(a["momentum"]) if momentum_tensor is None \
            else float(np.asarray(momentum_tensor).reshape(-1)[0])
        pdtype = mean.dtype
        if self.global_stats:
            use_mean, use_var = _f64(mean), _f64(variance)
            mean_out, var_out = mean.copy(), variance.copy()
            saved_mean = saved_inv = np.zeros(channels, pdtype)
        else:
            local = np.empty(channels + 1)
            local[:channels] = _sums_of(v)
            local[channels] = x.size // channels if channels else 0
            total = _allreduce(local, "sync_batch_norm")
            count = total[channels]
            if count == 0:
                raise ValueError("sync_batch_norm: the ranks' batches are all empty")
            use_mean = total[:channels] / count
            use_var = _allreduce(_sq_dev_of(v, use_mean), "sync_batch_norm") / count
            mean_out = (mean * momentum + use_mean * (1 - momentum)).astype(pdtype)
            var_out = (variance * momentum + use_var * (1 - momentum)).astype(pdtype)
            saved_mean = use_mean.astype(pdtype)
            saved_inv = (1 / np.sqrt(use_var + eps)).astype(pdtype)
        inv = 1 / np.sqrt(use_var + eps)
        mult = _f64(scale) * inv
        shift = _f64(bias) - use_mean * mult
        y = np.empty_like(v)
        if v.dtype == np.float32:
            _affine[float](v, mult, shift, y)
        else:
            _affine[double](v, mult, shift, y)
        return (y.reshape(x.shape), mean_out, var_out, saved_mean, saved_inv,
                np.empty(0, x.dtype) if self.reserve else None)


class SyncBatchNormGrad:
    def __init__(self, attrs, info=None):
        self.attrs = attrs
        self.global_stats = _global_stats(attrs)
        self.want = {s: info is None or info.wants(s)
                     for s in ("X@GRAD", "Scale@GRAD", "Bias@GRAD")}

    def __call__(self, x, scale, bias, mean, variance, saved_mean, saved_inv, dy):
        a = self.attrs
        _check_float("sync_batch_norm_grad", X=x, Scale=scale, SavedMean=saved_mean,
                     SavedVariance=saved_inv)
        if x.dtype != dy.dtype:
            raise TypeError(f"sync_batch_norm_grad: Y@GRAD is {dy.dtype}, X {x.dtype}")
        if x.ndim < 2 or x.ndim > 5:
            raise ValueError(f"sync_batch_norm_grad: X must be 2-D to 5-D, got shape {x.shape}")
        if x.shape != dy.shape:
            raise ValueError(f"sync_batch_norm_grad: Y@GRAD has shape {dy.shape}, X {x.shape}")
        v, channels = _view(x, a["data_layout"])
        g_v, _ = _view(dy, a["data_layout"])
        for name, s in (("Scale", scale), ("SavedMean", saved_mean),
                        ("SavedVariance", saved_inv)):
            if s.shape != (channels,):
                raise ValueError(f"sync_batch_norm_grad: {name} must have shape [{channels}], "
                                 f"got {list(s.shape)}")
        eps = float(a["epsilon"])
        if self.global_stats:
            if mean is None or variance is None:
                raise ValueError("sync_batch_norm_grad: global statistics need Mean and "
                                 "Variance bound")
            mu, inv = _f64(mean), 1 / np.sqrt(_f64(variance) + eps)
        else:
            mu, inv = _f64(saved_mean), _f64(saved_inv)
        sum_dy, sum_dy_xhat = np.empty(channels), np.empty(channels)
        if v.dtype == np.float32:
            _grad_sums[float](v, g_v, mu, inv, sum_dy, sum_dy_xhat)
        else:
            _grad_sums[double](v, g_v, mu, inv, sum_dy, sum_dy_xhat)
        dx = None
        if self.want["X@GRAD"]:
            zeros = np.zeros(channels)
            mean_dy = mean_dy_xhat = zeros
            if not self.global_stats:
                local = np.concatenate([sum_dy, sum_dy_xhat, [x.size // channels]])
                total = _allreduce(local, "sync_batch_norm_grad")
                m = total[2 * channels]
                mean_dy = np.ascontiguousarray(total[:channels] / m)
                mean_dy_xhat = np.ascontiguousarray(total[channels:2 * channels] / m)
            g = _f64(scale) * inv
            dx = np.empty_like(v)
            if v.dtype == np.float32:
                _grad_x[float](v, g_v, mu, inv, g, mean_dy, mean_dy_xhat, dx)
            else:
                _grad_x[double](v, g_v, mu, inv, g, mean_dy, mean_dy_xhat, dx)
            dx = dx.reshape(x.shape)
        pdtype = scale.dtype
        dscale = sum_dy_xhat.astype(pdtype) if self.want["Scale@GRAD"] else None
        dbias = sum_dy.astype(pdtype) if self.want["Bias@GRAD"] else None
        return dx, dscale, dbias


KERNELS = [("sync_batch_norm", SyncBatchNorm, ("float32", "float64")),
           ("sync_batch_norm_grad", SyncBatchNormGrad, ("float32", "float64"))]
