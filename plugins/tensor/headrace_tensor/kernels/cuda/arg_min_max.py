"""arg_max and arg_min on CUDA, as the CPU kernel (NumPy's argmax/argmin): the first index on
ties, the first NaN when there is one, keepdims, flatten (a 0-D result, or all ones with
keepdims), Out in int32 or int64.

One block per output element of the [outer, n, inner] view (flatten: one block over all of X),
its threads striding over the n candidates in index order, so each keeps its own best
(value, index) pair; the pairs are combined as a shared-memory tree that prefers a NaN, then
the better value, then the smaller index. At most SHORT candidates: one thread per output
element, scanning them in order. Values are compared in float64, except int64 ones
(int64 in the tree: float64 would merge neighbours above 2**53).
"""
import numpy as np
from numba import cuda, float64, int64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import ROW_THREADS, device_empty, flat, grid, split_axis

from ._common import dense

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


@cuda.jit(device=True)
def _better(v, i, w, j, is_max):
    """Whether the candidate (v, i) beats the kept (w, j); j < 0: nothing kept yet."""
    if i < 0:
        return False
    if j < 0:
        return True
    if w != w:                            # a kept NaN loses only to an earlier NaN
        return v != v and i < j
    if v != v:
        return True
    if v == w:
        return i < j
    return v > w if is_max else v < w


def _make_arg(val_type):
    @cuda.jit
    def arg_kernel(x, out, n, inner, is_max):
        row = cuda.blockIdx.x             # one block per output element
        t = cuda.threadIdx.x
        base = (row // inner) * n * inner + row % inner
        vals = cuda.shared.array(ROW_THREADS, val_type)
        idx = cuda.shared.array(ROW_THREADS, int64)
        w = val_type(0)
        j = -1
        for c in range(t, n, ROW_THREADS):
            v = val_type(x[base + c * inner])
            if _better(v, c, w, j, is_max):
                w = v
                j = c
        vals[t] = w
        idx[t] = j
        cuda.syncthreads()
        step = ROW_THREADS // 2
        while step > 0:
            if t < step and _better(vals[t + step], idx[t + step], vals[t], idx[t], is_max):
                vals[t] = vals[t + step]
                idx[t] = idx[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            out[row] = idx[0]

    @cuda.jit
    def arg_thread(x, out, n, inner, is_max, rows):
        row = cuda.grid(1)                # one thread per output element (short searches)
        if row < rows:
            base = (row // inner) * n * inner + row % inner
            w = val_type(0)
            j = -1
            for c in range(n):
                v = val_type(x[base + c * inner])
                if _better(v, c, w, j, is_max):
                    w = v
                    j = c
            out[row] = j
    return arg_kernel, arg_thread


_block_float, _thread_float = _make_arg(float64)
_block_int, _thread_int = _make_arg(int64)

# Searches of at most SHORT candidates run one thread per output element: a block would leave
# most of its threads idle through the tree's steps; neighbouring threads read neighbouring
# elements when inner > 1 (coalesced).
SHORT = 32


class _Arg:
    def __init__(self, attrs, info=None, is_max=True):
        self.axis, self.keepdims = attrs["axis"], attrs["keepdims"]
        self.flatten, self.is_max = attrs["flatten"], is_max
        self.out_dtype = np.int32 if attrs["dtype"] == 2 else np.int64
        self.op = "arg_max" if is_max else "arg_min"

    def __call__(self, x):
        dense(x, self.op, "X")
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{self.op}: input 'X' has dtype {x.dtype}, expected a numeric "
                            f"or bool dtype")
        shape = tuple(x.shape)
        if self.flatten:
            if x.size == 0:
                raise ValueError(f"{self.op}: X{list(shape)} has no entries")
            out_shape = (1,) * len(shape) if self.keepdims else ()     # 0-D, as in Paddle 3
            outer, n, inner = 1, x.size, 1
        else:
            if len(shape) == 0:
                raise ValueError(f"{self.op}: X is 0-D; set flatten to search it")
            rank = len(shape)
            if not -rank <= self.axis < rank:
                raise IndexError(f"{self.op}: axis {self.axis} is out of range for rank "
                                 f"{rank} (valid: {-rank}..{rank - 1})")
            axis = self.axis + rank if self.axis < 0 else self.axis
            if shape[axis] == 0:
                raise ValueError(f"{self.op}: X{list(shape)} has no entries along axis "
                                 f"{axis}")
            outer, n, inner = split_axis(shape, axis, self.op)
            out_shape = tuple(1 if k == axis else d for k, d in enumerate(shape)) \
                if self.keepdims else shape[:axis] + shape[axis + 1:]
        out = device_empty(out_shape, self.out_dtype)
        rows = outer * inner
        if rows:
            is_int = x.dtype == np.int64
            if n <= SHORT:
                blocks, threads = grid(rows, ROW_THREADS)
                (_thread_int if is_int else _thread_float)[blocks, threads, current_stream()](
                    flat(x), flat(out), n, inner, self.is_max, rows)
            else:
                (_block_int if is_int else _block_float)[rows, ROW_THREADS, current_stream()](
                    flat(x), flat(out), n, inner, self.is_max)
        return (out,)


class ArgMax(_Arg):
    def __init__(self, attrs, info=None):
        _Arg.__init__(self, attrs, info, True)


class ArgMin(_Arg):
    def __init__(self, attrs, info=None):
        _Arg.__init__(self, attrs, info, False)


KERNELS = [("arg_max", ArgMax, DTYPES), ("arg_min", ArgMin, DTYPES)]
