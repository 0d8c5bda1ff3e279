"""unstack: slices along an axis (views unless X is persistable), the shape rule and its
errors, and the gradient ("unstack_grad") against finite differences."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients


def _program(shape, axis, num=None):
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=shape, dtype="float64", need_check_feed=True)
    num = shape[axis] if num is None else num
    ys = [g.create_var(name=f"y{k}", dtype="float64") for k in range(num)]
    g.append_op("unstack", {"X": x}, {"Y": ys}, {"axis": axis, "num": num})
    return prog, ys


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_slices_like_numpy(axis):
    x = np.random.rand(3, 2, 4)
    prog, ys = _program(list(x.shape), axis)
    rest = [d for k, d in enumerate(x.shape) if k != axis % 3]
    assert all(tuple(y.shape) == tuple(rest) for y in ys)
    got = hr.Executor().run(prog, feed={"x": x}, fetch_list=ys, scope=hr.Scope())
    for k, y in enumerate(got):
        np.testing.assert_array_equal(y, np.take(x, k, axis=axis))


def test_shape_rule_errors_name_the_attribute():
    with pytest.raises(hr.HeadraceError, match="attribute 'num' must be X's size"):
        _program([3, 2], 0, num=2)
    with pytest.raises(hr.HeadraceError, match="attribute 'axis' must name a dim"):
        _program([3, 2], 2, num=3)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack_gradient_is_a_stack(axis):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        p = layers.create_parameter([3, 2, 4], "float64", name="P")
        g = main.global_block()
        num = [3, 2, 4][axis]
        ys = [g.create_var(name=f"y{k}", dtype="float64") for k in range(num)]
        g.append_op("unstack", {"X": p}, {"Y": ys}, {"axis": axis, "num": num})
        # Only some slices reach the loss: the others' gradients are zeros in the stack.
        used = [layers.scale(ys[k], scale=k + 1.0) for k in range(0, num, 2)]
        total = layers.sums(used) if len(used) > 1 else used[0]
        loss = layers.mean(layers.elementwise_mul(total, total))
        hr.append_backward(loss)
    assert "unstack_grad" in [op.type for op in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["P"], {})
    np.testing.assert_allclose(analytic["P"], numeric["P"], rtol=1e-6, atol=1e-8)
