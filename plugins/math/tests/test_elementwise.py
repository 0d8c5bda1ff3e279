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

FLOAT_ONLY = {"elementwise_div", "elementwise_pow"}
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
        y = np.where(np.abs(y) < 0.05, 0.5, y)
    return x.astype(dtype), y.astype(dtype)


def test_every_op_has_a_kernel():
    assert sorted(op for op, _, _ in CPU_KERNELS) == OPS


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
            kernel(np.ones(3, np.int64), np.zeros(3, np.int64))    # never an integer x / 0
