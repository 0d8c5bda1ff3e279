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


# -- clip_by_norm, squared_l2_norm (Paddle's gradient clips) --------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("max_norm", [0.5, 2.0, 100.0])
def test_clip_by_norm_scales_down_to_max_norm(check, dtype, max_norm):
    x = np.random.default_rng(3).standard_normal((4, 5)).astype(dtype)
    out = check("clip_by_norm", {"X": x}, {"max_norm": max_norm})["Out"]
    norm = np.sqrt(np.sum(x.astype(np.float64) ** 2))
    want = x * (max_norm / norm) if norm > max_norm else x
    np.testing.assert_allclose(out, want, rtol=1e-6 if dtype == "float32" else 1e-13)
    assert out.shape == x.shape and out.dtype == x.dtype


def test_clip_by_norm_edges(make_kernel):
    x = np.array([3.0, 4.0])                        # norm 5
    np.testing.assert_array_equal(make_kernel("clip_by_norm", {"max_norm": 5.0})(x)[0], x)
    np.testing.assert_allclose(make_kernel("clip_by_norm", {"max_norm": 1.0})(x)[0],
                               [0.6, 0.8], rtol=1e-15)
    # Paddle's 1e-6 for a norm <= 1e-30 (a max_norm below it): no division by zero.
    tiny = np.array([1e-31, 0.0])
    (out,) = make_kernel("clip_by_norm", {"max_norm": 0.0})(tiny)
    np.testing.assert_allclose(out, tiny * 0.0 / (1e-31 + 1e-6))
    assert make_kernel("clip_by_norm", {"max_norm": 1.0})(np.zeros((0, 3)))[0].shape == (0, 3)
    with pytest.raises(TypeError, match="clip_by_norm: X has dtype int64"):
        make_kernel("clip_by_norm", {"max_norm": 1.0})(np.ones(3, np.int64))


def test_clip_by_norm_needs_max_norm_and_has_no_gradient(infer, math_registry):
    with pytest.raises(hr.errors.OpValidationError, match="max_norm"):
        infer("clip_by_norm", {"X": ([3], "float32", 0)})
    assert infer("clip_by_norm", {"X": ([-1, 3], "float32", 0)}, {"max_norm": 1.0}) == \
        ((-1, 3), "float32")
    assert not math_registry.get("clip_by_norm").differentiable


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 5), (7,), (), (0, 2)])
def test_squared_l2_norm(check, dtype, shape):
    x = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    out = check("squared_l2_norm", {"X": x})["Out"]
    assert out.shape == (1,) and out.dtype == x.dtype          # [1], as Paddle 3 declares it
    np.testing.assert_allclose(out, [np.sum(x.astype(np.float64) ** 2)], rtol=1e-6)


def test_squared_l2_norm_gradient(check, infer, make_kernel):
    x = np.random.default_rng(5).standard_normal((3, 4))
    check_grad("squared_l2_norm", {"X": x}, wrt=["X"])
    check("squared_l2_norm_grad", {"X": x, "Out@GRAD": np.array([0.5])})
    (dx,) = make_kernel("squared_l2_norm_grad")(x, np.array(0.5))      # a 0-D gradient
    np.testing.assert_allclose(dx, x, rtol=1e-15)
    with pytest.raises(ValueError, match="squared_l2_norm_grad: Out@GRAD has shape \\[2\\]"):
        make_kernel("squared_l2_norm_grad")(x, np.ones(2))
    with pytest.raises(ShapeError, match="'Out@GRAD \\(.*\\)' must hold one element"):
        infer("squared_l2_norm_grad", {"X": ([3, 4], "float64", 0),
                                       "Out@GRAD": ([2], "float64", 0)}, out="X@GRAD")
