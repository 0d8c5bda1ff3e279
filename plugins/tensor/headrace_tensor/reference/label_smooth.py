"""References and samples: label_smooth, label_smooth_grad (Paddle's float32 coefficients)."""
import numpy as np

from ._util import data, f32

FLOATS = ("float32", "float64")


def _coefficient(attrs):
    return np.float32(1.0) - np.float32(f32(attrs.get("epsilon", 0.0)))


def label_smooth(inputs, attrs):
    x = data(inputs["X"])
    if x.dtype.name not in FLOATS or x.ndim == 0:
        raise TypeError("X must be a float tensor of rank >= 1")
    eps = np.float32(f32(attrs.get("epsilon", 0.0)))
    classes = x.shape[-1]
    if inputs.get("PriorDist") is not None:
        prior = data(inputs["PriorDist"])
        if prior.dtype != x.dtype or prior.size != classes:
            raise ValueError("PriorDist must hold one value of X's dtype per class")
        spread = x.dtype.type(eps) * prior.reshape((1,) * (x.ndim - 1) + (classes,))
    else:
        spread = x.dtype.type(eps / np.float32(classes)) if classes else x.dtype.type(0)
    return {"Out": (x.dtype.type(_coefficient(attrs)) * x + spread).astype(x.dtype)}


def label_smooth_grad(inputs, attrs):
    g = data(inputs["Out@GRAD"])
    if g.dtype.name not in FLOATS:
        raise TypeError("Out@GRAD must be float")
    return {"X@GRAD": (g.dtype.type(_coefficient(attrs)) * g).astype(g.dtype)}


def sample_label_smooth(rng, dtype):
    classes = int(rng.integers(1, 6))
    lead = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3)))]
    labels = rng.integers(0, classes, size=lead)
    x = np.eye(classes, dtype=dtype)[labels]
    attrs = {"epsilon": float(rng.choice([0.1, 0.25, 0.0]))}
    if rng.integers(2):
        prior = rng.random(classes)
        shape = [1, classes] if rng.integers(2) else [classes]
        return {"X": x, "PriorDist": (prior / prior.sum()).reshape(shape).astype(dtype)}, attrs
    return {"X": x}, attrs


def sample_label_smooth_grad(rng, dtype):
    inputs, attrs = sample_label_smooth(rng, dtype)
    return {"Out@GRAD": rng.standard_normal(inputs["X"].shape).astype(dtype)}, attrs


REFERENCES = {"label_smooth": label_smooth, "label_smooth_grad": label_smooth_grad}
SAMPLES = {"label_smooth": sample_label_smooth, "label_smooth_grad": sample_label_smooth_grad}
