"""References of sequence_pad / sequence_unpad and their gradients: loops over sequences."""
import numpy as np

from headrace.runtime import Tensor

from ._util import attr


def _lengths(x):
    off = x.lod[-1]
    return [b - a for a, b in zip(off[:-1], off[1:])], off


def sequence_pad(inputs, attrs):
    x = inputs["X"]
    data = np.asarray(x.data)
    lengths, off = _lengths(x)
    width = attr(attrs, "padded_length", -1)
    width = max(lengths, default=0) if width == -1 else width
    out = np.empty((len(lengths), width) + data.shape[1:], data.dtype)
    out[...] = np.asarray(inputs["PadValue"], data.dtype).reshape(
        () if np.size(inputs["PadValue"]) == 1 and data.shape[1:] != (1,) else data.shape[1:])
    for s, (a, n) in enumerate(zip(off[:-1], lengths)):
        out[s, :n] = data[a:a + n]
    return {"Out": out, "Length": np.array(lengths, np.int64)}


def sample_sequence_pad(rng, dtype):
    x = Tensor(rng.standard_normal((6, 2)).astype(dtype), [[0, 2, 2, 6]])
    return {"X": x, "PadValue": np.array([-1.5], dtype)}, {"padded_length": 5}


def sequence_pad_grad(inputs, attrs):
    x = inputs["X"]
    lengths, off = _lengths(x)
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]))
    rows = [g[s, :n] for s, n in enumerate(lengths)]
    return {"X@GRAD": Tensor(np.concatenate(rows).astype(g.dtype), x.lod)}


def sample_sequence_pad_grad(rng, dtype):
    inputs, attrs = sample_sequence_pad(rng, dtype)
    return {"X": inputs["X"], "Out@GRAD": rng.standard_normal((3, 5, 2)).astype(dtype)}, attrs


def sequence_unpad(inputs, attrs):
    data = np.asarray(inputs["X"])
    n = np.asarray(inputs["Length"]).reshape(-1)
    rows = [data[s, :k] for s, k in enumerate(n)]
    off = np.concatenate([[0], np.cumsum(n)]).tolist()
    return {"Out": Tensor(np.concatenate(rows), [off])}


def sample_sequence_unpad(rng, dtype):
    return {"X": rng.standard_normal((3, 4, 2)).astype(dtype),
            "Length": np.array([2, 0, 4], np.int64)}, {}


def sequence_unpad_grad(inputs, attrs):
    data = np.asarray(inputs["X"])
    n = np.asarray(inputs["Length"]).reshape(-1)
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]))
    dx, k = np.zeros(data.shape, g.dtype), 0
    for s, m in enumerate(n):
        dx[s, :m] = g[k:k + m]
        k += m
    return {"X@GRAD": dx}


def sample_sequence_unpad_grad(rng, dtype):
    inputs, attrs = sample_sequence_unpad(rng, dtype)
    return dict(inputs, **{"Out@GRAD": rng.standard_normal((6, 2)).astype(dtype)}), attrs


REFERENCES = {"sequence_pad": sequence_pad, "sequence_pad_grad": sequence_pad_grad,
              "sequence_unpad": sequence_unpad, "sequence_unpad_grad": sequence_unpad_grad}
SAMPLES = {"sequence_pad": sample_sequence_pad, "sequence_pad_grad": sample_sequence_pad_grad,
           "sequence_unpad": sample_sequence_unpad,
           "sequence_unpad_grad": sample_sequence_unpad_grad}
