"""References and samples: scatter, scatter_grad."""
import numpy as np

from ._util import data


def _ids(inputs):
    return np.asarray(data(inputs["Ids"])).astype(np.int64).reshape(-1)


def scatter(inputs, attrs):
    x, upd = data(inputs["X"]), data(inputs["Updates"])
    ids = _ids(inputs)
    upd = upd.reshape((len(ids),) + x.shape[1:])
    out = x.copy()
    if attrs["overwrite"]:
        for i, k in enumerate(ids):
            out[k] = upd[i]
    else:
        out[ids] = 0
        for i, k in enumerate(ids):
            out[k] += upd[i]
    return {"Out": out}


def scatter_grad(inputs, attrs):
    g, upd = data(inputs["Out@GRAD"]), data(inputs["Updates"])
    ids = _ids(inputs)
    dx = g.copy()
    dx[ids] = 0
    du = g[ids].copy()
    if attrs["overwrite"]:
        # only the last update of a repeated id reaches Out
        last = {int(k): i for i, k in enumerate(ids)}
        for i, k in enumerate(ids):
            if last[int(k)] != i:
                du[i] = 0
    return {"X@GRAD": dx, "Updates@GRAD": du.reshape(upd.shape)}


def _sample(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4)))]
    n = int(rng.integers(1, 6))
    ids = rng.integers(0, shape[0], size=n).astype(rng.choice(["int32", "int64"]))
    if rng.random() < 0.3:
        ids = ids.reshape(n, 1)
    x = rng.standard_normal(shape).astype(dtype)
    upd = rng.standard_normal([n] + shape[1:]).astype(dtype)
    return x, ids, upd, {"overwrite": bool(rng.random() < 0.5)}


def sample_scatter(rng, dtype):
    x, ids, upd, attrs = _sample(rng, dtype)
    return {"X": x, "Ids": ids, "Updates": upd}, attrs


def sample_scatter_grad(rng, dtype):
    x, ids, upd, attrs = _sample(rng, dtype)
    return ({"Ids": ids, "Updates": upd,
             "Out@GRAD": rng.standard_normal(x.shape).astype(dtype)}, attrs)


REFERENCES = {"scatter": scatter, "scatter_grad": scatter_grad}
SAMPLES = {"scatter": sample_scatter, "scatter_grad": sample_scatter_grad}
