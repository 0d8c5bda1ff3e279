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


# -- kernels --------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from headrace_math.kernels.cpu.activation import KERNELS as CPU_KERNELS  # noqa: E402
from headrace_math.kernels.cpu.activation import _maker  # noqa: E402
from headrace_math.reference.activation import REFERENCES, SAMPLE_ATTRS, SAMPLES  # noqa: E402

FLOATS = ["float32", "float64"]
POSITIVE = {"log", "sqrt", "rsqrt"}


def _input(op, shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape) * 4
    if op in POSITIVE:
        x = np.abs(x) + 0.05
    return x.astype(dtype)


def test_every_activation_has_a_kernel():
    assert sorted(op for op, _, _ in CPU_KERNELS) == sorted(OPS)
    assert all(dtypes == ("float32", "float64") for _, _, dtypes in CPU_KERNELS)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 5), (17,), (1,), (0, 4), (2, 3, 4)])
def test_kernel_matches_reference(check, op, dtype, shape):
    check(op, {"X": _input(op, shape, dtype)}, SAMPLE_ATTRS.get(op))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_kernel_default_attributes(check, op, dtype):
    check(op, {"X": _input(op, (4, 6), dtype, seed=1)})


@pytest.mark.parametrize("op, attrs", [
    ("leaky_relu", {"alpha": 0.0}), ("leaky_relu", {"alpha": 1.5}),
    ("softplus", {"beta": -1.5, "threshold": 3.0}), ("softplus", {"beta": 0.5}),
    ("gelu", {"approximate": True}),
    ("relu6", {"threshold": 0.0}), ("relu6", {"threshold": -1.0}), ("elu", {"alpha": 2.0}),
    ("hard_sigmoid", {"slope": -0.3, "offset": 0.1}), ("swish", {"beta": -2.0}),
    ("round", {"decimals": 0}), ("round", {"decimals": 3}), ("round", {"decimals": -1}),
])
@pytest.mark.parametrize("dtype", FLOATS)
def test_kernel_attributes(check, op, attrs, dtype):
    check(op, {"X": _input(op, (5, 7), dtype, seed=2)}, attrs)


def test_gelu_variants_differ(math_registry):
    from headrace.testing import run_op
    x = np.linspace(-3, 3, 13)
    exact = run_op("gelu", {"X": x}, registry=math_registry)["Out"][0].numpy()
    approx = run_op("gelu", {"X": x}, attrs={"approximate": True},
                    registry=math_registry)["Out"][0].numpy()
    assert 1e-5 < np.abs(exact - approx).max() < 1e-2


BIG = {"float32": [0.0, 1.0, 15.0, 30.0, 50.0, 88.0, 100.0, 1e4, 1e10, 1e30, 3.4e38],
       "float64": [0.0, 1.0, 15.0, 30.0, 50.0, 710.0, 800.0, 1e4, 1e30, 1e200, 1.7e308]}
# Ops whose value stays finite for any finite input (or equals the input).
BOUNDED = ["relu", "sigmoid", "tanh", "abs", "leaky_relu", "softplus", "gelu", "relu6", "elu",
           "hard_sigmoid", "swish", "softsign", "sin", "cos", "floor", "ceil", "round", "silu"]


@pytest.mark.parametrize("op, approximate", [(o, False) for o in OPS if o not in POSITIVE]
                         + [("gelu", True)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_large_magnitudes(check, op, dtype, approximate):
    v = np.array(BIG[dtype], dtype)
    x = np.concatenate([v, -v])
    attrs = {"approximate": True} if approximate else SAMPLE_ATTRS.get(op)
    expected = check(op, {"X": x}, attrs)["Out"]
    if op in BOUNDED:
        assert np.isfinite(expected).all(), (op, expected)


@pytest.mark.parametrize("op", ["sigmoid", "softplus", "gelu", "swish", "silu"])
def test_tails_are_accurate(op, make_kernel):
    # Deep in the tails the naive formulas round to 0, 1 or NaN; the kernels keep the value.
    x = np.array([-30.0, -20.0, 20.0, 30.0])
    out = make_kernel(op)(x)[0]
    ref = REFERENCES[op]({"X": x}, {})["Out"]
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=0)
    if op == "sigmoid":
        assert out[0] > 0 and out[1] > 0
    if op in ("softplus", "sigmoid"):
        assert out[0] == pytest.approx(np.exp(-30.0), rel=1e-12)


def test_gelu_tanh_tail_is_not_zero(make_kernel):
    out = make_kernel("gelu", {"approximate": True})(np.array([-8.0, -6.0]))[0]
    assert (out < 0).all()           # 0.5 x (1 + tanh(u)) would round to exactly 0 here


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values(check, op, dtype):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 0.5, -0.5, 2.5, -2.5], dtype)
    check(op, {"X": x}, SAMPLE_ATTRS.get(op))


@pytest.mark.parametrize("op", ["relu", "leaky_relu", "relu6", "hard_sigmoid", "elu"])
def test_nan_propagates(op, make_kernel):
    assert np.isnan(make_kernel(op)(np.array([np.nan]))[0]).all()


@pytest.mark.parametrize("op", ["round"])
@pytest.mark.parametrize("x, decimals, out", [
    ([0.5, 1.5, 2.5, -0.5, -2.5], 0, [1.0, 2.0, 3.0, -1.0, -3.0]),   # half away from zero
    ([1.25, -1.25, 1.26], 1, [1.3, -1.3, 1.3]),
    ([1234.5, -1250.0], -2, [1200.0, -1300.0]),
    ([1e300, -1e300, 4.5e15 + 0.5], 5, [1e300, -1e300, 4.5e15 + 0.5]),   # already integral
])
def test_round_rule(make_kernel, op, x, decimals, out):
    got = make_kernel(op, {"decimals": decimals})(np.array(x))[0]
    np.testing.assert_allclose(got, out, rtol=1e-15)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_odd_layouts_directly(op, dtype, odd_layouts, make_kernel):
    x = _input(op, (4, 6), dtype, seed=3)
    attrs = SAMPLE_ATTRS.get(op, {})
    expected = REFERENCES[op]({"X": x}, attrs)["Out"]
    kernel = make_kernel(op, attrs)
    for label, v in odd_layouts(x):
        (out,) = kernel(v)
        assert out.shape == x.shape and out.dtype == x.dtype and out.flags.c_contiguous
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7, err_msg=label)


@pytest.mark.parametrize("op", ["relu", "gelu", "round"])
def test_zero_dim_directly(op, make_kernel):
    (out,) = make_kernel(op)(np.array(-1.5))
    assert out.shape == ()
    np.testing.assert_allclose(out, REFERENCES[op]({"X": np.array(-1.5)}, {})["Out"],
                               rtol=1e-15)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("x", [np.arange(4), np.ones(3, bool), np.ones(2, np.float16),
                               np.array(["a"]), None])
def test_kernel_rejects_other_dtypes(op, x, make_kernel):
    with pytest.raises(TypeError, match=rf"{op}: X has dtype"):
        make_kernel(op)(x)


def test_softplus_zero_beta_kernel_refuses():
    with pytest.raises(ValueError, match="beta must be nonzero"):
        _maker("softplus")({"beta": 0.0, "threshold": 20.0})


def test_samples_cover_every_op():
    assert sorted(SAMPLES) == sorted(REFERENCES) == sorted(OPS)


@pytest.mark.parametrize("op, attrs, rtol", [
    ("exp", {}, 4e-7), ("sigmoid", {}, 4e-7), ("tanh", {}, 4e-7), ("silu", {}, 4e-7),
    ("gelu", {"approximate": False}, 1.5e-6),       # erfc(a) = 1 - erf(a) cancels a little
    # The exponent (beta * x, or gelu's u) is itself a rounded float32 here, and exp turns
    # its rounding error e into a relative error |arg| * e: up to ~1e-5 deep in the tails.
    ("swish", {"beta": 1.7}, 2e-5), ("gelu", {"approximate": True}, 2e-5)])
def test_float32_fast_paths_are_accurate(op, attrs, rtol, make_kernel):
    # float32 exp-based activations run on vectorized float32 arithmetic (_fastmath.pxd): a
    # dense sweep, tiny and huge values included, against the float64 reference.
    x = np.concatenate([np.linspace(-120, 100, 200001), np.geomspace(1e-38, 1e-3, 2000),
                        -np.geomspace(1e-38, 1e-3, 2000), [0.0, -0.0, 88.7, 88.8, -103.9]])
    x = x.astype(np.float32)
    got = make_kernel(op, attrs)(x)[0].astype(np.float64)
    exact = REFERENCES[op]({"X": x.astype(np.float64)}, attrs)["Out"]
    big = np.abs(exact) > np.finfo(np.float32).max
    np.testing.assert_array_equal(np.isinf(got), big)            # overflow is inf, only then
    # Relative accuracy where float32 has full precision (products with a subnormal factor,
    # silu(-88) = -88 * 6e-39, lose it as in any float32 arithmetic); absolute below that.
    full = (np.abs(exact) >= 1e-30) & ~big
    np.testing.assert_allclose(got[full], exact[full], rtol=rtol, atol=0)
    tiny = np.abs(exact) < 1e-30
    np.testing.assert_allclose(got[tiny], exact[tiny], rtol=max(rtol, 1e-5), atol=1e-37)
