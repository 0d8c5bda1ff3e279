"""Unary activations and elementwise math functions (every op of ops/activation.py) and their
grad ops on CUDA: one thread per element.

One kernel template serves them all: the op's formula is a device function compiled into its
own specialization of the template (one per op type, made on first use), and its attributes
(at most two parameters, p and q, as the CPU kernel's ``_params``) are kernel arguments, so one
compiled kernel serves every attribute value. Values are evaluated in double (float32 inputs
included) and rounded once on store, as the CPU kernel's generic path; its float32 fast paths
(exp, sigmoid, tanh, silu, swish, gelu) are within a few float32 ulp of that.

The same numerical care as the CPU kernel: sigmoid, swish and silu never evaluate exp(+large);
softplus is max(z, 0) + log1p(exp(-|z|)); gelu uses erfc (exact) or 1 + tanh(u) = 2 sigmoid(2u)
(approximate); elu uses expm1; relu, relu6 and hard_sigmoid keep NaN; floor, ceil and round go
through integers only below 2**52 (larger doubles are integral) and keep the sign of zero.

A grad op reads Out or X (ops/activation.py's GRAD_USES) and Out@GRAD; floor, ceil and round's
read Out@GRAD only and are a zero fill. Nothing is copied between host and device.
"""
import math

import numpy as np
from numba import cuda, float64

from headrace.kernels.cuda_launch import device_fill, empty_like, flat, float_input, launch
from headrace.kernels.cuda_math import sigmoid as _sigmoid

DTYPES = ("float32", "float64")

# 2**52: doubles this large have no fractional part.
EXACT_INT = 4503599627370496.0
SQRT_2_OVER_PI = 0.7978845608028654
SQRT1_2 = 0.7071067811865476
SQRT_1_2PI = 0.3989422804014327     # 1 / sqrt(2 pi)
MAX_LOG = 709.782712893384          # log of the largest double


# -- shared device helpers --------------------------------------------------------------------

@cuda.jit(device=True)
def _clip(v, lo, hi):
    # min(max(v, lo), hi) in that order; comparisons are false for NaN, so NaN passes.
    if v < lo:
        v = lo
    if v > hi:
        v = hi
    return v


@cuda.jit(device=True)
def _integral(v, r):
    # r: floor/ceil/trunc of v as an integer (exact below 2**52); C's result has v's sign,
    # zeros included (ceil(-0.5) is -0.0).
    return math.copysign(float64(r), v)


@cuda.jit(device=True)
def _round_half_away(y):
    # C's round for |y| < 2**52: y - trunc(y) is exact, so the half-way test is too.
    t = float64(math.trunc(y))
    if abs(y - t) >= 0.5:
        t += math.copysign(1.0, y)
    return math.copysign(t, y)


@cuda.jit(device=True)
def _dswish(v, beta):
    s = _sigmoid(beta * v)
    return s + beta * v * s * (1.0 - s)


# -- forward formulas: f(v, p, q) with v = X in double ----------------------------------------

def _relu(v, p, q):
    return 0.0 if v < 0 else v


def _sigmoid_f(v, p, q):
    return _sigmoid(v)


def _tanh(v, p, q):
    return math.tanh(v)


def _exp(v, p, q):
    # inf past double's range, as C's exp (Python's raises OverflowError: the simulator).
    return math.inf if v > MAX_LOG else math.exp(v)     # NaN included


def _log(v, p, q):
    # log(0) = -inf and log(<0) = NaN as C's, not Python's ValueError (the simulator).
    if v > 0:
        return math.log(v)
    if v == 0:
        return -math.inf
    return math.nan


def _sqrt(v, p, q):
    return math.sqrt(v) if v >= 0 else math.nan


def _rsqrt(v, p, q):
    if v > 0:
        return 1.0 / math.sqrt(v)
    if v == 0:
        return math.copysign(math.inf, v)     # 1 / sqrt(-0.0) = 1 / -0.0
    return math.nan


def _square(v, p, q):
    return v * v


def _abs(v, p, q):
    return abs(v)


def _reciprocal(v, p, q):
    if v == 0:
        return math.copysign(math.inf, v)     # C's 1 / +-0.0
    return 1.0 / v


def _leaky_relu(v, p, q):          # p = alpha
    return v if v > 0 else p * v


def _softplus(v, p, q):            # p = beta, q = threshold
    z = p * v
    if z > q:          # Paddle's linear regime; also what keeps exp from overflowing
        return v
    return ((z if z > 0 else 0.0) + math.log1p(math.exp(-abs(z)))) / p


def _gelu(v, p, q):
    return 0.5 * v * math.erfc(-SQRT1_2 * v)


def _gelu_tanh(v, p, q):
    # 0.5 x (1 + tanh(u)) == x sigmoid(2u): no cancellation in 1 + tanh(u) for u << 0.
    return v * _sigmoid(2.0 * SQRT_2_OVER_PI * (v + 0.044715 * v * v * v))


def _relu6(v, p, q):               # p = threshold
    return _clip(v, 0.0, p)


def _elu(v, p, q):                 # p = alpha
    return v if v > 0 else p * math.expm1(v)


def _hard_sigmoid(v, p, q):        # p = slope, q = offset
    return _clip(p * v + q, 0.0, 1.0)


def _swish(v, p, q):               # p = beta
    return v * _sigmoid(p * v)


def _softsign(v, p, q):
    if math.isinf(v):              # inf / inf would be NaN; the limit is +-1
        return 1.0 if v > 0 else -1.0
    return v / (1.0 + abs(v))


def _sin(v, p, q):
    return math.sin(v) if not math.isinf(v) else math.nan


def _cos(v, p, q):
    return math.cos(v) if not math.isinf(v) else math.nan


def _floor(v, p, q):
    if not abs(v) < EXACT_INT:     # integral already, or inf / NaN
        return v
    return _integral(v, math.floor(v))


def _ceil(v, p, q):
    if not abs(v) < EXACT_INT:
        return v
    return _integral(v, math.ceil(v))


def _round(v, p, q):               # p = 10**decimals
    # Half away from zero at 10**decimals; |v * p| >= 2**52 (or inf, NaN) is already integral
    # at that scale, and dividing an overflowed product back would lose v.
    y = v * p
    if not abs(y) < EXACT_INT:
        return v
    r = _round_half_away(y)
    return r if p == 1.0 else r / p


def _silu(v, p, q):
    return v * _sigmoid(v)


# -- gradients: g(v, d, p, q), v = Out or X as GRAD_USES says, d = Out@GRAD, in double -----------

def _relu_grad(v, d, p, q):        # v = Out
    return d if v > 0 else 0.0


def _sigmoid_grad(v, d, p, q):     # v = Out
    return d * v * (1.0 - v)


def _tanh_grad(v, d, p, q):        # v = Out
    return d * (1.0 - v * v)


def _exp_grad(v, d, p, q):         # v = Out
    return d * v


def _log_grad(v, d, p, q):         # v = X
    if v == 0:
        return d * math.copysign(math.inf, v) if d != 0 else math.nan
    return d / v


def _sqrt_grad(v, d, p, q):        # v = Out
    if v == 0:     # C's d / +-0.0 (Python's raises: the simulator)
        return 0.5 * d * math.copysign(math.inf, v) if d != 0 else math.nan
    return 0.5 * d / v


def _rsqrt_grad(v, d, p, q):       # v = Out
    return -0.5 * d * v * v * v


def _square_grad(v, d, p, q):      # v = X
    return 2.0 * v * d


def _abs_grad(v, d, p, q):         # v = X
    return d if v > 0 else (-d if v < 0 else 0.0)


def _reciprocal_grad(v, d, p, q):  # v = Out
    return -d * v * v


def _leaky_relu_grad(v, d, p, q):  # v = X, p = alpha
    return d if v > 0 else p * d


def _softplus_grad(v, d, p, q):    # v = X, p = beta, q = threshold
    u = p * v
    return d if u > q else d * _sigmoid(u)


def _gelu_grad(v, d, p, q):        # v = X: d/dx [x Phi(x)] = Phi(x) + x phi(x)
    return d * (0.5 * math.erfc(-SQRT1_2 * v) + v * SQRT_1_2PI * math.exp(-0.5 * v * v))


def _gelu_tanh_grad(v, d, p, q):   # v = X: d/dx [x s(2u)] = s + 2 x s (1 - s) u'
    s = _sigmoid(2.0 * SQRT_2_OVER_PI * (v + 0.044715 * v * v * v))
    return d * (s + 2.0 * v * s * (1.0 - s) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * v * v))


def _relu6_grad(v, d, p, q):       # v = Out, p = threshold
    return d if v > 0 and v < p else 0.0


def _elu_grad(v, d, p, q):         # v = X, p = alpha
    return d if v > 0 else p * d * math.exp(v)


def _hard_sigmoid_grad(v, d, p, q):   # v = Out, p = slope
    u = p * d
    return u if v > 0 and v < 1 else 0.0


def _swish_grad(v, d, p, q):       # v = X, p = beta
    return d * _dswish(v, p)


def _softsign_grad(v, d, p, q):    # v = X
    u = 1.0 + abs(v)
    return d / (u * u)


def _sin_grad(v, d, p, q):         # v = X
    return d * (math.cos(v) if not math.isinf(v) else math.nan)


def _cos_grad(v, d, p, q):         # v = X
    return -d * (math.sin(v) if not math.isinf(v) else math.nan)


def _silu_grad(v, d, p, q):        # v = X
    return d * _dswish(v, 1.0)


# op type -> (forward, gradient or None for the zero gradient of floor/ceil/round); gelu's
# approximate mode picks the *_tanh pair in the maker.
_FORMULAS = {
    "relu": (_relu, _relu_grad), "sigmoid": (_sigmoid_f, _sigmoid_grad),
    "tanh": (_tanh, _tanh_grad), "exp": (_exp, _exp_grad), "log": (_log, _log_grad),
    "sqrt": (_sqrt, _sqrt_grad), "rsqrt": (_rsqrt, _rsqrt_grad),
    "square": (_square, _square_grad), "abs": (_abs, _abs_grad),
    "reciprocal": (_reciprocal, _reciprocal_grad),
    "leaky_relu": (_leaky_relu, _leaky_relu_grad), "softplus": (_softplus, _softplus_grad),
    "gelu": (_gelu, _gelu_grad), "gelu_tanh": (_gelu_tanh, _gelu_tanh_grad),
    "relu6": (_relu6, _relu6_grad), "elu": (_elu, _elu_grad),
    "hard_sigmoid": (_hard_sigmoid, _hard_sigmoid_grad), "swish": (_swish, _swish_grad),
    "softsign": (_softsign, _softsign_grad), "sin": (_sin, _sin_grad),
    "cos": (_cos, _cos_grad), "floor": (_floor, None), "ceil": (_ceil, None),
    "round": (_round, None), "silu": (_silu, _silu_grad),
}
OPS = tuple(t for t in _FORMULAS if t != "gelu_tanh")


# -- the two templates ------------------------------------------------------------------------

def _forward_template(fn):
    fn = cuda.jit(device=True)(fn)

    @cuda.jit
    def k(x, out, p, q):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = fn(float64(x[i]), p, q)
    return k


def _grad_template(fn):
    fn = cuda.jit(device=True)(fn)

    @cuda.jit
    def k(v, d, out, p, q):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = fn(float64(v[i]), float64(d[i]), p, q)
    return k


_COMPILED = {}


def _compiled(key, grad):
    k = _COMPILED.get((key, grad))
    if k is None:
        fwd, g = _FORMULAS[key]
        k = _COMPILED[(key, grad)] = _grad_template(g) if grad else _forward_template(fwd)
    return k


def _params(op, attrs):
    """(formula key, p, q) of an op from its attributes, as the CPU kernel's _params."""
    if op == "leaky_relu":
        return op, float(attrs["alpha"]), 0.0
    if op == "softplus":
        if attrs["beta"] == 0:
            raise ValueError("softplus: attribute beta must be nonzero (Out divides by it)")
        return op, float(attrs["beta"]), float(attrs["threshold"])
    if op == "gelu":
        return ("gelu_tanh" if attrs["approximate"] else "gelu"), 0.0, 0.0
    if op == "relu6":
        return op, float(attrs["threshold"]), 0.0
    if op == "elu":
        return op, float(attrs["alpha"]), 0.0
    if op == "hard_sigmoid":
        return op, float(attrs["slope"]), float(attrs["offset"])
    if op == "swish":
        return op, float(attrs["beta"]), 0.0
    if op == "round":
        return op, math.pow(10.0, attrs["decimals"]), 0.0
    return op, 0.0, 0.0


class Activation:
    """Kernel of one activation op: its formula and parameters bound when it is made."""

    def __init__(self, op, attrs, info=None):
        self.name = op
        key, self.p, self.q = _params(op, attrs)
        self._k = _compiled(key, False)

    def __call__(self, x):
        float_input(x, self.name, "X")
        out = empty_like(x)
        launch(self._k, out.size, flat(x), flat(out), self.p, self.q)
        return (out,)


class ActivationGrad:
    """<op>_grad: (X or Out, Out@GRAD) -> (X@GRAD,), or (Out@GRAD,) -> (zeros,) for floor,
    ceil and round."""

    def __init__(self, op, attrs, info=None):
        self.name = op + "_grad"
        key, self.p, self.q = _params(op, attrs)
        self.reads = _FORMULAS[key][1] is not None
        self._k = _compiled(key, True) if self.reads else None

    def __call__(self, v, d=None):
        name = self.name
        if not self.reads:
            if d is not None:
                raise ValueError(f"{name}: takes Out@GRAD only")
            d, v = v, None
        elif d is None:
            raise ValueError(f"{name}: takes the forward input or output and Out@GRAD")
        if str(d.dtype) not in DTYPES:
            raise TypeError(f"{name}: Out@GRAD has dtype {d.dtype}, expected float32 or "
                            f"float64")
        if v is not None and v.dtype != d.dtype:
            raise TypeError(f"{name}: Out@GRAD is {d.dtype} but the forward value is "
                            f"{v.dtype}")
        if v is not None and tuple(v.shape) != tuple(d.shape):
            raise ValueError(f"{name}: Out@GRAD has shape {list(d.shape)} but the forward "
                             f"value has {list(v.shape)}")
        out = empty_like(d)
        if not self.reads:
            return (device_fill(out, np.dtype(d.dtype).type(0)),)
        launch(self._k, out.size, flat(v), flat(d), flat(out), self.p, self.q)
        return (out,)


def _maker(op, cls):
    def make(attrs, info=None):
        return cls(op, attrs, info)
    make.__name__ = make.__qualname__ = op + ("_grad" if cls is ActivationGrad else "")
    return make


KERNELS = ([(op, _maker(op, Activation), DTYPES) for op in OPS] +
           [(op + "_grad", _maker(op, ActivationGrad), DTYPES) for op in OPS])
