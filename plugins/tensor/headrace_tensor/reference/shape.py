"""References and samples: shape."""
import numpy as np

from ._util import data


def shape(inputs, attrs):
    return {"Out": np.asarray(data(inputs["Input"]).shape, dtype=np.int32).reshape(-1)}


def sample_shape(rng, dtype):
    dims = [int(d) for d in rng.integers(0, 4, size=int(rng.integers(0, 4)))]
    return {"Input": rng.standard_normal(dims).astype(dtype)}, {}


REFERENCES = {"shape": shape}
SAMPLES = {"shape": sample_shape}
