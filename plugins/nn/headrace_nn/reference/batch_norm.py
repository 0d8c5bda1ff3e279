"""Reference of batch_norm (float64 statistics)."""
import numpy as np

from ._util import attr, attr_f32, f64


def batch_norm(inputs, attrs):
    x = inputs["X"]
    nhwc = attr(attrs, "data_layout", "NCHW") == "NHWC"
    caxis = x.ndim - 1 if nhwc else 1
    axes = tuple(i for i in range(x.ndim) if i != caxis)
    bshape = [1] * x.ndim
    bshape[caxis] = x.shape[caxis]
    scale, bias = f64(inputs["Scale"]), f64(inputs["Bias"])
    mean, var = f64(inputs["Mean"]), f64(inputs["Variance"])
    eps = attr_f32(attrs, "epsilon", 1e-5)
    momentum = attr_f32(attrs, "momentum", 0.9)
    if inputs.get("MomentumTensor") is not None:
        momentum = float(np.asarray(inputs["MomentumTensor"]).reshape(-1)[0])
    pdtype = inputs["Mean"].dtype
    test_mode = attr(attrs, "is_test", False) and not attr(attrs, "trainable_statistics", False)
    if test_mode or attr(attrs, "use_global_stats", False):
        use_mean, use_var = mean, var
        mean_out, var_out = mean, var
        saved_mean = saved_var = np.zeros(x.shape[caxis])
    else:
        xd = f64(x)
        use_mean = xd.mean(axis=axes)
        use_var = ((xd - use_mean.reshape(bshape)) ** 2).mean(axis=axes)
        mean_out = mean * momentum + use_mean * (1 - momentum)
        var_out = var * momentum + use_var * (1 - momentum)
        saved_mean, saved_var = use_mean, 1 / np.sqrt(use_var + eps)
    y = (f64(x) - use_mean.reshape(bshape)) / np.sqrt(use_var.reshape(bshape) + eps)
    y = y * scale.reshape(bshape) + bias.reshape(bshape)
    return {"Y": y.astype(x.dtype), "MeanOut": mean_out.astype(pdtype),
            "VarianceOut": var_out.astype(pdtype), "SavedMean": saved_mean.astype(pdtype),
            "SavedVariance": saved_var.astype(pdtype)}


def sample_batch_norm(rng, dtype):
    c = 3
    x = (rng.standard_normal((4, c, 3, 2)) * 2 + 5).astype(dtype)
    stats = {"Scale": rng.random(c) + 0.5, "Bias": rng.standard_normal(c),
             "Mean": rng.standard_normal(c), "Variance": rng.random(c) + 0.5}
    return {"X": x, **{k: v.astype(dtype) for k, v in stats.items()}}, {"momentum": 0.8}


def batch_norm_grad(inputs, attrs):
    """Y = xhat * Scale + Bias differentiated by hand: the batch statistics' own derivatives
    written out term by term (the mean's and the variance's), then summed."""
    x, dy = f64(inputs["X"]), f64(inputs["Y@GRAD"])
    assert x.shape == dy.shape
    nhwc = attr(attrs, "data_layout", "NCHW") == "NHWC"
    caxis = x.ndim - 1 if nhwc else 1
    axes = tuple(i for i in range(x.ndim) if i != caxis)
    bshape = [1] * x.ndim
    bshape[caxis] = x.shape[caxis]
    scale = f64(inputs["Scale"]).reshape(bshape)
    eps = attr_f32(attrs, "epsilon", 1e-5)
    test_mode = attr(attrs, "is_test", False) and not attr(attrs, "trainable_statistics", False)
    m = x.size // x.shape[caxis]
    if test_mode or attr(attrs, "use_global_stats", False):
        mean = f64(inputs["Mean"]).reshape(bshape)
        inv = 1 / np.sqrt(f64(inputs["Variance"]).reshape(bshape) + eps)
        dx = dy * scale * inv
    else:
        mean = f64(inputs["SavedMean"]).reshape(bshape)
        inv = f64(inputs["SavedVariance"]).reshape(bshape)   # 1/sqrt(var + eps)
        dxhat = dy * scale
        # var = mean((x - mean)^2): d/dvar of xhat = -(x - mean) inv^3 / 2
        dvar = (dxhat * (x - mean) * -0.5 * inv ** 3).sum(axis=axes, keepdims=True)
        dmean = (-dxhat * inv).sum(axis=axes, keepdims=True) \
            + dvar * (-2 * (x - mean)).sum(axis=axes, keepdims=True) / m
        dx = dxhat * inv + dvar * 2 * (x - mean) / m + dmean / m
    xhat = (x - mean) * inv
    pdtype = inputs["Scale"].dtype
    return {"X@GRAD": dx.astype(inputs["X"].dtype),
            "Scale@GRAD": (dy * xhat).sum(axis=axes).astype(pdtype),
            "Bias@GRAD": dy.sum(axis=axes).astype(pdtype)}


def sample_batch_norm_grad(rng, dtype):
    inputs, attrs = sample_batch_norm(rng, dtype)
    out = batch_norm({k: v.copy() for k, v in inputs.items()}, attrs)
    return {**inputs, "SavedMean": out["SavedMean"], "SavedVariance": out["SavedVariance"],
            "Y@GRAD": rng.standard_normal(inputs["X"].shape).astype(dtype)}, attrs


REFERENCES = {"batch_norm": batch_norm, "batch_norm_grad": batch_norm_grad}
SAMPLES = {"batch_norm": sample_batch_norm, "batch_norm_grad": sample_batch_norm_grad}
