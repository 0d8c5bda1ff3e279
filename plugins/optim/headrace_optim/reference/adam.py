"""References and samples: adam, adamw."""
import math

import numpy as np

from ._util import arrays, base_sample, f32, scalar


def _unchanged(inputs, attrs):
    """SkipUpdate: every output is its input."""
    slots = ["Param", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"] + \
        (["Moment2Max"] if attrs.get("amsgrad", False) else [])
    return {s + "Out": np.array(inputs[s]) for s in slots}


def adam(inputs, attrs):
    if inputs.get("MasterParam") is not None:
        raise ValueError("adam: MasterParam is not supported")
    if inputs.get("SkipUpdate") is not None and bool(np.asarray(inputs["SkipUpdate"]).all()):
        return _unchanged(inputs, attrs)
    p, g, m1, m2 = arrays(inputs, "Param", "Grad", "Moment1", "Moment2")
    if attrs.get("with_decay", False):     # adamw: the decoupled decay first
        lr = np.asarray(inputs["LearningRate"]).reshape(-1)[0]
        p = p - lr * f32(attrs.get("lr_ratio", 1.0)) * f32(attrs.get("coeff", 0.01)) * p
    b1, b2 = f32(attrs.get("beta1", 0.9)), f32(attrs.get("beta2", 0.999))
    eps = f32(attrs.get("epsilon", 1e-8))
    # Paddle 3's tensors take precedence over the attributes.
    for name, slot in (("b1", "Beta1Tensor"), ("b2", "Beta2Tensor"), ("eps", "EpsilonTensor")):
        if inputs.get(slot) is not None:
            value = scalar(inputs[slot])
            b1, b2, eps = (value if name == "b1" else b1, value if name == "b2" else b2,
                           value if name == "eps" else eps)
    lr = scalar(inputs["LearningRate"])
    b1p, b2p = scalar(inputs["Beta1Pow"]), scalar(inputs["Beta2Pow"])
    m1_out = b1 * m1 + (1 - b1) * g
    m2_out = b2 * m2 + (1 - b2) * g * g
    lr_t = lr * math.sqrt(1 - b2p) / (1 - b1p)
    second = m2_out
    if attrs.get("amsgrad", False):       # the running maximum takes Moment2Out's place
        if inputs.get("Moment2Max") is None:
            raise ValueError("adam: amsgrad needs Moment2Max")
        second = np.maximum(np.asarray(inputs["Moment2Max"]), m2_out)
    p_out = p - lr_t * m1_out / (np.sqrt(second) + eps * math.sqrt(1 - b2p))
    more = {"Moment2MaxOut": second} if attrs.get("amsgrad", False) else {}
    b1p_in, b2p_in = np.asarray(inputs["Beta1Pow"]), np.asarray(inputs["Beta2Pow"])
    if attrs.get("use_global_beta_pow", False):
        return {"ParamOut": p_out, "Moment1Out": m1_out, "Moment2Out": m2_out,
                "Beta1PowOut": b1p_in, "Beta2PowOut": b2p_in, **more}
    return {"ParamOut": p_out, "Moment1Out": m1_out, "Moment2Out": m2_out,
            "Beta1PowOut": b1p_in * b1p_in.dtype.type(b1),
            "Beta2PowOut": b2p_in * b2p_in.dtype.type(b2), **more}


def sample_adam(rng, dtype):
    inputs = base_sample(rng, dtype)
    shape = inputs["Param"].shape
    t = int(rng.integers(1, 20))  # the step: the powers are beta^t
    inputs.update(Moment1=0.1 * rng.standard_normal(shape).astype(dtype),
                  Moment2=0.1 * rng.random(shape).astype(dtype),
                  Beta1Pow=np.array([f32(0.9) ** t], dtype),
                  Beta2Pow=np.array([f32(0.999) ** t], dtype))
    return inputs, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}


def sample_adamw(rng, dtype):
    inputs, attrs = sample_adam(rng, dtype)
    return inputs, {**attrs, "coeff": 0.05, "lr_ratio": 0.5, "with_decay": True}


REFERENCES = {"adam": adam, "adamw": adam}
SAMPLES = {"adam": sample_adam, "adamw": sample_adamw}
