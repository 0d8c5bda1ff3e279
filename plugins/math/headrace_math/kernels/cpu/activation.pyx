# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Unary activations and elementwise math functions (every op of ops/activation.py) and their
grad ops.

One kernel class serves them all: the op's code and its attributes (at most two parameters,
p and q) are fixed when the kernel is made, and ``_run`` switches on the code once, outside
the element loop, so each loop is a straight call of one inline function. Functions are
evaluated in double (float32 inputs included) and rounded once on store, except the hot
exp-based ones on float32 (exp, sigmoid, tanh, silu, swish, gelu): those use the vectorizable
float32 versions of ``headrace/kernels/fastmath.h`` (a few float32 ulp; see there), gelu_grad too.

Numerical care where the textbook formula fails: sigmoid, swish and silu never evaluate
exp(+large); softplus is max(z, 0) + log1p(exp(-|z|)); gelu uses erfc (exact) or the identity
1 + tanh(u) = 2 sigmoid(2u) (approximate) so large negative inputs give tiny values, not 0 or
NaN; elu uses expm1; relu, relu6 and hard_sigmoid keep NaN as NumPy's maximum/minimum do.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport (ceil, cos, erfc, exp, expm1, fabs, floor, isinf, log, log1p, pow,
                        round, sin, sqrt, tanh)
from cpython.object cimport PyObject
from headrace.kernels.common cimport contiguous, dtype_name, real, same_shape, shape_of, typenum
from ._common cimport recycled
from headrace.kernels.fastmath cimport (hr_f32_exp, hr_f32_gelu, hr_f32_gelu_grad,
                                       hr_f32_gelu_tanh, hr_f32_sigmoid, hr_f32_swish,
                                       hr_f32_tanh)
from headrace.kernels.threads cimport ELEMENT_GRAIN, split_at, threads_for

cnp.import_array()

DTYPES = ("float32", "float64")

cdef enum:
    RELU, SIGMOID, TANH, EXP, LOG, SQRT, RSQRT, SQUARE, ABS, RECIPROCAL, LEAKY_RELU, SOFTPLUS,
    GELU, GELU_TANH, RELU6, ELU, HARD_SIGMOID, SWISH, SOFTSIGN, SIN, COS, FLOOR, CEIL, ROUND,
    SILU

# 2**52: doubles this large have no fractional part, so rounding leaves them as they are.
cdef double EXACT_INT = 4503599627370496.0
cdef double SQRT_2_OVER_PI = 0.7978845608028654
cdef double SQRT1_2 = 0.7071067811865476


cdef inline double _sigmoid(double x) noexcept nogil:
    cdef double e
    if x >= 0:
        return 1.0 / (1.0 + exp(-x))
    e = exp(x)      # x < 0: exp(-x) could overflow; e / (1 + e) cannot
    return e / (1.0 + e)


cdef inline double _softplus(double x, double beta, double threshold) noexcept nogil:
    cdef double z = beta * x
    if z > threshold:       # Paddle's linear regime; also what keeps exp from overflowing
        return x
    return ((z if z > 0 else 0.0) + log1p(exp(-fabs(z)))) / beta


cdef inline double _gelu_tanh(double x) noexcept nogil:
    # 0.5 x (1 + tanh(u)) == x sigmoid(2u): no cancellation in 1 + tanh(u) for u << 0.
    return x * _sigmoid(2.0 * SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))


cdef inline double _round(double x, double scale) noexcept nogil:
    """Half away from zero (C's round), at 10**decimals; |x * scale| >= 2**52 (or inf, NaN)
    is already integral at that scale, and dividing an overflowed product back would lose x."""
    cdef double y
    if scale == 1.0:
        return round(x)
    y = x * scale
    if not fabs(y) < EXACT_INT:
        return x
    return round(y) / scale


cdef inline double _clip(double x, double lo, double hi) noexcept nogil:
    """min(max(x, lo), hi), in that order (a threshold below 0 wins, as in Paddle's relu6).
    Comparisons are false for NaN, so NaN passes through."""
    if x < lo:
        x = lo
    if x > hi:
        x = hi
    return x


cdef void _run(int code, const real* x, real* out, Py_ssize_t n, double p,
               double q) noexcept nogil:
    cdef Py_ssize_t i
    cdef double v
    if code == RELU:
        for i in range(n):
            out[i] = 0 if x[i] < 0 else x[i]
    elif code == SIGMOID:
        for i in range(n):
            out[i] = <real>_sigmoid(x[i])
    elif code == TANH:
        for i in range(n):
            out[i] = <real>tanh(x[i])
    elif code == EXP:
        for i in range(n):
            out[i] = <real>exp(x[i])
    elif code == LOG:
        for i in range(n):
            out[i] = <real>log(x[i])
    elif code == SQRT:
        for i in range(n):
            out[i] = <real>sqrt(x[i])
    elif code == RSQRT:
        for i in range(n):
            out[i] = <real>(1.0 / sqrt(x[i]))
    elif code == SQUARE:
        for i in range(n):
            out[i] = <real>(<double>x[i] * x[i])
    elif code == ABS:
        for i in range(n):
            out[i] = <real>fabs(x[i])
    elif code == RECIPROCAL:
        for i in range(n):
            out[i] = <real>(1.0 / x[i])
    elif code == LEAKY_RELU:        # p = alpha
        for i in range(n):
            out[i] = x[i] if x[i] > 0 else <real>(p * x[i])
    elif code == SOFTPLUS:          # p = beta, q = threshold
        for i in range(n):
            out[i] = <real>_softplus(x[i], p, q)
    elif code == GELU:
        for i in range(n):
            out[i] = <real>(0.5 * x[i] * erfc(-SQRT1_2 * x[i]))
    elif code == GELU_TANH:
        for i in range(n):
            out[i] = <real>_gelu_tanh(x[i])
    elif code == RELU6:             # p = threshold
        for i in range(n):
            out[i] = <real>_clip(x[i], 0.0, p)
    elif code == ELU:               # p = alpha
        for i in range(n):
            out[i] = x[i] if x[i] > 0 else <real>(p * expm1(x[i]))
    elif code == HARD_SIGMOID:      # p = slope, q = offset
        for i in range(n):
            out[i] = <real>_clip(p * x[i] + q, 0.0, 1.0)
    elif code == SWISH:             # p = beta
        for i in range(n):
            out[i] = <real>(x[i] * _sigmoid(p * x[i]))
    elif code == SOFTSIGN:
        for i in range(n):
            v = x[i]
            # inf / inf would be NaN; the limit is +-1.
            out[i] = <real>(v / (1.0 + fabs(v)) if not isinf(v) else (1.0 if v > 0 else -1.0))
    elif code == SIN:
        for i in range(n):
            out[i] = <real>sin(x[i])
    elif code == COS:
        for i in range(n):
            out[i] = <real>cos(x[i])
    elif code == FLOOR:
        for i in range(n):
            out[i] = <real>floor(x[i])
    elif code == CEIL:
        for i in range(n):
            out[i] = <real>ceil(x[i])
    elif code == ROUND:             # p = 10**decimals
        for i in range(n):
            out[i] = <real>_round(x[i], p)
    elif code == SILU:
        for i in range(n):
            out[i] = <real>(x[i] * _sigmoid(x[i]))


# float32 fast paths: the loops of the core's fastmath.h, each compiled for several vector widths.

cdef bint _run_f32(int code, const float* x, float* out, Py_ssize_t n,
                   double p) noexcept nogil:
    """Run a float32 fast path; False if the op has none (then _run serves it)."""
    if code == EXP:
        hr_f32_exp(x, out, n)
    elif code == SIGMOID:
        hr_f32_sigmoid(x, out, n)
    elif code == TANH:
        hr_f32_tanh(x, out, n)
    elif code == SILU:
        hr_f32_swish(x, out, n, 1)
    elif code == SWISH:
        hr_f32_swish(x, out, n, <float>p)
    elif code == GELU:
        hr_f32_gelu(x, out, n)
    elif code == GELU_TANH:
        hr_f32_gelu_tanh(x, out, n)
    else:
        return False
    return True


cdef void _values(int code, const real* x, real* out, Py_ssize_t n, double p,
                  double q) noexcept nogil:
    if real is float:
        if _run_f32(code, x, out, n, p):
            return
    _run(code, x, out, n, p, q)


cdef void _forward(int code, const real* x, real* out, Py_ssize_t n, double p,
                   double q) noexcept nogil:
    """The op over n values, split over hr.set_num_threads' threads when there are
    ELEMENT_GRAIN values a thread (each value's result is the serial one)."""
    cdef int t, nt = threads_for(<double>n, ELEMENT_GRAIN)
    cdef Py_ssize_t i0
    if nt <= 1:
        _values(code, x, out, n, p, q)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        i0 = split_at(n, t, nt)
        _values(code, x + i0, out + i0, split_at(n, t + 1, nt) - i0, p, q)


cdef class Activation:
    """Kernel of one activation op: its code and parameters are bound at prepare time."""
    cdef int code
    cdef double p, q
    cdef str name
    cdef object _out       # the last result, reused when nothing else holds it (recycled)

    def __init__(self, int code, str name, double p=0.0, double q=0.0):
        self.code, self.name, self.p, self.q = code, name, p, q

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = typenum(a)
        cdef cnp.ndarray out
        cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
        if t == cnp.NPY_FLOAT32:
            out = self._out = recycled(<PyObject*>self._out, shape_of(a), t)
            with nogil:
                _forward(self.code, <const float*>cnp.PyArray_DATA(a),
                         <float*>cnp.PyArray_DATA(out), n, self.p, self.q)
        elif t == cnp.NPY_FLOAT64:
            out = self._out = recycled(<PyObject*>self._out, shape_of(a), t)
            with nogil:
                _forward(self.code, <const double*>cnp.PyArray_DATA(a),
                         <double*>cnp.PyArray_DATA(out), n, self.p, self.q)
        else:
            raise TypeError(f"{self.name}: X has dtype {dtype_name(a)}, expected float32 or "
                            f"float64")
        return (out,)


def _params(str op, dict attrs):
    """(code, p, q) of an op from its attributes (defaults filled in by the executor)."""
    if op == "leaky_relu":
        return LEAKY_RELU, attrs["alpha"], 0.0
    if op == "softplus":
        if attrs["beta"] == 0:
            raise ValueError("softplus: attribute beta must be nonzero (Out divides by it)")
        return SOFTPLUS, attrs["beta"], attrs["threshold"]
    if op == "gelu":
        return (GELU_TANH if attrs["approximate"] else GELU), 0.0, 0.0
    if op == "relu6":
        return RELU6, attrs["threshold"], 0.0
    if op == "elu":
        return ELU, attrs["alpha"], 0.0
    if op == "hard_sigmoid":
        return HARD_SIGMOID, attrs["slope"], attrs["offset"]
    if op == "swish":
        return SWISH, attrs["beta"], 0.0
    if op == "round":
        return ROUND, pow(10.0, attrs["decimals"]), 0.0
    return _SIMPLE[op], 0.0, 0.0


_SIMPLE = {"relu": RELU, "sigmoid": SIGMOID, "tanh": TANH, "exp": EXP, "log": LOG,
           "sqrt": SQRT, "rsqrt": RSQRT, "square": SQUARE, "abs": ABS,
           "reciprocal": RECIPROCAL, "softsign": SOFTSIGN, "sin": SIN, "cos": COS,
           "floor": FLOOR, "ceil": CEIL, "silu": SILU}


def _maker(str op):
    def make(dict attrs, info=None):
        code, p, q = _params(op, attrs)
        return Activation(code, op, p, q)
    make.__name__ = op
    return make


# -- gradients --------------------------------------------------------------------------------
#
# X@GRAD = Out@GRAD * f'(...), from Out or X as ops/activation.py's GRAD_USES says; ``v`` below
# is whichever of them the grad op reads. Evaluated in double, rounded once on store; relu's
# (the hot one) is a select in the input's type.

cdef double SQRT_1_2PI = 0.3989422804014327     # 1 / sqrt(2 pi)


cdef inline double _dgelu(double x) noexcept nogil:
    """d/dx [x Phi(x)] = Phi(x) + x phi(x)."""
    return 0.5 * erfc(-SQRT1_2 * x) + x * SQRT_1_2PI * exp(-0.5 * x * x)


cdef inline double _dgelu_tanh(double x) noexcept nogil:
    """d/dx [x s(2u)] with u = sqrt(2/pi) (x + 0.044715 x**3) and s the sigmoid: s + 2 x s
    (1 - s) u'; the same as the textbook 0.5 (1 + tanh u) + 0.5 x (1 - tanh**2 u) u'."""
    cdef double s = _sigmoid(2.0 * SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
    return s + 2.0 * x * s * (1.0 - s) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x)


cdef inline double _dswish(double x, double beta) noexcept nogil:
    cdef double s = _sigmoid(beta * x)
    return s + beta * x * s * (1.0 - s)


cdef void _relu_grad(const real* v, const real* d, real* out, Py_ssize_t n) noexcept nogil:
    """The hot one, on its own so that it compiles to a vector select: both values are loaded
    unconditionally (a load in one arm only is not if-converted: it might fault)."""
    cdef Py_ssize_t i
    cdef real g
    for i in range(n):
        g = d[i]
        out[i] = g if v[i] > 0 else 0


cdef void _run_grad(int code, const real* v, const real* d, real* out, Py_ssize_t n, double p,
                    double q) noexcept nogil:
    cdef Py_ssize_t i
    cdef double u
    if code == RELU:                # v = Out
        _relu_grad(v, d, out, n)
    elif code == SIGMOID:           # v = Out
        for i in range(n):
            out[i] = <real>(<double>d[i] * v[i] * (1.0 - v[i]))
    elif code == TANH:              # v = Out
        for i in range(n):
            out[i] = <real>(<double>d[i] * (1.0 - <double>v[i] * v[i]))
    elif code == EXP:               # v = Out
        for i in range(n):
            out[i] = <real>(<double>d[i] * v[i])
    elif code == LOG:               # v = X
        for i in range(n):
            out[i] = <real>(<double>d[i] / v[i])
    elif code == SQRT:              # v = Out
        for i in range(n):
            out[i] = <real>(0.5 * d[i] / v[i])
    elif code == RSQRT:             # v = Out
        for i in range(n):
            u = v[i]
            out[i] = <real>(-0.5 * d[i] * u * u * u)
    elif code == SQUARE:            # v = X
        for i in range(n):
            out[i] = <real>(2.0 * v[i] * d[i])
    elif code == ABS:               # v = X
        for i in range(n):
            u = d[i]
            out[i] = <real>(u if v[i] > 0 else (-u if v[i] < 0 else 0))
    elif code == RECIPROCAL:        # v = Out
        for i in range(n):
            out[i] = <real>(-<double>d[i] * v[i] * v[i])
    elif code == LEAKY_RELU:        # v = X, p = alpha
        for i in range(n):
            out[i] = d[i] if v[i] > 0 else <real>(p * d[i])
    elif code == SOFTPLUS:          # v = X, p = beta, q = threshold
        for i in range(n):
            u = p * v[i]
            out[i] = d[i] if u > q else <real>(d[i] * _sigmoid(u))
    elif code == GELU:              # v = X
        for i in range(n):
            out[i] = <real>(d[i] * _dgelu(v[i]))
    elif code == GELU_TANH:         # v = X
        for i in range(n):
            out[i] = <real>(d[i] * _dgelu_tanh(v[i]))
    elif code == RELU6:             # v = Out, p = threshold
        for i in range(n):
            u = d[i]
            out[i] = <real>(u if (v[i] > 0) & (v[i] < p) else 0)
    elif code == ELU:               # v = X, p = alpha
        for i in range(n):
            out[i] = d[i] if v[i] > 0 else <real>(p * d[i] * exp(v[i]))
    elif code == HARD_SIGMOID:      # v = Out, p = slope
        for i in range(n):
            u = p * d[i]
            out[i] = <real>(u if (v[i] > 0) & (v[i] < 1) else 0)
    elif code == SWISH:             # v = X, p = beta
        for i in range(n):
            out[i] = <real>(d[i] * _dswish(v[i], p))
    elif code == SOFTSIGN:          # v = X
        for i in range(n):
            u = 1.0 + fabs(v[i])
            out[i] = <real>(d[i] / (u * u))
    elif code == SIN:               # v = X
        for i in range(n):
            out[i] = <real>(d[i] * cos(v[i]))
    elif code == COS:               # v = X
        for i in range(n):
            out[i] = <real>(-d[i] * sin(v[i]))
    elif code == SILU:              # v = X
        for i in range(n):
            out[i] = <real>(d[i] * _dswish(v[i], 1.0))
    else:                           # FLOOR, CEIL, ROUND: flat almost everywhere
        for i in range(n):
            out[i] = 0


cdef void _grad_values(int code, const real* v, const real* d, real* out, Py_ssize_t n,
                       double p, double q) noexcept nogil:
    if real is float:
        if code == GELU:
            # libm's double erfc and exp (the generic path) are scalar calls: this was the
            # slowest op of a transformer's feed-forward.
            hr_f32_gelu_grad(v, d, out, n)
            return
    _run_grad(code, v, d, out, n, p, q)


cdef void _backward(int code, const real* v, const real* d, real* out, Py_ssize_t n,
                    double p, double q) noexcept nogil:
    """The gradient over n values, split over the threads as _forward."""
    cdef int t, nt = threads_for(<double>n, ELEMENT_GRAIN)
    cdef Py_ssize_t i0
    if nt <= 1:
        _grad_values(code, v, d, out, n, p, q)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        i0 = split_at(n, t, nt)
        _grad_values(code, v + i0, d + i0, out + i0, split_at(n, t + 1, nt) - i0, p, q)


cdef class ActivationGrad:
    """<op>_grad: (X or Out, Out@GRAD) -> (X@GRAD,), or (Out@GRAD,) -> (zeros,) for floor,
    ceil and round."""
    cdef int code
    cdef double p, q
    cdef str name
    cdef bint reads
    cdef object _out

    def __init__(self, int code, str name, double p=0.0, double q=0.0):
        self.code, self.name, self.p, self.q = code, name, p, q
        self.reads = code != FLOOR and code != CEIL and code != ROUND

    def __call__(self, v, d=None):
        if not self.reads:
            if d is not None:
                raise ValueError(f"{self.name}: takes Out@GRAD only")
            d, v = v, None
        elif d is None:
            raise ValueError(f"{self.name}: takes the forward input or output and Out@GRAD")
        cdef cnp.ndarray g = contiguous(d)
        cdef cnp.ndarray a = contiguous(v) if v is not None else g
        cdef int t = typenum(g)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"{self.name}: Out@GRAD has dtype {dtype_name(g)}, expected "
                            f"float32 or float64")
        if typenum(a) != t:
            raise TypeError(f"{self.name}: Out@GRAD is {dtype_name(g)} but the forward value "
                            f"is {dtype_name(a)}")
        if not same_shape(a, g):
            raise ValueError(f"{self.name}: Out@GRAD has shape {list(shape_of(g))} but the "
                             f"forward value has {list(shape_of(a))}")
        cdef cnp.ndarray out = recycled(<PyObject*>self._out, shape_of(g), t)
        self._out = out
        cdef Py_ssize_t n = cnp.PyArray_SIZE(g)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _backward(self.code, <const float*>cnp.PyArray_DATA(a),
                          <const float*>cnp.PyArray_DATA(g), <float*>cnp.PyArray_DATA(out), n,
                          self.p, self.q)
        else:
            with nogil:
                _backward(self.code, <const double*>cnp.PyArray_DATA(a),
                          <const double*>cnp.PyArray_DATA(g), <double*>cnp.PyArray_DATA(out),
                          n, self.p, self.q)
        return (out,)


def _grad_maker(str op):
    def make(dict attrs, info=None):
        code, p, q = _params(op, attrs)
        return ActivationGrad(code, op + "_grad", p, q)
    make.__name__ = op + "_grad"
    return make


OPS = tuple(_SIMPLE) + ("leaky_relu", "softplus", "gelu", "relu6", "elu", "hard_sigmoid",
                        "swish", "round")
KERNELS = ([(op, _maker(op), DTYPES) for op in OPS] +
           [(op + "_grad", _grad_maker(op), DTYPES) for op in OPS])
