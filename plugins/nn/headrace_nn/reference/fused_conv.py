"""Reference of fused_conv2d_add_act: conv2d's reference (Bias, ResidualData), then the
activation, in float64 until the final rounding."""
import numpy as np

from ._util import attr, f64
from .conv import conv2d


def fused_conv2d_add_act(inputs, attrs):
    wide = {k: (None if v is None else f64(v)) for k, v in inputs.items()}
    out = conv2d(wide, attrs)["Output"]
    if attr(attrs, "activation", "relu") == "relu":
        out = np.where(out < 0, 0.0, out)
    return {"Output": out.astype(np.asarray(inputs["Input"]).dtype)}


def sample_fused_conv2d_add_act(rng, dtype):
    x = rng.standard_normal((2, 4, 7, 6)).astype(dtype)
    w = (rng.standard_normal((6, 2, 3, 2)) * 0.5).astype(dtype)
    attrs = {"strides": [2, 1], "paddings": [1, 0, 2, 1], "dilations": [1, 2], "groups": 2,
             "activation": "relu"}
    res = rng.standard_normal((2, 6, 3, 7)).astype(dtype)
    return {"Input": x, "Filter": w, "Bias": rng.standard_normal(6).astype(dtype),
            "ResidualData": res}, attrs


REFERENCES = {"fused_conv2d_add_act": fused_conv2d_add_act}
SAMPLES = {"fused_conv2d_add_act": sample_fused_conv2d_add_act}
