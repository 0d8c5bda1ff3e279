"""norm (l2_normalize) and norm_grad on CUDA, as the CPU kernel (kernels/cpu/norm.pyx): X viewed
as [outer, C, inner] around ``axis``; one block per (outer, inner) row of C values ``inner``
apart, its sum of squares (forward) or of dY * Out (gradient) reduced in a float64
shared-memory tree. Norm = sqrt(sum x^2 + epsilon) and Out = X / Norm in float64, rounded on
store; X@GRAD = (dY - Out * sum(dY * Out)) / Norm with Out recomputed from X and the Norm
input, as the CPU does."""
import math

from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, device_empty, empty_like, flat,
                                          float_input, split_axis, tree_reduce)

DTYPES = ("float32", "float64")


def _axis(axis, rank, op):
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is not a dim of X (rank {rank})")
    return axis + rank if axis < 0 else axis


@cuda.jit
def _norm(x, out, norm, C, inner, eps):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = float64(0.0)
    for c in range(t, C, ROW_THREADS):
        v = float64(x[base + c * inner])
        s += v * v
    buf[t] = s
    cuda.syncthreads()
    tree_reduce(buf, t, False)
    n = math.sqrt(buf[0] + eps)
    if t == 0:
        norm[row] = n
    for c in range(t, C, ROW_THREADS):
        out[base + c * inner] = x[base + c * inner] / n


@cuda.jit
def _norm_grad(x, norm, dy, dx, C, inner):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    n = float64(norm[row])
    s = float64(0.0)
    for c in range(t, C, ROW_THREADS):
        k = base + c * inner
        s += float64(dy[k]) * (x[k] / n)
    buf[t] = s
    cuda.syncthreads()
    tree_reduce(buf, t, False)
    s = buf[0]
    for c in range(t, C, ROW_THREADS):
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
            _norm[outer * inner, ROW_THREADS, current_stream()](
                flat(x), flat(out), flat(norm), C, inner, float(self.eps))
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
            _norm_grad[outer * inner, ROW_THREADS, current_stream()](
                flat(x), flat(norm), flat(dout), flat(dx), C, inner)
        return (dx,)


KERNELS = [("norm", Norm, DTYPES), ("norm_grad", NormGrad, DTYPES)]
