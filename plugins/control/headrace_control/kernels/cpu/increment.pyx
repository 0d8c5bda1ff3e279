# cython: language_level=3, boundscheck=False, wraparound=False
"""increment: Out = X + step for a one-element counter, in X's dtype."""
cimport numpy as cnp
from headrace.kernels.common cimport contiguous, empty_like, shape_of

cnp.import_array()

DTYPES = ("int32", "int64", "float32", "float64")


cdef class Increment:
    cdef double step

    def __init__(self, dict attrs, info=None):
        self.step = attrs["step"]

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        if cnp.PyArray_SIZE(a) != 1:
            raise ValueError(f"increment: X must hold one element, found shape {list(shape_of(a))}")
        cdef cnp.ndarray out = empty_like(a)
        cdef int t = cnp.PyArray_TYPE(a)
        cdef void* src = cnp.PyArray_DATA(a)
        cdef void* dst = cnp.PyArray_DATA(out)
        if t == cnp.NPY_INT64:
            (<long long*>dst)[0] = (<long long*>src)[0] + <long long>self.step
        elif t == cnp.NPY_INT32:
            (<int*>dst)[0] = (<int*>src)[0] + <int>self.step
        elif t == cnp.NPY_FLOAT32:
            (<float*>dst)[0] = (<float*>src)[0] + <float>self.step
        elif t == cnp.NPY_FLOAT64:
            (<double*>dst)[0] = (<double*>src)[0] + self.step
        else:
            raise TypeError(f"increment: X has dtype {a.dtype}; expected one of {DTYPES}")
        return (out,)


KERNELS = [("increment", Increment, DTYPES)]
