"""StaticRNN and DynamicRNN: forward values against a NumPy loop, gradients (float64) against
finite differences and against the same network unrolled by hand into a flat program."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.errors import LayerError
from headrace.runtime.tensor import create_lod_tensor
from headrace.testing import program_gradients

D, H = 3, 4
RNG = np.random.RandomState(11)
PARAMS = {"W": RNG.randn(D, H) * 0.7, "U": RNG.randn(H, H) * 0.5}


def _close(analytic, numeric):
    for name in analytic:
        np.testing.assert_allclose(analytic[name], numeric[name], rtol=1e-6, atol=1e-8,
                                   err_msg=name)


def _cell(x_t, prev):
    w = layers.create_parameter([D, H], "float64", name="W")
    u = layers.create_parameter([H, H], "float64", name="U")
    return layers.tanh(layers.elementwise_add(layers.matmul(x_t, w), layers.matmul(prev, u)))


def _loss(out):
    return layers.mean(layers.elementwise_mul(out, out))


def _np_rnn(xs, h):
    out = []
    for x in xs:
        h = np.tanh(x @ PARAMS["W"] + h @ PARAMS["U"])
        out.append(h)
    return out


def _flat(steps_per_seq):
    """The network unrolled by hand: one data variable per (sequence, step) row."""
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        outs = []
        for s, n in enumerate(steps_per_seq):
            h = layers.data(f"h0_{s}", shape=[1, H], dtype="float64", append_batch_size=False)
            for t in range(n):
                x = layers.data(f"x_{s}_{t}", shape=[1, D], dtype="float64",
                                append_batch_size=False)
                h = _cell(x, h)
                outs.append(h)
        loss = _loss(layers.concat(outs, axis=0))
        hr.append_backward(loss)
    return main, startup, loss


def _flat_feed(xs_per_seq, h0):
    feed = {}
    for s, xs in enumerate(xs_per_seq):
        feed[f"h0_{s}"] = h0[s:s + 1]
        for t, x in enumerate(xs):
            feed[f"x_{s}_{t}"] = x[None]
    return feed


# -- DynamicRNN ----------------------------------------------------------------------------

def _dynamic(zero_memory=False):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[D], dtype="float64", lod_level=1)
        h0 = layers.data("h0", shape=[H], dtype="float64")
        drnn = layers.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(x)
            prev = (drnn.memory(shape=[H], value=0.0, dtype="float64") if zero_memory
                    else drnn.memory(init=h0, need_reorder=True))
            h = _cell(x_t, prev)
            drnn.update_memory(prev, h)
            drnn.output(h)
        out = drnn()
        loss = _loss(out)
        hr.append_backward(loss)
    return main, startup, out, loss


@pytest.mark.parametrize("lens", [[3, 1, 5, 2], [3, 0, 5, 2], [2, 2], [4]])
def test_dynamic_rnn_runs_each_sequence_without_padding(lens):
    x = RNG.randn(sum(lens), D)
    h0 = RNG.randn(len(lens), H)
    main, startup, out, loss = _dynamic()
    feed = {"x": create_lod_tensor(x, [lens]), "h0": h0}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, v in PARAMS.items():
        scope.set(n, hr.Tensor(v.copy()))
    (got,) = exe.run(main, feed=feed, fetch_list=[out], scope=scope, return_numpy=False)
    offsets = np.cumsum([0] + lens)
    seqs = [x[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    ref = [h for s, xs in enumerate(seqs) for h in _np_rnn(xs, h0[s])]
    assert got.lod == [list(offsets)]
    np.testing.assert_allclose(np.asarray(got), np.array(ref).reshape(-1, H), rtol=1e-12)
    # Gradients: finite differences, and the network unrolled sequence by sequence.
    analytic, numeric = program_gradients(main, startup, loss, ["W", "U"], feed,
                                          values=PARAMS)
    _close(analytic, numeric)
    flat, fstartup, floss = _flat(lens)
    unrolled, _ = program_gradients(flat, fstartup, floss, ["W", "U"], _flat_feed(seqs, h0),
                                    values=PARAMS)
    _close(analytic, unrolled)


def test_dynamic_rnn_zero_memory():
    lens = [2, 3]
    x = RNG.randn(sum(lens), D)
    main, startup, out, loss = _dynamic(zero_memory=True)
    analytic, numeric = program_gradients(main, startup, loss, ["W", "U"],
                                          {"x": create_lod_tensor(x, [lens]),
                                           "h0": np.zeros((2, H))}, values=PARAMS)
    _close(analytic, numeric)


def test_dynamic_rnn_static_input_follows_its_sequence():
    """A per-sequence vector c (one row per sequence) added at every step of its sequence:
    static_input reorders it like the sequences and shrinks it with them."""
    lens = [2, 0, 4, 1]
    x = RNG.randn(sum(lens), D)
    c = RNG.randn(len(lens), H)
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        xs = layers.data("x", shape=[D], dtype="float64", lod_level=1)
        cs = layers.data("c", shape=[H], dtype="float64")
        cs.stop_gradient = False
        drnn = layers.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(xs)
            c_t = drnn.static_input(cs)
            prev = drnn.memory(shape=[H], value=0.0, dtype="float64")
            h = layers.elementwise_add(_cell(x_t, prev), c_t)
            drnn.update_memory(prev, h)
            drnn.output(h)
        out = drnn()
        loss = _loss(out)
        (c_grad,) = hr.gradients(loss, [cs])
    feed = {"x": create_lod_tensor(x, [lens]), "c": c}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, v in PARAMS.items():
        scope.set(n, hr.Tensor(v.copy()))
    got, g = exe.run(main, feed=feed, fetch_list=[out, c_grad], scope=scope)
    offsets = np.cumsum([0] + lens)
    ref = []
    for s in range(len(lens)):
        h = np.zeros(H)
        for t in range(lens[s]):
            h = np.tanh(x[offsets[s] + t] @ PARAMS["W"] + h @ PARAMS["U"]) + c[s]
            ref.append(h)
    np.testing.assert_allclose(got, np.array(ref), rtol=1e-12)
    # d loss / d c by finite differences on c.
    eps, numeric = 1e-6, np.zeros_like(c)
    for idx in np.ndindex(c.shape):
        vals = []
        for sign in (1, -1):
            cc = c.copy()
            cc[idx] += sign * eps
            (lv,) = exe.run(main, feed={"x": feed["x"], "c": cc}, fetch_list=[loss],
                            scope=scope)
            vals.append(float(lv))
        numeric[idx] = (vals[0] - vals[1]) / (2 * eps)
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)
    assert not g[1].any()  # the empty sequence's vector never ran


def test_dynamic_rnn_misuse_is_a_clear_error():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[D], dtype="float64")  # no LoD
        drnn = layers.DynamicRNN()
        with pytest.raises(LayerError, match="step_input: x must be a Variable with LoD"):
            with drnn.block():
                drnn.step_input(x)
        with pytest.raises(LayerError, match="is used inside the DynamicRNN's step block"):
            layers.DynamicRNN().output(x)


# -- StaticRNN -----------------------------------------------------------------------------

def _static(t, b, zero_memory=False):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[t, b, D], dtype="float64", append_batch_size=False)
        h0 = layers.data("h0", shape=[b, H], dtype="float64", append_batch_size=False)
        rnn = layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)
            prev = (rnn.memory(shape=[-1, H], batch_ref=x_t) if zero_memory
                    else rnn.memory(init=h0))
            h = _cell(x_t, prev)
            rnn.update_memory(prev, h)
            rnn.step_output(h)
        out = rnn()
        loss = _loss(out)
        hr.append_backward(loss)
    return main, startup, out, loss


@pytest.mark.parametrize("t, b", [(1, 2), (4, 3)])
@pytest.mark.parametrize("zero_memory", [False, True])
def test_static_rnn_matches_numpy_finite_differences_and_unrolled(t, b, zero_memory):
    x = RNG.randn(t, b, D)
    h0 = np.zeros((b, H)) if zero_memory else RNG.randn(b, H)
    main, startup, out, loss = _static(t, b, zero_memory)
    feed = {"x": x, "h0": h0}
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    for n, v in PARAMS.items():
        scope.set(n, hr.Tensor(v.copy()))
    (got,) = exe.run(main, feed=feed, fetch_list=[out], scope=scope)
    seqs = [x[:, s] for s in range(b)]
    ref = np.stack([np.stack(_np_rnn(seqs[s], h0[s])) for s in range(b)], axis=1)
    assert got.shape == (t, b, H)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    analytic, numeric = program_gradients(main, startup, loss, ["W", "U"], feed,
                                          values=PARAMS)
    _close(analytic, numeric)
    flat, fstartup, floss = _flat([t] * b)
    unrolled, _ = program_gradients(flat, fstartup, floss, ["W", "U"], _flat_feed(seqs, h0),
                                    values=PARAMS)
    _close(analytic, unrolled)


def test_static_rnn_misuse_is_a_clear_error():
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[3, D], dtype="float64")  # [-1, 3, D]: T unknown
        rnn = layers.StaticRNN()
        with pytest.raises(LayerError, match=r"x.shape\[0\], must be known"):
            with rnn.step():
                rnn.step_input(x)
        y = layers.data("y", shape=[2, 3, D], dtype="float64", append_batch_size=False)
        rnn = layers.StaticRNN()
        with pytest.raises(LayerError, match="memory .* is never updated"):
            with rnn.step():
                rnn.memory(shape=[-1, H], batch_ref=rnn.step_input(y))


def test_a_step_input_computed_inside_the_step_block_is_a_clear_error():
    with hr.program_guard(hr.Program(), hr.Program()):
        ids = layers.data("ids", shape=[1], dtype="int64", lod_level=1)
        drnn = layers.DynamicRNN()
        with pytest.raises(LayerError, match=r"step_input: embedding_\d+.tmp_0 is computed "
                                             r"inside the step block"):
            with drnn.block():
                drnn.step_input(layers.embedding(ids, size=[10, 4]))


@pytest.mark.parametrize("make_opt", [
    lambda: hr.optimizer.SGD(0.5), lambda: hr.optimizer.Momentum(0.2, momentum=0.9),
    lambda: hr.optimizer.Adagrad(0.2), lambda: hr.optimizer.Adam(0.05),
    lambda: hr.optimizer.RMSProp(0.02)], ids=["sgd", "momentum", "adagrad", "adam", "rmsprop"])
def test_parameters_created_in_the_step_block_are_trained_by_every_optimizer(make_opt):
    lens = [3, 1, 4]
    x = create_lod_tensor(RNG.randn(sum(lens), D), [lens])
    target = create_lod_tensor(RNG.uniform(-0.5, 0.5, (sum(lens), H)), [lens])
    main, startup = hr.Program(), hr.Program()
    startup.random_seed = 5
    with hr.program_guard(main, startup):
        xs = layers.data("x", shape=[D], dtype="float64", lod_level=1)
        ys = layers.data("y", shape=[H], dtype="float64", lod_level=1)
        drnn = layers.DynamicRNN()
        with drnn.block():
            x_t = drnn.step_input(xs)
            prev = drnn.memory(shape=[H], value=0.0, dtype="float64")
            h = layers.fc([x_t, prev], size=H, act="tanh")  # its parameters: global block
            drnn.update_memory(prev, h)
            drnn.output(h)
        loss = layers.mse(drnn(), ys)
        _, grads = make_opt().minimize(loss)
    body = main.block(1)
    params = [p.name for p, _ in grads]
    assert len(params) == 3 and all(main.global_block().has_var(p) for p in params)
    assert not any(body.has_var(p) for p in params)
    exe, scope = hr.Executor(), hr.Scope()
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed={"x": x, "y": target}, fetch_list=[loss],
                            scope=scope)[0]) for _ in range(30)]
    assert losses[-1] < 0.7 * losses[0]
