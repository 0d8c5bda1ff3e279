"""The guard against endless while loops: a maximum step count, reported at the op."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import headrace as hr
import headrace_control
from headrace_control import limits


def endless_loop():
    """A body that writes its condition but never makes it false (c = i >= 0, i counts up).
    Returns the program and the line that appended the while op."""
    prog = hr.Program()
    g = prog.global_block()
    i = g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    zero = g.create_var(name="zero", shape=[1], dtype="int64", need_check_feed=True)
    c = g.create_var(name="c", shape=[1], dtype="bool")
    g.append_op("greater_equal", {"X": i, "Y": zero}, {"Out": c})
    with prog.block_guard() as body:
        body.append_op("increment", {"X": i}, {"Out": i})
        body.append_op("greater_equal", {"X": i, "Y": zero}, {"Out": c})
    g.append_op("while", {"X": [i, zero], "Condition": c}, {"Out": [i, c], "StepScopes": "s"},
                {"sub_block": body})
    return prog


def feed(start):
    return {"i": np.array([start], np.int64), "zero": np.array([0], np.int64)}


@pytest.fixture
def limit():
    old = headrace_control.set_max_while_steps(50)
    yield
    headrace_control.set_max_while_steps(old)


def test_endless_loop_is_stopped_quickly_naming_the_op_and_the_line(limit):
    prog = endless_loop()
    t0 = time.perf_counter()
    with pytest.raises(hr.OpError) as info:
        hr.Executor().run(prog, feed=feed(0), fetch_list=["i"], scope=hr.Scope())
    assert time.perf_counter() - t0 < 5
    e = info.value
    assert (e.op_type, e.block_idx, e.op_idx) == ("while", 0, 1)
    assert e.source is not None and "test_while_limit.py" in e.source
    msg = str(e)
    assert "op 'while' (block 0, op #1)" in msg and "ran 50 steps" in msg
    assert "set_max_while_steps" in msg and "HEADRACE_MAX_WHILE_STEPS" in msg


def test_loop_under_the_limit_runs(limit):
    # i counts from 0 while i < n: exactly n steps.
    prog = hr.Program()
    g = prog.global_block()
    i = g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    n = g.create_var(name="n", shape=[1], dtype="int64", need_check_feed=True)
    c = g.create_var(name="c", shape=[1], dtype="bool")
    g.append_op("less_than", {"X": i, "Y": n}, {"Out": c})
    with prog.block_guard() as body:
        body.append_op("increment", {"X": i}, {"Out": i})
        body.append_op("less_than", {"X": i, "Y": n}, {"Out": c})
    g.append_op("while", {"X": [i, n], "Condition": c}, {"Out": [i, c], "StepScopes": "s"},
                {"sub_block": body})
    f = {"i": np.array([0], np.int64)}
    (out,) = hr.Executor().run(prog, feed={**f, "n": np.array([50], np.int64)},
                               fetch_list=["i"], scope=hr.Scope())
    assert out[0] == 50  # exactly the limit is allowed
    with pytest.raises(hr.OpError, match="ran 50 steps"):
        hr.Executor().run(prog, feed={**f, "n": np.array([51], np.int64)},
                          fetch_list=["i"], scope=hr.Scope())


def test_the_limit_applies_to_a_prepared_program(limit):
    prog = endless_loop()
    exe, scope = hr.Executor(), hr.Scope()
    with pytest.raises(hr.OpError, match="ran 50 steps"):
        exe.run(prog, feed=feed(0), fetch_list=["i"], scope=scope)
    headrace_control.set_max_while_steps(7)
    with pytest.raises(hr.OpError, match="ran 7 steps"):
        exe.run(prog, feed=feed(0), fetch_list=["i"], scope=scope)


def test_a_nested_loop_is_reported_at_the_inner_op(limit):
    prog = hr.Program()
    g = prog.global_block()
    i = g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    zero = g.create_var(name="zero", shape=[1], dtype="int64", need_check_feed=True)
    go = g.create_var(name="go", shape=[1], dtype="bool", need_check_feed=True)
    with prog.block_guard() as outer:
        c = outer.create_var(name="c", shape=[1], dtype="bool")
        outer.append_op("greater_equal", {"X": i, "Y": zero}, {"Out": c})
        with prog.block_guard() as inner:
            inner.append_op("increment", {"X": i}, {"Out": i})
            inner.append_op("greater_equal", {"X": i, "Y": zero}, {"Out": c})
        outer.append_op("while", {"X": [i, zero], "Condition": c},
                        {"Out": [i, c], "StepScopes": "s_in"}, {"sub_block": inner})
        outer.append_op("logical_not", {"X": go}, {"Out": go})
    g.append_op("while", {"X": [i, zero, go], "Condition": go},
                {"Out": [i, go], "StepScopes": "s"}, {"sub_block": outer})
    with pytest.raises(hr.OpError) as info:
        hr.Executor().run(prog, feed={**feed(0), "go": np.array([True])}, fetch_list=["i"],
                          scope=hr.Scope())
    assert (info.value.op_type, info.value.block_idx, info.value.op_idx) == ("while", 1, 1)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_bad_limits_are_refused(bad):
    with pytest.raises(ValueError, match="positive integer"):
        headrace_control.set_max_while_steps(bad)


def test_default_and_environment_variable(monkeypatch):
    old = headrace_control.max_while_steps()
    try:
        monkeypatch.delenv(limits.MAX_WHILE_STEPS_ENV, raising=False)
        headrace_control.set_max_while_steps(None)
        assert headrace_control.max_while_steps() == limits.DEFAULT_MAX_WHILE_STEPS
        monkeypatch.setenv(limits.MAX_WHILE_STEPS_ENV, "123")
        headrace_control.set_max_while_steps(None)
        assert headrace_control.max_while_steps() == 123
        monkeypatch.setenv(limits.MAX_WHILE_STEPS_ENV, "many")
        with pytest.raises(ValueError, match="HEADRACE_MAX_WHILE_STEPS='many'"):
            headrace_control.set_max_while_steps(None)
    finally:
        headrace_control.set_max_while_steps(old)


def test_environment_variable_read_at_import():
    env = {**os.environ, limits.MAX_WHILE_STEPS_ENV: "17"}
    out = subprocess.run([sys.executable, "-c", "import headrace_control as c; "
                          "print(c.max_while_steps())"], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "17"


# -- the other guards: array length and the memory a loop keeps (issue 10) ----------------------

def test_a_huge_array_index_is_refused_not_allocated():
    # write_to_array at I = 2**40 used to append None entries until memory ran out.
    prog = hr.Program()
    g = prog.global_block()
    x = g.create_var(name="x", shape=[2], dtype="float32", need_check_feed=True)
    i = g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    arr = g.create_var(name="arr", type="lod_tensor_array", dtype="float32")
    g.append_op("write_to_array", {"X": x, "I": i}, {"Out": arr})
    t0 = time.perf_counter()
    with pytest.raises(hr.OpError, match="1099511627776 would make the tensor array longer "
                                         "than the limit of 10000000") as e:
        hr.Executor().run(prog, feed={"x": np.ones(2, np.float32),
                                      "i": np.array([2**40], np.int64)}, fetch_list=[],
                          scope=hr.Scope())
    assert time.perf_counter() - t0 < 5
    assert "set_max_array_length" in str(e.value) and "HEADRACE_MAX_ARRAY_LENGTH" in str(e.value)
    old = headrace_control.set_max_array_length(4)
    try:
        with pytest.raises(hr.OpError, match="limit of 4 entries"):
            hr.Executor().run(prog, feed={"x": np.ones(2, np.float32),
                                          "i": np.array([4], np.int64)}, fetch_list=[],
                              scope=hr.Scope())
        hr.Executor().run(prog, feed={"x": np.ones(2, np.float32), "i": np.array([3], np.int64)},
                          fetch_list=[], scope=hr.Scope())
    finally:
        headrace_control.set_max_array_length(old)


def test_a_loop_keeping_too_much_for_its_gradient_stops_before_memory_runs_out():
    # An endless loop over a growing value kept every step for the backward pass: memory grew
    # by ~30 MiB/s with nothing to stop it before the step limit. The memory guard stops it.
    prog = hr.Program()
    g = prog.global_block()
    i = g.create_var(name="i", shape=[1], dtype="int64", need_check_feed=True)
    zero = g.create_var(name="zero", shape=[1], dtype="int64", need_check_feed=True)
    x = g.create_var(name="x", shape=[1000], dtype="float64", need_check_feed=True)
    c = g.create_var(name="c", shape=[1], dtype="bool")
    g.append_op("greater_equal", {"X": i, "Y": zero}, {"Out": c})
    with prog.block_guard() as body:
        y = body.create_var(name="y", shape=[1000], dtype="float64")
        body.append_op("scale", {"X": x}, {"Out": y}, {"scale": 2.0})
        body.append_op("increment", {"X": i}, {"Out": i})
        body.append_op("greater_equal", {"X": i, "Y": zero}, {"Out": c})
    g.append_op("while", {"X": [i, zero, x], "Condition": c},
                {"Out": [i, c], "StepScopes": "s"}, {"sub_block": body})
    old = headrace_control.set_max_while_memory(1 << 20)
    try:
        with pytest.raises(hr.OpError, match="keeps .* bytes for its gradient, over the limit "
                                             "of 1048576") as e:
            hr.Executor().run(prog, feed={**feed(0), "x": np.ones(1000)}, fetch_list=["i"],
                              scope=hr.Scope())
        assert "set_max_while_memory" in str(e.value) and "is_test" in str(e.value)
    finally:
        headrace_control.set_max_while_memory(old)


@pytest.mark.parametrize("env, setter, getter", [
    (limits.MAX_ARRAY_LENGTH_ENV, "set_max_array_length", "max_array_length"),
    (limits.MAX_WHILE_MEMORY_ENV, "set_max_while_memory", "max_while_memory")])
def test_the_other_limits_take_the_environment_and_refuse_bad_values(monkeypatch, env, setter,
                                                                     getter):
    set_, get = getattr(headrace_control, setter), getattr(headrace_control, getter)
    old = get()
    try:
        monkeypatch.setenv(env, "123")
        set_(None)
        assert get() == 123
        for bad in (0, -1, 2.5, True):
            with pytest.raises(ValueError, match="positive integer"):
                set_(bad)
        monkeypatch.setenv(env, "lots")
        with pytest.raises(ValueError, match=f"{env}='lots'"):
            set_(None)
    finally:
        set_(old)
