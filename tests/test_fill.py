"""fill_constant, fill_zeros_like, fill_any_like (core ops): shapes, dtype enums, value checks,
kernels."""
import pytest

from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.ops import default_registry
from headrace.testing import build_op, infer_shapes

ELEMENT_TYPES = [n for n in dt.DTYPES if n != "size_t"]


def fill(attrs=None, inputs=None):
    (out,) = infer_shapes("fill_constant", inputs, attrs=attrs)["Out"]
    return out


@pytest.mark.parametrize("op_type", ["fill_constant", "fill_zeros_like", "fill_any_like"])
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


# == kernels ===================================================================================

import numpy as np  # noqa: E402

from headrace.errors import OpError  # noqa: E402
from headrace.runtime import Tensor, TensorArray  # noqa: E402
from headrace.testing import check_op, run_op  # noqa: E402
from headrace.core_ops.kernels.cpu import fill as kfill  # noqa: E402

NUMPY_TYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
               "float64", "complex64", "complex128"]


def fill_out(attrs, inputs=None):
    (t,) = run_op("fill_constant", inputs or {}, attrs=attrs)["Out"]
    return t.numpy()


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_fill_constant_kernel_dtypes(name):
    out = fill_out({"shape": [2, 3], "dtype": dt.to_proto(name), "value": 3.0})
    assert out.dtype == np.dtype(name) and out.shape == (2, 3)
    np.testing.assert_array_equal(out, np.full((2, 3), 3, name))


@pytest.mark.parametrize("name, value, expected", [
    ("int32", 3.7, 3), ("int32", -3.7, -3), ("int64", -0.5, 0), ("uint8", 255.0, 255),
    ("bool", 0.0, False), ("bool", 0.25, True), ("bool", float("nan"), True),
    ("float16", 1e5, float("inf")), ("float64", 0.1, float(np.float32(0.1))),
])
def test_fill_constant_value_conversion(name, value, expected):
    # float attributes are float32 (0.1 arrives rounded); float to int truncates toward zero.
    out = fill_out({"shape": [2], "dtype": dt.to_proto(name), "value": value})
    np.testing.assert_array_equal(out, np.full(2, expected, name))


@pytest.mark.parametrize("name, text, expected", [
    ("int64", "9223372036854775807", 2**63 - 1), ("int64", "-7", -7), ("int32", "2.9", 2),
    ("float32", "inf", float("inf")), ("float64", "-1e-300", -1e-300), ("bool", "0", False),
])
def test_fill_constant_str_value_is_exact(name, text, expected):
    out = fill_out({"shape": [1], "dtype": dt.to_proto(name), "str_value": text, "value": 5.0})
    np.testing.assert_array_equal(out, np.array([expected], name))


def test_fill_constant_nan_str_value():
    assert np.isnan(fill_out({"shape": [3], "dtype": 6, "str_value": "nan"})).all()


@pytest.mark.parametrize("name, attrs, match", [
    ("int8", {"value": 300.0}, r"value 300 is out of the range of int8"),
    ("int32", {"str_value": "inf"}, r"value inf cannot be stored in int32"),
    ("uint8", {"value": -1.0}, r"out of the range of uint8"),
])
def test_fill_constant_value_that_does_not_fit(name, attrs, match):
    with pytest.raises(OpError, match=match):
        fill_out({"shape": [1], "dtype": dt.to_proto(name), **attrs})


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_fill_constant_shape_from_tensors(index_type):
    out = fill_out({"shape": [], "value": 2.0},
                   {"ShapeTensor": np.array([2, 0, 3], index_type)})
    assert out.shape == (2, 0, 3)
    out = fill_out({"shape": [-1, 2], "value": 2.0, "dtype": 3},
                   {"ShapeTensorList": [np.array([4], index_type), np.array(2, index_type)]})
    np.testing.assert_array_equal(out, np.full((4, 2), 2, "int64"))


def test_fill_constant_value_tensor_beats_the_attributes():
    out = fill_out({"shape": [2], "value": 1.0, "str_value": "3", "dtype": 2},
                   {"ValueTensor": np.array([7.9], "float64")})
    np.testing.assert_array_equal(out, np.array([7, 7], "int32"))


def test_fill_constant_zero_d_and_fresh_arrays():
    kernel = kfill.FillConstant({"dtype": 5, "shape": [], "value": 1.5, "str_value": ""})
    (a,), (b,) = kernel(), kernel()
    assert a.shape == () and a == 1.5 and a is not b


@pytest.mark.parametrize("args, error, match", [
    ((np.array([2, -1]),), ValueError, r"ShapeTensor has a negative dim"),
    ((np.array([2.0]),), TypeError, r"'ShapeTensor' must hold integers"),
    ((None, [np.array([1, 2])]), ValueError, r"'ShapeTensorList\[0\]' must hold exactly one"),
    ((None, [], np.array([1.0, 2.0])), ValueError, r"ValueTensor must hold one number"),
    ((None, [], np.array(["a"])), ValueError, r"ValueTensor must hold one number"),
])
def test_fill_constant_direct_bad_inputs(args, error, match):
    kernel = kfill.FillConstant({"dtype": 5, "shape": [2], "value": 0.0, "str_value": ""})
    with pytest.raises(error, match=match):
        kernel(*args)


@pytest.mark.parametrize("attrs, error, match", [
    ({"dtype": 22}, TypeError, r"dtype 22 \(bfloat16\) has no CPU kernel"),
    ({"dtype": 5, "str_value": "x"}, ValueError, r"str_value 'x' is not a number"),
])
def test_fill_constant_direct_bad_attributes(attrs, error, match):
    with pytest.raises(error, match=match):
        kfill.FillConstant({"shape": [1], "value": 0.0, "str_value": "", **attrs})


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_fill_zeros_like_kernel(name):
    x = (np.arange(6) % 3).astype(name).reshape(3, 2)
    check_op("fill_zeros_like", {"X": x}, {"Out": np.zeros((3, 2), name)})


def test_fill_zeros_like_non_contiguous_and_lod():
    x = np.arange(12.0).reshape(3, 4)[:, ::2]
    check_op("fill_zeros_like", {"X": Tensor(x, [[0, 1, 3]])},
             {"Out": Tensor(np.zeros((3, 2)), [[0, 1, 3]])})


def test_fill_zeros_like_tensor_array_direct():
    arr = TensorArray([Tensor(np.ones((2, 2), "float32"), [[0, 2]]), None,
                       Tensor(np.ones(3, "int64"))])
    (out,) = kfill.FillZerosLike({})(arr)
    assert isinstance(out, TensorArray) and out[1] is None
    np.testing.assert_array_equal(out[0].data, np.zeros((2, 2), "float32"))
    assert out[0].lod == [[0, 2]] and out[2].data.dtype == np.int64
    with pytest.raises(TypeError, match=r"fill_zeros_like: X must be a tensor"):
        kfill.FillZerosLike({})("not a tensor")


# -- fill_any_like (paddle.static.gradients' seed) ---------------------------------------------

@pytest.mark.parametrize("spec, attrs, want", [
    (([2, 3], "float32"), {"value": 1.0}, ((2, 3), "float32")),
    (([], "float64"), {"value": 1.0}, ((), "float64")),                # a 0-D target
    (([-1, 4], "float32", 1), {"dtype": dt.to_proto("int64")}, ((-1, 4), "int64")),
])
def test_fill_any_like_shape_rule(spec, attrs, want):
    (out,) = infer_shapes("fill_any_like", {"X": spec}, attrs=attrs)["Out"]
    assert out == want


def test_fill_any_like_keeps_the_lod_and_checks_its_dtype():
    prog, _ = build_op("fill_any_like", {"X": ([-1, 3], "float32", 1)}, attrs={"value": 2.0})
    assert prog.global_block().var("out_out_0").lod_level == 1
    with pytest.raises(OpValidationError, match="'dtype' must be -1 .X's dtype. or an element"):
        infer_shapes("fill_any_like", {"X": ([2], "float32")}, attrs={"dtype": 99})
    with pytest.raises(ShapeError, match=r"input 'X' \(x_0\) is a lod_tensor_array variable"):
        infer_shapes("fill_any_like", {"X": {"shape": [2], "dtype": "float32",
                                             "type": "lod_tensor_array"}})


@pytest.mark.parametrize("x, attrs, want", [
    (np.zeros((2, 3), "float32"), {"value": 1.0}, np.ones((2, 3), "float32")),
    (np.zeros((), "float64"), {"value": -2.5}, np.array(-2.5)),
    (np.zeros((0, 2), "float32"), {"value": 1.0}, np.zeros((0, 2), "float32")),
    (np.zeros(3, "float32"), {"value": 3.7, "dtype": dt.to_proto("int32")},
     np.full(3, 3, "int32")),
])
def test_fill_any_like_kernel(x, attrs, want):
    check_op("fill_any_like", {"X": x}, {"Out": want}, attrs=attrs)
    (out,) = run_op("fill_any_like", {"X": x}, attrs=attrs)["Out"]
    assert out.numpy().dtype == want.dtype and out.numpy().shape == want.shape


def test_fill_any_like_value_that_does_not_fit():
    with pytest.raises(OpError, match="out of the range of int8"):
        run_op("fill_any_like", {"X": np.zeros(2, "float32")},
               attrs={"value": 300.0, "dtype": dt.to_proto("int8")})
