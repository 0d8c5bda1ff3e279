"""Reference of sequence_softmax and its gradient: a loop over the sequences in float64."""
import numpy as np

from headrace.runtime import Tensor

from ._util import f64


def _seqs(t):
    off = t.lod[-1]
    return list(zip(off[:-1], off[1:]))


def sequence_softmax(inputs, attrs):
    x = inputs["X"]
    data = f64(x.data).reshape(-1)
    out = np.zeros_like(data)
    for a, b in _seqs(x):
        if b > a:
            e = np.exp(data[a:b] - data[a:b].max())
            out[a:b] = e / e.sum()
    return {"Out": Tensor(out.reshape(np.shape(x.data)).astype(np.asarray(x.data).dtype),
                          x.lod)}


def sample_sequence_softmax(rng, dtype):
    return {"X": Tensor(rng.standard_normal((7, 1)).astype(dtype), [[0, 3, 3, 5, 7]])}, {}


def sequence_softmax_grad(inputs, attrs):
    x, y = inputs["X"], f64(getattr(inputs["Out"], "data", inputs["Out"])).reshape(-1)
    g = f64(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"])).reshape(-1)
    dx = np.zeros_like(y)
    for a, b in _seqs(x):
        dx[a:b] = y[a:b] * (g[a:b] - (y[a:b] * g[a:b]).sum())
    return {"X@GRAD": Tensor(dx.reshape(np.shape(x.data)).astype(np.asarray(x.data).dtype),
                             x.lod)}


def sample_sequence_softmax_grad(rng, dtype):
    inputs, attrs = sample_sequence_softmax(rng, dtype)
    out = sequence_softmax(inputs, attrs)["Out"]
    return dict(inputs, Out=out, **{"Out@GRAD": rng.standard_normal((7, 1)).astype(dtype)}), \
        attrs


REFERENCES = {"sequence_softmax": sequence_softmax,
              "sequence_softmax_grad": sequence_softmax_grad}
SAMPLES = {"sequence_softmax": sample_sequence_softmax,
           "sequence_softmax_grad": sample_sequence_softmax_grad}
