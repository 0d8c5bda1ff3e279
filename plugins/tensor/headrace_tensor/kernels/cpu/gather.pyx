# cython: language_level=3, boundscheck=False, cdivision=True
"""gather, gather_nd and their gradients.

The forward kernels copy whole slices with memcpy (any element type); every index is checked
against its dim before anything is read, and a bad one is an IndexError naming the op, the
Index variable, the value and where it sits. The gradients add Out@GRAD's slices into zeros of
X's shape in C (float32/float64), so repeated indices accumulate.
"""
cimport numpy as cnp
from libc.string cimport memcpy
from headrace.kernels.common cimport check_plain, contiguous, empty, real, shape_of
from ._common cimport norm_axis, one_int
from ._index cimport check_range, int64_indices, var_name

import numpy as np

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")
FLOATS = ("float32", "float64")


cdef inline Py_ssize_t _prod(tuple dims, Py_ssize_t lo, Py_ssize_t hi):
    cdef Py_ssize_t k, n = 1
    for k in range(lo, hi):
        n *= <Py_ssize_t>dims[k]
    return n


# -- gather -----------------------------------------------------------------------------------

cdef void _take(const char* x, const long long* idx, char* out, Py_ssize_t outer,
                Py_ssize_t size, Py_ssize_t n, Py_ssize_t row) noexcept nogil:
    cdef Py_ssize_t o, i
    for o in range(outer):
        for i in range(n):
            memcpy(out + (o * n + i) * row, x + (o * size + idx[i]) * row, row)


cdef void _put_add(real* dx, const long long* idx, const real* dout, Py_ssize_t outer,
                   Py_ssize_t size, Py_ssize_t n, Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t o, i, j
    cdef real* d
    cdef const real* s
    for o in range(outer):
        for i in range(n):
            d = dx + (o * size + idx[i]) * inner
            s = dout + (o * n + i) * inner
            for j in range(inner):
                d[j] += s[j]


cdef class _GatherBase:
    cdef int axis
    cdef str who

    def __init__(self, dict attrs, info=None):
        self.axis = attrs["axis"]
        self.who = var_name(info, "Index")

    cdef int _axis(self, object axis_t, int rank, str op) except? -1:
        axis = self.axis if axis_t is None else one_int(axis_t, op, "Axis")
        return norm_axis(axis, rank, op)

    cdef tuple _indices(self, object index, tuple xs, int axis, str op):
        cdef cnp.ndarray idx = int64_indices(index, op, self.who)
        if idx.ndim > 2 or (idx.ndim == 2 and idx.shape[1] != 1):
            raise ValueError(f"{op}: {self.who} must be 1-D, [N, 1] or 0-D, got shape "
                             f"{list((<object>idx).shape)}")
        check_range(idx, 0, 1, idx.size, xs[axis], op, self.who, f"dim {axis} of X")
        return idx, idx.ndim == 0


cdef class Gather(_GatherBase):
    def __call__(self, x, index, axis_t=None):
        cdef cnp.ndarray a = contiguous(x)
        check_plain(a, "gather", "X")
        cdef tuple xs = shape_of(a)
        if len(xs) == 0:
            raise ValueError("gather: X must have rank >= 1, got a 0-D tensor")
        cdef int axis = self._axis(axis_t, len(xs), "gather")
        idx, scalar = self._indices(index, xs, axis, "gather")
        cdef cnp.ndarray ids = idx
        cdef Py_ssize_t n = ids.size, outer = _prod(xs, 0, axis), size = xs[axis]
        cdef Py_ssize_t row = _prod(xs, axis + 1, len(xs)) * a.itemsize
        oshape = xs[:axis] + (() if scalar else (n,)) + xs[axis + 1:]
        cdef cnp.ndarray out = empty(oshape, cnp.PyArray_TYPE(a))
        with nogil:
            _take(<const char*>cnp.PyArray_DATA(a), <const long long*>cnp.PyArray_DATA(ids),
                  <char*>cnp.PyArray_DATA(out), outer, size, n, row)
        return (out,)


cdef class GatherGrad(_GatherBase):
    def __call__(self, x, index, axis_t, dout):
        cdef tuple xs = tuple(np.shape(x))
        if len(xs) == 0:
            raise ValueError("gather_grad: X must have rank >= 1, got a 0-D tensor")
        cdef int axis = self._axis(axis_t, len(xs), "gather_grad")
        idx, scalar = self._indices(index, xs, axis, "gather_grad")
        cdef cnp.ndarray ids = idx
        cdef cnp.ndarray g = contiguous(dout)
        cdef Py_ssize_t n = ids.size, outer = _prod(xs, 0, axis), size = xs[axis]
        cdef Py_ssize_t inner = _prod(xs, axis + 1, len(xs))
        expected = xs[:axis] + (() if scalar else (n,)) + xs[axis + 1:]
        if shape_of(g) != expected:
            raise ValueError(f"gather_grad: Out@GRAD has shape {list(shape_of(g))}, expected "
                             f"{list(expected)} (Out's shape)")
        cdef cnp.ndarray dx = np.zeros(xs, dtype=g.dtype)
        cdef const long long* ip = <const long long*>cnp.PyArray_DATA(ids)
        if g.dtype == np.float64:
            with nogil:
                _put_add(<double*>cnp.PyArray_DATA(dx), ip, <const double*>cnp.PyArray_DATA(g),
                         outer, size, n, inner)
        elif g.dtype == np.float32:
            with nogil:
                _put_add(<float*>cnp.PyArray_DATA(dx), ip, <const float*>cnp.PyArray_DATA(g),
                         outer, size, n, inner)
        else:
            raise TypeError(f"gather_grad: Out@GRAD has dtype {g.dtype.name}, expected float32 "
                            f"or float64")
        return (dx,)


# -- gather_nd --------------------------------------------------------------------------------

cdef Py_ssize_t _offsets(const long long* idx, Py_ssize_t m, Py_ssize_t k,
                         const Py_ssize_t* dims, Py_ssize_t* offs,
                         Py_ssize_t* bad_dim) noexcept nogil:
    """Row offsets (in units of the trailing slice) of the m index tuples; the flat position
    of the first bad component (its dim in bad_dim), or -1."""
    cdef Py_ssize_t i, j, off
    cdef long long v
    for i in range(m):
        off = 0
        for j in range(k):
            v = idx[i * k + j]
            if v < 0 or v >= dims[j]:
                bad_dim[0] = j
                return i * k + j
            off = off * dims[j] + v
        offs[i] = off
    return -1


cdef class _GatherNdBase:
    cdef str who

    def __init__(self, dict attrs, info=None):
        self.who = var_name(info, "Index")

    cdef cnp.ndarray _offsets(self, object index, tuple xs, str op):
        cdef cnp.ndarray idx = int64_indices(index, op, self.who)
        if idx.ndim == 0:
            raise ValueError(f"{op}: {self.who} must have rank >= 1, got a 0-D tensor")
        cdef Py_ssize_t k = idx.shape[idx.ndim - 1], j
        if k > len(xs):
            raise ValueError(f"{op}: the last dim of {self.who} ({k}) exceeds X's rank "
                             f"{len(xs)}")
        cdef Py_ssize_t m = idx.size // k if k else _prod(tuple((<object>idx).shape), 0, idx.ndim - 1)
        cdef Py_ssize_t dims[64]
        for j in range(k):
            dims[j] = xs[j]
        cdef cnp.ndarray offs = np.zeros(m, dtype=np.intp)
        cdef Py_ssize_t bad, bad_dim = 0
        with nogil:
            bad = _offsets(<const long long*>cnp.PyArray_DATA(idx), m, k, dims,
                           <Py_ssize_t*>cnp.PyArray_DATA(offs), &bad_dim)
        if bad >= 0:
            at = [int(v) for v in np.unravel_index(bad, (<object>idx).shape)]
            raise IndexError(f"{op}: {self.who} holds {int(idx.reshape(-1)[bad])} at {at}, out "
                             f"of range for dim {bad_dim} of X of size {xs[bad_dim]} (valid: "
                             f"0..{xs[bad_dim] - 1})")
        return offs


cdef class GatherNd(_GatherNdBase):
    def __call__(self, x, index):
        cdef cnp.ndarray a = contiguous(x)
        check_plain(a, "gather_nd", "X")
        cdef tuple xs = shape_of(a), ishape = tuple(np.shape(index))
        cdef cnp.ndarray offs = self._offsets(index, xs, "gather_nd")
        cdef Py_ssize_t k = ishape[len(ishape) - 1], m = offs.shape[0], i
        cdef Py_ssize_t row = _prod(xs, k, len(xs)) * a.itemsize
        cdef cnp.ndarray out = empty(ishape[:len(ishape) - 1] + xs[k:], cnp.PyArray_TYPE(a))
        cdef const char* src = <const char*>cnp.PyArray_DATA(a)
        cdef char* dst = <char*>cnp.PyArray_DATA(out)
        cdef const Py_ssize_t* op = <const Py_ssize_t*>cnp.PyArray_DATA(offs)
        with nogil:
            for i in range(m):
                memcpy(dst + i * row, src + op[i] * row, row)
        return (out,)


cdef void _add_rows(real* dx, const Py_ssize_t* offs, const real* g, Py_ssize_t m,
                    Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t i, j
    for i in range(m):
        for j in range(inner):
            dx[offs[i] * inner + j] += g[i * inner + j]


cdef class GatherNdGrad(_GatherNdBase):
    def __call__(self, x, index, dout):
        cdef tuple xs = tuple(np.shape(x)), ishape = tuple(np.shape(index))
        cdef cnp.ndarray offs = self._offsets(index, xs, "gather_nd_grad")
        cdef Py_ssize_t k = ishape[len(ishape) - 1], m = offs.shape[0]
        cdef Py_ssize_t inner = _prod(xs, k, len(xs))
        cdef cnp.ndarray g = contiguous(dout)
        expected = ishape[:len(ishape) - 1] + xs[k:]
        if shape_of(g) != expected:
            raise ValueError(f"gather_nd_grad: Out@GRAD has shape {list(shape_of(g))}, "
                             f"expected {list(expected)} (Out's shape)")
        cdef cnp.ndarray dx = np.zeros(xs, dtype=g.dtype)
        cdef const Py_ssize_t* op = <const Py_ssize_t*>cnp.PyArray_DATA(offs)
        if g.dtype == np.float64:
            with nogil:
                _add_rows(<double*>cnp.PyArray_DATA(dx), op,
                          <const double*>cnp.PyArray_DATA(g), m, inner)
        elif g.dtype == np.float32:
            with nogil:
                _add_rows(<float*>cnp.PyArray_DATA(dx), op, <const float*>cnp.PyArray_DATA(g),
                          m, inner)
        else:
            raise TypeError(f"gather_nd_grad: Out@GRAD has dtype {g.dtype.name}, expected "
                            f"float32 or float64")
        return (dx,)


KERNELS = [("gather", Gather, ALL_DTYPES), ("gather_grad", GatherGrad, FLOATS),
           ("gather_nd", GatherNd, ALL_DTYPES), ("gather_nd_grad", GatherNdGrad, FLOATS)]
