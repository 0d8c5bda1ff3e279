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
        with np.errstate(divide="ignore"):
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


REFERENCES = {"cross_entropy": cross_entropy, "cross_entropy2": cross_entropy2,
              "softmax_with_cross_entropy": softmax_with_cross_entropy}
SAMPLES = {"cross_entropy": sample_cross_entropy, "cross_entropy2": sample_cross_entropy2,
           "softmax_with_cross_entropy": sample_softmax_with_cross_entropy}
