"""The executor's compiled per-run step (runtime/_step.pyx): once a run's plan is cached, every
later run takes it, so the checks and messages of the first run must hold there too."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import HeadraceError, OpError
from headrace.ops import In, OpDef, Out, build_registry, hookimpl
from headrace.ops.shape import same_as
from headrace.runtime import FeedError, FetchError


def chain():
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    y = b.var(b.append_op("scale", {"X": x}, {"Out": "y"}, {"scale": 2.0}).output("Out")[0])
    return prog, x, y


def test_a_cached_plans_runs_check_and_convert_their_feeds():
    prog, x, y = chain()
    exe, scope = hr.Executor(), hr.Scope()
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe.run(prog, feed={"x": data}, fetch_list=[y], scope=scope)   # prepares the plan
    with pytest.raises(FeedError, match="wrong dtype"):
        exe.run(prog, feed={"x": data.astype(np.float64)}, fetch_list=[y], scope=scope)
    with pytest.raises(FeedError, match="wrong shape"):
        exe.run(prog, feed={"x": data.reshape(3, 2)}, fetch_list=[y], scope=scope)
    for value in (data.tolist(), np.asfortranarray(data), data.astype(">f4"),
                  np.ascontiguousarray(np.repeat(data, 2, axis=1)[:, ::2])):
        (got,) = exe.run(prog, feed={"x": value}, fetch_list=[y], scope=scope)
        np.testing.assert_array_equal(got, data * 2)
    (got,) = exe.run(prog, feed={x: data}, fetch_list=["y"], scope=scope)   # a Variable key
    np.testing.assert_array_equal(got, data * 2)


def test_a_cached_plans_runs_check_their_fetch_list():
    prog, x, y = chain()
    exe, data = hr.Executor(), np.ones((1, 3), np.float32)
    exe.run(prog, feed={"x": data}, fetch_list=[y], scope=hr.Scope())
    with pytest.raises(FetchError, match="fetch_list items are Variables or names"):
        exe.run(prog, feed={"x": data}, fetch_list=[y, 3], scope=hr.Scope())
    with pytest.raises(HeadraceError, match="takes a Program"):
        exe.run("not a program", feed={"x": data}, fetch_list=[y])
    # A fetch is a copy, made anew each run; return_numpy=False gives a Tensor.
    first = exe.run(prog, feed={"x": data}, fetch_list=(y,), scope=hr.Scope())[0]
    first[...] = 7
    again = exe.run(prog, feed={"x": data}, fetch_list=(y,), scope=hr.Scope())[0]
    np.testing.assert_array_equal(again, data * 2)
    (t,) = exe.run(prog, feed={"x": data}, fetch_list=(y,), scope=hr.Scope(),
                   return_numpy=False)
    assert isinstance(t, hr.Tensor) and t.shape == (1, 3)


def test_a_persistable_missing_from_the_scope_is_named_on_a_cached_plan():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        y = hr.layers.fc(x, size=2)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    data = np.ones((2, 4), np.float32)
    exe.run(main, feed={"x": data}, fetch_list=[y], scope=scope)
    w = main.global_block().all_parameters()[0].name
    scope.erase(w)
    with pytest.raises(HeadraceError, match=f"persistable variable '{w}'.*not initialized"):
        exe.run(main, feed={"x": data}, fetch_list=[y], scope=scope)


def test_scope_none_is_the_current_global_scope_on_a_cached_plan():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        y = hr.layers.fc(x, size=2, bias_attr=False)
    exe, data = hr.Executor(), np.ones((1, 4), np.float32)
    w = main.global_block().all_parameters()[0].name
    results = []
    for value in (1.0, 2.0):
        scope = hr.Scope()
        exe.run(startup, scope=scope)
        scope.set(w, hr.Tensor(np.full((4, 2), value, np.float32)))
        with hr.scope_guard(scope):
            results.append(exe.run(main, feed={"x": data}, fetch_list=[y])[0])
    np.testing.assert_array_equal(results, [np.full((1, 2), 4.0), np.full((1, 2), 8.0)])


def _registry(out):
    """k_out: X -> Out, its kernel returning ``out(x)``."""
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(OpDef("k_out", inputs=[In("X")], outputs=[Out("Out")],
                                  infer=same_as("X")))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel("k_out", "cpu", lambda attrs, info: lambda x: (out(x),))
    return build_registry([("step-test", Plugin)], autoload=True)


def test_each_new_feed_signature_is_checked_after_a_cached_one():
    # The step skips the signature's tuple while the shapes and dtypes stay those of the last
    # checked run; a new shape is still a new signature whose first run checks the kernels.
    def out(x):   # a kernel whose result has another dtype at 3 rows
        return x * 2 if x.shape[0] != 3 else (x * 2).astype(np.float64)
    prog = hr.Program(registry=_registry(out))
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.append_op("k_out", {"X": x}, {"Out": "o"})
    exe = hr.Executor()
    for rows in (2, 2, 4, 2, 4):
        (got,) = exe.run(prog, feed={"x": np.ones((rows, 3), np.float32)}, fetch_list=["o"],
                         scope=hr.Scope())
        assert got.shape == (rows, 3) and got.dtype == np.float32
    rp = exe._run_plan(prog, ("x",), ("o",), False)
    assert rp.checked == {(((2, 3), np.dtype("float32")),), (((4, 3), np.dtype("float32")),)}
    with pytest.raises(OpError, match="does not match the variable's declaration"):
        exe.run(prog, feed={"x": np.ones((3, 3), np.float32)}, fetch_list=["o"],
                scope=hr.Scope())
