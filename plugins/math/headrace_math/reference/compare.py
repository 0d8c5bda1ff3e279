"""References of the comparisons (Paddle's ``axis`` alignment, bool Out)."""
import numpy as np

from ._util import paddle_align

FUNCS = {"less_than": np.less, "less_equal": np.less_equal, "greater_than": np.greater,
         "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal}


def _reference(fn):
    def reference(inputs, attrs):
        x, y = paddle_align(inputs["X"], inputs["Y"], attrs.get("axis", -1))
        return {"Out": np.asarray(fn(x, y), dtype=bool)}
    return reference


REFERENCES = {op: _reference(fn) for op, fn in FUNCS.items()}


def _sample(rng, dtype):
    # Small integers as floats, so that equal pairs occur and == / != are exercised.
    x = rng.integers(-2, 3, (2, 3, 4)).astype(dtype)
    y = rng.integers(-2, 3, (3,)).astype(dtype)
    return {"X": x, "Y": y}, {"axis": 1}


SAMPLES = {op: _sample for op in FUNCS}
