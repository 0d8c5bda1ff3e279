"""Reference of sequence_mask: a loop over the lengths."""
import numpy as np

from headrace import dtypes as dt


def sequence_mask(inputs, attrs):
    x = np.asarray(inputs["X"])
    width = attrs.get("maxlen", -1)
    if inputs.get("MaxLenTensor") is not None:
        width = int(np.asarray(inputs["MaxLenTensor"]).reshape(-1)[0])
    elif width == -1:
        width = int(x.max()) if x.size else 0
    out = np.zeros(x.shape + (width,), dt.from_proto(attrs.get("out_dtype",
                                                                 dt.to_proto("int64"))))
    for idx in np.ndindex(x.shape):
        out[idx][:min(int(x[idx]), width)] = 1
    return {"Y": out}


def sample_sequence_mask(rng, dtype):
    x = rng.integers(0, 6, (2, 3)).astype(rng.choice(["int32", "int64"]))
    attrs = {"maxlen": int(rng.choice([-1, 4, 7])),
             "out_dtype": dt.to_proto(str(rng.choice(["int64", "float32", "bool"])))}
    return {"X": x}, attrs


REFERENCES = {"sequence_mask": sequence_mask}
SAMPLES = {"sequence_mask": sample_sequence_mask}
