"""cast: dtype enum attributes, in_dtype consistency, shape and LoD kept."""
import pytest

from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes

P = dt.to_proto


@pytest.mark.parametrize("src, dst", [
    ("float32", "float16"), ("float32", "int64"), ("int64", "float32"), ("bool", "float32"),
    ("float64", "bool"), ("int32", "int32"), ("uint8", "bfloat16"), ("float32", "complex64"),
])
def test_cast(src, dst):
    out = infer_shapes("cast", {"X": ([4, -1, 3], src)},
                       attrs={"in_dtype": P(src), "out_dtype": P(dst)})["Out"]
    assert out == [((4, -1, 3), dst)]


def test_cast_keeps_lod_level():
    prog, _ = build_op("cast", {"X": ([-1, 1], "int64", 2)},
                       attrs={"in_dtype": P("int64"), "out_dtype": P("float32")})
    assert prog.global_block().var("out_out_0").lod_level == 2


def test_cast_in_dtype_must_match_x():
    with pytest.raises(ShapeError, match=r"'in_dtype' does not match the dtype of input 'X' "
                                         r"\(x_0\)(.|\n)*in_dtype = 5 \(float32\)(.|\n)*"
                                         r"found:    X is int64"):
        infer_shapes("cast", {"X": ([2], "int64")}, attrs={"in_dtype": 5, "out_dtype": 6})


@pytest.mark.parametrize("attr", ["in_dtype", "out_dtype"])
@pytest.mark.parametrize("value", [100, 7, 13, -1])
def test_cast_bad_enum(attr, value):
    attrs = {"in_dtype": 5, "out_dtype": 5, attr: value}
    with pytest.raises(OpValidationError, match=rf"'{attr}' is not a valid element type; "
                                                r"valid: 0 \(bool\), 1 \(int16\)"):
        infer_shapes("cast", {"X": ([2], "float32")}, attrs=attrs)


@pytest.mark.parametrize("missing", ["in_dtype", "out_dtype"])
def test_cast_attributes_are_required(missing):
    attrs = {"in_dtype": 5, "out_dtype": 5}
    del attrs[missing]
    with pytest.raises(OpValidationError, match=rf"missing required attribute '{missing}'"):
        infer_shapes("cast", {"X": ([2], "float32")}, attrs=attrs)


def test_cast_of_an_array_is_an_error():
    with pytest.raises(ShapeError, match=r"'X' \(x_0\) is a lod_tensor_array variable"):
        infer_shapes("cast", {"X": {"type": "lod_tensor_array", "dtype": "float32"}},
                     attrs={"in_dtype": 5, "out_dtype": 6})
