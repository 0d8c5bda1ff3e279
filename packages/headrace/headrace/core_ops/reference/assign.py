"""References and samples: assign."""
import numpy as np

from ._util import data


def assign(inputs, attrs):
    return {"Out": np.array(data(inputs["X"]), copy=True)}


def sample_assign(rng, dtype):
    return {"X": rng.standard_normal((2, 3, 2)).astype(dtype)}, {}


REFERENCES = {"assign": assign}
SAMPLES = {"assign": sample_assign}
