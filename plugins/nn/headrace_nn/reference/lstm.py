"""Reference of lstm: a loop over the sequences and their steps in float64, the equations as
Fluid's lstm op states them; lstm_grad's: back-propagation through time, sequence by
sequence."""
import numpy as np

from headrace.runtime import Tensor

from ._util import attr, f64

ACT = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
       "relu": lambda v: np.maximum(v, 0), "identity": lambda v: v}


def _options(attrs):
    return (attr(attrs, "use_peepholes", True), attr(attrs, "is_reverse", False),
            ACT[attr(attrs, "gate_activation", "sigmoid")],
            ACT[attr(attrs, "candidate_activation", "tanh")],
            ACT[attr(attrs, "cell_activation", "tanh")])


def _step_major(lengths, reverse):
    """[(step, sequence, row offset in the sequence)] in the kernel's step-major order: per
    step, the sequences longer than it, longest first (ties in their order)."""
    order = sorted(range(len(lengths)), key=lambda s: -lengths[s])
    rows = []
    for t in range(max(lengths, default=0)):
        for s in order:
            if lengths[s] > t:
                rows.append((t, s, lengths[s] - 1 - t if reverse else t))
    return rows


def _run(x, lod, h0, c0, w, b, attrs):
    peep, reverse, act_g, act_c, act_h = _options(attrs)
    d = w.shape[0]
    offsets = lod[-1]
    lengths = [e - s for s, e in zip(offsets[:-1], offsets[1:])]
    hidden, cell = np.zeros((x.shape[0], d)), np.zeros((x.shape[0], d))
    gates = np.zeros((x.shape[0], 4 * d))
    b = b.reshape(-1)
    for s, n in enumerate(lengths):
        h = h0[s] if h0 is not None else np.zeros(d)
        c = c0[s] if c0 is not None else np.zeros(d)
        steps = range(n - 1, -1, -1) if reverse else range(n)
        for k in steps:
            row = offsets[s] + k
            z = x[row] + h @ w + b[:4 * d]
            zc, zi, zf, zo = np.split(z, 4)
            if peep:
                zi = zi + b[4 * d:5 * d] * c
                zf = zf + b[5 * d:6 * d] * c
            g, i, f = act_c(zc), act_g(zi), act_g(zf)
            c = f * c + i * g
            if peep:
                zo = zo + b[6 * d:] * c
            o = act_g(zo)
            h = o * act_h(c)
            hidden[row], cell[row], gates[row] = h, c, np.concatenate([g, i, f, o])
    order = [offsets[s] + k for _, s, k in _step_major(lengths, reverse)]
    return hidden, cell, gates[order], cell[order]


def lstm(inputs, attrs):
    x = inputs["Input"]
    data = np.asarray(x.data)
    h0, c0 = (None if inputs.get(s) is None else f64(inputs[s]) for s in ("H0", "C0"))
    hidden, cell, gates, cells = _run(f64(data), x.lod, h0, c0, f64(inputs["Weight"]),
                                      f64(inputs["Bias"]), attrs)
    t = data.dtype
    return {"Hidden": Tensor(hidden.astype(t), x.lod), "Cell": Tensor(cell.astype(t), x.lod),
            "BatchGate": gates.astype(t), "BatchCellPreAct": cells.astype(t)}


def sample_lstm(rng, dtype):
    d = 2
    lens = [2, 0, 3, 1]
    lod = [list(np.cumsum([0] + lens))]
    x = rng.standard_normal((sum(lens), 4 * d)).astype(dtype)
    peep = bool(rng.integers(2))
    inputs = {"Input": Tensor(x, lod), "Weight": (rng.standard_normal((d, 4 * d)) * 0.5)
              .astype(dtype), "Bias": (rng.standard_normal((1, (7 if peep else 4) * d)) * 0.3)
              .astype(dtype)}
    if rng.integers(2):
        inputs["H0"] = rng.standard_normal((len(lens), d)).astype(dtype)
        inputs["C0"] = rng.standard_normal((len(lens), d)).astype(dtype)
    return inputs, {"use_peepholes": peep, "is_reverse": bool(rng.integers(2)),
                    "gate_activation": "sigmoid", "cell_activation": "tanh",
                    "candidate_activation": str(rng.choice(["tanh", "relu", "identity"]))}


DACT = {"sigmoid": lambda y: y * (1 - y), "tanh": lambda y: 1 - y * y,
        "relu": lambda y: (y > 0).astype(float), "identity": np.ones_like}


def lstm_grad(inputs, attrs):
    """Back-propagation through time, one sequence at a time, in float64, from the values the
    forward pass kept (the activated gates and cells, step-major, and Hidden), as the kernel
    uses them."""
    peep, reverse = _options(attrs)[:2]
    act_h = _options(attrs)[4]
    dg_, dc_, dh_ = (DACT[attr(attrs, k, v)] for k, v in (
        ("gate_activation", "sigmoid"), ("candidate_activation", "tanh"),
        ("cell_activation", "tanh")))
    x = inputs["Input"]
    data, lod = f64(x.data), x.lod
    w, b = f64(inputs["Weight"]), f64(inputs["Bias"]).reshape(-1)
    d = w.shape[0]
    h0, c0 = (None if inputs.get(k) is None else f64(inputs[k]) for k in ("H0", "C0"))
    dout, dcell = (np.zeros((data.shape[0], d)) if inputs.get(k) is None else
                   f64(getattr(inputs[k], "data", inputs[k]))
                   for k in ("Hidden@GRAD", "Cell@GRAD"))
    hidden = f64(getattr(inputs["Hidden"], "data", inputs["Hidden"]))
    offsets = lod[-1]
    lengths = [e - s for s, e in zip(offsets[:-1], offsets[1:])]
    # The kept step-major values, back in Input's row order.
    gates, cells = np.zeros((data.shape[0], 4 * d)), np.zeros((data.shape[0], d))
    for k, (_, s, pos) in enumerate(_step_major(lengths, reverse)):
        gates[offsets[s] + pos] = f64(inputs["BatchGate"])[k]
        cells[offsets[s] + pos] = f64(inputs["BatchCellPreAct"])[k]
    dx, dw, db = np.zeros_like(data), np.zeros_like(w), np.zeros_like(b)
    dh0 = np.zeros((len(lengths), d))
    dc0 = np.zeros_like(dh0)
    for s, n in enumerate(lengths):
        rows = [offsets[s] + k for k in (range(n - 1, -1, -1) if reverse else range(n))]
        dh, dc = np.zeros(d), np.zeros(d)
        for t in range(n - 1, -1, -1):
            row = rows[t]
            h_prev = hidden[rows[t - 1]] if t else (h0[s] if h0 is not None else None)
            c_prev = cells[rows[t - 1]] if t else (c0[s] if c0 is not None else np.zeros(d))
            g, i, f, o = np.split(gates[row], 4)
            c = cells[row]
            a = act_h(c)
            dh = dh + dout[row]
            dzo = dh * a * dg_(o)
            dc = dc + dh * o * dh_(a) + dcell[row]
            if peep:
                dc = dc + dzo * b[6 * d:]
                db[6 * d:] += dzo * c
            dzi, dzf, dzc = dc * g * dg_(i), dc * c_prev * dg_(f), dc * i * dc_(g)
            dz = np.concatenate([dzc, dzi, dzf, dzo])
            dx[row] = dz
            db[:4 * d] += dz
            if h_prev is not None:
                dw += np.outer(h_prev, dz)
            dh = dz @ w.T
            dc = dc * f
            if peep:
                dc = dc + dzi * b[4 * d:5 * d] + dzf * b[5 * d:6 * d]
                db[4 * d:5 * d] += dzi * c_prev
                db[5 * d:6 * d] += dzf * c_prev
        if n:
            dh0[s], dc0[s] = dh, dc
    t = np.asarray(x.data).dtype
    out = {"Input@GRAD": Tensor(dx.astype(t), lod), "Weight@GRAD": dw.astype(t),
           "Bias@GRAD": db.reshape(1, -1).astype(t)}
    if h0 is not None:
        out["H0@GRAD"], out["C0@GRAD"] = dh0.astype(t), dc0.astype(t)
    return out


def sample_lstm_grad(rng, dtype):
    inputs, attrs = sample_lstm(rng, dtype)
    fwd = lstm(inputs, attrs)
    inputs = dict(inputs, Hidden=fwd["Hidden"], Cell=fwd["Cell"], BatchGate=fwd["BatchGate"],
                  BatchCellPreAct=fwd["BatchCellPreAct"])
    inputs["Hidden@GRAD"] = rng.standard_normal(fwd["Hidden"].data.shape).astype(dtype)
    inputs["Cell@GRAD"] = rng.standard_normal(fwd["Cell"].data.shape).astype(dtype)
    return inputs, attrs


REFERENCES = {"lstm": lstm, "lstm_grad": lstm_grad}
SAMPLES = {"lstm": sample_lstm, "lstm_grad": sample_lstm_grad}
