"""ONNX export: programs exported, checked by onnx.checker (full shape inference), run in
onnxruntime and compared with headrace's own outputs; unsupported ops named in one error."""
import math
import sys

import numpy as np
import pytest

import headrace as hr
from headrace import demo
from headrace.errors import HeadraceError, OpError

onnx = pytest.importorskip("onnx", reason="ONNX export needs the onnx package "
                           "(pip install headrace[onnx])")
ort = pytest.importorskip("onnxruntime", reason="the exported files are run in onnxruntime "
                          "(pip install onnxruntime)")

TOL = 1e-5


def _init(startup):
    exe, scope = hr.Executor(hr.CPUPlace()), hr.Scope()
    exe.run(startup, scope=scope)
    return exe, scope


def _compare(tmp_path, program, feed, targets, exe, scope, opset=17, extra_feed=None):
    """Run ``program`` in headrace and its export in onnxruntime; return the ONNX model."""
    expected = exe.run(program, feed={**feed, **(extra_feed or {})},
                       fetch_list=list(targets), scope=scope)
    path = tmp_path / "model.onnx"
    model = hr.onnx.export(program, list(feed), list(targets), path, opset_version=opset,
                           scope=scope)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, feed)
    for e, g, t in zip(expected, got, targets):
        assert g.shape == e.shape, t
        np.testing.assert_allclose(g, e, rtol=TOL, atol=TOL, err_msg=str(t))
    return model


def _op_types(model):
    return {n.op_type for n in model.graph.node}


def test_demo_network_matches_onnxruntime(tmp_path):
    main, startup, test_program, _loss, _acc, logits = demo.build(seed=3)
    exe, scope = _init(startup)
    x, y = demo.load_digits()[:2]
    # A few training steps, so the parameters are not just their initial values.
    for i in range(3):
        exe.run(main, feed={"img": x[i * 32:(i + 1) * 32], "label": y[i * 32:(i + 1) * 32]},
                scope=scope)
    batch = x[:7]
    model = _compare(tmp_path, test_program, {"img": batch}, [logits], exe, scope,
                     extra_feed={"label": y[:7]})
    assert {"Conv", "MaxPool", "MatMul", "Relu"} <= _op_types(model)
    # The feed's batch dim stays free: another batch size runs too.
    session = ort.InferenceSession(str(tmp_path / "model.onnx"))
    assert session.run(None, {"img": x[:3]})[0].shape == (3, 10)


def _mlp():
    main, startup = hr.Program(), hr.Program()
    main.random_seed = startup.random_seed = 5
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 3, 4], dtype="float32")
        h = hr.layers.fc(x, size=16, act="tanh")                 # mul flattens [N, 12]
        h = hr.layers.dropout(h, dropout_prob=0.25)              # downgrade_in_infer: * 0.75
        h = hr.layers.fc(h, size=8, act="sigmoid")
        h = hr.layers.leaky_relu(h, alpha=0.1)
        h = hr.layers.scale(h, scale=2.0, bias=-0.5)
        h = hr.layers.elu(hr.layers.swish(h, beta=1.5))
        h = hr.layers.batch_norm(h)
        logits = hr.layers.fc(h, size=5)
        probs = hr.layers.softmax(logits)
        test_program = main.clone(for_test=True)
    return main, startup, test_program, x, probs, logits


def test_mlp_matches_onnxruntime(tmp_path):
    _main, startup, test_program, _x, probs, logits = _mlp()
    exe, scope = _init(startup)
    rng = np.random.default_rng(0)
    # Running statistics away from 0/1, so batch_norm's test mode is really checked.
    for suffix, value in (("mean", 0.3), ("variance", 2.0)):
        name = next(n for n in scope.names() if n.startswith("batch_norm") and
                    n.endswith(f".w_{1 if suffix == 'mean' else 2}"))
        scope.find(name).numpy()[...] = value
    feed = {"x": rng.standard_normal((6, 3, 4)).astype(np.float32)}
    model = _compare(tmp_path, test_program, feed, [probs, logits], exe, scope)
    assert {"Flatten", "Softmax", "BatchNormalization", "LeakyRelu"} <= _op_types(model)


def test_elementwise_axis_broadcasting_is_explicit(tmp_path):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 3, 4, 5], dtype="float32")
        y = hr.layers.create_parameter(shape=[3, 4], dtype="float32")
        out = hr.layers.elementwise_mul(x, y, axis=1)       # Y spans X's dims 1..2
        out = hr.layers.elementwise_sub(out, hr.layers.reduce_mean(out, dim=[2], keep_dim=True))
        out = hr.layers.elementwise_max(out, hr.layers.relu6(out))
    exe, scope = _init(startup)
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((2, 3, 4, 5)).astype(np.float32)}
    model = _compare(tmp_path, main, feed, [out], exe, scope)
    assert "Unsqueeze" in _op_types(model)


def _transformer(vocab=50, seq=6, d=16, heads=2):
    main, startup = hr.Program(), hr.Program()
    main.random_seed = startup.random_seed = 7
    with hr.program_guard(main, startup):
        ids = hr.layers.data("ids", shape=[-1, seq, 1], dtype="int64")   # lookup_table's ids
        emb = hr.layers.embedding(ids, size=[vocab, d], padding_idx=0)
        h = hr.layers.layer_norm(emb, begin_norm_axis=2)

        def split_heads(t):
            t = hr.layers.reshape(t, [0, 0, heads, d // heads])
            return hr.layers.transpose(t, [0, 2, 1, 3])

        q, k, v = (split_heads(hr.layers.fc(h, size=d, num_flatten_dims=2)) for _ in range(3))
        scores = hr.layers.matmul(q, k, transpose_y=True, alpha=1 / math.sqrt(d // heads))
        weights = hr.layers.dropout(hr.layers.softmax(scores), dropout_prob=0.1,
                                    dropout_implementation="upscale_in_train")
        ctx = hr.layers.transpose(hr.layers.matmul(weights, v), [0, 2, 1, 3])
        ctx = hr.layers.reshape(ctx, [0, 0, d])
        h = hr.layers.elementwise_add(h, hr.layers.fc(ctx, size=d, num_flatten_dims=2))
        h = hr.layers.layer_norm(h, begin_norm_axis=2)
        ff = hr.layers.fc(hr.layers.fc(h, size=2 * d, num_flatten_dims=2, act="gelu"),
                          size=d, num_flatten_dims=2)
        out = hr.layers.layer_norm(hr.layers.elementwise_add(h, ff), begin_norm_axis=2)
        test_program = main.clone(for_test=True)
    return startup, test_program, out


@pytest.mark.parametrize("opset", [13, 17, 20])
def test_transformer_block_matches_onnxruntime(tmp_path, opset):
    """Embedding (with a padding row), attention with matmul's transpose and alpha, softmax,
    dropout in test mode, layer_norm, gelu; at opset 13 layer_norm and gelu are spelled out,
    at 20 gelu is ONNX's own."""
    if opset > onnx.defs.onnx_opset_version():
        pytest.skip(f"this onnx package's newest opset is {onnx.defs.onnx_opset_version()}")
    startup, test_program, out = _transformer()
    exe, scope = _init(startup)
    ids = np.random.default_rng(2).integers(0, 50, (3, 6, 1)).astype(np.int64)
    ids[0, :2] = 0                                          # padding lookups give zeros
    model = _compare(tmp_path, test_program, {"ids": ids}, [out], exe, scope, opset=opset)
    types = _op_types(model)
    assert "Gather" in types and "MatMul" in types and "Softmax" in types
    assert ("LayerNormalization" in types) == (opset >= 17)
    assert ("Gelu" in types) == (opset >= 20)


def test_conv_net_with_batch_norm_and_avg_pool(tmp_path):
    main, startup = hr.Program(), hr.Program()
    main.random_seed = startup.random_seed = 11
    with hr.program_guard(main, startup):
        img = hr.layers.data("img", shape=[-1, 2, 9, 9], dtype="float32")
        h = hr.layers.conv2d(img, num_filters=4, filter_size=3, stride=2, padding=1)
        h = hr.layers.batch_norm(h, act="relu")
        h = hr.layers.pool2d(h, pool_size=3, pool_type="avg", pool_stride=1, pool_padding=1)
        h = hr.layers.pool2d(h, pool_type="max", global_pooling=True)
        out = hr.layers.fc(h, size=3, act="softmax")
        test_program = main.clone(for_test=True)
    exe, scope = _init(startup)
    feed = {"img": np.random.default_rng(3).standard_normal((2, 2, 9, 9)).astype(np.float32)}
    model = _compare(tmp_path, test_program, feed, [out], exe, scope)
    assert {"AveragePool", "GlobalMaxPool", "BatchNormalization"} <= _op_types(model)


def test_unsupported_ops_are_named_together(tmp_path):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        label = hr.layers.data("label", shape=[-1, 1], dtype="int64")
        loss = hr.layers.softmax_with_cross_entropy(x, label)   # this line is the first
        out = hr.layers.label_smooth(hr.layers.one_hot(label, depth=4), epsilon=0.1)
        total = hr.layers.elementwise_add(hr.layers.reduce_sum(loss), hr.layers.reduce_sum(out))
    _init(startup)
    with pytest.raises(OpError) as info:
        hr.onnx.export(main, ["x", "label"], [total], tmp_path / "m.onnx")
    text = str(info.value)
    for op_type in ("softmax_with_cross_entropy", "one_hot_v2", "label_smooth"):
        assert op_type in text
    assert "reduce_sum" not in text.split("created at")[0]
    assert info.value.op_type == "softmax_with_cross_entropy"
    assert "test_onnx_export.py" in text and "this line is the first" in text
    assert not (tmp_path / "m.onnx").exists()


def test_training_mode_op_and_missing_parameter_are_errors(tmp_path):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        out = hr.layers.dropout(hr.layers.fc(x, size=3), dropout_prob=0.5)
    exe, scope = _init(startup)
    # export prunes like save_inference_model (clone(for_test=True)): dropout is in test mode.
    hr.onnx.export(main, ["x"], [out], tmp_path / "ok.onnx", scope=scope)
    with pytest.raises(HeadraceError, match="has no value in the scope.*startup"):
        hr.onnx.export(main, ["x"], [out], tmp_path / "m.onnx", scope=hr.Scope())
    with pytest.raises(HeadraceError, match="opset_version"):
        hr.onnx.export(main, ["x"], [out], opset_version=9, scope=scope)


def test_a_plugin_registers_its_own_exporter(tmp_path):
    """The headrace_onnx_register_exporters hook: a new exporter for an op type without one,
    and a replacement only with override=True."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        out = hr.layers.label_smooth(x, epsilon=0.2)

    def label_smooth(ctx, op):
        # (1 - eps) X + eps / K
        x_name, k = op.input("X")[0], ctx.shape(op.input("X")[0])[-1]
        eps = op.attr("epsilon")
        scaled = ctx.node("Mul", [x_name, ctx.scalar(1 - eps, x_name)])
        ctx.node("Add", [scaled, ctx.scalar(eps / k, x_name)], op.output("Out")[0])

    class Plugin:
        @hr.onnx.hookimpl
        def headrace_onnx_register_exporters(self, registry):
            registry.add("label_smooth", label_smooth)

    exe, scope = _init(startup)
    exporters = hr.onnx.build_exporters(plugins=[Plugin()], autoload=False)
    assert exporters.owner("label_smooth") != exporters.owner("relu")
    feed = {"x": np.random.default_rng(4).random((3, 4)).astype(np.float32)}
    (expected,) = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
    hr.onnx.export(main, ["x"], [out], tmp_path / "m.onnx", scope=scope, exporters=exporters)
    (got,) = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, feed)
    np.testing.assert_allclose(got, expected, rtol=TOL, atol=TOL)

    class Clash:
        @hr.onnx.hookimpl
        def headrace_onnx_register_exporters(self, registry):
            registry.add("relu", label_smooth)

    with pytest.raises(HeadraceError, match="'relu' already has an ONNX exporter.*override"):
        hr.onnx.build_exporters(plugins=[Clash()], autoload=False)


def test_without_the_onnx_package_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)        # import onnx -> ImportError
    _main, startup, test_program, _x, probs, _logits = _mlp()
    with pytest.raises(HeadraceError, match=r"pip install headrace\[onnx\]"):
        hr.onnx.export(test_program, ["x"], [probs])


def test_export_onnx_command(tmp_path, capsys):
    from headrace import cli
    _main, startup, test_program, _x, probs, _logits = _mlp()
    exe, scope = _init(startup)
    hr.io.save_inference_model(str(tmp_path / "model"), ["x"], [probs], exe,
                               main_program=test_program, scope=scope,
                               model_filename="m.pdmodel", params_filename="m.pdiparams")
    out = tmp_path / "m.onnx"
    assert cli.main(["export-onnx", str(tmp_path / "model" / "m"), "-o", str(out),
                     "--opset", "13"]) == 0
    assert "wrote" in capsys.readouterr().out
    feed = {"x": np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)}
    (expected,) = exe.run(test_program, feed=feed, fetch_list=[probs], scope=scope)
    (got,) = ort.InferenceSession(str(out)).run(None, feed)
    np.testing.assert_allclose(got, expected, rtol=TOL, atol=TOL)
    # Usage errors: exit 2, one line naming the problem.
    assert cli.main(["export-onnx", str(tmp_path / "nowhere"), "-o", str(out)]) == 2
    assert cli.main(["export-onnx", str(tmp_path / "model" / "m"), "-o",
                     str(tmp_path / "no" / "dir.onnx")]) == 2
    assert cli.main(["export-onnx", str(tmp_path / "model" / "m"), "-o", str(out),
                     "--opset", "7"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("headrace export-onnx: error:") for line in err)
    assert "cannot load" in err[0] and "not writable" in err[1] and "--opset" in err[2]
