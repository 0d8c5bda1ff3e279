"""References and samples: transpose2, transpose2_grad."""
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


def transpose2_grad(inputs, attrs):
    """Out@GRAD transposed back: by the inverse (argsort) of the permutation."""
    g = data(inputs["Out@GRAD"])
    rank = data(inputs["XShape"]).ndim - 1
    perm = [a % rank for a in attrs["axis"]] if rank else []
    assert sorted(perm) == list(range(rank)), (attrs["axis"], rank)
    assert g.shape == tuple(data(inputs["XShape"]).shape[1 + a] for a in perm)
    return {"X@GRAD": np.transpose(g, np.argsort(perm))}


def sample_transpose2_grad(rng, dtype):
    inputs, attrs = sample_transpose2(rng, dtype)
    x = inputs["X"]
    out_shape = np.transpose(x, attrs["axis"]).shape
    return ({"XShape": np.empty((0,) + x.shape, dtype),
             "Out@GRAD": rng.standard_normal(out_shape).astype(dtype)}, attrs)


REFERENCES = {"transpose2": transpose2, "transpose2_grad": transpose2_grad}
SAMPLES = {"transpose2": sample_transpose2, "transpose2_grad": sample_transpose2_grad}
