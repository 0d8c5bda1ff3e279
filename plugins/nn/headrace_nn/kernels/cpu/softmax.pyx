# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""softmax along any axis, numerically stable.

X is viewed as [outer, C, inner] around the axis. With inner == 1 (the usual last axis) each
row is contiguous; otherwise the C values of one softmax are ``inner`` apart, and the loops run
over whole [inner] slices at a time (max, then exp and sum, then scale) so that memory is read
in order instead of with a stride per element.

softmax_grad reads Out and Out@GRAD: X@GRAD = Out * (Out@GRAD - sum(Out * Out@GRAD)) along the
axis, with the same [outer, C, inner] view (the dot product accumulated in double).
"""
cimport numpy as cnp
from libc.math cimport exp, expf
from libc.stdlib cimport free, malloc
from headrace.kernels.common cimport contiguous, empty_like, real, shape_of
from ._common cimport expect_shape, float_array, same_float

cdef extern from "_rows.h" nogil:
    void hr_softmax_rows_f32(const float* x, float* out, Py_ssize_t rows, Py_ssize_t n)
    void hr_softmax_grad_rows_f32(const float* y, const float* dy, float* dx, Py_ssize_t rows,
                                  Py_ssize_t n)

cnp.import_array()

DTYPES = ("float32", "float64")


cdef inline real _exp(real v) noexcept nogil:
    if real is float:
        return expf(v)
    else:
        return exp(v)


cdef void _rows(const real* x, real* out, Py_ssize_t rows, Py_ssize_t C) noexcept nogil:
    """Softmax of each contiguous row of C values (inner == 1); float32 by _rows.h's
    vectorized loop (fastmath.h's exp, the sum in double)."""
    cdef Py_ssize_t r, c
    cdef const real* xr
    cdef real* orow
    cdef real m, e
    cdef double s, inv
    if real is float:
        hr_softmax_rows_f32(x, out, rows, C)
        return
    for r in range(rows):
        xr = x + r * C
        orow = out + r * C
        m = xr[0]
        for c in range(1, C):
            if xr[c] > m:
                m = xr[c]
        s = 0.0
        for c in range(C):
            e = _exp(xr[c] - m)   # <= 1: the max subtracted, nothing overflows
            orow[c] = e
            s += e                # double sum: rows of many classes keep precision
        inv = 1.0 / s
        for c in range(C):
            orow[c] = <real>(orow[c] * inv)


cdef int _strided(const real* x, real* out, Py_ssize_t outer, Py_ssize_t C,
                  Py_ssize_t inner) noexcept nogil:
    """Softmax over the middle axis of [outer, C, inner]; -1 when scratch memory is lacking."""
    cdef real* mx = <real*>malloc(inner * sizeof(real))
    cdef double* sm = <double*>malloc(inner * sizeof(double))
    cdef Py_ssize_t o, c, i
    cdef const real* xb
    cdef real* ob
    cdef real e
    if mx == NULL or sm == NULL:
        free(mx)
        free(sm)
        return -1
    for o in range(outer):
        xb = x + o * C * inner
        ob = out + o * C * inner
        for i in range(inner):
            mx[i] = xb[i]
            sm[i] = 0.0
        for c in range(1, C):
            for i in range(inner):
                if xb[c * inner + i] > mx[i]:
                    mx[i] = xb[c * inner + i]
        for c in range(C):
            for i in range(inner):
                e = _exp(xb[c * inner + i] - mx[i])
                ob[c * inner + i] = e
                sm[i] += e
        for i in range(inner):
            sm[i] = 1.0 / sm[i]
        for c in range(C):
            for i in range(inner):
                ob[c * inner + i] = <real>(ob[c * inner + i] * sm[i])
    free(mx)
    free(sm)
    return 0


cdef tuple split_axis(tuple shape, int axis, str op):
    """(outer, C, inner) of ``shape`` around ``axis`` (a 0-D tensor is one value)."""
    cdef int rank = len(shape)
    cdef int r = rank if rank > 0 else 1
    if not -r <= axis < r:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of shape "
                         f"{list(shape)} (rank {rank})")
    if axis < 0:
        axis += r
    if rank == 0:
        return 1, 1, 1
    cdef Py_ssize_t outer = 1, inner = 1
    for d in shape[:axis]:
        outer *= <Py_ssize_t>d
    for d in shape[axis + 1:]:
        inner *= <Py_ssize_t>d
    return outer, <Py_ssize_t>shape[axis], inner


cdef class Softmax:
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.axis = attrs.get("axis", -1)

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = cnp.PyArray_TYPE(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"softmax: X has dtype {a.dtype}, expected float32 or float64")
        outer, C, inner = split_axis(shape_of(a), self.axis, "softmax")
        cdef Py_ssize_t o = outer, c = C, i = inner
        cdef cnp.ndarray out = empty_like(a)
        cdef int rc = 0
        if o * c * i == 0:
            return (out,)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                if i == 1:
                    _rows(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out), o, c)
                else:
                    rc = _strided(<const float*>cnp.PyArray_DATA(a),
                                  <float*>cnp.PyArray_DATA(out), o, c, i)
        else:
            with nogil:
                if i == 1:
                    _rows(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out),
                          o, c)
                else:
                    rc = _strided(<const double*>cnp.PyArray_DATA(a),
                                  <double*>cnp.PyArray_DATA(out), o, c, i)
        if rc:
            raise MemoryError("softmax: no memory for the scratch buffers")
        return (out,)


cdef void _grad_rows(const real* y, const real* dy, real* dx, Py_ssize_t rows,
                     Py_ssize_t C) noexcept nogil:
    cdef Py_ssize_t r, c
    cdef double s
    cdef real sr
    if real is float:
        hr_softmax_grad_rows_f32(y, dy, dx, rows, C)
        return
    for r in range(rows):
        s = 0.0
        for c in range(C):
            s += <double>y[c] * dy[c]
        sr = <real>s
        for c in range(C):
            dx[c] = y[c] * (dy[c] - sr)
        y += C
        dy += C
        dx += C


cdef int _grad_strided(const real* y, const real* dy, real* dx, Py_ssize_t outer, Py_ssize_t C,
                       Py_ssize_t inner) noexcept nogil:
    cdef double* sm = <double*>malloc(inner * sizeof(double))
    cdef Py_ssize_t o, c, i, k
    if sm == NULL:
        return -1
    for o in range(outer):
        k = o * C * inner
        for i in range(inner):
            sm[i] = 0.0
        for c in range(C):
            for i in range(inner):
                sm[i] += <double>y[k + c * inner + i] * dy[k + c * inner + i]
        for c in range(C):
            for i in range(inner):
                dx[k + c * inner + i] = <real>(y[k + c * inner + i] *
                                               (dy[k + c * inner + i] - sm[i]))
    free(sm)
    return 0


cdef class SoftmaxGrad:
    """softmax_grad(Out, Out@GRAD) -> (X@GRAD,)."""
    cdef int axis

    def __init__(self, dict attrs, info=None):
        self.axis = attrs.get("axis", -1)

    def __call__(self, out, dout):
        name = "softmax_grad"
        cdef cnp.ndarray y = float_array(out, name, "Out")
        cdef cnp.ndarray dy = float_array(dout, name, "Out@GRAD")
        same_float(y, dy, name, "Out", "Out@GRAD")
        expect_shape(dy, shape_of(y), name, "Out@GRAD", "the shape of Out")
        outer, C, inner = split_axis(shape_of(y), self.axis, name)
        cdef Py_ssize_t o = outer, c = C, i = inner
        cdef cnp.ndarray dx = empty_like(y)
        cdef int rc = 0
        if o * c * i == 0:
            return (dx,)
        if cnp.PyArray_TYPE(y) == cnp.NPY_FLOAT32:
            with nogil:
                if i == 1:
                    _grad_rows(<const float*>cnp.PyArray_DATA(y),
                               <const float*>cnp.PyArray_DATA(dy),
                               <float*>cnp.PyArray_DATA(dx), o, c)
                else:
                    rc = _grad_strided(<const float*>cnp.PyArray_DATA(y),
                                       <const float*>cnp.PyArray_DATA(dy),
                                       <float*>cnp.PyArray_DATA(dx), o, c, i)
        else:
            with nogil:
                if i == 1:
                    _grad_rows(<const double*>cnp.PyArray_DATA(y),
                               <const double*>cnp.PyArray_DATA(dy),
                               <double*>cnp.PyArray_DATA(dx), o, c)
                else:
                    rc = _grad_strided(<const double*>cnp.PyArray_DATA(y),
                                       <const double*>cnp.PyArray_DATA(dy),
                                       <double*>cnp.PyArray_DATA(dx), o, c, i)
        if rc:
            raise MemoryError("softmax_grad: no memory for the scratch buffer")
        return (dx,)


KERNELS = [("softmax", Softmax, DTYPES), ("softmax_grad", SoftmaxGrad, DTYPES)]
