"""References of lookup_table and lookup_table_v2 (row gathers)."""
import numpy as np

from ._util import attr


def _lookup(w, ids, pad):
    flat = np.asarray(ids, dtype=np.int64).reshape(-1)
    out = np.zeros((flat.size, w.shape[1]), w.dtype)
    for i, k in enumerate(flat):
        if pad != -1 and k == pad:   # -1: no padding row
            continue
        if not 0 <= k < w.shape[0]:
            raise IndexError(f"id {k} out of range for {w.shape[0]} rows")
        out[i] = w[k]
    return out


def lookup_table(inputs, attrs):
    w, ids = inputs["W"], inputs["Ids"]
    out = _lookup(w, ids, attr(attrs, "padding_idx", -1))
    return {"Out": out.reshape(ids.shape[:-1] + (w.shape[1],))}


def lookup_table_v2(inputs, attrs):
    w, ids = inputs["W"], inputs["Ids"]
    out = _lookup(w, ids, attr(attrs, "padding_idx", -1))
    return {"Out": out.reshape(ids.shape + (w.shape[1],))}


def sample_lookup_table(rng, dtype):
    w = rng.standard_normal((10, 4)).astype(dtype)
    return {"W": w, "Ids": rng.integers(0, 10, (3, 2, 1))}, {"padding_idx": 2}


def sample_lookup_table_v2(rng, dtype):
    w = rng.standard_normal((10, 4)).astype(dtype)
    return {"W": w, "Ids": rng.integers(0, 10, (3, 5)).astype(np.int32)}, {"padding_idx": 0}


REFERENCES = {"lookup_table": lookup_table, "lookup_table_v2": lookup_table_v2}
SAMPLES = {"lookup_table": sample_lookup_table, "lookup_table_v2": sample_lookup_table_v2}
