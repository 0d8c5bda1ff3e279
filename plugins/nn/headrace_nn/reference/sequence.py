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


REFERENCES = {"sequence_pool": sequence_pool}
SAMPLES = {"sequence_pool": sample_sequence_pool}
