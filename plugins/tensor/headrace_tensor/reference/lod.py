"""References and samples: lod_reset."""
from headrace.runtime.tensor import Tensor

from ._util import data, int_tensor, lod


def lod_reset(inputs, attrs):
    """Out = X's data with Y's LoD (when Y has one), Y's data as level-0 offsets, or
    target_lod; with append the new level goes below X's levels."""
    x, y = inputs["X"], inputs.get("Y")
    if y is not None and lod(y):
        new = lod(y)
    else:
        level = ([int(v) for v in data(y).reshape(-1)] if y is not None
                 else [int(v) for v in attrs.get("target_lod", [])])
        rows = data(x).shape[0] if data(x).ndim else 1
        assert level and level[0] == 0 and level[-1] == rows and \
            all(b >= a for a, b in zip(level, level[1:])), (level, rows)
        new = (lod(x) if attrs.get("append", False) else []) + [level]
    return {"Out": Tensor(data(x), new)}


def sample_lod_reset(rng, dtype):
    x = rng.standard_normal((6, 3)).astype(dtype)
    kind = rng.integers(3)
    if kind == 0:
        return {"X": x}, {"target_lod": [0, 2, 2, 6]}
    if kind == 1:
        return {"X": Tensor(x, [[0, 3, 6]]), "Y": int_tensor(rng, [0, 1, 5, 6])}, {}
    # append: the new level goes below X's, so it has one entry per row of X's last level
    # (6 rows: 6 sequences of the new level, some empty) and ends at the rows too.
    return ({"X": Tensor(x, [[0, 2, 6]])},
            {"target_lod": [0, 1, 1, 3, 4, 5, 6], "append": True})


REFERENCES = {"lod_reset": lod_reset}
SAMPLES = {"lod_reset": sample_lod_reset}
