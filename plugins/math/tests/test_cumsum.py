"""cumsum: NumPy's cumsum (axis, flatten, exclusive, reverse; integers too), the shape rule with
unknown dims and its errors, and the gradient (a cumsum the other way; cumsum_grad when
flattening) against finite differences in float64 through the Executor."""
import numpy as np
import pytest

import headrace as hr
from headrace import ShapeError, layers
from headrace.testing import check_grad, program_gradients


def _numpy(x, axis, exclusive, reverse):
    if axis is None:
        x, axis = x.reshape(-1), 0
    y = np.flip(x, axis) if reverse else x
    out = np.cumsum(y, axis=axis)
    if exclusive:
        out = out - y
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_like_numpy(axis, exclusive, reverse):
    x = np.random.rand(3, 4, 2)
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        xv = layers.data("x", [3, 4, 2], dtype="float64", append_batch_size=False)
        out = layers.cumsum(xv, axis=axis, exclusive=exclusive, reverse=reverse)
    (got,) = hr.Executor().run(main, feed={"x": x}, fetch_list=[out], scope=hr.Scope())
    expected = _numpy(x, axis, exclusive, reverse)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32"])
def test_other_dtypes(check, dtype):
    x = np.arange(-6, 6).reshape(3, 4).astype(dtype)
    out = check("cumsum", {"X": x}, {"axis": 0, "reverse": True})["Out"]
    assert out.dtype == dtype


def test_shape_rule(infer):
    assert infer("cumsum", {"X": ([-1, 5], "float32", 0)}, {"axis": 1}) == ((-1, 5), "float32")
    assert infer("cumsum", {"X": ([2, 5], "float32", 0)}, {"flatten": True}) == \
        ((10,), "float32")
    assert infer("cumsum", {"X": ([-1, 5], "float32", 0)}, {"flatten": True}) == \
        ((-1,), "float32")
    with pytest.raises(ShapeError, match="attribute 'axis' must name a dim of X"):
        infer("cumsum", {"X": ([2, 5], "float32", 0)}, {"axis": 2})


@pytest.mark.parametrize("attrs", [{"axis": 1}, {"axis": 0, "exclusive": True},
                                   {"axis": -1, "reverse": True},
                                   {"flatten": True, "exclusive": True, "reverse": True}])
def test_gradient_against_finite_differences(math_registry, attrs):
    check_grad("cumsum", {"X": np.random.rand(3, 4)}, wrt=["X"], attrs=attrs,
               registry=math_registry)


@pytest.mark.parametrize("axis", [1, None])
def test_gradient_through_a_program(axis):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        p = layers.create_parameter([3, 4], "float64", name="P")
        out = layers.cumsum(p, axis=axis, exclusive=True)
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    # Paddle's gradient: a reversed cumsum; a flattening one is cumsum_grad (X's shape back).
    assert ("cumsum_grad" in types) == (axis is None)
    analytic, numeric = program_gradients(main, startup, loss, ["P"], {})
    assert analytic["P"].shape == (3, 4)
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)


def test_layer_argument_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", [3, 4], dtype="float32", append_batch_size=False)
        with pytest.raises(hr.LayerError, match="cumsum: argument 'axis' must be"):
            layers.cumsum(x, axis=2)
