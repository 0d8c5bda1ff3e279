"""clip: NumPy's clip with bounds from attributes or tensors, integer X, the bound checks, and
the gradient (masked where X is clipped; the bound tensors get the clipped entries' sum)
against finite differences in float64."""
import numpy as np
import pytest

import headrace as hr
from headrace import ShapeError, layers
from headrace.testing import check_grad, program_gradients


def _run(x, lo, hi):
    main = hr.Program()
    feed = {"x": x}
    with hr.program_guard(main, hr.Program()):
        xv = layers.data("x", list(x.shape), dtype=x.dtype.name, append_batch_size=False)
        bounds = []
        for name, b in (("lo", lo), ("hi", hi)):
            if isinstance(b, np.ndarray):
                bounds.append(layers.data(name, [1], dtype=x.dtype.name,
                                          append_batch_size=False))
                feed[name] = b
            else:
                bounds.append(b)
        out = layers.clip(xv, *bounds)
    (got,) = hr.Executor().run(main, feed=feed, fetch_list=[out], scope=hr.Scope())
    return got


def test_like_numpy_with_attribute_and_tensor_bounds():
    x = np.random.randn(4, 5)
    np.testing.assert_array_equal(_run(x, -0.5, 0.25), np.clip(x, -0.5, 0.25))
    np.testing.assert_array_equal(_run(x, np.array([-0.5]), 0.25), np.clip(x, -0.5, 0.25))
    np.testing.assert_array_equal(_run(x, -0.5, np.array([0.125])), np.clip(x, -0.5, 0.125))


def test_integer_x():
    x = np.arange(-5, 5).astype("int64")
    np.testing.assert_array_equal(_run(x, -2, 3), np.clip(x, -2, 3))
    # the default bounds (float32's extremes) leave an int tensor as it is
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        xv = layers.data("x", [10], dtype="int32", append_batch_size=False)
        g = main.global_block()
        out = g.create_var(name="out", dtype="int32")
        g.append_op("clip", {"X": xv}, {"Out": out}, {})
    x32 = np.array([2 ** 31 - 1, -2 ** 31] + [0] * 8, "int32")
    (got,) = hr.Executor().run(main, feed={"x": x32}, fetch_list=[out], scope=hr.Scope())
    np.testing.assert_array_equal(got, x32)


def test_bound_errors(infer):
    with pytest.raises(ShapeError, match="attribute 'min' must not exceed 'max'"):
        infer("clip", {"X": ([3], "float32", 0)}, {"min": 1.0, "max": 0.0})
    with pytest.raises(ShapeError, match="'Min \\(.*\\)' must hold one element"):
        infer("clip", {"X": ([3], "float32", 0), "Min": ([2], "float32", 0)})
    with pytest.raises(hr.LayerError, match="clip: argument 'min' \\(2.0\\) exceeds 'max'"):
        with hr.program_guard(hr.Program(), hr.Program()):
            layers.clip(layers.data("x", [3], dtype="float32"), 2.0, 1.0)
    with pytest.raises(hr.HeadraceError, match="lower bound 1.0 exceeds the upper bound 0.5"):
        _run(np.zeros(3), np.array([1.0]), 0.5)


def test_gradient_against_finite_differences(math_registry):
    # values kept away from the bounds, where the gradient jumps
    x = np.array([[-2.0, -0.7, -0.2, 0.1], [0.4, 0.9, 1.5, -1.2]])
    check_grad("clip", {"X": x}, wrt=["X"], attrs={"min": -0.5, "max": 0.5},
               registry=math_registry)
    check_grad("clip", {"X": x, "Min": np.array([-0.5]), "Max": np.array([0.5])},
               wrt=["X", "Min", "Max"], registry=math_registry)


def test_gradient_through_a_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        p = layers.create_parameter([3, 4], "float64", name="P")
        out = layers.clip(p, -0.01, 0.02)
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    assert "clip_grad" in [op.type for op in main.global_block().ops]
    values = {"P": np.linspace(-0.05, 0.05, 12).reshape(3, 4) + 0.0013}
    analytic, numeric = program_gradients(main, startup, loss, ["P"], {}, eps=1e-7,
                                          values=values)
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-5, atol=1e-9)
    inside = (values["P"] > -0.01) & (values["P"] < 0.02)
    assert np.all(analytic["P"][~inside] == 0) and np.all(analytic["P"][inside] != 0)
