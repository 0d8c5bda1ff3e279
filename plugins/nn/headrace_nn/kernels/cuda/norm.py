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
                                          float_input, grid, split_axis, tree_reduce)

# Rows of at most this many values run a thread each (summed in order, no barriers): a block of
# ROW_THREADS lanes would leave most of them idle through every tree step.
SHORT_ROW = 32

DTYPES = ("float32", "float64")


def _axis(axis, rank, op):
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is not a dim of X (rank {rank})")
    return axis + rank if axis < 0 else axis


@cuda.jit(device=True)
def _row(block):
    """(row, first lane, lane step) of this thread: a block's threads share a row, or a
    thread owns one."""
    if block:
        return cuda.blockIdx.x, cuda.threadIdx.x, ROW_THREADS
    return cuda.grid(1), 0, 1


@cuda.jit(device=True)
def _total(buf, s, block):
    """The row's total of the lanes' partial sums ``s`` (a block's tree; a lone thread's own)."""
    if not block:
        return s
    t = cuda.threadIdx.x
    buf[t] = s
    cuda.syncthreads()
    tree_reduce(buf, t, False)
    return buf[0]


def _shape(rows, C):
    block = C > SHORT_ROW
    return ((rows, ROW_THREADS) if block else grid(rows)) + (block,)


@cuda.jit
def _norm(x, out, norm, rows, C, inner, eps, block):
    row, t, step = _row(block)
    if row >= rows:
        return
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = float64(0.0)
    for c in range(t, C, step):
        v = float64(x[base + c * inner])
        s += v * v
    n = math.sqrt(_total(buf, s, block) + eps)
    if t == 0:
        norm[row] = n
    for c in range(t, C, step):
        out[base + c * inner] = x[base + c * inner] / n


@cuda.jit
def _norm_grad(x, norm, dy, dx, rows, C, inner, block):
    row, t, step = _row(block)
    if row >= rows:
        return
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    n = float64(norm[row])
    s = float64(0.0)
    for c in range(t, C, step):
        k = base + c * inner
        s += float64(dy[k]) * (x[k] / n)
    s = _total(buf, s, block)
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
            blocks, threads, block = _shape(outer * inner, C)
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
            blocks, threads, block = _shape(outer * inner, C)
            _norm_grad[blocks, threads, current_stream()](
                flat(x), flat(norm), flat(dout), flat(dx), outer * inner, C, inner, block)
        return (dx,)


KERNELS = [("norm", Norm, DTYPES), ("norm_grad", NormGrad, DTYPES)]
