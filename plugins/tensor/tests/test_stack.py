"""stack: numpy.stack, the shape rule (-1 dims) and its errors, stack_grad (views of Y@GRAD,
@EMPTY@ entries skipped) against finite differences, and the unstack round trip."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients, run_op


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack_is_numpy_stack(axis):
    xs = [np.random.rand(3, 2) for _ in range(4)]
    (y,) = run_op("stack", {"X": xs}, attrs={"axis": axis})["Y"]
    np.testing.assert_array_equal(y.numpy(), np.stack(xs, axis))


def test_stack_of_0_d_tensors_is_1_d():
    (y,) = run_op("stack", {"X": [np.array(1.0), np.array(2.0)]}, attrs={"axis": 0})["Y"]
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])


def _program(shapes, axis, dtypes=None):
    prog = hr.Program()
    g = prog.global_block()
    xs = [g.create_var(name=f"x{i}", shape=s, dtype=(dtypes or ["float64"] * len(shapes))[i])
          for i, s in enumerate(shapes)]
    y = g.create_var(name="y", dtype="float64")
    g.append_op("stack", {"X": xs}, {"Y": y}, {"axis": axis})
    return y


def test_shape_rule_with_unknown_dims():
    assert list(_program([[-1, 3], [2, -1]], 1).shape) == [2, 2, 3]
    assert list(_program([[-1, 3]] * 3, -1).shape) == [-1, 3, 3]


def test_shape_rule_errors_name_the_attribute_and_inputs():
    with pytest.raises(hr.HeadraceError, match=r"stack.*attribute 'axis' must name a dim of Y"):
        _program([[2, 3]], 3)
    with pytest.raises(hr.HeadraceError, match="inputs 'X' must have one shape, but x1"):
        _program([[2, 3], [2, 4]], 0)
    with pytest.raises(hr.HeadraceError, match="inputs 'X' must have one dtype, but x1"):
        _program([[2, 3], [2, 3]], 0, ["float64", "float32"])


def test_mismatched_shapes_known_only_at_run_time_are_refused():
    prog = hr.Program()
    g = prog.global_block()
    xs = [g.create_var(name=f"x{i}", shape=[-1], dtype="float64", need_check_feed=True)
          for i in range(2)]
    y = g.create_var(name="y", dtype="float64")
    g.append_op("stack", {"X": xs}, {"Y": y}, {"axis": 0})
    with pytest.raises(hr.HeadraceError, match="inputs 'X' must have one shape, but x1"):
        hr.Executor().run(prog, feed={"x0": np.zeros(2), "x1": np.zeros(3)}, fetch_list=[y],
                          scope=hr.Scope())
    from headrace_tensor.kernels.cpu.stack import Stack
    with pytest.raises(ValueError, match=r"stack: X\[1\] is float64 \[3\] but X\[0\]"):
        Stack({"axis": 0})([np.zeros(2), np.zeros(3)])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gradient_matches_finite_differences(axis):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        ps = [layers.create_parameter([3, 2], "float64", name=f"P{i}") for i in range(3)]
        y = layers.stack(ps, axis=axis)
        # Only some rows reach the loss: the rest of Y@GRAD is zeros.
        parts = layers.unstack(y, axis=axis)
        loss = layers.mean(layers.elementwise_mul(parts[0], layers.sin(parts[2])))
        hr.append_backward(loss)
    assert "stack_grad" in [op.type for op in main.global_block().ops]
    names = [p.name for p in ps]
    analytic, numeric = program_gradients(main, startup, loss, names, {})
    for n in names:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)
    assert not analytic["P1"].any()  # its slice of Y does not reach the loss


def test_only_the_wanted_inputs_get_a_gradient():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[2], dtype="float64")
        p = layers.create_parameter([4, 2], "float64", name="P")
        loss = layers.mean(layers.square(layers.stack([x, p, x], axis=1)))
        hr.append_backward(loss)
    (grad_op,) = [op for op in main.global_block().ops if op.type == "stack_grad"]
    assert grad_op.output("X@GRAD") == ["@EMPTY@", "P@GRAD", "@EMPTY@"]
    analytic, numeric = program_gradients(main, startup, loss, ["P"],
                                          {"x": np.random.rand(4, 2)})
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)


def test_layer_round_trips_with_unstack():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[3, 4], dtype="float64")
        y = layers.stack(layers.unstack(x, axis=1), axis=1)
    assert list(y.shape) == [-1, 3, 4]
    v = np.random.rand(2, 3, 4)
    (got,) = hr.Executor().run(main, feed={"x": v}, fetch_list=[y], scope=hr.Scope())
    np.testing.assert_array_equal(got, v)
    with pytest.raises(hr.HeadraceError, match="stack: argument 'axis' must be"):
        layers.stack([x], axis=5)
