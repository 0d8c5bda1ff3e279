"""Backward passes through chains of tensor ops: gradients against NumPy's.

Every op here is linear, so the gradient of sum(target * G) is the chain run backwards on G:
reshapes undone, transposes inverted, concat pieces cut out (and summed where an input is used
twice), split pieces joined (zeros for pieces that do not reach a target).
"""
import numpy as np
import pytest

import headrace
from headrace.runtime import Executor, Scope, Tensor


def _chain(block, x, y):
    """x [2, 3, 4], y [2, 5] -> pieces [10], [40], [8] of the flattened [29, 2] concat."""
    block.append_op("reshape2", {"X": x}, {"Out": "r"}, {"shape": [0, -1]})       # [2, 12]
    block.append_op("transpose2", {"X": "r"}, {"Out": "t"}, {"axis": [1, 0]})     # [12, 2]
    block.append_op("transpose2", {"X": y}, {"Out": "yt"}, {"axis": [-1, 0]})     # [5, 2]
    block.append_op("concat", {"X": ["t", "yt", "t"]}, {"Out": "c"}, {"axis": 0})  # [29, 2]
    block.append_op("flatten_contiguous_range", {"X": "c"}, {"Out": "f"},
                    {"start_axis": 0, "stop_axis": -1})                           # [58]
    block.append_op("split", {"X": "f"}, {"Out": ["s0", "s1", "s2"]},
                    {"axis": -1, "sections": [10, -1, 8]})


def _expected(g0, g2):
    """dx, dy for the targets s0, s2 with upstream gradients g0, g2 (s1 gets zeros)."""
    df = np.concatenate([g0, np.zeros(40), g2])
    dc = df.reshape(29, 2)
    dt = dc[:12] + dc[17:]
    dyt = dc[12:17]
    return dt.T.reshape(2, 3, 4), dyt.T


def test_gradients_through_a_chain():
    prog = headrace.Program()
    block = prog.global_block()
    for name, shape in (("x", [2, 3, 4]), ("y", [2, 5]), ("g0", [10]), ("g2", [8])):
        block.create_var(name=name, shape=shape, dtype="float64", need_check_feed=True,
                         stop_gradient=name.startswith("g"))
    _chain(block, "x", "y")
    dx, dy = headrace.gradients([block.var("s0"), block.var("s2")],
                                [block.var("x"), block.var("y")],
                                target_gradients=[block.var("g0"), block.var("g2")])
    assert dx.shape == (2, 3, 4) and dy.shape == (2, 5)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((2, 3, 4)), "y": rng.standard_normal((2, 5)),
            "g0": rng.standard_normal(10), "g2": rng.standard_normal(8)}
    got_dx, got_dy = Executor().run(prog, feed=feed, fetch_list=[dx, dy], scope=Scope())
    exp_dx, exp_dy = _expected(feed["g0"], feed["g2"])
    np.testing.assert_array_equal(got_dx, exp_dx)
    np.testing.assert_array_equal(got_dy, exp_dy)
    types = [op.type for op in block.ops]
    for t in ("reshape2_grad", "transpose2_grad", "concat_grad",
              "flatten_contiguous_range_grad", "concat", "fill_zeros_like", "sum"):
        assert t in types, f"no {t} in the backward pass: {types}"


def _program_with_params(dtype="float64"):
    prog = headrace.Program()
    block = prog.global_block()
    block.create_parameter("x", [2, 3, 4], dtype=dtype)
    block.create_parameter("y", [2, 5], dtype=dtype)
    _chain(block, "x", "y")
    return prog, block


def _scope(dtype="float64"):
    rng = np.random.default_rng(1)
    scope = Scope()
    scope.set("x", Tensor(rng.standard_normal((2, 3, 4)).astype(dtype)))
    scope.set("y", Tensor(rng.standard_normal((2, 5)).astype(dtype)))
    return scope


@pytest.mark.parametrize("k", [0, 3, 9])
def test_append_backward_to_one_element(k):
    # A loss of shape [1] from tensor ops alone: one element of s0, cut out by another split.
    prog, block = _program_with_params()
    block.append_op("split", {"X": "s0"}, {"Out": ["e0", "e1", "e2"]},
                    {"sections": [k, 1, 9 - k]})
    pairs = headrace.append_backward(block.var("e1"))
    assert [p.name for p, _ in pairs] == ["x", "y"]
    got_dx, got_dy = Executor().run(prog, fetch_list=[g for _, g in pairs], scope=_scope())
    g0 = np.zeros(10)
    g0[k] = 1.0
    exp_dx, exp_dy = _expected(g0, np.zeros(8))
    np.testing.assert_array_equal(got_dx, exp_dx)
    np.testing.assert_array_equal(got_dy, exp_dy)
    assert got_dx.sum() == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_append_backward_through_mean(dtype):
    prog, block = _program_with_params(dtype)
    block.append_op("concat", {"X": ["s0", "s2"]}, {"Out": "kept"}, {"axis": 0})  # [18]
    block.append_op("mean", {"X": "kept"}, {"Out": "loss"})
    pairs = dict((p.name, g) for p, g in headrace.append_backward(block.var("loss")))
    got_dx, got_dy = Executor().run(prog, fetch_list=[pairs["x"], pairs["y"]], scope=_scope(dtype))
    exp_dx, exp_dy = _expected(np.full(10, 1 / 18), np.full(8, 1 / 18))
    tol = 1e-6 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(got_dx, exp_dx, rtol=tol, atol=tol)
    np.testing.assert_allclose(got_dy, exp_dy, rtol=tol, atol=tol)
