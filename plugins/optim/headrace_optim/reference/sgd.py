"""References and samples: sgd."""
from ._util import arrays, base_sample, scalar


def sgd(inputs, attrs):
    p, g = arrays(inputs, "Param", "Grad")
    return {"ParamOut": p - scalar(inputs["LearningRate"]) * g}


def sample_sgd(rng, dtype):
    return base_sample(rng, dtype), {}


REFERENCES = {"sgd": sgd}
SAMPLES = {"sgd": sample_sgd}
