"""References of cumsum and cumsum_grad (computed in float64 / int64, rounded once)."""
import numpy as np

from ._util import f64, like


def _cumsum(x, axis, exclusive, reverse):
    work = f64(x) if x.dtype.kind == "f" else x.astype(np.int64)
    if reverse:
        work = np.flip(work, axis)
    out = np.cumsum(work, axis=axis)
    if exclusive:
        out = out - work
    return np.flip(out, axis) if reverse else out


def cumsum(inputs, attrs):
    x = np.asarray(inputs["X"])
    exclusive, reverse = attrs.get("exclusive", False), attrs.get("reverse", False)
    if attrs.get("flatten", False) or x.ndim == 0:
        out = _cumsum(x.reshape(-1), 0, exclusive, reverse)
        return {"Out": like(out if attrs.get("flatten", False) else out.reshape(()), x)}
    return {"Out": like(_cumsum(x, attrs.get("axis", -1), exclusive, reverse), x)}


def cumsum_grad(inputs, attrs):
    x, g = np.asarray(inputs["X"]), np.asarray(inputs["Out@GRAD"])
    out = _cumsum(g.reshape(-1), 0, attrs.get("exclusive", False),
                  not attrs.get("reverse", False))
    return {"X@GRAD": like(out.reshape(x.shape), g)}


def sample_cumsum(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(1, 4)))]
    attrs = {"axis": int(rng.integers(-len(shape), len(shape))),
             "flatten": bool(rng.random() < 0.25), "exclusive": bool(rng.random() < 0.5),
             "reverse": bool(rng.random() < 0.5)}
    return {"X": rng.standard_normal(shape).astype(dtype)}, attrs


def sample_cumsum_grad(rng, dtype):
    shape = [int(d) for d in rng.integers(1, 5, size=int(rng.integers(2, 4)))]
    n = int(np.prod(shape))
    return ({"X": rng.standard_normal(shape).astype(dtype),
             "Out@GRAD": rng.standard_normal([n]).astype(dtype)},
            {"flatten": True, "exclusive": bool(rng.random() < 0.5),
             "reverse": bool(rng.random() < 0.5)})


REFERENCES = {"cumsum": cumsum, "cumsum_grad": cumsum_grad}
SAMPLES = {"cumsum": sample_cumsum, "cumsum_grad": sample_cumsum_grad}
