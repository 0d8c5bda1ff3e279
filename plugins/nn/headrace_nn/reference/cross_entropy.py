"""References of cross_entropy, cross_entropy2 and softmax_with_cross_entropy (float64)."""
import numpy as np

from ._util import attr, f64


def _pick(values, labels, axis, ignore):
    """values taken at ``labels`` along ``axis`` (labels have size 1 there); 0 where ignored.
    Labels out of range (and not ignored) raise IndexError."""
    labels = np.asarray(labels, dtype=np.int64)
    ignored = labels == ignore
    n = values.shape[axis]
    bad = ~ignored & ((labels < 0) | (labels >= n))
    if bad.any():
        raise IndexError(f"label {labels[bad][0]} out of range for {n} classes")
    safe = np.where(ignored, 0, labels)
    return np.where(ignored, 0.0, np.take_along_axis(values, safe, axis=axis)), ignored


def _hard_labels(x, label):
    """Label as [..., 1] whether it came as [..., 1] or [...]."""
    return label.reshape(x.shape[:-1] + (1,))


def cross_entropy(inputs, attrs):
    x, label = inputs["X"], inputs["Label"]
    if attr(attrs, "soft_label", False):
        y = -(f64(label) * np.log(f64(x))).sum(axis=-1, keepdims=True)
        return {"Y": y.astype(x.dtype)}
    p, ignored = _pick(f64(x), _hard_labels(x, label), -1, attr(attrs, "ignore_index", -100))
    with np.errstate(divide="ignore"):
        y = np.where(ignored, 0.0, -np.log(np.where(ignored, 1.0, p)))
    return {"Y": y.reshape(label.shape).astype(x.dtype)}


def cross_entropy2(inputs, attrs):
    x, label = inputs["X"], inputs["Label"]
    p, ignored = _pick(f64(x), _hard_labels(x, label), -1, attr(attrs, "ignore_index", -100))
    with np.errstate(divide="ignore"):
        y = np.where(ignored, 0.0, -np.log(np.where(ignored, 1.0, p)))
    return {"Y": y.reshape(label.shape).astype(x.dtype), "MatchX": p.astype(x.dtype),
            "XShape": np.empty(x.shape + (0,), x.dtype)}


def softmax_with_cross_entropy(inputs, attrs):
    logits, label = inputs["Logits"], inputs["Label"]
    axis = attr(attrs, "axis", -1) % logits.ndim
    x = f64(logits)
    if attr(attrs, "use_softmax", True):
        shifted = x - x.max(axis=axis, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        sm = np.exp(logp)
    else:
        sm = x
        with np.errstate(divide="ignore", invalid="ignore"):   # log of 0 / of negatives
            logp = np.log(x)
    if attr(attrs, "soft_label", False):
        loss = -(f64(label) * logp).sum(axis=axis, keepdims=True)
    else:
        lp, ignored = _pick(logp, label, axis, attr(attrs, "ignore_index", -100))
        loss = np.where(ignored, 0.0, -lp)
    return {"Softmax": sm.astype(logits.dtype), "Loss": loss.astype(logits.dtype)}


def _probs(rng, shape, dtype):
    p = rng.random(shape) + 0.05
    return (p / p.sum(axis=-1, keepdims=True)).astype(dtype)


def sample_cross_entropy(rng, dtype):
    x = _probs(rng, (6, 5), dtype)
    label = rng.integers(0, 5, (6, 1))
    label[2, 0] = 3
    return {"X": x, "Label": label}, {"ignore_index": 3}


def sample_cross_entropy2(rng, dtype):
    x = _probs(rng, (2, 3, 4), dtype)
    return {"X": x, "Label": rng.integers(0, 4, (2, 3, 1))}, {}


def sample_softmax_with_cross_entropy(rng, dtype):
    logits = (rng.standard_normal((3, 5, 4)) * 3).astype(dtype)
    label = rng.integers(0, 5, (3, 1, 4))
    label[0, 0, 0] = -1
    return {"Logits": logits, "Label": label}, {"axis": 1, "ignore_index": -1}


# -- gradients: the derivatives written out per element, with loops over rows -------------------

def _onehot_rows(labels, n, ignore):
    """Rows and classes of the labels that count (not ignore_index); IndexError if out of range."""
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    rows = []
    for i, lab in enumerate(labels):
        if lab == ignore:
            continue
        if not 0 <= lab < n:
            raise IndexError(f"label {lab} out of range for {n} classes")
        rows.append((i, lab))
    return rows


def cross_entropy_grad(inputs, attrs):
    x, label, dy = inputs["X"], inputs["Label"], inputs["Y@GRAD"]
    xd = f64(x).reshape(-1, x.shape[-1])
    g = f64(dy).reshape(-1)
    assert g.size == xd.shape[0], (dy.shape, x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):   # X 0: inf, as the kernel
        if attr(attrs, "soft_label", False):
            assert label.shape == x.shape
            dx = -f64(label).reshape(xd.shape) * g[:, None] / xd
        else:
            assert label.size == xd.shape[0]
            dx = np.zeros_like(xd)
            for i, c in _onehot_rows(label, xd.shape[1], attr(attrs, "ignore_index", -100)):
                dx[i, c] = -g[i] / xd[i, c]
    return {"X@GRAD": dx.reshape(x.shape).astype(x.dtype)}


def cross_entropy_grad2(inputs, attrs):
    label, match, xshape, dy = (inputs["Label"], inputs["MatchX"], inputs["XShape"],
                                inputs["Y@GRAD"])
    xs = xshape.shape[:-1]
    n, c = int(np.prod(xs[:-1])), xs[-1]
    m, g = f64(match).reshape(-1), f64(dy).reshape(-1)
    assert m.size == g.size == label.size == n
    dx = np.zeros((n, c))
    with np.errstate(divide="ignore", invalid="ignore"):   # MatchX 0: inf, as the kernel
        for i, k in _onehot_rows(label, c, attr(attrs, "ignore_index", -100)):
            dx[i, k] = -g[i] / m[i]
    return {"X@GRAD": dx.reshape(xs).astype(match.dtype)}


def softmax_with_cross_entropy_grad(inputs, attrs):
    label, sm, dl = inputs["Label"], inputs["Softmax"], inputs["Loss@GRAD"]
    axis = attr(attrs, "axis", -1) % sm.ndim
    # Classes last: [rows, C].
    p = np.moveaxis(f64(sm), axis, -1)
    shape = p.shape
    p = p.reshape(-1, shape[-1])
    g = np.moveaxis(f64(dl), axis, -1).reshape(-1)
    use_softmax = attr(attrs, "use_softmax", True)
    if attr(attrs, "soft_label", False):
        lab = np.moveaxis(f64(label), axis, -1).reshape(p.shape)
        if use_softmax:
            dx = (p * lab.sum(axis=1, keepdims=True) - lab) * g[:, None]
        else:
            with np.errstate(divide="ignore", invalid="ignore"):   # p = 0: inf, as the kernel
                dx = -lab * g[:, None] / p
    else:
        lab = np.moveaxis(np.asarray(label), axis, -1).reshape(-1)
        dx = np.zeros_like(p)
        for i, c in _onehot_rows(lab, p.shape[1], attr(attrs, "ignore_index", -100)):
            if use_softmax:
                dx[i] = p[i] * g[i]
                dx[i, c] -= g[i]
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    dx[i, c] = -g[i] / p[i, c]
    dx = np.moveaxis(dx.reshape(shape), -1, axis)
    return {"Logits@GRAD": dx.astype(sm.dtype)}


def sample_cross_entropy_grad(rng, dtype):
    inputs, attrs = sample_cross_entropy(rng, dtype)
    y = cross_entropy(inputs, attrs)["Y"]
    return {**inputs, "Y@GRAD": rng.standard_normal(y.shape).astype(dtype)}, attrs


def sample_cross_entropy_grad2(rng, dtype):
    inputs, attrs = sample_cross_entropy2(rng, dtype)
    inputs["Label"][0, 1, 0] = 2
    attrs = {"ignore_index": 2}
    out = cross_entropy2(inputs, attrs)
    return {"Label": inputs["Label"], "MatchX": out["MatchX"], "XShape": out["XShape"],
            "Y@GRAD": rng.standard_normal(out["Y"].shape).astype(dtype)}, attrs


def sample_softmax_with_cross_entropy_grad(rng, dtype):
    inputs, attrs = sample_softmax_with_cross_entropy(rng, dtype)
    out = softmax_with_cross_entropy(inputs, attrs)
    return {"Label": inputs["Label"], "Softmax": out["Softmax"],
            "Loss@GRAD": rng.standard_normal(out["Loss"].shape).astype(dtype)}, attrs


REFERENCES = {"cross_entropy": cross_entropy, "cross_entropy2": cross_entropy2,
              "softmax_with_cross_entropy": softmax_with_cross_entropy,
              "cross_entropy_grad": cross_entropy_grad,
              "cross_entropy_grad2": cross_entropy_grad2,
              "softmax_with_cross_entropy_grad": softmax_with_cross_entropy_grad}
SAMPLES = {"cross_entropy": sample_cross_entropy, "cross_entropy2": sample_cross_entropy2,
           "softmax_with_cross_entropy": sample_softmax_with_cross_entropy,
           "cross_entropy_grad": sample_cross_entropy_grad,
           "cross_entropy_grad2": sample_cross_entropy_grad2,
           "softmax_with_cross_entropy_grad": sample_softmax_with_cross_entropy_grad}
