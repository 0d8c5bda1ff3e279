"""Reference of layer_norm and its gradient, in float64 over the rows."""
import numpy as np

from ._util import attr, f64


def _rows(x, attrs):
    axis = attr(attrs, "begin_norm_axis", 1)
    left = int(np.prod(x.shape[:axis], dtype=np.int64))
    return f64(x).reshape(left, -1)


def layer_norm(inputs, attrs):
    x = np.asarray(inputs["X"])
    rows = _rows(x, attrs)
    eps = float(np.float32(attr(attrs, "epsilon", 1e-5)))
    mean, var = rows.mean(axis=1), rows.var(axis=1)
    y = (rows - mean[:, None]) / np.sqrt(var[:, None] + eps)
    if inputs.get("Scale") is not None:
        y = y * f64(inputs["Scale"]).reshape(-1)
    if inputs.get("Bias") is not None:
        y = y + f64(inputs["Bias"]).reshape(-1)
    return {"Y": y.reshape(x.shape).astype(x.dtype), "Mean": mean.astype(x.dtype),
            "Variance": var.astype(x.dtype)}


def sample_layer_norm(rng, dtype):
    x = rng.standard_normal((3, 2, 4)).astype(dtype)
    axis = int(rng.integers(1, 3))
    right = int(np.prod(x.shape[axis:]))
    inputs = {"X": x}
    if rng.integers(2):
        inputs["Scale"] = rng.standard_normal(right).astype(dtype)
    if rng.integers(2):
        inputs["Bias"] = rng.standard_normal(right).astype(dtype)
    return inputs, {"begin_norm_axis": axis, "epsilon": 1e-5}


def layer_norm_grad(inputs, attrs):
    """Y = xhat * s + b per row: dX = inv * (g - mean(g) - xhat * mean(g * xhat)), g = dY * s."""
    x = np.asarray(inputs["X"])
    rows = _rows(x, attrs)
    eps = float(np.float32(attr(attrs, "epsilon", 1e-5)))
    mean = f64(inputs["Mean"]).reshape(-1, 1)
    with np.errstate(invalid="ignore"):  # a (fuzzed) negative variance: NaN, as the kernel
        inv = 1 / np.sqrt(f64(inputs["Variance"]).reshape(-1, 1) + eps)
    xhat = (rows - mean) * inv
    dy = f64(inputs["Y@GRAD"]).reshape(rows.shape)
    s = f64(inputs["Scale"]).reshape(-1) if inputs.get("Scale") is not None else 1.0
    g = dy * s
    dx = inv * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1,
                                                                          keepdims=True))
    out = {"X@GRAD": dx.reshape(x.shape).astype(x.dtype)}
    if inputs.get("Scale") is not None:
        out["Scale@GRAD"] = (dy * xhat).sum(axis=0).reshape(np.shape(inputs["Scale"])) \
            .astype(x.dtype)
    if inputs.get("Bias") is not None:
        out["Bias@GRAD"] = dy.sum(axis=0).reshape(np.shape(inputs["Bias"])).astype(x.dtype)
    return out


def sample_layer_norm_grad(rng, dtype):
    inputs, attrs = sample_layer_norm(rng, dtype)
    fwd = layer_norm(inputs, attrs)
    return dict(inputs, Mean=fwd["Mean"], Variance=fwd["Variance"],
                **{"Y@GRAD": rng.standard_normal(inputs["X"].shape).astype(dtype)}), attrs


REFERENCES = {"layer_norm": layer_norm, "layer_norm_grad": layer_norm_grad}
SAMPLES = {"layer_norm": sample_layer_norm, "layer_norm_grad": sample_layer_norm_grad}
