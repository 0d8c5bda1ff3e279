"""sequence_expand / sequence_expand_as and their gradients on CUDA, with the CPU kernels'
semantics and checks (kernels/cpu/sequence_expand.pyx, whose host-side LoD arithmetic is reused
on a layout's first sight).

Entry e of X (rows starts[e] to starts[e + 1]; one row per entry for expand_as) is copied
repeats[e] times, the copies of all entries laid out one after another from row ostart[e] of
Out. The forward is a gather with one thread per element of Out: its entry found by a binary
search of ostart. The gradient has one thread per element of X@GRAD summing that element's
copies of Out@GRAD in float64 (each written once, no atomics, in a fixed order).

The LoD exception: starts, the repeats' offsets and ostart (three int64 per entry) are copied to
the device once per batch layout (cached on the kernel object, _seq.DeviceLoD); nothing else
crosses between host and device.
"""
import numpy as np
from numba import cuda, float64

from headrace.kernels.cuda_launch import device_empty, float_input, launch
from headrace.runtime import Tensor

from ..host.sequence_expand import expansion
from ._seq import DeviceLoD, lod_key, rows_of, seq_of, three_lists

DTYPES = ("float32", "float64")


@cuda.jit
def _expand(x, lists, out, E, D, total):
    k = cuda.grid(1)
    if k < total:
        o = k // D
        starts, _, ostart = three_lists(lists, E)
        e = seq_of(ostart, E, o)
        n = starts[e + 1] - starts[e]
        out[k] = x[(starts[e] + (o - ostart[e]) % n) * D + k % D]


@cuda.jit
def _expand_grad(dy, lists, dx, E, D, total):
    k = cuda.grid(1)
    if k < total:
        r = k // D
        starts, rep, ostart = three_lists(lists, E)
        e = seq_of(starts, E, r)
        n = starts[e + 1] - starts[e]
        row = ostart[e] + r - starts[e]
        acc = 0.0
        for _ in range(rep[e + 1] - rep[e]):
            acc += float64(dy[row * D + k % D])
            row += n
        dx[k] = acc


class _Expand:
    def __init__(self, attrs, info=None, as_=False):
        self.info = info
        self.as_ = as_
        self.ref_level = -1 if as_ else attrs["ref_level"]
        self.name = "sequence_expand_as" if as_ else "sequence_expand"
        self.lod = DeviceLoD()

    def _layout(self, x, y, op):
        """(device lists, E, Out's rows, Out's LoD) of this batch layout."""
        rows = x.data.shape[0] if x.data.ndim else 0
        xlod = [] if self.as_ else x.lod
        key = (rows, lod_key(xlod), lod_key(y.lod))

        def build():
            if not y.lod:
                raise ValueError(f"{op}: Y must be a batch of sequences (a tensor with LoD)"
                                 + ("" if self.as_ else ": its LoD gives the repeats"))
            # The CPU kernel's checks and Out's LoD (host metadata, once per layout).
            index, lod = expansion(Tensor(x.data, xlod), y, self.ref_level, op)
            level = self.ref_level if self.ref_level >= 0 else len(y.lod) + self.ref_level
            rep = np.asarray(y.lod[level], np.int64)
            rep = rep - rep[0]
            starts = np.asarray(xlod[0], np.int64) if xlod else np.arange(rows + 1)
            copy_len = np.diff(starts) * np.diff(rep)
            ostart = np.concatenate([[0], np.cumsum(copy_len)])
            if self.as_:
                lod = [list(y.lod[-1])]
            return (np.concatenate([starts, rep, ostart]),
                    (len(starts) - 1, len(index), lod))
        dev, (E, out_rows, lod) = self.lod.get(key, build)
        return dev, E, out_rows, lod


class SequenceExpand(_Expand):
    def __call__(self, x, y):
        a = float_input(x.data, self.name, "X")
        lists, E, out_rows, lod = self._layout(x, y, self.name)
        _, D = rows_of(a)
        out = device_empty((out_rows,) + tuple(a.shape[1:]), a.dtype)
        total = out_rows * D
        launch(_expand, total, a.reshape(-1), lists, out.reshape(-1), E, D, total)
        return (Tensor(out, lod),)


def sequence_expand_as(attrs, info=None):
    return SequenceExpand(attrs, info, True)


class SequenceExpandGrad(_Expand):
    """sequence_expand(_as)_grad(X, Y, Out@GRAD) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None, as_=False):
        super().__init__(attrs, info, as_)
        self.name += "_grad"

    def __call__(self, x, y, dout):
        name = self.name
        a = float_input(x.data, name, "X")
        g = dout.data
        if a.dtype != g.dtype:
            raise TypeError(f"{name}: X has dtype {a.dtype}, Out@GRAD {g.dtype}")
        lists, E, out_rows, _ = self._layout(x, y, name)
        rows, D = rows_of(a)
        if tuple(g.shape) != (out_rows,) + tuple(a.shape[1:]):
            raise ValueError(f"{name}: Out@GRAD has shape {list(g.shape)}, expected "
                             f"{[out_rows] + list(a.shape[1:])}")
        dx = device_empty(a.shape, a.dtype)
        total = rows * D
        launch(_expand_grad, total, g.reshape(-1), lists, dx.reshape(-1), E, D, total)
        return (dx,) if self.as_ else (Tensor(dx, x.lod),)


def sequence_expand_as_grad(attrs, info=None):
    return SequenceExpandGrad(attrs, info, True)


KERNELS = [("sequence_expand", SequenceExpand, DTYPES, "lod"),
           ("sequence_expand_grad", SequenceExpandGrad, DTYPES, "lod"),
           ("sequence_expand_as", sequence_expand_as, DTYPES, "lod"),
           ("sequence_expand_as_grad", sequence_expand_as_grad, DTYPES, "lod")]
