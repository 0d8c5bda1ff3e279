"""framework.analysis: reads and writes through sub-blocks, pruning, the feed check; and its
users (Executor.run, Executor.eval, io.inference_program) agreeing on them."""
import numpy as np
import pytest

import headrace as hr
from headrace import io as hio
from headrace.errors import HeadraceError
from headrace.framework import analysis
from headrace.framework.builder import dtype_enum
from headrace.runtime import FeedError


def counting_loop(out=("i", "c")):
    """``while c: i += 1; y = i; c = i < n``: y is written only by the body, n read only by
    it. ``out`` is what the while's Out slot lists (y is deliberately not in it by default)."""
    prog = hr.Program()
    b = prog.global_block()
    b.create_var(name="c", shape=[1], dtype="bool")
    for n in ("i", "n", "y"):
        b.create_var(name=n, shape=[1], dtype="int64", need_check_feed=n != "y")
    with prog.block_guard() as body:
        body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
        body.append_op("assign", {"X": ["i"]}, {"Out": ["y"]})
        body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["c"]})
    steps = b.create_var(name="steps", type="step_scopes")
    loop = b.append_op("while", {"X": ["i"], "Condition": ["c"]},
                       {"Out": list(out), "StepScopes": [steps.name]},
                       {"sub_block": body, "is_test": False})
    return prog, b, body, loop


FEED = {"c": np.array([True]), "i": np.array([0]), "n": np.array([3])}


def test_eval_of_a_value_written_only_inside_a_while_body():
    # The regression: eval's pruning read only the while's Out slot, dropped the loop, and
    # then found no value for y, while run (no pruning) computed it.
    prog, b, _, loop = counting_loop()
    assert "y" not in loop.output_arg_names and "y" in analysis.writes(loop)
    exe = hr.Executor()
    (ran,) = exe.run(prog, feed=FEED, fetch_list=["y"], scope=hr.Scope())
    evaluated = exe.eval(b.var("y"), feed=FEED, scope=hr.Scope())
    np.testing.assert_array_equal(ran, [3])
    np.testing.assert_array_equal(evaluated, ran)


def nested():
    """global: fill n; ident-like assign z (unrelated); conditional_block(c0) whose block 1
    declares k and wc and runs a while(wc) whose body (block 2) increments i, writes y, k, wc."""
    prog = hr.Program()
    g = prog.global_block()
    g.create_var(name="c0", shape=[1], dtype="bool")
    for n in ("i", "n", "y", "z"):
        g.create_var(name=n, shape=[1], dtype="int64")
    g.append_op("fill_constant", {}, {"Out": ["n"]},
                {"shape": [1], "dtype": dtype_enum("int64"), "value": 3.0})
    g.append_op("assign", {"X": ["i"]}, {"Out": ["z"]})
    with prog.block_guard() as sub:
        sub.create_var(name="k", shape=[1], dtype="int64")
        sub.create_var(name="wc", shape=[1], dtype="bool")
        sub.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["wc"]})
        with prog.block_guard() as body:
            body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
            body.append_op("assign", {"X": ["i"]}, {"Out": ["y"]})
            body.append_op("assign", {"X": ["i"]}, {"Out": ["k"]})
            body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["wc"]})
        steps = sub.create_var(name="wsteps", type="step_scopes")
        loop = sub.append_op("while", {"X": [], "Condition": ["wc"]},
                             {"StepScopes": [steps.name]}, {"sub_block": body})
    scope = g.create_var(name="cscope", type="step_scopes")
    cond = g.append_op("conditional_block", {"Cond": ["c0"], "Input": []},
                       {"Scope": [scope.name]},
                       {"sub_block": sub, "is_scalar_condition": True})
    return prog, g, sub, body, loop, cond


def test_reads_and_writes_through_nested_sub_blocks():
    prog, g, sub, body, loop, cond = nested()
    # The while writes k and wc of block 1 and i, y of the global block, all from its body.
    assert set(analysis.writes(loop)) == {"wsteps", "i", "y", "k", "wc"}
    assert set(analysis.reads(loop)) == {"wc", "i", "n"}
    # Seen from the global block, block 1's own k, wc, wsteps are local and invisible.
    assert set(analysis.writes(cond)) == {"cscope", "i", "y"}
    assert set(analysis.reads(cond)) == {"c0", "i", "n"}
    assert set(analysis.block_writes(body)) == {"i", "y", "k", "wc"}
    assert analysis.reachable_blocks(g) == {0, 1, 2}
    assert analysis.reachable_blocks(sub) == {1, 2}


def test_prune_keeps_writers_through_sub_blocks_and_what_they_read():
    prog, g, sub, body, loop, cond = nested()
    fill, unrelated = g.ops[0], g.ops[1]
    assert analysis.prune(g, ["y"]) == [fill, cond]
    assert analysis.prune(g, ["z"]) == [unrelated]
    assert analysis.prune(g, ["y"], feeds=["n"]) == [cond]  # a fed name cuts the graph
    assert analysis.prune(g, ["k"]) == []  # local to block 1: nothing global writes it
    feed = {"c0": np.array([True]), "i": np.array([0])}
    exe = hr.Executor()
    (ran,) = exe.run(prog, feed=feed, fetch_list=["y"], scope=hr.Scope())
    np.testing.assert_array_equal(ran, [3])
    np.testing.assert_array_equal(exe.eval(g.var("y"), feed=feed, scope=hr.Scope()), ran)


def test_first_unsatisfied_read_names_the_reading_op_inside_sub_blocks():
    prog, g, sub, body, loop, cond = nested()
    assert analysis.first_unsatisfied_read(g.ops, ["c0", "i"]) is None
    # i is read first by the global assign; without it, by the less_than of block 1.
    op, name = analysis.first_unsatisfied_read(g.ops, ["c0"])
    assert (op.type, op.block.idx, op.idx, name) == ("assign", 0, 1, "i")
    op, name = analysis.first_unsatisfied_read(analysis.prune(g, ["y"]), ["c0"])
    assert (op.type, op.block.idx, op.idx, name) == ("less_than", 1, 0, "i")
    with pytest.raises(FeedError, match=r"variable 'i' is read by op 'less_than' \(block 1, "
                                        r"op #0\) but is neither fed nor computed"):
        hr.Executor().eval(g.var("y"), feed={"c0": np.array([True])}, scope=hr.Scope())


def test_a_loop_body_may_compute_what_it_reads_and_persistables_come_from_the_scope():
    prog = hr.Program()
    g = prog.global_block()
    g.create_var(name="c", shape=[1], dtype="bool")
    g.create_var(name="t", shape=[1], dtype="int64")  # written in the body before it is read
    g.create_var(name="p", shape=[1], dtype="int64", persistable=True)
    with prog.block_guard() as body:
        body.append_op("assign", {"X": ["p"]}, {"Out": ["t"]})
        body.append_op("less_than", {"X": ["t"], "Y": ["p"]}, {"Out": ["c"]})
    steps = g.create_var(name="steps", type="step_scopes")
    g.append_op("while", {"Condition": ["c"]}, {"StepScopes": [steps.name]},
                {"sub_block": body})
    assert analysis.first_unsatisfied_read(g.ops, ["c"]) is None
    assert [(o.type, n) for o, n in analysis.exposed_reads(g.ops, ["c"])] == [("assign", "p")]
    op, name = analysis.first_unsatisfied_read(g.ops, [])
    assert (op.type, name) == ("while", "c")


def test_a_variable_read_before_it_is_written():
    prog = hr.Program()
    g = prog.global_block()
    for n in ("a", "b", "x"):
        g.create_var(name=n, shape=[1], dtype="float32", need_check_feed=n == "x")
    first = g.append_op("scale", {"X": ["b"]}, {"Out": ["a"]}, {"scale": 2.0})
    g.append_op("scale", {"X": ["x"]}, {"Out": ["b"]}, {"scale": 2.0})
    assert analysis.first_unsatisfied_read(g.ops, ["x"]) == (first, "b")
    assert analysis.first_unsatisfied_read(g.ops, ["x", "b"]) is None
    assert analysis.first_unsatisfied_read(g.ops[1:], []) == (g.ops[1], "x")
    with pytest.raises(FeedError, match=r"'b' is read by op 'scale' \(block 0, op #0\) but is "
                                        r"neither fed nor computed before it$"):
        hr.Executor().run(prog, feed={"x": np.ones(1, "float32")}, fetch_list=["a"],
                          scope=hr.Scope())
    with pytest.raises(FeedError, match=r"'x' .* before it: add it to feed"):
        hr.Executor().eval(g.var("b"), feed={}, scope=hr.Scope())


def test_in_place_updates_keep_the_value_they_update(progs):
    main, startup = progs
    x = hr.layers.data("x", shape=[-1, 3], dtype="float32")
    loss = hr.layers.mean(hr.layers.fc(x, size=2))
    hr.optimizer.SGD(learning_rate=0.5).minimize(loss)
    block = main.global_block()
    sgd = [op for op in block.ops if op.type == "sgd"]
    w = sgd[0].input("Param")[0]
    assert sgd[0].output("ParamOut") == [w]
    assert w in analysis.reads(sgd[0]) and w in analysis.writes(sgd[0])
    kept = analysis.prune(block, [w], ["x"])
    # The updated weight needs the update, its gradient, and so the whole forward pass.
    assert sgd[0] in kept and kept[0].type == "mul"
    assert all(op.type != "sgd" or w in op.output_arg_names for op in kept)
    # The persistable weight is read from the scope before the run writes it.
    assert (kept[0], w) in list(analysis.exposed_reads(kept, ["x"]))
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    before = np.array(scope.find(w).data)
    feed = {"x": np.ones((4, 3), "float32")}
    snapshot = hr.Scope()
    snapshot.set(w, hr.Tensor(before.copy()))
    for name in main.global_block().vars:
        t = scope.find(name)
        if t is not None and name != w:
            snapshot.set(name, hr.Tensor(np.array(t.data)))
    (ran,) = exe.run(main, feed=feed, fetch_list=[w], scope=scope)
    assert not np.allclose(ran, before)
    np.testing.assert_allclose(exe.eval(block.var(w), feed=feed, scope=snapshot), ran)


def test_feed_and_fetch_ops_of_a_loaded_model_never_run(tmp_path, progs):
    main, startup = progs
    x = hr.layers.data("x", shape=[-1, 3], dtype="float32")
    y = hr.layers.scale(x, scale=3.0)
    exe, scope = hr.Executor(), hr.Scope()
    hio.save_inference_model(str(tmp_path), ["x"], [y], exe, main, scope=scope)
    program, feeds, fetches = hio.load_inference_model(str(tmp_path), exe, scope=scope)
    block = program.global_block()
    holders = [op for op in block.ops if op.type in ("feed", "fetch")]
    assert len(holders) == 2 and not any(analysis.runs(op) for op in holders)
    assert [op.type for op in analysis.prune(block, [y.name])] == ["scale"]
    # The feed op writes x, but it does not run: x must still be fed.
    op, name = analysis.first_unsatisfied_read(block.ops, [])
    assert (op.type, name) == ("scale", "x")
    data = np.arange(6, dtype="float32").reshape(2, 3)
    (ran,) = exe.run(program, feed={"x": data}, scope=scope)
    np.testing.assert_allclose(ran, data * 3)
    np.testing.assert_allclose(exe.eval(fetches[0], feed={"x": data}, scope=scope), ran)


def test_inference_program_keeps_a_loop_writing_its_target_from_the_body(tmp_path):
    prog, b, _, _ = counting_loop()
    program = hio.inference_program(prog, ["c", "i", "n"], ["y"])
    assert [op.type for op in program.global_block().ops] == ["feed"] * 3 + ["while", "fetch"]
    assert len(program.blocks) == 2 and len(program.block(1).ops) == 3
    (ran,) = hr.Executor().run(program, feed=FEED, scope=hr.Scope())
    np.testing.assert_array_equal(ran, [3])
    with pytest.raises(HeadraceError, match=r"need variable 'n' \(read by op 'less_than', "
                                            r"block 1, op #2\), which is neither fed"):
        hio.inference_program(prog, ["c", "i"], ["y"])


def chain_with_update():
    """``increment i`` (in place), ``h = 2 i`` (h fed or computed), ``y = 3 h``."""
    prog = hr.Program()
    g = prog.global_block()
    for n in ("i", "h", "y"):
        g.create_var(name=n, shape=[1], dtype="float32", need_check_feed=n == "i")
    g.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
    g.append_op("scale", {"X": ["i"]}, {"Out": ["h"]}, {"scale": 2.0})
    g.append_op("scale", {"X": ["h"]}, {"Out": ["y"]}, {"scale": 3.0})
    return prog, g


def test_a_fed_value_is_updated_in_place_but_replaces_its_producer():
    prog, g = chain_with_update()
    inc, double, triple = g.ops
    # i is fed, then updated in place: the update is needed (run computes h from i + 1).
    assert analysis.prune(g, ["y"], ["i"]) == [inc, double, triple]
    assert analysis.prune(g, ["i"], ["i"]) == [inc]
    # h is fed: its producer is not needed, nor what only the producer needed.
    assert analysis.prune(g, ["y"], ["h"]) == [triple]
    assert analysis.prune(g, ["h"], ["h"]) == []
    exe, one = hr.Executor(), {"i": np.array([1], "float32")}
    ran = exe.run(prog, feed=one, fetch_list=["i", "y"], scope=hr.Scope())
    np.testing.assert_array_equal(ran, [[2], [12]])
    for got, want in zip(exe.eval([g.var("i"), g.var("y")], feed=one, scope=hr.Scope()), ran):
        np.testing.assert_array_equal(got, want)
    # Feeding the intermediate h replaces its computation: i need not be fed.
    np.testing.assert_array_equal(
        exe.eval(g.var("y"), feed={"h": np.array([5], "float32")}, scope=hr.Scope()), [15])


def test_an_op_whose_definition_says_no_kernel_is_not_run_whatever_its_name():
    """The plan and the analysis read ``no_kernel`` from the definition: a plugin's own
    executor-interpreted op (not named feed or fetch) is skipped, not looked up as a kernel."""
    from headrace.ops import In, OpDef, build_registry, hookimpl, registry_guard

    class Plugin:
        @hookimpl
        def headrace_register_ops(self, registry):
            registry.add_op(OpDef("annotate", inputs=[In("X", "the annotated variable")],
                                  no_kernel=True, differentiable=False, doc="a marker"))
    with registry_guard(build_registry(plugins=[("marker", Plugin())], autoload=False)):
        prog = hr.Program()
        b = prog.global_block()
        b.create_var(name="x", shape=[2], dtype="float64", need_check_feed=True)
        b.create_var(name="y", shape=[2], dtype="float64")
        marker = b.append_op("annotate", {"X": ["x"]}, {}, {})
        b.append_op("scale", {"X": ["x"]}, {"Out": ["y"]}, {"scale": 2.0})
        assert not analysis.runs(marker) and analysis.prune(b, ["y"]) == [b.ops[1]]
        exe = hr.Executor()
        feed = {"x": np.array([1.0, 2.0])}
        (y,) = exe.run(prog, feed=feed, fetch_list=["y"], scope=hr.Scope())
        np.testing.assert_array_equal(y, [2.0, 4.0])
        np.testing.assert_array_equal(exe.eval(b.var("y"), feed=feed, scope=hr.Scope()),
                                      [2.0, 4.0])


def test_a_nested_gradient_block_reads_what_its_ops_read_from_outside():
    # The inner loop's gradient block lives under the inner body, its grad op in the outer
    # gradient block: names the outer blocks declare (x) still count as its reads, names of
    # the inner body (the step's own values) do not.
    import headrace as hr
    from headrace import layers
    from headrace.framework.analysis import reads
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        h = layers.assign(x)

        def counter(n):
            i = layers.fill_constant([1], "int64", 0)
            n = layers.fill_constant([1], "int64", n)
            return i, n, layers.less_than(i, n)
        i, n, c = counter(2)
        with layers.While(c).block():
            j, m, d = counter(2)
            with layers.While(d).block():
                layers.assign(layers.tanh(layers.elementwise_add(layers.matmul(h, w), x)),
                              output=h)
                layers.increment(j, in_place=True)
                layers.less_than(j, m, cond=d)
            layers.increment(i, in_place=True)
            layers.less_than(i, n, cond=c)
        hr.append_backward(layers.mean(h))
    (outer_grad,) = [op for op in main.global_block().ops if op.type == "while_grad"]
    names = reads(outer_grad)
    assert "x" in names and "W" in names
    inner_body = main.block(2)
    assert not set(inner_body.vars) & set(names)
