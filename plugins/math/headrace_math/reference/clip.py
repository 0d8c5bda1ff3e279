"""References of clip and clip_grad."""
import numpy as np

from ._util import f64, fattr

_FLT_MAX = 3.4028234663852886e38


def _bounds(inputs, attrs):
    lo = fattr(attrs, "min", -_FLT_MAX)
    hi = fattr(attrs, "max", _FLT_MAX)
    if inputs.get("Min") is not None:
        lo = float(np.asarray(inputs["Min"]).reshape(-1)[0])
    if inputs.get("Max") is not None:
        hi = float(np.asarray(inputs["Max"]).reshape(-1)[0])
    return lo, hi


def clip(inputs, attrs):
    x = np.asarray(inputs["X"])
    lo, hi = _bounds(inputs, attrs)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        lo, hi = (int(min(max(np.trunc(b), info.min), info.max)) for b in (lo, hi))
    # Bounds rounded to X's dtype first: the kernel compares in X's type.
    lo, hi = np.asarray(lo).astype(x.dtype), np.asarray(hi).astype(x.dtype)
    return {"Out": np.minimum(np.maximum(x, lo), hi).astype(x.dtype)}


def clip_grad(inputs, attrs):
    x, g = np.asarray(inputs["X"]), np.asarray(inputs["Out@GRAD"])
    lo, hi = (np.asarray(b).astype(x.dtype) for b in _bounds(inputs, attrs))
    inside = (x > lo) & (x < hi)
    out = {"X@GRAD": np.where(inside, g, 0).astype(g.dtype)}
    for slot, mask in (("Min", x < lo), ("Max", x > hi)):
        if inputs.get(slot) is not None:
            out[slot + "@GRAD"] = np.full(np.shape(inputs[slot]), f64(g)[mask].sum(), g.dtype)
    return out


def _sample(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4)))]
    x = rng.standard_normal(shape).astype(dtype)
    lo, hi = sorted(float(v) for v in rng.uniform(-1, 1, size=2))
    inputs, attrs = {"X": x}, {"min": lo, "max": hi}
    if rng.random() < 0.4:
        inputs["Min"] = np.array([lo], dtype)
    if rng.random() < 0.4:
        inputs["Max"] = np.array([hi], dtype)
    return inputs, attrs


def sample_clip(rng, dtype):
    return _sample(rng, dtype)


def sample_clip_grad(rng, dtype):
    inputs, attrs = _sample(rng, dtype)
    inputs["Out@GRAD"] = rng.standard_normal(inputs["X"].shape).astype(dtype)
    # slot order of clip_grad: X, Min, Max, Out@GRAD
    return {s: inputs[s] for s in ("X", "Min", "Max", "Out@GRAD") if s in inputs}, attrs


REFERENCES = {"clip": clip, "clip_grad": clip_grad}
SAMPLES = {"clip": sample_clip, "clip_grad": sample_clip_grad}
