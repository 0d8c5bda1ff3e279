# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""elementwise_{add,sub,mul,div,max,min,pow} with Paddle's broadcasting (``axis``).

A flat loop runs when the shapes are equal; otherwise the shapes are aligned once per call by
the shared ``_broadcast.broadcast`` (Y's dims placed at ``axis`` of X, or trailing), which also
merges adjacent dims that broadcast alike, and a strided loop walks the output row by row with
stride 0 on the broadcast dims (so [N, C] + [C] is a single 2-D loop whatever N's rank was).
"""
cimport numpy as cnp
from libc.math cimport pow as cpow, powf
from ._broadcast cimport Bcast, Walk, broadcast, walk_next, walk_start
from ._common cimport contiguous, dtype_name, is_nan, same_shape, typenum

cnp.import_array()

FLOATS = ("float32", "float64")
NUMBERS = ("float32", "float64", "int32", "int64")

ctypedef fused num:
    float
    double
    int
    long long

cdef enum:
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    MAX = 4
    MIN = 5
    POW = 6


cdef inline void _row(int code, const num* x, Py_ssize_t sx, const num* y, Py_ssize_t sy,
                      num* out, Py_ssize_t n) noexcept nogil:
    """One row of out = f(x, y). The op is chosen once, outside the element loops, so that
    each loop (inlined with literal strides by the callers) vectorizes."""
    cdef Py_ssize_t i
    cdef num a, b
    if code == ADD:
        for i in range(n):
            out[i] = x[i * sx] + y[i * sy]
    elif code == SUB:
        for i in range(n):
            out[i] = x[i * sx] - y[i * sy]
    elif code == MUL:
        for i in range(n):
            out[i] = x[i * sx] * y[i * sy]
    elif code == DIV:
        for i in range(n):
            out[i] = x[i * sx] / y[i * sy]
    elif code == MAX:
        # max/min propagate NaN from either side, as NumPy's maximum/minimum do (``|``,
        # not ``or``: a short-circuit branch would keep the loop from vectorizing).
        for i in range(n):
            a, b = x[i * sx], y[i * sy]
            out[i] = a if (a >= b) | is_nan(a) else b
    elif code == MIN:
        for i in range(n):
            a, b = x[i * sx], y[i * sy]
            out[i] = a if (a <= b) | is_nan(a) else b
    elif num is float:
        # glibc's powf is within an ulp and about 3x faster than pow in double.
        for i in range(n):
            out[i] = powf(x[i * sx], y[i * sy])
    else:
        for i in range(n):
            out[i] = <num>cpow(<double>x[i * sx], <double>y[i * sy])


cdef void _strided(int code, const num* x, const num* y, num* out,
                   const Bcast* bc) noexcept nogil:
    """out (contiguous) = f(x, y), row by row over the merged broadcast dims."""
    cdef Walk w
    cdef Py_ssize_t n = bc.dims[bc.nd - 1], isx = bc.sx[bc.nd - 1], isy = bc.sy[bc.nd - 1]
    walk_start(&w, bc)
    while True:
        # Literal strides for the usual rows (both contiguous, or one side a broadcast
        # scalar) let the compiler vectorize them once _row is inlined.
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


cdef class Elementwise:
    cdef int code, axis
    cdef str name
    cdef bint floats_only

    def __init__(self, int code, str name, dict attrs, info=None):
        self.code = code
        self.name = name
        self.axis = attrs.get("axis", -1)
        self.floats_only = code == DIV or code == POW

    def __call__(self, x, y):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray b = contiguous(y)
        cdef int t = typenum(a)
        if t != typenum(b):
            raise TypeError(f"{self.name}: X is {dtype_name(a)} but Y is {dtype_name(b)}")
        self._check_dtype(t, a)
        cdef cnp.ndarray out
        cdef Bcast bc
        if same_shape(a, b):
            out = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a), t, 0)
            self._dispatch_flat(t, a, b, out, cnp.PyArray_SIZE(a))
            return (out,)
        broadcast(a, b, self.axis, &bc, self.name)
        out = cnp.PyArray_EMPTY(bc.out_nd, bc.out_shape, t, 0)
        if bc.size:
            self._dispatch_strided(t, a, b, out, &bc)
        return (out,)

    cdef int _check_dtype(self, int t, cnp.ndarray a) except -1:
        if t == cnp.NPY_FLOAT32 or t == cnp.NPY_FLOAT64:
            return 0
        if not self.floats_only and (t == cnp.NPY_INT32 or t == cnp.NPY_INT64):
            return 0
        raise TypeError(f"{self.name}: dtype {dtype_name(a)} not supported ("
                        + ("float32, float64)" if self.floats_only else
                           "float32, float64, int32, int64)"))

    cdef _dispatch_flat(self, int t, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out,
                        Py_ssize_t n):
        cdef void* pa = cnp.PyArray_DATA(a)
        cdef void* pb = cnp.PyArray_DATA(b)
        cdef void* po = cnp.PyArray_DATA(out)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _row(self.code, <float*>pa, 1, <float*>pb, 1, <float*>po, n)
        elif t == cnp.NPY_FLOAT64:
            with nogil:
                _row(self.code, <double*>pa, 1, <double*>pb, 1, <double*>po, n)
        elif t == cnp.NPY_INT32:
            with nogil:
                _row(self.code, <int*>pa, 1, <int*>pb, 1, <int*>po, n)
        else:
            with nogil:
                _row(self.code, <long long*>pa, 1, <long long*>pb, 1, <long long*>po, n)

    cdef _dispatch_strided(self, int t, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out,
                           const Bcast* bc):
        cdef void* pa = cnp.PyArray_DATA(a)
        cdef void* pb = cnp.PyArray_DATA(b)
        cdef void* po = cnp.PyArray_DATA(out)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _strided(self.code, <float*>pa, <float*>pb, <float*>po, bc)
        elif t == cnp.NPY_FLOAT64:
            with nogil:
                _strided(self.code, <double*>pa, <double*>pb, <double*>po, bc)
        elif t == cnp.NPY_INT32:
            with nogil:
                _strided(self.code, <int*>pa, <int*>pb, <int*>po, bc)
        else:
            with nogil:
                _strided(self.code, <long long*>pa, <long long*>pb, <long long*>po, bc)


def _maker(int code, str name):
    def make(dict attrs, info=None):
        return Elementwise(code, name, attrs, info)
    make.__name__ = name
    return make


KERNELS = [
    ("elementwise_add", _maker(ADD, "elementwise_add"), NUMBERS),
    ("elementwise_sub", _maker(SUB, "elementwise_sub"), NUMBERS),
    ("elementwise_mul", _maker(MUL, "elementwise_mul"), NUMBERS),
    ("elementwise_div", _maker(DIV, "elementwise_div"), FLOATS),
    ("elementwise_max", _maker(MAX, "elementwise_max"), NUMBERS),
    ("elementwise_min", _maker(MIN, "elementwise_min"), NUMBERS),
    ("elementwise_pow", _maker(POW, "elementwise_pow"), FLOATS),
]
