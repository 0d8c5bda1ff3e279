"""Reference of norm (l2_normalize) and its gradient, in float64 with explicit loops over the
normalized slices."""
import numpy as np

from ._util import attr, f64


def norm(inputs, attrs):
    x = np.asarray(inputs["X"])
    axis = attr(attrs, "axis", 1) % x.ndim
    eps = float(np.float32(attr(attrs, "epsilon", 1e-10)))
    moved = np.moveaxis(f64(x), axis, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.size else \
        np.zeros((int(np.prod(moved.shape[:-1])), moved.shape[-1]))
    n = np.array([np.sqrt(np.dot(v, v) + eps) for v in flat])
    n = n.reshape(moved.shape[:-1] + (1,))
    out = np.moveaxis(moved / n, -1, axis)
    return {"Out": out.astype(x.dtype), "Norm": np.moveaxis(n, -1, axis).astype(x.dtype)}


def sample_norm(rng, dtype):
    return {"X": rng.standard_normal((3, 4, 2)).astype(dtype)}, \
        {"axis": int(rng.integers(-3, 3)), "epsilon": 1e-10}


def norm_grad(inputs, attrs):
    x = np.asarray(inputs["X"])
    axis = attr(attrs, "axis", 1) % x.ndim
    n = f64(inputs["Norm"])
    g = f64(inputs["Out@GRAD"])
    with np.errstate(divide="ignore", invalid="ignore"):
        out = f64(x) / n
        dx = (g - out * (g * out).sum(axis=axis, keepdims=True)) / n
    return {"X@GRAD": dx.astype(x.dtype)}


def sample_norm_grad(rng, dtype):
    inputs, attrs = sample_norm(rng, dtype)
    fwd = norm(inputs, attrs)
    return dict(inputs, Norm=fwd["Norm"], **{"Out@GRAD": rng.standard_normal(
        inputs["X"].shape).astype(dtype)}), attrs


REFERENCES = {"norm": norm, "norm_grad": norm_grad}
SAMPLES = {"norm": sample_norm, "norm_grad": sample_norm_grad}
