"""Reference of sequence_scatter and its gradient: a loop over the ids of each sequence."""
import numpy as np

from headrace.runtime import Tensor


def _positions(inputs, rows):
    """(row, column) pairs, one per id: sequence i of Ids addresses row i."""
    ids = inputs["Ids"]
    values = np.asarray(ids.data)
    if values.dtype.kind != "i" or values.size != values.shape[0]:
        raise ValueError("Ids must be integers, one per row")
    if len(ids.lod) != 1 or inputs["Updates"].lod != ids.lod:
        raise ValueError("Ids and Updates must share one LoD level")
    off = ids.lod[0]
    if len(off) - 1 > rows:
        raise ValueError("more sequences than rows of X")
    pairs = []
    for i in range(len(off) - 1):
        for k in range(off[i], off[i + 1]):
            pairs.append((i, int(values[k].item())))
    return pairs


def sequence_scatter(inputs, attrs):
    x = inputs["X"]
    data = np.asarray(getattr(x, "data", x))
    upd = np.asarray(inputs["Updates"].data)
    if upd.dtype != data.dtype or upd.size != upd.shape[0]:
        raise ValueError("Updates must have X's dtype, one value per row")
    out = data.copy()
    flat = out.reshape(out.shape[0], -1)
    for k, (i, j) in enumerate(_positions(inputs, data.shape[0])):
        if not 0 <= j < flat.shape[1]:
            raise IndexError(f"id {j} out of range")
        flat[i, j] += upd.reshape(-1)[k]
    return {"Out": out}


def sequence_scatter_grad(inputs, attrs):
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]))
    upd = inputs["Updates"]
    flat = g.reshape(g.shape[0], -1)
    dupd = np.zeros(np.shape(upd.data), g.dtype)
    for k, (i, j) in enumerate(_positions(inputs, g.shape[0])):
        if not 0 <= j < flat.shape[1]:
            raise IndexError(f"id {j} out of range")
        dupd.reshape(-1)[k] = flat[i, j]
    return {"X@GRAD": g.copy(), "Updates@GRAD": Tensor(dupd, upd.lod)}


def sample_sequence_scatter(rng, dtype):
    # Four rows of 2 x 3 values; three sequences (one empty), a repeated id adds twice.
    x = rng.standard_normal((4, 2, 3)).astype(dtype)
    lod = [[0, 3, 3, 7]]
    ids = Tensor(np.array([[0], [5], [0], [1], [2], [3], [4]], np.int64), lod)
    upd = Tensor(rng.standard_normal((7, 1)).astype(dtype), lod)
    return {"X": x, "Ids": ids, "Updates": upd}, {}


def sample_sequence_scatter_grad(rng, dtype):
    inputs, attrs = sample_sequence_scatter(rng, dtype)
    g = rng.standard_normal((4, 2, 3)).astype(dtype)
    return {"Ids": inputs["Ids"], "Updates": inputs["Updates"], "Out@GRAD": g}, attrs


REFERENCES = {"sequence_scatter": sequence_scatter,
              "sequence_scatter_grad": sequence_scatter_grad}
SAMPLES = {"sequence_scatter": sample_sequence_scatter,
           "sequence_scatter_grad": sample_sequence_scatter_grad}
