"""Reference of fc: act(Input @ W + Bias) in float64, rounded to the input dtype."""
import numpy as np

from ._util import f64, like


def fc(inputs, attrs):
    x, w = np.asarray(inputs["Input"]), np.asarray(inputs["W"])
    n = attrs.get("in_num_col_dims", 1)
    rows = int(np.prod(x.shape[:n]))
    out = f64(x).reshape(rows, -1) @ f64(w)
    if inputs.get("Bias") is not None:
        out = out + f64(inputs["Bias"]).reshape(1, -1)
    if attrs.get("activation_type", "") == "relu":
        out = np.maximum(out, 0.0)
    return {"Out": like(out.reshape(x.shape[:n] + (w.shape[1],)), x)}


def sample_fc(rng, dtype):
    return ({"Input": rng.standard_normal((2, 3, 4)).astype(dtype),
             "W": rng.standard_normal((4, 5)).astype(dtype),
             "Bias": rng.standard_normal(5).astype(dtype)},
            {"in_num_col_dims": 2, "activation_type": "relu"})


REFERENCES = {"fc": fc}
SAMPLES = {"fc": sample_fc}
