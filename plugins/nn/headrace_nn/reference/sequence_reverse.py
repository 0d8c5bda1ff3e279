"""Reference of sequence_reverse: a loop over the sequences."""
import numpy as np

from headrace.runtime import Tensor


def sequence_reverse(inputs, attrs):
    x = inputs["X"]
    data, offsets = np.asarray(x.data), x.lod[-1]
    rows = [data[a:b][::-1] for a, b in zip(offsets[:-1], offsets[1:])]
    out = np.concatenate(rows) if rows else data[:0]
    return {"Y": Tensor(out.reshape(data.shape), x.lod)}


def sample_sequence_reverse(rng, dtype):
    x = rng.standard_normal((7, 3)).astype(dtype)
    return {"X": Tensor(x, [[0, 2, 4], [0, 3, 3, 5, 7]])}, {}


REFERENCES = {"sequence_reverse": sequence_reverse}
SAMPLES = {"sequence_reverse": sample_sequence_reverse}
