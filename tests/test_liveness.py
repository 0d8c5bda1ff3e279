"""A run lets go of its dead intermediate values after their last reader (runtime.liveness):
which values, where, never those fetched, fed, persistable or read later (sub-blocks and
gradients of loops included), the same results with and without it, and the flags that turn
it off."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime import liveness


def _names_dropped(rp):
    """{op type + index in the plan: names dropped after it}."""
    vars_ = rp.plan.slots.vars
    return {f"{ins.op.type}#{k}": sorted(vars_[i].name for i in ins.drop)
            for k, ins in enumerate(rp.plan.instrs) if ins.drop}


def _chain():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[-1, 8], dtype="float32")
        a = layers.relu(x)
        b = layers.scale(a, 2.0)
        c = layers.elementwise_add(b, a)
        d = layers.scale(c, 0.5)
        out = layers.mean(d)
    return main, startup, (x, a, b, c, d, out)


def test_each_dead_value_goes_after_its_last_reader_and_fetched_ones_stay():
    main, _, (x, a, b, c, d, out) = _chain()
    exe = hr.Executor(hr.CPUPlace())
    rp = exe._run_plan(main, ("x",), (out.name, b.name), False)
    assert _names_dropped(rp) == {"elementwise_add#2": [a.name], "scale#3": [c.name],
                                  "mean#4": [d.name]}
    # Run the plan itself: the dropped slots are empty after it, the rest hold values.
    slot = rp.plan.slots.slot
    values = [None] * rp.nslots
    values[slot(x)] = np.ones((2, 8), np.float32)
    rp.plan.run(values, {}, False)
    assert [values[slot(v)] is None for v in (x, a, b, c, d, out)] == \
        [False, True, False, True, True, False]
    got = exe.run(main, feed={"x": np.full((2, 8), -1.0, np.float32)}, fetch_list=[out, b])
    assert got[0] == 0 and not got[1].any()


def test_persistables_and_values_read_later_are_kept(monkeypatch):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[-1, 4], dtype="float32")
        h = layers.fc(x, size=4, act="relu")
        loss = layers.mean(layers.elementwise_mul(h, h))
        hr.optimizer.SGD(0.1).minimize(loss)
    exe = hr.Executor(hr.CPUPlace())
    rp = exe._run_plan(main, ("x",), (loss.name,), False)
    dropped = {n for names in _names_dropped(rp).values() for n in names}
    params = {p.name for p in main.global_block().all_parameters()}
    assert dropped and not dropped & params and x.name not in dropped
    assert loss.name not in dropped
    last = {}   # every dropped name: no instruction after its drop touches it
    for k, ins in enumerate(rp.plan.instrs):
        for name in (rp.plan.slots.vars[i].name for i in ins.drop):
            last[name] = k
    for k, ins in enumerate(rp.plan.instrs):
        touched = set(ins.op.input_arg_names) | set(ins.op.output_arg_names)
        for name in touched & set(last):
            assert k <= last[name], (name, ins.op.type)


def _loop_program():
    """A while loop (with its gradient) that reads ``t``, a temporary computed before it and
    read by no root op after it, and a cond whose branches read another (``u``)."""
    main, startup = hr.Program(), hr.Program()
    main.random_seed = startup.random_seed = 3
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        h = layers.tanh(layers.matmul(x, w))
        t = layers.scale(x, 0.5)
        u = layers.scale(x, 3.0)
        i = layers.fill_constant([1], "int64", 0)
        limit = layers.fill_constant([1], "int64", 3)
        cond = layers.less_than(i, limit)
        loop = layers.While(cond)
        with loop.block():
            new = layers.tanh(layers.elementwise_add(layers.matmul(h, w), t))
            layers.assign(new, output=h)
            layers.increment(i, in_place=True)
            layers.less_than(i, limit, cond=cond)
        big = layers.reduce_sum(h) > 0
        picked = layers.cond(big, lambda: layers.elementwise_mul(h, u),
                             lambda: layers.elementwise_sub(h, u))
        loss = layers.mean(layers.elementwise_mul(picked, picked))
        hr.optimizer.SGD(0.05).minimize(loss)
    return main, startup, loss, (t, u)


def _train(monkeypatch, on, steps=3):
    monkeypatch.setenv("HEADRACE_EAGER_DELETE", "1" if on else "0")
    main, startup, loss, temps = _loop_program()
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    x = np.random.default_rng(0).standard_normal((5, 3))
    losses = [exe.run(main, feed={"x": x}, fetch_list=[loss], scope=scope)[0]
              for _ in range(steps)]
    rp = exe._run_plan(main, ("x",), (loss.name,), False)
    return losses, np.array(scope.find("W").data), rp, temps


def test_loops_conds_and_their_gradients_give_the_same_results(monkeypatch):
    on_losses, on_w, rp, (t, u) = _train(monkeypatch, True)
    off_losses, off_w, rp_off, _ = _train(monkeypatch, False)
    assert all(np.array_equal(p, q) for p, q in zip(on_losses, off_losses))
    assert np.array_equal(on_w, off_w)
    assert not any(ins.drop for ins in rp_off.plan.instrs)   # the flag: nothing dropped
    # t and u are dropped, but only after the last op whose sub-blocks read them (the
    # gradients of the loop and the cond among them).
    instrs = rp.plan.instrs
    where = {rp.plan.slots.vars[i].name: k for k, ins in enumerate(instrs) for i in ins.drop}
    for temp, owner in ((t, "while_grad"), (u, "conditional_block_grad")):
        last_owner = max(k for k, ins in enumerate(instrs) if ins.op.type == owner)
        assert where[temp.name] >= last_owner, temp.name


def test_paddles_flag_and_nan_inf_checks_keep_every_value(monkeypatch):
    main, _, (x, a, b, c, d, out) = _chain()
    monkeypatch.setenv("FLAGS_eager_delete_tensor_gb", "-1")
    assert not liveness.enabled()
    rp = hr.Executor(hr.CPUPlace())._run_plan(main, ("x",), (out.name,), False)
    assert not any(ins.drop for ins in rp.plan.instrs)
    monkeypatch.setenv("FLAGS_eager_delete_tensor_gb", "0")
    assert liveness.enabled()
    rp = hr.Executor(hr.CPUPlace(), check_nan_inf=True)._run_plan(main, ("x",), (out.name,),
                                                                  False)
    assert not any(ins.drop for ins in rp.plan.instrs)


@pytest.mark.parametrize("check", [False, True])
def test_the_first_checked_run_checks_dead_outputs_before_dropping_them(check):
    # run_checked checks each op's outputs, then drops: an output nobody reads (dropped by
    # the op that writes it) is still checked.
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[-1, 8], dtype="float32")
        dead = layers.scale(x, 3.0)
        out = layers.mean(layers.relu(x))
    rp = hr.Executor(hr.CPUPlace())._run_plan(main, ("x",), (out.name,), False)
    plan = rp.plan
    assert plan.instrs[0].drop == (plan.slots.slot(dead),)
    seen, real = [], plan._check_values

    def spy(instr, ids, values):
        seen.extend(ids)
        return real(instr, ids, values)

    plan._check_values = spy
    values = [None] * rp.nslots
    values[plan.slots.slot(x)] = np.ones((2, 8), np.float64)   # wrong dtype: checks fail
    if check:
        with pytest.raises(hr.OpError, match="does not match the variable's declaration"):
            plan.run(values, {}, True)
        assert seen == [plan.slots.slot(dead)]
    else:
        plan.run(values, {}, False)
        assert not seen and values[plan.slots.slot(dead)] is None
