"""References of lookup_table and lookup_table_v2 (row gathers)."""
import numpy as np

from ._util import attr, f64


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


def _scatter(w, ids, dout, pad):
    """Out@GRAD rows added into a zero table at their ids, one id at a time."""
    dw = np.zeros(w.shape)
    rows = f64(dout).reshape(-1, w.shape[1])
    flat = np.asarray(ids).reshape(-1)
    assert rows.shape[0] == flat.size
    for i, k in enumerate(flat):
        if pad != -1 and k == pad:
            continue
        if not 0 <= k < w.shape[0]:
            raise IndexError(f"id {k} out of range for {w.shape[0]} rows")
        dw[k] += rows[i]
    return dw.astype(w.dtype)


def lookup_table_grad(inputs, attrs):
    w, ids, dout = inputs["W"], inputs["Ids"], inputs["Out@GRAD"]
    assert dout.shape == ids.shape[:-1] + (w.shape[1],)
    return {"W@GRAD": _scatter(w, ids, dout, attr(attrs, "padding_idx", -1))}


def lookup_table_v2_grad(inputs, attrs):
    w, ids, dout = inputs["W"], inputs["Ids"], inputs["Out@GRAD"]
    assert dout.shape == ids.shape + (w.shape[1],)
    return {"W@GRAD": _scatter(w, ids, dout, attr(attrs, "padding_idx", -1))}


def sample_lookup_table_grad(rng, dtype):
    inputs, attrs = sample_lookup_table(rng, dtype)
    inputs["Ids"][0, 1, 0] = inputs["Ids"][2, 0, 0] = 7   # a repeated id
    return {**inputs, "Out@GRAD": rng.standard_normal((3, 2, 4)).astype(dtype)}, attrs


def sample_lookup_table_v2_grad(rng, dtype):
    inputs, attrs = sample_lookup_table_v2(rng, dtype)
    inputs["Ids"][0, :2] = 0   # padding rows
    return {**inputs, "Out@GRAD": rng.standard_normal((3, 5, 4)).astype(dtype)}, attrs


REFERENCES = {"lookup_table": lookup_table, "lookup_table_v2": lookup_table_v2,
              "lookup_table_grad": lookup_table_grad,
              "lookup_table_v2_grad": lookup_table_v2_grad}
SAMPLES = {"lookup_table": sample_lookup_table, "lookup_table_v2": sample_lookup_table_v2,
           "lookup_table_grad": sample_lookup_table_grad,
           "lookup_table_v2_grad": sample_lookup_table_v2_grad}
