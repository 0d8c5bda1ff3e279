"""Unary activations and elementwise math functions: Out has X's shape, dtype and LoD.

One factory makes them all from a table of (type, formula, attributes). Attribute names and
defaults are Paddle's, so saved programs carry exactly these.

floor, ceil and round stay ``differentiable=True``: their derivative is zero almost everywhere,
and Paddle registers grad ops that write zeros. Marking them non-differentiable would instead cut
the gradient path, so the parameters upstream would get no gradient at all rather than a zero
one, and optimizers with state (momentum, Adam) would then update differently from Paddle.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq, same_as

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


# What each grad op reads besides Out@GRAD (Paddle's choices): Out where the derivative is a
# function of the result, X otherwise; nothing for floor/ceil/round, whose X@GRAD is zeros
# shaped like Out@GRAD.
GRAD_USES = {
    "relu": "Out", "sigmoid": "Out", "tanh": "Out", "exp": "Out", "sqrt": "Out",
    "rsqrt": "Out", "reciprocal": "Out", "relu6": "Out", "hard_sigmoid": "Out",
    "log": "X", "square": "X", "abs": "X", "leaky_relu": "X", "softplus": "X", "gelu": "X",
    "elu": "X", "swish": "X", "softsign": "X", "sin": "X", "cos": "X", "silu": "X",
    "floor": None, "ceil": None, "round": None,
}

# op type -> X@GRAD, in terms of what the grad op reads (dOut = Out@GRAD).
GRAD_FORMULAS = {
    "relu": "dOut where Out > 0, else 0",
    "sigmoid": "dOut * Out * (1 - Out)",
    "tanh": "dOut * (1 - Out**2)",
    "exp": "dOut * Out",
    "sqrt": "dOut * 0.5 / Out",
    "rsqrt": "-0.5 * dOut * Out**3",
    "reciprocal": "-dOut * Out**2",
    "relu6": "dOut where 0 < Out < threshold, else 0",
    "hard_sigmoid": "dOut * slope where 0 < Out < 1, else 0",
    "log": "dOut / X",
    "square": "2 * X * dOut",
    "abs": "dOut * sign(X) (0 at X = 0)",
    "leaky_relu": "dOut where X > 0, else alpha * dOut",
    "softplus": "dOut * sigmoid(beta * X), or dOut where beta * X > threshold",
    "gelu": "dOut * (Phi(X) + X * phi(X)) (the tanh approximation's derivative if approximate)",
    "elu": "dOut where X > 0, else dOut * alpha * exp(X)",
    "swish": "dOut * (s + beta * X * s * (1 - s)), s = sigmoid(beta * X)",
    "softsign": "dOut / (1 + |X|)**2",
    "sin": "dOut * cos(X)",
    "cos": "-dOut * sin(X)",
    "silu": "dOut * (s + X * s * (1 - s)), s = sigmoid(X)",
    "floor": "zeros", "ceil": "zeros", "round": "zeros",
}


def _infer_grad(ctx):
    d = ctx.input("Out@GRAD")
    for slot in ("Out", "X"):
        if ctx.has_input(slot):
            v = ctx.input(slot)
            if len(v.shape) != len(d.shape) or not all(dim_eq(a, b)
                                                       for a, b in zip(v.shape, d.shape)):
                ctx.fail(f"Out@GRAD ({d.name}) must have the shape of {slot} ({v.name})",
                         expected=f"shape {list(v.shape)}", found=f"shape {list(d.shape)}")
            if v.dtype is not None and d.dtype is not None and v.dtype != d.dtype:
                ctx.fail(f"Out@GRAD ({d.name}) is {d.dtype} but {slot} ({v.name}) is "
                         f"{v.dtype}", expected=v.dtype, found=d.dtype)
            ctx.set_output_like("X@GRAD", v)
            return
    ctx.set_output_like("X@GRAD", d)


def make_activation_grad(fwd):
    """``<op>_grad``: (X or Out or nothing, Out@GRAD) -> X@GRAD."""
    reads = GRAD_USES[fwd.type]
    return grad_of(fwd, uses=[reads] if reads else [], infer=_infer_grad,
                   doc=f"Gradient of {fwd.type}: X@GRAD = {GRAD_FORMULAS[fwd.type]}; reads "
                       f"{reads + ' and ' if reads else ''}Out@GRAD.")


FORWARD = [make_activation(*row) for row in ACTIVATIONS]
OPS = FORWARD + [make_activation_grad(d) for d in FORWARD]
