"""References and samples: pad, pad_grad (numpy.pad and the slice back out)."""
import numpy as np

from ._util import data, f32

DTYPES = ("float32", "float64", "int32", "int64", "complex64", "complex128")


def _pairs(paddings, rank):
    if len(paddings) != 2 * rank or any(p < 0 for p in paddings):
        raise ValueError(f"paddings {paddings} for rank {rank}")
    return [(paddings[2 * i], paddings[2 * i + 1]) for i in range(rank)]


def pad(inputs, attrs):
    x = data(inputs["X"])
    if x.dtype.name not in DTYPES:
        raise TypeError(f"pad has no kernel for {x.dtype.name}")
    value = f32(attrs.get("pad_value", 0.0))
    if x.dtype.kind == "i":
        if not np.isfinite(value) or not np.iinfo(x.dtype).min <= value <= np.iinfo(x.dtype).max:
            raise ValueError("pad_value does not fit")
        value = np.trunc(value)
    pairs = _pairs(list(attrs["paddings"]), x.ndim)
    if x.ndim == 0:
        return {"Out": x.copy()}
    return {"Out": np.pad(x, pairs, mode="constant", constant_values=value)}


def pad_grad(inputs, attrs):
    g = data(inputs["Out@GRAD"])
    if g.dtype.name not in ("float32", "float64"):
        raise TypeError("pad_grad takes float32 or float64")
    out = g
    for axis, (before, after) in enumerate(_pairs(list(attrs["paddings"]), g.ndim)):
        n = g.shape[axis]
        if n < before + after:
            raise ValueError("Out@GRAD smaller than its paddings")
        out = np.take(out, np.arange(before, n - after), axis=axis)
    return {"X@GRAD": out}


def sample_pad(rng, dtype):
    shape = [int(d) for d in rng.integers(0, 4, size=int(rng.integers(1, 4)))]
    paddings = [int(p) for p in rng.integers(0, 3, size=2 * len(shape))]
    return ({"X": rng.standard_normal(shape).astype(dtype)},
            {"paddings": paddings, "pad_value": float(rng.choice([0.0, 1.5, -2.25]))})


def sample_pad_grad(rng, dtype):
    inputs, attrs = sample_pad(rng, dtype)
    out = pad(inputs, attrs)["Out"]
    return {"Out@GRAD": rng.standard_normal(out.shape).astype(dtype)}, attrs


REFERENCES = {"pad": pad, "pad_grad": pad_grad}
SAMPLES = {"pad": sample_pad, "pad_grad": sample_pad_grad}
