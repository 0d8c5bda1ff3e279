"""assign_value: shapes and value checks, the kernel (a fresh copy of the constant per call)."""
import numpy as np
import pytest

from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.testing import check_op, infer_shapes
from headrace_tensor.kernels.cpu.assign_value import AssignValue


def test_no_gradient():
    from headrace.ops import default_registry
    assert not default_registry().get("assign_value").differentiable


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


# -- kernel ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, key, values", [
    ("float32", "fp32_values", [0.5, -1.25, 3.0, 4.5]),
    ("float64", "fp64_values", [0.1, 0.2, 0.3, 1e-300]),
    ("int32", "int32_values", [1, -2, 3, 2**31 - 1]),
    ("int64", "int64_values", [2**40, -(2**62), 0, 7]),
    ("bool", "bool_values", [True, False, False, True]),
])
def test_assign_value_kernel(name, key, values):
    attrs = {"shape": [2, 2], "dtype": dt.to_proto(name), key: values}
    check_op("assign_value", {}, {"Out": np.array(values, name).reshape(2, 2)}, attrs=attrs)


def test_assign_value_hands_out_copies():
    kernel = AssignValue({"shape": [2], "dtype": 5, "fp32_values": [1.0, 2.0]})
    (a,) = kernel()
    a[:] = 0  # e.g. an optimizer updating the variable in place
    np.testing.assert_array_equal(kernel()[0], [1.0, 2.0])


@pytest.mark.parametrize("attrs, match", [
    ({"shape": [3], "dtype": 5, "fp32_values": [1.0]}, r"fp32_values holds 1 values, shape "
                                                        r"\[3\] needs 3"),
    ({"shape": [1], "dtype": 4}, r"dtype 4 \(float16\) is not one of"),
    ({"shape": [-1], "dtype": 5}, r"negative dim"),
    ({"shape": [1], "dtype": 2, "int32_values": [2**40]}, r"out of the range of int32"),
])
def test_assign_value_direct_bad_attributes(attrs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        AssignValue(attrs)
