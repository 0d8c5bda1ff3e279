# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sequence_scatter and its gradient, in C per element type: sequence i of Ids/Updates adds
into (or, for the gradient, reads from) row i of X seen as a flat row of ``cols`` values."""
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t
from headrace.kernels.common cimport contiguous, dtype_name

import numpy as np

from headrace.runtime.tensor import Tensor

from ..host._common import wanted

cnp.import_array()

DTYPES = ("int32", "int64", "float32", "float64")

ctypedef fused value:
    int32_t
    int64_t
    float
    double


cdef void _scatter(value* out, const value* upd, const int64_t* ids, const int64_t* off,
                   Py_ssize_t n_seq, Py_ssize_t cols) noexcept nogil:
    cdef Py_ssize_t s, k
    for s in range(n_seq):
        for k in range(off[s], off[s + 1]):
            out[s * cols + ids[k]] += upd[k]


cdef void _gather(const value* g, value* dupd, const int64_t* ids, const int64_t* off,
                  Py_ssize_t n_seq, Py_ssize_t cols) noexcept nogil:
    cdef Py_ssize_t s, k
    for s in range(n_seq):
        for k in range(off[s], off[s + 1]):
            dupd[k] = g[s * cols + ids[k]]


cdef _run_scatter(value[::1] out, const value[::1] upd, const int64_t[::1] ids,
                  const int64_t[::1] off, Py_ssize_t cols):
    if ids.shape[0] == 0:
        return
    with nogil:
        _scatter(&out[0], &upd[0], &ids[0], &off[0], off.shape[0] - 1, cols)


cdef _run_gather(const value[::1] g, value[::1] dupd, const int64_t[::1] ids,
                 const int64_t[::1] off, Py_ssize_t cols):
    if ids.shape[0] == 0:
        return
    with nogil:
        _gather(&g[0], &dupd[0], &ids[0], &off[0], off.shape[0] - 1, cols)


def _one_per_row(a, str op, str slot):
    if a.ndim not in (1, 2) or a.size != a.shape[0]:
        raise ValueError(f"{op}: {slot} must hold one value per row ([n] or [n, 1]), found "
                         f"shape {list(a.shape)}")


def _positions(ids, upd, rows, cols, str op):
    """Ids as int64 and its LoD offsets, after checking them against X's rows and columns."""
    cdef object a = contiguous(ids.data)
    if a.dtype != np.int32 and a.dtype != np.int64:
        raise TypeError(f"{op}: Ids has dtype {a.dtype.name}, expected int32 or int64")
    _one_per_row(a, op, "Ids")
    if len(ids.lod) != 1:
        raise ValueError(f"{op}: Ids must have one LoD level, found {len(ids.lod)}")
    if upd.lod != ids.lod:
        raise ValueError(f"{op}: Updates must have the LoD of Ids {ids.lod}, found {upd.lod}")
    off = np.asarray(ids.lod[0], np.int64)
    n = a.shape[0]
    if len(off) < 1 or off[0] != 0 or off[len(off) - 1] != n or (np.diff(off) < 0).any():
        raise ValueError(f"{op}: Ids' LoD {off.tolist()} does not describe its {n} rows")
    if len(off) - 1 > rows:
        raise ValueError(f"{op}: Ids has {len(off) - 1} sequences but X only {rows} rows; "
                         f"sequence i updates row i")
    flat = a.reshape(-1).astype(np.int64)
    bad = np.nonzero((flat < 0) | (flat >= cols))[0]
    if bad.size:
        k = int(bad[0])
        seq = int(np.searchsorted(off, k, side="right")) - 1
        raise ValueError(f"{op}: Ids[{k}] = {int(flat[k])} (sequence {seq}) is not a column "
                         f"of a row of X, which has {cols} values")
    return flat, off


def _dense(x, str op, str slot):
    cdef object a = contiguous(getattr(x, "data", x))
    if a.dtype.name not in DTYPES:
        raise TypeError(f"{op}: {slot} has dtype {a.dtype.name}; supported: "
                        f"{', '.join(DTYPES)}")
    if a.ndim < 1:
        raise ValueError(f"{op}: {slot} must have a row dim, found a 0-D tensor")
    return a


def _typed(dense, per_id, ids, off, cols, gather):
    """Scatter-add ``per_id`` into ``dense`` (``gather``: read ``per_id`` from it)."""
    d, p = dense.reshape(-1), per_id.reshape(-1)
    t = dense.dtype
    if gather:
        if t == np.float32:
            _run_gather[float](d, p, ids, off, cols)
        elif t == np.float64:
            _run_gather[double](d, p, ids, off, cols)
        elif t == np.int32:
            _run_gather[int32_t](d, p, ids, off, cols)
        else:
            _run_gather[int64_t](d, p, ids, off, cols)
    elif t == np.float32:
        _run_scatter[float](d, p, ids, off, cols)
    elif t == np.float64:
        _run_scatter[double](d, p, ids, off, cols)
    elif t == np.int32:
        _run_scatter[int32_t](d, p, ids, off, cols)
    else:
        _run_scatter[int64_t](d, p, ids, off, cols)


cdef class SequenceScatter:

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, ids, updates):
        op = "sequence_scatter"
        data = _dense(x, op, "X")
        cdef object upd = contiguous(updates.data)
        if upd.dtype != data.dtype:
            raise TypeError(f"{op}: Updates has dtype {dtype_name(upd)}, X "
                            f"{dtype_name(data)}")
        _one_per_row(upd, op, "Updates")
        rows = data.shape[0]
        cols = data.size // rows if rows else 0
        flat, off = _positions(ids, updates, rows, cols, op)
        if upd.shape[0] != flat.shape[0]:
            raise ValueError(f"{op}: Updates has {upd.shape[0]} rows, Ids {flat.shape[0]}")
        out = np.array(data, copy=True)
        _typed(out, upd, flat, off, cols, False)
        return (Tensor(out, x.lod),)


cdef class SequenceScatterGrad:
    """(Ids, Updates, Out@GRAD) -> (X@GRAD, Updates@GRAD); an unwanted one is None."""
    cdef bint want_x, want_updates

    def __init__(self, dict attrs, info=None):
        self.want_x, self.want_updates = wanted(info, ("X@GRAD", "Updates@GRAD"))

    def __call__(self, ids, updates, dout):
        op = "sequence_scatter_grad"
        g = _dense(dout, op, "Out@GRAD")
        cdef object upd = contiguous(updates.data)
        if upd.dtype != g.dtype:
            raise TypeError(f"{op}: Updates has dtype {dtype_name(upd)}, Out@GRAD "
                            f"{dtype_name(g)}")
        _one_per_row(upd, op, "Updates")
        rows = g.shape[0]
        cols = g.size // rows if rows else 0
        flat, off = _positions(ids, updates, rows, cols, op)
        if upd.shape[0] != flat.shape[0]:
            raise ValueError(f"{op}: Updates has {upd.shape[0]} rows, Ids {flat.shape[0]}")
        dx = np.array(g, copy=True) if self.want_x else None
        dupd = None
        if self.want_updates:
            dupd = np.empty_like(upd)
            _typed(g, dupd, flat, off, cols, True)
            dupd = Tensor(dupd, updates.lod)
        return (dx, dupd)


KERNELS = [("sequence_scatter", SequenceScatter, DTYPES, "lod"),
           ("sequence_scatter_grad", SequenceScatterGrad, DTYPES, "lod")]
