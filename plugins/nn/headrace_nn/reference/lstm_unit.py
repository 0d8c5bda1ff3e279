"""Reference of lstm_unit and its gradient: Paddle's equations, element by element in
float64."""
import numpy as np

from ._util import attr, f64


def _sig(v):
    return 1 / (1 + np.exp(-v))


def lstm_unit(inputs, attrs):
    x, c = f64(inputs["X"]), f64(inputs["C_prev"])
    fb = float(np.float32(attr(attrs, "forget_bias", 0.0)))
    d = c.shape[1]
    cell, h = np.zeros_like(c), np.zeros_like(c)
    for n in range(c.shape[0]):
        for j in range(d):
            i, f = _sig(x[n, j]), _sig(x[n, d + j] + fb)
            o, g = _sig(x[n, 2 * d + j]), np.tanh(x[n, 3 * d + j])
            cell[n, j] = f * c[n, j] + i * g
            h[n, j] = o * np.tanh(cell[n, j])
    t = np.asarray(inputs["X"]).dtype
    return {"C": cell.astype(t), "H": h.astype(t)}


def sample_lstm_unit(rng, dtype):
    return {"X": rng.standard_normal((3, 8)).astype(dtype),
            "C_prev": rng.standard_normal((3, 2)).astype(dtype)}, {"forget_bias": 0.5}


def lstm_unit_grad(inputs, attrs):
    x, c = f64(inputs["X"]), f64(inputs["C_prev"])
    fb = float(np.float32(attr(attrs, "forget_bias", 0.0)))
    d = c.shape[1]
    dh = f64(inputs["H@GRAD"]) if inputs.get("H@GRAD") is not None else np.zeros_like(c)
    dcell = f64(inputs["C@GRAD"]) if inputs.get("C@GRAD") is not None else np.zeros_like(c)
    dx, dcp = np.zeros_like(x), np.zeros_like(c)
    for n in range(c.shape[0]):
        for j in range(d):
            i, f = _sig(x[n, j]), _sig(x[n, d + j] + fb)
            o, g = _sig(x[n, 2 * d + j]), np.tanh(x[n, 3 * d + j])
            tc = np.tanh(f64(inputs["C"])[n, j])
            term = dcell[n, j] + dh[n, j] * o * (1 - tc * tc)
            dcp[n, j] = term * f
            dx[n, j] = term * g * i * (1 - i)
            dx[n, d + j] = term * c[n, j] * f * (1 - f)
            dx[n, 2 * d + j] = dh[n, j] * tc * o * (1 - o)
            dx[n, 3 * d + j] = term * i * (1 - g * g)
    t = np.asarray(inputs["X"]).dtype
    return {"X@GRAD": dx.astype(t), "C_prev@GRAD": dcp.astype(t)}


def sample_lstm_unit_grad(rng, dtype):
    inputs, attrs = sample_lstm_unit(rng, dtype)
    fwd = lstm_unit(inputs, attrs)
    return dict(inputs, C=fwd["C"], **{"H@GRAD": rng.standard_normal((3, 2)).astype(dtype),
                                       "C@GRAD": rng.standard_normal((3, 2)).astype(dtype)}), \
        attrs


REFERENCES = {"lstm_unit": lstm_unit, "lstm_unit_grad": lstm_unit_grad}
SAMPLES = {"lstm_unit": sample_lstm_unit, "lstm_unit_grad": sample_lstm_unit_grad}
