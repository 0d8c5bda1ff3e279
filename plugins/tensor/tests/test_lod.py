"""lod_reset: where the new LoD comes from, its level count, target_lod checks."""
import pytest

from headrace.errors import ShapeError
from headrace.testing import build_op


def lod_reset(x, attrs=None, y=None):
    inputs = {"X": x} if y is None else {"X": x, "Y": y}
    prog, _ = build_op("lod_reset", inputs, attrs=attrs)
    out = prog.global_block().var("out_out_0")
    return out.shape, out.dtype, out.lod_level


@pytest.mark.parametrize("x, attrs, y, lod_level", [
    (([6, 3], "float32"), {"target_lod": [0, 2, 6]}, None, 1),
    (([6, 3], "float32", 2), {"target_lod": [0, 2, 6]}, None, 1),
    (([6, 3], "float32", 1), {"target_lod": [0, 1, 6], "append": True}, None, 2),
    (([6, 3], "float32"), {"target_lod": [0, 6], "append": True}, None, 1),
    (([6, 3], "float32"), None, ([-1, 1], "float32", 3), 3),  # Y's LoD
    (([6, 3], "float32", 1), {"append": True}, ([-1, 1], "float32", 2), 2),
    (([6, 3], "float32"), None, ([3], "int32"), 1),  # Y's data as offsets
    (([6, 3], "float32", 1), {"append": True}, ([3], "int64"), 2),
])
def test_lod_reset_levels(x, attrs, y, lod_level):
    assert lod_reset(x, attrs, y) == ((6, 3), "float32", lod_level)


def test_lod_reset_unknown_rows_skip_the_end_check():
    assert lod_reset(([-1, 4], "int64"), {"target_lod": [0, 3, 5]}) == ((-1, 4), "int64", 1)


@pytest.mark.parametrize("target, match", [
    ([], r"must come from attribute 'target_lod'"),
    ([1, 6], r"must be offsets: start at 0"),
    ([0, 4, 2, 6], r"must be offsets(.|\n)*found:    target_lod=\[0, 4, 2, 6\]"),
    ([0, 2, 5], r"must end at the number of rows of input 'X' \(x_0\)(.|\n)*last offset 6"),
])
def test_lod_reset_target_lod_errors(target, match):
    with pytest.raises(ShapeError, match=match):
        lod_reset(([6, 3], "float32"), {"target_lod": target})


def test_lod_reset_offsets_from_y_must_be_ints():
    with pytest.raises(ShapeError, match=r"'Y' \(y_0\) has no LoD, so its data must be the "
                                         r"offsets(.|\n)*found:    float32"):
        lod_reset(([6, 3], "float32"), None, ([3], "float32"))
