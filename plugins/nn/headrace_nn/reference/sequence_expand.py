"""Reference of sequence_expand and its gradient: loops over the entries and their copies."""
import numpy as np

from headrace.runtime import Tensor

from ._util import attr


def _entries(x, y, attrs):
    level = attr(attrs, "ref_level", -1)
    level = level if level >= 0 else len(y.lod) + level
    offs = y.lod[level]
    repeats = [b - a for a, b in zip(offs[:-1], offs[1:])]
    data = np.asarray(x.data)
    starts = x.lod[0] if getattr(x, "lod", None) else list(range(data.shape[0] + 1))
    return data, [(starts[i], starts[i + 1], n) for i, n in enumerate(repeats)]


def sequence_expand(inputs, attrs):
    data, entries = _entries(inputs["X"], inputs["Y"], attrs)
    rows, lod = [], [0]
    for a, b, n in entries:
        for _ in range(n):
            rows.extend(data[a:b])
            lod.append(lod[-1] + b - a)
    out = np.array(rows, data.dtype).reshape((len(rows),) + data.shape[1:])
    return {"Out": Tensor(out, [lod])}


def sample_sequence_expand(rng, dtype):
    x = Tensor(rng.standard_normal((5, 2)).astype(dtype), [[0, 2, 2, 5]])
    y = Tensor(rng.integers(0, 9, (6, 1)), [[0, 1, 3, 6]])  # only its LoD is read
    return {"X": x, "Y": y}, {"ref_level": -1}


def sequence_expand_grad(inputs, attrs):
    data, entries = _entries(inputs["X"], inputs["Y"], attrs)
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]), np.float64)
    dx, k = np.zeros(data.shape), 0
    for a, b, n in entries:
        for _ in range(n):
            dx[a:b] += g[k:k + b - a]
            k += b - a
    return {"X@GRAD": Tensor(dx.astype(data.dtype), getattr(inputs["X"], "lod", []))}


def sample_sequence_expand_grad(rng, dtype):
    inputs, attrs = sample_sequence_expand(rng, dtype)
    out = sequence_expand(inputs, attrs)["Out"]
    g = rng.standard_normal(out.data.shape).astype(dtype)
    return dict(inputs, **{"Out@GRAD": g}), attrs


def sequence_expand_as(inputs, attrs):
    data = np.asarray(getattr(inputs["X"], "data", inputs["X"]))
    off = inputs["Y"].lod[-1]
    rows = [data[i] for i, (a, b) in enumerate(zip(off[:-1], off[1:])) for _ in range(b - a)]
    out = np.array(rows, data.dtype).reshape((len(rows),) + data.shape[1:])
    return {"Out": Tensor(out, [list(off)])}


def sample_sequence_expand_as(rng, dtype):
    return {"X": rng.standard_normal((3, 2)).astype(dtype),
            "Y": Tensor(rng.integers(0, 9, (6, 1)), [[0, 1, 1, 6]])}, {}


def sequence_expand_as_grad(inputs, attrs):
    data = np.asarray(getattr(inputs["X"], "data", inputs["X"]))
    off = inputs["Y"].lod[-1]
    g = np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"]), np.float64)
    dx = np.zeros(data.shape)
    for i, (a, b) in enumerate(zip(off[:-1], off[1:])):
        dx[i] = g[a:b].sum(axis=0)
    return {"X@GRAD": dx.astype(data.dtype)}


def sample_sequence_expand_as_grad(rng, dtype):
    inputs, attrs = sample_sequence_expand_as(rng, dtype)
    return dict(inputs, **{"Out@GRAD": rng.standard_normal((6, 2)).astype(dtype)}), attrs


REFERENCES = {"sequence_expand": sequence_expand, "sequence_expand_grad": sequence_expand_grad,
              "sequence_expand_as": sequence_expand_as,
              "sequence_expand_as_grad": sequence_expand_as_grad}
SAMPLES = {"sequence_expand": sample_sequence_expand,
           "sequence_expand_grad": sample_sequence_expand_grad,
           "sequence_expand_as": sample_sequence_expand_as,
           "sequence_expand_as_grad": sample_sequence_expand_as_grad}
