"""Shape/dtype inference and attributes of the activation ops."""
import pytest

from headrace.errors import OpValidationError
from headrace_math.ops.activation import ACTIVATIONS

OPS = [row[0] for row in ACTIVATIONS]

# Paddle's attribute names and defaults: saved programs carry exactly these.
PADDLE_ATTRS = {
    "leaky_relu": {"alpha": ("float", 0.02)},
    "softplus": {"beta": ("float", 1.0), "threshold": ("float", 20.0)},
    "gelu": {"approximate": ("bool", False)},
    "relu6": {"threshold": ("float", 6.0)},
    "elu": {"alpha": ("float", 1.0)},
    "hard_sigmoid": {"slope": ("float", 0.2), "offset": ("float", 0.5)},
    "swish": {"beta": ("float", 1.0)},
    "round": {"decimals": ("int", 0)},
}


def test_op_list():
    assert sorted(OPS) == sorted([
        "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "square", "abs",
        "reciprocal", "leaky_relu", "softplus", "gelu", "relu6", "elu", "hard_sigmoid",
        "swish", "softsign", "sin", "cos", "floor", "ceil", "round", "silu"])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [[2, 3], [-1, 3, -1], [7], []])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_same_shape_and_dtype(infer, op, shape, dtype):
    assert infer(op, {"X": (shape, dtype)}) == (tuple(shape), dtype)


@pytest.mark.parametrize("op", OPS)
def test_lod_is_kept(build, op):
    out = build(op, {"X": ([-1, 5], "float32", 1)})
    assert (out.shape, out.lod_level) == ((-1, 5), 1)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_non_float_is_rejected(infer, op, dtype):
    with pytest.raises(OpValidationError, match=rf"input 'X' \(x_0\) has an unsupported dtype"
                                                rf"(.|\n)*found:    {dtype}"):
        infer(op, {"X": ([2], dtype)})


@pytest.mark.parametrize("op", OPS)
def test_attributes_match_paddle(math_registry, op):
    attrs = math_registry.get(op).attrs
    assert {n: (a.type, a.default) for n, a in attrs.items()} == PADDLE_ATTRS.get(op, {})


@pytest.mark.parametrize("op, attrs", [
    ("leaky_relu", {"alpha": 0.1}),
    ("softplus", {"beta": 2.0, "threshold": 10.0}),
    ("gelu", {"approximate": True}),
    ("relu6", {"threshold": 3.0}),
    ("elu", {"alpha": 0.5}),
    ("hard_sigmoid", {"slope": 0.1667, "offset": 0.5}),
    ("swish", {"beta": 2}),                                   # an int is a fine float
    ("round", {"decimals": 2}),
])
def test_attributes_are_accepted(infer, op, attrs):
    assert infer(op, {"X": ([4], "float32")}, attrs) == ((4,), "float32")


@pytest.mark.parametrize("op, attrs, msg", [
    ("softplus", {"beta": 0.0}, r"'beta' must be nonzero \(Out divides by it\) \(got 0.0\)"),
    ("gelu", {"approximate": 1}, r"'approximate' is not of type bool"),
    ("leaky_relu", {"alpha": "0.1"}, r"'alpha' is not of type float"),
    ("relu", {"alpha": 0.1}, r"unknown attribute 'alpha'"),
    ("round", {"decimals": 0.5}, r"'decimals' is not of type int"),
])
def test_bad_attributes(infer, op, attrs, msg):
    with pytest.raises(OpValidationError, match=msg):
        infer(op, {"X": ([4], "float32")}, attrs)


@pytest.mark.parametrize("op", OPS)
def test_differentiable(math_registry, op):
    # floor/ceil/round included: Paddle's gradient for them is zeros, not "none".
    assert math_registry.get(op).differentiable
