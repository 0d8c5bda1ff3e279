"""Shape/dtype inference of the seven elementwise_* ops (one rule, checked for each op)."""
import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError
from headrace_math.ops.elementwise import FORMULAS

OPS = sorted(FORMULAS)


def t(shape, dtype="float32", lod=0):
    return (shape, dtype, lod)


@pytest.fixture(params=OPS)
def ew(request, infer):
    """``ew(x, y, axis=None, xdtype, ydtype)``: the Out (shape, dtype) of the op."""
    def run(x, y, axis=None, xdtype="float32", ydtype="float32"):
        attrs = {} if axis is None else {"axis": axis}
        return infer(request.param, {"X": t(x, xdtype), "Y": t(y, ydtype)}, attrs)
    run.op = request.param
    return run


@pytest.mark.parametrize("x, y, axis, out", [
    ([2, 3], [2, 3], None, (2, 3)),
    ([2, 3, 4], [4], None, (2, 3, 4)),                    # trailing alignment
    ([2, 3, 4], [3, 4], -1, (2, 3, 4)),
    ([2, 3, 4, 5], [3, 4], 1, (2, 3, 4, 5)),              # Paddle: Y aligned at dim 1
    ([2, 3, 4, 5], [3], 1, (2, 3, 4, 5)),                 # per-channel bias, NCHW
    ([2, 3, 4], [2], 0, (2, 3, 4)),
    ([2, 3, 4], [4], 2, (2, 3, 4)),                       # axis at the last valid place
    ([2, 3, 4], [], 3, (2, 3, 4)),                        # 0-D Y goes anywhere
    ([2, 3], [2, 3], 5, (2, 3)),                          # equal ranks: axis is not used
    ([2, 1], [1, 3], None, (2, 3)),                       # both sides broadcast
    ([3], [2, 3], None, (2, 3)),                          # the larger operand may be Y
    ([3], [3, 4], 0, (3, 4)),                             # ... with axis too
    ([], [2, 3], None, (2, 3)),
    ([1], [5], None, (5,)),
    # unknown dims
    ([-1, 3], [3], None, (-1, 3)),
    ([-1, 3], [2, 3], None, (2, 3)),
    ([-1, 3], [-1, 3], None, (-1, 3)),
    ([-1, 3], [1, 3], None, (-1, 3)),
    ([2, -1, 4], [5, 4], 1, (2, 5, 4)),
    ([-1, -1], [1], None, (-1, -1)),
])
def test_broadcast_shapes(ew, x, y, axis, out):
    assert ew(x, y, axis) == (out, "float32")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_dtype_follows_inputs(ew, dtype):
    assert ew([2, 3], [3], xdtype=dtype, ydtype=dtype) == ((2, 3), dtype)


def test_lod_comes_from_x(build):
    for op in OPS:
        out = build(op, {"X": t([-1, 4], lod=2), "Y": t([4])})
        assert (out.shape, out.lod_level) == ((-1, 4), 2)


@pytest.mark.parametrize("x, y, axis, msg", [
    ([2, 3], [4], None, r"X and Y cannot be broadcast \(dim 1\)"),
    ([2, 3, 4], [3], None, r"X and Y cannot be broadcast \(dim 2\)"),
    ([2, 3], [3, 2], None, r"X and Y cannot be broadcast \(dim 0\)"),
    ([2, 3, 4], [3, 5], 1, r"X and Y cannot be broadcast \(dim 2\)"),
    ([2, 3, 4], [3, 4], 2, r"attribute 'axis' does not align Y inside X"),
    ([3, 4], [2, 3, 4], 2, r"attribute 'axis' does not align X inside Y"),
])
def test_broadcast_errors(ew, x, y, axis, msg):
    with pytest.raises(ShapeError, match=msg) as e:
        ew(x, y, axis)
    assert "expected:" in str(e.value) and "found:" in str(e.value)


def test_axis_below_minus_one_is_rejected(ew):
    with pytest.raises(OpValidationError, match=r"attribute 'axis' must be -1 \(trailing "
                                                r"alignment\) or a dim index >= 0 \(got -2\)"):
        ew([2, 3, 4], [3], axis=-2)


def test_dtype_mismatch(ew):
    with pytest.raises(ShapeError, match=r"X \(x_0\) is float32 but Y \(y_0\) is int64"):
        ew([2, 3], [3], ydtype="int64")


@pytest.mark.parametrize("slot", ["X", "Y"])
def test_bool_is_rejected(ew, slot):
    dtypes = {"xdtype": "float32", "ydtype": "float32", f"{slot.lower()}dtype": "bool"}
    with pytest.raises(OpValidationError, match=rf"input '{slot}' \({slot.lower()}_0\) has an "
                                                r"unsupported dtype"):
        ew([2], [2], **dtypes)


def test_formula_in_doc(math_registry):
    for op in OPS:
        opdef = math_registry.get(op)
        assert FORMULAS[op] in opdef.doc
        assert [s.name for s in opdef.inputs] == ["X", "Y"]
        assert {a.name: a.default for a in opdef.attrs.values()} == {"axis": -1}
        assert opdef.differentiable


# -- kernels --------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from headrace_math.kernels.cpu.elementwise import KERNELS as CPU_KERNELS  # noqa: E402
from headrace_math.reference.elementwise import REFERENCES  # noqa: E402

FLOAT_ONLY = {"elementwise_pow"}
INTS = ["int32", "int64"]

# (X shape, Y shape, axis) that broadcast; the executor runs each, the reference agrees.
BROADCASTS = [
    ((2, 3), (2, 3), -1),
    ((2, 3, 4), (4,), -1),
    ((2, 3, 4), (3, 4), -1),
    ((2, 3, 4, 5), (3, 4), 1),                  # Paddle: Y aligned at dim 1
    ((2, 3, 4, 5), (3,), 1),                    # per-channel, NCHW
    ((2, 3, 4, 5), (3, 1, 1), 1),
    ((2, 3, 4, 5), (4, 5, 1), 2),               # Y's sticking-out trailing 1 is dropped
    ((2, 3, 4), (2,), 0),
    ((2, 3, 4), (2, 3), 0),
    ((2, 3, 4), (4,), 2),
    ((2, 3), (2, 3), 5),                        # equal ranks: axis unused
    ((2, 1), (1, 3), -1),                       # size-1 dims on both sides
    ((4, 1, 3), (1, 5, 1), -1),
    ((1, 1), (3, 1), -1),
    ((3,), (2, 3), -1),                         # the larger operand is Y
    ((3,), (3, 4), 0),                          # ... with axis
    ((5, 4), (1,), -1),                         # a scalar as [1]
    ((1,), (5, 4), -1),
    ((1,), (1,), -1),
    ((0, 3), (3,), -1),                         # empty dims
    ((2, 0), (2, 1), -1),
    ((0,), (1,), -1),
    ((2, 1, 0), (3, 1), -1),
    ((2, 3, 4, 5, 6), (3, 1, 5, 1), 1),         # alternating broadcast dims
    ((7, 9), (7, 9), -1),
]


def _operands(op, xs, ys, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        x, y = rng.integers(-20, 20, xs), rng.integers(-20, 20, ys)
    else:
        x, y = rng.standard_normal(xs) * 3, rng.standard_normal(ys) * 3
    if op == "elementwise_pow":
        x, y = np.abs(x) + 0.1, np.round(y * 2) / 2      # real results, some integer powers
    if op == "elementwise_div":
        y = np.where(np.abs(y) < 0.05, 0.5 if dtype.startswith("float") else 3, y)
    return x.astype(dtype), y.astype(dtype)


def test_every_op_has_a_kernel():
    assert sorted(op for op, _, _ in CPU_KERNELS) == sorted(OPS + [op + "_grad" for op in OPS])


@pytest.mark.parametrize("op, dtype", [(op, dt) for op in OPS for dt in
                                       ["float32", "float64"] + INTS
                                       if not (op in FLOAT_ONLY and dt in INTS)])
@pytest.mark.parametrize("xs, ys, axis", BROADCASTS)
def test_kernel_broadcasts(check, op, dtype, xs, ys, axis):
    x, y = _operands(op, xs, ys, dtype)
    check(op, {"X": x, "Y": y}, {"axis": axis})


@pytest.mark.parametrize("op", ["elementwise_max", "elementwise_min"])
def test_max_min_propagate_nan(check, op):
    x = np.array([np.nan, 1.0, np.nan, -np.inf, 2.0])
    y = np.array([1.0, np.nan, np.nan, 0.0, np.inf])
    out = check(op, {"X": x, "Y": y})["Out"]
    assert np.isnan(out[:3]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_div_and_pow_special_values(check, dtype):
    x = np.array([1.0, -1.0, 0.0, 2.0, 0.0, -8.0], dtype)
    y = np.array([0.0, 0.0, 0.0, -1.0, -1.0, 1.0 / 3.0], dtype)
    check("elementwise_div", {"X": x, "Y": y})
    check("elementwise_pow", {"X": x, "Y": y})     # 0 ** -1 = inf, (-8) ** (1/3) = nan


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("xs, ys, axis", [((4, 6), (6,), -1), ((3, 4, 6), (4, 1), 1),
                                           ((4, 6), (4, 6), -1), ((2, 6), (3, 2, 6), -1)])
def test_odd_layouts_directly(op, xs, ys, axis, odd_layouts, make_kernel):
    x, y = _operands(op, xs, ys, "float64", seed=4)
    expected = REFERENCES[op]({"X": x, "Y": y}, {"axis": axis})["Out"]
    kernel = make_kernel(op, {"axis": axis})
    for (lx, vx), (ly, vy) in zip(odd_layouts(x), odd_layouts(y)[::-1]):
        (out,) = kernel(vx, vy)
        assert out.flags.c_contiguous and out.dtype == np.float64
        np.testing.assert_allclose(out, expected, rtol=1e-15, err_msg=f"X {lx}, Y {ly}")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("xs, ys", [((), ()), ((), (2, 3)), ((2, 3), ())])
def test_zero_dim_directly(op, xs, ys, make_kernel):
    x, y = _operands(op, xs, ys, "float64", seed=5)
    (out,) = make_kernel(op)(x, y)
    expected = REFERENCES[op]({"X": x, "Y": y}, {})["Out"]
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-15)


def test_many_dims_directly(make_kernel):
    # 20 dims of alternating broadcast: no dims merge, the odometer walks all of them.
    xs = tuple(2 if i % 2 else 1 for i in range(20))
    ys = tuple(1 if i % 2 else 2 for i in range(20))
    x, y = np.arange(2.0 ** 10).reshape(xs), -np.arange(2.0 ** 10).reshape(ys)
    np.testing.assert_array_equal(make_kernel("elementwise_add")(x, y)[0], x + y)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("xs, ys, axis", [
    ((2, 3), (4,), -1), ((2, 3), (3, 2), -1), ((2, 3, 4), (3, 5), 1),
    ((2, 3, 4), (3, 4), 2), ((3, 4), (2, 3, 4), 2), ((2, 3), (3,), 7),
])
def test_kernel_rejects_mismatched_shapes(op, xs, ys, axis, make_kernel):
    x, y = np.ones(xs), np.ones(ys)
    with pytest.raises(ValueError, match=rf"{op}: "):
        make_kernel(op, {"axis": axis})(x, y)


@pytest.mark.parametrize("op", OPS)
def test_kernel_rejects_bad_dtypes(op, make_kernel):
    kernel = make_kernel(op)
    with pytest.raises(TypeError, match=rf"{op}: X is float32 but Y is float64"):
        kernel(np.ones(3, np.float32), np.ones(3))
    with pytest.raises(TypeError, match=rf"{op}: dtype bool not supported"):
        kernel(np.ones(3, bool), np.ones(3, bool))
    if op in FLOAT_ONLY:
        with pytest.raises(TypeError, match=rf"{op}: dtype int64 not supported"):
            kernel(np.ones(3, np.int64), np.zeros(3, np.int64))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_div_truncates_toward_zero_as_paddle(check, dtype):
    # Paddle 3.3's elementwise_div on these gives [3, -3, -1, -1, 2, 0, -2]: C's division
    x = np.array([7, -7, 5, 3, 6, 0, -6], dtype)
    y = np.array([2, 2, -3, -3, 3, 5, 3], dtype)
    out = check("elementwise_div", {"X": x, "Y": y})["Out"]
    np.testing.assert_array_equal(out, [3, -3, -1, -1, 2, 0, -2])
    lo = np.iinfo(dtype).min
    out = check("elementwise_div", {"X": np.array([lo, lo, 9], dtype),
                                    "Y": np.array([-1, 1, -1], dtype)})["Out"]
    np.testing.assert_array_equal(out, [lo, lo, -9])      # wraps as NumPy's, no trap


@pytest.mark.parametrize("dtype", INTS)
def test_integer_div_by_zero_is_an_error(make_kernel, dtype):
    with pytest.raises(ValueError, match="elementwise_div: integer division by zero"):
        make_kernel("elementwise_div")(np.ones((2, 3), dtype), np.array([1, 0, 2], dtype))
    from headrace.errors import OpError
    from headrace.testing import run_op
    with pytest.raises(OpError, match="elementwise_div.*integer division by zero"):
        run_op("elementwise_div", {"X": np.ones(3, dtype), "Y": np.zeros(3, dtype)})


# == gradients =================================================================================

from headrace.testing import check_grad  # noqa: E402
from headrace_math.kernels.cpu.elementwise import ElementwiseGrad  # noqa: E402
from headrace_math.ops.elementwise import GRAD_USES  # noqa: E402

# (X shape, Y shape, axis): equal shapes, Y broadcast (trailing, with axis, a size-1 dim, a
# scalar), X broadcast (lower rank, with axis), both broadcast, 0-D.
GRAD_SHAPES = [
    ((2, 3), (2, 3), -1),
    ((2, 3, 4), (4,), -1),
    ((2, 3, 4), (3,), 1),
    ((2, 3, 4), (3, 1), 1),
    ((2, 3, 4), (2, 1, 4), -1),
    ((2, 3), (1,), -1),
    ((3,), (2, 3), -1),
    ((3,), (3, 4), 0),
    ((2, 1), (1, 3), -1),
    ((2, 3, 4, 5), (3, 4), 1),
]


def _grad_operands(op, xs, ys, axis, dtype="float64", seed=0):
    """Operands away from the ops' kinks and singularities: Y far from 0 for div, X > 0 for
    pow, and for max and min X on the grid 0.2 k + 0.1, Y on 0.2 k, so never closer than 0.1
    whatever broadcasts against what."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs)
    y = rng.standard_normal(ys)
    if op == "elementwise_pow":
        x = np.abs(x) + 0.5
    if op == "elementwise_div":
        y = np.where(np.abs(y) < 0.3, 0.7, y)
    if op in ("elementwise_max", "elementwise_min"):
        x = rng.integers(-8, 8, xs) * 0.2 + 0.1
        y = rng.integers(-8, 8, ys) * 0.2
    return np.asarray(x).astype(dtype), np.asarray(y).astype(dtype)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("xs, ys, axis", GRAD_SHAPES)
def test_gradient_finite_differences(op, xs, ys, axis):
    x, y = _grad_operands(op, xs, ys, axis)
    check_grad(op, {"X": x, "Y": y}, wrt=["X", "Y"], attrs={"axis": axis})


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("wrt", [["X"], ["Y"]])
def test_gradient_of_one_operand(op, wrt):
    # The other gradient is not wanted: its output is unbound and not computed.
    x, y = _grad_operands(op, (2, 3, 4), (3,), 1, seed=1)
    check_grad(op, {"X": x, "Y": y}, wrt=wrt, attrs={"axis": 1})


def _grad_inputs(op, x, y, axis, g):
    inputs = {"X": x, "Y": y, "Out@GRAD": g}
    if "Out" in GRAD_USES[op]:
        inputs["Out"] = REFERENCES[op]({"X": x, "Y": y}, {"axis": axis})["Out"]
    return inputs


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs, ys, axis", GRAD_SHAPES + [((0, 3), (3,), -1), ((2, 0), (1,), -1),
                                                        ((300, 2), (300, 1), -1),
                                                        ((2, 700), (1,), -1)])
def test_grad_kernel_matches_reference(check, op, dtype, xs, ys, axis):
    # Long rows (700 > one chunk of the kernel) and long reductions (300 rows) included.
    x, y = _grad_operands(op, xs, ys, axis, dtype, seed=2)
    out = REFERENCES[op]({"X": x, "Y": y}, {"axis": axis})["Out"]
    g = np.random.default_rng(3).standard_normal(out.shape).astype(dtype)
    check(op + "_grad", _grad_inputs(op, x, y, axis, g), {"axis": axis})


def test_max_min_send_ties_to_y(make_kernel):
    # Paddle's rule: X@GRAD where X > Y (max) / X < Y (min), Y@GRAD everywhere else.
    x, y, g = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0]), np.array([10.0, 20.0, 30.0])
    dx, dy = make_kernel("elementwise_max_grad")(x, y, g)
    assert dx.tolist() == [0, 0, 30] and dy.tolist() == [10, 20, 0]
    dx, dy = make_kernel("elementwise_min_grad")(x, y, g)
    assert dx.tolist() == [10, 0, 0] and dy.tolist() == [0, 20, 30]


def test_pow_gradient_at_zero_base(make_kernel):
    x, y, g = np.array([0.0, 0.0, 2.0]), np.array([2.0, 3.0, 3.0]), np.ones(3)
    dx, dy = make_kernel("elementwise_pow_grad")(x, y, g)
    np.testing.assert_allclose(dx, [0.0, 0.0, 12.0])
    np.testing.assert_allclose(dy, [0.0, 0.0, 8.0 * np.log(2.0)])


def test_bias_gradient_is_a_column_sum(make_kernel):
    # The fc layer's bias: [N, C] + [C] at axis=1; Y@GRAD sums Out@GRAD over the rows
    # (accumulated in double, also for float32), X@GRAD is Out@GRAD.
    rng = np.random.default_rng(4)
    g = rng.standard_normal((128, 256)).astype(np.float32)
    x, y = np.zeros((128, 256), np.float32), np.zeros(256, np.float32)
    dx, dy = make_kernel("elementwise_add_grad", {"axis": 1})(x, y, g)
    np.testing.assert_array_equal(dx, g)
    assert dx is not g and dy.dtype == np.float32
    np.testing.assert_allclose(dy, g.astype(np.float64).sum(0), rtol=1e-6)


def test_add_grad_returns_out_grad_only_when_allowed(math_registry):
    # With an op whose variables are not persistable, X@GRAD may be Out@GRAD itself.
    from headrace.testing import build_op
    prog, op = build_op("elementwise_add_grad",
                        {"X": ([2, 3], "float32", 0), "Y": ([3], "float32", 0),
                         "Out@GRAD": ([2, 3], "float32", 0)},
                        {"X@GRAD": 1, "Y@GRAD": 1}, {"axis": 1}, registry=math_registry)

    from headrace.runtime.kernel_info import kernel_info
    g = np.ones((2, 3), np.float32)
    kernel = ElementwiseGrad(0, "elementwise_add_grad", {"axis": 1}, kernel_info(op))
    dx, dy = kernel(g, g[0], g)
    assert dx is g and dy.tolist() == [2.0, 2.0, 2.0]
    prog.global_block().var(op.input("Out@GRAD")[0]).persistable = True
    kernel = ElementwiseGrad(0, "elementwise_add_grad", {"axis": 1}, kernel_info(op))
    dx, _ = kernel(g, g[0], g)
    assert dx is not g and np.array_equal(dx, g)


@pytest.mark.parametrize("op", OPS)
def test_grad_kernel_skips_unwanted_outputs(op, math_registry):
    from headrace.testing import build_op
    x, y = _grad_operands(op, (2, 3), (3,), -1)
    inputs = _grad_inputs(op, x, y, -1, np.ones((2, 3)))
    specs = {s: (list(v.shape), "float64", 0) for s, v in inputs.items()}
    prog, gop = build_op(op + "_grad", specs, {"X@GRAD": 1}, {}, registry=math_registry)

    from headrace.runtime.kernel_info import kernel_info
    info = kernel_info(gop)
    args = [inputs[s.name] for s in math_registry.get(op + "_grad").inputs]
    dx, dy = math_registry.kernel(op + "_grad", "cpu", "float64").fn({"axis": -1}, info)(*args)
    assert dy is None and dx.shape == (2, 3)


@pytest.mark.parametrize("op", OPS)
def test_grad_kernel_rejects_bad_inputs(op, make_kernel):
    x, y = _grad_operands(op, (2, 3), (3,), -1)
    kernel = make_kernel(op + "_grad")
    extra = [np.ones((2, 3))] if "Out" in GRAD_USES[op] else []
    with pytest.raises(ValueError, match=rf"{op}_grad: Out@GRAD has shape \[3, 2\], expected "
                                         r"the broadcast shape \[2, 3\]"):
        kernel(x, y, *extra, np.ones((3, 2)))
    with pytest.raises(ValueError, match=rf"{op}_grad: .*cannot be broadcast"):
        kernel(x, np.ones(4), *extra, np.ones((2, 3)))
    with pytest.raises(TypeError, match=rf"{op}_grad: X, Y.* must share one dtype"):
        kernel(x, y, *extra, np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match=rf"{op}_grad: X has dtype int64"):
        kernel(np.ones((2, 3), np.int64), np.ones(3, np.int64), *extra,
               np.ones((2, 3), np.int64))


@pytest.mark.parametrize("op", OPS)
def test_grad_shape_rule(op, infer, build):
    inputs = {"X": t([-1, 3, 4]), "Y": t([3]), "Out@GRAD": t([-1, 3, 4])}
    if "Out" in GRAD_USES[op]:
        inputs["Out"] = t([-1, 3, 4])
    assert infer(op + "_grad", inputs, {"axis": 1}, out="X@GRAD") == ((-1, 3, 4), "float32")
    assert infer(op + "_grad", inputs, {"axis": 1}, out="Y@GRAD") == ((3,), "float32")
    bad = dict(inputs, **{"Out@GRAD": t([-1, 3, 5])})
    with pytest.raises(ShapeError, match=r"Out@GRAD \(out@grad_0\) must have the shape of "
                                         r"the forward Out"):
        infer(op + "_grad", bad, {"axis": 1}, out="X@GRAD")


@pytest.mark.parametrize("dtype", INTS)
def test_integer_layers_give_paddles_numbers(dtype):
    # Paddle 3.3.1's static programs on x = [7, -7, 5, 3], y = [2, 2, -3, -3] of either type
    import headrace as hr
    L = hr.layers
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = L.data("x", [4], dtype=dtype, append_batch_size=False)
        y = L.data("y", [4], dtype=dtype, append_batch_size=False)
        outs = [L.elementwise_add(x, y), L.elementwise_sub(x, y), L.elementwise_mul(x, y),
                L.elementwise_div(x, y), L.elementwise_max(x, y), L.elementwise_min(x, y),
                L.scale(x, scale=2.7, bias=-0.6), L.scale(x, scale=0.5, bias=0.5)]
    got = hr.Executor().run(main, feed={"x": np.array([7, -7, 5, 3], dtype),
                                        "y": np.array([2, 2, -3, -3], dtype)},
                            fetch_list=outs, scope=hr.Scope())
    want = [[9, -5, 2, 0], [5, -9, 8, 6], [14, -14, -15, -9], [3, -3, -1, -1], [7, 2, 5, 3],
            [2, -7, -3, -3], [14, -14, 10, 6], [0, 0, 0, 0]]
    for g, w in zip(got, want):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, w)
