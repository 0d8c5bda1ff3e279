"""softmax: shape and dtype inference."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


@pytest.mark.parametrize("shape, axis", [
    ((2, 3), -1), ((2, 3), 0), ((2, 3), 1), ((4, 5, 6), -2), ((4, 5, 6), -3),
    ((-1, 10), -1), ((-1, -1, 7), 1), ((7,), 0), ((), -1), ((), 0),
])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_out_is_like_x(shape, axis, dtype):
    out = infer_shapes("softmax", {"X": (shape, dtype)}, attrs={"axis": axis})
    assert out == {"Out": [(shape, dtype)]}


def test_out_keeps_the_lod_of_x():
    prog, op = build_op("softmax", {"X": ([-1, 8], "float32", 2)})
    assert prog.global_block().var(op.output("Out")[0]).lod_level == 2


@pytest.mark.parametrize("shape, axis", [((2, 3), 2), ((2, 3), -3), ((5,), 1), ((), 1)])
def test_axis_out_of_range(shape, axis):
    with pytest.raises(ShapeError, match=r"attribute 'axis' is out of range"):
        infer_shapes("softmax", {"X": (shape, "float32")}, attrs={"axis": axis})


@pytest.mark.parametrize("inputs, attrs, match", [
    ({"X": ([2, 3], "int64")}, {}, r"input 'X' \(x_0\) has an unsupported dtype"),
    ({"X": ([2, 3], "float32")}, {"axis": 1.5}, r"attribute 'axis' is not of type int"),
    ({"X": ([2, 3], "float32")}, {"data_format": "NCDHW"}, r"must be one of"),
    ({"X": ([2, 3], "float32")}, {"dim": 1}, r"unknown attribute 'dim'"),
])
def test_validation_errors(inputs, attrs, match):
    with pytest.raises(OpValidationError, match=match):
        infer_shapes("softmax", inputs, attrs=attrs)
