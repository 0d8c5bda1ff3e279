"""Plan preparation's refusals: what a program that cannot run is told when its plan is prepared
(the per-op loop is compiled, runtime/_prepare.pyx; the messages and locations are the plan's).

Each error names the op (type, block, index in its block: ops skipped by the plan, the feed and
fetch ops and the ops pruning leaves out, still count) and what is wrong with it."""
import numpy as np
import pytest

import headrace as hr
from headrace.errors import HeadraceError, KernelNotFoundError, OpError
from headrace.ops import In, OpDef, Out, build_registry, hookimpl
from headrace.ops.shape import same_as


def _program(registry=None):
    """feed(x) -> scale -> s0 -> relu -> r -> fetch: ops 0 (feed) to 3 (fetch)."""
    prog = hr.Program(registry=registry) if registry is not None else hr.Program()
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.create_var(name="feed", type="feed_minibatch", persistable=True)
    b.create_var(name="fetch", type="fetch_list", persistable=True)
    b.append_op("feed", {"X": ["feed"]}, {"Out": [x]}, {"col": 0})
    b.append_op("scale", {"X": x}, {"Out": "s0"}, {"scale": 2.0})
    b.append_op("relu", {"X": "s0"}, {"Out": "r"})
    b.append_op("fetch", {"X": ["r"]}, {"Out": ["fetch"]}, {"col": 0})
    return prog


def _run(prog, fetch="r"):
    return hr.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32)},
                             fetch_list=[fetch], scope=hr.Scope())


def _located(e, op_type, op_idx):
    assert (e.op_type, e.block_idx, e.op_idx) == (op_type, 0, op_idx), str(e)
    assert f"op '{op_type}' (block 0, op #{op_idx})" in str(e)


def test_the_program_runs_as_built():
    np.testing.assert_allclose(_run(_program())[0], np.full((2, 3), 2.0))


@pytest.mark.parametrize("role", ["input", "output"])
def test_an_undeclared_variable_is_refused_at_its_op(role):
    prog = _program()
    relu = prog.global_block().ops[2]
    if role == "input":
        relu.rename_input("s0", "nope")
    else:
        relu.rename_output("r", "nope")
    with pytest.raises(OpError, match=f"{role} variable 'nope' is not declared in block 0 "
                                      f"or its ancestors") as e:
        _run(prog, fetch="s0")
    _located(e.value, "relu", 2)


def test_a_required_input_bound_to_empty_is_refused():
    prog = _program()
    prog.global_block().ops[2].rename_input("s0", "@EMPTY@")
    with pytest.raises(OpError, match="required input slot 'X' is bound to '@EMPTY@', the "
                                      "marker of a gradient nobody wants") as e:
        _run(prog, fetch="s0")
    _located(e.value, "relu", 2)


def test_an_op_no_plugin_defines_is_refused_at_its_op():
    prog = _program()
    prog.global_block().ops[2].desc.type = "no_such_op"
    parsed = hr.Program.parse_from_string(prog.serialize_to_string())
    assert parsed.global_block().ops[2].opdef is None
    with pytest.raises(OpError, match="no installed plugin defines this op type, so it cannot "
                                      "run") as e:
        _run(parsed, fetch="s0")
    _located(e.value, "no_such_op", 2)


class _Raises:
    """A kernel maker that raises ``error`` (made by the plan: the op's kernel)."""
    error = None

    def __init__(self, attrs, info=None):
        raise type(self).error


def _plugin_registry(maker, dtypes=None):
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(OpDef("k_prep", inputs=[In("X")], outputs=[Out("Out")],
                                  infer=same_as("X")))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel("k_prep", "cpu", maker, dtypes=dtypes)
    return build_registry([("prep-test", Plugin)], autoload=True)   # beside the installed


def _kernel_program(registry):
    """Ops 0-1 that run first (scale, relu), then k_prep (op #2)."""
    prog = hr.Program(registry=registry)
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.append_op("scale", {"X": x}, {"Out": "s0"}, {"scale": 2.0})
    b.append_op("relu", {"X": "s0"}, {"Out": "r"})
    b.append_op("k_prep", {"X": "r"}, {"Out": "k"})
    return prog


@pytest.mark.parametrize("error, cls, message", [
    (ValueError("bad attribute"), OpError,
     r"preparing its kernel failed: ValueError: bad attribute"),
    (OpError("the maker's own words"), OpError, r"the maker's own words"),
])
def test_a_kernel_makers_error_names_the_op(error, cls, message):
    class Maker(_Raises):
        pass
    Maker.error = error
    prog = _kernel_program(_plugin_registry(Maker))
    with pytest.raises(cls, match=message) as e:
        _run(prog, fetch="k")
    _located(e.value, "k_prep", 2)


def test_a_headrace_error_of_a_maker_passes_as_it_is():
    class Maker(_Raises):
        error = HeadraceError("plugin trouble")
    prog = _kernel_program(_plugin_registry(Maker))
    with pytest.raises(HeadraceError, match="^plugin trouble$") as e:
        _run(prog, fetch="k")
    assert type(e.value) is HeadraceError


def test_no_kernel_for_the_dtype_names_the_op():
    prog = _kernel_program(_plugin_registry(lambda attrs, info=None: None, ["float64"]))
    with pytest.raises(KernelNotFoundError, match="no kernel for device 'cpu' and dtype "
                                                  "float32") as e:
        _run(prog, fetch="k")
    _located(e.value, "k_prep", 2)


def test_pruned_ops_are_not_prepared_and_indices_stay_the_blocks():
    # eval of s0 prepares scale alone: relu's undeclared input is never looked at.
    prog = _program()
    prog.global_block().ops[2].rename_input("s0", "nope")
    s0 = prog.global_block().var("s0")
    got = hr.Executor().eval(s0, feed={"x": np.ones((2, 3), np.float32)}, scope=hr.Scope())
    np.testing.assert_allclose(got, np.full((2, 3), 2.0))


# -- the reads the executor checks ----------------------------------------------------------------

def _loop_program():
    """fc layers, an @EMPTY@ gradient, SGD's in-place updates, a while loop whose body reads
    outer names (y: first there, fed), and a cond reading a fed flag."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        y = hr.layers.data("y", shape=[1], dtype="float32", append_batch_size=False)
        h = hr.layers.fc(hr.layers.fc(x, size=4, act="relu"), size=3)
        loss = hr.layers.mean(hr.layers.concat([h, x], axis=1))   # x@GRAD: @EMPTY@
        hr.optimizer.SGD(learning_rate=0.1).minimize(loss)
        i = hr.layers.fill_constant([1], "int64", 0)
        n = hr.layers.fill_constant([1], "int64", 3)
        acc = hr.layers.fill_constant([1], "float32", 0.0)
        cond = hr.layers.less_than(i, n)
        with hr.layers.While(cond).block():
            hr.layers.increment(i)
            hr.layers.assign(hr.layers.elementwise_add(hr.layers.elementwise_add(acc, y),
                                                       loss), acc)
            hr.layers.less_than(i, n, cond=cond)
        flag = hr.layers.data("flag", shape=[1], dtype="bool", append_batch_size=False)
        picked = hr.layers.cond(flag, lambda: hr.layers.scale(acc, 2.0),
                                lambda: hr.layers.scale(loss, 3.0))
    return main, startup, loss, picked


@pytest.mark.parametrize("prune", [False, True])
def test_the_plans_exposed_reads_are_analysis_exposed_reads(prune):
    from headrace.framework import analysis
    main, startup, loss, picked = _loop_program()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((2, 4), np.float32), "flag": np.array([True]),
            "y": np.ones(1, np.float32)}
    if prune:
        exe.eval(picked, feed=feed, scope=scope)
    else:
        exe.run(main, feed=feed, fetch_list=[picked], scope=scope)
    plan = exe._run_plan(main, ("flag", "x", "y"), (picked.name,), prune).plan
    ops = [ins.op for ins in plan.instrs]
    assert any(op.sub_blocks() for op in ops), "no op owns a block: the test lost its point"
    want = list(analysis.exposed_reads(ops))
    assert plan.exposed_reads == want
    assert [op.type for op, n in want if n == "y"] == ["while"]   # read in the loop's body
    assert {"x", "flag"} <= {n for _, n in want}


def test_a_read_nothing_wrote_is_refused_before_the_run():
    main, startup, loss, picked = _loop_program()
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((2, 4), np.float32), "flag": np.array([True])}
    with pytest.raises(HeadraceError, match=r"variable 'y' is read by op 'while' "
                                            r"\(block 0, op #\d+\) but is neither fed nor "
                                            r"computed before it: add it to feed"):
        exe.run(main, feed=feed, fetch_list=[picked], scope=scope)
    feed["y"] = np.ones(1, np.float32)
    fc_w = [v for v in main.global_block().vars.values() if v.persistable and
            v.name.endswith(".w_0")][0]
    with pytest.raises(HeadraceError, match=f"persistable variable '{fc_w.name}' .* is not "
                                            f"initialized in the scope"):
        exe.run(main, feed=feed, fetch_list=[picked], scope=hr.Scope())


def _scope_bindings_by_hand(plan, fed):
    """The executor's loads and stores as its Python loops made them (the reference)."""
    facts, variables = plan.slots.facts, plan.slots.vars
    loads = [(i, v.name) for i, v in enumerate(variables)
             if v is not None and facts[i][1].persistable and i not in fed]
    written, todo = set(), [plan]
    while todo:
        p = todo.pop()
        todo.extend(p._subplans.values())
        for ins in p.instrs:
            for i in ins.out_ids:
                written.update(j for j in (i if type(i) is tuple else (i,)) if j > 0)
    stores = [(i, variables[i].name, facts[i][1].lod_level > 0)
              for i in sorted(written) if facts[i][1].persistable]
    return loads, stores


def test_what_a_run_reads_from_and_writes_back_to_the_scope():
    # SGD's parameters (read and written), the learning rate (read only), and a persistable
    # counter written only inside the loop's body (its sub-plan): back in the scope after.
    main, startup, loss, picked = _loop_program()
    with hr.program_guard(main, startup):
        steps = hr.layers.create_global_var([1], 0, "int64", persistable=True, name="steps")
        i = hr.layers.fill_constant([1], "int64", 0)
        cond = hr.layers.less_than(i, hr.layers.fill_constant([1], "int64", 2))
        with hr.layers.While(cond).block():
            hr.layers.increment(i)
            hr.layers.increment(steps)
            hr.layers.less_than(i, hr.layers.fill_constant([1], "int64", 2), cond=cond)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((2, 4), np.float32), "flag": np.array([True]),
            "y": np.ones(1, np.float32)}
    exe.run(main, feed=feed, fetch_list=[picked], scope=scope)
    rp = exe._run_plan(main, ("flag", "x", "y"), (picked.name,), False)
    fed = {s for _, s, _, _ in rp.feeds}
    assert (rp.loads, rp.stores) == _scope_bindings_by_hand(rp.plan, fed)
    stored = {name for _, name, _ in rp.stores}
    assert "steps" in stored and {n for _, n in rp.loads} - stored   # a read-only one too
    exe.run(main, feed=feed, fetch_list=[picked], scope=scope)
    assert scope.find("steps").numpy().tolist() == [4]


def _work_registry(out, work):
    """k_work: X -> Out and an intermediate Work, its kernel returning ``out(x)``,
    ``work(x)``."""
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(OpDef("k_work", inputs=[In("X")],
                                  outputs=[Out("Out"), Out("Work", intermediate=True)],
                                  infer=same_as("X")))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel("k_work", "cpu", lambda attrs, info: lambda x: (out(x), work(x)))
    return build_registry([("work-test", Plugin)], autoload=True)


@pytest.mark.parametrize("out, refused", [
    (lambda x: x * 2, False),
    (lambda x: (x * 2).astype(np.float64), True),     # another dtype
    (lambda x: (x * 2).reshape(-1), True),            # another rank
])
def test_the_first_run_checks_the_outputs_preparing_listed(out, refused):
    # Preparing lists per instruction what its first run checks (Instr.checks): the stored
    # outputs but the intermediate ones, with their declared dtype and rank.
    registry = _work_registry(out, lambda x: np.zeros(7, np.uint8))   # Work: not checked
    prog = hr.Program(registry=registry)
    b = prog.global_block()
    x = b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.append_op("scale", {"X": x}, {"Out": "s0"}, {"scale": 2.0})
    b.append_op("relu", {"X": "s0"}, {"Out": "r"})
    b.append_op("k_work", {"X": "r"}, {"Out": "o", "Work": "w"})   # (op #2)
    exe = hr.Executor()
    plan = exe._run_plan(prog, ("x",), ("o",), False).plan
    o = plan.slots.slot(b.var("o"))
    assert plan.instrs[-1].checks == (o, np.dtype("float32"), 2)
    assert [ins.checks for ins in plan.instrs[:2]] == [
        (plan.slots.slot(b.var(n)), np.dtype("float32"), 2) for n in ("s0", "r")]
    x = np.ones((2, 3), np.float32)
    if refused:
        with pytest.raises(OpError, match="does not match the variable's declaration") as e:
            exe.run(prog, feed={"x": x}, fetch_list=["o"], scope=hr.Scope())
        _located(e.value, "k_work", 2)
    else:
        got = exe.run(prog, feed={"x": x}, fetch_list=["o"], scope=hr.Scope())[0]
        np.testing.assert_allclose(got, np.full((2, 3), 4.0))
