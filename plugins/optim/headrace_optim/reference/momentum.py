"""References and samples: momentum."""
from ._util import arrays, base_sample, f32, scalar


def momentum(inputs, attrs):
    p, g, v = arrays(inputs, "Param", "Grad", "Velocity")
    lr, mu = scalar(inputs["LearningRate"]), f32(attrs["mu"])
    g = g * f32(attrs.get("rescale_grad", 1.0))
    if attrs.get("regularization_method", "") == "l2_decay":
        g = g + f32(attrs.get("regularization_coeff", 0.0)) * p
    v_out = mu * v + g
    if attrs.get("use_nesterov", False):
        p_out = p - lr * (g + mu * v_out)
    else:
        p_out = p - lr * v_out
    return {"ParamOut": p_out, "VelocityOut": v_out}


def sample_momentum(rng, dtype):
    inputs = base_sample(rng, dtype)
    inputs["Velocity"] = rng.standard_normal(inputs["Param"].shape).astype(dtype)
    attrs = {"mu": 0.9, "use_nesterov": bool(rng.integers(2))}
    if rng.random() < 0.5:
        attrs.update(regularization_method="l2_decay", regularization_coeff=0.01)
    return inputs, attrs


REFERENCES = {"momentum": momentum}
SAMPLES = {"momentum": sample_momentum}
