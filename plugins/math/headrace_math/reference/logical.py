"""References of logical_and/or/xor (NumPy broadcasting) and logical_not."""
import numpy as np

FUNCS = {"logical_and": np.logical_and, "logical_or": np.logical_or,
         "logical_xor": np.logical_xor}


def _reference(fn):
    def reference(inputs, attrs):
        return {"Out": np.asarray(fn(inputs["X"], inputs["Y"]), dtype=bool)}
    return reference


def logical_not(inputs, attrs):
    return {"Out": np.asarray(np.logical_not(inputs["X"]), dtype=bool)}


REFERENCES = {op: _reference(fn) for op, fn in FUNCS.items()}
REFERENCES["logical_not"] = logical_not


def _sample_binary(rng, dtype):
    # dtype is ignored: these ops take bool only.
    return {"X": rng.random((2, 1, 4)) < 0.5, "Y": rng.random((3, 1)) < 0.5}, {}


def sample_not(rng, dtype):
    return {"X": rng.random((3, 4)) < 0.5}, {}


SAMPLES = {op: _sample_binary for op in FUNCS}
SAMPLES["logical_not"] = sample_not
