"""sequence_scatter and its gradient on CUDA, as the CPU kernel (kernels/cpu/sequence_scatter.pyx):
sequence s of Ids/Updates adds into (the gradient: reads from) row s of X, seen as a flat row of
``cols`` values. The forward copies X and scatter-adds the updates, one thread per id, with
atomic adds (repeated ids accumulate); the gradient copies Out@GRAD and gathers Updates@GRAD,
one thread per id. An id outside the row is never used: its position goes to the one-element
device flag (read at the end of the run, only to raise the CPU kernel's error).

The LoD exception: Ids' offsets are copied to the device once per batch layout (cached on the
kernel object, _seq.DeviceLoD); nothing else crosses between host and device.
"""
import numpy as np
from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (check_flag, device_copy, device_empty, flat, grid,
                                          new_flag)
from headrace.runtime import Tensor

from ..host._common import wanted
from ._seq import DeviceLoD, level_offsets, lod_key, seq_of

DTYPES = ("int32", "int64", "float32", "float64")


@cuda.jit
def _scatter(out, upd, ids, off, S, cols, n, bad):
    k = cuda.grid(1)
    if k < n:
        c = ids[k]
        if c < 0 or c >= cols:
            cuda.atomic.min(bad, 0, k)
        else:
            cuda.atomic.add(out, seq_of(off, S, k) * cols + c, upd[k])


@cuda.jit
def _gather(g, dupd, ids, off, S, cols, n, bad, write):
    """Updates@GRAD[k] = Out@GRAD at id k (``write`` False: only the ids are checked, as the
    CPU kernel checks them when Updates@GRAD is not wanted)."""
    k = cuda.grid(1)
    if k < n:
        c = ids[k]
        if c < 0 or c >= cols:
            cuda.atomic.min(bad, 0, k)
            if write:
                dupd[k] = 0
        elif write:
            dupd[k] = g[seq_of(off, S, k) * cols + c]


def _one_per_row(a, op, slot):
    if a.ndim not in (1, 2) or a.size != a.shape[0]:
        raise ValueError(f"{op}: {slot} must hold one value per row ([n] or [n, 1]), found "
                         f"shape {list(a.shape)}")


def _dense(a, op, slot):
    if str(a.dtype) not in DTYPES:
        raise TypeError(f"{op}: {slot} has dtype {a.dtype}; supported: {', '.join(DTYPES)}")
    if a.ndim < 1:
        raise ValueError(f"{op}: {slot} must have a row dim, found a 0-D tensor")
    return a


class _Scatter:
    def __init__(self, attrs, info=None):
        self.info = info
        self.lod = DeviceLoD()

    def _checked(self, dense, ids, updates, op, slot):
        a = _dense(dense, op, slot)
        upd = updates.data
        if upd.dtype != a.dtype:
            raise TypeError(f"{op}: Updates has dtype {upd.dtype}, {slot} {a.dtype}")
        _one_per_row(upd, op, "Updates")
        rows = a.shape[0]
        cols = a.size // rows if rows else 0
        i = ids.data
        if str(i.dtype) not in ("int32", "int64"):
            raise TypeError(f"{op}: Ids has dtype {i.dtype}, expected int32 or int64")
        _one_per_row(i, op, "Ids")
        if len(ids.lod) != 1:
            raise ValueError(f"{op}: Ids must have one LoD level, found {len(ids.lod)}")
        if lod_key(updates.lod) != lod_key(ids.lod):
            raise ValueError(f"{op}: Updates must have the LoD of Ids {ids.lod}, found "
                             f"{updates.lod}")
        n = i.shape[0]

        off, S = level_offsets(self.lod, ids.lod[0], n, lambda off: ValueError(
            f"{op}: Ids' LoD {off.tolist()} does not describe its {n} rows"))
        if S > rows:
            raise ValueError(f"{op}: Ids has {S} sequences but X only {rows} rows; sequence i "
                             f"updates row i")
        if upd.shape[0] != n:
            raise ValueError(f"{op}: Updates has {upd.shape[0]} rows, Ids {n}")
        return a, upd, i, off, S, cols, n

    def _check(self, bad, n, ids, cols, op):
        def report(k):   # only on the error path: the bad id is read back for the message
            value = int(flat(ids.data)[k:k + 1].copy_to_host()[0])
            seq = int(np.searchsorted(np.asarray(ids.lod[0]), k, side="right")) - 1
            return ValueError(f"{op}: Ids[{k}] = {value} (sequence {seq}) is not a column of "
                              f"a row of X, which has {cols} values")
        check_flag(bad, n, report, self.info)


class SequenceScatter(_Scatter):
    def __call__(self, x, ids, updates):
        op = "sequence_scatter"
        a, upd, i, off, S, cols, n = self._checked(x.data, ids, updates, op, "X")
        out = device_copy(a)
        if n:
            bad = new_flag(n)
            blocks, threads = grid(n)
            _scatter[blocks, threads, current_stream()](flat(out), flat(upd), flat(i), off, S,
                                                        cols, n, bad)
            self._check(bad, n, ids, cols, op)
        return (Tensor(out, x.lod),)


class SequenceScatterGrad(_Scatter):
    """(Ids, Updates, Out@GRAD) -> (X@GRAD, Updates@GRAD); an unwanted one is None."""

    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.want_x, self.want_updates = wanted(info, ("X@GRAD", "Updates@GRAD"))

    def __call__(self, ids, updates, dout):
        op = "sequence_scatter_grad"
        g, upd, i, off, S, cols, n = self._checked(getattr(dout, "data", dout), ids, updates,
                                                   op, "Out@GRAD")
        dx = device_copy(g) if self.want_x else None
        d = device_empty(upd.shape, upd.dtype) if self.want_updates else None
        if n:
            bad = new_flag(n)
            blocks, threads = grid(n)
            _gather[blocks, threads, current_stream()](
                flat(g), flat(d if d is not None else upd), flat(i), off, S, cols, n, bad,
                d is not None)
            self._check(bad, n, ids, cols, op)
        return (dx, None if d is None else Tensor(d, updates.lod))


KERNELS = [("sequence_scatter", SequenceScatter, DTYPES, "lod"),
           ("sequence_scatter_grad", SequenceScatterGrad, DTYPES, "lod")]
