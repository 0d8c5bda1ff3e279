"""Shape/dtype inference of logical_and/or/xor/not."""
import pytest

from headrace import ShapeError
from headrace.errors import OpValidationError
from headrace_math.ops.logical import BINARY

BINARY_OPS = sorted(BINARY)
ALL_OPS = BINARY_OPS + ["logical_not"]


@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("x, y, out", [
    ([2, 3], [2, 3], (2, 3)),
    ([2, 3], [3], (2, 3)),
    ([2, 1], [1, 3], (2, 3)),
    ([1], [4], (4,)),
    ([], [4], (4,)),
    ([-1, 3], [3], (-1, 3)),
    ([-1, 3], [5, 3], (5, 3)),
    ([-1], [-1], (-1,)),
])
def test_binary_shapes(infer, op, x, y, out):
    assert infer(op, {"X": (x, "bool"), "Y": (y, "bool")}) == (out, "bool")


@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_mismatch(infer, op):
    with pytest.raises(ShapeError, match=r"X \(x_0\) and Y \(y_0\) cannot be broadcast "
                                         r"\(dim 1\)") as e:
        infer(op, {"X": ([2, 3], "bool"), "Y": ([2, 4], "bool")})
    assert "equal dims or 1" in str(e.value)


@pytest.mark.parametrize("shape", [[2, 3], [-1, 4], [], [1]])
def test_not(infer, shape):
    assert infer("logical_not", {"X": (shape, "bool")}) == (tuple(shape), "bool")


@pytest.mark.parametrize("op, slot", [(op, s) for op in BINARY_OPS for s in ("X", "Y")]
                         + [("logical_not", "X")])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_non_bool_is_rejected(infer, op, slot, dtype):
    inputs = {"X": ([2], "bool")} if op == "logical_not" else {"X": ([2], "bool"),
                                                               "Y": ([2], "bool")}
    inputs[slot] = ([2], dtype)
    with pytest.raises(OpValidationError, match=rf"input '{slot}' \({slot.lower()}_0\) has an "
                                                rf"unsupported dtype(.|\n)*found:    {dtype}"):
        infer(op, inputs)


@pytest.mark.parametrize("op", ALL_OPS)
def test_lod_and_no_gradient(math_registry, build, op):
    inputs = {"X": ([-1, 2], "bool", 1)}
    if op != "logical_not":
        inputs["Y"] = ([2], "bool")
    out = build(op, inputs)
    assert (out.shape, out.dtype, out.lod_level) == ((-1, 2), "bool", 1)
    assert not math_registry.get(op).differentiable
    assert not math_registry.get(op).attrs


# -- kernels --------------------------------------------------------------------------------

import numpy as np  # noqa: E402

from headrace_math.kernels.cpu.logical import LogicalNot, _maker  # noqa: E402
from headrace_math.reference.logical import REFERENCES  # noqa: E402

BROADCASTS = [
    ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((1,), (4,)), ((4,), (1,)),
    ((3,), (2, 3)), ((4, 1, 3), (1, 5, 1)), ((0, 3), (3,)), ((2, 0), (2, 1)), ((1,), (1,)),
    ((2, 3, 4, 5), (3, 1, 5)), ((7, 9), (7, 9)),
]


def _bools(shape, seed):
    return np.random.default_rng(seed).random(shape) < 0.5


@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("xs, ys", BROADCASTS)
def test_binary_kernel(check, op, xs, ys):
    check(op, {"X": _bools(xs, 0), "Y": _bools(ys, 1)})


@pytest.mark.parametrize("shape", [(3, 4), (1,), (0, 2), (17,)])
def test_not_kernel(check, shape):
    check("logical_not", {"X": _bools(shape, 2)})


@pytest.mark.parametrize("op", BINARY_OPS)
def test_truth_tables(check, op):
    x, y = np.array([False, False, True, True]), np.array([False, True, False, True])
    out = check(op, {"X": x, "Y": y})["Out"]
    assert out.tolist() == {"logical_and": [False, False, False, True],
                            "logical_or": [False, True, True, True],
                            "logical_xor": [False, True, True, False]}[op]


def test_any_nonzero_byte_is_true():
    # A bool array may hold bytes other than 0/1 (a view of uint8 data): still true.
    x = np.array([0, 1, 2, 255], np.uint8).view(bool)
    y = np.ones(4, bool)
    for op, expected in [("logical_and", [0, 1, 1, 1]), ("logical_xor", [1, 0, 0, 0]),
                         ("logical_or", [1, 1, 1, 1])]:
        out = _maker({"logical_and": 0, "logical_or": 1, "logical_xor": 2}[op], op)({})(x, y)[0]
        assert out.view(np.uint8).tolist() == expected
    assert LogicalNot()(x)[0].view(np.uint8).tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("op", ALL_OPS)
def test_odd_layouts_directly(op, odd_layouts, make_kernel):
    x, y = _bools((4, 6), 3), _bools((6,), 4)
    binary = op != "logical_not"
    inputs = {"X": x, "Y": y} if binary else {"X": x}
    expected = REFERENCES[op](inputs, {})["Out"]
    kernel = make_kernel(op)
    for (lx, vx), (ly, vy) in zip(odd_layouts(x), odd_layouts(y)[::-1]):
        (out,) = kernel(vx, vy) if binary else kernel(vx)
        assert out.dtype == bool and out.flags.c_contiguous
        np.testing.assert_array_equal(out, expected, err_msg=f"X {lx}, Y {ly}")


@pytest.mark.parametrize("op", ALL_OPS)
def test_zero_dim_directly(op, make_kernel):
    x = np.array(True)
    out = make_kernel(op)(x, np.array([False, True])) if op != "logical_not" \
        else make_kernel(op)(x)
    inputs = {"X": x, "Y": np.array([False, True])} if op != "logical_not" else {"X": x}
    np.testing.assert_array_equal(out[0], REFERENCES[op](inputs, {})["Out"])


@pytest.mark.parametrize("op", BINARY_OPS)
@pytest.mark.parametrize("xs, ys", [((2, 3), (4,)), ((2, 3), (3, 2)), ((3,), (2, 2))])
def test_kernel_rejects_mismatched_shapes(op, xs, ys, make_kernel):
    with pytest.raises(ValueError, match=rf"{op}: X\[.*\] and Y\[.*\] cannot be broadcast"):
        make_kernel(op)(np.ones(xs, bool), np.ones(ys, bool))


@pytest.mark.parametrize("op, slot", [(op, s) for op in BINARY_OPS for s in ("X", "Y")]
                         + [("logical_not", "X")])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_kernel_rejects_non_bool(op, slot, dtype, make_kernel):
    args = {"X": np.ones(2, bool), "Y": np.ones(2, bool)}
    args[slot] = np.ones(2, dtype)
    kernel = make_kernel(op)
    with pytest.raises(TypeError, match=rf"{op}: {slot} has dtype {dtype}, expected bool"):
        kernel(args["X"], args["Y"]) if op != "logical_not" else kernel(args["X"])
