"""Reference of softmax: exp(x - max) / sum along the axis, in float64."""
import numpy as np

from ._util import attr, f64


def softmax(inputs, attrs):
    x = inputs["X"]
    if x.ndim == 0:
        return {"Out": np.ones_like(x)}
    if x.size == 0:
        return {"Out": x.copy()}
    xd = f64(x)
    axis = attr(attrs, "axis", -1)
    e = np.exp(xd - xd.max(axis=axis, keepdims=True))
    return {"Out": (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)}


def sample_softmax(rng, dtype):
    # A large offset: a softmax that skips the max subtraction overflows in float32.
    x = rng.standard_normal((3, 4, 5)) * 4 + 60
    return {"X": x.astype(dtype)}, {"axis": 1}


REFERENCES = {"softmax": softmax}
SAMPLES = {"softmax": sample_softmax}


def softmax_grad(inputs, attrs):
    y, dy = f64(inputs["Out"]), f64(inputs["Out@GRAD"])
    assert y.shape == dy.shape, (y.shape, dy.shape)
    if y.ndim == 0:
        return {"X@GRAD": np.zeros_like(inputs["Out"])}
    axis = attr(attrs, "axis", -1)
    dx = y * (dy - (y * dy).sum(axis=axis, keepdims=True))
    return {"X@GRAD": dx.astype(inputs["Out"].dtype)}


def sample_softmax_grad(rng, dtype):
    inputs, attrs = sample_softmax(rng, dtype)
    y = softmax(inputs, attrs)["Out"]
    return {"Out": y, "Out@GRAD": rng.standard_normal(y.shape).astype(dtype)}, attrs


REFERENCES["softmax_grad"] = softmax_grad
SAMPLES["softmax_grad"] = sample_softmax_grad
