"""References of top_k (a stable descending sort) and accuracy."""
import numpy as np

from ._util import attr


def top_k(inputs, attrs):
    x = inputs["X"]
    k = attr(attrs, "k", 1)
    if inputs.get("K") is not None:
        k = int(np.asarray(inputs["K"]).reshape(-1)[0])
    if x.ndim < 1 or not 1 <= k <= x.shape[-1]:
        raise ValueError(f"k={k} does not fit X{list(x.shape)}")
    rows = x.reshape(-1, x.shape[-1])
    vals, idx = [], []
    pos = np.arange(rows.shape[1])
    for row in rows:
        if row.dtype.kind == "f":
            nan = np.isnan(row)
            desc = np.where(nan, 0, -row)      # negation reverses the order exactly
        else:
            nan = np.zeros(row.shape, bool)
            desc = ~row                        # bitwise not: reverses int order, no overflow
        # lexsort: the last key is the primary one. NaN first, then larger, then lower index.
        order = np.lexsort((pos, desc, ~nan))[:k]
        vals.append(row[order])
        idx.append(order)
    shape = x.shape[:-1] + (k,)
    return {"Out": np.array(vals, dtype=x.dtype).reshape(shape),
            "Indices": np.array(idx, dtype=np.int64).reshape(shape)}


def accuracy(inputs, attrs):
    idx, label = inputs["Indices"], inputs["Label"]
    n = idx.shape[0]
    correct = int((idx == label.reshape(n, 1)).any(axis=1).sum())
    return {"Accuracy": np.array(correct / n if n else 0.0, np.float32),
            "Correct": np.array(correct, np.int32), "Total": np.array(n, np.int32)}


def sample_top_k(rng, dtype):
    x = rng.integers(-3, 4, (4, 3, 7)).astype(dtype)   # small ints: many ties
    return {"X": x}, {"k": 3}


def sample_accuracy(rng, dtype):
    out = rng.random((6, 3)).astype(dtype)
    idx = np.stack([rng.permutation(5)[:3] for _ in range(6)]).astype(np.int64)
    return {"Out": out, "Indices": idx, "Label": rng.integers(0, 5, (6, 1))}, {}


REFERENCES = {"top_k": top_k, "accuracy": accuracy}
SAMPLES = {"top_k": sample_top_k, "accuracy": sample_accuracy}
