"""Gradients of whole networks through the nn grad ops (and the other plugins' ones they meet),
against PyTorch autograd on the same parameters and data: LeNet (conv2d, pool2d,
softmax_with_cross_entropy), and a conv + batch_norm + dropout + cross_entropy net."""
import numpy as np
import pytest

import headrace as hr

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _run(main, startup, loss, feed):
    """(loss, {param: value}, {param: gradient}) after one forward+backward run."""
    params = [p.name for p in main.all_parameters() if p.trainable]
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    out = exe.run(main, feed=feed, fetch_list=[loss] + [p + "@GRAD" for p in params],
                  scope=scope)
    values = {p: np.array(scope.find(p).data) for p in params}
    return float(out[0].reshape(-1)[0]), values, dict(zip(params, out[1:]))


def _compare(loss, grads, t_loss, t_params):
    np.testing.assert_allclose(loss, t_loss.item(), rtol=1e-5)
    t_loss.backward()
    for name, g in grads.items():
        want = t_params[name].grad.numpy()
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5 * np.abs(want).max(),
                                   err_msg=name)


def test_lenet_gradients_match_torch():
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 3
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 1, 28, 28], dtype="float32")
        h = hr.layers.conv2d(x, num_filters=6, filter_size=5, act="relu")
        h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        h = hr.layers.conv2d(h, num_filters=8, filter_size=5, act="relu")
        h = hr.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        h = hr.layers.fc(h, size=32, act="relu")
        logits = hr.layers.fc(h, size=10)
        y = hr.layers.data("y", shape=[-1, 1], dtype="int64")
        loss = hr.layers.mean(hr.layers.softmax_with_cross_entropy(logits, y))
        hr.append_backward(loss)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((6, 1, 28, 28)).astype(np.float32)
    ys = rng.integers(0, 10, (6, 1)).astype(np.int64)
    value, params, grads = _run(main, startup, loss, {"x": xs, "y": ys})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    w1, b1, w2, b2, f1, c1, f2, c2 = (t[n] for n in params)
    h = F.max_pool2d(F.relu(F.conv2d(torch.tensor(xs), w1) + b1.reshape(1, -1, 1, 1)), 2, 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, w2) + b2.reshape(1, -1, 1, 1)), 2, 2)
    h = F.relu(h.reshape(len(xs), -1) @ f1 + c1)
    t_loss = F.cross_entropy(h @ f2 + c2, torch.tensor(ys[:, 0]))
    _compare(value, grads, t_loss, t)


def test_conv_batch_norm_dropout_cross_entropy_gradients_match_torch():
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 4
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 3, 9, 9], dtype="float32")
        h = hr.layers.conv2d(x, num_filters=4, filter_size=3, stride=2, padding=1,
                             bias_attr=False)
        h = hr.layers.batch_norm(h, act="relu")
        h = hr.layers.pool2d(h, pool_size=3, pool_type="avg", pool_stride=2, pool_padding=1)
        h = hr.layers.dropout(h, dropout_prob=0.0)
        probs = hr.layers.fc(h, size=5, act="softmax")
        y = hr.layers.data("y", shape=[-1, 1], dtype="int64")
        loss = hr.layers.mean(hr.layers.cross_entropy(probs, y))
        hr.append_backward(loss)
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((4, 3, 9, 9)).astype(np.float32)
    ys = rng.integers(0, 5, (4, 1)).astype(np.int64)
    value, params, grads = _run(main, startup, loss, {"x": xs, "y": ys})
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    names = list(params)
    w, gamma, beta, fw, fb = (t[n] for n in names)
    h = F.conv2d(torch.tensor(xs), w, stride=2, padding=1)
    h = F.relu(F.batch_norm(h, None, None, gamma, beta, training=True, eps=1e-5))
    h = F.avg_pool2d(h, 3, 2, 1, count_include_pad=False)
    p = F.softmax(h.reshape(len(xs), -1) @ fw + fb, dim=1)
    t_loss = -torch.log(p[torch.arange(len(xs)), torch.tensor(ys[:, 0])]).mean()
    _compare(value, grads, t_loss, t)
