"""Reference of dropout.

Test mode is deterministic. Training is reproducible only from a seed (the Seed input, or the
seed attribute with fix_seed / a nonzero seed): the kernels' documented stream is
``numpy.random.default_rng(seed).random(X.size, dtype=X.dtype)``, an element kept when the
number is >= dropout_prob. Without a seed there is nothing to compare against: the outputs are
None (the op's own tests check them statistically).
"""
import numpy as np

from ._util import attr, attr_f32


def dropout(inputs, attrs):
    x = inputs["X"]
    p = attr_f32(attrs, "dropout_prob", 0.5)
    upscale = attr(attrs, "dropout_implementation", "downgrade_in_infer") == "upscale_in_train"
    if attr(attrs, "is_test", False):
        out = x.copy() if upscale else (x * (1.0 - p)).astype(x.dtype)
        return {"Out": out, "Mask": np.ones(x.shape, np.uint8)}
    if inputs.get("Seed") is not None:
        seed = int(np.asarray(inputs["Seed"]).reshape(-1)[0])
    elif attr(attrs, "fix_seed", False) or attr(attrs, "seed", 0):
        seed = attr(attrs, "seed", 0)
    else:
        return {"Out": None, "Mask": None}   # not reproducible without a seed
    u = np.random.default_rng(seed & 0xFFFFFFFFFFFFFFFF).random(x.size, dtype=x.dtype)
    keep = (u >= np.asarray(p, x.dtype)).reshape(x.shape)
    scale = 1.0 / (1.0 - p) if upscale and p < 1.0 else 1.0
    out = np.where(keep, x * np.asarray(scale, x.dtype), np.zeros((), x.dtype))
    return {"Out": out.astype(x.dtype), "Mask": keep.astype(np.uint8)}


def sample_dropout(rng, dtype):
    x = rng.standard_normal((5, 8)).astype(dtype)
    return {"X": x}, {"dropout_prob": 0.3, "fix_seed": True, "seed": 11,
                      "dropout_implementation": "upscale_in_train"}


def dropout_grad(inputs, attrs):
    mask, g = inputs["Mask"], inputs["Out@GRAD"]
    assert mask.shape == g.shape and mask.dtype == np.uint8
    p = attr_f32(attrs, "dropout_prob", 0.5)
    upscale = attr(attrs, "dropout_implementation", "downgrade_in_infer") == "upscale_in_train"
    if attr(attrs, "is_test", False):
        return {"X@GRAD": g.copy() if upscale else (g * (1.0 - p)).astype(g.dtype)}
    scale = 1.0 / (1.0 - p) if upscale and p < 1.0 else 1.0
    dx = np.where(mask != 0, g * np.asarray(scale, g.dtype), np.zeros((), g.dtype))
    return {"X@GRAD": dx.astype(g.dtype)}


def sample_dropout_grad(rng, dtype):
    inputs, attrs = sample_dropout(rng, dtype)
    mask = dropout(inputs, attrs)["Mask"]
    return {"Mask": mask, "Out@GRAD": rng.standard_normal(mask.shape).astype(dtype)}, attrs


REFERENCES = {"dropout": dropout, "dropout_grad": dropout_grad}
SAMPLES = {"dropout": sample_dropout, "dropout_grad": sample_dropout_grad}
