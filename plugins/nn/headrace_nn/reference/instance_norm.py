"""Reference of instance_norm and its gradient: group_norm's reference with one group per
channel (Paddle keeps the inverse standard deviation as SavedVariance)."""
import numpy as np

from ._util import attr, f64
from .group_norm import group_norm, group_norm_grad


def instance_norm(inputs, attrs):
    x = np.asarray(inputs["X"])
    eps = float(np.float32(attr(attrs, "epsilon", 1e-5)))
    out = group_norm(inputs, {"groups": x.shape[1], "epsilon": eps})
    var = f64(out["Variance"]).reshape(-1)
    return {"Y": out["Y"], "SavedMean": out["Mean"].reshape(-1),
            "SavedVariance": (1 / np.sqrt(var + eps)).astype(x.dtype)}


def sample_instance_norm(rng, dtype):
    inputs = {"X": rng.standard_normal((2, 3, 4)).astype(dtype)}
    if rng.integers(2):
        inputs["Scale"] = rng.standard_normal(3).astype(dtype)
    if rng.integers(2):
        inputs["Bias"] = rng.standard_normal(3).astype(dtype)
    return inputs, {"epsilon": 1e-5}


def instance_norm_grad(inputs, attrs):
    x = np.asarray(inputs["X"])
    eps = float(np.float32(attr(attrs, "epsilon", 1e-5)))
    inv = f64(inputs["SavedVariance"])
    var = (1 / (inv * inv) - eps).reshape(x.shape[0], x.shape[1])
    grouped = dict(inputs, Mean=f64(inputs["SavedMean"]).reshape(x.shape[0], x.shape[1]),
                   Variance=var)
    return group_norm_grad(grouped, {"groups": x.shape[1], "epsilon": eps})


def sample_instance_norm_grad(rng, dtype):
    inputs, attrs = sample_instance_norm(rng, dtype)
    fwd = instance_norm(inputs, attrs)
    return dict(inputs, SavedMean=fwd["SavedMean"], SavedVariance=fwd["SavedVariance"], **{
        "Y@GRAD": rng.standard_normal(inputs["X"].shape).astype(dtype)}), attrs


REFERENCES = {"instance_norm": instance_norm, "instance_norm_grad": instance_norm_grad}
SAMPLES = {"instance_norm": sample_instance_norm,
           "instance_norm_grad": sample_instance_norm_grad}
