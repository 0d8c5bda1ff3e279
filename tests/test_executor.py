"""Executor semantics: feeds and fetches, persistables in scopes, eval pruning, plan caching."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime import FeedError, FetchError
from headrace.runtime.place import DeviceUnavailableError


def chain(n=3):
    """x -> scale(2) -> scale(3) ... a program of n scale ops, returning (prog, x, outs)."""
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    outs, v = [], x
    for i in range(n):
        v = b.var(b.append_op("scale", {"X": v}, {"Out": f"s{i}"},
                              {"scale": float(i + 2)}).output("Out")[0])
        outs.append(v)
    return prog, x, outs


def test_run_fetch_by_variable_and_name():
    prog, x, outs = chain()
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    a, b = hr.Executor().run(prog, feed={"x": data}, fetch_list=[outs[-1], "s0"],
                             scope=hr.Scope())
    np.testing.assert_allclose(a, data * 2 * 3 * 4)
    np.testing.assert_allclose(b, data * 2)


def test_fetch_returns_copies_and_tensors():
    prog, x, outs = chain(1)
    data = np.ones((1, 3), np.float32)
    (t,) = hr.Executor().run(prog, feed={"x": data}, fetch_list=[outs[0]], scope=hr.Scope(),
                             return_numpy=False)
    assert isinstance(t, hr.Tensor) and t.shape == (1, 3)


def test_feed_can_be_fetched_and_variables_as_keys():
    prog, x, outs = chain(1)
    data = np.ones((2, 3), np.float32)
    (got,) = hr.Executor().run(prog, feed={x: data}, fetch_list=[x], scope=hr.Scope())
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize("value, message", [
    (np.ones((2, 3), np.float64), "wrong dtype"),
    (np.ones((2, 4), np.float32), "wrong shape"),
    (np.ones((3,), np.float32), "wrong shape"),
])
def test_feed_checks_dtype_and_shape(value, message):
    prog, x, outs = chain(1)
    with pytest.raises(FeedError, match=message) as e:
        hr.Executor().run(prog, feed={"x": value}, fetch_list=[outs[0]], scope=hr.Scope())
    assert "'x'" in str(e.value) and "expected" in str(e.value)


def test_feed_accepts_lists_and_noncontiguous_readonly_arrays():
    prog, x, outs = chain(1)
    big = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = big[:, ::2]
    view.flags.writeable = False
    (a,) = hr.Executor().run(prog, feed={"x": view}, fetch_list=[outs[0]], scope=hr.Scope())
    np.testing.assert_allclose(a, view * 2)
    (b,) = hr.Executor().run(prog, feed={"x": [[1, 2, 3]]}, fetch_list=[outs[0]],
                             scope=hr.Scope())
    np.testing.assert_allclose(b, [[2, 4, 6]])


def test_missing_feed_and_unknown_names_are_errors():
    prog, x, outs = chain(1)
    with pytest.raises(FeedError, match="neither fed nor computed"):
        hr.Executor().run(prog, feed={}, fetch_list=[outs[0]], scope=hr.Scope())
    with pytest.raises(FeedError, match="not a variable"):
        hr.Executor().run(prog, feed={"nope": np.ones(1)}, fetch_list=[], scope=hr.Scope())
    with pytest.raises(FetchError, match="not a variable"):
        hr.Executor().run(prog, feed={"x": np.ones((1, 3), np.float32)}, fetch_list=["nope"],
                          scope=hr.Scope())


def test_a_loop_bodys_unfed_and_uninitialized_reads_are_named():
    """What a loop's body reads before anything writes it is checked as the root block's own
    reads are (Executor._check_inputs over the plan's exposed reads, compiled in
    _prepare.exposed_inputs): a data variable nobody feeds, a parameter not in the scope."""
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = hr.layers.data("x", shape=[-1, 2], dtype="float32")
        y = hr.layers.data("y", shape=[-1, 2], dtype="float32")   # read in the body only
        w = main.global_block().create_parameter("w", shape=[2], dtype="float32")
        i = hr.layers.fill_constant([1], "int64", 0)
        n = hr.layers.fill_constant([1], "int64", 2)
        cond = hr.layers.less_than(i, n)
        with hr.layers.While(cond).block():
            hr.layers.assign(hr.layers.elementwise_add(hr.layers.elementwise_add(x, y), w),
                             output=x)
            hr.layers.increment(i)
            hr.layers.less_than(i, n, cond=cond)
    exe, scope = hr.Executor(), hr.Scope()
    ones = np.ones((1, 2), np.float32)
    with pytest.raises(FeedError, match="variable 'y' is read by op 'while'.*neither fed"):
        exe.run(main, feed={"x": ones}, fetch_list=[x], scope=scope)
    with pytest.raises(hr.HeadraceError, match="persistable variable 'w' .*not initialized"):
        exe.run(main, feed={"x": ones, "y": ones}, fetch_list=[x], scope=scope)
    scope.set("w", hr.Tensor(np.full(2, 0.5, np.float32)))
    out, = exe.run(main, feed={"x": ones, "y": ones}, fetch_list=[x], scope=scope)
    np.testing.assert_allclose(out, [[4.0, 4.0]])   # twice x + y + w


def test_persistables_live_in_the_scope():
    prog = hr.Program()
    b = prog.global_block()
    w = b.create_parameter("w", shape=[3])
    b.append_op("scale", {"X": w}, {"Out": w}, {"scale": 2.0})  # in place: w = 2 w
    scope = hr.Scope()
    exe = hr.Executor()
    with pytest.raises(hr.HeadraceError, match="run the startup program"):
        exe.run(prog, scope=scope)
    scope.set("w", hr.Tensor(np.ones(3, np.float32)))
    exe.run(prog, scope=scope)
    exe.run(prog, scope=scope)
    np.testing.assert_allclose(scope.find("w").numpy(), [4, 4, 4])
    # Non-persistable temporaries do not outlive the run.
    assert scope.names() == ["w"]


def test_scope_guard_and_global_scope():
    prog = hr.Program()
    b = prog.global_block()
    w = b.create_parameter("w2", shape=[1])
    b.append_op("scale", {"X": w}, {"Out": w}, {"bias": 1.0})
    mine = hr.Scope()
    mine.set("w2", hr.Tensor(np.zeros(1, np.float32)))
    with hr.scope_guard(mine):
        assert hr.global_scope() is mine
        hr.Executor().run(prog)
    assert hr.global_scope() is not mine
    np.testing.assert_allclose(mine.find("w2").numpy(), [1])


def test_child_scope_lookup():
    parent = hr.Scope()
    parent.set("a", 1)
    kid = parent.new_scope()
    kid.set("b", 2)
    assert kid.find("a") == 1 and kid.find("b") == 2 and parent.find("b") is None


def test_eval_runs_only_what_targets_need():
    prog, x, outs = chain(3)
    exe = hr.Executor()
    got = exe.eval(outs[0], feed={"x": np.ones((1, 3), np.float32)}, scope=hr.Scope())
    np.testing.assert_allclose(got, [[2, 2, 2]])
    rp = exe._run_plan(prog, ("x",), (outs[0].name,), True)   # the plan eval prepared
    assert [ins.op.output("Out")[0] for ins in rp.plan.instrs] == ["s0"]


def test_plans_are_cached_per_revision():
    prog, x, outs = chain(2)
    exe = hr.Executor()
    feed = {"x": np.ones((1, 3), np.float32)}
    exe.run(prog, feed=feed, fetch_list=[outs[-1]], scope=hr.Scope())
    plan1 = exe._run_plan(prog, ("x",), (outs[-1].name,), False)
    exe.run(prog, feed=feed, fetch_list=[outs[-1]], scope=hr.Scope())
    assert exe._run_plan(prog, ("x",), (outs[-1].name,), False) is plan1
    b = prog.global_block()
    b.append_op("scale", {"X": outs[-1]}, {"Out": "more"}, {"scale": 10.0})
    (got,) = exe.run(prog, feed=feed, fetch_list=["more"], scope=hr.Scope())
    np.testing.assert_allclose(got, [[60, 60, 60]])
    assert exe._run_plan(prog, ("x",), (outs[-1].name,), False) is not plan1


def test_kernel_errors_name_the_op_and_source_line():
    prog = hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, -1], dtype="float32", need_check_feed=True)
    y = b.create_var(name="y", shape=[-1, -1], dtype="float32", need_check_feed=True)
    b.append_op("mul", {"X": x, "Y": y}, {"Out": "z"})  # the line the error must name
    with pytest.raises(hr.OpError) as e:
        hr.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32),
                                      "y": np.ones((4, 5), np.float32)},
                          fetch_list=["z"], scope=hr.Scope())
    msg = str(e.value)
    assert "'mul'" in msg and "block 0" in msg and "op #0" in msg
    assert "test_executor.py" in msg and 'b.append_op("mul"' in msg


def test_lod_tensor_helpers():
    t = hr.create_lod_tensor(np.arange(5.0).reshape(5, 1), [[2, 3]])
    assert t.lod == [[0, 2, 5]] and t.recursive_sequence_lengths() == [[2, 3]]
    from headrace.runtime.tensor import LoDError
    with pytest.raises(LoDError, match="ends at"):
        hr.create_lod_tensor(np.zeros((4, 1)), [[2, 3]])


def test_cuda_place_without_backend_is_a_clear_error(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_numba(name, *a, **k):
        if name == "numba" or name.startswith("numba."):
            raise ImportError("No module named 'numba'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_numba)
    import sys
    monkeypatch.delitem(sys.modules, "headrace.devices.cuda", raising=False)
    with pytest.raises(DeviceUnavailableError, match="CUDAPlace\\(0\\).*not available"):
        hr.Executor(hr.CUDAPlace(0))


def test_preparing_a_plan_pauses_the_garbage_collector_and_restores_it(monkeypatch):
    import gc
    from headrace.runtime import executor as ex
    seen = []
    real = ex._RunPlan.__init__

    def spy(self, *args):
        seen.append(gc.isenabled())
        real(self, *args)

    monkeypatch.setattr(ex._RunPlan, "__init__", spy)
    data = np.ones((2, 3), np.float32)
    was = gc.isenabled()
    try:
        gc.enable()
        prog, x, outs = chain()
        hr.Executor().run(prog, feed={"x": data}, fetch_list=[outs[-1]], scope=hr.Scope())
        assert seen and not any(seen) and gc.isenabled()
        with pytest.raises(FeedError):   # preparation fails: the collector is back on
            hr.Executor().run(prog, feed={}, fetch_list=[outs[-1]], scope=hr.Scope())
        assert gc.isenabled()
        gc.disable()   # the user's choice stays
        n = len(seen)
        prog, x, outs = chain()
        hr.Executor().run(prog, feed={"x": data}, fetch_list=[outs[-1]], scope=hr.Scope())
        assert len(seen) > n and not any(seen) and not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_what_preparing_made_goes_to_the_oldest_generation_unless_the_process_froze_some():
    # The first collection after the pause would look at every object the plan made (16,000
    # for a 1603-op program): they are promoted at once. Objects the process froze itself
    # (gc.freeze(), before forking workers) stay frozen: the promotion is skipped.
    import gc
    data = np.ones((2, 3), np.float32)
    was = gc.isenabled()
    try:
        gc.enable()
        gc.collect()
        prog, x, outs = chain(50)
        exe = hr.Executor()
        exe.run(prog, feed={"x": data}, fetch_list=[outs[-1]], scope=hr.Scope())
        rp = exe._run_plan(prog, ("x",), (outs[-1].name,), False)
        young = {id(o) for o in gc.get_objects(0)} | {id(o) for o in gc.get_objects(1)}
        made = [i for i in rp.plan.instrs if gc.is_tracked(i)]
        assert len(made) == 50 and not any(id(i) in young for i in made)
        sentinel = [object()]
        gc.freeze()
        prog, x, outs = chain(50)
        hr.Executor().run(prog, feed={"x": data}, fetch_list=[outs[-1]], scope=hr.Scope())
        assert gc.get_freeze_count() and gc.isenabled()
        assert not any(o is sentinel for g in range(3) for o in gc.get_objects(g))
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()
