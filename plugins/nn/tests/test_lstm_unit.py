"""lstm_unit: one step against torch's LSTM equations in Paddle's gate layout (float64,
outputs and gradients), a StaticRNN of lstm_unit steps against finite differences, and
errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.testing import program_gradients, run_op

torch = pytest.importorskip("torch")


def test_one_step_matches_torch():
    rng = np.random.default_rng(0)
    x, c = rng.standard_normal((3, 8)), rng.standard_normal((3, 2))
    res = run_op("lstm_unit", {"X": x, "C_prev": c}, attrs={"forget_bias": 0.5})
    xt, ct = torch.from_numpy(x), torch.from_numpy(c)
    i, f, o, g = xt.split(2, dim=1)
    cell = torch.sigmoid(f + 0.5) * ct + torch.sigmoid(i) * torch.tanh(g)
    h = torch.sigmoid(o) * torch.tanh(cell)
    np.testing.assert_allclose(np.asarray(res["C"][0].data), cell.numpy(), atol=1e-12)
    np.testing.assert_allclose(np.asarray(res["H"][0].data), h.numpy(), atol=1e-12)


def test_static_rnn_of_lstm_units_trains():
    t, b, d, hdim = 3, 2, 3, 4
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[t, b, d], dtype="float64", append_batch_size=False)
        rnn = layers.StaticRNN()
        with rnn.step():
            x_t = rnn.step_input(x)
            h_prev = rnn.memory(shape=[-1, hdim], batch_ref=x_t)
            c_prev = rnn.memory(shape=[-1, hdim], batch_ref=x_t)
            h, c = layers.lstm_unit(x_t, h_prev, c_prev, forget_bias=1.0,
                                    param_attr=hr.ParamAttr(name="W"),
                                    bias_attr=hr.ParamAttr(name="B"))
            rnn.update_memory(h_prev, h)
            rnn.update_memory(c_prev, c)
            rnn.step_output(h)
        out = rnn()
        loss = layers.mean(layers.elementwise_mul(out, out))
        hr.append_backward(loss)
    assert "lstm_unit_grad" in [op.type for b_ in main.blocks for op in b_.ops]
    rng = np.random.default_rng(1)
    analytic, numeric = program_gradients(main, startup, loss, ["W", "B"],
                                          {"x": rng.standard_normal((t, b, d))})
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_shapes_must_agree():
    with pytest.raises(hr.HeadraceError, match="must be \\[N, 4 \\* D\\]"):
        run_op("lstm_unit", {"X": np.zeros((2, 6)), "C_prev": np.zeros((2, 2))})
