"""Branch layers: IfElse (per row), Switch, cond, case, switch_case — forward values against
NumPy, gradients against finite differences (float64), nested in loops."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import LayerError
from headrace.testing import program_gradients

RNG = np.random.RandomState(3)
X = RNG.randn(6, 3)
W = RNG.randn(3, 2)
V = RNG.randn(3, 2)


def _close(analytic, numeric):
    for name in analytic:
        np.testing.assert_allclose(analytic[name], numeric[name], rtol=1e-6, atol=1e-8,
                                   err_msg=name)


def _ifelse():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 2], "float64", name="W")
        v = layers.create_parameter([3, 2], "float64", name="V")
        zero = layers.fill_constant([1], "float64", 0.0)
        c = layers.less_than(layers.reduce_sum(x, dim=[1], keep_dim=True), zero)
        ie = layers.IfElse(c)
        with ie.true_block():
            ie.output(layers.tanh(layers.matmul(ie.input(x), w)))
        with ie.false_block():
            ie.output(layers.sigmoid(layers.matmul(ie.input(x), v)))
        out, = ie()
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    return main, startup, out, loss


@pytest.mark.parametrize("rows", ["mixed", "all true", "all false"])
def test_ifelse_rows_take_their_branch_and_merge_back_in_order(rows):
    x = {"mixed": X, "all true": -np.abs(X), "all false": np.abs(X)}[rows]
    main, startup, out, loss = _ifelse()
    ops = [op.type for op in main.global_block().ops]
    assert {"split_lod_tensor", "merge_lod_tensor", "conditional_block",
            "conditional_block_grad"} <= set(ops)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    scope.set("W", hr.Tensor(W.copy()))
    scope.set("V", hr.Tensor(V.copy()))
    (got,) = exe.run(main, feed={"x": x}, fetch_list=[out], scope=scope)
    m = x.sum(1) < 0
    ref = np.where(m[:, None], np.tanh(x @ W), 1 / (1 + np.exp(-(x @ V))))
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    analytic, numeric = program_gradients(main, startup, loss, ["W", "V"], {"x": x},
                                          values={"W": W, "V": V})
    _close(analytic, numeric)
    # A branch that received no rows did not run: its weights get a zero gradient.
    assert analytic["W"].any() == m.any() and analytic["V"].any() == (~m).any()


def _switch(step_value):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        w = layers.create_parameter([2], "float64", name="W")
        step = layers.fill_constant([1], "float64", step_value)
        # A plain variable: create_global_var's are persistable and stop gradients.
        out = main.global_block().create_var(name="out", shape=[2], dtype="float64")
        with layers.Switch() as switch:
            with switch.case(layers.less_than(step, layers.fill_constant([1], "float64", 1.0))):
                layers.assign(layers.scale(w, scale=2.0), output=out)
            with switch.case(layers.less_than(step, layers.fill_constant([1], "float64", 2.0))):
                layers.assign(layers.tanh(w), output=out)
            with switch.default():
                layers.assign(layers.elementwise_mul(w, w), output=out)
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    return main, startup, out, loss


@pytest.mark.parametrize("step, fn", [(0.0, lambda w: 2 * w), (1.5, np.tanh),
                                      (5.0, lambda w: w * w)])
def test_switch_runs_the_first_true_case_and_its_gradient(step, fn):
    main, startup, out, loss = _switch(step)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    w = np.array([0.3, -0.7])
    scope.set("W", hr.Tensor(w.copy()))
    (got,) = exe.run(main, fetch_list=[out], scope=scope)
    np.testing.assert_allclose(got, fn(w), rtol=1e-12)
    analytic, numeric = program_gradients(main, startup, loss, ["W"], {}, values={"W": w})
    _close(analytic, numeric)
    # The case that runs, written flat.
    flat, fstartup = hr.Program(), hr.Program()
    with hr.program_guard(flat, fstartup):
        wv = layers.create_parameter([2], "float64", name="W")
        out = {0.0: lambda: layers.scale(wv, scale=2.0), 1.5: lambda: layers.tanh(wv),
               5.0: lambda: layers.elementwise_mul(wv, wv)}[step]()
        floss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(floss)
    unrolled, _ = program_gradients(flat, fstartup, floss, ["W"], {}, values={"W": w})
    _close(analytic, unrolled)


def test_switch_misuse_is_a_clear_error():
    with hr.program_guard(hr.Program(), hr.Program()):
        switch = layers.Switch()
        one = layers.fill_constant([1], "float32", 1.0)
        with pytest.raises(LayerError, match="inside 'with Switch"):
            switch.case(layers.less_than(one, one))
        with switch, pytest.raises(LayerError, match="needs at least one case"):
            switch.default()


# -- the same networks written flat, without branches ---------------------------------------

def _flat_ifelse(mask):
    """out = m * tanh(x W) + (1 - m) * sigmoid(x V), the rows' mask fed as a float column."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        m = layers.data("m", shape=[1], dtype="float64")
        w = layers.create_parameter([3, 2], "float64", name="W")
        v = layers.create_parameter([3, 2], "float64", name="V")
        t = layers.tanh(layers.matmul(x, w))
        f = layers.sigmoid(layers.matmul(x, v))
        out = layers.elementwise_add(layers.elementwise_mul(t, m),
                                     layers.elementwise_mul(f, layers.scale(m, scale=-1.0,
                                                                            bias=1.0)))
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    return main, startup, loss


@pytest.mark.parametrize("rows", ["mixed", "all true", "all false"])
def test_ifelse_gradients_equal_the_flat_network(rows):
    x = {"mixed": X, "all true": -np.abs(X), "all false": np.abs(X)}[rows]
    main, startup, _, loss = _ifelse()
    branched, _ = program_gradients(main, startup, loss, ["W", "V"], {"x": x},
                                    values={"W": W, "V": V})
    m = (x.sum(1, keepdims=True) < 0).astype(np.float64)
    flat, fstartup, floss = _flat_ifelse(m)
    unrolled, _ = program_gradients(flat, fstartup, floss, ["W", "V"], {"x": x, "m": m},
                                    values={"W": W, "V": V})
    _close(branched, unrolled)


def _cond_net(flag, branched):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64")
        w = layers.create_parameter([3, 2], "float64", name="W")
        v = layers.create_parameter([3, 2], "float64", name="V")

        def true_fn():
            return layers.tanh(layers.matmul(x, w))

        def false_fn():
            return {"y": layers.sigmoid(layers.matmul(x, v))}  # nested structures are fine

        if branched:
            c = layers.data("c", shape=[1], dtype="bool", append_batch_size=False)
            out = layers.cond(c, lambda: [true_fn()], lambda: [false_fn()["y"]])[0]
        else:
            out = true_fn() if flag else false_fn()["y"]
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    return main, startup, loss


@pytest.mark.parametrize("flag", [True, False])
def test_cond_gradients_equal_the_flat_network_and_finite_differences(flag):
    main, startup, loss = _cond_net(flag, branched=True)
    feed = {"x": X, "c": np.array([flag])}
    analytic, numeric = program_gradients(main, startup, loss, ["W", "V"], feed,
                                          values={"W": W, "V": V})
    _close(analytic, numeric)
    flat, fstartup, floss = _cond_net(flag, branched=False)
    used = ["W"] if flag else ["V"]
    unrolled, _ = program_gradients(flat, fstartup, floss, used, {"x": X},
                                    values={"W": W, "V": V})
    _close({n: analytic[n] for n in used}, unrolled)
    assert not analytic[("V" if flag else "W")].any()


def test_cond_returns_nested_structures_and_checks_them():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[3], dtype="float32")
        c = layers.less_than(layers.fill_constant([1], "float32", 0.0),
                             layers.fill_constant([1], "float32", 1.0))
        out = layers.cond(c, lambda: {"a": x, "b": [x, x]}, lambda: {"a": x, "b": [x, x]})
        assert set(out) == {"a", "b"} and len(out["b"]) == 2
        with pytest.raises(LayerError, match="the same structure"):
            layers.cond(c, lambda: [x, x], lambda: [x])
        with pytest.raises(LayerError, match="must return Variables"):
            layers.cond(c, lambda: 3, lambda: 4)


@pytest.mark.parametrize("index, expected", [(0, 2.0), (1, 3.0), (7, 5.0)])
def test_switch_case_and_case(index, expected):
    with hr.program_guard(hr.Program(), hr.Program()):
        i = layers.fill_constant([1], "int64", index)
        one = layers.fill_constant([1], "float32", 1.0)
        out = layers.switch_case(i, {0: lambda: layers.scale(one, 2.0),
                                     1: lambda: layers.scale(one, 3.0)},
                                 default=lambda: layers.scale(one, 5.0))
        (got,) = hr.Executor().run(out.block.program, fetch_list=[out], scope=hr.Scope())
    assert got.tolist() == [expected]
