"""Layer functions and LayerHelper: ops, names, shapes, attributes, startup contents, errors.

Programs that run here use only ops with CPU kernels today; nothing here needs a gradient.
"""
import math

import numpy as np
import pytest

import headrace as hr
from headrace import LayerError, VariableError
from headrace.framework.program import OP_ROLE_FORWARD
from headrace.ops import default_registry

L = hr.layers


@pytest.fixture
def progs():
    """Fresh (main, startup), installed as the defaults, with fresh unique names."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        yield main, startup


def types(program, block=0):
    return [op.type for op in program.block(block).ops]


def run(main, startup, feed=None, fetch=()):
    scope = hr.Scope()
    exe = hr.Executor(hr.CPUPlace())
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed or {}, fetch_list=list(fetch), scope=scope)


def test_every_op_used_here_runs_on_cpu():
    # The executing tests below rely on these forward kernels.
    reg = default_registry()
    for op in ("conv2d", "pool2d", "mul", "sum", "elementwise_add", "relu", "softmax",
               "softmax_with_cross_entropy", "cross_entropy2", "mean", "lookup_table",
               "batch_norm", "dropout", "top_k", "accuracy", "reshape2", "transpose2", "split",
               "concat", "cast", "fill_constant", "assign_value", "uniform_random",
               "gaussian_random", "reduce_sum", "matmul", "scale", "square"):
        assert "cpu" in reg.kernels_for(op), op


# -- the design document's network -----------------------------------------------------------

def test_design_example_builds_and_runs(progs):
    main, startup = progs
    img = L.data("img", shape=[-1, 1, 8, 8], dtype="float32")
    label = L.data("label", shape=[-1, 1], dtype="int64")
    h = L.conv2d(img, num_filters=16, filter_size=3, padding=1, act="relu")
    h = L.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
    logits = L.fc(h, size=10)
    loss = L.mean(L.softmax_with_cross_entropy(logits, label))

    assert types(main) == ["conv2d", "elementwise_add", "relu", "pool2d", "mul",
                           "elementwise_add", "softmax_with_cross_entropy", "mean"]
    assert h.shape == (-1, 16, 4, 4) and logits.shape == (-1, 10) and loss.shape == (1,)
    assert [p.name for p in main.all_parameters()] == \
        ["conv2d_0.w_0", "conv2d_0.b_0", "fc_0.w_0", "fc_0.b_0"]
    assert main.global_block().var("fc_0.w_0").shape == (256, 10)
    # parameters: in both programs; initializer ops only in the startup program
    assert [p.name for p in startup.all_parameters()] == \
        [p.name for p in main.all_parameters()]
    assert types(startup) == ["gaussian_random", "fill_constant", "uniform_random",
                              "fill_constant"]
    conv_init, _, fc_init, _ = startup.global_block().ops
    assert conv_init.attr("std") == pytest.approx(math.sqrt(2.0 / 9), rel=1e-6)
    assert fc_init.attr("max") == pytest.approx(math.sqrt(6.0 / 266), rel=1e-6)
    assert all(op.attr("op_role") == OP_ROLE_FORWARD for op in main.global_block().ops)

    x = np.random.RandomState(0).rand(4, 1, 8, 8).astype("float32")
    y = np.array([[1], [2], [3], [9]], dtype="int64")
    (got,) = run(main, startup, {"img": x, "label": y}, [loss])
    assert got.shape == (1,) and np.isfinite(got).all()


# -- data --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, kwargs, expected", [
    ([-1, 1, 8, 8], {}, (-1, 1, 8, 8)),
    ([3], {}, (-1, 3)),
    ([3, 4], {"append_batch_size": False}, (3, 4)),
    ([None, 5], {}, (-1, 5)),
    ([2, -1], {}, (2, -1)),
])
def test_data_shapes(progs, shape, kwargs, expected):
    v = L.data("x", shape, **kwargs)
    assert v.shape == expected
    assert v.need_check_feed and v.stop_gradient and not v.persistable
    assert v.block is progs[0].global_block() and not progs[0].global_block().ops


def test_data_dtype_lod_and_redeclaration(progs):
    v = L.data("words", [1], dtype="int64", lod_level=1)
    assert (v.dtype, v.lod_level) == ("int64", 1)
    assert L.data("words", [1], dtype="int64", lod_level=1) is v
    with pytest.raises(VariableError, match="re-declared"):
        L.data("words", [2], dtype="int64")


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "", "shape": [1]}, "data: argument 'name'"),
    ({"name": "x", "shape": 3}, "data: argument 'shape'"),
    ({"name": "x", "shape": [0, 2]}, "has a 0 dim"),
    ({"name": "x", "shape": [1.5]}, "data: argument 'shape' must be an int"),
    ({"name": "x", "shape": [1], "dtype": "float13"}, "data: argument 'dtype'"),
    ({"name": "x", "shape": [1], "lod_level": -1}, "data: argument 'lod_level'"),
])
def test_data_errors(progs, kwargs, message):
    with pytest.raises(LayerError, match=message):
        L.data(**kwargs)


# -- fc ----------------------------------------------------------------------------------------

def test_fc_names_shapes_attrs(progs):
    main, startup = progs
    x = L.data("x", [3, 4])
    out = L.fc(x, size=5, num_flatten_dims=2, act="tanh")
    assert out.shape == (-1, 3, 5)
    mul, add, act = main.global_block().ops
    assert (mul.type, add.type, act.type) == ("mul", "elementwise_add", "tanh")
    assert mul.attr("x_num_col_dims") == 2 and mul.attr("y_num_col_dims") == 1
    assert mul.input("Y") == ["fc_0.w_0"] and mul.output("Out") == ["fc_0.tmp_0"]
    assert add.attr("axis") == 2 and add.input("Y") == ["fc_0.b_0"]
    assert act.output("Out") == [out.name] == ["fc_0.tmp_2"]
    assert isinstance(out.param, hr.Parameter) and out.param.name == "fc_0.w_0"
    assert out.param.block is main.global_block() and out.param.shape == (4, 5)
    assert out.bias.name == "fc_0.b_0" and out.bias.shape == (5,)
    assert out.params == [out.param]
    assert out.param.trainable and out.param.persistable
    sw, sb = startup.all_parameters()
    assert (sw.name, sw.shape, sb.name) == ("fc_0.w_0", (4, 5), "fc_0.b_0")
    init_w, init_b = startup.global_block().ops
    assert init_w.type == "uniform_random" and init_w.output("Out") == ["fc_0.w_0"]
    assert init_w.attr("shape") == [4, 5] and init_w.attr("seed") == 0
    assert init_w.attr("max") == pytest.approx(math.sqrt(6.0 / 9)) == -init_w.attr("min")
    assert init_b.type == "fill_constant" and init_b.attr("value") == 0.0
    assert init_b.attr("shape") == [5]


def test_fc_second_layer_counts_up(progs):
    x = L.data("x", [4])
    a = L.fc(x, 3)
    b = L.fc(a, 2, name="head")
    c = L.fc(a, 2)
    assert (a.param.name, b.param.name, c.param.name) == ("fc_0.w_0", "head.w_0", "fc_1.w_0")


def test_fc_multiple_inputs_are_summed(progs):
    main, _ = progs
    x, y = L.data("x", [4]), L.data("y", [2, 3])
    out = L.fc([x, y], size=6, param_attr=["wx", hr.ParamAttr(name="wy")], bias_attr=False,
               act="relu")
    assert types(main) == ["mul", "mul", "sum", "relu"]
    assert [p.name for p in out.params] == ["wx", "wy"] and out.param == out.params
    assert out.params[1].shape == (6, 6) and out.bias is None
    assert main.global_block().ops[2].input("X") == ["fc_0.tmp_0", "fc_0.tmp_1"]


def test_fc_forward_matches_numpy(progs):
    main, startup = progs
    x = L.data("x", [2, 3])
    out = L.fc(x, size=4, act="relu", bias_attr=hr.ParamAttr(
        initializer=hr.initializer.Constant(0.25)))
    data = np.random.RandomState(1).randn(5, 2, 3).astype("float32")
    got, w, b = run(main, startup, {"x": data}, [out, out.param, out.bias])
    np.testing.assert_array_equal(b, np.full(4, 0.25, np.float32))
    np.testing.assert_allclose(got, np.maximum(data.reshape(5, 6) @ w + b, 0), rtol=1e-5)


def test_shared_parameter_by_name(progs):
    main, startup = progs
    x = L.data("x", [4])
    a = L.fc(x, 3, param_attr="shared_w", bias_attr=False)
    b = L.fc(x, 3, param_attr="shared_w", bias_attr=False)
    assert a.param is b.param
    assert types(startup) == ["uniform_random"]  # initialized once
    assert types(main) == ["mul", "mul"]


def test_param_attr_fields_reach_the_parameter(progs):
    main, startup = progs
    reg, clip = hr.regularizer.L2Decay(0.1), hr.clip.GradientClipByValue(1.0)
    x = L.data("x", [4])
    out = L.fc(x, 3, param_attr=hr.ParamAttr(
        name="w", initializer=hr.initializer.Normal(0.0, 0.5, seed=7), learning_rate=0.3,
        regularizer=reg, trainable=False, gradient_clip=clip))
    p = out.param
    assert p.optimize_attr == {"learning_rate": 0.3}
    assert p.regularizer is reg and p.gradient_clip is clip and not p.trainable
    assert p.stop_gradient and isinstance(p.initializer, hr.initializer.Normal)
    sp = startup.global_block().var("w")
    assert not sp.trainable and sp.regularizer is reg
    op = startup.global_block().ops[0]
    assert (op.type, op.attr("std"), op.attr("seed")) == ("gaussian_random", 0.5, 7)


def test_fc_errors(progs):
    x = L.data("x", [3, 4])
    with pytest.raises(LayerError, match="fc: argument 'size' must be >= 1"):
        L.fc(x, 0)
    with pytest.raises(LayerError, match="fc: argument 'size' must be an int"):
        L.fc(x, 2.5)
    with pytest.raises(LayerError, match="num_flatten_dims' \\(3\\) must be less than the rank"):
        L.fc(x, 2, num_flatten_dims=3)
    with pytest.raises(LayerError, match="needs known dims"):
        L.fc(L.data("z", [4, -1], append_batch_size=False), 2)
    with pytest.raises(LayerError, match="fc: argument 'input' must be a Variable"):
        L.fc("x", 2)
    with pytest.raises(LayerError, match="'act' names an unknown activation 'relux'; valid: relu"):
        L.fc(x, 2, act="relux")
    with pytest.raises(LayerError, match="argument 'param_attr' must be a ParamAttr"):
        L.fc(x, 2, param_attr=3.5)
    with pytest.raises(LayerError, match="share one dtype"):
        L.fc([x, L.data("d", [4], dtype="float64")], 2)


def test_activation_as_dict_with_attrs(progs):
    main, _ = progs
    out = L.fc(L.data("x", [4]), 3, act={"type": "leaky_relu", "alpha": 0.1})
    op = main.global_block().ops[-1]
    assert op.type == "leaky_relu" and op.attr("alpha") == pytest.approx(0.1)
    assert op.output("Out") == [out.name]


def test_op_source_is_the_users_line(progs):
    main, _ = progs
    L.fc(L.data("x", [4]), 3)  # the line ops point at
    for op in main.global_block().ops:
        assert "test_layers.py" in op.source and "L.fc(" in op.source


# -- embedding ---------------------------------------------------------------------------------

def test_embedding_structure_and_forward(progs):
    main, startup = progs
    ids = L.data("ids", [1], dtype="int64")
    emb = L.embedding(ids, size=[6, 3], padding_idx=-1, is_sparse=True)
    (op,) = main.global_block().ops
    assert op.type == "lookup_table" and op.attr("padding_idx") == 5 and op.attr("is_sparse")
    assert emb.shape == (-1, 3) and emb.param.shape == (6, 3) and emb.param.name == \
        "embedding_0.w_0"
    feed = np.array([[0], [5], [2]], dtype="int64")
    got, table = run(main, startup, {"ids": feed}, [emb, emb.param])
    np.testing.assert_array_equal(got, np.stack([table[0], np.zeros(3), table[2]]))


def test_embedding_errors(progs):
    ids = L.data("ids", [1], dtype="int64")
    with pytest.raises(LayerError, match="embedding: argument 'size' must be \\[vocab_size"):
        L.embedding(ids, size=6)
    with pytest.raises(LayerError, match="embedding: argument 'padding_idx'"):
        L.embedding(ids, size=[6, 3], padding_idx=6)
    with pytest.raises(LayerError, match="embedding: argument 'input' .* must have dtype int64"):
        L.embedding(L.data("f", [1]), size=[6, 3])


# -- conv2d / pool2d ---------------------------------------------------------------------------

def test_conv2d_structure(progs):
    main, startup = progs
    x = L.data("x", [4, 9, 9])
    out = L.conv2d(x, num_filters=6, filter_size=[3, 1], stride=2, padding=[1, 0], groups=2)
    conv, add = main.global_block().ops
    assert conv.attr("strides") == [2, 2] and conv.attr("paddings") == [1, 0]
    assert conv.attr("groups") == 2 and conv.attr("dilations") == [1, 1]
    assert out.param.shape == (6, 2, 3, 1) and out.shape == (-1, 6, 5, 5)
    assert add.attr("axis") == 1 and out.bias.shape == (6,)
    init = startup.global_block().ops[0]
    assert init.type == "gaussian_random"
    assert init.attr("std") == pytest.approx(math.sqrt(2.0 / (3 * 1 * 4)), rel=1e-6)


def test_conv2d_same_padding_no_bias(progs):
    main, _ = progs
    out = L.conv2d(L.data("x", [3, 7, 7]), 2, 3, padding="same", bias_attr=False)
    (conv,) = main.global_block().ops
    assert conv.attr("padding_algorithm") == "SAME" and out.shape == (-1, 2, 7, 7)
    assert out.bias is None


def _conv_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, m, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,mchw->nm", patch, w)
    return out


def test_conv2d_and_pool2d_forward(progs):
    main, startup = progs
    x = L.data("x", [2, 6, 6])
    conv = L.conv2d(x, 3, 3, stride=1, padding=1, act="relu")
    pooled = L.pool2d(conv, pool_size=2, pool_type="avg", pool_stride=2)
    data = np.random.RandomState(2).randn(2, 2, 6, 6).astype("float32")
    c, p, w, b = run(main, startup, {"x": data}, [conv, pooled, conv.param, conv.bias])
    ref = np.maximum(_conv_ref(data, w, 1, 1) + b.reshape(1, 3, 1, 1), 0)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p, ref.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-4,
                               atol=1e-5)


def test_pool2d_structure(progs):
    main, _ = progs
    x = L.data("x", [3, 8, 8])
    out = L.pool2d(x, pool_size=3, pool_stride=2, pool_padding=1, ceil_mode=True,
                   exclusive=False)
    g = L.pool2d(x, pool_type="avg", global_pooling=True)
    op, gop = main.global_block().ops
    assert op.attr("pooling_type") == "max" and op.attr("ksize") == [3, 3]
    assert op.attr("strides") == [2, 2] and op.attr("paddings") == [1, 1]
    assert op.attr("ceil_mode") and not op.attr("exclusive")
    assert gop.attr("global_pooling") and g.shape == (-1, 3, 1, 1)
    assert out.shape == (-1, 3, 5, 5)


@pytest.mark.parametrize("call, message", [
    (lambda x: L.conv2d(x, 4, 3, groups=2), "conv2d: argument 'groups' \\(2\\) must divide"),
    (lambda x: L.conv2d(x, 0, 3), "conv2d: argument 'num_filters' must be >= 1"),
    (lambda x: L.conv2d(x, 2, [3, 3, 3]), "conv2d: argument 'filter_size' must be an int or a"),
    (lambda x: L.conv2d(x, 2, 3, padding="full"), "conv2d: argument 'padding' must be one of"),
    (lambda x: L.conv2d(L.data("v", [3, 4]), 2, 3), "conv2d: argument 'input' must be 4-D"),
    (lambda x: L.conv2d(x, 2, 3, stride=0), "conv2d: argument 'stride' must be >= 1"),
    (lambda x: L.pool2d(x, 2, pool_type="min"), "pool2d: argument 'pool_type' must be one of"),
    (lambda x: L.pool2d(x), "pool2d: argument 'pool_size' is required"),
    (lambda x: L.pool2d(x, 2, pool_stride=[1, 2, 3]), "pool2d: argument 'pool_stride'"),
])
def test_conv_pool_errors(progs, call, message):
    x = L.data("x", [3, 8, 8])
    with pytest.raises(LayerError, match=message):
        call(x)


# -- batch_norm / dropout ----------------------------------------------------------------------

def test_batch_norm_structure(progs):
    main, startup = progs
    x = L.data("x", [3, 4, 4])
    out = L.batch_norm(x, act="relu", momentum=0.8, epsilon=1e-3)
    bn, relu = main.global_block().ops
    assert bn.type == "batch_norm" and relu.type == "relu"
    assert bn.input("Scale") == ["batch_norm_0.w_0"] and bn.input("Bias") == ["batch_norm_0.b_0"]
    assert bn.input("Mean") == bn.output("MeanOut") == ["batch_norm_0.w_1"]
    assert bn.input("Variance") == bn.output("VarianceOut") == ["batch_norm_0.w_2"]
    assert bn.attr("momentum") == pytest.approx(0.8) and bn.attr("epsilon") == \
        pytest.approx(1e-3)
    assert not bn.attr("is_test") and bn.attr("data_layout") == "NCHW"
    for name in ("batch_norm_0.w_1", "batch_norm_0.w_2"):
        v = main.global_block().var(name)
        assert v.persistable and not v.trainable and v.shape == (3,)
    inits = {op.output("Out")[0]: (op.type, op.attr("value")) for op in startup.global_block().ops}
    assert inits == {"batch_norm_0.w_0": ("fill_constant", 1.0),
                     "batch_norm_0.b_0": ("fill_constant", 0.0),
                     "batch_norm_0.w_1": ("fill_constant", 0.0),
                     "batch_norm_0.w_2": ("fill_constant", 1.0)}
    assert out.param.name == "batch_norm_0.w_0" and out.bias.name == "batch_norm_0.b_0"
    assert out.moving_mean.name == "batch_norm_0.w_1"
    test = main.clone(for_test=True)
    assert test.global_block().ops[0].attr("is_test")
    assert not main.global_block().ops[0].attr("is_test")


def test_batch_norm_forward_updates_running_mean(progs):
    main, startup = progs
    x = L.data("x", [2, 3, 3])
    out = L.batch_norm(x, moving_mean_name="mm", moving_variance_name="mv")
    data = np.random.RandomState(3).rand(4, 2, 3, 3).astype("float32") * 3 + 1
    y, mm = run(main, startup, {"x": data}, [out, "mm"])
    mu, var = data.mean(axis=(0, 2, 3)), data.var(axis=(0, 2, 3))
    ref = (data - mu.reshape(1, 2, 1, 1)) / np.sqrt(var.reshape(1, 2, 1, 1) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mm, 0.1 * mu, rtol=1e-5)


def test_dropout_structure_and_test_mode(progs):
    main, startup = progs
    x = L.data("x", [4])
    a = L.dropout(x, 0.25, seed=3)
    b = L.dropout(x, 0.4, is_test=True)
    d1, d2 = main.global_block().ops
    assert d1.attr("fix_seed") and d1.attr("seed") == 3 and d1.attr("dropout_prob") == 0.25
    assert not d2.attr("fix_seed") and d2.attr("seed") == 0
    assert main.global_block().var(d1.output("Mask")[0]).dtype == "uint8"
    assert d1.attr("dropout_implementation") == "downgrade_in_infer"
    data = np.random.RandomState(4).rand(3, 4).astype("float32")
    (got,) = run(main, startup, {"x": data}, [b])
    np.testing.assert_allclose(got, data * 0.6, rtol=1e-6)
    assert main.clone(for_test=True).global_block().ops[0].attr("is_test")
    assert a.shape == (-1, 4)


def test_dropout_errors(progs):
    x = L.data("x", [4])
    with pytest.raises(LayerError, match="dropout: argument 'dropout_prob' must be >= 0.0"):
        L.dropout(x, 1.5)
    with pytest.raises(LayerError, match="dropout: argument 'dropout_implementation'"):
        L.dropout(x, 0.5, dropout_implementation="upscale")


# -- losses, metrics ---------------------------------------------------------------------------

def test_losses_structure(progs):
    main, _ = progs
    logits = L.data("logits", [5])
    label = L.data("label", [1], dtype="int64")
    soft = L.data("soft", [5])
    prob = L.softmax(logits)
    ce = L.cross_entropy(prob, label)
    ce_soft = L.cross_entropy(prob, soft, soft_label=True)
    loss, sm = L.softmax_with_cross_entropy(logits, label, return_softmax=True)
    sq = L.square_error_cost(prob, soft)
    assert types(main) == ["softmax", "cross_entropy2", "cross_entropy",
                           "softmax_with_cross_entropy", "elementwise_sub", "square"]
    assert ce.shape == (-1, 1) and ce_soft.shape == (-1, 1) and loss.shape == (-1, 1)
    assert sm.shape == (-1, 5) and sq.shape == (-1, 5)
    assert main.global_block().ops[2].attr("soft_label")


def test_losses_forward(progs):
    main, startup = progs
    logits = L.data("logits", [4])
    label = L.data("label", [1], dtype="int64")
    prob = L.softmax(logits)
    ce = L.cross_entropy(prob, label)
    swce = L.softmax_with_cross_entropy(logits, label)
    sq = L.square_error_cost(prob, logits)
    acc = L.accuracy(logits, label, k=2)
    x = np.random.RandomState(5).randn(6, 4).astype("float32")
    y = np.array([[0], [1], [2], [3], [0], [1]], dtype="int64")
    p, c, s, q, a = run(main, startup, {"logits": x, "label": y}, [prob, ce, swce, sq, acc])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ref_p = e / e.sum(axis=1, keepdims=True)
    ref_ce = -np.log(ref_p[np.arange(6), y[:, 0]])[:, None]
    np.testing.assert_allclose(p, ref_p, rtol=1e-5)
    np.testing.assert_allclose(c, ref_ce, rtol=1e-4)
    np.testing.assert_allclose(s, ref_ce, rtol=1e-4)
    np.testing.assert_allclose(q, (ref_p - x) ** 2, rtol=1e-4, atol=1e-6)
    top2 = np.argsort(-x, axis=1)[:, :2]
    assert a == pytest.approx(np.mean([y[i, 0] in top2[i] for i in range(6)]))


def test_loss_and_metric_errors(progs):
    x = L.data("x", [4])
    label = L.data("label", [1], dtype="int64")
    with pytest.raises(LayerError, match="cross_entropy: argument 'label' .* must have dtype "
                                         "int64 or int32, found float32"):
        L.cross_entropy(x, x)
    with pytest.raises(LayerError, match="softmax_with_cross_entropy: argument 'label'"):
        L.softmax_with_cross_entropy(x, L.data("l2", [4], dtype="int64"), soft_label=True)
    with pytest.raises(LayerError, match="topk: argument 'k' \\(5\\) exceeds the last dim"):
        L.topk(x, 5)
    with pytest.raises(LayerError, match="accuracy: argument 'label'"):
        L.accuracy(x, x)
    values, indices = L.topk(x, 2)
    assert values.shape == (-1, 2) and indices.dtype == "int64"
    assert label.shape == (-1, 1)


# -- math layers -------------------------------------------------------------------------------

@pytest.mark.parametrize("layer, ref", [
    (L.elementwise_add, np.add), (L.elementwise_sub, np.subtract),
    (L.elementwise_mul, np.multiply), (L.elementwise_div, np.divide),
    (L.elementwise_max, np.maximum), (L.elementwise_min, np.minimum),
    (L.elementwise_pow, np.power),
])
def test_elementwise_layers(progs, layer, ref):
    main, startup = progs
    x, y = L.data("x", [2, 3]), L.data("y", [2], append_batch_size=False)
    out = layer(x, y, axis=1)
    (op,) = main.global_block().ops
    assert op.type == layer.__name__ and op.attr("axis") == 1 and out.shape == (-1, 2, 3)
    xv = np.random.RandomState(6).rand(2, 2, 3).astype("float32") + 0.5
    yv = np.array([1.5, 2.0], np.float32)
    (got,) = run(main, startup, {"x": xv, "y": yv}, [out])
    np.testing.assert_allclose(got, ref(xv, yv.reshape(1, 2, 1)), rtol=1e-5)


def test_elementwise_with_act(progs):
    main, _ = progs
    x = L.data("x", [3])
    L.elementwise_add(x, x, act="sigmoid")
    assert types(main) == ["elementwise_add", "sigmoid"]


ACTIVATIONS = [
    (L.relu, {}, lambda x: np.maximum(x, 0)),
    (L.sigmoid, {}, lambda x: 1 / (1 + np.exp(-x))),
    (L.tanh, {}, np.tanh),
    (L.exp, {}, np.exp),
    (L.square, {}, np.square),
    (L.abs, {}, np.abs),
    (L.floor, {}, np.floor),
    (L.softsign, {}, lambda x: x / (1 + np.abs(x))),
    (L.leaky_relu, {"alpha": 0.1}, lambda x: np.where(x > 0, x, 0.1 * x)),
    (L.relu6, {"threshold": 1.0}, lambda x: np.clip(x, 0, 1.0)),
    (L.elu, {"alpha": 0.5}, lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    (L.swish, {"beta": 2.0}, lambda x: x / (1 + np.exp(-2 * x))),
    (L.hard_sigmoid, {}, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
]


@pytest.mark.parametrize("layer, attrs, ref", ACTIVATIONS, ids=[a[0].__name__ for a in ACTIVATIONS])
def test_activation_layers(progs, layer, attrs, ref):
    main, startup = progs
    x = L.data("x", [5])
    out = layer(x, **attrs)
    (op,) = main.global_block().ops
    assert op.type == layer.__name__ and out.shape == (-1, 5)
    for k, v in attrs.items():
        assert op.attr(k) == pytest.approx(v)
    xv = np.linspace(-2, 2, 10, dtype=np.float32).reshape(2, 5)
    (got,) = run(main, startup, {"x": xv}, [out])
    np.testing.assert_allclose(got, ref(xv), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer, ref", [
    (L.reduce_sum, np.sum), (L.reduce_mean, np.mean), (L.reduce_max, np.max),
    (L.reduce_min, np.min), (L.reduce_prod, np.prod),
])
def test_reduce_layers(progs, layer, ref):
    main, startup = progs
    x = L.data("x", [3, 4])
    a = layer(x)
    b = layer(x, dim=-1, keep_dim=True)
    c = layer(x, dim=[0, 2])
    ops = main.global_block().ops
    assert ops[0].attr("reduce_all") and a.shape == (1,)
    assert ops[1].attr("dim") == [-1] and ops[1].attr("keep_dim") and b.shape == (-1, 3, 1)
    assert ops[2].attr("dim") == [0, 2] and not ops[2].attr("reduce_all") and c.shape == (3,)
    xv = np.random.RandomState(7).rand(2, 3, 4).astype("float32") + 0.5
    ga, gb, gc = run(main, startup, {"x": xv}, [a, b, c])
    np.testing.assert_allclose(ga, [ref(xv)], rtol=1e-5)
    np.testing.assert_allclose(gb, ref(xv, axis=-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(gc, ref(xv, axis=(0, 2)), rtol=1e-5)


def test_reduce_errors(progs):
    x = L.data("x", [3])
    with pytest.raises(LayerError, match="reduce_sum: argument 'dim' must be >= -2 and <= 1"):
        L.reduce_sum(x, dim=2)
    with pytest.raises(LayerError, match="reduce_mean: argument 'dim' repeats"):
        L.reduce_mean(x, dim=[1, -1])
    with pytest.raises(LayerError, match="reduce_max: argument 'keep_dim' must be a bool"):
        L.reduce_max(x, keep_dim="yes")


def test_mul_matmul_scale_mean(progs):
    main, startup = progs
    x = L.data("x", [2, 3], append_batch_size=False)
    y = L.data("y", [3, 4], append_batch_size=False)
    m = L.mul(x, y)
    mm = L.matmul(y, x, transpose_x=True, transpose_y=True, alpha=2.0)
    s = L.scale(m, scale=3.0, bias=1.0, bias_after_scale=False, act="relu")
    mean = L.mean(s)
    ops = main.global_block().ops
    assert types(main) == ["mul", "matmul", "scale", "relu", "mean"]
    assert ops[1].attr("transpose_X") and ops[1].attr("transpose_Y") and ops[1].attr("alpha") == 2
    assert not ops[2].attr("bias_after_scale")
    assert (m.shape, mm.shape, s.shape, mean.shape) == ((2, 4), (4, 2), (2, 4), (1,))
    xv = np.random.RandomState(8).randn(2, 3).astype("float32")
    yv = np.random.RandomState(9).randn(3, 4).astype("float32")
    gm, gmm, gs, gmean = run(main, startup, {"x": xv, "y": yv}, [m, mm, s, mean])
    np.testing.assert_allclose(gm, xv @ yv, rtol=1e-5)
    np.testing.assert_allclose(gmm, 2 * yv.T @ xv.T, rtol=1e-5)
    np.testing.assert_allclose(gs, np.maximum(3 * (xv @ yv + 1), 0), rtol=1e-5)
    np.testing.assert_allclose(gmean, [gs.mean()], rtol=1e-5)
    with pytest.raises(LayerError, match="mul: argument 'x_num_col_dims' must be >= 1"):
        L.mul(x, y, x_num_col_dims=0)


# -- tensor layers -----------------------------------------------------------------------------

def test_tensor_creation_layers(progs):
    main, startup = progs
    f = L.fill_constant([2, 3], "int64", 7)
    z, o = L.zeros([2], "float32"), L.ones([1, 2], "float64")
    a = L.assign(np.array([[1.5, 2.5]], dtype="float32"))
    ai = L.assign(np.array([4, 5], dtype="int64"))
    s = L.sums([z, z, L.assign(np.array([1.0, 2.0], "float32"))])
    g = L.create_global_var([2], 0.5, "float32", persistable=True, name="gvar")
    t = L.create_tensor("float32", name="t")
    c = L.cast(f, "float32")
    assert (f.shape, f.dtype, f.stop_gradient) == ((2, 3), "int64", True)
    assert main.global_block().ops[0].attr("dtype") == 3 and \
        main.global_block().ops[0].attr("value") == 7
    assert a.shape == (1, 2) and main.global_block().ops[3].attr("fp32_values") == [1.5, 2.5]
    assert main.global_block().ops[4].attr("int64_values") == [4, 5]
    assert g.persistable and g.name == "gvar" and "gvar" not in \
        [n for op in main.global_block().ops for n in op.output_arg_names]
    (init,) = [op for op in startup.global_block().ops if op.output("Out") == ["gvar"]]
    assert init.type == "fill_constant" and init.attr("value") == 0.5
    assert t.name == "t" and t.dtype == "float32" and t.op is None
    cast = main.global_block().ops[-1]
    assert cast.attr("in_dtype") == 3 and cast.attr("out_dtype") == 5
    got = run(main, startup, {}, [f, z, o, a, ai, s, g, c])
    expected = [np.full((2, 3), 7), np.zeros(2), np.ones((1, 2)), [[1.5, 2.5]], [4, 5],
                [1.0, 2.0], [0.5, 0.5], np.full((2, 3), 7.0)]
    for value, want in zip(got, expected):
        np.testing.assert_array_equal(value, want)
    assert got[2].dtype == np.float64 and got[4].dtype == np.int64


def test_create_global_var_defaults(progs):
    main, startup = progs
    g = L.create_global_var([1], 2.0, "int64")
    assert g.name == "global_var_0" and g.persistable and g.stop_gradient
    assert startup.global_block().var("global_var_0").persistable
    y = g + 1
    (got,) = run(main, startup, {}, [y])
    assert got.tolist() == [3]


def test_create_parameter_layer(progs):
    main, startup = progs
    p = L.create_parameter([3, 2], "float32")
    b = L.create_parameter([2], "float32", name="mybias", is_bias=True)
    assert p.name == "create_parameter_0.w_0" and isinstance(p, hr.Parameter)
    assert b.name == "mybias"
    assert types(startup) == ["uniform_random", "fill_constant"]  # Xavier, Constant(0)
    assert not main.global_block().ops


def test_shape_layers(progs):
    main, startup = progs
    x = L.data("x", [2, 6])
    r = L.reshape(x, [0, 3, -1])
    t = L.transpose(r, [0, 2, 1])
    parts = L.split(t, [1, -1], dim=1)
    eq = L.split(x, 3, dim=-1)
    c = L.concat([eq[2], eq[0]], axis=2)
    assert (r.shape, t.shape) == ((-1, 3, 4), (-1, 4, 3))
    assert [p.shape for p in parts] == [(-1, 1, 3), (-1, 3, 3)]
    assert [p.shape for p in eq] == [(-1, 2, 2)] * 3 and c.shape == (-1, 2, 4)
    ops = main.global_block().ops
    assert ops[0].attr("shape") == [0, 3, -1] and len(ops[0].output("XShape")) == 1
    assert ops[1].attr("axis") == [0, 2, 1]
    assert ops[2].attr("sections") == [1, -1] and ops[2].attr("num") == 0
    assert ops[3].attr("num") == 3 and ops[3].attr("axis") == 2
    xv = np.arange(24, dtype=np.float32).reshape(2, 2, 6)
    gr, gt, gp, gc = run(main, startup, {"x": xv}, [r, t, parts[1], c])
    np.testing.assert_array_equal(gr, xv.reshape(2, 3, 4))
    np.testing.assert_array_equal(gt, xv.reshape(2, 3, 4).transpose(0, 2, 1))
    np.testing.assert_array_equal(gp, gt[:, 1:])
    np.testing.assert_array_equal(gc, np.concatenate([xv[:, :, 4:], xv[:, :, :2]], axis=2))


@pytest.mark.parametrize("call, message", [
    (lambda x: L.reshape(x, [-1, -1]), "reshape: argument 'shape' may hold one -1 only"),
    (lambda x: L.reshape(x, [0, 0, 0, 0]), "reshape: argument 'shape' has 0 at index 3"),
    (lambda x: L.transpose(x, [0, 0, 1]), "transpose: argument 'perm' must be a permutation"),
    (lambda x: L.split(x, 0), "split: argument 'num_or_sections' must be >= 1"),
    (lambda x: L.split(x, [-1, -1]), "split: argument 'num_or_sections' must list"),
    (lambda x: L.split(x, 2, dim=3), "split: argument 'dim' must be >= -3 and <= 2"),
    (lambda x: L.fill_constant([2, -1], "float32", 1.0), "fill_constant: argument 'shape'"),
    (lambda x: L.fill_constant([2], "floaty", 1.0), "fill_constant: argument 'dtype'"),
    (lambda x: L.fill_constant([2], "float32", "1"), "fill_constant: argument 'value'"),
    (lambda x: L.assign("text"), "assign: argument 'input' must be a Variable or non-empty"),
    (lambda x: L.cast(x, "nope"), "cast: argument 'dtype'"),
    (lambda x: L.concat([]), "concat: argument 'input' must be a Variable or a non-empty"),
])
def test_tensor_layer_errors(progs, call, message):
    x = L.data("x", [2, 6])
    with pytest.raises(LayerError, match=message):
        call(x)


# -- control flow ------------------------------------------------------------------------------

def test_control_flow_layers(progs):
    main, startup = progs
    i = L.fill_constant([1], "int64", 0)
    same = L.increment(i, 2.0)
    j = L.increment(i, 1.0, in_place=False)
    lt = L.less_than(j, 5)
    ge = L.greater_equal(j, i)
    eq = L.equal(i, j)
    both = L.logical_and(lt, ge)
    neither = L.logical_not(L.logical_or(lt, eq))
    x = L.data("x", [3])
    arr = L.array_write(x, i)
    L.array_write(L.scale(x, 2.0), j, array=arr)
    back = L.array_read(arr, j)
    assert same is i and j is not i
    ops = main.global_block().ops
    assert ops[1].type == "increment" and ops[1].output("Out") == [i.name]
    assert ops[1].attr("step") == 2.0
    assert (lt.dtype, both.dtype, neither.dtype) == ("bool",) * 3 and lt.stop_gradient
    assert arr.kind == "lod_tensor_array" and back.shape == (-1, 3)
    xv = np.ones((2, 3), np.float32)
    gi, gj, glt, gboth, gneither, gback = run(main, startup, {"x": xv},
                                              [i, j, lt, both, neither, back])
    assert (gi[0], gj[0], glt[0], gboth[0], gneither[0]) == (2, 3, True, True, False)
    np.testing.assert_array_equal(gback, 2 * xv)


def test_control_flow_errors(progs):
    x = L.data("x", [3])
    with pytest.raises(LayerError, match="logical_and: argument 'x' .* must have dtype bool"):
        L.logical_and(x, x)
    with pytest.raises(LayerError, match="array_write: argument 'i' .* must have dtype int64"):
        L.array_write(x, x)
    with pytest.raises(LayerError, match="array_read: argument 'array' must be a tensor array"):
        L.array_read(x, L.fill_constant([1], "int64", 0))
    with pytest.raises(LayerError, match="less_than: argument 'y' must be a number"):
        L.less_than(x, "3")


# -- LayerHelper -------------------------------------------------------------------------------

def test_layer_helper_basics(progs):
    main, startup = progs
    x = L.data("x", [4])
    helper = hr.LayerHelper("my_layer", input=[x, x], act="relu", param_attr="pw",
                            bias_attr=False)
    assert helper.name == "my_layer_0" and helper.kwargs["act"] == "relu"
    assert helper.main_program is main and helper.startup_program is startup
    assert helper.multiple_input() == [x, x]
    with pytest.raises(LayerError, match="my_layer: argument 'input' must be a Variable, got"):
        helper.input()
    assert [a.name for a in helper.multiple_param_attr(2)] == ["pw", "pw"]
    tmp = helper.create_variable_for_type_inference("float32")
    assert tmp.name == "my_layer_0.tmp_0" and helper.create_tmp_variable("int64").name == \
        "my_layer_0.tmp_1"
    w = helper.create_parameter(helper.param_attr, [4, 2], "float32")
    assert w.name == "pw" and startup.global_block().var("pw").shape == (4, 2)
    assert helper.append_bias_op(tmp) is tmp  # bias_attr=False
    out = helper.append_activation(tmp)
    assert out.op.type == "relu" and out.name == "my_layer_0.tmp_2"
    assert helper.create_parameter(False, [2], "float32") is None
    with pytest.raises(LayerError, match="my_layer: cannot create a parameter of shape"):
        helper.create_parameter(hr.ParamAttr(), [-1, 2], "float32")
    g, fresh = helper.create_or_get_global_variable("counter", shape=[1], dtype="int64")
    assert fresh and helper.create_or_get_global_variable("counter")[0] is g
    assert not helper.create_or_get_global_variable("counter")[1]
    helper.set_variable_initializer(g, hr.initializer.Constant(4))
    assert startup.global_block().ops[-1].output("Out") == ["counter"]
    with pytest.raises(LayerError, match="my_layer: argument 'name'"):
        hr.LayerHelper("my_layer", name="")


def test_layers_go_to_the_current_block(progs):
    main, _ = progs
    x = L.data("x", [3])
    with main.block_guard() as sub:
        y = L.relu(x)
        z = L.fc(x, 2)
    assert y.block is sub and [op.type for op in sub.ops] == ["relu", "mul", "elementwise_add"]
    assert z.param.block is main.global_block()  # parameters are global
    assert not main.global_block().ops


def test_clone_for_test_keeps_forward_ops(progs):
    main, _ = progs
    h = L.dropout(L.batch_norm(L.data("x", [2, 2, 2])), 0.5)
    L.mean(h)
    test = main.clone(for_test=True)
    assert types(test) == types(main)
    assert all(op.attr("is_test") for op in test.global_block().ops
               if op.opdef is not None and "is_test" in op.opdef.attrs)
