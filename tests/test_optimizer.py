"""Optimizers, regularizers, gradient clipping and learning-rate schedules.

Structure is checked op by op. Execution: today only ``scale`` has a gradient maker, so the
end-to-end ``minimize`` runs train ``loss = w * 3 + 1`` (w of shape [1]); the update rules on
bigger tensors run through ``apply_gradients`` with fed gradients, checked against the optim
plugin's NumPy references.
"""
import math

import numpy as np
import pytest

import headrace as hr
from headrace import LayerError
from headrace.autodiff import BackwardError
from headrace.framework.program import (OP_ROLE_BACKWARD, OP_ROLE_FORWARD, OP_ROLE_LOSS,
                                        OP_ROLE_LRSCHED, OP_ROLE_OPTIMIZE)
from headrace.initializer import Constant, NumpyArrayInitializer
from headrace_optim.reference import adagrad, adam, momentum, rmsprop

L, O = hr.layers, hr.optimizer
W0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)


def scalar_model(opt, w0=2.0, **attr):
    """loss = w * 3 + 1 with w [1]: the gradient of w is 3."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        w = L.create_parameter([1], "float32",
                               attr=hr.ParamAttr(name="w", initializer=Constant(w0), **attr))
        loss = w * 3.0 + 1.0
        ops, params_grads = opt.minimize(loss)
    return main, startup, w, loss, ops, params_grads


def fed_model(make_opt, *names, **attr):
    """Parameters named ``names`` (shape [2, 3], value W0) whose gradients are fed as
    ``<name>_g``; ``apply_gradients`` builds the updates."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        pairs = []
        for n in names or ("w",):
            w = L.create_parameter([2, 3], "float32", attr=hr.ParamAttr(
                name=n, initializer=NumpyArrayInitializer(W0), **attr))
            pairs.append((w, L.data(n + "_g", [2, 3], append_batch_size=False)))
        opt = make_opt()
        ops = opt.apply_gradients(pairs)
    return main, startup, [w for w, _ in pairs], opt, ops


def steps(main, startup, fetch, feeds):
    scope, exe = hr.Scope(), hr.Executor()
    exe.run(startup, scope=scope)
    return [exe.run(main, feed=f, fetch_list=fetch, scope=scope) for f in feeds]


def grads(n, seed=0, name="w_g"):
    rng = np.random.RandomState(seed)
    return [{name: rng.randn(2, 3).astype(np.float32)} for _ in range(n)]


def role(op):
    return op.attr("op_role")


def after_backward(main):
    ops = main.global_block().ops
    last = max(i for i, op in enumerate(ops) if role(op) & OP_ROLE_BACKWARD)
    return ops[last + 1:]


# -- SGD and the common machinery ---------------------------------------------------------------

def test_sgd_minimize_structure():
    main, startup, w, loss, ops, params_grads = scalar_model(O.SGD(0.1))
    assert params_grads == [(w, main.global_block().var("w@GRAD"))]
    (sgd,) = after_backward(main)
    assert ops == [sgd] and sgd.type == "sgd"
    assert sgd.inputs == {"Param": ["w"], "Grad": ["w@GRAD"], "LearningRate": ["learning_rate_0"]}
    assert sgd.outputs == {"ParamOut": ["w"]}
    assert role(sgd) == OP_ROLE_OPTIMIZE and sgd.attr("op_role_var") == ["w", "w@GRAD"]
    lr = main.global_block().var("learning_rate_0")
    assert lr.persistable and lr.shape == (1,) and lr.dtype == "float32"
    (lr_init,) = [op for op in startup.global_block().ops if op.output("Out") == [lr.name]]
    assert lr_init.type == "fill_constant" and lr_init.attr("value") == pytest.approx(0.1)
    forward = [op for op in main.global_block().ops if role(op) == OP_ROLE_FORWARD]
    assert [op.type for op in forward] == ["scale", "scale"]
    assert role(main.global_block().ops[2]) == OP_ROLE_BACKWARD | OP_ROLE_LOSS


def test_sgd_minimize_trains():
    main, startup, w, loss, _, _ = scalar_model(O.SGD(0.1))
    out = steps(main, startup, [loss, w, w.grad], [{}] * 3)
    assert [o[1][0] for o in out] == pytest.approx([1.7, 1.4, 1.1])
    assert [o[0][0] for o in out] == pytest.approx([7.0, 6.1, 5.2])
    assert all(o[2][0] == 3.0 for o in out)


def test_clone_for_test_drops_backward_and_optimizer_ops():
    main, startup, w, loss, _, _ = scalar_model(O.Adam(0.1))
    test = main.clone(for_test=True)
    assert [op.type for op in test.global_block().ops] == ["scale", "scale"]
    assert len(main.global_block().ops) > 2
    (lv,) = hr.Executor().run(test, fetch_list=[loss.name], scope=_scope_after(startup))
    assert lv[0] == pytest.approx(7.0)


def _scope_after(startup):
    scope = hr.Scope()
    hr.Executor().run(startup, scope=scope)
    return scope


def test_per_parameter_learning_rate():
    main, startup, w, loss, _, _ = scalar_model(O.SGD(0.1), learning_rate=0.5)
    scale, sgd = after_backward(main)
    assert scale.type == "scale" and scale.input("X") == ["learning_rate_0"]
    assert scale.attr("scale") == 0.5 and role(scale) == OP_ROLE_LRSCHED | OP_ROLE_OPTIMIZE
    assert sgd.input("LearningRate") == scale.output("Out")
    out = steps(main, startup, [w], [{}] * 2)
    assert [o[0][0] for o in out] == pytest.approx([1.85, 1.7])


def test_parameter_list_and_frozen_parameters():
    def build():
        main, startup = hr.Program(), hr.Program()
        with hr.program_guard(main, startup), hr.unique_name.guard():
            a = L.create_parameter([1], "float32", name="a")
            L.create_parameter([1], "float32", name="b")
            f = L.create_parameter([1], "float32", attr=hr.ParamAttr(name="f", trainable=False))
        return main, startup, a, f

    main, startup, a, f = build()
    with hr.program_guard(main, startup):
        ops, params_grads = O.Momentum(0.1, 0.9).minimize(a * 2.0, parameter_list=[a])
    assert [p.name for p, _ in params_grads] == ["a"]
    assert [op.input("Param") for op in ops] == [["a"]]
    assert "a_velocity_0" in main.global_block().vars
    assert "b_velocity_0" not in main.global_block().vars
    for loss, plist in ((lambda a, f: a * 2.0, ["b"]), (lambda a, f: f * 2.0, None)):
        main, startup, a, f = build()
        with hr.program_guard(main, startup), \
                pytest.raises(LayerError, match="no trainable parameter reaches the loss"):
            O.SGD(0.1).minimize(loss(a, f), parameter_list=plist)
    # apply_gradients skips frozen parameters: no update op, no accumulator
    main, startup, a, f = build()
    with hr.program_guard(main, startup):
        g = L.data("g", [1], append_batch_size=False)
        assert O.Momentum(0.1, 0.9).apply_gradients([(f, g)]) == []
    assert "f_velocity_0" not in main.global_block().vars


def test_minimize_into_another_startup_program_and_serialize():
    main, startup, other = hr.Program(), hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        w = L.create_parameter([1], "float32", name="w")
        ops, _ = O.Adam(0.01).minimize(w * 2.0, startup_program=other)
    assert [op.output("Out")[0] for op in other.global_block().ops] == [
        "learning_rate_0", "w_moment1_0", "w_moment2_0", "w_beta1_pow_acc_0",
        "w_beta2_pow_acc_0"]
    assert [op.type for op in startup.global_block().ops] == ["uniform_random"]
    again = hr.Program.parse_from_string(main.serialize_to_string())
    assert [op.type for op in again.global_block().ops] == \
        [op.type for op in main.global_block().ops]
    adam_op = [op for op in again.global_block().ops if op.type == "adam"][0]
    assert adam_op.attr("op_role") == OP_ROLE_OPTIMIZE
    assert adam_op.attr("op_role_var") == ["w", "w@GRAD"]


def test_one_optimizer_for_two_programs():
    opt = O.Momentum(0.1, 0.9)
    first = scalar_model(opt)
    second = scalar_model(opt)  # same parameter names, another program
    for main, startup, w, _loss, ops, _ in (first, second):
        assert ops[0].input("Velocity") == ["w_velocity_0"]
        assert ops[0].input("LearningRate") == ["learning_rate_0"]
        assert [o[0][0] for o in steps(main, startup, [w], [{}] * 2)] == \
            pytest.approx([1.7, 1.7 - 0.1 * (0.9 * 3 + 3)])


def test_public_names():
    for name in ("layers", "initializer", "optimizer", "regularizer", "clip", "ParamAttr",
                 "LayerHelper", "LayerError"):
        assert name in hr.__all__ and hasattr(hr, name)
    for name in hr.layers.__all__:
        assert hasattr(hr.layers, name), name
    for module in (O, hr.clip, hr.regularizer, hr.initializer):
        for name in module.__all__:
            assert hasattr(module, name), name


def test_minimize_errors():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        w = L.create_parameter([2], "float32", name="w")
        x = L.data("x", [1], append_batch_size=False)
        with pytest.raises(LayerError, match="SGD.minimize: argument 'loss' must be a Variable"):
            O.SGD(0.1).minimize("loss")
        with pytest.raises(BackwardError, match="must have shape \\[1\\]"):
            O.SGD(0.1).minimize(w * 2.0)
        with pytest.raises(LayerError, match="no trainable parameter reaches the loss"):
            O.SGD(0.1).minimize(x * 2.0)
        with pytest.raises(LayerError, match="'parameter_list' must be a list of Parameters"):
            O.SGD(0.1).minimize(w * 1.0, parameter_list=[3])
    other = hr.Program()
    lr = other.global_block().create_var(name="lr", shape=[1], dtype="float32")
    with pytest.raises(LayerError, match="belongs to another program"):
        scalar_model(O.SGD(lr))


@pytest.mark.parametrize("make, message", [
    (lambda: O.SGD(-0.1), "SGD: argument 'learning_rate' must be >= 0.0"),
    (lambda: O.SGD("0.1"), "SGD: argument 'learning_rate' must be a number"),
    (lambda: O.SGD(0.1, regularization=0.01), "SGD: argument 'regularization' must be an"),
    (lambda: O.SGD(0.1, grad_clip=5.0), "SGD: argument 'grad_clip' must be a GradientClipBy"),
    (lambda: O.Momentum(0.1, -0.9), "Momentum: argument 'momentum' must be >= 0.0"),
    (lambda: O.Momentum(0.1, 0.9, use_nesterov=1), "Momentum: argument 'use_nesterov'"),
    (lambda: O.Adam(beta1=1.0), "Adam: arguments 'beta1' and 'beta2' must be < 1"),
    (lambda: O.Adam(beta2=1.5), "Adam: argument 'beta2' must be >= 0.0 and <= 1.0"),
    (lambda: O.Adagrad(0.1, epsilon=-1), "Adagrad: argument 'epsilon' must be >= 0.0"),
    (lambda: O.RMSProp(0.1, rho=2.0), "RMSProp: argument 'rho' must be >= 0.0 and <= 1.0"),
])
def test_optimizer_argument_errors(make, message):
    with pytest.raises(LayerError, match=message):
        make()


def test_learning_rate_variable_must_be_one_element():
    v = hr.Program().global_block().create_var(name="lr", shape=[2], dtype="float32")
    with pytest.raises(LayerError, match="must have shape \\[1\\] or \\[\\] .*found \\[2\\]"):
        O.SGD(v)


# -- the update rules ---------------------------------------------------------------------------

def test_momentum_structure_and_updates():
    main, startup, (w,), opt, ops = fed_model(lambda: O.Momentum(0.1, 0.9, use_nesterov=True))
    (op,) = ops
    assert op.type == "momentum" and op.attr("mu") == pytest.approx(0.9)
    assert op.attr("use_nesterov")
    assert op.input("Velocity") == op.output("VelocityOut") == ["w_velocity_0"]
    v = main.global_block().var("w_velocity_0")
    assert v.persistable and v.shape == (2, 3) and not isinstance(v, hr.Parameter)
    (init,) = [o for o in startup.global_block().ops if o.output("Out") == ["w_velocity_0"]]
    assert init.type == "fill_constant" and init.attr("value") == 0.0
    feeds = grads(3)
    got = steps(main, startup, [w, "w_velocity_0"], feeds)
    p, vel = W0, np.zeros_like(W0)
    attrs = {"mu": 0.9, "use_nesterov": True}
    for f, (gp, gv) in zip(feeds, got):
        r = momentum.momentum({"Param": p, "Grad": f["w_g"], "Velocity": vel,
                               "LearningRate": np.array([0.1], np.float32)}, attrs)
        p, vel = r["ParamOut"], r["VelocityOut"]
        np.testing.assert_allclose(gp, p, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gv, vel, rtol=1e-5, atol=1e-6)


def test_adagrad_structure_and_updates():
    main, startup, (w,), _, ops = fed_model(
        lambda: O.Adagrad(0.2, epsilon=1e-5, initial_accumulator_value=0.1))
    (op,) = ops
    assert op.type == "adagrad" and op.attr("epsilon") == pytest.approx(1e-5)
    assert op.input("Moment") == op.output("MomentOut") == ["w_moment_0"]
    (init,) = [o for o in startup.global_block().ops if o.output("Out") == ["w_moment_0"]]
    assert init.attr("value") == pytest.approx(0.1)
    feeds = grads(3, seed=1)
    got = steps(main, startup, [w], feeds)
    p, m = W0, np.full_like(W0, 0.1)
    for f, (gp,) in zip(feeds, got):
        r = adagrad.adagrad({"Param": p, "Grad": f["w_g"], "Moment": m,
                             "LearningRate": np.array([0.2], np.float32)}, {"epsilon": 1e-5})
        p, m = r["ParamOut"], r["MomentOut"]
        np.testing.assert_allclose(gp, p, rtol=1e-5, atol=1e-6)


def test_adam_structure_and_updates():
    main, startup, (w, u), _, ops = fed_model(lambda: O.Adam(0.05, beta1=0.8, beta2=0.95),
                                              "w", "u")
    assert [op.type for op in ops] == ["adam", "adam", "scale", "scale", "scale", "scale"]
    a = ops[0]
    assert a.inputs["Moment1"] == a.outputs["Moment1Out"] == ["w_moment1_0"]
    assert a.inputs["Moment2"] == a.outputs["Moment2Out"] == ["w_moment2_0"]
    assert a.inputs["Beta1Pow"] == ["w_beta1_pow_acc_0"]
    assert a.inputs["Beta2Pow"] == ["w_beta2_pow_acc_0"]
    assert "Beta1PowOut" not in a.outputs  # advanced by the scale ops
    assert (a.attr("beta1"), a.attr("beta2")) == (pytest.approx(0.8), pytest.approx(0.95))
    s1, s2 = ops[2], ops[3]
    assert s1.input("X") == s1.output("Out") == ["w_beta1_pow_acc_0"]
    assert s1.attr("scale") == pytest.approx(0.8) and s2.attr("scale") == pytest.approx(0.95)
    assert all(role(op) == OP_ROLE_OPTIMIZE for op in ops)
    assert main.global_block().var("w_beta1_pow_acc_0").shape == (1,)
    inits = {o.output("Out")[0]: o.attr("value") for o in startup.global_block().ops
             if o.type == "fill_constant"}
    assert inits["w_beta1_pow_acc_0"] == pytest.approx(0.8)
    assert inits["u_beta2_pow_acc_0"] == pytest.approx(0.95)
    assert inits["w_moment1_0"] == inits["u_moment2_0"] == 0.0
    rng = np.random.RandomState(2)
    feeds = [{"w_g": rng.randn(2, 3).astype("float32"), "u_g": rng.randn(2, 3).astype("float32")}
             for _ in range(3)]
    got = steps(main, startup, [w, "w_beta1_pow_acc_0", u], feeds)
    state = {"Param": W0, "Moment1": np.zeros_like(W0), "Moment2": np.zeros_like(W0),
             "Beta1Pow": np.array([0.8], np.float32), "Beta2Pow": np.array([0.95], np.float32)}
    attrs = {"beta1": 0.8, "beta2": 0.95, "epsilon": 1e-8}
    for f, (gw, gb1, _) in zip(feeds, got):
        r = adam.adam(dict(state, Grad=f["w_g"], LearningRate=np.array([0.05], np.float32)),
                      attrs)
        state = {"Param": r["ParamOut"], "Moment1": r["Moment1Out"],
                 "Moment2": r["Moment2Out"], "Beta1Pow": r["Beta1PowOut"],
                 "Beta2Pow": r["Beta2PowOut"]}
        np.testing.assert_allclose(gw, state["Param"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gb1, state["Beta1Pow"], rtol=1e-6)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_structure_and_updates(centered):
    main, startup, (w,), _, ops = fed_model(
        lambda: O.RMSProp(0.01, rho=0.9, epsilon=1e-4, momentum=0.5, centered=centered))
    (op,) = ops
    assert op.type == "rmsprop" and op.attr("centered") == centered
    assert (op.attr("decay"), op.attr("momentum")) == (pytest.approx(0.9), 0.5)
    assert op.input("MeanSquare") == op.output("MeanSquareOut") == ["w_mean_square_0"]
    assert op.input("MeanGrad") == ["w_mean_grad_0"] and op.input("Moment") == ["w_momentum_0"]
    feeds = grads(3, seed=3)
    got = steps(main, startup, [w], feeds)
    st = {"Param": W0, "MeanSquare": np.zeros_like(W0), "MeanGrad": np.zeros_like(W0),
          "Moment": np.zeros_like(W0)}
    attrs = {"decay": 0.9, "epsilon": 1e-4, "momentum": 0.5, "centered": centered}
    for f, (gp,) in zip(feeds, got):
        r = rmsprop.rmsprop(dict(st, Grad=f["w_g"], LearningRate=np.array([0.01], np.float32)),
                            attrs)
        st = {"Param": r["ParamOut"], "MeanSquare": r["MeanSquareOut"],
              "MeanGrad": r.get("MeanGradOut", st["MeanGrad"]), "Moment": r["MomentOut"]}
        np.testing.assert_allclose(gp, st["Param"], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: O.SGD(0.1), lambda: O.Momentum(0.1, 0.9), lambda: O.Adagrad(0.1),
    lambda: O.Adam(0.1), lambda: O.RMSProp(0.1, centered=True),
])
def test_every_optimizer_trains_the_scalar_model(make):
    main, startup, w, loss, ops, _ = scalar_model(make())
    out = steps(main, startup, [loss, w], [{}] * 4)
    losses = [o[0][0] for o in out]
    assert all(b < a for a, b in zip(losses, losses[1:]))  # d loss / d w = 3 > 0
    clone = main.clone(for_test=True)
    assert [op.type for op in clone.global_block().ops] == ["scale", "scale"]
    assert all(role(op) & OP_ROLE_OPTIMIZE for op in ops)


def test_fluid_long_names():
    assert O.SGDOptimizer is O.SGD and O.AdamOptimizer is O.Adam
    assert O.MomentumOptimizer is O.Momentum and O.AdagradOptimizer is O.Adagrad
    assert O.RMSPropOptimizer is O.RMSProp


# -- regularization -----------------------------------------------------------------------------

def test_l2_decay_structure_and_value():
    main, startup, (w,), _, ops = fed_model(
        lambda: O.SGD(0.1, regularization=hr.regularizer.L2Decay(0.5)))
    scale, add, sgd = [op for op in main.global_block().ops if role(op) & OP_ROLE_OPTIMIZE]
    assert scale.type == "scale" and scale.input("X") == ["w"] and scale.attr("scale") == 0.5
    assert add.type == "sum" and add.input("X") == ["w_g", scale.output("Out")[0]]
    assert add.output("Out") == ["w_g"] and sgd.input("Grad") == ["w_g"]
    feeds = grads(1, seed=4)
    ((gw,),) = steps(main, startup, [w], feeds)
    np.testing.assert_allclose(gw, W0 - 0.1 * (feeds[0]["w_g"] + 0.5 * W0), rtol=1e-5)


def test_l1_decay_uses_sign_from_comparisons():
    main, startup, (w,), _, _ = fed_model(
        lambda: O.SGD(0.1, regularization=hr.regularizer.L1Decay(0.2)))
    opt_ops = [op.type for op in main.global_block().ops if role(op) & OP_ROLE_OPTIMIZE]
    assert opt_ops == ["fill_constant", "greater_than", "less_than", "cast", "cast",
                       "elementwise_sub", "scale", "sum", "sgd"]
    feeds = grads(1, seed=5)
    ((gw,),) = steps(main, startup, [w], feeds)
    np.testing.assert_allclose(gw, W0 - 0.1 * (feeds[0]["w_g"] + 0.2 * np.sign(W0)), rtol=1e-5)


def test_parameter_regularizer_wins_over_the_optimizers():
    main, startup, w, _, _, _ = scalar_model(
        O.SGD(0.1, regularization=hr.regularizer.L1Decay(1.0)),
        regularizer=hr.regularizer.L2Decay(0.5))
    types = [op.type for op in after_backward(main)]
    assert types == ["scale", "sum", "sgd"]
    (got,) = steps(main, startup, [w], [{}])
    assert got[0][0] == pytest.approx(2.0 - 0.1 * (3.0 + 0.5 * 2.0))


def test_regularizer_errors():
    with pytest.raises(LayerError, match="L2Decay: argument 'regularization_coeff' must be >= "):
        hr.regularizer.L2Decay(-1)
    with pytest.raises(LayerError, match="append_regularization_ops: argument 'regularization'"):
        hr.regularizer.append_regularization_ops([], "l2")


# -- clipping -----------------------------------------------------------------------------------

def test_clip_by_value():
    main, startup, (w,), _, _ = fed_model(
        lambda: O.SGD(1.0, grad_clip=hr.clip.GradientClipByValue(0.5, -0.25)))
    ops = [op for op in main.global_block().ops if role(op) & OP_ROLE_OPTIMIZE]
    assert [op.type for op in ops] == ["fill_constant", "fill_constant", "elementwise_max",
                                       "elementwise_min", "sgd"]
    assert (ops[0].attr("value"), ops[1].attr("value")) == (-0.25, 0.5)
    assert ops[-1].input("Grad") == ops[3].output("Out")
    feeds = grads(1, seed=6)
    ((gw,),) = steps(main, startup, [w], feeds)
    np.testing.assert_allclose(gw, W0 - np.clip(feeds[0]["w_g"], -0.25, 0.5), rtol=1e-6)


def test_clip_by_norm():
    main, startup, (w,), _, _ = fed_model(
        lambda: O.SGD(1.0, grad_clip=hr.clip.GradientClipByNorm(1.0)))
    types = [op.type for op in main.global_block().ops if role(op) & OP_ROLE_OPTIMIZE]
    assert types == ["square", "reduce_sum", "sqrt", "fill_constant", "elementwise_max",
                     "elementwise_div", "elementwise_mul", "sgd"]
    feeds = grads(1, seed=7)
    g = feeds[0]["w_g"]
    ((gw,),) = steps(main, startup, [w], feeds)
    np.testing.assert_allclose(gw, W0 - g / max(np.linalg.norm(g), 1.0), rtol=1e-5)


def test_clip_by_global_norm_and_set_gradient_clip():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        pairs = []
        for n in ("a", "b", "c"):
            w = L.create_parameter([2, 3], "float32", attr=hr.ParamAttr(
                name=n, initializer=NumpyArrayInitializer(W0)))
            pairs.append((w, L.data(n + "_g", [2, 3], append_batch_size=False)))
        hr.clip.set_gradient_clip(hr.clip.GradientClipByGlobalNorm(2.0), param_list=["a", "b"])
        O.SGD(1.0).apply_gradients(pairs)
    types = [op.type for op in main.global_block().ops]
    assert types.count("square") == 2 and types.count("sqrt") == 1
    assert types.count("elementwise_mul") == 2 and types.count("sgd") == 3
    sgd_c = main.global_block().ops[-1]
    assert sgd_c.input("Grad") == ["c_g"]  # c has no clip
    rng = np.random.RandomState(8)
    feed = {f"{n}_g": 3 * rng.randn(2, 3).astype("float32") for n in "abc"}
    ((a, b, c),) = steps(main, startup, ["a", "b", "c"], [feed])
    norm = math.sqrt(sum((feed[f"{n}_g"] ** 2).sum() for n in "ab"))
    factor = 2.0 / max(norm, 2.0)
    np.testing.assert_allclose(a, W0 - factor * feed["a_g"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, W0 - factor * feed["b_g"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, W0 - feed["c_g"], rtol=1e-6)


def test_param_clip_runs_before_regularization():
    main, startup, w, _, _, _ = scalar_model(
        O.SGD(0.1, regularization=hr.regularizer.L2Decay(1.0)),
        gradient_clip=hr.clip.GradientClipByValue(1.0))
    types = [op.type for op in after_backward(main)]
    assert types == ["fill_constant", "fill_constant", "elementwise_max", "elementwise_min",
                     "scale", "sum", "sgd"]
    (got,) = steps(main, startup, [w], [{}])
    assert got[0][0] == pytest.approx(2.0 - 0.1 * (1.0 + 2.0))


def test_clip_errors():
    with pytest.raises(LayerError, match="GradientClipByValue: argument 'min' \\(2.0\\) must "
                                         "not exceed 'max' \\(1.0\\)"):
        hr.clip.GradientClipByValue(1.0, 2.0)
    with pytest.raises(LayerError, match="GradientClipByNorm: argument 'clip_norm' must be > "):
        hr.clip.GradientClipByNorm(0)
    with pytest.raises(LayerError, match="GradientClipByGlobalNorm: argument 'group_name'"):
        hr.clip.GradientClipByGlobalNorm(1.0, group_name="")
    with pytest.raises(LayerError, match="set_gradient_clip: argument 'clip'"):
        hr.clip.set_gradient_clip(1.0)
    with pytest.raises(LayerError, match="set_gradient_clip: 'zz' is not a parameter"):
        hr.clip.set_gradient_clip(hr.clip.GradientClipByNorm(1.0), ["zz"], hr.Program())
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        a = L.create_parameter([1], "float32", name="a")
        b = L.create_parameter([1], "float32", name="b")
        ga = L.data("ga", [1], append_batch_size=False)
        a.gradient_clip = hr.clip.GradientClipByGlobalNorm(1.0)
        b.gradient_clip = hr.clip.GradientClipByGlobalNorm(2.0)
        with pytest.raises(LayerError, match="must share one clip_norm"):
            hr.clip.append_gradient_clip_ops([(a, ga), (b, ga)])


# -- learning-rate schedules --------------------------------------------------------------------

def schedule(build):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        lr = build()
    return main, startup, lr


SCHEDULES = [
    ("exponential", lambda: L.exponential_decay(0.1, 2, 0.5), lambda s: 0.1 * 0.5 ** (s / 2)),
    ("exponential_staircase", lambda: L.exponential_decay(0.1, 2, 0.5, staircase=True),
     lambda s: 0.1 * 0.5 ** (s // 2)),
    ("natural_exp", lambda: L.natural_exp_decay(0.1, 2, 0.5),
     lambda s: 0.1 * math.exp(-0.5 * s / 2)),
    ("inverse_time", lambda: L.inverse_time_decay(0.1, 2, 0.5),
     lambda s: 0.1 / (1 + 0.5 * s / 2)),
    ("polynomial", lambda: L.polynomial_decay(0.1, 4, 0.01, power=2.0),
     lambda s: 0.09 * (1 - min(s, 4) / 4) ** 2 + 0.01),
    ("polynomial_cycle", lambda: L.polynomial_decay(0.1, 2, 0.01, cycle=True),
     lambda s: 0.09 * (1 - s / (2 * max(math.ceil(s / 2), 1))) + 0.01),
    ("piecewise", lambda: L.piecewise_decay([2, 4], [0.1, 0.01, 0.001]),
     lambda s: 0.1 if s < 2 else 0.01 if s < 4 else 0.001),
    ("cosine", lambda: L.cosine_decay(0.1, 2, 3),
     lambda s: 0.05 * (math.cos((s // 2) * math.pi / 3) + 1)),
    ("noam", lambda: L.noam_decay(16, 3), lambda s: 0.25 * min((s + 1) ** -0.5,
                                                               (s + 1) * 3 ** -1.5)),
    ("warmup", lambda: L.linear_lr_warmup(0.1, 3, 0.0, 0.1),
     lambda s: 0.1 * s / 3 if s < 3 else 0.1),
    ("warmup_of_decay", lambda: L.linear_lr_warmup(L.exponential_decay(0.2, 1, 0.5), 2, 0.0,
                                                   0.1),
     lambda s: 0.05 * s if s < 2 else 0.2 * 0.5 ** s),
]


@pytest.mark.parametrize("name, build, ref", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_schedule_values(name, build, ref):
    main, startup, lr = schedule(build)
    assert lr.shape == (1,) and lr.dtype == "float32"
    got = [o[0][0] for o in steps(main, startup, [lr], [{}] * 7)]
    np.testing.assert_allclose(got, [ref(s) for s in range(7)], rtol=1e-5, atol=1e-8)


def test_schedule_structure_and_roles():
    main, startup, lr = schedule(lambda: L.exponential_decay(0.1, 10, 0.5, staircase=True))
    ops = main.global_block().ops
    assert ops[0].type == "increment" and ops[0].input("X") == ops[0].output("Out") == \
        ["@LR_DECAY_COUNTER@"]
    assert [op.type for op in ops] == ["increment", "cast", "scale", "floor", "fill_constant",
                                       "elementwise_pow", "scale"]
    assert all(role(op) == OP_ROLE_LRSCHED for op in ops)
    counter = main.global_block().var("@LR_DECAY_COUNTER@")
    assert counter.persistable and counter.dtype == "int64" and counter.shape == (1,)
    (init,) = startup.global_block().ops
    assert init.type == "fill_constant" and init.attr("value") == -1.0 and init.attr("dtype") == 3
    assert not main.clone(for_test=True).global_block().ops
    # a second schedule reuses the counter (one increment per run)
    with hr.program_guard(main, startup):
        L.piecewise_decay([3], [1.0, 0.5])
    assert [op.type for op in main.global_block().ops].count("increment") == 1


def test_optimizer_with_a_schedule():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        w = L.create_parameter([1], "float32", attr=hr.ParamAttr(name="w",
                                                                 initializer=Constant(0.0)))
        lr = L.piecewise_decay([1, 2], [1.0, 0.5, 0.25])
        loss = w * 3.0 + 1.0
        ops, _ = O.SGD(lr).minimize(loss)
    assert ops[0].input("LearningRate") == [lr.name]
    assert "learning_rate_0" not in main.global_block().vars
    got = [o[0][0] for o in steps(main, startup, [w], [{}] * 4)]
    assert got == pytest.approx([-3.0, -4.5, -5.25, -6.0])
    test = main.clone(for_test=True)
    assert [op.type for op in test.global_block().ops] == ["scale", "scale"]


@pytest.mark.parametrize("call, message", [
    (lambda: L.exponential_decay(0.1, 0, 0.5), "exponential_decay: argument 'decay_steps' must"),
    (lambda: L.natural_exp_decay(-1, 2, 0.5), "natural_exp_decay: argument 'learning_rate'"),
    (lambda: L.piecewise_decay([1, 2], [0.1]), "piecewise_decay: argument 'values' must be a"),
    (lambda: L.piecewise_decay([2, 1], [0.1, 0.2, 0.3]), "'boundaries' must increase"),
    (lambda: L.cosine_decay(0.1, 2, 0), "cosine_decay: argument 'epochs' must be > 0"),
    (lambda: L.polynomial_decay(0.1, 2, cycle="yes"), "polynomial_decay: argument 'cycle'"),
])
def test_schedule_errors(call, message):
    with hr.program_guard(hr.Program(), hr.Program()):
        with pytest.raises(LayerError, match=message):
            call()


@pytest.mark.parametrize("shape", [[], [1], [1, 1]])
def test_a_loss_of_one_element_of_any_rank_trains(shape):
    # Paddle 3's mean is 0-D; a [1, 1] loss is one element too (Paddle fills its gradient).
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        w = L.create_parameter([3], "float32", name="w",
                               default_initializer=hr.initializer.Constant(1.0))
        loss = L.reshape(L.reduce_sum(L.elementwise_mul(w, w), dim=[0], keep_dim=True),
                         shape)
        assert [int(d) for d in loss.shape] == shape
        O.SGD(0.25).minimize(loss)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, scope=scope)
    np.testing.assert_allclose(scope.get("w").numpy(), [0.5, 0.5, 0.5])  # w - 0.25 * 2w
