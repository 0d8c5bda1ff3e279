# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""rmsprop: MeanSquareOut = decay MeanSquare + (1 - decay) g^2; centered: MeanGradOut =
decay MeanGrad + (1 - decay) g and denom = sqrt(MeanSquareOut - MeanGradOut^2 + eps), else
denom = sqrt(MeanSquareOut + eps); MomentOut = momentum Moment + lr g / denom;
ParamOut = Param - MomentOut.

Without centered, a bound MeanGradOut passes MeanGrad through unchanged. Param and the state
are updated in place when their outputs are bound to them (persistable), see ``target`` in
_common.pxd.
"""
cimport numpy as cnp
from libc.math cimport sqrt
from headrace.kernels.common cimport real
from ._common cimport dense, like_param, scalar, target

from ..host.rmsprop import rmsprop_attrs

cnp.import_array()

DTYPES = ("float32", "float64")


cdef void _rmsprop(const real* p, const real* g, const real* ms, const real* mg,
                   const real* mom, real* po, real* mso, real* mgo, real* momo, Py_ssize_t n,
                   real lr, real rho, real eps, real mu, bint centered) noexcept nogil:
    cdef Py_ssize_t i
    cdef real gi, s, a, d, v
    for i in range(n):
        gi = g[i]
        s = rho * ms[i] + (1 - rho) * gi * gi
        mso[i] = s
        if centered:
            a = rho * mg[i] + (1 - rho) * gi
            mgo[i] = a
            d = <real>sqrt(s - a * a + eps)
        else:
            d = <real>sqrt(s + eps)
        v = mu * mom[i] + lr * gi / d
        momo[i] = v
        po[i] = p[i] - v


cdef class RMSProp:
    cdef double eps, rho, mu
    cdef bint centered, mg_out, inplace_p, inplace_ms, inplace_mg, inplace_mom

    def __init__(self, dict attrs, info=None):
        (self.eps, self.rho, self.mu, self.centered, self.mg_out, self.inplace_p,
         self.inplace_ms, self.inplace_mg, self.inplace_mom) = rmsprop_attrs(attrs, info)

    def __call__(self, param, grad, learning_rate, mean_square, mean_grad, moment):
        cdef cnp.ndarray p = dense(param, "rmsprop", "Param")
        cdef cnp.ndarray g = like_param(grad, p, "rmsprop", "Grad")
        cdef cnp.ndarray ms = like_param(mean_square, p, "rmsprop", "MeanSquare")
        cdef cnp.ndarray mom = like_param(moment, p, "rmsprop", "Moment")
        cdef cnp.ndarray mg = None, mgo = None
        if mean_grad is not None:
            mg = like_param(mean_grad, p, "rmsprop", "MeanGrad")
        elif self.centered:
            raise ValueError("rmsprop: centered RMSProp needs the MeanGrad input")
        cdef double lr = scalar(learning_rate, "rmsprop", "LearningRate")
        cdef list reads = [p, g, ms, mg, mom]
        cdef cnp.ndarray po = target(p, param, self.inplace_p, reads, 0)
        cdef cnp.ndarray mso = target(ms, mean_square, self.inplace_ms, reads, 2)
        cdef cnp.ndarray momo = target(mom, moment, self.inplace_mom, reads, 4)
        if mg is not None:
            if self.centered:
                mgo = target(mg, mean_grad, self.inplace_mg, reads, 3)
            elif self.mg_out:  # passed through: itself in place, else a copy
                mgo = mg if self.inplace_mg and mg is mean_grad else mg.copy()
        cdef void* pmg = cnp.PyArray_DATA(mg) if mg is not None else NULL
        cdef void* pmgo = cnp.PyArray_DATA(mgo) if self.centered else NULL
        cdef Py_ssize_t n = cnp.PyArray_SIZE(p)
        if cnp.PyArray_TYPE(p) == cnp.NPY_FLOAT32:
            with nogil:
                _rmsprop(<const float*>cnp.PyArray_DATA(p), <const float*>cnp.PyArray_DATA(g),
                         <const float*>cnp.PyArray_DATA(ms), <const float*>pmg,
                         <const float*>cnp.PyArray_DATA(mom), <float*>cnp.PyArray_DATA(po),
                         <float*>cnp.PyArray_DATA(mso), <float*>pmgo,
                         <float*>cnp.PyArray_DATA(momo), n, <float>lr, <float>self.rho,
                         <float>self.eps, <float>self.mu, self.centered)
        else:
            with nogil:
                _rmsprop(<const double*>cnp.PyArray_DATA(p), <const double*>cnp.PyArray_DATA(g),
                         <const double*>cnp.PyArray_DATA(ms), <const double*>pmg,
                         <const double*>cnp.PyArray_DATA(mom), <double*>cnp.PyArray_DATA(po),
                         <double*>cnp.PyArray_DATA(mso), <double*>pmgo,
                         <double*>cnp.PyArray_DATA(momo), n, lr, self.rho, self.eps, self.mu,
                         self.centered)
        return (po, mso, mgo if self.mg_out else None, momo)


KERNELS = [("rmsprop", RMSProp, DTYPES)]
