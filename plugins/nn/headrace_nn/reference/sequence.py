"""Reference of sequence_pool: a loop over the sequences of the last LoD level."""
import numpy as np

from headrace.runtime import Tensor

from ._util import attr, attr_f32, f64


def sequence_pool(inputs, attrs):
    x = inputs["X"]
    if not getattr(x, "lod", None):
        raise ValueError("sequence_pool: X must be a Tensor with LoD (the sequences are its "
                         "last LoD level); a plain array has none")
    data, lod = np.asarray(x.data), x.lod
    offsets = lod[-1]
    kind = attr(attrs, "pooltype", "AVERAGE")
    pad = attr_f32(attrs, "pad_value", 0.0)
    rows = []
    arg = np.zeros((len(offsets) - 1,) + data.shape[1:], np.int32)
    for s, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        seq = f64(data[a:b])
        if b == a:
            rows.append(np.full(data.shape[1:], pad))
            if kind == "MAX":
                arg[s] = -1
        elif kind == "AVERAGE":
            rows.append(seq.mean(axis=0))
        elif kind == "SUM":
            rows.append(seq.sum(axis=0))
        elif kind == "SQRT":
            rows.append(seq.sum(axis=0) / np.sqrt(b - a))
        elif kind == "MAX":
            rows.append(seq.max(axis=0))
            arg[s] = a + seq.argmax(axis=0)   # argmax: the first row on ties
        elif kind == "LAST":
            rows.append(seq[-1])
        else:
            rows.append(seq[0])
    out = np.array(rows).reshape((len(offsets) - 1,) + data.shape[1:]).astype(data.dtype)
    return {"Out": Tensor(out, [list(level) for level in lod[:-1]]), "MaxIndex": arg}


def sample_sequence_pool(rng, dtype):
    x = rng.standard_normal((7, 3)).astype(dtype)
    # Two levels; the second sequence of the last level is empty.
    return {"X": Tensor(x, [[0, 2, 4], [0, 3, 3, 5, 7]])}, {"pooltype": "MAX",
                                                             "pad_value": -1.5}


def sequence_pool_grad(inputs, attrs):
    x, dout = inputs["X"], inputs["Out@GRAD"]
    if not getattr(x, "lod", None):
        raise ValueError("sequence_pool_grad: X must be a Tensor with LoD")
    data, offsets = np.asarray(x.data), x.lod[-1]
    g = f64(getattr(dout, "data", dout))
    assert g.shape == (len(offsets) - 1,) + data.shape[1:]
    kind = attr(attrs, "pooltype", "AVERAGE")
    dx = np.zeros(data.shape)
    for s, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        if b == a:
            continue
        if kind == "AVERAGE":
            dx[a:b] = g[s] / (b - a)
        elif kind == "SUM":
            dx[a:b] = g[s]
        elif kind == "SQRT":
            dx[a:b] = g[s] / np.sqrt(b - a)
        elif kind == "MAX":
            idx = np.asarray(getattr(inputs["MaxIndex"], "data", inputs["MaxIndex"]))[s]
            for pos in np.ndindex(idx.shape):
                if not a <= idx[pos] < b:
                    raise IndexError(f"MaxIndex {idx[pos]} outside sequence {s}")
                dx[(idx[pos],) + pos] += g[s][pos]
        elif kind == "LAST":
            dx[b - 1] = g[s]
        else:
            dx[a] = g[s]
    return {"X@GRAD": Tensor(dx.astype(data.dtype), [list(level) for level in x.lod])}


def sample_sequence_pool_grad(rng, dtype):
    inputs, attrs = sample_sequence_pool(rng, dtype)
    out = sequence_pool(inputs, attrs)
    g = rng.standard_normal(out["Out"].data.shape).astype(dtype)
    return {"X": inputs["X"], "MaxIndex": out["MaxIndex"], "Out@GRAD": g}, attrs


REFERENCES = {"sequence_pool": sequence_pool, "sequence_pool_grad": sequence_pool_grad}
SAMPLES = {"sequence_pool": sample_sequence_pool, "sequence_pool_grad": sample_sequence_pool_grad}
