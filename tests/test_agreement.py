"""The run/eval agreement recorder (headrace.testing.agreement) finds disagreements, replays
each run signature once, and leaves out only what cannot agree by nature."""
import numpy as np

import headrace as hr
from headrace.framework import analysis
from headrace.testing import agreement
from headrace.testing.agreement import Recorder, compare


def scaled(random=None):
    """x -> y = 2x (+ a uniform_random r with ``random`` = its seed when given)."""
    main = hr.Program()
    b = main.global_block()
    b.create_var(name="x", shape=[2], dtype="float32", need_check_feed=True)
    b.create_var(name="y", shape=[2], dtype="float32")
    b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2.0})
    if random is not None:
        b.create_var(name="r", shape=[2], dtype="float32")
        b.append_op("uniform_random", {}, {"Out": ["r"]},
                    {"shape": [2], "min": 0.0, "max": 1.0, "seed": random})
    return main, b


FEED = {"x": np.array([1, 2], "float32")}


def record(rec, program, fetch, feed=FEED, exe=None):
    exe = exe or hr.Executor()
    scope = hr.Scope()
    case = rec.before(exe, program, feed, fetch, scope)
    # The plain run: the suite's own recorder must not replay these (one breaks prune).
    run = getattr(hr.Executor.run, "__wrapped__", hr.Executor.run)
    out = run(exe, program, feed=feed, fetch_list=fetch, scope=scope)
    if case is not None:
        rec.after(case, out)
    return case


def test_agreeing_runs_are_replayed_once_per_signature():
    main, _ = scaled()
    rec = Recorder()
    assert record(rec, main, ["y"]) is not None
    assert record(rec, main, ["y"]) is None  # the same plan again: nothing new to check
    assert record(rec, main, ["y", "x"]) is not None
    assert rec.checked == 2 and rec.take_problems() == []


def test_a_pruning_that_drops_a_needed_op_is_found(monkeypatch):
    main, _ = scaled()
    rec = Recorder()
    monkeypatch.setattr(analysis, "prune", lambda block, targets, feeds=(): [])
    record(rec, main, ["y"])
    (problem,) = rec.take_problems()
    assert "fetch ['y'] with feed ['x']" in problem and "run succeeded but eval failed" in problem


def test_different_values_are_found(monkeypatch):
    main, b = scaled()
    rec = Recorder()
    case = rec.before(hr.Executor(), main, FEED, ["y"], hr.Scope())
    rec.after(case, [np.array([2, 5], "float32")])  # not what the program computes
    (problem,) = rec.take_problems()
    assert "'y' differs: run [2. 5.]... vs eval [2. 4.]..." in problem


def test_unseeded_random_values_are_not_compared_seeded_ones_are():
    rec = Recorder()
    main, _ = scaled(random=0)
    record(rec, main, ["r", "y"])
    assert rec.skipped == {"unseeded random op": 1} and rec.checked == 1
    main, _ = scaled(random=7)
    record(rec, main, ["r"])
    assert rec.checked == 2 and rec.take_problems() == []


def test_runs_of_other_threads_are_replayed_at_teardown():
    import threading
    main, _ = scaled()
    rec = Recorder()
    t = threading.Thread(target=record, args=(rec, main, ["y"]))
    t.start()
    t.join()
    assert rec.checked == 0 and len(rec.pending) == 1
    rec.replay()
    assert rec.checked == 1 and rec.pending == [] and rec.take_problems() == []


def test_compare():
    assert compare(np.array([1, 2]), np.array([1, 2])) is None
    assert compare(np.array([1, 2]), np.array([1, 3])) is not None  # integers: exact
    assert compare(np.float32([1.0]), np.float32([1.0 + 1e-7])) is None
    assert "float32[1] vs float64[1]" in compare(np.float32([1]), np.float64([1]))
    assert compare(hr.Tensor(np.ones(2)), np.ones(2)) is None
    arr = hr.TensorArray([hr.Tensor(np.ones(2)), hr.Tensor(np.zeros(1))])
    assert compare(arr, [np.ones(2), np.zeros(1)]) is None
    assert compare(arr, [np.ones(2)]) == "a list of 2 vs a list of 1"


def test_the_suite_runs_with_the_recorder_installed():
    # tox.ini's [pytest] loads the plugin for the whole suite: run is the recorder's wrapper.
    assert hr.Executor.run.__wrapped__ is agreement._recorder._original
