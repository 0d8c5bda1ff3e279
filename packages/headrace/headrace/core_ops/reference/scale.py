"""Reference of scale: Out = scale * X + bias, or scale * (X + bias)."""
import numpy as np

from ._util import fattr


def scale(inputs, attrs):
    x = np.asarray(inputs["X"])
    # The kernel computes in X's dtype with the attributes rounded to it; so does NumPy here.
    s, b = x.dtype.type(fattr(attrs, "scale", 1.0)), x.dtype.type(fattr(attrs, "bias", 0.0))
    out = s * x + b if attrs.get("bias_after_scale", True) else s * (x + b)
    return {"Out": np.asarray(out, dtype=x.dtype)}


def sample_scale(rng, dtype):
    return ({"X": rng.standard_normal((3, 4)).astype(dtype)},
            {"scale": 2.5, "bias": -0.5, "bias_after_scale": bool(rng.integers(2))})


REFERENCES = {"scale": scale}
SAMPLES = {"scale": sample_scale}
