# cython: language_level=3, boundscheck=False, cdivision=True
"""scatter and scatter_grad. Rows move with memcpy (any element type); every id is checked
against X's rows before anything is written, and a bad one is an IndexError naming the op, the
Ids variable, the value and its position."""
cimport numpy as cnp
from libc.string cimport memcpy, memset
from headrace.kernels.common cimport check_plain, contiguous, shape_of
from ._index cimport check_range, int64_indices, var_name

import numpy as np

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")
FLOATS = ("float32", "float64")


cdef class _ScatterBase:
    cdef bint overwrite
    cdef str who

    def __init__(self, dict attrs, info=None):
        self.overwrite = attrs["overwrite"]
        self.who = var_name(info, "Ids")

    cdef cnp.ndarray _ids(self, object ids, tuple xs, tuple us, str op):
        cdef cnp.ndarray idx = int64_indices(ids, op, self.who)
        if idx.ndim > 2 or (idx.ndim == 2 and idx.shape[1] != 1):
            raise ValueError(f"{op}: {self.who} must be 1-D or [N, 1], got shape "
                             f"{list((<object>idx).shape)}")
        if len(xs) == 0:
            raise ValueError(f"{op}: X must have rank >= 1, got a 0-D tensor")
        expected = ((idx.shape[0],) if idx.ndim else ()) + xs[1:]
        if us != expected:
            raise ValueError(f"{op}: Updates has shape {list(us)}, expected {list(expected)} "
                             f"(one row of X per id of {self.who})")
        check_range(idx, 0, 1, idx.size, xs[0], op, self.who, "dim 0 of X")
        return idx.reshape(-1)


cdef class Scatter(_ScatterBase):
    def __call__(self, x, ids, updates):
        cdef cnp.ndarray a = contiguous(x), u = contiguous(updates)
        check_plain(a, "scatter", "X")
        if a.dtype != u.dtype:
            raise TypeError(f"scatter: Updates has dtype {u.dtype.name}, X {a.dtype.name}")
        cdef cnp.ndarray idx = self._ids(ids, shape_of(a), shape_of(u), "scatter")
        cdef cnp.ndarray out = a.copy()
        cdef Py_ssize_t n = idx.shape[0], i
        cdef Py_ssize_t row = (a.size // a.shape[0] if a.shape[0] else 0) * a.itemsize
        cdef const long long* ip = <const long long*>cnp.PyArray_DATA(idx)
        cdef char* dst = <char*>cnp.PyArray_DATA(out)
        cdef const char* src = <const char*>cnp.PyArray_DATA(u)
        if self.overwrite:
            with nogil:
                for i in range(n):  # in order: the last of repeated ids wins
                    memcpy(dst + ip[i] * row, src + i * row, row)
        else:
            with nogil:
                for i in range(n):
                    memset(dst + ip[i] * row, 0, row)
            np.add.at(out, idx, u.reshape((n,) + shape_of(a)[1:]))
        return (out,)


cdef class ScatterGrad(_ScatterBase):
    cdef bint want_x, want_u

    def __init__(self, dict attrs, info=None):
        _ScatterBase.__init__(self, attrs, info)
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_u = info is None or info.wants("Updates@GRAD")

    def __call__(self, ids, updates, dout):
        cdef cnp.ndarray g = contiguous(dout)
        cdef tuple us = tuple(np.shape(updates))
        cdef cnp.ndarray idx = self._ids(ids, shape_of(g), us, "scatter_grad")
        cdef Py_ssize_t n = idx.shape[0], i, rows = g.shape[0] if g.ndim else 0
        cdef Py_ssize_t row = (g.size // rows if rows else 0) * g.itemsize
        cdef const long long* ip = <const long long*>cnp.PyArray_DATA(idx)
        cdef cnp.ndarray dx = None, du = None, seen
        cdef char* s
        cdef char* d
        if self.want_x:
            dx = g.copy()
            d = <char*>cnp.PyArray_DATA(dx)
            with nogil:
                for i in range(n):  # those rows of X never reach Out
                    memset(d + ip[i] * row, 0, row)
        if self.want_u:
            du = np.zeros((n,) + shape_of(g)[1:], dtype=g.dtype)
            d = <char*>cnp.PyArray_DATA(du)
            s = <char*>cnp.PyArray_DATA(g)
            seen = np.zeros(rows, dtype=np.uint8)
            with nogil:
                # From the last update back: with overwrite only the last of repeated ids
                # reaches Out, the earlier ones keep their zero gradient.
                for i in range(n - 1, -1, -1):
                    if self.overwrite and (<char*>cnp.PyArray_DATA(seen))[ip[i]]:
                        continue
                    (<char*>cnp.PyArray_DATA(seen))[ip[i]] = 1
                    memcpy(d + i * row, s + ip[i] * row, row)
            du = du.reshape(us)
        return dx, du


KERNELS = [("scatter", Scatter, ALL_DTYPES), ("scatter_grad", ScatterGrad, FLOATS)]
