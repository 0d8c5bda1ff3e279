"""softmax: shape and dtype inference; the CPU kernel against the reference."""
import numpy as np
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


# -- kernel -------------------------------------------------------------------------------------
DTYPES = ["float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis", [
    ((7,), -1), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4, 5), 2), ((2, 3, 4, 5), -4),
    ((0, 4), -1), ((1, 1000), -1)])
def test_kernel_matches_reference(check, shape, axis, dtype):
    rng = np.random.default_rng(len(shape) * 10 + axis + 10)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    check("softmax", {"X": x}, {"axis": axis})


@pytest.mark.parametrize("x", [np.array(3.0), np.float64(3.0)])
def test_kernel_softmax_of_a_scalar_is_one(kernel, x):
    # A direct call: NumPy's ascontiguousarray would turn a 0-D input into [1].
    (out,) = kernel("softmax", {"axis": -1}, "float64")(x)
    assert out.shape == () and out == 1.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_is_numerically_stable(kernel, dtype):
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]], dtype)
    (out,) = kernel("softmax", {"axis": -1}, dtype)(x)
    want = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(out[0], want, rtol=1e-6)
    np.testing.assert_allclose(out[1], want[::-1], rtol=1e-6)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_kernel_takes_strided_and_readonly_inputs(kernel, variants, which):
    x = np.random.default_rng(0).standard_normal((4, 5, 3))
    (want,) = kernel("softmax", {"axis": 1}, "float64")(x)
    (got,) = kernel("softmax", {"axis": 1}, "float64")(variants(x)[which])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("x, attrs, error", [
    (np.zeros((2, 3), np.float32), {"axis": 2}, ValueError),
    (np.zeros((2, 3), np.float32), {"axis": -3}, ValueError),
    (np.zeros((2, 3), np.int64), {}, TypeError),
    (None, {}, TypeError),
])
def test_kernel_rejects_bad_inputs(kernel, x, attrs, error):
    with pytest.raises(error, match="softmax"):
        kernel("softmax", attrs)(x)


# -- gradient -----------------------------------------------------------------------------------
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("shape, axis", [((3, 5), -1), ((2, 4, 3), 1), ((4, 2, 3), 0), ((5,), 0)])
def test_gradient_matches_finite_differences(shape, axis):
    x = np.random.default_rng(len(shape) + axis).standard_normal(shape) * 2
    check_grad("softmax", {"X": x}, wrt=["X"], attrs={"axis": axis})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis", [((6, 7), -1), ((3, 4, 5), 1), ((0, 3), -1)])
def test_grad_kernel_matches_reference(check, dtype, shape, axis):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    e = np.exp(x - x.max(axis=axis, keepdims=True)) if x.size else x
    y = (e / e.sum(axis=axis, keepdims=True)).astype(dtype) if x.size else x.astype(dtype)
    check("softmax_grad", {"Out": y, "Out@GRAD": rng.standard_normal(shape).astype(dtype)},
          {"axis": axis})


@pytest.mark.parametrize("out, dout, error, match", [
    (np.ones((2, 3)), np.ones((2, 4)), ValueError, r"Out@GRAD\[2, 4\] must have the shape"),
    (np.ones((2, 3)), np.ones((2, 3), np.float32), TypeError, r"Out@GRAD has dtype float32"),
    (np.ones((2, 3), np.int64), np.ones((2, 3)), TypeError, r"Out has dtype int64"),
])
def test_grad_kernel_rejects_bad_inputs(kernel, out, dout, error, match):
    with pytest.raises(error, match="softmax_grad: " + match):
        kernel("softmax_grad", {"axis": -1}, "float64")(out, dout)
