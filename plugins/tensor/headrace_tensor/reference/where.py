"""References and samples: where, where_grad."""
import numpy as np

from ._util import data


def where(inputs, attrs):
    return {"Out": np.where(data(inputs["Condition"]), data(inputs["X"]), data(inputs["Y"]))}


def where_grad(inputs, attrs):
    c, g = data(inputs["Condition"]), data(inputs["Out@GRAD"])
    return {"X@GRAD": g * c, "Y@GRAD": g * ~c}


def _sample(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 4)))]
    return (rng.random(shape) < 0.5, rng.standard_normal(shape).astype(dtype),
            rng.standard_normal(shape).astype(dtype))


def sample_where(rng, dtype):
    c, x, y = _sample(rng, dtype)
    return {"Condition": c, "X": x, "Y": y}, {}


def sample_where_grad(rng, dtype):
    c, x, y = _sample(rng, dtype)
    return ({"Condition": c, "X": x, "Y": y,
             "Out@GRAD": rng.standard_normal(x.shape).astype(dtype)}, {})


REFERENCES = {"where": where, "where_grad": where_grad}
SAMPLES = {"where": sample_where, "where_grad": sample_where_grad}
