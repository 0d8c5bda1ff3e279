"""pad: numpy.pad with a constant, Paddle's paddings layout and integer pad values, the shape
rule (-1 dims, LoD), errors that name the op and the attribute, and the gradient against
finite differences through the Executor."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime import Tensor
from headrace.testing import check_grad, run_op

X = np.arange(6.0).reshape(2, 3)


def _pad(x, paddings, pad_value=0.0):
    (out,) = run_op("pad", {"X": x}, attrs={"paddings": paddings, "pad_value": pad_value})["Out"]
    return out.numpy()


@pytest.mark.parametrize("paddings", [[1, 0, 2, 1], [0, 0, 0, 0], [0, 3, 1, 0], [2, 2, 2, 2]])
def test_pad_is_numpy_pad(paddings):
    want = np.pad(X, [paddings[:2], paddings[2:]], constant_values=1.5)
    np.testing.assert_array_equal(_pad(X, paddings, 1.5), want)


def test_paddle_numbers():
    # Paddle 3.3.1: pad([[0, 1, 2], [3, 4, 5]], [1, 0, 2, 1], 1.5)
    np.testing.assert_array_equal(_pad(X.astype(np.float32), [1, 0, 2, 1], 1.5), [
        [1.5, 1.5, 1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 0, 1, 2, 1.5], [1.5, 1.5, 3, 4, 5, 1.5]])
    # integer tensors take the value truncated toward zero (Paddle: 2.7 -> 2, -2.7 -> -2)
    np.testing.assert_array_equal(_pad(np.array([[1, 2]], np.int32), [1, 0, 0, 1], 2.7),
                                  [[2, 2, 2], [1, 2, 2]])
    np.testing.assert_array_equal(_pad(np.array([[1, 2]], np.int64), [1, 0, 0, 1], -2.7),
                                  [[-2, -2, -2], [1, 2, -2]])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "complex64"])
def test_dtypes_and_empty_dims(dtype):
    x = np.ones((0, 2), dtype)
    out = _pad(x, [1, 1, 0, 2], 3.0)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.full((2, 4), 3.0))


def _program(shape, paddings, lod_level=0):
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=shape, dtype="float64", lod_level=lod_level)
    out = g.create_var(name="out", dtype="float64")
    g.append_op("pad", {"X": x}, {"Out": out}, {"paddings": paddings, "pad_value": 0.0})
    return prog, out


def test_shape_rule():
    _, out = _program([-1, 3], [1, 1, 0, 2])
    assert list(out.shape) == [-1, 5]
    with pytest.raises(hr.HeadraceError, match=r"pad.*attribute 'paddings' must hold two "
                                               r"values \(before, after\) per dim of X"):
        _program([2, 3], [1, 2])
    with pytest.raises(hr.HeadraceError, match=r"pad.*attribute 'paddings'.* must all be >= 0 "
                                               r"\(found -1\)"):
        _program([2, 3], [-1, 0, 0, 0])
    with pytest.raises(hr.HeadraceError, match=r"pad.*X.*unsupported dtype"):
        run_op("pad", {"X": np.ones(2, bool)}, attrs={"paddings": [1, 1]})


def test_integer_pad_value_that_does_not_fit_is_an_error():
    with pytest.raises(hr.HeadraceError, match=r"pad: pad_value 10000000000.0 does not fit "
                                               r"X's dtype int32"):
        _pad(np.ones(2, np.int32), [1, 1], 1e10)


@pytest.mark.parametrize("lod", [[[0, 2]], [[0, 0, 2]], [[0, 0, 0]], [[0, 2, 2], [0, 1, 2]]])
def test_lod_is_kept_when_dim_0_is(lod):
    rows = lod[-1][-1]
    x = Tensor(np.arange(rows * 3.0).reshape(rows, 3), lod)
    prog, out = _program([-1, 3], [0, 0, 1, 2], lod_level=len(lod))
    assert out.lod_level == len(lod)
    (got,) = hr.Executor().run(prog, feed={"x": x}, fetch_list=[out], return_numpy=False,
                               scope=hr.Scope())
    assert [list(level) for level in got.lod] == lod
    np.testing.assert_array_equal(np.asarray(got.data), np.pad(x.data, [(0, 0), (1, 2)]))
    _, out = _program([-1, 3], [1, 0, 0, 0], lod_level=len(lod))
    assert out.lod_level == 0           # rows added: the LoD no longer applies


@pytest.mark.parametrize("shape, paddings", [((2, 3), [1, 0, 2, 1]), ((3,), [0, 2]),
                                             ((2, 1, 2), [1, 1, 0, 0, 2, 0])])
def test_gradient_matches_finite_differences(shape, paddings):
    x = np.random.default_rng(0).standard_normal(shape)
    check_grad("pad", {"X": x}, wrt=["X"], attrs={"paddings": paddings, "pad_value": 0.5})


def test_gradient_kernel_refuses_a_gradient_smaller_than_the_border():
    with pytest.raises(hr.HeadraceError, match=r"pad_grad.*'Out@GRAD' .* is smaller than its "
                                               r"paddings along dim 0"):
        run_op("pad_grad", {"Out@GRAD": np.ones((2, 3))}, ["X@GRAD"],
               attrs={"paddings": [2, 1, 0, 0]})
    from headrace_tensor.kernels.cpu.pad import PadGrad
    with pytest.raises(ValueError, match=r"pad_grad: Out@GRAD \[2, 3\] is smaller than the "
                                         r"paddings \[2, 1, 0, 0\] along dim 0"):
        PadGrad({"paddings": [2, 1, 0, 0]})(np.ones((2, 3)))
