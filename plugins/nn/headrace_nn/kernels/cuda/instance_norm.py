"""instance_norm and instance_norm_grad on CUDA, as the CPU kernel
(kernels/cpu/instance_norm.pyx): X [N, C, S...] normalized over each (n, c) instance's S
positions; SavedMean / SavedVariance (the latter 1/sqrt(var + eps)) [N*C]. One block per
instance and one per channel for Scale@GRAD / Bias@GRAD, the sums in float64 shared-memory
trees (kernels in _norm_rows.py)."""
import numpy as np

from headrace.kernels.cuda_launch import device_empty, empty_like, float_input

from ._norm_rows import forward, gradients, per_channel

DTYPES = ("float32", "float64")


def _instances(x, op):
    if x.ndim < 3:
        raise ValueError(f"{op}: X must be [N, C, positions...], found {list(x.shape)}")
    return x.shape[0], x.shape[1], int(np.prod(x.shape[2:], dtype=np.int64))


class InstanceNorm:
    def __init__(self, attrs, info=None):
        self.eps = attrs["epsilon"]

    def __call__(self, x, scale, bias):
        op = "instance_norm"
        float_input(x, op, "X")
        N, C, S = _instances(x, op)
        per_channel(scale, C, op, "Scale")
        per_channel(bias, C, op, "Bias")
        y = empty_like(x)
        mean = device_empty((N * C,), x.dtype)
        inv = device_empty((N * C,), x.dtype)
        forward(x, scale, bias, y, mean, inv, N * C, S, S, C, 1, self.eps, False, True)
        return y, mean, inv


class InstanceNormGrad:
    """instance_norm_grad(X, Scale, Bias, SavedMean, SavedVariance, Y@GRAD) -> (X@GRAD,
    Scale@GRAD, Bias@GRAD); Scale@GRAD / Bias@GRAD only where Scale / Bias are bound."""

    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x, scale, bias, saved_mean, saved_inv, dy):
        op = "instance_norm_grad"
        float_input(x, op, "X")
        N, C, S = _instances(x, op)
        if saved_mean.size != N * C or saved_inv.size != N * C or \
                tuple(dy.shape) != tuple(x.shape):
            raise ValueError(f"{op}: SavedMean/SavedVariance must hold {N * C} values and "
                             f"Y@GRAD be {list(x.shape)}; found {saved_mean.size}, "
                             f"{saved_inv.size}, {list(dy.shape)}")
        return gradients(x, scale, bias, saved_mean, saved_inv, dy, N * C, S, S, C, 1, N, C,
                         0.0, True, op)


KERNELS = [("instance_norm", InstanceNorm, DTYPES),
           ("instance_norm_grad", InstanceNormGrad, DTYPES)]
