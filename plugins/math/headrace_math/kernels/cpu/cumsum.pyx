# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""cumsum and cumsum_grad. X is seen as [outer, n, inner] around the summed axis; a row of
``inner`` running sums walks the axis (forward or reversed), so the inner loop is contiguous
and vectorizes. Floats accumulate in double (float32 included), integers in int64."""
cimport numpy as cnp
from libc.string cimport memset
from headrace.kernels.common cimport contiguous, empty, shape_of, typenum

import numpy as np

cnp.import_array()

DTYPES = ("float32", "float64", "int32", "int64")

ctypedef fused num:
    float
    double
    int
    long long


cdef void _run(const num* x, num* out, Py_ssize_t outer, Py_ssize_t n, Py_ssize_t inner,
               bint exclusive, bint reverse, double* dacc, long long* iacc) noexcept nogil:
    cdef Py_ssize_t o, t, i, j, base
    for o in range(outer):
        if num is float or num is double:
            memset(dacc, 0, inner * sizeof(double))
        else:
            memset(iacc, 0, inner * sizeof(long long))
        for t in range(n):
            i = n - 1 - t if reverse else t
            base = (o * n + i) * inner
            for j in range(inner):
                if num is float or num is double:
                    if exclusive:
                        out[base + j] = <num>dacc[j]
                        dacc[j] += x[base + j]
                    else:
                        dacc[j] += x[base + j]
                        out[base + j] = <num>dacc[j]
                else:
                    if exclusive:
                        out[base + j] = <num>iacc[j]
                        iacc[j] += x[base + j]
                    else:
                        iacc[j] += x[base + j]
                        out[base + j] = <num>iacc[j]


cdef cnp.ndarray cumsum(cnp.ndarray a, int axis, bint exclusive, bint reverse, str op):
    """The running sums of the contiguous ``a`` along ``axis`` (already in range)."""
    cdef tuple s = shape_of(a)
    cdef Py_ssize_t outer = 1, inner = 1, n = s[axis] if len(s) else 1, k
    for k in range(axis):
        outer *= <Py_ssize_t>s[k]
    for k in range(axis + 1, len(s)):
        inner *= <Py_ssize_t>s[k]
    cdef int t = typenum(a)
    cdef cnp.ndarray out = empty(s, t)
    cdef double[::1] dacc
    cdef long long[::1] iacc
    if t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64:
        dacc, iacc = np.empty(max(inner, 1)), np.empty(1, np.int64)
    else:
        dacc, iacc = np.empty(1), np.empty(max(inner, 1), np.int64)
    if t == cnp.NPY_FLOAT32:
        with nogil:
            _run(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out), outer, n,
                 inner, exclusive, reverse, &dacc[0], &iacc[0])
    elif t == cnp.NPY_FLOAT64:
        with nogil:
            _run(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out), outer, n,
                 inner, exclusive, reverse, &dacc[0], &iacc[0])
    elif t == cnp.NPY_INT32:
        with nogil:
            _run(<const int*>cnp.PyArray_DATA(a), <int*>cnp.PyArray_DATA(out), outer, n,
                 inner, exclusive, reverse, &dacc[0], &iacc[0])
    elif t == cnp.NPY_INT64 or t == cnp.NPY_LONGLONG:
        with nogil:
            _run(<const long long*>cnp.PyArray_DATA(a), <long long*>cnp.PyArray_DATA(out),
                 outer, n, inner, exclusive, reverse, &dacc[0], &iacc[0])
    else:
        raise TypeError(f"{op}: X has dtype {a.dtype.name}, expected one of {', '.join(DTYPES)}")
    return out


cdef class Cumsum:
    cdef int axis
    cdef bint flatten, exclusive, reverse

    def __init__(self, dict attrs, info=None):
        self.axis, self.flatten = attrs["axis"], attrs["flatten"]
        self.exclusive, self.reverse = attrs["exclusive"], attrs["reverse"]

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        if self.flatten or a.ndim == 0:
            if not self.flatten and not -1 <= self.axis <= 0:
                raise IndexError(f"cumsum: axis {self.axis} is out of range for a 0-D X")
            out = cumsum(a.reshape(-1), 0, self.exclusive, self.reverse, "cumsum")
            return (out if self.flatten else out.reshape(()),)
        if not -a.ndim <= self.axis < a.ndim:
            raise IndexError(f"cumsum: axis {self.axis} is out of range for X of rank "
                             f"{a.ndim} (valid: {-a.ndim}..{a.ndim - 1})")
        # (cdivision: C's % keeps the sign, so a negative axis is shifted by hand)
        axis = self.axis + a.ndim if self.axis < 0 else self.axis
        return (cumsum(a, axis, self.exclusive, self.reverse, "cumsum"),)


cdef class CumsumGrad:
    """X@GRAD of a flattening cumsum: Out@GRAD summed the other way, in X's shape."""
    cdef bint exclusive, reverse

    def __init__(self, dict attrs, info=None):
        self.exclusive, self.reverse = attrs["exclusive"], attrs["reverse"]

    def __call__(self, x, dout):
        cdef cnp.ndarray g = contiguous(dout)
        shape = np.shape(x)
        if g.size != int(np.prod(shape)):
            raise ValueError(f"cumsum_grad: Out@GRAD has {g.size} elements, X{list(shape)} "
                             f"{int(np.prod(shape))}")
        out = cumsum(g.reshape(-1), 0, self.exclusive, not self.reverse, "cumsum_grad")
        return (out.reshape(shape),)


KERNELS = [("cumsum", Cumsum, DTYPES), ("cumsum_grad", CumsumGrad, ("float32", "float64"))]
