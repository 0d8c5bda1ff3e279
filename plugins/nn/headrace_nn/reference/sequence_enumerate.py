"""Reference of sequence_enumerate: a loop over the rows of each sequence."""
import numpy as np

from headrace.runtime import Tensor


def sequence_enumerate(inputs, attrs):
    x = inputs["X"]
    data = np.asarray(x.data)
    if data.dtype.kind != "i" or data.ndim != 2 or data.shape[1] != 1:
        raise ValueError("X must be integer ids of shape [rows, 1]")
    win, pad = attrs["win_size"], attrs.get("pad_value", 0)
    off = x.lod[0]
    if off[-1] != data.shape[0]:
        raise ValueError("the first LoD level must end at X's rows")
    out = np.full((data.shape[0], win), pad, data.dtype)
    for i in range(len(off) - 1):
        for r in range(off[i], off[i + 1]):
            for k in range(win):
                if r + k < off[i + 1]:
                    out[r, k] = data[r + k, 0]
    return {"Out": Tensor(out, x.lod)}


def sample_sequence_enumerate(rng, dtype):
    # Ids are integers whatever the float dtype asked for.
    ids = rng.integers(0, 50, (7, 1)).astype(rng.choice(["int32", "int64"]))
    return ({"X": Tensor(ids, [[0, 3, 3, 4, 7]])},
            {"win_size": int(rng.integers(2, 5)), "pad_value": int(rng.integers(-2, 3))})


REFERENCES = {"sequence_enumerate": sequence_enumerate}
SAMPLES = {"sequence_enumerate": sample_sequence_enumerate}
