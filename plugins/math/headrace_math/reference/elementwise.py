"""References of elementwise_add/_sub/_mul/_div/_max/_min/_pow with Paddle's ``axis``."""
import numpy as np

from ._util import f64, paddle_align


def _ufunc(fn, wide=False):
    """The reference of ``Out = fn(X, Y)``; ``wide`` computes floats in float64 first (pow:
    the kernel calls C's pow in double), else in X's dtype, as IEEE +-*/ round the same."""
    def reference(inputs, attrs):
        x, y = paddle_align(inputs["X"], inputs["Y"], attrs.get("axis", -1))
        with np.errstate(all="ignore"):
            if wide and x.dtype.kind == "f":
                out = fn(f64(x), f64(y)).astype(x.dtype)
            else:
                out = fn(x, y)
        return {"Out": np.asarray(out, dtype=np.asarray(inputs["X"]).dtype)}
    return reference


FUNCS = {
    "elementwise_add": (np.add, False),
    "elementwise_sub": (np.subtract, False),
    "elementwise_mul": (np.multiply, False),
    "elementwise_div": (np.divide, False),
    "elementwise_max": (np.maximum, False),
    "elementwise_min": (np.minimum, False),
    "elementwise_pow": (np.power, True),
}
REFERENCES = {op: _ufunc(fn, wide) for op, (fn, wide) in FUNCS.items()}


def _sampler(op):
    def sample(rng, dtype):
        x = rng.standard_normal((2, 3, 4)).astype(dtype)
        y = rng.standard_normal((3, 1)).astype(dtype)
        if op == "elementwise_pow":
            x = np.abs(x) + 0.5            # real powers of positive bases
        if op == "elementwise_div":
            y = np.where(np.abs(y) < 0.1, 1.0, y).astype(dtype)
        return {"X": x, "Y": y}, {"axis": 1}
    return sample


SAMPLES = {op: _sampler(op) for op in FUNCS}
