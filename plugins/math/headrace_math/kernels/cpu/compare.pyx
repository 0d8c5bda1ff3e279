# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""less_than, less_equal, greater_than, greater_equal, equal, not_equal -> bool.

Broadcasting is the elementwise ops' (Paddle's ``axis`` rule), computed by the shared
``_broadcast.broadcast``; equal shapes take one flat loop. The relation is chosen once per
row, outside the element loop. NaN compares as in C and NumPy: only != holds.
"""
cimport numpy as cnp
from ._broadcast cimport Bcast, Walk, broadcast, walk_next, walk_start
from headrace.kernels.common cimport contiguous, dtype_name, same_shape, typenum

cnp.import_array()

# bool and uint8 share unsigned char; float16 has no C type here.
DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64")

ctypedef fused ordered:
    signed char
    unsigned char
    short
    int
    long long
    float
    double

cdef enum:
    LT, LE, GT, GE, EQ, NE


cdef inline void _row(int code, const ordered* x, Py_ssize_t sx, const ordered* y,
                      Py_ssize_t sy, cnp.npy_bool* out, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if code == LT:
        for i in range(n):
            out[i] = x[i * sx] < y[i * sy]
    elif code == LE:
        for i in range(n):
            out[i] = x[i * sx] <= y[i * sy]
    elif code == GT:
        for i in range(n):
            out[i] = x[i * sx] > y[i * sy]
    elif code == GE:
        for i in range(n):
            out[i] = x[i * sx] >= y[i * sy]
    elif code == EQ:
        for i in range(n):
            out[i] = x[i * sx] == y[i * sy]
    else:
        for i in range(n):
            out[i] = x[i * sx] != y[i * sy]


cdef void _compare(int code, const ordered* x, const ordered* y, cnp.npy_bool* out,
                   const Bcast* bc) noexcept nogil:
    cdef Walk w
    cdef Py_ssize_t n = bc.dims[bc.nd - 1], isx = bc.sx[bc.nd - 1], isy = bc.sy[bc.nd - 1]
    walk_start(&w, bc)
    while True:
        # Literal strides for the usual rows let the compiler vectorize the inlined loop.
        if isx == 1 and isy == 1:
            _row(code, x + w.ox, 1, y + w.oy, 1, out + w.o, n)
        elif isx == 1 and isy == 0:
            _row(code, x + w.ox, 1, y + w.oy, 0, out + w.o, n)
        elif isx == 0 and isy == 1:
            _row(code, x + w.ox, 0, y + w.oy, 1, out + w.o, n)
        else:
            _row(code, x + w.ox, isx, y + w.oy, isy, out + w.o, n)
        if not walk_next(&w, bc):
            return


cdef inline bint _supported(int t) noexcept:
    return t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64 or t == cnp.NPY_INT32 or \
        t == cnp.NPY_INT64 or t == cnp.NPY_BOOL or t == cnp.NPY_UINT8 or t == cnp.NPY_INT8 or \
        t == cnp.NPY_INT16


cdef class Compare:
    cdef int code, axis
    cdef str name

    def __init__(self, int code, str name, dict attrs):
        self.code, self.name = code, name
        self.axis = attrs.get("axis", -1)

    def __call__(self, x, y):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef int t = typenum(a)
        cdef Bcast bc
        if t != typenum(b):
            raise TypeError(f"{self.name}: X is {dtype_name(a)} but Y is {dtype_name(b)}")
        if not _supported(t):
            raise TypeError(f"{self.name}: dtype {dtype_name(a)} not supported "
                            f"({', '.join(DTYPES)})")
        if same_shape(a, b):
            # One flat row: the walk below visits it once with unit strides.
            bc.out_nd = cnp.PyArray_NDIM(a)
            bc.size = cnp.PyArray_SIZE(a)
            bc.nd, bc.dims[0], bc.sx[0], bc.sy[0] = 1, bc.size, 1, 1
            out = cnp.PyArray_EMPTY(bc.out_nd, cnp.PyArray_DIMS(a), cnp.NPY_BOOL, 0)
        else:
            broadcast(a, b, self.axis, &bc, self.name)
            out = cnp.PyArray_EMPTY(bc.out_nd, bc.out_shape, cnp.NPY_BOOL, 0)
        if bc.size == 0:
            return (out,)
        cdef void* pa = cnp.PyArray_DATA(a)
        cdef void* pb = cnp.PyArray_DATA(b)
        cdef cnp.npy_bool* po = <cnp.npy_bool*>cnp.PyArray_DATA(out)
        cdef int code = self.code
        with nogil:
            if t == cnp.NPY_FLOAT32:
                _compare(code, <const float*>pa, <const float*>pb, po, &bc)
            elif t == cnp.NPY_FLOAT64:
                _compare(code, <const double*>pa, <const double*>pb, po, &bc)
            elif t == cnp.NPY_INT32:
                _compare(code, <const int*>pa, <const int*>pb, po, &bc)
            elif t == cnp.NPY_INT64:
                _compare(code, <const long long*>pa, <const long long*>pb, po, &bc)
            elif t == cnp.NPY_BOOL or t == cnp.NPY_UINT8:
                _compare(code, <const unsigned char*>pa, <const unsigned char*>pb, po, &bc)
            elif t == cnp.NPY_INT8:
                _compare(code, <const signed char*>pa, <const signed char*>pb, po, &bc)
            else:
                _compare(code, <const short*>pa, <const short*>pb, po, &bc)
        return (out,)


def _maker(int code, str name):
    def make(dict attrs, info=None):
        return Compare(code, name, attrs)
    make.__name__ = name
    return make


KERNELS = [(name, _maker(code, name), DTYPES) for code, name in [
    (LT, "less_than"), (LE, "less_equal"), (GT, "greater_than"), (GE, "greater_equal"),
    (EQ, "equal"), (NE, "not_equal")]]
