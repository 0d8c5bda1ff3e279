# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""adagrad: MomentOut = Moment + Grad^2; ParamOut = Param - lr Grad / (sqrt(MomentOut) + eps).

Param and Moment are updated in place when their outputs are bound to them (persistable), see
``target`` in _common.pxd.
"""
cimport numpy as cnp
from libc.math cimport sqrt
from headrace.kernels.common cimport real
from ._common cimport dense, like_param, scalar, target

cnp.import_array()

DTYPES = ("float32", "float64")


cdef void _adagrad(const real* p, const real* g, const real* m, real* po, real* mo,
                   Py_ssize_t n, real lr, real eps) noexcept nogil:
    cdef Py_ssize_t i
    cdef real gi, mi
    for i in range(n):
        gi = g[i]
        mi = m[i] + gi * gi
        mo[i] = mi
        po[i] = p[i] - lr * gi / (<real>sqrt(mi) + eps)


cdef class Adagrad:
    cdef double eps
    cdef bint inplace_p, inplace_m

    def __init__(self, dict attrs, info=None):
        self.eps = attrs.get("epsilon", 1e-6)
        self.inplace_p = info is not None and info.in_place("Param", "ParamOut")
        self.inplace_m = info is not None and info.in_place("Moment", "MomentOut")

    def __call__(self, param, grad, learning_rate, moment):
        cdef cnp.ndarray p = dense(param, "adagrad", "Param")
        cdef cnp.ndarray g = like_param(grad, p, "adagrad", "Grad")
        cdef cnp.ndarray m = like_param(moment, p, "adagrad", "Moment")
        cdef double lr = scalar(learning_rate, "adagrad", "LearningRate")
        cdef list reads = [p, g, m]
        cdef cnp.ndarray po = target(p, param, self.inplace_p, reads, 0)
        cdef cnp.ndarray mo = target(m, moment, self.inplace_m, reads, 2)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(p)
        if cnp.PyArray_TYPE(p) == cnp.NPY_FLOAT32:
            with nogil:
                _adagrad(<const float*>cnp.PyArray_DATA(p), <const float*>cnp.PyArray_DATA(g),
                         <const float*>cnp.PyArray_DATA(m), <float*>cnp.PyArray_DATA(po),
                         <float*>cnp.PyArray_DATA(mo), n, <float>lr, <float>self.eps)
        else:
            with nogil:
                _adagrad(<const double*>cnp.PyArray_DATA(p), <const double*>cnp.PyArray_DATA(g),
                         <const double*>cnp.PyArray_DATA(m), <double*>cnp.PyArray_DATA(po),
                         <double*>cnp.PyArray_DATA(mo), n, lr, self.eps)
        return (po, mo)


KERNELS = [("adagrad", Adagrad, DTYPES)]
