"""Reference of sequence_concat and its gradient: loops over the sequences and the inputs."""
import numpy as np

from headrace.runtime import Tensor


def _offsets(xs):
    n = len(xs[0].lod[0])
    if any(len(x.lod) != 1 or len(x.lod[0]) != n for x in xs):
        raise ValueError("the inputs must have one LoD level and as many sequences")
    return [x.lod[0] for x in xs], n - 1


def sequence_concat(inputs, attrs):
    xs = inputs["X"]
    offsets, n = _offsets(xs)
    datas = [np.asarray(x.data) for x in xs]
    feature = int(np.prod(datas[0].shape[1:]))
    pieces, lod = [], [0]
    for i in range(n):
        for d, off in zip(datas, offsets):
            pieces.append(d[off[i]:off[i + 1]].reshape(-1, feature))
        lod.append(lod[-1] + sum(off[i + 1] - off[i] for off in offsets))
    out = np.concatenate(pieces).reshape((-1,) + datas[0].shape[1:])
    return {"Out": Tensor(out, [lod])}


def sequence_concat_grad(inputs, attrs):
    xs = inputs["X"]
    offsets, n = _offsets(xs)
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]))
    flat = g.reshape(g.shape[0], -1)
    dxs = [np.zeros(np.shape(x.data), g.dtype) for x in xs]
    row = 0
    for i in range(n):
        for dx, off in zip(dxs, offsets):
            k = off[i + 1] - off[i]
            dx.reshape(dx.shape[0], -1)[off[i]:off[i + 1]] = flat[row:row + k]
            row += k
    if row != g.shape[0]:
        raise ValueError("Out@GRAD has the wrong number of rows")
    return {"X@GRAD": [Tensor(dx, x.lod) for dx, x in zip(dxs, xs)]}


def sample_sequence_concat(rng, dtype):
    # An empty sequence in one input only, and one in both.
    a = Tensor(rng.standard_normal((4, 2, 3)).astype(dtype), [[0, 1, 1, 1, 4]])
    b = Tensor(rng.standard_normal((5, 2, 3)).astype(dtype), [[0, 2, 2, 4, 5]])
    c = Tensor(rng.standard_normal((2, 2, 3)).astype(dtype), [[0, 0, 0, 1, 2]])
    return {"X": [a, b, c]}, {}


def sample_sequence_concat_grad(rng, dtype):
    inputs, attrs = sample_sequence_concat(rng, dtype)
    g = rng.standard_normal((11, 2, 3)).astype(dtype)
    return dict(inputs, **{"Out@GRAD": g}), attrs


REFERENCES = {"sequence_concat": sequence_concat, "sequence_concat_grad": sequence_concat_grad}
SAMPLES = {"sequence_concat": sample_sequence_concat,
           "sequence_concat_grad": sample_sequence_concat_grad}
