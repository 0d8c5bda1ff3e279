"""nn layers: embedding, conv2d/pool2d, batch_norm/dropout, losses and metrics."""
import math

import numpy as np
import pytest

import headrace as hr
from headrace.testing import op_types, run_programs
from headrace import LayerError

L = hr.layers


# `progs` is a fixture of conftest.py.
types, run = op_types, run_programs


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
