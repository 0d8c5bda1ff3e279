"""The scale kernel against its NumPy reference."""
import numpy as np
import pytest

from headrace.core_ops.kernels.cpu.scale import Scale
from headrace.core_ops.reference.scale import scale as scale_ref

DTYPES = ["float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (7,), (1,), (0, 3), (2, 1, 3)])
@pytest.mark.parametrize("attrs", [{}, {"scale": 2.5, "bias": -1.0},
                                   {"scale": -0.1, "bias": 0.3, "bias_after_scale": False}])
def test_scale(check, dtype, shape, attrs):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    check("scale", {"X": x}, attrs)


def test_large_magnitudes(check):
    x = np.array([-3e38, -1e30, 1e30, 3e38, np.inf, -np.inf, np.nan], np.float32)
    check("scale", {"X": x}, {"scale": 0.5, "bias": 1.0})


@pytest.mark.parametrize("dtype", DTYPES)
def test_odd_layouts_directly(odd_layouts, dtype):
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(dtype)
    attrs = {"scale": 3.0, "bias": 0.5, "bias_after_scale": True}
    expected = scale_ref({"X": x}, attrs)["Out"]
    k = Scale(attrs)
    for label, v in odd_layouts(x):
        (out,) = k(v)
        assert out.dtype == np.dtype(dtype) and out.flags.c_contiguous, label
        np.testing.assert_array_equal(out, expected, err_msg=label)
    assert x.flags.writeable


def test_zero_dim_directly():
    # The executor feeds 0-D arrays as [1] (np.ascontiguousarray), so 0-D is checked here.
    (out,) = Scale({"scale": 2.0, "bias": 1.0, "bias_after_scale": True})(np.float64(3.0))
    assert out.shape == () and out == 7.0


@pytest.mark.parametrize("x", [np.arange(3, dtype=np.int16), np.array([True]),
                               np.zeros(2, np.float16)])
def test_unsupported_dtype_directly(x):
    with pytest.raises(TypeError, match="scale: X has dtype"):
        Scale({"scale": 1.0, "bias": 0.0, "bias_after_scale": True})(x)


# == gradients =================================================================================

from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("attrs", [{}, {"scale": 2.5, "bias": -1.0},
                                   {"scale": -0.1, "bias": 0.3, "bias_after_scale": False}])
def test_gradient_finite_differences(attrs):
    x = np.random.default_rng(0).standard_normal((3, 4))
    check_grad("scale", {"X": x}, wrt=["X"], attrs=attrs)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("after", [True, False])
def test_integer_scale_truncates_the_attributes_as_paddle(dtype, after):
    # Loop counters in Paddle's programs: scale 2.7 and bias -1.5 become 2 and -1 in X's type.
    from headrace.core_ops.kernels.cpu.scale import Scale
    x = np.array([-3, 0, 5, 2 ** 20], dtype)
    (out,) = Scale({"scale": 2.7, "bias": -1.5, "bias_after_scale": after})(x)
    ref = 2 * x - 1 if after else 2 * (x - 1)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("attrs, expected", [
    # Paddle 3.3.1's scale on [7, -7, 5, 3] of either integer type, through its Executor
    ({"scale": 0.5, "bias": 0.5}, [0, 0, 0, 0]),
    ({"scale": 1.5, "bias": 0.7, "bias_after_scale": False}, [7, -7, 5, 3]),
    ({"scale": -0.5, "bias": 0.0}, [0, 0, 0, 0]),
    ({"scale": 2.7, "bias": -0.6}, [14, -14, 10, 6]),
])
def test_integer_scale_through_the_executor_matches_paddle(check, dtype, attrs, expected):
    out = check("scale", {"X": np.array([7, -7, 5, 3], dtype)}, attrs)["Out"]
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expected)
