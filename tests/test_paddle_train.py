"""Training programs that PaddlePaddle 3.3.1 serializes (legacy static mode: the forward ops, its
``*_grad`` ops, the optimizer ops, a 0-D ``paddle.mean`` loss seeded by a 0-D fill_constant)
train here with Paddle's numbers: from the same initial parameters and batches, the losses of 5
steps match Paddle's to 1e-6, and so do the parameters and optimizer state after them. The
networks: fc layers (mul or matmul_v2) with a mean squared error or cross entropy, a conv2d /
batch_norm / pool2d network, an embedding / layer_norm / self-attention / gelu network; the
updates: SGD, Momentum, Adam (AMSGrad, betas and epsilon as tensors), AdamW, L2 decay (inside
momentum, or scale + sum ops), gradients clipped by value, by norm and by their global norm.

The fixtures are made by ``scripts/make_paddle_train_fixtures.py`` (with Paddle);
``tox -e paddle`` makes them afresh and runs this file on them (``HEADRACE_PADDLE_TRAIN``).
The same networks built with headrace's layers and ``minimize`` give the same losses too.
"""
import os
import pathlib

import numpy as np
import pytest

import headrace as hr
from headrace.framework.program import OP_ROLE_LOSS

ROOT = pathlib.Path(os.environ.get("HEADRACE_PADDLE_TRAIN") or
                    pathlib.Path(__file__).resolve().parent / "data" / "paddle_train")
FIXTURES = sorted(p.name for p in ROOT.iterdir() if (p / "main.pb").exists())
# What each fixture's main program must hold (Paddle's grad and optimizer ops).
EXERCISES = {
    "mse": {"mul_grad", "elementwise_add_grad", "relu_grad", "square_grad",
            "elementwise_sub_grad", "reduce_mean_grad"},
    "ce": {"matmul_v2_grad", "tanh_grad", "softmax_with_cross_entropy_grad",
           "reduce_mean_grad"},
    "conv": {"conv2d_grad", "batch_norm_grad", "pool2d_grad", "reduce_sum_grad",
             "softmax_with_cross_entropy_grad"},
    "attn": {"lookup_table_v2_grad", "layer_norm_grad", "matmul_v2_grad", "softmax_grad",
             "gelu_grad", "reduce_mean_grad", "sum"},
    "sgd": {"sgd"}, "momentum": {"momentum"}, "adam": {"adam"}, "adamw": {"adamw"},
    "gradients": {"fill_any_like", "sgd"},          # paddle.static.gradients + apply_gradients
}
# What a fixture's optimizer adds: L2 decay as scale + sum ops (Adam) or inside the momentum
# op (its regularization_method attribute), gradients clipped by value.
EXTRAS = {"mse_adam_l2": {"scale", "sum"}, "mse_sgd_clip": {"clip"},
          "mse_sgd_clipnorm": {"clip_by_norm"},
          "mse_adam_clipglobal": {"squared_l2_norm", "sum", "sqrt", "elementwise_max",
                                  "elementwise_div", "elementwise_mul"}}


def _load(name):
    where = ROOT / name
    main = hr.Program.parse_from_string((where / "main.pb").read_bytes())
    startup = hr.Program.parse_from_string((where / "startup.pb").read_bytes())
    return main, startup, np.load(where / "data.npz")


def _loss_name(main):
    """The loss: what the forward op marked with Paddle's loss role writes (minimize), or what
    paddle.static.gradients seeded with fill_any_like."""
    ops = [op for op in main.global_block().ops
           if op.attr("op_role") == OP_ROLE_LOSS]
    if not ops:
        ops = [op for op in main.global_block().ops if op.type == "fill_any_like"]
        assert len(ops) == 1, [op.type for op in ops]
        return ops[0].input("X")[0]
    assert len(ops) == 1, [op.type for op in ops]
    (name,) = ops[0].output_arg_names
    return name


def _train(main, startup, data, scope):
    exe = hr.Executor(hr.CPUPlace())
    exe.run(startup, scope=scope)
    init = {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith("init:")}
    for n, value in init.items():
        # The startup program made every persistable in Paddle's shape and dtype ([] for the
        # learning rate, [1] for Adam's beta powers); then Paddle's initial values go in.
        made = np.asarray(scope.find(n).data)
        assert made.shape == value.shape and made.dtype == value.dtype, n
        scope.set(n, hr.Tensor(value.copy()))
    loss = _loss_name(main)
    losses = []
    for k in range(len(data["loss"])):
        feed = {key.split(":", 1)[1]: data[key] for key in data.files
                if key.startswith(f"feed{k}:")}
        (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        assert value.shape == () and value.dtype == np.float32, value
        losses.append(value)
    return np.array(losses), init


def test_every_fixture_exercises_its_ops():
    assert {"mse_sgd", "mse_momentum", "mse_adam", "mse_momentum_l2", "mse_adam_l2",
            "mse_sgd_clip", "mse_sgd_clipnorm", "mse_adam_clipglobal", "ce_adam",
            "ce_momentum", "conv_momentum", "mse_adamw", "attn_adam",
            "mse_adam_amsgrad", "mse_adam_tensors", "mse_gradients_sgd"} <= set(FIXTURES)
    for name in FIXTURES:
        main, _, _ = _load(name)
        types = {op.type for op in main.global_block().ops}
        want = set(EXTRAS.get(name, ()))
        for part in name.split("_")[:2]:
            want |= EXERCISES[part]
        assert want <= types, f"{name}: missing {want - types}"
        if name in ("mse_sgd", "ce_adam"):    # Paddle's bookkeeping attributes, kept as they are
            assert all(op.has_attr("op_callstack") and op.has_attr("op_role")
                       for op in main.global_block().ops)
        if name == "mse_adam_amsgrad":    # AMSGrad's running maximum, kept per parameter
            assert all(op.attr("amsgrad") and op.input("Moment2Max") == op.output(
                "Moment2MaxOut") for op in main.global_block().ops if op.type == "adam")
        if name == "mse_adam_tensors":    # beta1, beta2, epsilon from tensors
            assert all(op.input("Beta1Tensor") and op.input("Beta2Tensor")
                       and op.input("EpsilonTensor")
                       for op in main.global_block().ops if op.type == "adam")
        if name == "mse_adamw":     # the decoupled decay is on for every parameter
            assert {op.attr("with_decay") for op in main.global_block().ops
                    if op.type == "adamw"} == {True}
        if name == "mse_momentum_l2":
            assert {op.attr("regularization_method") for op in main.global_block().ops
                    if op.type == "momentum"} == {"l2_decay"}
        # The loss is 0-D in the program Paddle wrote, and so is its seeded gradient.
        loss = main.global_block().var(_loss_name(main))
        assert tuple(loss.shape) == ()
        assert tuple(main.global_block().var(loss.name + "@GRAD").shape) == ()
        (seed,) = [op for op in main.global_block().ops
                   if loss.name + "@GRAD" in op.output_arg_names]
        assert seed.type in ("fill_constant", "fill_any_like"), seed.type
        if seed.type == "fill_constant":
            assert list(seed.attr("shape")) == []


@pytest.mark.parametrize("name", FIXTURES)
def test_paddle_training_program_gives_paddles_losses(name):
    main, startup, data = _load(name)
    scope = hr.Scope()
    losses, init = _train(main, startup, data, scope)
    np.testing.assert_allclose(losses, data["loss"], rtol=1e-6, atol=1e-6, err_msg=name)
    for n in init:
        np.testing.assert_allclose(np.asarray(scope.find(n).data), data[f"final:{n}"],
                                   rtol=1e-5, atol=1e-6, err_msg=f"{name}: {n}")


def _headrace_mse_fc(init, opt):
    """The mse_* network with headrace's layers, parameters named as Paddle named them."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        y = hr.layers.data("y", shape=[-1, 3], dtype="float32")
        h = hr.layers.fc(x, 8, act="relu", param_attr=hr.ParamAttr(name="fc_0.w_0"),
                         bias_attr=hr.ParamAttr(name="fc_0.b_0"))
        out = hr.layers.fc(h, 3, param_attr=hr.ParamAttr(name="fc_1.w_0"),
                           bias_attr=hr.ParamAttr(name="fc_1.b_0"))
        loss = hr.layers.mean(hr.layers.square(out - y))
        opt.minimize(loss)
    return main, startup, loss


OPTIMIZERS = {
    "sgd": lambda: hr.optimizer.SGD(learning_rate=0.1),
    "momentum": lambda: hr.optimizer.Momentum(learning_rate=0.1, momentum=0.9),
    "adam": lambda: hr.optimizer.Adam(learning_rate=0.01),
    "adamw": lambda: hr.optimizer.AdamW(learning_rate=0.01, weight_decay=0.05),
}


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_headrace_minimize_gives_paddles_losses(opt):
    """headrace's own layers and minimize over the same network, parameters and batches give
    Paddle's losses: a 0-D loss from layers.mean, trained by append_backward's seed."""
    _, _, data = _load(f"mse_{opt}")
    main, startup, loss = _headrace_mse_fc(data, OPTIMIZERS[opt]())
    assert tuple(loss.shape) == ()
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    params = ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0")
    for n in params:
        scope.set(n, hr.Tensor(data[f"init:{n}"].copy()))
    losses = []
    for k in range(len(data["loss"])):
        feed = {n: data[f"feed{k}:{n}"] for n in ("x", "y")}
        (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        assert value.shape == ()
        losses.append(value)
    np.testing.assert_allclose(losses, data["loss"], rtol=1e-6, atol=1e-6)
    for n in params:
        np.testing.assert_allclose(np.asarray(scope.find(n).data), data[f"final:{n}"],
                                   rtol=1e-5, atol=1e-6, err_msg=n)


@pytest.mark.parametrize("name", FIXTURES)
def test_paddles_saved_state_loads_and_saves_byte_for_byte(name, tmp_path):
    """Paddle's combined file of the final state (0-D learning rate: a tensor desc without
    dims) loads into headrace as Paddle's values, and headrace writes the same bytes back."""
    main, startup, data = _load(name)
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    loaded = hr.io.load_persistables(exe, str(ROOT / name), main, filename="persistables",
                                     scope=scope)
    finals = {k.split(":", 1)[1] for k in data.files if k.startswith("final:")}
    assert set(loaded) == finals
    zero_d = [n for n in finals if data[f"final:{n}"].shape == ()]
    assert zero_d, "the learning rate is 0-D in Paddle 3"
    for n in finals:
        value = np.asarray(scope.find(n).data)
        assert value.shape == data[f"final:{n}"].shape, n
        np.testing.assert_array_equal(value, data[f"final:{n}"], err_msg=n)
    hr.io.save_persistables(exe, str(tmp_path), main, filename="persistables", scope=scope)
    assert (tmp_path / "persistables").read_bytes() == \
        (ROOT / name / "persistables").read_bytes()
