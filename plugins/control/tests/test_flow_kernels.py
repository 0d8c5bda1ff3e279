"""Running control flow: while with a tensor array and step scopes, conditional_block, arrays.

Named after the kernels/flow package that holds these kernels (they serve every device)."""
import numpy as np
import pytest

import headrace as hr


def counting_loop(is_test=False):
    """acc doubles n times; each step's acc is written to arr[i]."""
    prog = hr.Program()
    g = prog.global_block()
    i = g.create_var(name="i", shape=[1], dtype="int64")
    n = g.create_var(name="n", shape=[1], dtype="int64", need_check_feed=True)
    acc = g.create_var(name="acc", shape=[1], dtype="float32", need_check_feed=True)
    arr = g.create_var(name="arr", shape=[1], dtype="float32", type="lod_tensor_array")
    g.append_op("fill_constant", {}, {"Out": i}, {"shape": [1], "dtype": 3, "value": 0.0})
    c = g.append_op("less_than", {"X": i, "Y": n}, {"Out": "c"}).output("Out")[0]
    with prog.block_guard() as body:
        body.append_op("scale", {"X": acc}, {"Out": acc}, {"scale": 2.0})
        body.append_op("write_to_array", {"X": acc, "I": i}, {"Out": arr})
        body.append_op("increment", {"X": i}, {"Out": i})
        body.append_op("less_than", {"X": i, "Y": n}, {"Out": c})
    g.append_op("while", {"X": [acc, i, n], "Condition": c},
                {"Out": [acc, i, arr], "StepScopes": "steps"},
                {"sub_block": body, "is_test": is_test})
    last = g.create_var(name="last", shape=[1], dtype="float32")
    k = g.create_var(name="k", shape=[1], dtype="int64")
    g.append_op("fill_constant", {}, {"Out": k}, {"shape": [1], "dtype": 3, "value": 1.0})
    g.append_op("read_from_array", {"X": arr, "I": k}, {"Out": last})
    return prog


@pytest.mark.parametrize("n", [2, 3, 5])
def test_while_runs_the_body_n_times(n):
    prog = counting_loop()
    feed = {"n": np.array([n], np.int64), "acc": np.array([1.0], np.float32)}
    acc, i, arr, steps, last = hr.Executor().run(
        prog, feed=feed, fetch_list=["acc", "i", "arr", "steps", "last"], scope=hr.Scope())
    assert acc[0] == 2.0 ** n and i[0] == n
    assert [t.numpy()[0] for t in arr] == [2.0 ** (k + 1) for k in range(n)]
    assert len(steps) == n and last[0] == 4.0


def test_while_in_test_mode_keeps_no_step_scopes():
    prog = counting_loop(is_test=True)
    feed = {"n": np.array([3], np.int64), "acc": np.array([1.0], np.float32)}
    (steps,) = hr.Executor().run(prog, feed=feed, fetch_list=["steps"], scope=hr.Scope())
    assert steps == []


def test_while_zero_iterations_and_reading_an_unwritten_position():
    prog = counting_loop()
    feed = {"n": np.array([0], np.int64), "acc": np.array([1.0], np.float32)}
    with pytest.raises(hr.OpError, match="never written"):
        hr.Executor().run(prog, feed=feed, fetch_list=["last"], scope=hr.Scope())
    acc = hr.Executor().eval(prog.global_block().var("acc"), feed=feed, scope=hr.Scope())
    assert acc[0] == 1.0


def test_a_body_that_never_updates_its_condition_is_refused():
    prog = hr.Program()
    g = prog.global_block()
    c = g.create_var(name="c", shape=[1], dtype="bool", need_check_feed=True)
    x = g.create_var(name="x", shape=[1], dtype="float32", need_check_feed=True)
    with prog.block_guard() as body:
        body.append_op("scale", {"X": x}, {"Out": x}, {"scale": 2.0})
    g.append_op("while", {"X": [x], "Condition": c}, {"Out": [x], "StepScopes": "s"},
                {"sub_block": body})
    with pytest.raises(hr.OpError, match="never writes Condition 'c'"):
        hr.Executor().run(prog, feed={"c": np.array([True]), "x": np.ones(1, np.float32)},
                          fetch_list=["x"], scope=hr.Scope())


@pytest.mark.parametrize("flag, expected", [(True, 3.0), (False, 1.0)])
def test_conditional_block(flag, expected):
    prog = hr.Program()
    g = prog.global_block()
    c = g.create_var(name="c", shape=[1], dtype="bool", need_check_feed=True)
    x = g.create_var(name="x", shape=[1], dtype="float32", need_check_feed=True)
    y = g.create_var(name="y", shape=[1], dtype="float32")
    g.append_op("assign", {"X": x}, {"Out": y})
    with prog.block_guard() as sub:
        sub.append_op("scale", {"X": x}, {"Out": y}, {"scale": 3.0})
    g.append_op("conditional_block", {"Cond": [c], "Input": [x]}, {"Out": [y], "Scope": "s"},
                {"sub_block": sub, "is_scalar_condition": True})
    y_val, scopes = hr.Executor().run(prog, feed={"c": np.array([flag]),
                                                  "x": np.ones(1, np.float32)},
                                      fetch_list=["y", "s"], scope=hr.Scope())
    assert y_val[0] == expected and len(scopes) == int(flag)


def test_errors_inside_a_body_name_the_inner_op():
    prog = hr.Program()
    g = prog.global_block()
    c = g.create_var(name="c", shape=[1], dtype="bool", need_check_feed=True)
    a = g.create_var(name="a", shape=[-1, -1], dtype="float32", need_check_feed=True)
    b = g.create_var(name="b", shape=[-1, -1], dtype="float32", need_check_feed=True)
    with prog.block_guard() as sub:
        sub.append_op("mul", {"X": a, "Y": b}, {"Out": "z"})
    g.append_op("conditional_block", {"Cond": [c], "Input": [a, b]}, {"Scope": "s"},
                {"sub_block": sub, "is_scalar_condition": True})
    with pytest.raises(hr.OpError) as e:
        hr.Executor().run(prog, feed={"c": np.array([True]), "a": np.ones((2, 3), np.float32),
                                      "b": np.ones((4, 2), np.float32)},
                          fetch_list=["s"], scope=hr.Scope())
    assert "'mul' (block 1, op #0)" in str(e.value)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_lod_array_length_after_a_loop(n):
    # Zero steps leave the array unwritten: its length is 0, not an error.
    prog = counting_loop()
    g = prog.global_block()
    g.append_op("lod_array_length", {"X": "arr"}, {"Out": "len"})
    feed = {"n": np.array([n], np.int64), "acc": np.array([1.0], np.float32)}
    length = hr.Executor().eval(g.var("len"), feed=feed, scope=hr.Scope())
    assert length.dtype == np.int64 and length.tolist() == [n]
