"""where: NumPy semantics, the shape and dtype rules, and the gradient routed by Condition
against finite differences."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import check_grad, program_gradients


def test_where_is_numpy_where():
    c = np.random.rand(3, 4) < 0.5
    x, y = np.random.rand(3, 4), np.random.rand(3, 4)
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        cv = layers.data("c", [-1, 4], dtype="bool", append_batch_size=False)
        xv = layers.data("x", [3, -1], dtype="float64", append_batch_size=False)
        yv = layers.data("y", [3, 4], dtype="float64", append_batch_size=False)
        out = layers.where(cv, xv, yv)
    assert tuple(out.shape) == (3, 4)
    (got,) = hr.Executor().run(main, feed={"c": c, "x": x, "y": y}, fetch_list=[out],
                               scope=hr.Scope())
    np.testing.assert_array_equal(got, np.where(c, x, y))


def test_shape_and_dtype_errors():
    with hr.program_guard(hr.Program(), hr.Program()):
        c = layers.data("c", [3, 4], dtype="bool", append_batch_size=False)
        x = layers.data("x", [3, 4], dtype="float32", append_batch_size=False)
        with pytest.raises(hr.HeadraceError, match="'Y' \\(y\\) must have the shape of X"):
            layers.where(c, x, layers.data("y", [4, 3], dtype="float32",
                                           append_batch_size=False))
        with pytest.raises(hr.HeadraceError, match="'Y' \\(y64\\) must have X's dtype"):
            layers.where(c, x, layers.data("y64", [3, 4], dtype="float64",
                                           append_batch_size=False))
        with pytest.raises(hr.LayerError, match="where: argument 'condition'.*bool"):
            layers.where(x, x, x)


def test_gradient_against_finite_differences():
    check_grad("where", {"Condition": np.random.rand(2, 3, 2) < 0.5,
                         "X": np.random.rand(2, 3, 2), "Y": np.random.rand(2, 3, 2)},
               wrt=["X", "Y"])


def test_gradients_through_a_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        a = layers.create_parameter([3, 2], "float64", name="A")
        b = layers.create_parameter([3, 2], "float64", name="B")
        c = layers.data("c", [3, 2], dtype="bool", append_batch_size=False)
        out = layers.where(c, a, b)
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    cond = np.array([[True, False], [False, False], [True, True]])
    analytic, numeric = program_gradients(main, startup, loss, ["A", "B"], {"c": cond})
    for n in ("A", "B"):
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
    assert np.all(analytic["A"][~cond] == 0) and np.all(analytic["B"][cond] == 0)
