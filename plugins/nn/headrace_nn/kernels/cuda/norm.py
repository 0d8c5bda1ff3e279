"""norm (l2_normalize) and norm_grad on CUDA, as the CPU kernel (kernels/cpu/norm.pyx): X viewed
as [outer, C, inner] around ``axis``; one block per (outer, inner) row of C values ``inner``
apart, its sum of squares (forward) or of dY * Out (gradient) reduced in a float64
shared-memory tree (rows of at most SHORT_ROW values: a thread each, summed in order). Norm =
sqrt(sum x^2 + epsilon) and Out = X / Norm in float64, rounded on store; X@GRAD =
(dY - Out * sum(dY * Out)) / Norm with Out recomputed from X and the Norm input, as the CPU
does."""
import math

from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, device_empty, empty_like, flat,
                                          float_input, split_axis)
from headrace.kernels.cuda_rows import row_grid, row_lanes, row_total

DTYPES = ("float32", "float64")


def _axis(axis, rank, op):
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is not a dim of X (rank {rank})")
    return axis + rank if axis < 0 else axis


@cuda.jit
def _norm(x, out, norm, rows, C, inner, eps, block):
    row, t, step = row_lanes(block)
    if row >= rows:
        return
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = float64(0.0)
    for c in range(t, C, step):
        v = float64(x[base + c * inner])
        s += v * v
    n = math.sqrt(row_total(buf, s, block) + eps)
    if t == 0:
        norm[row] = n
    for c in range(t, C, step):
        out[base + c * inner] = x[base + c * inner] / n


@cuda.jit
def _norm_grad(x, norm, dy, dx, rows, C, inner, block):
    row, t, step = row_lanes(block)
    if row >= rows:
        return
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    n = float64(norm[row])
    s = float64(0.0)
    for c in range(t, C, step):
        k = base + c * inner
        s += float64(dy[k]) * (x[k] / n)
    s = row_total(buf, s, block)
    for c in range(t, C, step):
        k = base + c * inner
        dx[k] = (dy[k] - (x[k] / n) * s) / n


class Norm:
    def __init__(self, attrs, info=None):
        self.axis, self.eps = attrs["axis"], attrs["epsilon"]

    def __call__(self, x):
        float_input(x, "norm", "X")
        ax = _axis(self.axis, x.ndim, "norm")
        outer, C, inner = split_axis(tuple(x.shape), ax, "norm")
        out = empty_like(x)
        nshape = tuple(x.shape[:ax]) + (1,) + tuple(x.shape[ax + 1:])
        norm = device_empty(nshape, x.dtype)
        if outer * inner:
            blocks, threads, block = row_grid(outer * inner, C)
            _norm[blocks, threads, current_stream()](
                flat(x), flat(out), flat(norm), outer * inner, C, inner, float(self.eps), block)
        return out, norm


class NormGrad:
    """norm_grad(X, Norm, Out@GRAD) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, x, norm, dout):
        float_input(x, "norm_grad", "X")
        ax = _axis(self.axis, x.ndim, "norm_grad")
        want = tuple(x.shape[:ax]) + (1,) + tuple(x.shape[ax + 1:])
        if tuple(norm.shape) != want or tuple(dout.shape) != tuple(x.shape):
            raise ValueError(f"norm_grad: Norm must be {list(want)} and Out@GRAD "
                             f"{list(x.shape)}; found {list(norm.shape)}, "
                             f"{list(dout.shape)}")
        outer, C, inner = split_axis(tuple(x.shape), ax, "norm_grad")
        dx = empty_like(x)
        if outer * inner * C:
            blocks, threads, block = row_grid(outer * inner, C)
            _norm_grad[blocks, threads, current_stream()](
                flat(x), flat(norm), flat(dout), flat(dx), outer * inner, C, inner, block)
        return (dx,)


KERNELS = [("norm", Norm, DTYPES), ("norm_grad", NormGrad, DTYPES)]
