"""gru_unit: one step against torch's formulation of Fluid's equations, a StaticRNN of
gru_unit steps against finite differences (both origin modes), and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients, run_op

torch = pytest.importorskip("torch")


def test_one_step_matches_torch():
    rng = np.random.default_rng(0)
    d = 3
    x, h, w = rng.standard_normal((2, 3 * d)), rng.standard_normal((2, d)), \
        rng.standard_normal((d, 3 * d))
    res = run_op("gru_unit", {"Input": x, "HiddenPrev": h, "Weight": w})
    flat = torch.from_numpy(w.reshape(-1))
    w_ur, w_c = flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)
    xt, ht = torch.from_numpy(x), torch.from_numpy(h)
    u = torch.sigmoid(xt[:, :d] + ht @ w_ur[:, :d])
    r = torch.sigmoid(xt[:, d:2 * d] + ht @ w_ur[:, d:])
    c = torch.tanh(xt[:, 2 * d:] + (r * ht) @ w_c)
    np.testing.assert_allclose(np.asarray(res["Hidden"][0].data), ((1 - u) * ht + u * c).numpy(),
                               atol=1e-12)


def _rnn_loss(origin):
    t, b, dim, hid = 3, 2, 3, 4
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[t, b, dim], dtype="float64", append_batch_size=False)
        rnn = layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[-1, hid], batch_ref=x_t)
            proj = layers.fc(x_t, size=3 * hid, bias_attr=False,
                             param_attr=hr.ParamAttr(name="Wx"))
            h, _, _ = layers.gru_unit(proj, h_prev, 3 * hid, origin_mode=origin,
                                      param_attr=hr.ParamAttr(name="Wh"),
                                      bias_attr=hr.ParamAttr(name="B"))
            rnn.update_memory(h_prev, h)
            rnn.step_output(h)
        out = rnn()
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    return main, startup, loss, {"x": np.random.default_rng(1).standard_normal((t, b, dim))}


@pytest.mark.parametrize("origin", [False, True])
def test_static_rnn_of_gru_units_gradients(origin):
    main, startup, loss, feed = _rnn_loss(origin)
    assert "gru_unit_grad" in [op.type for b in main.blocks for op in b.ops]
    analytic, numeric = program_gradients(main, startup, loss, ["Wx", "Wh", "B"], feed)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_errors():
    with pytest.raises(hr.HeadraceError, match="must be \\[N, 3D\\], \\[N, D\\] and "
                                               "\\[D, 3D\\]"):
        run_op("gru_unit", {"Input": np.zeros((2, 5)), "HiddenPrev": np.zeros((2, 2)),
                            "Weight": np.zeros((2, 6))})
    with hr.program_guard(hr.Program(), hr.Program()):
        x = layers.data("x", shape=[6], dtype="float64")
        h = layers.data("h", shape=[2], dtype="float64")
        with pytest.raises(hr.HeadraceError, match="'activation' must be one of"):
            layers.gru_unit(x, h, 6, activation="gelu")
