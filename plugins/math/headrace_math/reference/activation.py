"""References of the activations: textbook formulas in float64 NumPy, written so that they
neither overflow nor lose the tails (sigmoid through exp(-|x|), softplus through log1p,
gelu through erfc), then rounded once to the input dtype."""
import numpy as np
from scipy.special import erfc

from ._util import f64, fattr, like


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softplus(x, beta, threshold):
    z = beta * x
    return np.where(z > threshold, x, (np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))) / beta)


def _gelu(x, approximate):
    if approximate:
        # 0.5 x (1 + tanh(u)), written as x sigmoid(2u): 1 + tanh(u) cancels for u << 0.
        return x * _sigmoid(2.0 * np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3))
    return 0.5 * x * erfc(-x / np.sqrt(2.0))


def _round(x, decimals):
    """Half away from zero at 10**decimals; values already integral at that scale (|x*s| >=
    2**52, inf, NaN) are kept."""
    scale = np.float64(10.0) ** decimals
    y = x * scale
    r = np.trunc(y)
    r = r + np.where(np.abs(y - r) >= 0.5, np.sign(y), 0.0)
    exact = ~(np.abs(y) < 2.0 ** 52)
    return np.where(exact, x, r / scale if decimals else r)


# The ops' attributes and their defaults (Paddle's).
DEFAULTS = {
    "leaky_relu": {"alpha": 0.02}, "softplus": {"beta": 1.0, "threshold": 20.0},
    "gelu": {"approximate": False}, "relu6": {"threshold": 6.0}, "elu": {"alpha": 1.0},
    "hard_sigmoid": {"slope": 0.2, "offset": 0.5}, "swish": {"beta": 1.0},
    "round": {"decimals": 0},
}

# op type -> f(x in float64, **attributes).
FUNCS = {
    "relu": lambda x: np.maximum(x, 0.0),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "square": lambda x: x * x,
    "abs": np.abs,
    "reciprocal": lambda x: 1.0 / x,
    "leaky_relu": lambda x, alpha: np.where(x > 0, x, alpha * x),
    "softplus": _softplus,
    "gelu": _gelu,
    "relu6": lambda x, threshold: np.minimum(np.maximum(x, 0.0), threshold),
    "elu": lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0))),
    "hard_sigmoid": lambda x, slope, offset: np.clip(slope * x + offset, 0.0, 1.0),
    "swish": lambda x, beta: x * _sigmoid(beta * x),
    "softsign": lambda x: np.where(np.isinf(x), np.sign(x), x / (1.0 + np.abs(x))),
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round,
    "silu": lambda x: x * _sigmoid(x),
}


def _reference(op, fn):
    defaults = DEFAULTS.get(op, {})

    def reference(inputs, attrs):
        x = inputs["X"]
        # "float" attributes arrive rounded to float32 (see fattr); bools and ints as given.
        kw = {k: fattr(attrs, k, d) if isinstance(d, float) else attrs.get(k, d)
              for k, d in defaults.items()}
        with np.errstate(all="ignore"):
            return {"Out": like(fn(f64(x), **kw), x)}
    return reference


REFERENCES = {op: _reference(op, fn) for op, fn in FUNCS.items()}

# Attributes the samples use (non-default where the op has any).
SAMPLE_ATTRS = {
    "leaky_relu": {"alpha": 0.1}, "softplus": {"beta": 2.0, "threshold": 5.0},
    "gelu": {"approximate": False}, "relu6": {"threshold": 1.5}, "elu": {"alpha": 0.5},
    "hard_sigmoid": {"slope": 0.25, "offset": 0.4}, "swish": {"beta": 1.5},
    "round": {"decimals": 1},
}
# Ops defined only on part of the line: sampled where they are finite.
POSITIVE = {"log", "sqrt", "rsqrt"}


def _sampler(op):
    def sample(rng, dtype):
        x = rng.standard_normal((3, 5)) * 3
        if op in POSITIVE:
            x = np.abs(x) + 0.1
        elif op == "reciprocal":
            x = np.where(np.abs(x) < 0.1, 0.5, x)
        return {"X": x.astype(dtype)}, dict(SAMPLE_ATTRS.get(op, {}))
    return sample


SAMPLES = {op: _sampler(op) for op in FUNCS}


# -- gradients --------------------------------------------------------------------------------
#
# X@GRAD from what each grad op reads (ops/activation.py GRAD_USES: "X", "Out" or None), by the
# textbook derivatives in float64: f(v, d, **attributes) with v the read value, d = Out@GRAD.

def _dsigmoid_at(z):
    s = _sigmoid(z)
    return s * (1.0 - s)


def _dgelu(x, d, approximate):
    if approximate:
        c = np.sqrt(2.0 / np.pi)
        t = np.tanh(c * (x + 0.044715 * x ** 3))
        return d * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x))
    return d * (0.5 * erfc(-x / np.sqrt(2.0)) + x * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi))


GRAD_FUNCS = {
    "relu": lambda out, d: np.where(out > 0, d, 0.0),
    "sigmoid": lambda out, d: d * out * (1.0 - out),
    "tanh": lambda out, d: d * (1.0 - out * out),
    "exp": lambda out, d: d * out,
    "sqrt": lambda out, d: d * 0.5 / out,
    "rsqrt": lambda out, d: -0.5 * d * out ** 3,
    "reciprocal": lambda out, d: -d * out * out,
    "relu6": lambda out, d, threshold: np.where((out > 0) & (out < threshold), d, 0.0),
    "hard_sigmoid": lambda out, d, slope, offset: np.where((out > 0) & (out < 1), slope * d, 0.0),
    "log": lambda x, d: d / x,
    "square": lambda x, d: 2.0 * x * d,
    "abs": lambda x, d: np.where(x > 0, d, np.where(x < 0, -d, 0.0)),
    "leaky_relu": lambda x, d, alpha: np.where(x > 0, d, alpha * d),
    "softplus": lambda x, d, beta, threshold: np.where(beta * x > threshold, d,
                                                       d * _sigmoid(beta * x)),
    "gelu": _dgelu,
    "elu": lambda x, d, alpha: np.where(x > 0, d, d * alpha * np.exp(np.minimum(x, 0.0))),
    "swish": lambda x, d, beta: d * (_sigmoid(beta * x) + beta * x * _dsigmoid_at(beta * x)),
    "softsign": lambda x, d: d / (1.0 + np.abs(x)) ** 2,
    "sin": lambda x, d: d * np.cos(x),
    "cos": lambda x, d: -d * np.sin(x),
    "silu": lambda x, d: d * (_sigmoid(x) + x * _dsigmoid_at(x)),
    "floor": lambda d: np.zeros_like(d),
    "ceil": lambda d: np.zeros_like(d),
    "round": lambda d, decimals: np.zeros_like(d),
}


def _grad_reference(op, fn):
    from ..ops.activation import GRAD_USES
    reads = GRAD_USES[op]
    defaults = DEFAULTS.get(op, {})

    def reference(inputs, attrs):
        d = inputs["Out@GRAD"]
        kw = {k: fattr(attrs, k, v) if isinstance(v, float) else attrs.get(k, v)
              for k, v in defaults.items()}
        args = (f64(d),) if reads is None else (f64(inputs[reads]), f64(d))
        with np.errstate(all="ignore"):
            return {"X@GRAD": like(fn(*args, **kw), d)}
    return reference


def _grad_sampler(op):
    from ..ops.activation import GRAD_USES
    forward = SAMPLES[op]

    def sample(rng, dtype):
        inputs, attrs = forward(rng, dtype)
        x = inputs["X"]
        reads = GRAD_USES[op]
        out = {"Out@GRAD": rng.standard_normal(x.shape).astype(dtype)}
        if reads == "X":
            out["X"] = x
        elif reads == "Out":
            out["Out"] = REFERENCES[op]({"X": x}, attrs)["Out"]
        return out, attrs
    return sample


REFERENCES.update({op + "_grad": _grad_reference(op, fn) for op, fn in GRAD_FUNCS.items()})
SAMPLES.update({op + "_grad": _grad_sampler(op) for op in GRAD_FUNCS})
