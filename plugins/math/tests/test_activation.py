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
    assert sorted(op for op, _, _ in CPU_KERNELS) == sorted(OPS + [op + "_grad" for op in OPS])
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
    ops = OPS + [op + "_grad" for op in OPS]
    assert sorted(SAMPLES) == sorted(REFERENCES) == sorted(ops)


@pytest.mark.parametrize("op, attrs, rtol", [
    ("exp", {}, 4e-7), ("sigmoid", {}, 4e-7), ("tanh", {}, 4e-7), ("silu", {}, 4e-7),
    ("gelu", {"approximate": False}, 1.5e-6),       # erfc(a) = 1 - erf(a) cancels a little
    # The exponent (beta * x, or gelu's u) is itself a rounded float32 here, and exp turns
    # its rounding error e into a relative error |arg| * e: up to ~1e-5 deep in the tails.
    ("swish", {"beta": 1.7}, 2e-5), ("gelu", {"approximate": True}, 2e-5)])
def test_float32_fast_paths_are_accurate(op, attrs, rtol, make_kernel):
    # float32 exp-based activations run on vectorized float32 arithmetic (the core's
    # headrace/kernels/fastmath.h): a dense sweep, tiny and huge values included, against the
    # float64 reference.
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


# == gradients =================================================================================

from headrace import ShapeError  # noqa: E402
from headrace.testing import check_grad  # noqa: E402
from headrace_math.ops.activation import GRAD_USES  # noqa: E402
from headrace_math.reference.activation import DEFAULTS  # noqa: E402


def _kinks(op, attrs):
    """Points where the op's derivative jumps (finite differences across them are wrong)."""
    a = {**DEFAULTS.get(op, {}), **(attrs or {})}
    if op in ("relu", "leaky_relu", "abs", "elu"):
        return [0.0]
    if op == "relu6":
        return [0.0, a["threshold"]]
    if op == "hard_sigmoid":
        return [-a["offset"] / a["slope"], (1 - a["offset"]) / a["slope"]]
    if op == "softplus":
        return [a["threshold"] / a["beta"]]
    return []


def _grad_input(op, attrs=None, shape=(3, 4), seed=0):
    """float64 X in the op's domain, at least 0.05 away from its kinks; floor, ceil and
    round get values 0.02 past a grid point, away from every step."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.5, 2.5, shape)
    if op in POSITIVE:
        x = np.abs(x) + 0.3
    elif op == "reciprocal":
        x = np.where(np.abs(x) < 0.3, 0.8, x)
    elif op in ("floor", "ceil", "round"):
        step = 10.0 ** -(attrs or {}).get("decimals", 0)
        x = np.round(x / step) * step + 0.2 * step
    for k in _kinks(op, attrs):
        x = np.where(np.abs(x - k) < 0.05, k + 0.1, x)
    return x


@pytest.mark.parametrize("op", OPS)
def test_gradient_finite_differences(op):
    attrs = SAMPLE_ATTRS.get(op, {})
    check_grad(op, {"X": _grad_input(op, attrs)}, wrt=["X"], attrs=attrs)


@pytest.mark.parametrize("op, attrs", [
    ("leaky_relu", {"alpha": 0.0}), ("leaky_relu", {"alpha": 1.5}),
    ("softplus", {"beta": -1.5, "threshold": 3.0}), ("softplus", {"beta": 0.5}),
    ("softplus", {"beta": 2.0, "threshold": 0.5}),          # both regimes in one tensor
    ("gelu", {"approximate": True}), ("gelu", {"approximate": False}),
    ("relu6", {"threshold": 1.0}), ("elu", {"alpha": 2.0}),
    ("hard_sigmoid", {"slope": -0.3, "offset": 0.1}), ("swish", {"beta": -2.0}),
    ("round", {"decimals": 0}), ("round", {"decimals": 2}),
])
def test_gradient_with_attributes(op, attrs):
    check_grad(op, {"X": _grad_input(op, attrs, seed=1)}, wrt=["X"], attrs=attrs)


@pytest.mark.parametrize("op", ["relu", "tanh", "softsign", "floor"])
@pytest.mark.parametrize("shape", [(5,), (2, 3, 4), (1,)])
def test_gradient_shapes(op, shape):
    check_grad(op, {"X": _grad_input(op, shape=shape, seed=2)}, wrt=["X"])


def _grad_op_inputs(op, x, attrs, g):
    reads = GRAD_USES[op]
    inputs = {"Out@GRAD": g}
    if reads == "X":
        inputs["X"] = x
    elif reads == "Out":
        inputs["Out"] = REFERENCES[op]({"X": x}, attrs or {})["Out"]
    return inputs


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 5), (17,), (0, 4), (2, 3, 4), (1000,)])
def test_grad_kernel_matches_reference(check, op, dtype, shape):
    attrs = SAMPLE_ATTRS.get(op)
    x = _grad_input(op, attrs, shape, seed=3).astype(dtype)
    g = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    check(op + "_grad", _grad_op_inputs(op, x, attrs, g), attrs)


def test_relu_grad_reads_out(make_kernel):
    # relu_grad's input is Out: the gradient passes where Out > 0, NaN Out blocks it.
    out = np.array([0.0, 2.0, np.nan, 0.5], np.float32)
    g = np.array([1.0, 2.0, 3.0, np.inf], np.float32)
    (dx,) = make_kernel("relu_grad")(out, g)
    assert dx.tolist() == [0.0, 2.0, 0.0, np.inf]


@pytest.mark.parametrize("op", ["floor", "ceil", "round"])
def test_step_functions_have_zero_gradient(op, make_kernel):
    (dx,) = make_kernel(op + "_grad")(np.full((2, 3), 7.0))
    assert dx.shape == (2, 3) and not dx.any()


@pytest.mark.parametrize("op", ["relu", "log", "floor"])
def test_grad_kernel_rejects_bad_inputs(op, make_kernel):
    kernel = make_kernel(op + "_grad")
    with pytest.raises(TypeError, match=rf"{op}_grad: Out@GRAD has dtype int64"):
        kernel(*([np.ones(3, np.int64)] * (1 if op == "floor" else 2)))
    if op == "floor":
        with pytest.raises(ValueError, match="floor_grad: takes Out@GRAD only"):
            kernel(np.ones(3), np.ones(3))
        return
    with pytest.raises(ValueError, match=rf"{op}_grad: Out@GRAD has shape \[4\] but the "
                                         r"forward value has \[3\]"):
        kernel(np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=rf"{op}_grad: Out@GRAD is float32 but the forward"):
        kernel(np.ones(3), np.ones(3, np.float32))


@pytest.mark.parametrize("op", OPS)
def test_grad_op_reads_what_the_conventions_say(op, math_registry):
    grad = math_registry.get(op + "_grad")
    reads = [s.name for s in grad.inputs if s.name != "Out@GRAD"]
    assert reads == ([GRAD_USES[op]] if GRAD_USES[op] else [])
    assert [s.name for s in grad.outputs] == ["X@GRAD"]
    conventions = {"relu": "Out", "sigmoid": "Out", "tanh": "Out", "exp": "Out", "sqrt": "Out",
                   "log": "X", "square": "X", "softplus": "X", "gelu": "X"}
    if op in conventions:
        assert GRAD_USES[op] == conventions[op]


@pytest.mark.parametrize("op", ["relu", "log", "floor"])
def test_grad_shape_rule(op, infer):
    reads = GRAD_USES[op]
    inputs = {"Out@GRAD": ([-1, 4], "float32", 1)}
    if reads:
        inputs[reads] = ([-1, 4], "float32", 1)
    assert infer(op + "_grad", inputs, out="X@GRAD") == ((-1, 4), "float32")
    if reads:
        inputs[reads] = ([-1, 5], "float32", 1)
        with pytest.raises(ShapeError, match=rf"Out@GRAD \(out@grad_0\) must have the shape "
                                             rf"of {reads}"):
            infer(op + "_grad", inputs, out="X@GRAD")


def test_float32_gelu_grad_fast_path_is_accurate(make_kernel):
    # float32 gelu_grad runs on the core's fastmath.h, vectorized Phi and exp: within a few
    # ulp of the float64 derivative, relative where it is not small, absolute (a few ulp of
    # Phi) near its zero at x = -0.7518, where Phi(x) + x phi(x) cancels in any float32
    # evaluation.
    x = np.concatenate([np.linspace(-30, 30, 300001), [-0.7518, 0.0, -0.0]]).astype(np.float32)
    d = np.linspace(0.5, 2.0, x.size).astype(np.float32)
    got = make_kernel("gelu_grad", {"approximate": False})(x, d)[0].astype(np.float64)
    xd = x.astype(np.float64)
    from scipy.special import erfc
    exact = d * (0.5 * erfc(-xd / np.sqrt(2)) + xd * np.exp(-0.5 * xd * xd) / np.sqrt(2 * np.pi))
    np.testing.assert_allclose(got, exact, rtol=2e-6, atol=4e-7)
    assert np.isnan(make_kernel("gelu_grad")(np.float32([np.nan]), np.float32([1]))[0]).all()
