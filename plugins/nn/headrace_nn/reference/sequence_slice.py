"""Reference of sequence_slice and its gradient: loops over the sequences."""
import numpy as np

from headrace.runtime import Tensor


def _slices(inputs):
    x = inputs["X"]
    off = x.lod[-1]
    start = np.asarray(inputs["Offset"]).reshape(-1)
    size = np.asarray(inputs["Length"]).reshape(-1)
    return x, [(off[i] + int(start[i]), int(size[i])) for i in range(len(off) - 1)]


def sequence_slice(inputs, attrs):
    x, slices = _slices(inputs)
    data = np.asarray(x.data)
    rows = [data[a:a + n] for a, n in slices]
    lod = [list(v) for v in x.lod[:-1]] + [list(np.cumsum([0] + [n for _, n in slices]))]
    return {"Out": Tensor(np.concatenate(rows).astype(data.dtype), lod)}


def sample_sequence_slice(rng, dtype):
    x = Tensor(rng.standard_normal((7, 2)).astype(dtype), [[0, 3, 3, 7]])
    return {"X": x, "Offset": np.array([[1], [0], [2]], np.int64),
            "Length": np.array([[2], [0], [2]], np.int64)}, {}


def sequence_slice_grad(inputs, attrs):
    x, slices = _slices(inputs)
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]))
    dx, k = np.zeros(np.shape(x.data), g.dtype), 0
    for a, n in slices:
        dx[a:a + n] = g[k:k + n]
        k += n
    return {"X@GRAD": Tensor(dx, x.lod)}


def sample_sequence_slice_grad(rng, dtype):
    inputs, attrs = sample_sequence_slice(rng, dtype)
    return dict(inputs, **{"Out@GRAD": rng.standard_normal((4, 2)).astype(dtype)}), attrs


REFERENCES = {"sequence_slice": sequence_slice, "sequence_slice_grad": sequence_slice_grad}
SAMPLES = {"sequence_slice": sample_sequence_slice,
           "sequence_slice_grad": sample_sequence_slice_grad}
