"""Reference of sequence_reshape and its gradient: a loop over the sequences."""
import numpy as np

from headrace.runtime import Tensor


def sequence_reshape(inputs, attrs):
    x = inputs["X"]
    data = np.asarray(x.data)
    new_dim = attrs["new_dim"]
    if len(x.lod) != 1 or data.ndim != 2:
        raise ValueError("X must be 2-D with one LoD level")
    off = x.lod[0]
    rows, lod = [], [0]
    for i in range(len(off) - 1):
        values = data[off[i]:off[i + 1]].reshape(-1)
        if values.size % new_dim:
            raise ValueError(f"sequence {i}: {values.size} values do not divide by {new_dim}")
        rows.append(values.reshape(-1, new_dim))
        lod.append(lod[-1] + len(rows[-1]))
    out = np.concatenate(rows) if rows else data.reshape(0, new_dim)
    return {"Out": Tensor(out, [lod] if data.shape[1] != new_dim else x.lod)}


def sequence_reshape_grad(inputs, attrs):
    x = inputs["X"]
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]))
    return {"X@GRAD": Tensor(g.reshape(np.shape(x.data)).copy(), x.lod)}


def sample_sequence_reshape(rng, dtype):
    # Lengths 2, 0, 4, 2 of width 6: 12, 0, 24 and 12 values, which 3, 4 and 12 divide.
    x = Tensor(rng.standard_normal((8, 6)).astype(dtype), [[0, 2, 2, 6, 8]])
    return {"X": x}, {"new_dim": int(rng.choice([3, 4, 12]))}


def sample_sequence_reshape_grad(rng, dtype):
    inputs, attrs = sample_sequence_reshape(rng, dtype)
    g = rng.standard_normal((48 // attrs["new_dim"], attrs["new_dim"])).astype(dtype)
    return dict(inputs, **{"Out@GRAD": g}), attrs


REFERENCES = {"sequence_reshape": sequence_reshape,
              "sequence_reshape_grad": sequence_reshape_grad}
SAMPLES = {"sequence_reshape": sample_sequence_reshape,
           "sequence_reshape_grad": sample_sequence_reshape_grad}
