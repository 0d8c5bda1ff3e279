"""Reference of rnn: loops over layers, directions and steps in float64, the cells written out as
Paddle's RNNBase documents them (PyTorch's formulation); rnn_grad's: the same forward again,
then back-propagation through time step by step. Reserve is not compared (its layout is the
kernel's), but :func:`_forward` builds it for rnn_grad's samples: per layer and direction, per
step and sequence, the activated gates and then (LSTM) c and h, (GRU) W_hc h' + b_hc and h,
(simple RNN) h, where h and c are the carried state (kept past a sequence's end)."""
import numpy as np

from ._util import attr, f64

GATES = {"LSTM": 4, "GRU": 3, "RNN_RELU": 1, "RNN_TANH": 1}


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _options(attrs):
    return (attr(attrs, "mode", "RNN_TANH"), attr(attrs, "num_layers", 1),
            2 if attr(attrs, "is_bidirec", False) else 1, attr(attrs, "hidden_size", 100),
            float(np.float32(attr(attrs, "dropout_prob", 0.0))), attr(attrs, "is_test", False))


def _params(weights, layers, dirs):
    """[(w_ih, w_hh, b_ih, b_hh)] per layer and direction, from Paddle's flat order."""
    n = layers * dirs
    if len(weights) != 4 * n:
        raise ValueError(f"WeightList holds {len(weights)} tensors, expected {4 * n}")
    return [(f64(weights[2 * k]), f64(weights[2 * k + 1]), f64(weights[2 * n + 2 * k]),
             f64(weights[2 * n + 2 * k + 1])) for k in range(n)]


def _lengths(inputs, steps, batch):
    seq = inputs.get("SequenceLength")
    if seq is None:
        return np.full(batch, steps)
    s = np.asarray(seq)
    if s.dtype.kind not in "iu" or s.shape != (batch,):
        raise ValueError(f"SequenceLength must be [{batch}] integers, got {s.shape} {s.dtype}")
    if len(s) and (s.min() < 0 or s.max() > steps):
        raise ValueError(f"SequenceLength values must be in [0, {steps}]")
    return s.astype(np.int64)


def _cell(mode, xp, h, c, w_hh, b_hh, hid):
    """One step from the input projection ``xp`` (x W_ih^T + b_ih): (new h, new c, the
    Reserve row's gates and extras)."""
    if mode == "LSTM":
        z = xp + h @ w_hh.T + b_hh
        i, f, g, o = (_sigmoid(z[:, :hid]), _sigmoid(z[:, hid:2 * hid]),
                      np.tanh(z[:, 2 * hid:3 * hid]), _sigmoid(z[:, 3 * hid:]))
        c = f * c + i * g
        h = o * np.tanh(c)
        return h, c, [i, f, g, o, c]
    if mode == "GRU":
        zh = h @ w_hh.T + b_hh
        r = _sigmoid(xp[:, :hid] + zh[:, :hid])
        u = _sigmoid(xp[:, hid:2 * hid] + zh[:, hid:2 * hid])
        hc = zh[:, 2 * hid:]
        cand = np.tanh(xp[:, 2 * hid:] + r * hc)
        return u * h + (1 - u) * cand, c, [r, u, cand, hc]
    z = xp + h @ w_hh.T + b_hh
    h = np.maximum(z, 0) if mode == "RNN_RELU" else np.tanh(z)
    return h, c, [h]


def _drop(a, mask, p):
    """Paddle's upscaled dropout: a * mask / (1 - p) with 1 - p in float32; zeros if p is 1."""
    if p == 1:
        return np.zeros_like(a)
    return a * mask / float(np.float32(1) - np.float32(p))


def _forward(inputs, attrs, mask=None):
    """(Out, [h_n, c_n], Reserve, every layer's input) in float64; ``mask``: the dropout mask
    between layers (None: no dropout)."""
    mode, layers, dirs, hid, p, _ = _options(attrs)
    x = f64(inputs["Input"])
    if x.ndim != 3:
        raise ValueError(f"Input must be [T, N, I], got {x.shape}")
    steps, batch = x.shape[:2]
    states = [f64(s) for s in inputs["PreState"]]
    if len(states) != (2 if mode == "LSTM" else 1):
        raise ValueError(f"PreState of {mode} holds {len(states)} tensors")
    for s in states:
        if s.shape != (layers * dirs, batch, hid):
            raise ValueError(f"PreState must be {[layers * dirs, batch, hid]}, got {s.shape}")
    params = _params(inputs["WeightList"], layers, dirs)
    lens = _lengths(inputs, steps, batch)
    h_n = [np.zeros((layers * dirs, batch, hid)) for _ in states]
    width = GATES[mode] + (2 if mode in ("LSTM", "GRU") else 1)
    reserve = np.zeros((layers * dirs, steps, batch, width * hid))
    layer_in, inp = [], x
    for layer in range(layers):
        if layer and mask is not None:
            inp = _drop(inp, mask, p)
        layer_in.append(inp)
        out = np.zeros((steps, batch, dirs * hid))
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, b_ih, b_hh = params[k]
            if w_ih.shape[1] != inp.shape[2]:
                raise ValueError(f"w_ih of layer {layer} is {w_ih.shape}, the input has "
                                 f"{inp.shape[2]} features")
            h = states[0][k]
            c = states[1][k] if mode == "LSTM" else None
            for t in (range(steps) if d == 0 else range(steps - 1, -1, -1)):
                alive = (t < lens)[:, None]
                hn, cn, parts = _cell(mode, inp[t] @ w_ih.T + b_ih, h, c, w_hh, b_hh, hid)
                out[t, :, d * hid:(d + 1) * hid] = np.where(alive, hn, 0)
                h = np.where(alive, hn, h)
                if mode == "LSTM":
                    c = np.where(alive, cn, c)
                    parts[-1] = c
                reserve[k, t] = np.concatenate(parts + [h], axis=1)
            h_n[0][k] = h
            if mode == "LSTM":
                h_n[1][k] = c
        inp = out
    return inp, h_n, reserve, layer_in


def _dropped(attrs):
    _, layers, _, _, p, is_test = _options(attrs)
    return p > 0 and not is_test and layers > 1


def rnn(inputs, attrs):
    t = np.asarray(inputs["Input"]).dtype
    if _dropped(attrs):
        # a random mask: the op's tests check it statistically and through rnn_grad
        return {"Out": None, "State": None}
    out, h_n, _, _ = _forward(inputs, attrs)
    return {"Out": out.astype(t), "State": [s.astype(t) for s in h_n]}


def _backward_cell(mode, parts, h_prev, c_prev, dh, dc, w_hh, hid):
    """(d pre-activation of the input projection, d of the recurrent projection (with b_hh),
    dh', dc') of one step."""
    if mode == "LSTM":
        i, f, g, o, c = parts
        tc = np.tanh(c)
        do = dh * tc * o * (1 - o)
        dc = dc + dh * o * (1 - tc * tc)
        dz = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * (1 - g * g), do], axis=1)
        return dz, dz, dz @ w_hh, dc * f
    if mode == "GRU":
        r, u, cand, hc = parts
        du = dh * (h_prev - cand) * u * (1 - u)
        dn = dh * (1 - u) * (1 - cand * cand)
        dr = dn * hc * r * (1 - r)
        dzx = np.concatenate([dr, du, dn], axis=1)
        dzh = np.concatenate([dr, du, dn * r], axis=1)
        return dzx, dzh, dzh @ w_hh + dh * u, dc
    (h,) = parts
    dz = dh * ((h > 0).astype(float) if mode == "RNN_RELU" else 1 - h * h)
    return dz, dz, dz @ w_hh, dc


def rnn_grad(inputs, attrs):
    mode, layers, dirs, hid, p, is_test = _options(attrs)
    t = np.asarray(inputs["Input"]).dtype
    mask = None
    if p > 0 and not is_test:
        mask = f64(inputs["DropoutState"])
    x = f64(inputs["Input"])
    steps, batch = x.shape[:2]
    params = _params(inputs["WeightList"], layers, dirs)
    lens = _lengths(inputs, steps, batch)
    states = [f64(s) for s in inputs["PreState"]]
    # What the forward pass kept, as the kernel reads it: the gates and states of every
    # step in Reserve; a layer's input is the layer before's h, zero past the lengths,
    # dropped out by DropoutState.
    reserve = f64(inputs["Reserve"])
    layer_in = [x]
    for layer in range(1, layers):
        prev = np.concatenate([reserve[(layer - 1) * dirs + d][:, :, -hid:]
                               for d in range(dirs)], axis=2)
        prev = prev * (np.arange(steps)[:, None] < lens[None, :])[:, :, None]
        layer_in.append(prev if mask is None else _drop(prev, mask, p))
    dout = inputs.get("Out@GRAD")
    dout = np.zeros((steps, batch, dirs * hid)) if dout is None else f64(dout)
    dstate = [np.zeros_like(s) if g is None else f64(g)
              for s, g in zip(states, inputs.get("State@GRAD") or [None] * len(states))]
    dw = [np.zeros_like(w) for w in (w for prm in params for w in prm)]
    dpre = [np.zeros_like(s) for s in states]
    for layer in range(layers - 1, -1, -1):
        inp = layer_in[layer]
        dinp = np.zeros_like(inp)
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, _, _ = params[k]
            dh = dstate[0][k].copy()
            dc = dstate[1][k].copy() if mode == "LSTM" else None
            order = list(range(steps)) if d == 0 else list(range(steps - 1, -1, -1))
            for pos in range(len(order) - 1, -1, -1):
                tt = order[pos]
                alive = (tt < lens)[:, None]
                row = reserve[k, tt]
                prev = reserve[k, order[pos - 1]] if pos else None
                h_prev = states[0][k] if prev is None else prev[:, -hid:]
                c_prev = None
                if mode == "LSTM":
                    c_prev = states[1][k] if prev is None else prev[:, 4 * hid:5 * hid]
                parts = [row[:, j * hid:(j + 1) * hid] for j in range(GATES[mode])]
                if mode == "LSTM":
                    parts.append(row[:, 4 * hid:5 * hid])
                elif mode == "GRU":
                    parts.append(row[:, 3 * hid:4 * hid])
                dh_cell = np.where(alive, dh + dout[tt, :, d * hid:(d + 1) * hid], 0)
                dc_cell = np.where(alive, dc, 0) if mode == "LSTM" else None
                dzx, dzh, dh_prev, dc_prev = _backward_cell(mode, parts, h_prev, c_prev,
                                                            dh_cell, dc_cell, w_hh, hid)
                dh = np.where(alive, dh_prev, dh)
                if mode == "LSTM":
                    dc = np.where(alive, dc_prev, dc)
                dinp[tt] += dzx @ w_ih
                dw[4 * k] += dzx.T @ inp[tt]
                dw[4 * k + 1] += dzh.T @ h_prev
                dw[4 * k + 2] += dzx.sum(axis=0)
                dw[4 * k + 3] += dzh.sum(axis=0)
            dpre[0][k] = dh
            if mode == "LSTM":
                dpre[1][k] = dc
        if layer:
            dout = dinp if mask is None else _drop(dinp, mask, p)
        else:
            dx = dinp
    n = layers * dirs
    flat = [dw[4 * k + j] for k in range(n) for j in (0, 1)] + \
        [dw[4 * k + j] for k in range(n) for j in (2, 3)]
    return {"Input@GRAD": dx.astype(t), "PreState@GRAD": [g.astype(t) for g in dpre],
            "WeightList@GRAD": [g.astype(t) for g in flat]}


def _weights(rng, mode, isize, hid, layers, dirs, dtype):
    g = GATES[mode] * hid
    ws, bs = [], []
    for layer in range(layers):
        width = isize if layer == 0 else dirs * hid
        for _ in range(dirs):
            ws += [rng.uniform(-0.6, 0.6, (g, width)), rng.uniform(-0.6, 0.6, (g, hid))]
            bs += [rng.uniform(-0.3, 0.3, g), rng.uniform(-0.3, 0.3, g)]
    return [a.astype(dtype) for a in ws + bs]


def sample_rnn(rng, dtype, dropout=False):
    mode = str(rng.choice(["LSTM", "GRU", "RNN_TANH", "RNN_RELU"]))
    steps, batch, isize, hid = 3, 3, 2, 2
    layers, dirs = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    inputs = {"Input": rng.standard_normal((steps, batch, isize)).astype(dtype),
              "PreState": [rng.standard_normal((layers * dirs, batch, hid)).astype(dtype)
                           for _ in range(2 if mode == "LSTM" else 1)],
              "WeightList": _weights(rng, mode, isize, hid, layers, dirs, dtype)}
    if rng.integers(2):
        inputs["SequenceLength"] = np.array([3, 0, 2], np.int32)
    attrs = {"mode": mode, "num_layers": layers, "is_bidirec": dirs == 2, "input_size": isize,
             "hidden_size": hid, "is_test": bool(rng.integers(2)),
             "dropout_prob": 0.5 if dropout else 0.0}
    return inputs, attrs


def sample_rnn_grad(rng, dtype):
    inputs, attrs = sample_rnn(rng, dtype, dropout=bool(rng.integers(2)))
    attrs["is_test"] = False
    mode, layers, dirs, hid, p, _ = _options(attrs)
    x = inputs["Input"]
    shape = (x.shape[0], x.shape[1], dirs * hid)
    mask = (rng.random(shape) >= p).astype(np.uint8)
    out, h_n, reserve, _ = _forward(inputs, attrs, mask if p > 0 else None)
    inputs.update(Out=out.astype(dtype), DropoutState=mask, Reserve=reserve.astype(dtype))
    inputs["Out@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
    inputs["State@GRAD"] = [rng.standard_normal(s.shape).astype(dtype) for s in h_n]
    return inputs, attrs


REFERENCES = {"rnn": rnn, "rnn_grad": rnn_grad}
SAMPLES = {"rnn": sample_rnn, "rnn_grad": sample_rnn_grad}
