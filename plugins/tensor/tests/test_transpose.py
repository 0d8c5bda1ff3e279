"""transpose2: permutations, negative axes, unknown dims, XShape."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


@pytest.mark.parametrize("x, axis, expected", [
    ([2, 3, 4], [0, 2, 1], (2, 4, 3)),
    ([2, 3, 4], [2, 0, 1], (4, 2, 3)),
    ([2, 3, 4], [-1, 0, -2], (4, 2, 3)),
    ([-1, 3], [1, 0], (3, -1)),
    ([5], [0], (5,)),
    ([], [], ()),
])
def test_transpose2(x, axis, expected):
    out = infer_shapes("transpose2", {"X": (x, "float64")}, attrs={"axis": axis})
    assert out["Out"] == [(expected, "float64")]
    assert out["XShape"] == [((0,) + tuple(x), "float64")]


def test_transpose2_keeps_lod_level():
    prog, _ = build_op("transpose2", {"X": ([-1, 4], "float32", 1)}, attrs={"axis": [1, 0]})
    assert prog.global_block().var("out_out_0").lod_level == 1


@pytest.mark.parametrize("axis, match", [
    ([0, 1], r"one entry per dim of input 'X' \(x_0\)(.|\n)*expected: 3 entries"),
    ([0, 1, 1], r"not a permutation(.|\n)*each of 0..2 exactly once"),
    ([0, 1, -2], r"not a permutation"),  # -2 is 1 again
    ([0, 1, 3], r"out of range(.|\n)*entries in \[-3, 2\]"),
    ([0, 1, -4], r"out of range"),
])
def test_transpose2_errors(axis, match):
    with pytest.raises(ShapeError, match=match):
        infer_shapes("transpose2", {"X": ([2, 3, 4], "float32")}, attrs={"axis": axis})


def test_transpose2_axis_is_required():
    with pytest.raises(OpValidationError, match=r"missing required attribute 'axis'"):
        infer_shapes("transpose2", {"X": ([2, 3], "float32")})


def test_transpose2_accepts_paddles_data_format():
    out = infer_shapes("transpose2", {"X": ([2, 3], "float32")},
                       attrs={"axis": [1, 0], "data_format": "AnyLayout"})
    assert out["Out"] == [((3, 2), "float32")]
