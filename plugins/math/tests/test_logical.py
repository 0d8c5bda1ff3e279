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
