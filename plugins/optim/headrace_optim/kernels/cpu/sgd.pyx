# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""sgd: ParamOut = Param - LearningRate * Grad.

In place (ParamOut bound to a persistable Param): the update is written into Param's own array
and that array is returned, so the scope keeps one buffer from step to step; a read-only or
shared array gets a fresh one instead (see ``target`` in _common.pxd).
"""
cimport numpy as cnp
from headrace.kernels.common cimport real
from ._common cimport dense, like_param, scalar, target

cnp.import_array()

DTYPES = ("float32", "float64")


cdef void _sgd(const real* p, const real* g, real* po, Py_ssize_t n, real lr) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        po[i] = p[i] - lr * g[i]


cdef class SGD:
    cdef bint inplace

    def __init__(self, dict attrs, info=None):
        self.inplace = info is not None and info.in_place("Param", "ParamOut")

    def __call__(self, param, grad, learning_rate, master_param=None):
        if master_param is not None:
            raise ValueError("sgd: MasterParam (multi_precision training of a float16 Param) "
                             "is not supported here")
        cdef cnp.ndarray p = dense(param, "sgd", "Param")
        cdef cnp.ndarray g = like_param(grad, p, "sgd", "Grad")
        cdef double lr = scalar(learning_rate, "sgd", "LearningRate")
        cdef cnp.ndarray po = target(p, param, self.inplace, [p, g], 0)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(p)
        if cnp.PyArray_TYPE(p) == cnp.NPY_FLOAT32:
            with nogil:
                _sgd(<const float*>cnp.PyArray_DATA(p), <const float*>cnp.PyArray_DATA(g),
                     <float*>cnp.PyArray_DATA(po), n, <float>lr)
        else:
            with nogil:
                _sgd(<const double*>cnp.PyArray_DATA(p), <const double*>cnp.PyArray_DATA(g),
                     <double*>cnp.PyArray_DATA(po), n, lr)
        return (po, None)


KERNELS = [("sgd", SGD, DTYPES)]
