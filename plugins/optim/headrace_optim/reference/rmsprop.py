"""References and samples: rmsprop."""
import numpy as np

from ._util import arrays, base_sample, f32, scalar


def rmsprop(inputs, attrs):
    p, g, ms, mom = arrays(inputs, "Param", "Grad", "MeanSquare", "Moment")
    rho, eps = f32(attrs.get("decay", 0.9)), f32(attrs.get("epsilon", 1e-10))
    mu, lr = f32(attrs.get("momentum", 0.0)), scalar(inputs["LearningRate"])
    ms_out = rho * ms + (1 - rho) * g * g
    out = {"MeanSquareOut": ms_out}
    if attrs.get("centered", False):
        mg_out = rho * np.asarray(inputs["MeanGrad"]) + (1 - rho) * g
        denom = np.sqrt(ms_out - mg_out * mg_out + eps)
        out["MeanGradOut"] = mg_out
    else:
        denom = np.sqrt(ms_out + eps)
        if inputs.get("MeanGrad") is not None:
            out["MeanGradOut"] = np.asarray(inputs["MeanGrad"])  # passed through
    mom_out = mu * mom + lr * g / denom
    out.update(ParamOut=p - mom_out, MomentOut=mom_out)
    return out


def sample_rmsprop(rng, dtype):
    inputs = base_sample(rng, dtype)
    shape = inputs["Param"].shape
    centered = bool(rng.integers(2))
    inputs.update(MeanSquare=rng.random(shape).astype(dtype) + 0.5,
                  Moment=0.1 * rng.standard_normal(shape).astype(dtype))
    if centered:
        inputs["MeanGrad"] = 0.1 * rng.standard_normal(shape).astype(dtype)
    return inputs, {"decay": 0.9, "epsilon": 1e-6, "momentum": float(rng.choice([0.0, 0.5])),
                    "centered": centered}


REFERENCES = {"rmsprop": rmsprop}
SAMPLES = {"rmsprop": sample_rmsprop}
