# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""adam: Moment1Out = b1 Moment1 + (1 - b1) g; Moment2Out = b2 Moment2 + (1 - b2) g^2;
lr_t = lr sqrt(1 - Beta2Pow) / (1 - Beta1Pow);
ParamOut = Param - lr_t Moment1Out / (sqrt(Moment2Out) + eps sqrt(1 - Beta2Pow)).

Beta1PowOut/Beta2PowOut (Paddle 2+), when bound, advance the powers: Beta1Pow * b1 and
Beta2Pow * b2, after lr_t was taken from the old values (unless use_global_beta_pow: they are
left as they are). Param, the moments and the powers are updated in place when their outputs
are bound to them (persistable), see ``target`` in _common.pxd.

With amsgrad, Moment2MaxOut = max(Moment2Max, Moment2Out) takes Moment2Out's place in the step.
Beta1Tensor/Beta2Tensor/EpsilonTensor (Paddle 3), when given, replace the attributes; a true
SkipUpdate leaves every output at its input's value; a MasterParam is refused.
adamw with with_decay: Param - lr * lr_ratio * coeff * Param first (Paddle's CPU kernel, in
Param's type), then the same update.
"""
cimport numpy as cnp
from libc.math cimport sqrt
from headrace.kernels.common cimport real
from ._common cimport dense, like_param, scalar, target

import numpy as np

cnp.import_array()

DTYPES = ("float32", "float64")


cdef void _adam(const real* p, const real* g, const real* m1, const real* m2, real* po,
                real* m1o, real* m2o, Py_ssize_t n, real b1, real b2, real lr_t,
                real eps_t, bint decays, real decay, const real* mx,
                real* mxo) noexcept nogil:
    cdef Py_ssize_t i
    cdef real gi, a, b, pi
    for i in range(n):
        gi = g[i]
        a = b1 * m1[i] + (1 - b1) * gi
        b = b2 * m2[i] + (1 - b2) * gi * gi
        m1o[i] = a
        m2o[i] = b
        if mx != NULL:         # AMSGrad: the step divides by the running maximum's root
            b = mx[i] if mx[i] > b else b
            mxo[i] = b
        # adamw's decoupled decay (a branch, not decay = 0: Param - 0 * inf would be NaN).
        pi = p[i] - decay * p[i] if decays else p[i]
        po[i] = pi - lr_t * a / (<real>sqrt(b) + eps_t)


cdef object advanced(object pow_arr, double beta, bint inplace):
    """The next beta power: Beta*Pow * beta, in its own array when updated in place."""
    if inplace and pow_arr.flags.writeable and pow_arr.dtype.isnative:
        np.multiply(pow_arr, pow_arr.dtype.type(beta), out=pow_arr)
        return pow_arr
    return (pow_arr * pow_arr.dtype.type(beta)).astype(pow_arr.dtype.newbyteorder("="))


cdef class Adam:
    cdef double b1, b2, eps, lr_ratio, coeff
    cdef bint inplace_p, inplace_m1, inplace_m2, pows_out, inplace_b1, inplace_b2, global_pows
    cdef bint decays, amsgrad, inplace_mx
    cdef str name

    def __init__(self, dict attrs, info=None):
        self.name = "adam"
        self.b1, self.b2 = attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)
        self.eps = attrs.get("epsilon", 1e-8)
        self.amsgrad = attrs.get("amsgrad", False)
        self.inplace_mx = info is not None and info.in_place("Moment2Max", "Moment2MaxOut")
        self.global_pows = attrs.get("use_global_beta_pow", False)
        self.decays, self.lr_ratio, self.coeff = False, 1.0, 0.0
        if not (0 <= self.b1 < 1 and 0 <= self.b2 < 1):
            raise ValueError(f"adam: beta1 ({self.b1}) and beta2 ({self.b2}) must be in [0, 1)")
        self.inplace_p = info is not None and info.in_place("Param", "ParamOut")
        self.inplace_m1 = info is not None and info.in_place("Moment1", "Moment1Out")
        self.inplace_m2 = info is not None and info.in_place("Moment2", "Moment2Out")
        b1_out = info is None or info.wants("Beta1PowOut")
        b2_out = info is None or info.wants("Beta2PowOut")
        if b1_out != b2_out:
            raise ValueError("adam: outputs Beta1PowOut and Beta2PowOut go together")
        self.pows_out = b1_out
        self.inplace_b1 = info is not None and info.in_place("Beta1Pow", "Beta1PowOut")
        self.inplace_b2 = info is not None and info.in_place("Beta2Pow", "Beta2PowOut")

    def __call__(self, param, grad, learning_rate, moment1, moment2, beta1_pow, beta2_pow,
                 moment2_max=None, beta1_tensor=None, beta2_tensor=None, epsilon_tensor=None,
                 skip_update=None, master_param=None):
        if master_param is not None:
            raise ValueError(f"{self.name}: MasterParam (multi_precision training of a float16 "
                             f"Param) is not supported here")
        # Paddle 3's tensors for beta1, beta2, epsilon take precedence over the attributes.
        cdef double b1 = self.b1 if beta1_tensor is None else \
            scalar(beta1_tensor, self.name, "Beta1Tensor")
        cdef double b2 = self.b2 if beta2_tensor is None else \
            scalar(beta2_tensor, self.name, "Beta2Tensor")
        cdef double eps = self.eps if epsilon_tensor is None else \
            scalar(epsilon_tensor, self.name, "EpsilonTensor")
        if not (0 <= b1 < 1 and 0 <= b2 < 1 and eps >= 0):
            raise ValueError(f"{self.name}: beta1 ({b1}) and beta2 ({b2}) must be in [0, 1), "
                             f"epsilon ({eps}) >= 0")
        if skip_update is not None and _skips(skip_update, self.name):
            return self._unchanged(param, moment1, moment2, beta1_pow, beta2_pow, moment2_max)
        cdef cnp.ndarray p = dense(param, self.name, "Param")
        cdef cnp.ndarray g = like_param(grad, p, self.name, "Grad")
        cdef cnp.ndarray m1 = like_param(moment1, p, self.name, "Moment1")
        cdef cnp.ndarray m2 = like_param(moment2, p, self.name, "Moment2")
        cdef double lr = scalar(learning_rate, self.name, "LearningRate")
        cdef double b1p = scalar(beta1_pow, self.name, "Beta1Pow")
        cdef double b2p = scalar(beta2_pow, self.name, "Beta2Pow")
        if b1p == 1.0 or not 0.0 <= b2p <= 1.0:
            raise ValueError(f"adam: Beta1Pow ({b1p}) must not be 1 and Beta2Pow ({b2p}) must "
                             f"be in [0, 1]")
        cdef double lr_t = lr * sqrt(1.0 - b2p) / (1.0 - b1p)
        cdef double eps_t = eps * sqrt(1.0 - b2p)
        # adamw: lr * lr_ratio * coeff, in Param's type and order as Paddle multiplies it.
        cdef float decay_f = <float>(<float>lr * <float>self.lr_ratio) * <float>self.coeff
        cdef double decay_d = lr * self.lr_ratio * self.coeff
        cdef cnp.ndarray mx = None, mxo = None
        if self.amsgrad:
            if moment2_max is None:
                raise ValueError(f"{self.name}: amsgrad needs input Moment2Max")
            mx = like_param(moment2_max, p, self.name, "Moment2Max")
        cdef list reads = [p, g, m1, m2, mx]
        cdef cnp.ndarray po = target(p, param, self.inplace_p, reads, 0)
        cdef cnp.ndarray m1o = target(m1, moment1, self.inplace_m1, reads, 2)
        cdef cnp.ndarray m2o = target(m2, moment2, self.inplace_m2, reads, 3)
        if mx is not None:
            mxo = target(mx, moment2_max, self.inplace_mx, reads, 4)
        cdef Py_ssize_t n = cnp.PyArray_SIZE(p)
        if cnp.PyArray_TYPE(p) == cnp.NPY_FLOAT32:
            with nogil:
                _adam(<const float*>cnp.PyArray_DATA(p), <const float*>cnp.PyArray_DATA(g),
                      <const float*>cnp.PyArray_DATA(m1), <const float*>cnp.PyArray_DATA(m2),
                      <float*>cnp.PyArray_DATA(po), <float*>cnp.PyArray_DATA(m1o),
                      <float*>cnp.PyArray_DATA(m2o), n, <float>b1, <float>b2,
                      <float>lr_t, <float>eps_t, self.decays, decay_f,
                      <const float*>cnp.PyArray_DATA(mx) if mx is not None else NULL,
                      <float*>cnp.PyArray_DATA(mxo) if mxo is not None else NULL)
        else:
            with nogil:
                _adam(<const double*>cnp.PyArray_DATA(p), <const double*>cnp.PyArray_DATA(g),
                      <const double*>cnp.PyArray_DATA(m1), <const double*>cnp.PyArray_DATA(m2),
                      <double*>cnp.PyArray_DATA(po), <double*>cnp.PyArray_DATA(m1o),
                      <double*>cnp.PyArray_DATA(m2o), n, b1, b2, lr_t, eps_t,
                      self.decays, decay_d,
                      <const double*>cnp.PyArray_DATA(mx) if mx is not None else NULL,
                      <double*>cnp.PyArray_DATA(mxo) if mxo is not None else NULL)
        if not self.pows_out:
            return (po, m1o, m2o, None, None, mxo, None)
        if self.global_pows:     # advanced elsewhere: the outputs keep the inputs' values
            return (po, m1o, m2o, _kept(beta1_pow, self.inplace_b1),
                    _kept(beta2_pow, self.inplace_b2), mxo, None)
        return (po, m1o, m2o, advanced(beta1_pow, b1, self.inplace_b1),
                advanced(beta2_pow, b2, self.inplace_b2), mxo, None)

    def _unchanged(self, param, moment1, moment2, beta1_pow, beta2_pow, moment2_max):
        """SkipUpdate: every output keeps its input's value."""
        return (_kept(param, self.inplace_p), _kept(moment1, self.inplace_m1),
                _kept(moment2, self.inplace_m2),
                _kept(beta1_pow, self.inplace_b1) if self.pows_out else None,
                _kept(beta2_pow, self.inplace_b2) if self.pows_out else None,
                _kept(moment2_max, self.inplace_mx) if self.amsgrad else None, None)


cdef object _kept(object value, bint inplace):
    """An output that keeps its input's value: the input itself when written in place, else
    a copy (two variables never share one array)."""
    return value if inplace else np.array(value)


cdef bint _skips(object skip, str op) except -1:
    a = np.asarray(skip)
    if a.size != 1 or a.dtype != np.bool_:
        raise ValueError(f"{op}: input 'SkipUpdate' must hold one bool, got {a.dtype.name} of "
                         f"shape {list(a.shape)}")
    return bool(a.reshape(-1)[0])


cdef class AdamW(Adam):
    def __init__(self, dict attrs, info=None):
        Adam.__init__(self, attrs, info)
        self.name = "adamw"
        self.decays = attrs.get("with_decay", False)
        self.lr_ratio, self.coeff = attrs.get("lr_ratio", 1.0), attrs.get("coeff", 0.01)


KERNELS = [("adam", Adam, DTYPES), ("adamw", AdamW, DTYPES)]
