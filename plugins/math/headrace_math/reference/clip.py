"""References of clip, clip_grad, clip_by_norm, squared_l2_norm and its gradient."""
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


# -- clip_by_norm, squared_l2_norm ----------------------------------------------------------------

def _float_x(op, x):
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: X must be float32 or float64, got {x.dtype}")
    return x


def clip_by_norm(inputs, attrs):
    x = _float_x("clip_by_norm", np.asarray(inputs["X"]))
    t = x.dtype.type
    # In X's type, as Paddle computes it (the norm from a float64 sum of squares).
    norm, max_norm = t(np.sqrt(np.sum(f64(x) ** 2))), t(fattr(attrs, "max_norm", 1.0))
    if norm <= max_norm:
        return {"Out": x.copy()}
    eps = t(1e-6) if norm <= t(1e-30) else t(0)
    return {"Out": (x * t(max_norm / (norm + eps))).astype(x.dtype)}


def squared_l2_norm(inputs, attrs):
    x = _float_x("squared_l2_norm", np.asarray(inputs["X"]))
    return {"Out": np.array([np.sum(f64(x) ** 2)], x.dtype)}


def squared_l2_norm_grad(inputs, attrs):
    x = _float_x("squared_l2_norm_grad", np.asarray(inputs["X"]))
    g = np.asarray(inputs["Out@GRAD"])
    if g.size != 1 or g.dtype != x.dtype:
        raise ValueError(f"squared_l2_norm_grad: Out@GRAD must be one {x.dtype} element, got "
                         f"{g.dtype}{list(g.shape)}")
    return {"X@GRAD": (x * (2 * g.reshape(()))).astype(x.dtype)}


def sample_clip_by_norm(rng, dtype):
    x = rng.standard_normal((3, 4)).astype(dtype)
    # Below the norm (scaled) or above it (left as it is).
    return {"X": x}, {"max_norm": float(rng.choice([0.5, 100.0]))}


def sample_squared_l2_norm(rng, dtype):
    return {"X": rng.standard_normal((3, 4)).astype(dtype)}, {}


def sample_squared_l2_norm_grad(rng, dtype):
    inputs, attrs = sample_squared_l2_norm(rng, dtype)
    inputs["Out@GRAD"] = rng.standard_normal(1).astype(dtype)
    return inputs, attrs


REFERENCES = {"clip": clip, "clip_grad": clip_grad, "clip_by_norm": clip_by_norm,
              "squared_l2_norm": squared_l2_norm, "squared_l2_norm_grad": squared_l2_norm_grad}
SAMPLES = {"clip": sample_clip, "clip_grad": sample_clip_grad,
           "clip_by_norm": sample_clip_by_norm, "squared_l2_norm": sample_squared_l2_norm,
           "squared_l2_norm_grad": sample_squared_l2_norm_grad}
