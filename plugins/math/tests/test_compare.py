"""Shape/dtype inference of the six comparison ops."""
import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError
from headrace_math.ops.compare import RELATIONS

OPS = sorted(RELATIONS)


@pytest.fixture(params=OPS)
def cmp(request, infer):
    """``cmp(x, y, axis=None, xdtype, ydtype)``: the Out (shape, dtype) of the comparison."""
    def run(x, y, axis=None, xdtype="float32", ydtype="float32"):
        attrs = {} if axis is None else {"axis": axis}
        return infer(request.param, {"X": (x, xdtype), "Y": (y, ydtype)}, attrs)
    return run


@pytest.mark.parametrize("x, y, axis, out", [
    ([2, 3], [2, 3], None, (2, 3)),
    ([2, 3], [3], None, (2, 3)),
    ([2, 3], [1], None, (2, 3)),                 # a scalar-like threshold
    ([2, 3], [], None, (2, 3)),
    ([1], [1], None, (1,)),                      # the while loop's `i < n`
    ([2, 3, 4], [3], 1, (2, 3, 4)),
    ([3], [2, 3], None, (2, 3)),
    ([-1, 3], [3], None, (-1, 3)),
    ([-1, 3], [2, 1], None, (2, 3)),
    ([-1], [-1], None, (-1,)),
])
def test_shapes_and_bool_out(cmp, x, y, axis, out):
    assert cmp(x, y, axis) == (out, "bool")


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64",
                                   "float16", "float32", "float64"])
def test_input_dtypes(cmp, dtype):
    assert cmp([2], [2], xdtype=dtype, ydtype=dtype) == ((2,), "bool")


@pytest.mark.parametrize("x, y, axis, msg", [
    ([2, 3], [4], None, r"X and Y cannot be broadcast \(dim 1\)"),
    ([2, 3, 4], [3, 4], 2, r"attribute 'axis' does not align Y inside X"),
])
def test_broadcast_errors(cmp, x, y, axis, msg):
    with pytest.raises(ShapeError, match=msg):
        cmp(x, y, axis)


def test_axis_below_minus_one(cmp):
    with pytest.raises(OpValidationError, match=r"'axis' must be -1 .*\(got -3\)"):
        cmp([2, 3], [3], axis=-3)


def test_dtype_mismatch(cmp):
    with pytest.raises(ShapeError, match=r"X \(x_0\) is int64 but Y \(y_0\) is int32"):
        cmp([1], [1], xdtype="int64", ydtype="int32")


def test_complex_is_rejected(cmp):
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        cmp([1], [1], xdtype="complex64", ydtype="complex64")


def test_lod_and_attrs(math_registry, build):
    for op in OPS:
        out = build(op, {"X": ([-1, 1], "int64", 1), "Y": ([1], "int64")}, {"force_cpu": True})
        assert (out.shape, out.dtype, out.lod_level) == ((-1, 1), "bool", 1)
        opdef = math_registry.get(op)
        assert not opdef.differentiable
        assert {n: a.default for n, a in opdef.attrs.items()} == {"axis": -1,
                                                                   "force_cpu": False}
        assert RELATIONS[op] in opdef.doc


# -- kernels --------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from headrace_math.kernels.cpu.compare import KERNELS as CPU_KERNELS  # noqa: E402
from headrace_math.reference.compare import REFERENCES  # noqa: E402

KERNEL_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float32", "float64"]

BROADCASTS = [
    ((2, 3), (2, 3), -1), ((2, 3, 4), (4,), -1), ((2, 3, 4), (3, 4), -1),
    ((2, 3, 4, 5), (3, 4), 1), ((2, 3, 4, 5), (3,), 1), ((2, 3, 4, 5), (4, 5, 1), 2),
    ((2, 3, 4), (2,), 0), ((2, 3), (2, 3), 5), ((2, 1), (1, 3), -1), ((4, 1, 3), (1, 5, 1), -1),
    ((3,), (2, 3), -1), ((3,), (3, 4), 0), ((5, 4), (1,), -1), ((1,), (5, 4), -1),
    ((1,), (1,), -1), ((0, 3), (3,), -1), ((2, 0), (2, 1), -1), ((2, 1, 0), (3, 1), -1),
    ((2, 3, 4, 5, 6), (3, 1, 5, 1), 1),
]


def _operands(xs, ys, dtype, seed=0):
    # Few distinct values, so that ties (==, <=, >=) occur often.
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0 if dtype in ("bool", "uint8") else -2, 3, xs), \
        rng.integers(0 if dtype in ("bool", "uint8") else -2, 3, ys)
    return x.astype(dtype), y.astype(dtype)


def test_every_comparison_has_a_kernel():
    assert sorted(op for op, _, _ in CPU_KERNELS) == OPS
    assert all(list(d) == KERNEL_DTYPES for _, _, d in CPU_KERNELS)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("xs, ys, axis", BROADCASTS)
def test_kernel_broadcasts(check, op, dtype, xs, ys, axis):
    x, y = _operands(xs, ys, dtype)
    assert check(op, {"X": x, "Y": y}, {"axis": axis})["Out"].dtype == bool


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
def test_kernel_dtypes(check, op, dtype):
    x, y = _operands((3, 4), (4,), dtype, seed=1)
    check(op, {"X": x, "Y": y})


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_and_inf(check, op, dtype):
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], dtype)
    check(op, {"X": np.repeat(v, 6), "Y": np.tile(v, 6)})


@pytest.mark.parametrize("op", OPS)
def test_int64_extremes(check, op):
    v = np.array([-(2 ** 63), -1, 0, 1, 2 ** 63 - 1], np.int64)
    check(op, {"X": np.repeat(v, 5), "Y": np.tile(v, 5)})


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("xs, ys, axis", [((4, 6), (6,), -1), ((3, 4, 6), (4, 1), 1),
                                           ((4, 6), (4, 6), -1)])
def test_odd_layouts_directly(op, xs, ys, axis, odd_layouts, make_kernel):
    x, y = _operands(xs, ys, "float64", seed=2)
    expected = REFERENCES[op]({"X": x, "Y": y}, {"axis": axis})["Out"]
    kernel = make_kernel(op, {"axis": axis})
    for (lx, vx), (ly, vy) in zip(odd_layouts(x), odd_layouts(y)[::-1]):
        (out,) = kernel(vx, vy)
        assert out.dtype == bool and out.flags.c_contiguous
        np.testing.assert_array_equal(out, expected, err_msg=f"X {lx}, Y {ly}")


@pytest.mark.parametrize("op", OPS)
def test_zero_dim_directly(op, make_kernel):
    for x, y in [(np.array(1), np.array(2)), (np.array(2.0), np.arange(4.0))]:
        (out,) = make_kernel(op)(x, y)
        np.testing.assert_array_equal(out, REFERENCES[op]({"X": x, "Y": y}, {})["Out"])
        assert out.shape == np.broadcast(x, y).shape


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("xs, ys, axis", [((2, 3), (4,), -1), ((2, 3, 4), (3, 4), 2),
                                           ((2, 3), (3, 2), -1), ((2, 3), (3,), 9)])
def test_kernel_rejects_mismatched_shapes(op, xs, ys, axis, make_kernel):
    with pytest.raises(ValueError, match=rf"{op}: "):
        make_kernel(op, {"axis": axis})(np.ones(xs), np.ones(ys))


@pytest.mark.parametrize("op", OPS)
def test_kernel_rejects_bad_dtypes(op, make_kernel):
    kernel = make_kernel(op)
    with pytest.raises(TypeError, match=rf"{op}: X is int64 but Y is int32"):
        kernel(np.ones(2, np.int64), np.ones(2, np.int32))
    for dtype in ("float16", "complex64", "uint16", "object"):
        with pytest.raises(TypeError, match=rf"{op}: dtype {dtype} not supported"):
            kernel(np.ones(2, dtype), np.ones(2, dtype))
