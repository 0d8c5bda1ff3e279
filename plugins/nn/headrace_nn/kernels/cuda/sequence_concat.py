"""sequence_concat and its gradient on CUDA (any of the CPU kernel's element types): Out's
sequence s is sequence s of X[0], X[1], ... in turn, as the CPU kernel
(kernels/cpu/sequence_concat.pyx). One launch per input (not per sequence), one thread per
element of that input: its row finds its sequence s by a binary search of the input's offsets
and goes to row dst[s] + (r - offsets[s]) of Out, dst[s] being where the input's part of
sequence s starts in Out (the gradient reads it back from there).

The LoD exception: every input's offsets and dst starts (two int64 per sequence and input) are
copied to the device once per batch layout (cached on the kernel object, _seq.DeviceLoD).
"""
import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_empty, grid
from headrace.runtime import Tensor

from ._seq import DeviceLoD, describes, lod_key, rows_of, seq_of

DTYPES = ("int32", "int64", "float32", "float64")


@cuda.jit
def _move(part, lists, joined, S, D, total, back):
    """Rows of ``part`` to their rows of ``joined`` (``back``: from them)."""
    k = cuda.grid(1)
    if k < total:
        off = lists[:S + 1]
        dst = lists[S + 1:]
        r = k // D
        s = seq_of(off, S, r)
        o = (dst[s] + r - off[s]) * D + k % D
        if back:
            part[k] = joined[o]
        else:
            joined[o] = part[k]


class _Concat:
    def __init__(self, attrs, info=None):
        self.lod = DeviceLoD()

    def _layout(self, xs, op):
        """(per input: (device lists, rows, D), S, Out's rows, Out's LoD)."""
        if not isinstance(xs, list) or len(xs) < 2:
            raise ValueError(f"{op}: X must hold at least two sequence batches")
        first = xs[0].data
        for i, x in enumerate(xs):
            a = x.data
            if str(a.dtype) not in DTYPES:
                raise TypeError(f"{op}: X[{i}] has dtype {a.dtype}; supported: "
                                f"{', '.join(DTYPES)}")
            if a.ndim < 1:
                raise ValueError(f"{op}: X[{i}] must have a row dim, found a 0-D tensor")
            if len(x.lod) != 1:
                raise ValueError(f"{op}: X[{i}] must be a batch of sequences with one LoD "
                                 f"level; found {len(x.lod)} levels")
            if a.dtype != first.dtype:
                raise TypeError(f"{op}: X[{i}] has dtype {a.dtype}, X[0] {first.dtype}")
            if rows_of(a)[1] != rows_of(first)[1]:
                raise ValueError(f"{op}: X[{i}] has {rows_of(a)[1]} features per row (shape "
                                 f"{list(a.shape)}), X[0] {rows_of(first)[1]} (shape "
                                 f"{list(first.shape)})")
        key = tuple((x.data.shape[0], lod_key(x.lod)) for x in xs)

        def build():
            offs = []
            for i, x in enumerate(xs):
                off = np.asarray(x.lod[0], np.int64)
                rows = x.data.shape[0]
                if not describes(off, rows):
                    raise ValueError(f"{op}: X[{i}]'s LoD {off.tolist()} does not describe "
                                     f"its {rows} rows")
                if offs and len(off) != len(offs[0]):
                    raise ValueError(f"{op}: X[{i}] has {len(off) - 1} sequences, X[0] "
                                     f"{len(offs[0]) - 1}; the inputs must have as many")
                offs.append(off)
            offs = np.stack(offs)
            out_off = offs.sum(axis=0)
            lengths = np.diff(offs, axis=1)
            # Where input j's part of sequence s starts in Out: after the earlier inputs'.
            dst = out_off[:-1] + np.cumsum(lengths, axis=0) - lengths
            S = offs.shape[1] - 1
            lists = np.concatenate([np.concatenate([offs[j], dst[j], [0]])
                                    for j in range(len(xs))])
            return lists, (S, int(out_off[-1]), [out_off.tolist()])
        dev, (S, rows, lod) = self.lod.get(key, build)
        return dev, S, rows, lod

    def _moves(self, xs, parts, dev, S, joined, back):
        stream = current_stream()
        step = 2 * (S + 1)
        for j, (x, part) in enumerate(zip(xs, parts)):
            rows, D = rows_of(x.data)
            total = rows * D
            if part is None or not total:
                continue
            blocks, threads = grid(total)
            _move[blocks, threads, stream](part.reshape(-1), dev[j * step:(j + 1) * step],
                                           joined.reshape(-1), S, D, total, back)


class SequenceConcat(_Concat):
    def __call__(self, xs):
        dev, S, rows, lod = self._layout(xs, "sequence_concat")
        first = xs[0].data
        out = device_empty((rows,) + tuple(first.shape[1:]), first.dtype)
        self._moves(xs, [x.data for x in xs], dev, S, out, False)
        return (Tensor(out, lod),)


class SequenceConcatGrad(_Concat):
    """(X, Out@GRAD) -> X@GRAD: X is read for its LoD and shapes; the X@GRAD entries nobody
    wants (``info.wanted``) are not computed (None)."""

    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.wanted = info.wanted("X@GRAD") if info is not None else None

    def __call__(self, xs, dout):
        op = "sequence_concat_grad"
        dev, S, rows, _ = self._layout(xs, op)
        first = xs[0].data
        g = getattr(dout, "data", dout)
        if g.dtype != first.dtype:
            raise TypeError(f"{op}: Out@GRAD has dtype {g.dtype}, X {first.dtype}")
        feature = rows_of(first)[1]
        if g.ndim < 1 or g.shape[0] != rows or g.size != rows * feature:
            raise ValueError(f"{op}: Out@GRAD has shape {list(g.shape)}, expected {rows} "
                             f"rows like {list(first.shape[1:])}")
        wanted = [True] * len(xs) if self.wanted is None else self.wanted
        if len(wanted) != len(xs):
            raise ValueError(f"{op}: {len(wanted)} X@GRAD variables for {len(xs)} inputs")
        dxs = [device_empty(x.data.shape, x.data.dtype) if w else None
               for x, w in zip(xs, wanted)]
        self._moves(xs, dxs, dev, S, g, True)
        return ([None if dx is None else Tensor(dx, x.lod) for dx, x in zip(dxs, xs)],)


KERNELS = [("sequence_concat", SequenceConcat, DTYPES, "lod"),
           ("sequence_concat_grad", SequenceConcatGrad, DTYPES, "lod")]
