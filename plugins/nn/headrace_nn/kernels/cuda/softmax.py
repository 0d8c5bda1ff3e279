"""softmax and softmax_grad on CUDA: one block per softmax (a row of C values ``inner`` apart
in the [outer, C, inner] view), its threads striding over C, the max and the sums reduced as
shared-memory trees. Sums accumulate in float64 like the CPU kernel, so float32 rows of many
classes keep their precision."""
import math

from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, empty_like, flat, float_input,
                                          same_shape_dtype, split_axis)
from headrace.kernels.cuda_rows import block_reduce


@cuda.jit
def _softmax(x, out, C, inner):
    row = cuda.blockIdx.x                 # one block per (o, i) pair
    t = cuda.threadIdx.x
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    m = -math.inf
    for c in range(t, C, ROW_THREADS):
        v = x[base + c * inner]
        if v > m:
            m = v
    m = block_reduce(buf, m, True)
    s = 0.0
    for c in range(t, C, ROW_THREADS):
        e = math.exp(x[base + c * inner] - m)     # <= 1: the max subtracted, nothing overflows
        out[base + c * inner] = e
        s += e
    s = block_reduce(buf, s, False)
    inv = 1.0 / s
    for c in range(t, C, ROW_THREADS):
        out[base + c * inner] = out[base + c * inner] * inv


@cuda.jit
def _softmax_grad(y, dy, dx, C, inner):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    base = (row // inner) * C * inner + row % inner
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = 0.0
    for c in range(t, C, ROW_THREADS):
        k = base + c * inner
        s += float64(y[k]) * dy[k]
    s = block_reduce(buf, s, False)
    for c in range(t, C, ROW_THREADS):
        k = base + c * inner
        dx[k] = y[k] * (dy[k] - s)


class Softmax:
    def __init__(self, attrs, info=None):
        self.axis = attrs.get("axis", -1)

    def __call__(self, x):
        float_input(x, "softmax", "X")
        outer, C, inner = split_axis(tuple(x.shape), self.axis, "softmax")
        out = empty_like(x)
        if outer * C * inner:
            _softmax[outer * inner, ROW_THREADS, current_stream()](flat(x), flat(out), C, inner)
        return (out,)


class SoftmaxGrad:
    """softmax_grad(Out, Out@GRAD) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None):
        self.axis = attrs.get("axis", -1)

    def __call__(self, out, dout):
        name = "softmax_grad"
        float_input(out, name, "Out")
        float_input(dout, name, "Out@GRAD")
        same_shape_dtype(out, dout, name, "Out", "Out@GRAD")
        outer, C, inner = split_axis(tuple(out.shape), self.axis, name)
        dx = empty_like(out)
        if outer * C * inner:
            _softmax_grad[outer * inner, ROW_THREADS, current_stream()](
                flat(out), flat(dout), flat(dx), C, inner)
        return (dx,)


DTYPES = ("float32", "float64")
KERNELS = [("softmax", Softmax, DTYPES), ("softmax_grad", SoftmaxGrad, DTYPES)]
