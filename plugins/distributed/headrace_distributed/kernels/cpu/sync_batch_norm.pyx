"""CPU kernels of sync_batch_norm: per-channel sums reduced over the ranks with MPI.

The arithmetic is NumPy over float64 sums (as the batch_norm reference); the statistics are
two-pass (mean first, then the mean squared deviation) so that N ranks of batch B give the
numbers of one rank with batch N*B to rounding, not the cancellation of E[x^2] - E[x]^2.
"""
import numpy as np

from headrace_distributed.comm import collective, communicator, mpi

RING = 0


def _layout(x, attrs):
    caxis = x.ndim - 1 if attrs["data_layout"] == "NHWC" else 1
    axes = tuple(i for i in range(x.ndim) if i != caxis)
    bshape = [1] * x.ndim
    bshape[caxis] = x.shape[caxis]
    return axes, bshape, x.shape[caxis]


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
        axes, bshape, channels = _layout(x, a)
        for name, v in (("Scale", scale), ("Bias", bias), ("Mean", mean),
                        ("Variance", variance)):
            if v.shape != (channels,):
                raise ValueError(f"sync_batch_norm: {name} must have shape [{channels}], got "
                                 f"{list(v.shape)}")
        eps = float(a["epsilon"])
        momentum = float(a["momentum"]) if momentum_tensor is None \
            else float(np.asarray(momentum_tensor).reshape(-1)[0])
        pdtype = mean.dtype
        xd = x.astype(np.float64)
        if self.global_stats:
            use_mean, use_var = mean.astype(np.float64), variance.astype(np.float64)
            mean_out, var_out = mean.copy(), variance.copy()
            saved_mean = saved_inv = np.zeros(channels, pdtype)
        else:
            local = np.empty(channels + 1)
            local[:channels] = xd.sum(axis=axes)
            local[channels] = x.size // channels
            total = _allreduce(local, "sync_batch_norm")
            count = total[channels]
            if count == 0:
                raise ValueError("sync_batch_norm: the ranks' batches are all empty")
            use_mean = total[:channels] / count
            centered = xd - use_mean.reshape(bshape)
            use_var = _allreduce(np.ascontiguousarray((centered * centered).sum(axis=axes)),
                                 "sync_batch_norm") / count
            mean_out = (mean * momentum + use_mean * (1 - momentum)).astype(pdtype)
            var_out = (variance * momentum + use_var * (1 - momentum)).astype(pdtype)
            saved_mean = use_mean.astype(pdtype)
            saved_inv = (1 / np.sqrt(use_var + eps)).astype(pdtype)
        y = (xd - use_mean.reshape(bshape)) / np.sqrt(use_var.reshape(bshape) + eps)
        y = y * scale.astype(np.float64).reshape(bshape) + bias.astype(np.float64).reshape(bshape)
        return (y.astype(x.dtype), mean_out, var_out, saved_mean, saved_inv,
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
        axes, bshape, _ = _layout(x, a)
        xd, dyd = x.astype(np.float64), dy.astype(np.float64)
        eps = float(a["epsilon"])
        if self.global_stats:
            if mean is None or variance is None:
                raise ValueError("sync_batch_norm_grad: global statistics need Mean and "
                                 "Variance bound")
            mu = mean.astype(np.float64).reshape(bshape)
            inv = 1 / np.sqrt(variance.astype(np.float64).reshape(bshape) + eps)
        else:
            mu = saved_mean.astype(np.float64).reshape(bshape)
            inv = saved_inv.astype(np.float64).reshape(bshape)
        xhat = (xd - mu) * inv
        sum_dy, sum_dy_xhat = dyd.sum(axis=axes), (dyd * xhat).sum(axis=axes)
        dx = None
        if self.want["X@GRAD"]:
            g = scale.astype(np.float64).reshape(bshape) * inv
            if self.global_stats:
                dx = g * dyd
            else:
                channels = sum_dy.size
                local = np.concatenate([sum_dy, sum_dy_xhat, [x.size // channels]])
                total = _allreduce(local, "sync_batch_norm_grad")
                m = total[-1]
                mean_dy = total[:channels].reshape(bshape) / m
                mean_dy_xhat = total[channels:2 * channels].reshape(bshape) / m
                dx = g * (dyd - mean_dy - xhat * mean_dy_xhat)
            dx = dx.astype(x.dtype)
        pdtype = scale.dtype
        dscale = sum_dy_xhat.astype(pdtype) if self.want["Scale@GRAD"] else None
        dbias = sum_dy.astype(pdtype) if self.want["Bias@GRAD"] else None
        return dx, dscale, dbias


KERNELS = [("sync_batch_norm", SyncBatchNorm, ("float32", "float64")),
           ("sync_batch_norm_grad", SyncBatchNormGrad, ("float32", "float64"))]
