"""References and samples: adagrad."""
import numpy as np

from ._util import arrays, base_sample, f32, scalar


def adagrad(inputs, attrs):
    p, g, m = arrays(inputs, "Param", "Grad", "Moment")
    m_out = m + g * g
    p_out = p - scalar(inputs["LearningRate"]) * g / (np.sqrt(m_out) +
                                                      f32(attrs.get("epsilon", 1e-6)))
    return {"ParamOut": p_out, "MomentOut": m_out}


def sample_adagrad(rng, dtype):
    inputs = base_sample(rng, dtype)
    inputs["Moment"] = rng.random(inputs["Param"].shape).astype(dtype)
    return inputs, {"epsilon": 1e-6}


REFERENCES = {"adagrad": adagrad}
SAMPLES = {"adagrad": sample_adagrad}
