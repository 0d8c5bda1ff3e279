# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""scale: Out = scale * X + bias (bias_after_scale) or scale * (X + bias).

Integer X (loop counters in programs Paddle writes) computes in its own type with scale and
bias converted to it first, truncating toward zero, as Paddle's kernel does."""
cimport numpy as cnp
from headrace.kernels.common cimport contiguous, empty_like

cnp.import_array()

DTYPES = ("float32", "float64", "int32", "int64")

ctypedef fused number:
    float
    double
    int
    long long


cdef void _scale(const number* x, number* out, Py_ssize_t n, number s, number b,
                 bint after) noexcept nogil:
    cdef Py_ssize_t i
    if after:
        for i in range(n):
            out[i] = s * x[i] + b
    else:
        for i in range(n):
            out[i] = s * (x[i] + b)


cdef class Scale:
    """Kernel maker and kernel: built once per op with its attributes, called per run."""
    cdef double s, b
    cdef bint after

    def __init__(self, dict attrs, info=None):
        self.s = attrs["scale"]
        self.b = attrs["bias"]
        self.after = attrs["bias_after_scale"]

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        cdef cnp.ndarray out = empty_like(a)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
        cdef int t = cnp.PyArray_TYPE(a)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _scale(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out), n,
                       <float>self.s, <float>self.b, self.after)
        elif t == cnp.NPY_FLOAT64:
            with nogil:
                _scale(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out), n,
                       self.s, self.b, self.after)
        elif t == cnp.NPY_INT64:
            with nogil:
                _scale(<const long long*>cnp.PyArray_DATA(a),
                           <long long*>cnp.PyArray_DATA(out), n, <long long>self.s,
                           <long long>self.b, self.after)
        elif t == cnp.NPY_INT32:
            with nogil:
                _scale(<const int*>cnp.PyArray_DATA(a), <int*>cnp.PyArray_DATA(out), n,
                           <int>self.s, <int>self.b, self.after)
        else:
            raise TypeError(f"scale: X has dtype {a.dtype}, expected float32, float64, int32 "
                            f"or int64")
        return (out,)


KERNELS = [("scale", Scale, DTYPES)]
