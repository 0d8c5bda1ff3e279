"""Reference of gru: a loop over the sequences and their steps in float64, Fluid's equations
(the reset gate before the candidate's product); gru_grad's: back-propagation through time,
sequence by sequence, from the values the forward pass kept."""
import numpy as np

from headrace.runtime import Tensor

from ._util import attr, f64
from .lstm import ACT, DACT, _step_major


def _options(attrs):
    return (attr(attrs, "is_reverse", False), attr(attrs, "origin_mode", False),
            attr(attrs, "gate_activation", "sigmoid"), attr(attrs, "activation", "tanh"))


def _weights(w):
    d = w.shape[0]
    flat = w.reshape(-1)
    return flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)


def gru(inputs, attrs):
    reverse, origin, ag, ac = _options(attrs)
    x = inputs["Input"]
    data, lod = f64(x.data), x.lod
    w_ur, w_c = _weights(f64(inputs["Weight"]))
    d = w_c.shape[0]
    b = np.zeros(3 * d) if inputs.get("Bias") is None else f64(inputs["Bias"]).reshape(-1)
    h0 = None if inputs.get("H0") is None else f64(inputs["H0"])
    offsets = lod[-1]
    lengths = [e - s for s, e in zip(offsets[:-1], offsets[1:])]
    hidden, gates, resets = np.zeros((data.shape[0], d)), np.zeros((data.shape[0], 3 * d)), \
        np.zeros((data.shape[0], d))
    for s, n in enumerate(lengths):
        h = h0[s] if h0 is not None else np.zeros(d)
        for k in (range(n - 1, -1, -1) if reverse else range(n)):
            row = offsets[s] + k
            z = data[row] + b
            u = ACT[ag](z[:d] + h @ w_ur[:, :d])
            r = ACT[ag](z[d:2 * d] + h @ w_ur[:, d:])
            c = ACT[ac](z[2 * d:] + (r * h) @ w_c)
            resets[row] = r * h
            h = u * h + (1 - u) * c if origin else (1 - u) * h + u * c
            hidden[row], gates[row] = h, np.concatenate([u, r, c])
    order = [offsets[s] + k for _, s, k in _step_major(lengths, reverse)]
    t = np.asarray(x.data).dtype
    return {"BatchGate": gates[order].astype(t), "BatchResetHiddenPrev": resets[order].astype(t),
            "BatchHidden": hidden[order].astype(t), "Hidden": Tensor(hidden.astype(t), lod)}


def sample_gru(rng, dtype):
    d, lens = 2, [2, 0, 3, 1]
    lod = [list(np.cumsum([0] + lens))]
    inputs = {"Input": Tensor(rng.standard_normal((sum(lens), 3 * d)).astype(dtype), lod),
              "Weight": (rng.standard_normal((d, 3 * d)) * 0.5).astype(dtype)}
    if rng.integers(2):
        inputs["Bias"] = (rng.standard_normal((1, 3 * d)) * 0.3).astype(dtype)
    if rng.integers(2):
        inputs["H0"] = rng.standard_normal((len(lens), d)).astype(dtype)
    return inputs, {"is_reverse": bool(rng.integers(2)), "origin_mode": bool(rng.integers(2)),
                    "gate_activation": "sigmoid",
                    "activation": str(rng.choice(["tanh", "relu", "identity"]))}


def gru_grad(inputs, attrs):
    reverse, origin, ag, ac = _options(attrs)
    x = inputs["Input"]
    data, lod = f64(x.data), x.lod
    w_ur, w_c = _weights(f64(inputs["Weight"]))
    d = w_c.shape[0]
    h0 = None if inputs.get("H0") is None else f64(inputs["H0"])
    dout = np.zeros((data.shape[0], d)) if inputs.get("Hidden@GRAD") is None else \
        f64(getattr(inputs["Hidden@GRAD"], "data", inputs["Hidden@GRAD"]))
    offsets = lod[-1]
    lengths = [e - s for s, e in zip(offsets[:-1], offsets[1:])]
    kept = {k: np.zeros((data.shape[0], v)) for k, v in (("BatchGate", 3 * d),
                                                         ("BatchResetHiddenPrev", d),
                                                         ("BatchHidden", d))}
    for k, (_, s, pos) in enumerate(_step_major(lengths, reverse)):
        for name, arr in kept.items():
            arr[offsets[s] + pos] = f64(inputs[name])[k]
    gates, resets, hidden = kept["BatchGate"], kept["BatchResetHiddenPrev"], kept["BatchHidden"]
    dx, dw_ur, dw_c = np.zeros_like(data), np.zeros_like(w_ur), np.zeros_like(w_c)
    dh0 = np.zeros((len(lengths), d))
    for s, n in enumerate(lengths):
        rows = [offsets[s] + k for k in (range(n - 1, -1, -1) if reverse else range(n))]
        dh = np.zeros(d)
        for t in range(n - 1, -1, -1):
            row = rows[t]
            hp = hidden[rows[t - 1]] if t else (h0[s] if h0 is not None else None)
            hpv = hp if hp is not None else np.zeros(d)
            u, r, c = np.split(gates[row], 3)
            dh = dh + dout[row]
            if origin:
                du, dcand, dhp = dh * (hpv - c), dh * (1 - u), dh * u
            else:
                du, dcand, dhp = dh * (c - hpv), dh * u, dh * (1 - u)
            dzc, dzu = dcand * DACT[ac](c), du * DACT[ag](u)
            dzr = np.zeros(d)
            if hp is not None:
                drh = dzc @ w_c.T
                dzr = drh * hp * DACT[ag](r)
                dhp = dhp + drh * r + np.concatenate([dzu, dzr]) @ w_ur.T
                dw_c += np.outer(resets[row], dzc)
                dw_ur += np.outer(hp, np.concatenate([dzu, dzr]))
            dx[row] = np.concatenate([dzu, dzr, dzc])
            dh = dhp
        if n:
            dh0[s] = dh
    t = np.asarray(x.data).dtype
    out = {"Input@GRAD": Tensor(dx.astype(t), lod),
           "Weight@GRAD": np.concatenate([dw_ur.reshape(-1), dw_c.reshape(-1)])
           .reshape(d, 3 * d).astype(t)}
    if inputs.get("Bias") is not None:
        out["Bias@GRAD"] = dx.sum(axis=0).reshape(1, -1).astype(t)
    if h0 is not None:
        out["H0@GRAD"] = dh0.astype(t)
    return out


def sample_gru_grad(rng, dtype):
    inputs, attrs = sample_gru(rng, dtype)
    fwd = gru(inputs, attrs)
    inputs = dict(inputs, **{k: fwd[k] for k in ("BatchGate", "BatchResetHiddenPrev",
                                                 "BatchHidden", "Hidden")})
    inputs["Hidden@GRAD"] = rng.standard_normal(fwd["Hidden"].data.shape).astype(dtype)
    return inputs, attrs


REFERENCES = {"gru": gru, "gru_grad": gru_grad}
SAMPLES = {"gru": sample_gru, "gru_grad": sample_gru_grad}
