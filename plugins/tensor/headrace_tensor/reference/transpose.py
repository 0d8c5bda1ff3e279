"""References and samples: transpose2."""
import numpy as np

from ._util import data


def transpose2(inputs, attrs):
    x = data(inputs["X"])
    return {"Out": np.transpose(x, attrs["axis"]), "XShape": np.empty((0,) + x.shape, x.dtype)}


def sample_transpose2(rng, dtype):
    shape = [(5, 7), (2, 3, 4), (2, 3, 4, 5), (3, 1, 4, 2)][rng.integers(4)]
    x = rng.standard_normal(shape).astype(dtype)
    axis = [int(a) for a in rng.permutation(len(shape))]
    if rng.random() < 0.5:
        axis[0] -= len(shape)  # negative entries count from the end
    return {"X": x}, {"axis": axis}


REFERENCES = {"transpose2": transpose2}
SAMPLES = {"transpose2": sample_transpose2}
