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
