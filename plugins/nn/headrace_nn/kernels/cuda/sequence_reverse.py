"""sequence_reverse on CUDA: each sequence of X's last LoD level reversed, any element type (the
rows are moved, not computed), as the CPU kernel (kernels/cpu/sequence_reverse.pyx). One thread
per element of Y: its row r finds its sequence [a, b) by a binary search of the offsets and
reads row a + b - 1 - r.

The LoD exception: the offsets are copied to the device once per batch layout (cached on the
kernel object, _seq.DeviceLoD); nothing else crosses between host and device.
"""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import device_empty, launch
from headrace.runtime import Tensor

from ._seq import DeviceLoD, lod_key, rows_of, seq_of

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


@cuda.jit
def _reverse(x, off, y, S, D, total):
    k = cuda.grid(1)
    if k < total:
        r = k // D
        s = seq_of(off, S, r)
        y[k] = x[(off[s] + off[s + 1] - 1 - r) * D + k % D]


class SequenceReverse:
    def __init__(self, attrs, info=None):
        self.lod = DeviceLoD()

    def __call__(self, x):
        name = "sequence_reverse"
        a = x.data
        if a.ndim == 0:
            raise ValueError(f"{name}: X must have a row dim")
        if not x.lod:
            raise ValueError(f"{name}: X must be a batch of sequences (a tensor with LoD)")
        rows, D = rows_of(a)

        def build():
            off = np.asarray(x.lod[-1], np.int64)
            if off[-1] != rows:
                raise ValueError(f"{name}: X's LoD ends at {off[-1]}, X has {rows} rows")
            return off, off.size - 1
        off, S = self.lod.get((rows, lod_key(x.lod[-1:])), build)
        y = device_empty(a.shape, a.dtype)
        total = rows * D
        launch(_reverse, total, a.reshape(-1), off, y.reshape(-1), S, D, total)
        return (Tensor(y, x.lod),)


KERNELS = [("sequence_reverse", SequenceReverse, DTYPES, "lod")]
