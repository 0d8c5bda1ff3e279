"""Kernels that reuse their last output array (kernels/cpu/_common.pxd ``recycled``): only when
nothing but the kernel references it, so no value anyone can see ever changes."""
import numpy as np
import pytest

import headrace
from headrace.runtime import Executor, Scope, Tensor


@pytest.mark.parametrize("name", ["mul", "matmul", "mul_grad", "matmul_grad", "relu",
                                  "relu_grad", "elementwise_add", "elementwise_mul_grad",
                                  "reduce_sum_grad"])
def test_reused_only_when_nobody_holds_it(make_kernel, name):
    x, y = np.arange(12.0).reshape(3, 4), np.ones((4, 5))
    args = {"mul": (x, y), "matmul": (x, y), "mul_grad": (x, y, np.ones((3, 5))),
            "matmul_grad": (x, y, np.ones((3, 5))), "relu": (x,), "relu_grad": (x, x),
            "elementwise_add": (x, x[0]), "elementwise_mul_grad": (x, x[0], x),
            "reduce_sum_grad": (x, x[0])}[name]
    kernel = make_kernel(name)
    first = kernel(*args)
    kept = [np.array(r, copy=True) for r in first]
    second = kernel(*args)
    # The first results are still held here: new arrays, the old ones untouched.
    for a, b, k in zip(first, second, kept):
        assert a is not b
        np.testing.assert_array_equal(a, k)
    ids = [id(r) for r in second]
    del first, second, a, b    # (the loop variables hold results too)
    third = kernel(*args)
    # Only the kernel held the second results: the same arrays come back, recomputed.
    assert [id(r) for r in third] == ids
    for r, k in zip(third, kept):
        np.testing.assert_array_equal(r, k)


def test_shape_change_gives_a_new_array(make_kernel):
    kernel = make_kernel("relu")
    (a,) = kernel(np.ones((2, 3)))
    del a
    (b,) = kernel(np.ones((3, 2)))
    assert b.shape == (3, 2) and b.tolist() == [[1.0, 1.0]] * 3
    (c,) = kernel(-np.ones((3, 2)))     # b is held: c must be another array
    assert c is not b and b.tolist() == [[1.0, 1.0]] * 3 and not c.any()


def test_a_value_kept_in_the_scope_is_never_overwritten():
    # relu writes a persistable variable: the scope keeps each run's array, so the next run
    # must write a new one.
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[2, 3], dtype="float64", need_check_feed=True)
    block.create_var(name="r", shape=[2, 3], dtype="float64", persistable=True)
    block.append_op("relu", {"X": "x"}, {"Out": "r"})
    exe, scope = Executor(), Scope()
    exe.run(prog, feed={"x": np.ones((2, 3))}, fetch_list=[], scope=scope)
    first = scope.find("r").data
    exe.run(prog, feed={"x": 2 * np.ones((2, 3))}, fetch_list=[], scope=scope)
    assert first.tolist() == [[1.0] * 3] * 2
    assert scope.find("r").data.tolist() == [[2.0] * 3] * 2


def test_training_steps_give_fresh_gradients():
    # Several runs of a backward program with different inputs: every run's gradients are
    # its own (no stale or shared buffers between runs).
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[-1, 4], dtype="float64", need_check_feed=True)
    block.create_parameter("w", [4, 3], dtype="float64")
    block.append_op("mul", {"X": "x", "Y": "w"}, {"Out": "h"})
    block.append_op("relu", {"X": "h"}, {"Out": "a"})
    block.append_op("mean", {"X": "a"}, {"Out": "loss"})
    ((_, gw),) = headrace.append_backward(block.var("loss"))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3))
    scope = Scope()
    scope.set("w", Tensor(w))
    exe = Executor()
    for step in range(4):
        x = rng.standard_normal((5, 4))
        (got,) = exe.run(prog, feed={"x": x}, fetch_list=[gw], scope=scope)
        np.testing.assert_allclose(got, x.T @ ((x @ w > 0) / 15.0), rtol=1e-12,
                                   err_msg=f"step {step}")
