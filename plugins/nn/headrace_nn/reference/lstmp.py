"""Reference of lstmp: a loop over the sequences and their steps in float64, the equations of
Paddle's lstmp kernel (clipping where it clips; the projection's activation is cell_activation
unless proj_activation is identity, as that kernel computes); lstmp_grad's: back-propagation
through time, sequence by sequence, from the values the forward pass kept."""
import numpy as np

from headrace.runtime import Tensor

from ._util import attr, attr_f32, f64

ACT = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
       "relu": lambda v: np.maximum(v, 0), "identity": lambda v: v}
# Derivatives from the activation's output y.
DACT = {"sigmoid": lambda y: y * (1 - y), "tanh": lambda y: 1 - y * y,
        "relu": lambda y: (y > 0).astype(float), "identity": np.ones_like}
KEPT = ("BatchGate", "BatchCellPreAct", "BatchHidden")


def _options(attrs):
    cell = attr(attrs, "cell_activation", "tanh")
    proj = "identity" if attr(attrs, "proj_activation", "tanh") == "identity" else cell
    return {"peep": attr(attrs, "use_peepholes", True),
            "reverse": attr(attrs, "is_reverse", False),
            "gate": attr(attrs, "gate_activation", "sigmoid"),
            "cand": attr(attrs, "candidate_activation", "tanh"), "cell": cell, "proj": proj,
            "cell_clip": attr_f32(attrs, "cell_clip", 0.0),
            "proj_clip": attr_f32(attrs, "proj_clip", 0.0)}


def _lengths(lod):
    offsets = lod[-1]
    return offsets, [e - s for s, e in zip(offsets[:-1], offsets[1:])]


def _step_major(lengths, reverse):
    """[(sequence, row offset in it)] in the kernel's step-major order: per step, the
    sequences longer than it, longest first (ties in their order)."""
    order = sorted(range(len(lengths)), key=lambda s: -lengths[s])
    return [(s, lengths[s] - 1 - t if reverse else t)
            for t in range(max(lengths, default=0)) for s in order if lengths[s] > t]


def _clip(v, clip):
    return np.clip(v, -clip, clip) if clip > 0 else v


def lstmp(inputs, attrs):
    o = _options(attrs)
    x = inputs["Input"]
    data = np.asarray(x.data)
    xs = f64(data)
    w, pw, b = (f64(inputs[k]) for k in ("Weight", "ProjWeight", "Bias"))
    b = b.reshape(-1)
    d, p = pw.shape
    h0, c0 = (None if inputs.get(s) is None else f64(inputs[s]) for s in ("H0", "C0"))
    offsets, lengths = _lengths(x.lod)
    rows = xs.shape[0]
    proj, cell = np.zeros((rows, p)), np.zeros((rows, d))
    gates, act_c, hidden = np.zeros((rows, 4 * d)), np.zeros((rows, d)), np.zeros((rows, d))
    ag, ac, ah, ap = ACT[o["gate"]], ACT[o["cand"]], ACT[o["cell"]], ACT[o["proj"]]
    for s, n in enumerate(lengths):
        r = h0[s] if h0 is not None else np.zeros(p)
        c = c0[s] if c0 is not None else np.zeros(d)
        for k in (range(n - 1, -1, -1) if o["reverse"] else range(n)):
            row = offsets[s] + k
            zc, zi, zf, zo = np.split(xs[row] + r @ w + b[:4 * d], 4)
            if o["peep"]:
                zi, zf = zi + b[4 * d:5 * d] * c, zf + b[5 * d:6 * d] * c
            g, i, f = ac(zc), ag(zi), ag(zf)
            c = _clip(f * c + i * g, o["cell_clip"])
            if o["peep"]:
                zo = zo + b[6 * d:] * c
            og = ag(zo)
            a = ah(c)
            h = og * a
            r = _clip(ap(h @ pw), o["proj_clip"])
            proj[row], cell[row], hidden[row], act_c[row] = r, c, h, a
            gates[row] = np.concatenate([g, i, f, og])
    order = [offsets[s] + k for s, k in _step_major(lengths, o["reverse"])]
    t = data.dtype
    return {"Projection": Tensor(proj.astype(t), x.lod), "Cell": Tensor(cell.astype(t), x.lod),
            "BatchGate": gates[order].astype(t), "BatchCellPreAct": act_c[order].astype(t),
            "BatchHidden": hidden[order].astype(t)}


def sample_lstmp(rng, dtype):
    d, p = 3, 2
    lens = [2, 0, 3, 1]
    lod = [list(np.cumsum([0] + lens))]
    peep = bool(rng.integers(2))
    inputs = {"Input": Tensor(rng.standard_normal((sum(lens), 4 * d)).astype(dtype), lod),
              "Weight": (rng.standard_normal((p, 4 * d)) * 0.5).astype(dtype),
              "ProjWeight": (rng.standard_normal((d, p)) * 0.5).astype(dtype),
              "Bias": (rng.standard_normal((1, (7 if peep else 4) * d)) * 0.3).astype(dtype)}
    state = int(rng.integers(3))  # none, C0 alone, H0 and C0
    if state:
        inputs["C0"] = rng.standard_normal((len(lens), d)).astype(dtype)
    if state == 2:
        inputs["H0"] = rng.standard_normal((len(lens), p)).astype(dtype)
    return inputs, {"use_peepholes": peep, "is_reverse": bool(rng.integers(2)),
                    "gate_activation": "sigmoid", "cell_activation": "tanh",
                    "candidate_activation": str(rng.choice(["tanh", "relu", "identity"])),
                    "proj_activation": str(rng.choice(["tanh", "identity"])),
                    "cell_clip": float(rng.choice([0.0, 0.8])),
                    "proj_clip": float(rng.choice([0.0, 0.5]))}


def lstmp_grad(inputs, attrs):
    """Back-propagation through time, one sequence at a time, in float64, from the kept values
    (the activated gates, cell_activation(c) and h, step-major; Projection and Cell), as
    Paddle's kernel uses them. A clipped value passes no gradient (Paddle's rule: at or beyond
    the bound)."""
    o = _options(attrs)
    w, pw, b = (f64(inputs[k]) for k in ("Weight", "ProjWeight", "Bias"))
    b = b.reshape(-1)
    d, p = pw.shape
    proj_t = inputs["Projection"]
    lod = proj_t.lod
    proj, cell = f64(proj_t.data), f64(getattr(inputs["Cell"], "data", inputs["Cell"]))
    rows = proj.shape[0]
    h0, c0 = (None if inputs.get(k) is None else f64(inputs[k]) for k in ("H0", "C0"))
    dproj, dcell = (np.zeros((rows, n)) if inputs.get(k) is None or
                    getattr(inputs[k], "data", inputs[k]) is None else
                    f64(getattr(inputs[k], "data", inputs[k]))
                    for k, n in (("Projection@GRAD", p), ("Cell@GRAD", d)))
    offsets, lengths = _lengths(lod)
    # The kept step-major values, back in the sequences' row order.
    kept = {k: np.zeros((rows, 4 * d if k == "BatchGate" else d)) for k in KEPT}
    for j, (s, pos) in enumerate(_step_major(lengths, o["reverse"])):
        for k in KEPT:
            kept[k][offsets[s] + pos] = f64(inputs[k])[j]
    gates, act_c, hidden = (kept[k] for k in KEPT)
    dg_, dc_, dh_, dp_ = (DACT[o[k]] for k in ("gate", "cand", "cell", "proj"))
    peep = b[4 * d:] if o["peep"] else np.zeros(3 * d)
    dx, dw, dpw, db = np.zeros((rows, 4 * d)), np.zeros_like(w), np.zeros_like(pw), np.zeros(
        b.size)
    dh0, dc0 = np.zeros((len(lengths), p)), np.zeros((len(lengths), d))
    for s, n in enumerate(lengths):
        seq = [offsets[s] + k for k in (range(n - 1, -1, -1) if o["reverse"] else range(n))]
        dr, dc = np.zeros(p), np.zeros(d)
        for t in range(n - 1, -1, -1):
            row = seq[t]
            r_prev = proj[seq[t - 1]] if t else (h0[s] if h0 is not None else np.zeros(p))
            c_prev = cell[seq[t - 1]] if t else (c0[s] if c0 is not None else np.zeros(d))
            dr = dr + dproj[row]
            if o["proj_clip"] > 0:
                dr = np.where(np.abs(proj[row]) < o["proj_clip"], dr, 0)
            dr = dr * dp_(proj[row])
            dpw += np.outer(hidden[row], dr)
            dh = pw @ dr
            g, i, f, og = np.split(gates[row], 4)
            c, a = cell[row], act_c[row]
            dzo = dg_(og) * dh * a
            dc = dc + dcell[row] + dh_(a) * dh * og + dzo * peep[2 * d:]
            if o["cell_clip"] > 0:
                dc = np.where(np.abs(c) < o["cell_clip"], dc, 0)
            dzc, dzi, dzf = dc_(g) * dc * i, dg_(i) * dc * g, dg_(f) * dc * c_prev
            dz = np.concatenate([dzc, dzi, dzf, dzo])
            dx[row] = dz
            db[:4 * d] += dz
            if o["peep"]:
                db[4 * d:] += np.concatenate([dzi * c_prev, dzf * c_prev, dzo * c])
            dw += np.outer(r_prev, dz)
            dr = w @ dz
            dc = dzi * peep[:d] + dzf * peep[d:2 * d] + dc * f
        if n:
            dh0[s], dc0[s] = dr, dc
    t = np.asarray(inputs["BatchGate"]).dtype
    out = {"Input@GRAD": Tensor(dx.astype(t), lod), "Weight@GRAD": dw.astype(t),
           "ProjWeight@GRAD": dpw.astype(t), "Bias@GRAD": db.reshape(1, -1).astype(t)}
    if h0 is not None:
        out["H0@GRAD"] = dh0.astype(t)
    if c0 is not None:
        out["C0@GRAD"] = dc0.astype(t)
    return out


def sample_lstmp_grad(rng, dtype):
    inputs, attrs = sample_lstmp(rng, dtype)
    fwd = lstmp(inputs, attrs)
    grad_inputs = {k: inputs[k] for k in ("Weight", "ProjWeight", "Bias", "H0", "C0")
                   if k in inputs}
    grad_inputs.update(fwd)
    grad_inputs["Projection@GRAD"] = rng.standard_normal(fwd["Projection"].data.shape) \
        .astype(dtype)
    grad_inputs["Cell@GRAD"] = rng.standard_normal(fwd["Cell"].data.shape).astype(dtype)
    return grad_inputs, attrs


REFERENCES = {"lstmp": lstmp, "lstmp_grad": lstmp_grad}
SAMPLES = {"lstmp": sample_lstmp, "lstmp_grad": sample_lstmp_grad}
