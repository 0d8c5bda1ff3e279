"""arg_max / arg_min: NumPy's argmax/argmin (first index on ties), keepdims, flatten, the
index dtype, shape rules with unknown dims, and no gradient."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers


def _run(fn, x, **kw):
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        xv = layers.data("x", list(x.shape), dtype=x.dtype.name, append_batch_size=False)
        out = fn(xv, **kw)
    (got,) = hr.Executor().run(main, feed={"x": x}, fetch_list=[out], scope=hr.Scope())
    return out, got


@pytest.mark.parametrize("fn,ref", [(layers.argmax, np.argmax), (layers.argmin, np.argmin)])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_like_numpy_with_ties(fn, ref, axis, keepdim):
    x = np.random.randint(-2, 2, size=(3, 4, 5)).astype("float32")  # many ties
    out, got = _run(fn, x, axis=axis, keepdim=keepdim)
    expected = ref(x, axis=axis, keepdims=keepdim)
    assert tuple(out.shape) == expected.shape and got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_flatten_and_int32():
    x = np.random.rand(3, 4)
    out, got = _run(layers.argmax, x, axis=None, dtype="int32")
    # A result without dims is 0-D, as in Paddle 3.
    assert got.dtype == np.int32 and tuple(out.shape) == () == got.shape
    assert got == np.argmax(x)
    out, got = _run(layers.argmin, np.array([3, 1, 2], "int64"), axis=0)
    assert tuple(out.shape) == () == got.shape and got == 1


def test_shape_rule_with_unknown_dims_and_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", [-1, 6, 2], dtype="float32", append_batch_size=False)
        assert tuple(layers.argmax(x, axis=1).shape) == (-1, 2)
        assert tuple(layers.argmin(x, axis=0, keepdim=True).shape) == (1, 6, 2)
        with pytest.raises(hr.LayerError, match="argmax: argument 'axis'"):
            layers.argmax(x, axis=3)
        with pytest.raises(hr.LayerError, match="argmax: argument 'dtype' must be int32"):
            layers.argmax(x, dtype="float32")
        empty = hr.default_main_program().global_block().create_var(
            name="empty", shape=[2, 0], dtype="float32")
        with pytest.raises(hr.HeadraceError, match="no entries along axis 1"):
            layers.argmax(empty, axis=1)


def test_no_gradient():
    assert not hr.ops.default_registry().get("arg_max").differentiable
    assert not hr.ops.default_registry().get("arg_min").differentiable
