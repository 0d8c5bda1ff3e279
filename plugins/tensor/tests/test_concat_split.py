"""concat and split: axis handling, unknown dims, piece sizes and counts."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


def concat(shapes, axis=0, dtype="float32", inputs=None):
    ins = {"X": [(s, dtype) for s in shapes], **(inputs or {})}
    return infer_shapes("concat", ins, attrs={"axis": axis})["Out"][0]


@pytest.mark.parametrize("shapes, axis, expected", [
    ([[2, 3], [4, 3]], 0, (6, 3)),
    ([[2, 3], [2, 5], [2, 1]], 1, (2, 9)),
    ([[2, 3], [2, 5]], -1, (2, 8)),
    ([[2, 3, 4], [2, 3, 4]], -3, (4, 3, 4)),
    ([[-1, 3], [4, 3]], 0, (-1, 3)),
    ([[-1, 3], [4, 3]], 1, (4, 6)),  # the unknown dim must equal 4
    ([[-1, 3], [-1, -1]], 1, (-1, -1)),
    ([[7]], 0, (7,)),
])
def test_concat(shapes, axis, expected):
    assert concat(shapes, axis) == (expected, "float32")


def test_concat_keeps_lod_level_of_the_first_input():
    prog, _ = build_op("concat", {"X": [([-1, 2], "int64", 1), ([-1, 2], "int64", 1)]})
    out = prog.global_block().var("out_out_0")
    assert (out.shape, out.dtype, out.lod_level) == ((-1, 2), "int64", 1)


def test_concat_axis_tensor_leaves_every_dim_unknown():
    tensor = {"AxisTensor": ([1], "int32")}
    assert concat([[2, 3], [2, 3]], inputs=tensor) == ((-1, -1), "float32")
    with pytest.raises(ShapeError, match=r"'AxisTensor' \(axistensor_0\) must hold exactly one"):
        concat([[2, 3], [2, 3]], inputs={"AxisTensor": ([2], "int32")})


@pytest.mark.parametrize("shapes, axis, match", [
    ([[2, 3], [2, 4]], 0, r"differ in dim 1, which is not the concat axis 0(.|\n)*"
                          r"expected: dim 1 = 3 \(x_0 \[2, 3\]\)(.|\n)*found:    4 \(x_1"),
    ([[2, 3], [2, 3, 1]], 0, r"must share one rank; x_1 differs from x_0"),
    ([[2, 3], [2, 3]], 2, r"'axis' is out of range for a rank-2 input"),
    ([[2, 3], [2, 3]], -3, r"'axis' is out of range(.|\n)*axis in \[-2, 1\]"),
    ([[], []], 0, r"input 'X' \(x_0\) is 0-D"),
])
def test_concat_errors(shapes, axis, match):
    with pytest.raises(ShapeError, match=match):
        concat(shapes, axis)


def test_concat_dtypes_must_agree():
    with pytest.raises(ShapeError, match=r"share one dtype; x_1 differs(.|\n)*found:    int64"):
        infer_shapes("concat", {"X": [([2], "float32"), ([2], "int64")]})


def test_concat_needs_inputs():
    with pytest.raises(OpValidationError, match=r"missing input 'X'"):
        infer_shapes("concat", {})


# -- split -----------------------------------------------------------------------------------

def split(x, n_out, attrs, inputs=None, lod_level=0):
    ins = {"X": (x, "float32", lod_level), **(inputs or {})}
    return [s for s, _ in infer_shapes("split", ins, {"Out": n_out}, attrs)["Out"]]


@pytest.mark.parametrize("x, n_out, attrs, expected", [
    ([6, 4], 3, {"num": 3}, [(2, 4)] * 3),
    ([6, 4], 2, {"num": 2, "axis": 1}, [(6, 2)] * 2),
    ([6, 4], 2, {"num": 2, "axis": -1}, [(6, 2)] * 2),
    ([-1, 4], 2, {"num": 2}, [(-1, 4)] * 2),
    ([3, 6], 3, {"sections": [1, -1, 2], "axis": 1}, [(3, 1), (3, 3), (3, 2)]),
    ([3, 6], 2, {"sections": [4, 2], "axis": -1}, [(3, 4), (3, 2)]),
    ([5, 2], 2, {"sections": [5, 0]}, [(5, 2), (0, 2)]),
    ([-1, 2], 2, {"sections": [3, -1]}, [(3, 2), (-1, 2)]),
    ([2, 7], 1, {"sections": [-1], "axis": 1}, [(2, 7)]),
])
def test_split(x, n_out, attrs, expected):
    assert split(x, n_out, attrs) == expected


@pytest.mark.parametrize("axis, lod_level", [(0, 0), (1, 2)])
def test_split_keeps_lod_only_when_rows_are_not_split(axis, lod_level):
    prog, op = build_op("split", {"X": ([4, 4], "float32", 2)}, {"Out": 2},
                        {"num": 2, "axis": axis})
    for name in op.output("Out"):
        assert prog.global_block().var(name).lod_level == lod_level


def test_split_tensors_leave_their_dims_unknown():
    sections = {"SectionsTensorList": [([1], "int32")] * 2}
    assert split([3, 6], 2, {"sections": [-1, 2], "axis": 1}, sections) == [(3, -1), (3, 2)]
    axis = {"AxisTensor": ([1], "int64")}
    assert split([3, 6], 3, {"num": 3}, axis) == [(-1, -1)] * 3


@pytest.mark.parametrize("x, n_out, attrs, match", [
    ([6, 4], 4, {"num": 4}, r"cannot be split equally into 4 pieces(.|\n)*found:    size 6"),
    ([6, 4], 2, {"num": 3}, r"must hold 'num' variables(.|\n)*expected: 3 variables"),
    ([6, 4], 3, {"sections": [1, 5]}, r"one variable per section(.|\n)*found:    3"),
    ([6, 4], 2, {"sections": [-1, -1]}, r"sizes >= 0 and at most one -1"),
    ([6, 4], 2, {"sections": [-2, 8]}, r"sizes >= 0 and at most one -1"),
    ([6, 4], 2, {"sections": [2, 3]}, r"must sum to the split axis size(.|\n)*expected: sum 6"
                                      r"(.|\n)*found:    sections=\[2, 3\] \(sum 5\)"),
    ([6, 4], 2, {"sections": [7, -1]}, r"asks for more than input 'X' \(x_0\) holds"),
    ([6, 4], 2, {"sections": [3, 3], "num": 2}, r"exactly one of 'num'"),
    ([6, 4], 2, {}, r"exactly one of 'num'"),
    ([6, 4], 2, {"num": 2, "axis": 2}, r"'axis' is out of range for a rank-2 input"),
    ([], 1, {"num": 1}, r"is 0-D"),
])
def test_split_errors(x, n_out, attrs, match):
    with pytest.raises(ShapeError, match=match):
        split(x, n_out, attrs)


def test_split_sections_tensor_count():
    with pytest.raises(ShapeError, match=r"'SectionsTensorList' must hold one tensor per "
                                         r"section(.|\n)*expected: 2 tensors"):
        split([3, 6], 2, {"sections": [-1, 2]}, {"SectionsTensorList": [([1], "int32")]})


def test_split_sections_tensors_hold_one_element():
    with pytest.raises(ShapeError, match=r"'SectionsTensorList' \(sectionstensorlist_0\) must "
                                         r"hold exactly one element"):
        split([3, 6], 2, {"sections": [-1, 2]}, {"SectionsTensorList": [([2], "int32")] * 2})


def test_split_num_must_not_be_negative():
    with pytest.raises(OpValidationError, match=r"'num' must be >= 0"):
        split([6], 1, {"num": -1})
