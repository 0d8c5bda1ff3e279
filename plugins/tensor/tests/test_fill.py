"""fill_constant, assign_value, fill_zeros_like: shapes, dtype enums, value checks."""
import pytest

from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.ops import default_registry
from headrace.testing import build_op, infer_shapes

ELEMENT_TYPES = [n for n in dt.DTYPES if n != "size_t"]


def fill(attrs=None, inputs=None):
    (out,) = infer_shapes("fill_constant", inputs, attrs=attrs)["Out"]
    return out


@pytest.mark.parametrize("op_type", ["fill_constant", "assign_value", "fill_zeros_like"])
def test_no_gradient(op_type):
    assert not default_registry().get(op_type).differentiable


# -- fill_constant ---------------------------------------------------------------------------

def test_fill_constant_defaults_to_float32():
    assert fill({"shape": [2, 3], "value": 1.0}) == ((2, 3), "float32")


def test_fill_constant_zero_d():
    assert fill({"shape": []}) == ((), "float32")


@pytest.mark.parametrize("name", ELEMENT_TYPES)
def test_fill_constant_dtype_enum(name):
    assert fill({"shape": [4], "dtype": dt.to_proto(name)}) == ((4,), name)


@pytest.mark.parametrize("value", [99, 7, 19, -1])  # not a type, LOD_TENSOR, SIZE_T
def test_fill_constant_bad_dtype_lists_the_valid_ones(value):
    with pytest.raises(OpValidationError, match=r"'dtype' is not a valid element type; "
                                                r"valid: 0 \(bool\).*5 \(float32\)"):
        fill({"shape": [1], "dtype": value})


@pytest.mark.parametrize("shape", [[2, -1], [-3]])
def test_fill_constant_negative_dim_without_shape_tensor(shape):
    with pytest.raises(ShapeError, match=r"'shape' has negative dims(.|\n)*expected: dims >= 0"):
        fill({"shape": shape})


@pytest.mark.parametrize("attr_shape, expected", [([], (-1, -1, -1)), ([2, -1, 4], (2, -1, 4))])
def test_fill_constant_shape_tensor(attr_shape, expected):
    got = fill({"shape": attr_shape}, {"ShapeTensor": ([3], "int64")})
    assert got == (expected, "float32")


def test_fill_constant_shape_tensor_of_unknown_length():
    assert fill({"shape": [5, -1]}, {"ShapeTensor": ([-1], "int32")}) == ((5, -1), "float32")
    with pytest.raises(ShapeError, match=r"length of input 'ShapeTensor' \(shapetensor_0\) is "
                                         r"unknown"):
        fill({}, {"ShapeTensor": ([-1], "int32")})


def test_fill_constant_shape_tensor_must_be_1d_int():
    with pytest.raises(ShapeError, match=r"'ShapeTensor' \(shapetensor_0\) must be 1-D"):
        fill({}, {"ShapeTensor": ([1, 2], "int32")})
    with pytest.raises(OpValidationError, match=r"'ShapeTensor'.*unsupported dtype"):
        fill({}, {"ShapeTensor": ([2], "float32")})


@pytest.mark.parametrize("attr_shape, expected", [([], (-1, -1)), ([7, -1], (7, -1))])
def test_fill_constant_shape_tensor_list(attr_shape, expected):
    tensors = [([1], "int32"), ([], "int64")]
    assert fill({"shape": attr_shape}, {"ShapeTensorList": tensors}) == (expected, "float32")


def test_fill_constant_shape_tensor_list_elements_hold_one_value():
    with pytest.raises(ShapeError, match=r"'ShapeTensorList' \(shapetensorlist_1\) must hold "
                                         r"exactly one element"):
        fill({}, {"ShapeTensorList": [([1], "int32"), ([2], "int32")]})


@pytest.mark.parametrize("slot, spec", [("ShapeTensor", ([2], "int32")),
                                        ("ShapeTensorList", [([1], "int32")] * 2)])
def test_fill_constant_shape_attr_must_match_the_tensors(slot, spec):
    with pytest.raises(ShapeError, match=rf"'shape' and input '{slot}' disagree(.|\n)*"
                                         r"expected: 2 dims"):
        fill({"shape": [1, 2, 3]}, {slot: spec})


@pytest.mark.parametrize("text", ["1.5", "-1e30", "inf", "-inf", "nan", "9223372036854775807"])
def test_fill_constant_str_value(text):
    assert fill({"shape": [1], "str_value": text, "dtype": 3}) == ((1,), "int64")


def test_fill_constant_bad_str_value():
    with pytest.raises(OpValidationError, match=r"'str_value' must be empty or a number"):
        fill({"shape": [1], "str_value": "one"})


@pytest.mark.parametrize("attrs, match", [
    ({"value": "1"}, r"'value' is not of type float"),
    ({"value": 1e39}, r"'value' has a bad value: .*float32"),
    ({"force_cpu": 1}, r"'force_cpu' is not of type bool"),
    ({"shape": [2.0]}, r"'shape' is not of type longs"),
    ({"fill_value": 1.0}, r"unknown attribute 'fill_value'"),
])
def test_fill_constant_attribute_types(attrs, match):
    with pytest.raises(OpValidationError, match=match):
        fill({"shape": [1], **attrs})


def test_fill_constant_value_tensor():
    assert fill({"shape": [2]}, {"ValueTensor": ([1], "float32")}) == ((2,), "float32")
    with pytest.raises(ShapeError, match=r"'ValueTensor' \(valuetensor_0\) must hold exactly "
                                         r"one element"):
        fill({"shape": [2]}, {"ValueTensor": ([2], "float32")})


# -- assign_value ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, key, values", [
    ("float32", "fp32_values", [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]),
    ("float64", "fp64_values", [0.5] * 6),
    ("int32", "int32_values", [1, 2, 3, 4, 5, 6]),
    ("int64", "int64_values", [2**40] * 6),
    ("bool", "bool_values", [True, False] * 3),
])
def test_assign_value(name, key, values):
    (out,) = infer_shapes("assign_value", attrs={"shape": [2, 3], "dtype": dt.to_proto(name),
                                                 key: values})["Out"]
    assert out == ((2, 3), name)


def test_assign_value_scalar():
    attrs = {"shape": [], "dtype": 2, "int32_values": [7]}
    assert infer_shapes("assign_value", attrs=attrs)["Out"] == [((), "int32")]


def test_assign_value_count_must_match_shape():
    with pytest.raises(ShapeError, match=r"'fp32_values' must hold one value per element of "
                                         r"shape \[2, 3\](.|\n)*expected: 6 values(.|\n)*"
                                         r"found:    5 values"):
        infer_shapes("assign_value", attrs={"shape": [2, 3], "fp32_values": [1.0] * 5})


def test_assign_value_names_the_list_that_was_given_instead():
    attrs = {"shape": [2], "dtype": 2, "fp32_values": [1.0, 2.0]}
    with pytest.raises(ShapeError, match=r"for dtype int32; fp32_values has 2"):
        infer_shapes("assign_value", attrs=attrs)


def test_assign_value_needs_a_known_shape():
    with pytest.raises(ShapeError, match=r"'shape' of a constant must be fully known"):
        infer_shapes("assign_value", attrs={"shape": [-1], "fp32_values": [1.0]})


@pytest.mark.parametrize("value", [4, 1, 99])  # float16 and int16 have no values attribute
def test_assign_value_dtype_choices(value):
    with pytest.raises(OpValidationError, match=r"valid: 0 \(bool\), 2 \(int32\), 3 \(int64\), "
                                                r"5 \(float32\), 6 \(float64\)"):
        infer_shapes("assign_value", attrs={"shape": [1], "dtype": value})


# -- fill_zeros_like -------------------------------------------------------------------------

@pytest.mark.parametrize("spec", [
    ([2, 3], "float32"), ([-1, 3], "int64", 1), ([], "float64"),
    {"shape": [-1, 4], "dtype": "float16", "type": "lod_tensor_array"},
])
def test_fill_zeros_like(spec):
    prog, op = build_op("fill_zeros_like", {"X": spec})
    x, out = (prog.global_block().var(n) for n in ("x_0", "out_out_0"))
    assert (out.shape, out.dtype, out.lod_level, out.kind) == \
        (x.shape, x.dtype, x.lod_level, x.kind)


def test_fill_zeros_like_of_a_non_tensor():
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) is a step_scopes variable"):
        infer_shapes("fill_zeros_like", {"X": {"type": "step_scopes"}})
