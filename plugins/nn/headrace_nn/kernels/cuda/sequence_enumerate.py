"""sequence_enumerate on CUDA: Out[r, k] = X[r + k] while r + k stays in row r's sequence, else
pad_value, as the CPU kernel (kernels/cpu/sequence_enumerate.pyx; Paddle reads X's first LoD
level). One thread per element of Out, its sequence found by a binary search of the offsets.

The LoD exception: the offsets are copied to the device once per batch layout (cached on the
kernel object, _seq.DeviceLoD); nothing else crosses between host and device.
"""
from numba import cuda

from headrace.kernels.cuda_launch import device_empty, launch
from headrace.runtime import Tensor

from ._seq import DeviceLoD, level_offsets, seq_of

DTYPES = ("int32", "int64")


@cuda.jit
def _windows(x, off, out, S, win, pad, total):
    k = cuda.grid(1)
    if k < total:
        r = k // win
        j = r + k % win
        s = seq_of(off, S, r)
        out[k] = x[j] if j < off[s + 1] else pad


class SequenceEnumerate:
    def __init__(self, attrs, info=None):
        self.win = attrs["win_size"]
        self.pad = attrs["pad_value"]
        if self.win < 2:
            raise ValueError(f"sequence_enumerate: win_size must be >= 2, got {self.win}")
        self.lod = DeviceLoD()

    def __call__(self, x):
        op = "sequence_enumerate"
        a = x.data
        if str(a.dtype) not in DTYPES:
            raise TypeError(f"{op}: X has dtype {a.dtype}, expected int32 or int64 ids")
        if a.ndim != 2 or a.shape[1] != 1:
            raise ValueError(f"{op}: X must be ids of shape [rows, 1], found {list(a.shape)}")
        if not x.lod:
            raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")
        rows = a.shape[0]

        off, S = level_offsets(self.lod, x.lod[0], rows, lambda off: ValueError(
            f"{op}: X's first LoD level {off.tolist()} does not describe its {rows} rows"))
        out = device_empty((rows, self.win), a.dtype)
        total = rows * self.win
        launch(_windows, total, a.reshape(-1), off, out.reshape(-1), S, self.win, self.pad, total)
        return (Tensor(out, x.lod),)


KERNELS = [("sequence_enumerate", SequenceEnumerate, DTYPES, "lod")]
