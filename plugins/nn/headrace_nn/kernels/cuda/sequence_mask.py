"""sequence_mask on CUDA: Y[..., j] = (j < X[...]) in out_dtype, one thread per element of Y,
as the CPU kernel (kernels/cpu/sequence_mask.pyx).

Host reads (documented exceptions: Y's shape is given by tensor values, as on the CPU): the one
value of MaxLenTensor when bound, and, under maxlen -1, X's largest and smallest length,
reduced on the device by one block (a shared-memory tree) and read as two int64. With a fixed
width a negative length goes to the one-element device flag (read at the end of the run, only
to raise the CPU kernel's error).
"""
import numpy as np
from numba import cuda, int64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, TREE_MAX, TREE_MIN, check_flag,
                                          device_empty, flat, grid, new_flag)
from headrace.kernels.cuda_rows import block_reduce

from ..host.sequence_mask import MaskAttrs, tensor_width

DTYPES = ("int32", "int64")


@cuda.jit
def _min_max(x, n, res):
    """res = [min(x), max(x)] of n > 0 values, by one block."""
    t = cuda.threadIdx.x
    lo = cuda.shared.array(ROW_THREADS, int64)
    hi = cuda.shared.array(ROW_THREADS, int64)
    a = x[0]
    b = x[0]
    for i in range(t, n, ROW_THREADS):
        if x[i] < a:
            a = x[i]
        if x[i] > b:
            b = x[i]
    a = block_reduce(lo, a, TREE_MIN)
    b = block_reduce(hi, b, TREE_MAX)
    if t == 0:
        res[0] = a
        res[1] = b


@cuda.jit
def _mask(x, y, W, total, bad):
    k = cuda.grid(1)
    if k < total:
        i = k // W
        n = x[i]
        if n < 0 and k % W == 0:
            cuda.atomic.min(bad, 0, i)
        y[k] = 1 if k % W < n else 0


class SequenceMask:
    def __init__(self, attrs, info=None):
        self.info = info
        a = MaskAttrs(attrs)
        self.maxlen, self.dtype = a.maxlen, a.dtype

    def __call__(self, x, maxlen_tensor=None):
        name = "sequence_mask"
        if np.dtype(x.dtype).kind not in "iu":
            raise TypeError(f"{name}: X must hold integer lengths, got {x.dtype}")
        n = int(np.prod(x.shape, dtype=np.int64))
        stream = current_stream()
        width = self.maxlen
        checked = False     # negative lengths already refused
        if maxlen_tensor is not None:
            width = tensor_width(maxlen_tensor.copy_to_host(stream=stream))
        elif width == -1:
            width = 0
            if n:
                res = device_empty((2,), np.int64)
                _min_max[1, ROW_THREADS, stream](flat(x), n, res)
                lo, hi = res.copy_to_host(stream=stream)
                if lo < 0:
                    raise ValueError(f"{name}: X holds a negative length ({int(lo)})")
                width, checked = int(hi), True
        y = device_empty(tuple(x.shape) + (width,), self.dtype)
        total = n * width      # 0 only for no lengths, or all 0 (then checked above)
        if total:
            bad = new_flag(n)
            blocks, threads = grid(total)
            _mask[blocks, threads, stream](flat(x), flat(y), width, total, bad)
            if not checked:
                check_flag(bad, n, lambda pos: _negative(name, x), self.info)
        return (y,)


def _negative(name, x):
    # Only on the error path: X is read back for the CPU kernel's message.
    return ValueError(f"{name}: X holds a negative length ({int(x.copy_to_host().min())})")


KERNELS = [("sequence_mask", SequenceMask, DTYPES)]
