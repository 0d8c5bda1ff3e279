"""Reference of gru_unit and its gradient: Fluid's equations row by row in float64."""
import numpy as np

from ._util import attr, f64
from .lstm import ACT, DACT

NAMES = {0: "identity", 1: "sigmoid", 2: "tanh", 3: "relu"}


def _parts(inputs, attrs):
    x, h, w = f64(inputs["X"] if "X" in inputs else inputs["Input"]), \
        f64(inputs["HiddenPrev"]), f64(inputs["Weight"])
    d = w.shape[0]
    flat = w.reshape(-1)
    b = f64(inputs["Bias"]).reshape(-1) if inputs.get("Bias") is not None else np.zeros(3 * d)
    return (x, h, flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d), b, d,
            NAMES[attr(attrs, "gate_activation", 1)], NAMES[attr(attrs, "activation", 2)],
            attr(attrs, "origin_mode", False))


def gru_unit(inputs, attrs):
    x, h, w_ur, w_c, b, d, ag, ac, origin = _parts(inputs, attrs)
    gates, resets, hidden = np.zeros_like(x), np.zeros_like(h), np.zeros_like(h)
    for n in range(x.shape[0]):
        z = x[n] + b
        u = ACT[ag](z[:d] + h[n] @ w_ur[:, :d])
        r = ACT[ag](z[d:2 * d] + h[n] @ w_ur[:, d:])
        c = ACT[ac](z[2 * d:] + (r * h[n]) @ w_c)
        gates[n], resets[n] = np.concatenate([u, r, c]), r * h[n]
        hidden[n] = u * h[n] + (1 - u) * c if origin else (1 - u) * h[n] + u * c
    t = np.asarray(inputs["Input"]).dtype
    return {"Gate": gates.astype(t), "ResetHiddenPrev": resets.astype(t),
            "Hidden": hidden.astype(t)}


def sample_gru_unit(rng, dtype):
    d = 2
    inputs = {"Input": rng.standard_normal((3, 3 * d)).astype(dtype),
              "HiddenPrev": rng.standard_normal((3, d)).astype(dtype),
              "Weight": (rng.standard_normal((d, 3 * d)) * 0.5).astype(dtype)}
    if rng.integers(2):
        inputs["Bias"] = (rng.standard_normal((1, 3 * d)) * 0.3).astype(dtype)
    return inputs, {"activation": int(rng.choice([0, 2, 3])), "gate_activation": 1,
                    "origin_mode": bool(rng.integers(2))}


def gru_unit_grad(inputs, attrs):
    x, h, w_ur, w_c, b, d, ag, ac, origin = _parts(inputs, attrs)
    g, rh = f64(inputs["Gate"]), f64(inputs["ResetHiddenPrev"])
    dh = f64(inputs["Hidden@GRAD"])
    dx, dhp = np.zeros_like(x), np.zeros_like(h)
    dw_ur, dw_c = np.zeros_like(w_ur), np.zeros_like(w_c)
    for n in range(x.shape[0]):
        u, r, c = g[n, :d], g[n, d:2 * d], g[n, 2 * d:]
        if origin:
            du, dcand, dprev = dh[n] * (h[n] - c), dh[n] * (1 - u), dh[n] * u
        else:
            du, dcand, dprev = dh[n] * (c - h[n]), dh[n] * u, dh[n] * (1 - u)
        dzc = dcand * DACT[ac](c)
        drh = w_c @ dzc
        dzu, dzr = du * DACT[ag](u), drh * h[n] * DACT[ag](r)
        dz_ur = np.concatenate([dzu, dzr])
        dhp[n] = dprev + drh * r + w_ur @ dz_ur
        dw_ur += np.outer(h[n], dz_ur)
        dw_c += np.outer(rh[n], dzc)
        dx[n] = np.concatenate([dz_ur, dzc])
    t = np.asarray(inputs["Input"]).dtype
    out = {"Input@GRAD": dx.astype(t), "HiddenPrev@GRAD": dhp.astype(t),
           "Weight@GRAD": np.concatenate([dw_ur.reshape(-1), dw_c.reshape(-1)])
           .reshape(d, 3 * d).astype(t)}
    if inputs.get("Bias") is not None:
        out["Bias@GRAD"] = dx.sum(axis=0).reshape(1, -1).astype(t)
    return out


def sample_gru_unit_grad(rng, dtype):
    inputs, attrs = sample_gru_unit(rng, dtype)
    fwd = gru_unit(inputs, attrs)
    return dict(inputs, Gate=fwd["Gate"], ResetHiddenPrev=fwd["ResetHiddenPrev"], **{
        "Hidden@GRAD": rng.standard_normal(fwd["Hidden"].shape).astype(dtype)}), attrs


REFERENCES = {"gru_unit": gru_unit, "gru_unit_grad": gru_unit_grad}
SAMPLES = {"gru_unit": sample_gru_unit, "gru_unit_grad": sample_gru_unit_grad}
