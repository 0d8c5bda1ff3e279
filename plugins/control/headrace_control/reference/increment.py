"""increment: Out = X + step in X's dtype."""
import numpy as np


def increment(inputs, attrs):
    x = np.asarray(inputs["X"])
    if x.size != 1:
        raise ValueError("increment: X must hold one element")
    return {"Out": (x + np.asarray(attrs["step"]).astype(x.dtype)).astype(x.dtype)}


def sample_increment(rng, dtype):
    dt = rng.choice(["int64", "int32", dtype])
    return {"X": np.array([rng.integers(-5, 5)], dtype=dt)}, {"step": float(rng.integers(1, 3))}


REFERENCES = {"increment": increment}
SAMPLES = {"increment": sample_increment}
