# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""lookup_table and lookup_table_v2: Out[i] = W[Ids[i]] (zeros for padding_idx).

Rows are copied with memcpy. Every id is checked against [0, V) in the same loop, before its
row is read; the first bad one stops the loop and is raised as an IndexError.

lookup_table_grad / lookup_table_v2_grad(W, Ids, Out@GRAD) -> W@GRAD: a dense [V, D] table of
zeros into which each Out@GRAD row is added at its id (repeated ids accumulate); padding_idx
lookups add nothing. W is read for its shape only. is_sparse asks Paddle for a selected_rows
gradient; headrace has no selected_rows, so the gradient is dense either way.
"""
cimport numpy as cnp
from libc.string cimport memcpy, memset
from headrace.kernels.common cimport contiguous, empty, real, shape_of
from ._common cimport expect_shape, float_array

import numpy as np

cnp.import_array()

DTYPES = ("float32", "float64")

ctypedef fused index_t:
    int
    long long


cdef Py_ssize_t _lookup(const char* w, const index_t* ids, char* out, Py_ssize_t n,
                        Py_ssize_t V, Py_ssize_t row, long long pad) noexcept nogil:
    """Copy ``row`` bytes per id; returns the position of the first bad id, or -1.
    ``pad`` is -1 for no padding row (the id -1 is then out of range, not padding)."""
    cdef Py_ssize_t i
    cdef long long k
    for i in range(n):
        k = ids[i]
        if k == pad and pad >= 0:
            memset(out + i * row, 0, row)
        elif k < 0 or k >= V:
            return i
        else:
            memcpy(out + i * row, w + k * row, row)
    return -1


cdef class LookupTable:
    cdef long long pad
    cdef bint v2
    cdef str name

    def __init__(self, dict attrs, info=None, bint v2=False):
        self.v2 = v2
        self.name = "lookup_table_v2" if v2 else "lookup_table"
        self.pad = attrs.get("padding_idx", -1)

    def __call__(self, w, ids):
        cdef cnp.ndarray table = contiguous(w)
        cdef cnp.ndarray idx = contiguous(ids)
        cdef int t = cnp.PyArray_TYPE(table), it = cnp.PyArray_TYPE(idx)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"{self.name}: W has dtype {table.dtype}, expected float32 or "
                            f"float64")
        cdef bint i64 = it == cnp.NPY_INT64 or it == cnp.NPY_LONGLONG
        if not (i64 or (self.v2 and it == cnp.NPY_INT32)):
            raise TypeError(f"{self.name}: Ids has dtype {idx.dtype}, expected int64"
                            + (" or int32" if self.v2 else ""))
        cdef tuple ws = shape_of(table), xs = shape_of(idx)
        if len(ws) != 2:
            raise ValueError(f"{self.name}: W{list(ws)} must be 2-D [V, D]")
        cdef Py_ssize_t V = ws[0], D = ws[1]
        if self.pad != -1 and not 0 <= self.pad < V:
            raise ValueError(f"{self.name}: padding_idx {self.pad} is not a row of W{list(ws)}")
        if self.v2:
            oshape = xs + (D,)
        else:
            if len(xs) < 1 or xs[-1] != 1:
                raise ValueError(f"{self.name}: Ids{list(xs)} must end in a dim of 1")
            oshape = xs[:-1] + (D,)
        cdef cnp.ndarray out = empty(oshape, t)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(idx), bad = -1
        cdef Py_ssize_t row = D * cnp.PyArray_ITEMSIZE(table)
        cdef const char* wp = <const char*>cnp.PyArray_DATA(table)
        cdef char* op = <char*>cnp.PyArray_DATA(out)
        if i64:
            with nogil:
                bad = _lookup(wp, <const long long*>cnp.PyArray_DATA(idx), op, n, V, row,
                              self.pad)
        else:
            with nogil:
                bad = _lookup(wp, <const int*>cnp.PyArray_DATA(idx), op, n, V, row, self.pad)
        if bad >= 0:
            raise IndexError(f"{self.name}: id {idx.reshape(-1)[bad]} (position {bad}) is out "
                             f"of range for W with {V} rows")
        return (out,)


def lookup_table_v2(dict attrs, info=None):
    return LookupTable(attrs, info, True)


cdef Py_ssize_t _scatter(const real* dy, const index_t* ids, real* dw, Py_ssize_t n,
                         Py_ssize_t V, Py_ssize_t D, long long pad) noexcept nogil:
    """dw[ids[i]] += dy[i] (rows of D); returns the position of the first bad id, or -1."""
    cdef Py_ssize_t i, d
    cdef long long k
    cdef real* row
    cdef const real* src
    for i in range(n):
        k = ids[i]
        if k == pad and pad >= 0:
            continue
        if k < 0 or k >= V:
            return i
        row = dw + k * D
        src = dy + i * D
        for d in range(D):
            row[d] += src[d]
    return -1


cdef class LookupTableGrad:
    """lookup_table_grad / lookup_table_v2_grad(W, Ids, Out@GRAD) -> (W@GRAD,)."""
    cdef long long pad
    cdef bint v2, want
    cdef str name

    def __init__(self, dict attrs, info=None, bint v2=False):
        self.v2 = v2
        self.name = "lookup_table_v2_grad" if v2 else "lookup_table_grad"
        self.pad = attrs.get("padding_idx", -1)
        self.want = info is None or info.wants("W@GRAD")

    def __call__(self, w, ids, dout):
        name = self.name
        cdef cnp.ndarray table = float_array(w, name, "W")
        cdef cnp.ndarray g = float_array(dout, name, "Out@GRAD")
        cdef cnp.ndarray idx = contiguous(ids)
        cdef int t = cnp.PyArray_TYPE(table), it = cnp.PyArray_TYPE(idx)
        if cnp.PyArray_TYPE(g) != t:
            raise TypeError(f"{name}: Out@GRAD has dtype {g.dtype} but W is {table.dtype}")
        cdef bint i64 = it == cnp.NPY_INT64 or it == cnp.NPY_LONGLONG
        if not (i64 or (self.v2 and it == cnp.NPY_INT32)):
            raise TypeError(f"{name}: Ids has dtype {idx.dtype}, expected int64"
                            + (" or int32" if self.v2 else ""))
        cdef tuple ws = shape_of(table), xs = shape_of(idx)
        if len(ws) != 2:
            raise ValueError(f"{name}: W{list(ws)} must be 2-D [V, D]")
        cdef Py_ssize_t V = ws[0], D = ws[1]
        if self.pad != -1 and not 0 <= self.pad < V:
            raise ValueError(f"{name}: padding_idx {self.pad} is not a row of W{list(ws)}")
        if self.v2:
            oshape = xs + (D,)
        else:
            if len(xs) < 1 or xs[-1] != 1:
                raise ValueError(f"{name}: Ids{list(xs)} must end in a dim of 1")
            oshape = xs[:-1] + (D,)
        expect_shape(g, oshape, name, "Out@GRAD", "Out's shape")
        if not self.want:
            return (None,)
        cdef cnp.ndarray dw = np.zeros(ws, table.dtype)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(idx), bad = -1
        if t == cnp.NPY_FLOAT32:
            if i64:
                with nogil:
                    bad = _scatter(<const float*>cnp.PyArray_DATA(g),
                                   <const long long*>cnp.PyArray_DATA(idx),
                                   <float*>cnp.PyArray_DATA(dw), n, V, D, self.pad)
            else:
                with nogil:
                    bad = _scatter(<const float*>cnp.PyArray_DATA(g),
                                   <const int*>cnp.PyArray_DATA(idx),
                                   <float*>cnp.PyArray_DATA(dw), n, V, D, self.pad)
        else:
            if i64:
                with nogil:
                    bad = _scatter(<const double*>cnp.PyArray_DATA(g),
                                   <const long long*>cnp.PyArray_DATA(idx),
                                   <double*>cnp.PyArray_DATA(dw), n, V, D, self.pad)
            else:
                with nogil:
                    bad = _scatter(<const double*>cnp.PyArray_DATA(g),
                                   <const int*>cnp.PyArray_DATA(idx),
                                   <double*>cnp.PyArray_DATA(dw), n, V, D, self.pad)
        if bad >= 0:
            raise IndexError(f"{name}: id {idx.reshape(-1)[bad]} (position {bad}) is out of "
                             f"range for W with {V} rows")
        return (dw,)


def lookup_table_v2_grad(dict attrs, info=None):
    return LookupTableGrad(attrs, info, True)


KERNELS = [("lookup_table", LookupTable, DTYPES),
           ("lookup_table_v2", lookup_table_v2, DTYPES),
           ("lookup_table_grad", LookupTableGrad, DTYPES),
           ("lookup_table_v2_grad", lookup_table_v2_grad, DTYPES)]
