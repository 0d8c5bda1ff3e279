"""Unary activations and elementwise math functions: Out has X's shape, dtype and LoD.

One factory makes them all from a table of (type, formula, attributes). Attribute names and
defaults are Paddle's, so saved programs carry exactly these.

floor, ceil and round stay ``differentiable=True``: their derivative is zero almost everywhere,
and Paddle registers grad ops that write zeros. Marking them non-differentiable would instead cut
the gradient path, so the parameters upstream would get no gradient at all rather than a zero
one, and optimizers with state (momentum, Adam) would then update differently from Paddle.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import same_as

from ._common import FLOATS


def _nonzero(value):
    return None if value != 0 else "must be nonzero (Out divides by it)"


# (type, what Out holds, attributes)
ACTIVATIONS = [
    ("relu", "max(X, 0)", []),
    ("sigmoid", "1 / (1 + exp(-X))", []),
    ("tanh", "tanh(X)", []),
    ("exp", "exp(X)", []),
    ("log", "ln(X)", []),
    ("sqrt", "sqrt(X)", []),
    ("rsqrt", "1 / sqrt(X)", []),
    ("square", "X * X", []),
    ("abs", "|X|", []),
    ("reciprocal", "1 / X", []),
    ("leaky_relu", "X if X > 0 else alpha * X",
     [("alpha", 0.02, "slope for negative X")]),
    ("softplus", "log(1 + exp(beta * X)) / beta, or X where beta * X > threshold",
     [("beta", 1.0, "sharpness", _nonzero),
      ("threshold", 20.0, "above beta * X > threshold the op is linear (avoids overflow)")]),
    ("gelu", "X * Phi(X) (Phi: the standard normal CDF; the tanh approximation if approximate)",
     [("approximate", False, "use 0.5 X (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3)))")]),
    ("relu6", "min(max(X, 0), threshold)",
     [("threshold", 6.0, "upper clip")]),
    ("elu", "X if X > 0 else alpha * (exp(X) - 1)",
     [("alpha", 1.0, "scale of the negative part")]),
    ("hard_sigmoid", "min(max(slope * X + offset, 0), 1)",
     [("slope", 0.2, "slope of the linear part"), ("offset", 0.5, "its value at X = 0")]),
    ("swish", "X * sigmoid(beta * X)",
     [("beta", 1.0, "sharpness")]),
    ("softsign", "X / (1 + |X|)", []),
    ("sin", "sin(X)", []),
    ("cos", "cos(X)", []),
    ("floor", "floor(X) (gradient: zeros, as in Paddle)", []),
    ("ceil", "ceil(X) (gradient: zeros, as in Paddle)", []),
    ("round", "X rounded half away from zero (gradient: zeros, as in Paddle)",
     [("decimals", 0, "decimal places to keep (Paddle 3; 0 in older programs)")]),
    ("silu", "X * sigmoid(X)", []),
]

_PY_TYPES = {bool: "bool", int: "int", float: "float"}


def _attr(spec):
    name, default, doc, *check = spec
    return Attr(name, _PY_TYPES[type(default)], default, doc, check=check[0] if check else None)


def make_activation(op_type, formula, attr_specs=()):
    """The OpDef of a unary float op ``Out = formula(X)`` with attributes
    ``(name, default, doc[, check])``; the attribute type follows the default's Python type."""
    return OpDef(
        op_type,
        inputs=[In("X", "input tensor", dtypes=FLOATS)],
        outputs=[Out("Out", "same shape, dtype and LoD as X")],
        attrs=[_attr(s) for s in attr_specs],
        infer=same_as("X"),
        doc=f"Out = {formula}, elementwise; Out has X's shape, dtype and LoD.",
    )


OPS = [make_activation(*row) for row in ACTIVATIONS]
