"""uniform_random and gaussian_random: shapes, float dtypes, distribution parameters."""
import pytest

from headrace import dtypes as dt
from headrace.errors import OpValidationError, ShapeError
from headrace.ops import default_registry
from headrace.testing import infer_shapes

RANDOM_OPS = ["uniform_random", "gaussian_random"]


def rand(op_type, attrs=None, inputs=None):
    (out,) = infer_shapes(op_type, inputs, attrs=attrs)["Out"]
    return out


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_no_gradient_and_defaults(op_type):
    opdef = default_registry().get(op_type)
    assert not opdef.differentiable
    assert opdef.attrs["seed"].default == 0 and opdef.attrs["dtype"].default == 5


@pytest.mark.parametrize("op_type", RANDOM_OPS)
@pytest.mark.parametrize("shape", [[2, 3], [1], [], [4, 1, 5, 6]])
def test_shape_from_attribute(op_type, shape):
    assert rand(op_type, {"shape": shape}) == (tuple(shape), "float32")


@pytest.mark.parametrize("op_type", RANDOM_OPS)
@pytest.mark.parametrize("name", dt.FLOAT_DTYPES)
def test_float_dtypes(op_type, name):
    assert rand(op_type, {"shape": [3], "dtype": dt.to_proto(name)}) == ((3,), name)


@pytest.mark.parametrize("op_type", RANDOM_OPS)
@pytest.mark.parametrize("value", [2, 3, 0, 42])  # int32, int64, bool, not a type
def test_non_float_dtype_is_an_error(op_type, value):
    with pytest.raises(OpValidationError, match=r"'dtype' is not a valid element type; valid: "
                                                r"4 \(float16\), 5 \(float32\), 6 \(float64\), "
                                                r"22 \(bfloat16\)"):
        rand(op_type, {"shape": [3], "dtype": value})


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_shape_tensors(op_type):
    assert rand(op_type, {}, {"ShapeTensor": ([2], "int64")}) == ((-1, -1), "float32")
    tensors = {"ShapeTensorList": [([1], "int32")] * 3}
    assert rand(op_type, {"shape": [-1, 4, -1]}, tensors) == ((-1, 4, -1), "float32")


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_negative_dim_without_tensor(op_type):
    with pytest.raises(ShapeError, match=r"'shape' has negative dims"):
        rand(op_type, {"shape": [-1, 3]})


@pytest.mark.parametrize("op_type", RANDOM_OPS)
def test_negative_seed(op_type):
    with pytest.raises(OpValidationError, match=r"'seed' must be >= 0 \(got -3\)"):
        rand(op_type, {"shape": [1], "seed": -3})


@pytest.mark.parametrize("lo, hi", [(1.0, 1.0), (2.0, -2.0)])
def test_uniform_min_below_max(lo, hi):
    with pytest.raises(ShapeError, match=r"'min' must be less than 'max'(.|\n)*"
                                         rf"found:    min={lo}, max={hi}"):
        rand("uniform_random", {"shape": [2], "min": lo, "max": hi})


@pytest.mark.parametrize("attrs, match", [
    ({"min": float("-inf")}, r"'min' must be finite"),
    ({"max": float("nan")}, r"'max' must be finite"),
    ({"diag_num": -1}, r"'diag_num' must be >= 0"),
    ({"diag_step": -1}, r"'diag_step' must be >= 0"),
])
def test_uniform_attribute_checks(attrs, match):
    with pytest.raises(OpValidationError, match=match):
        rand("uniform_random", {"shape": [2], **attrs})


def test_uniform_diagonal():
    assert rand("uniform_random", {"shape": [3, 3], "diag_num": 3, "diag_step": 3}) == \
        ((3, 3), "float32")
    with pytest.raises(ShapeError, match=r"diagonal(.|\n)*numel\(Out\) = 9"):
        rand("uniform_random", {"shape": [3, 3], "diag_num": 4, "diag_step": 3})


@pytest.mark.parametrize("std", [0.0, 0.01, 10.0])
def test_gaussian_std(std):
    assert rand("gaussian_random", {"shape": [5], "mean": -2.0, "std": std}) == ((5,), "float32")


@pytest.mark.parametrize("std", [-0.1, float("inf"), float("nan")])
def test_gaussian_bad_std(std):
    with pytest.raises(OpValidationError, match=r"'std' must be finite and >= 0"):
        rand("gaussian_random", {"shape": [5], "std": std})


def test_gaussian_rejects_uniform_attributes():
    with pytest.raises(OpValidationError, match=r"unknown attribute 'min'"):
        rand("gaussian_random", {"shape": [5], "min": 0.0})
