"""sequence_pad / sequence_unpad and their gradients on CUDA, with the CPU kernels' semantics
and checks (kernels/cpu/sequence_pad.pyx). Each is one launch with one thread per output
element: a padded element (s, j, d) reads row offsets[s] + j of the batch or the padding, a
batch row r finds its sequence s by a binary search of the offsets and reads (s, r - offsets[s]).

The LoD exception: the offsets are copied to the device once per batch layout (cached on the
kernel object, _seq.DeviceLoD). sequence_unpad(_grad) read the Length tensor to the host (a
few int per sequence, as the CPU kernel reads them): it gives Out's row count and LoD.
"""
import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_empty, float_input, grid, launch
from headrace.runtime.tensor import Tensor, lengths_to_offsets

from ..host.sequence_pad import integer_lengths, last_offsets, padded_width, unpad_lengths
from ._seq import DeviceLoD, lod_key, rows_of, seq_of

DTYPES = ("float32", "float64")


@cuda.jit
def _pad(x, off, pad, pad_step, out, length, S, W, D, total):
    """Out (S, W, D) from the batch; the thread k < S also writes Length[k]."""
    k = cuda.grid(1)
    if k < S:
        length[k] = off[k + 1] - off[k]
    if k < total:
        d = k % D
        j = (k // D) % W
        s = k // (D * W)
        if j < off[s + 1] - off[s]:
            out[k] = x[(off[s] + j) * D + d]
        else:
            out[k] = pad[d * pad_step]


@cuda.jit
def _unpad(src, off, dst, S, W, D, total):
    """dst's batch row r = src's (s, r - off[s]) of the padded (S, W, D)."""
    k = cuda.grid(1)
    if k < total:
        r = k // D
        s = seq_of(off, S, r)
        dst[k] = src[(s * W + r - off[s]) * D + k % D]


@cuda.jit
def _pad_zero(g, off, dx, W, D, total):
    """dx (S, W, D) from the batch g, zeros past each length."""
    k = cuda.grid(1)
    if k < total:
        j = (k // D) % W
        s = k // (D * W)
        if j < off[s + 1] - off[s]:
            dx[k] = g[(off[s] + j) * D + k % D]
        else:
            dx[k] = 0


def _lod_offsets(cache, lod, rows, op):
    """(device offsets of X's last level, their host lengths), once per layout."""
    if not lod:
        raise ValueError(f"{op}: X must be a batch of sequences (a tensor with LoD)")

    def build():
        off = last_offsets(lod, rows, op)
        if off[0] != 0 or (np.diff(off) < 0).any():
            raise ValueError(f"{op}: X's LoD {list(lod[-1])} must start at 0 and not decrease")
        return off, np.diff(off)
    return cache.get((rows, lod_key(lod[-1:])), build)


class SequencePad:
    def __init__(self, attrs, info=None):
        self.padded = attrs["padded_length"]
        self.lod = DeviceLoD()

    def __call__(self, x, pad):
        name = "sequence_pad"
        a = float_input(x.data, name, "X")
        rows, D = rows_of(a)
        off, lengths = _lod_offsets(self.lod, x.lod, rows, name)
        W = padded_width(lengths, self.padded, name)
        p = getattr(pad, "data", pad)
        row = tuple(a.shape[1:])
        if p.dtype != a.dtype:
            raise TypeError(f"sequence_pad: PadValue has dtype {p.dtype}, expected {a.dtype} "
                            f"(X's)")
        if p.size != 1 and tuple(p.shape) != row:
            raise ValueError(f"sequence_pad: PadValue must be one value or one row "
                             f"{list(row)}, found {list(p.shape)}")
        S = len(lengths)
        out = device_empty((S, W) + row, a.dtype)
        length = device_empty((S,), np.int64)
        total = S * W * D
        n = max(total, S)
        if n:
            blocks, threads = grid(n)
            pflat = p.reshape(-1) if p.size else out.reshape(-1)   # unread without elements
            _pad[blocks, threads, current_stream()](
                a.reshape(-1), off, pflat, 0 if p.size == 1 else 1, out.reshape(-1), length,
                S, W, D, total)
        return (out, length)


class SequencePadGrad:
    """sequence_pad_grad(X, Out@GRAD) -> (X@GRAD,): the rows within the lengths."""

    def __init__(self, attrs, info=None):
        self.lod = DeviceLoD()

    def __call__(self, x, dout):
        name = "sequence_pad_grad"
        a = x.data
        rows, D = rows_of(a)
        off, lengths = _lod_offsets(self.lod, x.lod, rows, name)
        g = float_input(dout.data, name, "Out@GRAD")
        if g.dtype != a.dtype:
            raise TypeError(f"{name}: X has dtype {a.dtype}, Out@GRAD {g.dtype}")
        W = g.shape[1] if g.ndim > 1 else 0
        S = len(lengths)
        if tuple(g.shape[:1]) != (S,) or tuple(g.shape[2:]) != tuple(a.shape[1:]) or \
                (S and W < lengths.max()):
            raise ValueError(f"{name}: Out@GRAD has shape {list(g.shape)}, not "
                             f"[{S}, >= longest, {list(a.shape[1:])}]")
        dx = device_empty(a.shape, a.dtype)
        total = rows * D
        launch(_unpad, total, g.reshape(-1), off, dx.reshape(-1), S, W, D, total)
        return (Tensor(dx, x.lod),)


def _lengths(length, n, width, op):
    """Length's values, read to the host (they give Out's shape and LoD)."""
    raw = getattr(length, "data", length)
    integer_lengths(np.dtype(raw.dtype), op)
    if hasattr(raw, "copy_to_host"):   # on the executor's stream, after what wrote it
        raw = raw.copy_to_host(stream=current_stream())
    return unpad_lengths(raw, n, width, op)


class _Unpad:
    def __init__(self, attrs, info=None):
        self.lod = DeviceLoD()

    def _offsets(self, a, length, op):
        if a.ndim < 2:
            raise ValueError(f"{op}: X must be [sequences, length, ...], found "
                             f"{list(a.shape)}")
        lengths = _lengths(length, a.shape[0], a.shape[1], op)
        off = lengths_to_offsets(lengths.tolist())
        dev, _ = self.lod.get((tuple(off),), lambda: (np.asarray(off, np.int64), None))
        return dev, off


class SequenceUnpad(_Unpad):
    def __call__(self, x, length):
        name = "sequence_unpad"
        a = float_input(x.data, name, "X")
        off_dev, off = self._offsets(a, length, name)
        S, W = a.shape[0], a.shape[1]
        _, D = rows_of(a.reshape((S * W,) + tuple(a.shape[2:])))
        rows = int(off[-1])
        out = device_empty((rows,) + tuple(a.shape[2:]), a.dtype)
        total = rows * D
        launch(_unpad, total, a.reshape(-1), off_dev, out.reshape(-1), S, W, D, total)
        return (Tensor(out, [list(off)]),)


class SequenceUnpadGrad(_Unpad):
    """sequence_unpad_grad(X, Length, Out@GRAD) -> (X@GRAD,): Out@GRAD padded with zeros."""

    def __call__(self, x, length, dout):
        name = "sequence_unpad_grad"
        a = x.data
        off_dev, off = self._offsets(a, length, name)
        g = float_input(dout.data, name, "Out@GRAD")
        if g.dtype != a.dtype:
            raise TypeError(f"{name}: X has dtype {a.dtype}, Out@GRAD {g.dtype}")
        expect = (int(off[-1]),) + tuple(a.shape[2:])
        if tuple(g.shape) != expect:
            raise ValueError(f"{name}: Out@GRAD has shape {list(g.shape)}, expected "
                             f"{list(expect)}")
        S, W = a.shape[0], a.shape[1]
        D = int(np.prod(a.shape[2:], dtype=np.int64))
        dx = device_empty(a.shape, a.dtype)
        total = S * W * D
        launch(_pad_zero, total, g.reshape(-1), off_dev, dx.reshape(-1), W, D, total)
        return (dx,)


KERNELS = [("sequence_pad", SequencePad, DTYPES, "lod"),
           ("sequence_pad_grad", SequencePadGrad, DTYPES, "lod"),
           ("sequence_unpad", SequenceUnpad, DTYPES, "lod"),
           ("sequence_unpad_grad", SequenceUnpadGrad, DTYPES, "lod")]
