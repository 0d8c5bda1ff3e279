"""Reference of group_norm and its gradient: loops over examples and groups in float64."""
import numpy as np

from ._util import attr, f64


def _groups(x, attrs):
    groups = attr(attrs, "groups", 1)
    per = x.shape[1] // groups
    return groups, per


def group_norm(inputs, attrs):
    x = np.asarray(inputs["X"])
    eps = float(np.float32(attr(attrs, "epsilon", 1e-5)))
    groups, per = _groups(x, attrs)
    y = np.zeros(x.shape)
    mean, var = np.zeros((x.shape[0], groups)), np.zeros((x.shape[0], groups))
    for i in range(x.shape[0]):
        for k in range(groups):
            block = f64(x[i, k * per:(k + 1) * per])
            if block.size:
                mean[i, k], var[i, k] = block.mean(), block.var()
            y[i, k * per:(k + 1) * per] = (block - mean[i, k]) / np.sqrt(var[i, k] + eps)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if inputs.get("Scale") is not None:
        y = y * f64(inputs["Scale"]).reshape(shape)
    if inputs.get("Bias") is not None:
        y = y + f64(inputs["Bias"]).reshape(shape)
    return {"Y": y.astype(x.dtype), "Mean": mean.astype(x.dtype), "Variance": var.astype(x.dtype)}


def sample_group_norm(rng, dtype):
    x = rng.standard_normal((2, 6, 3)).astype(dtype)
    inputs = {"X": x}
    if rng.integers(2):
        inputs["Scale"] = rng.standard_normal(6).astype(dtype)
    if rng.integers(2):
        inputs["Bias"] = rng.standard_normal(6).astype(dtype)
    return inputs, {"groups": int(rng.choice([1, 2, 3, 6])), "epsilon": 1e-5}


def group_norm_grad(inputs, attrs):
    x = np.asarray(inputs["X"])
    eps = float(np.float32(attr(attrs, "epsilon", 1e-5)))
    groups, per = _groups(x, attrs)
    dy = f64(inputs["Y@GRAD"])
    s = f64(inputs["Scale"]) if inputs.get("Scale") is not None else np.ones(x.shape[1])
    dx, ds, db = np.zeros(x.shape), np.zeros(x.shape[1]), np.zeros(x.shape[1])
    for i in range(x.shape[0]):
        for k in range(groups):
            sl = slice(k * per, (k + 1) * per)
            inv = 1 / np.sqrt(f64(inputs["Variance"])[i, k] + eps)
            xhat = (f64(x[i, sl]) - f64(inputs["Mean"])[i, k]) * inv
            for c in range(per):
                ds[k * per + c] += (dy[i, k * per + c] * xhat[c]).sum()
                db[k * per + c] += dy[i, k * per + c].sum()
            g = dy[i, sl] * s[sl].reshape((per,) + (1,) * (x.ndim - 2))
            if g.size:
                dx[i, sl] = inv * (g - g.mean() - xhat * (g * xhat).mean())
    out = {"X@GRAD": dx.astype(x.dtype)}
    if inputs.get("Scale") is not None:
        out["Scale@GRAD"] = ds.astype(x.dtype)
    if inputs.get("Bias") is not None:
        out["Bias@GRAD"] = db.astype(x.dtype)
    return out


def sample_group_norm_grad(rng, dtype):
    inputs, attrs = sample_group_norm(rng, dtype)
    fwd = group_norm(inputs, attrs)
    return dict(inputs, Mean=fwd["Mean"], Variance=fwd["Variance"], **{
        "Y@GRAD": rng.standard_normal(inputs["X"].shape).astype(dtype)}), attrs


REFERENCES = {"group_norm": group_norm, "group_norm_grad": group_norm_grad}
SAMPLES = {"group_norm": sample_group_norm, "group_norm_grad": sample_group_norm_grad}
