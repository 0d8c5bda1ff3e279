"""Write training programs that PaddlePaddle 3.3 serializes (forward, its ``*_grad`` ops and
optimizer ops, a 0-D ``paddle.mean`` loss), with the parameters it started from, the batches it
was fed and the losses and parameters it computed, for tests/test_paddle_train.py to train
through headrace.

Needs PaddlePaddle 3.3.1 (legacy static mode; never a headrace dependency):

    pip install paddlepaddle==3.3.1
    python scripts/make_paddle_train_fixtures.py [--out tests/data/paddle_train]

Each fixture is a directory with ``main.pb`` and ``startup.pb`` (``desc.serialize_to_string()``
of the two programs), ``data.npz`` (``init:<name>`` every persistable after the startup program
ran, ``feed<k>:<name>`` the batch of step k, ``loss`` Paddle's losses of the steps, in order,
``final:<name>`` the persistables after the last step), ``persistables`` (Paddle's combined file
of that final state, as ``save_vars`` writes it) and ``ops.txt``, the op types of the main
program (what the fixture exercises).
"""
import argparse
import os
import pathlib

os.environ.setdefault("FLAGS_enable_pir_api", "0")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.nn.functional as F  # noqa: E402
from paddle.base.layer_helper import LayerHelper  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle_train"
STEPS = 5
BATCH = 6


def mse_fc():
    """Two fc layers (mul + elementwise_add, relu between) and the 0-D mean squared error."""
    x = paddle.static.data("x", [-1, 4], "float32")
    y = paddle.static.data("y", [-1, 3], "float32")
    h = paddle.static.nn.fc(x, 8, activation="relu")
    out = paddle.static.nn.fc(h, 3)
    return paddle.mean(paddle.square(out - y))


def _op(op_type, inputs, attrs=None):
    """Append ``op_type`` with the legacy IR's LayerHelper: in Paddle 3.3's legacy static mode
    paddle.matmul and paddle.tanh accept PIR values only."""
    helper = LayerHelper(op_type)
    first = next(iter(inputs.values()))[0]
    out = helper.create_variable_for_type_inference(first.dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs or {})
    return out


def ce_matmul():
    """matmul_v2 layers with a bias and tanh, then softmax_with_cross_entropy and a 0-D
    mean (F.cross_entropy's reduce_mean)."""
    x = paddle.static.data("x", [-1, 4], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    w1 = paddle.static.create_parameter([4, 8], "float32", name="w1")
    b1 = paddle.static.create_parameter([8], "float32", name="b1", is_bias=True)
    w2 = paddle.static.create_parameter([8, 3], "float32", name="w2")
    h = _op("tanh", {"X": [_op("matmul_v2", {"X": [x], "Y": [w1]}) + b1]})
    logits = _op("matmul_v2", {"X": [h], "Y": [w2]})
    return F.cross_entropy(logits, label)


def conv_bn():
    """conv2d, batch_norm (training: batch statistics, running ones updated), relu, max
    pool2d, an fc and cross entropy summed (reduce_sum, 0-D) over the batch."""
    x = paddle.static.data("img", [-1, 2, 6, 6], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    # No conv bias: batch_norm cancels it, so its gradient is only rounding noise.
    h = paddle.static.nn.conv2d(x, num_filters=3, filter_size=3, padding=1, bias_attr=False)
    h = paddle.static.nn.batch_norm(h, act="relu")
    h = F.max_pool2d(h, kernel_size=2, stride=2)
    logits = paddle.static.nn.fc(h, 3)
    # reduction="sum" calls the PIR-only paddle.sum: the legacy reduce_sum op it would emit.
    return _op("reduce_sum", {"X": [F.cross_entropy(logits, label, reduction="none")]},
               {"dim": [], "keep_dim": False, "reduce_all": True})


def attention():
    """Token ids through an embedding (lookup_table_v2), layer_norm, self-attention scores
    (matmul_v2 with trans_y, softmax), their weighted sum, gelu, a mean over the tokens
    (reduce_mean over dim 1), an fc and cross entropy: a 0-D mean."""
    ids = paddle.static.data("ids", [-1, 5], "int64")
    label = paddle.static.data("label", [-1, 1], "int64")
    h = paddle.static.nn.embedding(ids, size=[11, 6])
    h = paddle.static.nn.layer_norm(h, begin_norm_axis=2)
    scores = _op("matmul_v2", {"X": [h], "Y": [h]}, {"trans_y": True})
    att = _op("softmax", {"X": [scores]}, {"axis": -1})
    ctx = _op("gelu", {"X": [_op("matmul_v2", {"X": [att], "Y": [h]})]})
    pooled = _op("reduce_mean", {"X": [ctx]}, {"dim": [1], "keep_dim": False})
    return F.cross_entropy(paddle.static.nn.fc(pooled, 3), label)


OPTIMIZERS = {
    "sgd": lambda: paddle.optimizer.SGD(learning_rate=0.1),
    "momentum": lambda: paddle.optimizer.Momentum(learning_rate=0.1, momentum=0.9),
    "adam": lambda: paddle.optimizer.Adam(learning_rate=0.01),
    # beta1, beta2 and epsilon as tensors (Beta1Tensor, Beta2Tensor, EpsilonTensor).
    "adam_tensors": lambda: paddle.optimizer.Adam(
        learning_rate=0.01, beta1=paddle.full([1], 0.8, "float32"),
        beta2=paddle.full([1], 0.95, "float32"), epsilon=paddle.full([1], 1e-6, "float32")),
    # AMSGrad (Moment2Max in the adam ops).
    "adam_amsgrad": lambda: paddle.optimizer.Adam(learning_rate=0.01, amsgrad=True),
    # AdamW's decoupled weight decay (adamw ops).
    "adamw": lambda: paddle.optimizer.AdamW(learning_rate=0.01, weight_decay=0.05),
    # L2 decay inside the momentum op (regularization_method), or as scale + sum ops (Adam).
    "momentum_l2": lambda: paddle.optimizer.Momentum(
        learning_rate=0.1, momentum=0.9, weight_decay=paddle.regularizer.L2Decay(0.05)),
    "adam_l2": lambda: paddle.optimizer.Adam(
        learning_rate=0.01, weight_decay=paddle.regularizer.L2Decay(0.05)),
    # Gradients clipped by value (clip ops), by norm (clip_by_norm ops), by their global norm
    # (squared_l2_norm, sum, sqrt, elementwise_max/_div/_mul).
    "sgd_clip": lambda: paddle.optimizer.SGD(
        learning_rate=0.1, grad_clip=paddle.nn.ClipGradByValue(0.05)),
    "sgd_clipnorm": lambda: paddle.optimizer.SGD(
        learning_rate=0.1, grad_clip=paddle.nn.ClipGradByNorm(0.05)),
    "adam_clipglobal": lambda: paddle.optimizer.Adam(
        learning_rate=0.01, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.05)),
}
# fixture name -> (network, optimizer)
FIXTURES = {"mse_sgd": (mse_fc, "sgd"), "mse_momentum": (mse_fc, "momentum"),
            "mse_adam": (mse_fc, "adam"), "ce_adam": (ce_matmul, "adam"),
            "ce_momentum": (ce_matmul, "momentum"),
            "mse_momentum_l2": (mse_fc, "momentum_l2"), "mse_adam_l2": (mse_fc, "adam_l2"),
            "mse_sgd_clip": (mse_fc, "sgd_clip"), "mse_sgd_clipnorm": (mse_fc, "sgd_clipnorm"),
            "mse_adam_clipglobal": (mse_fc, "adam_clipglobal"),
            "conv_momentum": (conv_bn, "momentum"), "mse_adamw": (mse_fc, "adamw"),
            "attn_adam": (attention, "adam"), "mse_adam_amsgrad": (mse_fc, "adam_amsgrad"),
            "mse_adam_tensors": (mse_fc, "adam_tensors"),
            "mse_gradients_sgd": (mse_fc, "gradients_sgd")}


# Fixtures whose programs keep Paddle's op_callstack attributes (the Python stack of every op,
# most of a program's bytes): the others drop them to keep the files small.
KEEP_CALLSTACK = {"mse_sgd", "ce_adam"}


def _drop_callstacks(*programs):
    for program in programs:
        for block in program.blocks:
            for op in block.ops:
                if op.desc.has_attr("op_callstack"):
                    op.desc.remove_attr("op_callstack")


def _feeds(main, rng):
    names = [v.name for v in main.list_vars() if getattr(v, "is_data", False)]
    feeds = []
    for _ in range(STEPS):
        feed = {}
        for n in names:
            if n == "label":
                feed[n] = rng.integers(0, 3, (BATCH, 1)).astype("int64")
            elif n == "ids":
                feed[n] = rng.integers(0, 11, (BATCH, 5)).astype("int64")
            elif n == "img":
                feed[n] = rng.uniform(-1, 1, (BATCH, 2, 6, 6)).astype("float32")
            else:
                width = main.global_block().var(n).shape[-1]
                feed[n] = rng.uniform(-1, 1, (BATCH, width)).astype("float32")
        feeds.append(feed)
    return feeds


def _persistables(main, scope):
    return {v.name: np.array(scope.find_var(v.name).get_tensor())
            for v in main.list_vars()
            if v.persistable and v.name not in ("feed", "fetch")}


def make(out_dir):
    paddle.enable_static()
    # ClipGradByGlobalNorm's static path calls these PIR-only functions: give them legacy ops.
    paddle.sqrt = lambda x, name=None: _op("sqrt", {"X": [x]})
    paddle.maximum = lambda x, y, name=None: _op("elementwise_max", {"X": [x], "Y": [y]})
    paddle.divide = lambda x, y, name=None: _op("elementwise_div", {"X": [x], "Y": [y]})
    for name, (network, opt) in FIXTURES.items():
        paddle.seed(7)
        rng = np.random.default_rng(sum(map(ord, name)))
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            loss = network()
            if opt == "gradients_sgd":
                # paddle.static.gradients (fill_any_like seeds the loss's gradient), then the
                # update applied to those gradients.
                params = main.all_parameters()
                grads = paddle.static.gradients([loss], params)
                paddle.optimizer.SGD(learning_rate=0.1).apply_gradients(
                    list(zip(params, grads)))
            else:
                OPTIMIZERS[opt]().minimize(loss)
        assert loss.shape == (), f"{name}: the loss is not 0-D but {loss.shape}"
        arrays = {}
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            exe = paddle.static.Executor(paddle.CPUPlace())
            exe.run(startup)
            arrays.update({f"init:{n}": v for n, v in _persistables(main, scope).items()})
            losses = []
            for k, feed in enumerate(_feeds(main, rng)):
                arrays.update({f"feed{k}:{n}": v for n, v in feed.items()})
                (value,) = exe.run(main, feed=feed, fetch_list=[loss])
                assert np.shape(value) == (), f"{name}: fetched loss of shape {value.shape}"
                losses.append(value)
            arrays["loss"] = np.stack(losses)
            arrays.update({f"final:{n}": v for n, v in _persistables(main, scope).items()})
            where = pathlib.Path(out_dir) / name
            where.mkdir(parents=True, exist_ok=True)
            # Paddle's combined file of the final state (its 0-D learning rate with no dims).
            state = [main.global_block().var(n) for n in _persistables(main, scope)]
            paddle.static.io.save_vars(exe, str(where), main, vars=state,
                                       filename="persistables")
        if name not in KEEP_CALLSTACK:
            _drop_callstacks(main, startup)
        (where / "main.pb").write_bytes(main.desc.serialize_to_string())
        (where / "startup.pb").write_bytes(startup.desc.serialize_to_string())
        np.savez_compressed(where / "data.npz", **arrays)
        types = sorted({op.type for b in main.blocks for op in b.ops})
        (where / "ops.txt").write_text("\n".join(types) + "\n")
        print(name, arrays["loss"], types)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE))
    make(parser.parse_args().out)
