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


REFERENCES = {"batch_norm": batch_norm}
SAMPLES = {"batch_norm": sample_batch_norm}
