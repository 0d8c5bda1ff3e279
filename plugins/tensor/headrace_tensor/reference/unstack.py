"""References and samples: unstack, unstack_grad."""
import numpy as np

from ._util import data


def unstack(inputs, attrs):
    x = data(inputs["X"])
    return {"Y": [np.take(x, k, axis=attrs["axis"]) for k in range(attrs["num"])]}


def sample_unstack(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 4, size=3)]
    axis = int(rng.integers(-3, 3))
    return ({"X": rng.standard_normal(shape).astype(dtype)},
            {"axis": axis, "num": shape[axis]})


def unstack_grad(inputs, attrs):
    return {"X@GRAD": np.stack([data(g) for g in inputs["Y@GRAD"]], attrs["axis"])}


def sample_unstack_grad(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 4, size=2)]
    num = int(rng.integers(1, 4))
    axis = int(rng.integers(-3, 3))
    return ({"Y@GRAD": [rng.standard_normal(shape).astype(dtype) for _ in range(num)]},
            {"axis": axis, "num": num})


REFERENCES = {"unstack": unstack, "unstack_grad": unstack_grad}
SAMPLES = {"unstack": sample_unstack, "unstack_grad": sample_unstack_grad}
