"""sequence_slice and its gradient on CUDA, with the CPU kernel's semantics and checks
(kernels/cpu/sequence_slice.pyx): rows Offset[s] to Offset[s] + Length[s] of each sequence.
The forward is a gather, one thread per element of Out, its sequence found by a binary search
of Out's offsets; the gradient one thread per element of X@GRAD (zero outside the slices), so
neither needs atomics.

Host reads and copies (documented exceptions): Offset and Length are read to the host (a few
int per sequence, as the CPU kernel reads them: they give Out's shape and LoD); X's offsets,
Out's offsets and the starts go to the device once per (LoD, Offset, Length), cached on the
kernel object (_seq.DeviceLoD).
"""
import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_empty, float_input, launch
from headrace.runtime.tensor import Tensor

from ..host.sequence_slice import slice_layout
from ._seq import DeviceLoD, lod_key, rows_of, seq_of, three_lists

DTYPES = ("float32", "float64")


@cuda.jit
def _slice(x, lists, out, S, D, total):
    k = cuda.grid(1)
    if k < total:
        o = k // D
        off, ooff, start = three_lists(lists, S)
        s = seq_of(ooff, S, o)
        out[k] = x[(off[s] + start[s] + o - ooff[s]) * D + k % D]


@cuda.jit
def _slice_grad(g, lists, dx, S, D, total):
    k = cuda.grid(1)
    if k < total:
        r = k // D
        off, ooff, start = three_lists(lists, S)
        s = seq_of(off, S, r)
        j = r - off[s] - start[s]
        if j >= 0 and j < ooff[s + 1] - ooff[s]:
            dx[k] = g[(ooff[s] + j) * D + k % D]
        else:
            dx[k] = 0


def _host(v):
    v = getattr(v, "data", v)
    if hasattr(v, "copy_to_host"):     # on the executor's stream, after what wrote it
        v = v.copy_to_host(stream=current_stream())
    return np.asarray(v).reshape(-1)


class _Slice:
    def __init__(self, attrs, info=None):
        self.lod = DeviceLoD()

    def _layout(self, x, offset, length, op):
        """(device lists, S, Out's rows, Out's LoD)."""
        start, size = _host(offset), _host(length)
        key = (lod_key(x.lod), tuple(start.tolist()), tuple(size.tolist()))

        def build():
            off, st, _, ooff, lod = slice_layout(x.lod, start, size, op)
            return np.concatenate([off, ooff, st]), (len(off) - 1, int(ooff[-1]), lod)
        dev, (S, rows, lod) = self.lod.get(key, build)
        return dev, S, rows, lod


class SequenceSlice(_Slice):
    def __call__(self, x, offset, length):
        name = "sequence_slice"
        a = float_input(x.data, name, "X")
        lists, S, rows, lod = self._layout(x, offset, length, name)
        _, D = rows_of(a)
        out = device_empty((rows,) + tuple(a.shape[1:]), a.dtype)
        launch(_slice, rows * D, a.reshape(-1), lists, out.reshape(-1), S, D, rows * D)
        return (Tensor(out, lod),)


class SequenceSliceGrad(_Slice):
    def __call__(self, x, offset, length, dout):
        name = "sequence_slice_grad"
        a = float_input(x.data, name, "X")
        lists, S, out_rows, _ = self._layout(x, offset, length, name)
        g = dout.data
        if g.dtype != a.dtype:
            raise TypeError(f"{name}: X has dtype {a.dtype}, Out@GRAD {g.dtype}")
        if tuple(g.shape) != (out_rows,) + tuple(a.shape[1:]):
            raise ValueError(f"{name}: Out@GRAD has shape {list(g.shape)}, expected "
                             f"{[out_rows] + list(a.shape[1:])}")
        rows, D = rows_of(a)
        dx = device_empty(a.shape, a.dtype)
        launch(_slice_grad, rows * D, g.reshape(-1), lists, dx.reshape(-1), S, D, rows * D)
        return (Tensor(dx, x.lod),)


KERNELS = [("sequence_slice", SequenceSlice, DTYPES, "lod"),
           ("sequence_slice_grad", SequenceSliceGrad, DTYPES, "lod")]
