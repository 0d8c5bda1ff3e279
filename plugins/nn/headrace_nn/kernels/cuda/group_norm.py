"""group_norm and group_norm_grad on CUDA, as the CPU kernel (kernels/cpu/group_norm.pyx): X
[N, C, S...] normalized over each image's groups of C/groups channels; Mean / Variance
[N, groups]. One block per (n, group) row and one per channel for Scale@GRAD / Bias@GRAD, the
sums in float64 shared-memory trees (kernels in _norm_rows.py)."""
import numpy as np

from headrace.kernels.cuda_launch import device_empty, empty_like, float_input

from ._norm_rows import forward, gradients, per_channel

DTYPES = ("float32", "float64")


def _grouped(x, groups, op):
    if x.ndim < 2 or groups < 1 or x.shape[1] % groups:
        raise ValueError(f"{op}: X of shape {list(x.shape)} cannot form {groups} groups of "
                         f"channels")
    N, C = x.shape[0], x.shape[1]
    S = int(np.prod(x.shape[2:], dtype=np.int64))
    return N, C, S, C // groups


class GroupNorm:
    def __init__(self, attrs, info=None):
        self.eps, self.groups = attrs["epsilon"], attrs["groups"]

    def __call__(self, x, scale, bias):
        op = "group_norm"
        float_input(x, op, "X")
        N, C, S, cg = _grouped(x, self.groups, op)
        per_channel(scale, C, op, "Scale")
        per_channel(bias, C, op, "Bias")
        y = empty_like(x)
        mean = device_empty((N, self.groups), x.dtype)
        var = device_empty((N, self.groups), x.dtype)
        forward(x, scale, bias, y, mean, var, N * self.groups, cg * S, S, self.groups, cg,
                self.eps, True, False)
        return y, mean, var


class GroupNormGrad:
    """group_norm_grad(X, Scale, Bias, Mean, Variance, Y@GRAD) -> (X@GRAD, Scale@GRAD,
    Bias@GRAD); Scale@GRAD / Bias@GRAD only where Scale / Bias are bound, as the CPU."""

    def __init__(self, attrs, info=None):
        self.eps, self.groups = attrs["epsilon"], attrs["groups"]

    def __call__(self, x, scale, bias, mean, variance, dy):
        op = "group_norm_grad"
        float_input(x, op, "X")
        N, C, S, cg = _grouped(x, self.groups, op)
        G = self.groups
        if (tuple(mean.shape) != (N, G) or tuple(variance.shape) != (N, G)
                or tuple(dy.shape) != tuple(x.shape)):
            raise ValueError(f"{op}: Mean/Variance must be [{N}, {G}] and Y@GRAD "
                             f"{list(x.shape)}; found {list(mean.shape)}, "
                             f"{list(variance.shape)}, {list(dy.shape)}")
        return gradients(x, scale, bias, mean, variance, dy, N * G, cg * S, S, G, cg, N, C,
                         self.eps, False, op)


KERNELS = [("group_norm", GroupNorm, DTYPES), ("group_norm_grad", GroupNormGrad, DTYPES)]
