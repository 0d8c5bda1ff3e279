"""Gradients through sub-blocks: "while_grad", "conditional_block_grad" and the tensor-array
grads ("write_to_array_grad", "read_from_array_grad"), checked in float64 against central
finite differences of the same program and against the same network unrolled by hand.

Includes the two cases Paddle 3.3 gets wrong: a loop whose inputs are all data (its body's
parameters still get gradients) and a loop that overwrites its initial state in place (the
backward of the op that produced the state must read the original value).
"""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.autodiff.backward import BackwardError
from headrace.testing import program_gradients

# The forward ops whose gradients this file checks against finite differences.
CHECKED = ("while", "conditional_block", "write_to_array", "read_from_array")

RNG = np.random.RandomState(7)
X = RNG.randn(2, 3)
PARAMS = {"W0": RNG.randn(3, 3), "W": RNG.randn(3, 3) * 0.8, "b": RNG.randn(3) * 0.1}


def _close(analytic, numeric):
    for name in analytic:
        np.testing.assert_allclose(analytic[name], numeric[name], rtol=1e-6, atol=1e-8,
                                   err_msg=name)


def _counter(n):
    i = layers.fill_constant([1], "int64", 0)
    limit = layers.fill_constant([1], "int64", n)
    return i, limit, layers.less_than(i, limit)


def _rnn(steps, state_from_param=True):
    """h = tanh(x W0) (or x itself); repeat ``steps`` times: h = tanh(h W + b)."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w0 = layers.create_parameter([3, 3], "float64", name="W0")
        w = layers.create_parameter([3, 3], "float64", name="W")
        b = layers.create_parameter([3], "float64", name="b")
        h = layers.tanh(layers.matmul(x, w0)) if state_from_param else layers.assign(x)
        i, limit, cond = _counter(steps)
        loop = layers.While(cond)
        with loop.block():
            new = layers.tanh(layers.elementwise_add(layers.matmul(h, w), b))
            layers.assign(new, output=h)  # the state is overwritten in place
            layers.increment(i, in_place=True)
            layers.less_than(i, limit, cond=cond)
        loss = layers.mean(layers.elementwise_mul(h, h))
        hr.append_backward(loss)
    return main, startup, loss


def _rnn_unrolled(steps):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w0 = layers.create_parameter([3, 3], "float64", name="W0")
        w = layers.create_parameter([3, 3], "float64", name="W")
        b = layers.create_parameter([3], "float64", name="b")
        h = layers.tanh(layers.matmul(x, w0))
        for _ in range(steps):
            h = layers.tanh(layers.elementwise_add(layers.matmul(h, w), b))
        loss = layers.mean(layers.elementwise_mul(h, h))
        hr.append_backward(loss)
    return main, startup, loss


@pytest.mark.parametrize("steps", [0, 1, 4])
def test_while_grad_equals_finite_differences_and_the_unrolled_network(steps):
    main, startup, loss = _rnn(steps)
    assert "while_grad" in [op.type for op in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["W0", "W", "b"], {"x": X},
                                          values=PARAMS)
    _close(analytic, numeric)
    flat, fstartup, floss = _rnn_unrolled(steps)
    used = ["W0", "W", "b"] if steps else ["W0"]  # unrolled zero times, W and b are unused
    unrolled, _ = program_gradients(flat, fstartup, floss, used, {"x": X},
                                    values={n: PARAMS[n] for n in used})
    _close({n: analytic[n] for n in used}, unrolled)
    if steps == 0:
        assert not analytic["W"].any() and not analytic["b"].any()


def test_a_loop_whose_inputs_are_all_data_still_trains_its_body_parameters():
    # Paddle 3.3 gives the body's parameters no gradient when the loop reads only data.
    main, startup, loss = _rnn(3, state_from_param=False)
    analytic, numeric = program_gradients(main, startup, loss, ["W", "b"], {"x": X})
    _close(analytic, numeric)
    assert np.abs(analytic["W"]).sum() > 0
    params = [p.name for p, _ in hr.append_backward(loss)] if False else None  # noqa: F841


def test_minimize_updates_a_parameter_used_only_inside_the_loop():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        h = layers.assign(x)
        i, limit, cond = _counter(2)
        with layers.While(cond).block():
            layers.assign(layers.tanh(layers.matmul(h, w)), output=h)
            layers.increment(i, in_place=True)
            layers.less_than(i, limit, cond=cond)
        loss = layers.mean(layers.elementwise_mul(h, h))
        _, grads = hr.optimizer.SGD(0.5).minimize(loss)
    assert [p.name for p, _ in grads] == ["W"]
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    before = np.array(scope.get("W").numpy())
    losses = [float(exe.run(main, feed={"x": X}, fetch_list=[loss], scope=scope)[0])
              for _ in range(5)]
    assert not np.allclose(before, scope.get("W").numpy())
    assert losses[-1] < losses[0]


def test_the_producer_of_an_overwritten_initial_state_reads_its_original_value():
    # h = tanh(x W0) is overwritten by the loop; tanh's gradient reads its Out, which must be
    # the value before the loop (Paddle 3.3 reads the loop's final value here).
    main, startup, loss = _rnn(3)
    ops = main.global_block().ops
    saved = [op for op in ops if op.type == "assign" and "@SAVED" in op.output("Out")[0]]
    assert len(saved) == 1
    tanh_grad = [op for op in ops if op.type == "tanh_grad"]
    assert tanh_grad[0].input("Out") == saved[0].output("Out")
    analytic, numeric = program_gradients(main, startup, loss, ["W0"], {"x": X})
    _close(analytic, numeric)
    # The loop's result is still what a fetch after the backward pass sees.
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    h = ops[1].output("Out")[0]  # tanh's output: the state the loop overwrites
    fetched = exe.run(main, feed={"x": X}, fetch_list=[h], scope=scope)[0]
    w0, w, b = (scope.get(n).numpy() for n in ("W0", "W", "b"))
    ref = np.tanh(X @ w0)
    for _ in range(3):
        ref = np.tanh(ref @ w + b)
    np.testing.assert_allclose(fetched, ref, rtol=1e-12)


def test_a_while_inside_a_while():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        u = layers.create_parameter([3, 3], "float64", name="U")
        h = layers.assign(x)
        i, limit, cond = _counter(2)
        with layers.While(cond).block():
            g = layers.tanh(layers.matmul(h, u))
            j, jlimit, jcond = _counter(3)
            with layers.While(jcond).block():
                layers.assign(layers.tanh(layers.matmul(g, w)), output=g)
                layers.increment(j, in_place=True)
                layers.less_than(j, jlimit, cond=jcond)
            layers.assign(layers.elementwise_add(g, h), output=h)
            layers.increment(i, in_place=True)
            layers.less_than(i, limit, cond=cond)
        loss = layers.mean(layers.elementwise_mul(h, h))
        hr.append_backward(loss)
    analytic, numeric = program_gradients(main, startup, loss, ["W", "U"], {"x": X})
    _close(analytic, numeric)


def _branch(flag):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        c = layers.data("c", shape=[1], dtype="bool", append_batch_size=False)
        w = layers.create_parameter([3, 3], "float64", name="W")
        v = layers.create_parameter([3, 3], "float64", name="V")
        h = layers.tanh(layers.matmul(x, v))
        g = main.global_block()
        with main.block_guard() as sub:
            layers.assign(layers.tanh(layers.matmul(h, w)), output=h)
        g.append_op("conditional_block", {"Cond": [c], "Input": [h, w]},
                    {"Out": [h], "Scope": [g.create_var(name="scope", type="step_scopes")]},
                    {"sub_block": sub, "is_scalar_condition": True})
        loss = layers.mean(layers.elementwise_mul(h, h))
        hr.append_backward(loss)
    return main, startup, loss, {"x": X, "c": np.array([flag])}


@pytest.mark.parametrize("flag", [True, False])
def test_conditional_block_grad_run_and_not_run(flag):
    main, startup, loss, feed = _branch(flag)
    assert "conditional_block_grad" in [op.type for op in main.global_block().ops]
    analytic, numeric = program_gradients(main, startup, loss, ["W", "V"], feed)
    _close(analytic, numeric)
    assert analytic["W"].any() == flag


def test_tensor_arrays_through_a_loop():
    """Inputs written to an array before the loop and read per step; states written to an
    array per step and read after the loop: gradients flow through both arrays."""
    steps = 3
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        p = layers.create_parameter([3, 3], "float64", name="P")
        inputs = layers.create_array("float64")
        for t in range(steps):
            k = layers.fill_constant([1], "int64", t)
            layers.array_write(layers.matmul(x, layers.scale(p, scale=t + 1.0)), k, array=inputs)
        states = layers.create_array("float64")
        h = layers.assign(x)
        i, limit, cond = _counter(steps)
        with layers.While(cond).block():
            xt = layers.array_read(inputs, i)
            new = layers.tanh(layers.elementwise_add(layers.matmul(h, w), xt))
            layers.array_write(new, i, array=states)
            layers.assign(new, output=h)
            layers.increment(i, in_place=True)
            layers.less_than(i, limit, cond=cond)
        total = None
        for t in range(steps):
            k = layers.fill_constant([1], "int64", t)
            s = layers.scale(layers.array_read(states, k), scale=float(t + 1))
            total = s if total is None else layers.elementwise_add(total, s)
        loss = layers.mean(layers.elementwise_mul(total, total))
        hr.append_backward(loss)
    types = {op.type for b in main.blocks for op in b.ops}
    assert {"write_to_array_grad", "read_from_array_grad", "while_grad"} <= types
    analytic, numeric = program_gradients(main, startup, loss, ["W", "P"], {"x": X})
    _close(analytic, numeric)


def test_reading_loop_state_after_overwriting_it_in_the_step_is_refused():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        h = layers.assign(x)
        i, limit, cond = _counter(2)
        with layers.While(cond).block():
            layers.assign(layers.tanh(h), output=h)
            layers.assign(layers.matmul(h, w), output=h)  # reads h after the step wrote it
            layers.increment(i, in_place=True)
            layers.less_than(i, limit, cond=cond)
        loss = layers.mean(h)
        with pytest.raises(BackwardError, match=r"op 'matmul'.*reads '.*' after this step "
                                                r"overwrote it.*test_flow_grads.py"):
            hr.append_backward(loss)


def test_reading_the_counter_after_incrementing_it_is_refused():
    # write_to_array's gradient reads I: after the step's increment it would name the next
    # step's position, silently.
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        states = layers.create_array("float64")
        i, limit, cond = _counter(2)
        with layers.While(cond).block():
            layers.increment(i, in_place=True)
            layers.array_write(layers.matmul(x, w), i, array=states)
            layers.less_than(i, limit, cond=cond)
        loss = layers.mean(layers.array_read(states, limit))
        with pytest.raises(BackwardError, match=r"op 'write_to_array'.*reads "
                                                r"'fill_constant_\d+.tmp_0' after this step"):
            hr.append_backward(loss)


def test_while_loop_overwriting_its_initial_variables_keeps_their_producers_gradients():
    # while_loop assigns the body's results to loop_vars in place (Paddle's semantics): the
    # sigmoid that produced the initial state must still see its own output in backward.
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w0 = layers.create_parameter([3, 3], "float64", name="W0")
        w = layers.create_parameter([3, 3], "float64", name="W")
        h0 = layers.sigmoid(layers.matmul(x, w0))
        i0 = layers.fill_constant([1], "int64", 0)
        limit = layers.fill_constant([1], "int64", 3)
        i, h = layers.while_loop(lambda i, h: layers.less_than(i, limit),
                                 lambda i, h: [layers.increment(i, in_place=False),
                                               layers.tanh(layers.matmul(h, w))], [i0, h0])
        assert h is h0  # the loop variable itself, overwritten
        loss = layers.mean(layers.elementwise_mul(h, h))
        hr.append_backward(loss)
    analytic, numeric = program_gradients(main, startup, loss, ["W0", "W"], {"x": X},
                                          values={"W0": PARAMS["W0"], "W": PARAMS["W"]})
    _close(analytic, numeric)


def test_a_cond_inside_a_while():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 3], "float64", name="W")
        v = layers.create_parameter([3, 3], "float64", name="V")
        h = layers.assign(x)
        i, limit, cond = _counter(4)
        with layers.While(cond).block():
            early = layers.less_than(i, layers.fill_constant([1], "int64", 2))
            new = layers.cond(early, lambda: layers.tanh(layers.matmul(h, w)),
                              lambda: layers.sigmoid(layers.matmul(h, v)))
            layers.assign(new, output=h)
            layers.increment(i, in_place=True)
            layers.less_than(i, limit, cond=cond)
        loss = layers.mean(layers.elementwise_mul(h, h))
        hr.append_backward(loss)
    analytic, numeric = program_gradients(main, startup, loss, ["W", "V"], {"x": X},
                                          values={"W": PARAMS["W"], "V": PARAMS["W0"]})
    _close(analytic, numeric)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    scope.set("W", hr.Tensor(PARAMS["W"].copy()))
    scope.set("V", hr.Tensor(PARAMS["W0"].copy()))
    (got,) = exe.run(main, feed={"x": X}, fetch_list=[h], scope=scope)
    ref = X
    for k in range(4):
        ref = np.tanh(ref @ PARAMS["W"]) if k < 2 else 1 / (1 + np.exp(-(ref @ PARAMS["W0"])))
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_a_step_keeps_only_what_its_gradient_reads():
    main, startup, loss = _rnn(3)
    (loop,) = [op for op in main.global_block().ops if op.type == "while"]
    kept = loop.attr("skip_eager_deletion_vars")
    body = loop.attr("sub_block")
    # tanh's output (its grad reads Out) and matmul's inputs are outer or kept; the sum
    # before tanh is read by no grad op, so no step keeps it.
    (pre_tanh,) = [op.input("X")[0] for op in body.ops if op.type == "tanh"]
    (tanh_out,) = [op.output("Out")[0] for op in body.ops if op.type == "tanh"]
    assert tanh_out in kept and pre_tanh not in kept
    assert set(kept) < set(body.vars)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    (steps,) = exe.run(main, feed={"x": X}, fetch_list=[loop.output("StepScopes")[0]],
                       scope=scope)
    assert len(steps) == 3 and all(len(s.after) == len(kept) for s in steps)
    analytic, numeric = program_gradients(main, startup, loss, ["W0", "W", "b"], {"x": X},
                                          values=PARAMS)
    _close(analytic, numeric)
