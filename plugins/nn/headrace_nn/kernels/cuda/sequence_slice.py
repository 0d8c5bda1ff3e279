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
from headrace.kernels.cuda_launch import device_empty, float_input, grid
from headrace.runtime.tensor import Tensor, lengths_to_offsets

from ._seq import DeviceLoD, lod_key, rows_of, seq_of

DTYPES = ("float32", "float64")


@cuda.jit
def _slice(x, lists, out, S, D, total):
    k = cuda.grid(1)
    if k < total:
        o = k // D
        off = lists[:S + 1]
        ooff = lists[S + 1:2 * (S + 1)]
        start = lists[2 * (S + 1):]
        s = seq_of(ooff, S, o)
        out[k] = x[(off[s] + start[s] + o - ooff[s]) * D + k % D]


@cuda.jit
def _slice_grad(g, lists, dx, S, D, total):
    k = cuda.grid(1)
    if k < total:
        r = k // D
        off = lists[:S + 1]
        ooff = lists[S + 1:2 * (S + 1)]
        start = lists[2 * (S + 1):]
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
        if not x.lod:
            raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")
        start, size = _host(offset), _host(length)
        key = (lod_key(x.lod), tuple(start.tolist()), tuple(size.tolist()))

        def build():
            off = np.asarray(x.lod[-1], np.int64)
            n = len(off) - 1
            if start.size != n or size.size != n:
                raise ValueError(f"{op}: Offset and Length must hold one value per sequence "
                                 f"({n}); found {start.size} and {size.size}")
            st, sz = start.astype(np.int64), size.astype(np.int64)
            lengths = np.diff(off)
            bad = np.nonzero((st < 0) | (sz < 0) | (st + sz > lengths))[0]
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"{op}: sequence {i} has {int(lengths[i])} rows; Offset "
                                 f"{int(st[i])} and Length {int(sz[i])} do not fit")
            ooff = lengths_to_offsets(sz.tolist())
            lod = [list(level) for level in x.lod[:-1]] + [ooff]
            return np.concatenate([off, ooff, st]), (n, int(ooff[-1]), lod)
        dev, (S, rows, lod) = self.lod.get(key, build)
        return dev, S, rows, lod


class SequenceSlice(_Slice):
    def __call__(self, x, offset, length):
        name = "sequence_slice"
        a = float_input(x.data, name, "X")
        lists, S, rows, lod = self._layout(x, offset, length, name)
        _, D = rows_of(a)
        out = device_empty((rows,) + tuple(a.shape[1:]), a.dtype)
        total = rows * D
        if total:
            blocks, threads = grid(total)
            _slice[blocks, threads, current_stream()](a.reshape(-1), lists, out.reshape(-1),
                                                      S, D, total)
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
        total = rows * D
        if total:
            blocks, threads = grid(total)
            _slice_grad[blocks, threads, current_stream()](g.reshape(-1), lists,
                                                           dx.reshape(-1), S, D, total)
        return (Tensor(dx, x.lod),)


KERNELS = [("sequence_slice", SequenceSlice, DTYPES, "lod"),
           ("sequence_slice_grad", SequenceSliceGrad, DTYPES, "lod")]
