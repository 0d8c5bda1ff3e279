# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""momentum: VelocityOut = mu Velocity + g; ParamOut = Param - lr (g + mu VelocityOut) with
use_nesterov, else Param - lr VelocityOut; g = rescale_grad Grad (+ regularization_coeff Param
with 'l2_decay'). A MasterParam (float16 multi_precision) is refused.

Param and Velocity are updated in place when their outputs are bound to them (persistable),
see ``target`` in _common.pxd.
"""
cimport numpy as cnp
from headrace.kernels.common cimport real
from ._common cimport dense, like_param, scalar, target

from ..host.momentum import momentum_attrs, refuse_master_param

cnp.import_array()

DTYPES = ("float32", "float64")


cdef void _momentum(const real* p, const real* g, const real* v, real* po, real* vo,
                    Py_ssize_t n, real lr, real mu, real decay, bint nesterov,
                    real rescale) noexcept nogil:
    cdef Py_ssize_t i
    cdef real pi, gi, vi
    for i in range(n):
        pi = p[i]
        gi = g[i] * rescale + decay * pi
        vi = mu * v[i] + gi
        vo[i] = vi
        if nesterov:
            po[i] = pi - lr * (gi + mu * vi)
        else:
            po[i] = pi - lr * vi


cdef class Momentum:
    cdef double mu, decay, rescale
    cdef bint nesterov, inplace_p, inplace_v

    def __init__(self, dict attrs, info=None):
        self.mu, self.nesterov, self.decay, self.rescale = momentum_attrs(attrs)
        self.inplace_p = info is not None and info.in_place("Param", "ParamOut")
        self.inplace_v = info is not None and info.in_place("Velocity", "VelocityOut")

    def __call__(self, param, grad, learning_rate, velocity, master_param=None):
        refuse_master_param(master_param)
        cdef cnp.ndarray p = dense(param, "momentum", "Param")
        cdef cnp.ndarray g = like_param(grad, p, "momentum", "Grad")
        cdef cnp.ndarray v = like_param(velocity, p, "momentum", "Velocity")
        cdef double lr = scalar(learning_rate, "momentum", "LearningRate")
        cdef list reads = [p, g, v]
        cdef cnp.ndarray po = target(p, param, self.inplace_p, reads, 0)
        cdef cnp.ndarray vo = target(v, velocity, self.inplace_v, reads, 2)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(p)
        if cnp.PyArray_TYPE(p) == cnp.NPY_FLOAT32:
            with nogil:
                _momentum(<const float*>cnp.PyArray_DATA(p), <const float*>cnp.PyArray_DATA(g),
                          <const float*>cnp.PyArray_DATA(v), <float*>cnp.PyArray_DATA(po),
                          <float*>cnp.PyArray_DATA(vo), n, <float>lr, <float>self.mu,
                          <float>self.decay, self.nesterov, <float>self.rescale)
        else:
            with nogil:
                _momentum(<const double*>cnp.PyArray_DATA(p),
                          <const double*>cnp.PyArray_DATA(g),
                          <const double*>cnp.PyArray_DATA(v), <double*>cnp.PyArray_DATA(po),
                          <double*>cnp.PyArray_DATA(vo), n, lr, self.mu, self.decay,
                          self.nesterov, self.rescale)
        return (po, vo, None)


KERNELS = [("momentum", Momentum, DTYPES)]
