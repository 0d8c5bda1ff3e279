"""References and samples: gather, gather_grad, gather_nd, gather_nd_grad."""
import numpy as np

from ._util import data


def _axis(inputs, attrs):
    if inputs.get("Axis") is not None:
        return int(np.asarray(data(inputs["Axis"])).reshape(-1)[0])
    return attrs["axis"]


def _index(inputs):
    idx = np.asarray(data(inputs["Index"])).astype(np.int64)
    return idx if idx.ndim == 0 else idx.reshape(-1)


def gather(inputs, attrs):
    return {"Out": np.take(data(inputs["X"]), _index(inputs), axis=_axis(inputs, attrs))}


def gather_grad(inputs, attrs):
    x, g = data(inputs["X"]), data(inputs["Out@GRAD"])
    axis = _axis(inputs, attrs) % x.ndim
    dx = np.zeros(x.shape, g.dtype)
    idx = _index(inputs)
    if idx.ndim == 0:  # a 0-D Index removed the axis: put it back with one slice
        idx, g = idx.reshape(1), np.expand_dims(g, axis)
    # moveaxis gives a view: the adds land in dx
    np.add.at(np.moveaxis(dx, axis, 0), idx, np.moveaxis(g, axis, 0))
    return {"X@GRAD": dx}


def _gather_sample(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 5, size=3)]
    axis = int(rng.integers(-3, 3))
    n = int(rng.integers(1, 6))
    index = rng.integers(0, shape[axis], size=n).astype(rng.choice(["int32", "int64"]))
    if rng.random() < 0.3:
        index = index.reshape(n, 1)
    x = rng.standard_normal(shape).astype(dtype)
    return x, index, axis


def sample_gather(rng, dtype):
    x, index, axis = _gather_sample(rng, dtype)
    return {"X": x, "Index": index}, {"axis": axis}


def sample_gather_grad(rng, dtype):
    x, index, axis = _gather_sample(rng, dtype)
    out = np.take(x, index.reshape(-1), axis=axis)
    return ({"X": x, "Index": index, "Out@GRAD": rng.standard_normal(out.shape).astype(dtype)},
            {"axis": axis})


def _nd_index(idx):
    idx = np.asarray(idx).astype(np.int64)
    return tuple(np.moveaxis(idx, -1, 0))


def gather_nd(inputs, attrs):
    x, idx = data(inputs["X"]), np.asarray(data(inputs["Index"]))
    if idx.shape[-1] == 0:
        return {"Out": np.broadcast_to(x, idx.shape[:-1] + x.shape).copy()}
    return {"Out": x[_nd_index(idx)]}


def gather_nd_grad(inputs, attrs):
    x, idx, g = data(inputs["X"]), np.asarray(data(inputs["Index"])), data(inputs["Out@GRAD"])
    dx = np.zeros(x.shape, g.dtype)
    if idx.shape[-1] == 0:
        dx += g.reshape((-1,) + x.shape).sum(axis=0)
    else:
        np.add.at(dx, _nd_index(idx), g)
    return {"X@GRAD": dx}


def _nd_sample(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 4, size=3)]
    k = int(rng.integers(0, 4))
    lead = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(1, 3)))]
    index = np.stack([rng.integers(0, shape[j], size=lead) for j in range(k)], axis=-1) \
        if k else np.zeros(lead + [0], np.int64)
    return rng.standard_normal(shape).astype(dtype), index.astype(rng.choice(["int32", "int64"]))


def sample_gather_nd(rng, dtype):
    x, index = _nd_sample(rng, dtype)
    return {"X": x, "Index": index}, {}


def sample_gather_nd_grad(rng, dtype):
    x, index = _nd_sample(rng, dtype)
    out = gather_nd({"X": x, "Index": index}, {})["Out"]
    return ({"X": x, "Index": index, "Out@GRAD": rng.standard_normal(out.shape).astype(dtype)},
            {})


REFERENCES = {"gather": gather, "gather_grad": gather_grad, "gather_nd": gather_nd,
              "gather_nd_grad": gather_nd_grad}
SAMPLES = {"gather": sample_gather, "gather_grad": sample_gather_grad,
           "gather_nd": sample_gather_nd, "gather_nd_grad": sample_gather_nd_grad}
