"""tensor_array_to_tensor: concatenation and stacking against NumPy, shape rule, errors, and
the gradient ("tensor_array_to_tensor_grad") against finite differences."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import OpError
from headrace.testing import program_gradients

PARTS = [np.random.RandomState(k).randn(2, 3) for k in range(3)]


def _program(axis, stack, n=3):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        arr = layers.create_array("float64")
        for k in range(n):
            p = layers.create_parameter([2, 3], "float64", name=f"P{k}")
            layers.array_write(layers.scale(p, scale=k + 1.0),
                               layers.fill_constant([1], "int64", k), array=arr)
        helper_out = main.global_block().create_var(name="out", dtype="float64")
        index = main.global_block().create_var(name="index", dtype="int32")
        main.global_block().append_op("tensor_array_to_tensor", {"X": arr},
                                      {"Out": helper_out, "OutIndex": index},
                                      {"axis": axis, "use_stack": stack})
        loss = layers.mean(layers.elementwise_mul(helper_out, helper_out))
        hr.append_backward(loss)
    return main, startup, loss


@pytest.mark.parametrize("axis, stack", [(0, False), (1, False), (-1, False), (0, True),
                                         (2, True), (-1, True)])
def test_joins_like_numpy_and_differentiates(axis, stack):
    main, startup, loss = _program(axis, stack)
    values = {f"P{k}": PARTS[k] for k in range(3)}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, v in values.items():
        scope.set(n, hr.Tensor(v.copy()))
    out, index = exe.run(main, fetch_list=["out", "index"], scope=scope)
    parts = [(k + 1.0) * PARTS[k] for k in range(3)]
    ref = np.stack(parts, axis) if stack else np.concatenate(parts, axis)
    np.testing.assert_allclose(out, ref, rtol=1e-15)
    assert index.dtype == np.int32
    assert index.tolist() == ([1, 1, 1] if stack else [p.shape[axis] for p in parts])
    analytic, numeric = program_gradients(main, startup, loss, list(values), {},
                                          values=values)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8)


def test_shape_rule():
    main, _, _ = _program(1, True)
    assert tuple(main.global_block().var("out").shape) == (2, -1, 3)
    main, _, _ = _program(1, False)
    assert tuple(main.global_block().var("out").shape) == (2, -1)


def test_bad_axis_and_empty_array_are_clear_errors():
    with pytest.raises(hr.HeadraceError, match="attribute 'axis' must name a dim"):
        _program(3, False)
    prog = hr.Program()
    g = prog.global_block()
    arr = g.create_var(name="arr", type="lod_tensor_array", dtype="float32", shape=[2])
    g.append_op("tensor_array_to_tensor", {"X": arr}, {"Out": "out", "OutIndex": "idx"},
                {"use_stack": True})
    with pytest.raises(OpError, match="tensor_array_to_tensor.*the array is empty"):
        hr.Executor().run(prog, fetch_list=["out"], scope=hr.Scope())
