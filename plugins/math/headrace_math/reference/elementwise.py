"""References of elementwise_add/_sub/_mul/_div/_max/_min/_pow with Paddle's ``axis``."""
import numpy as np

from ._util import f64, like, paddle_align


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


def _divide(x, y):
    """X / Y; integers truncate toward zero (C's and Paddle's division, not Python's floor)
    and a 0 divisor is an error, as Paddle enforces."""
    if x.dtype.kind not in "iu":
        return np.divide(x, y)
    if np.any(y == 0):
        raise ZeroDivisionError("integer division by zero")
    q = np.floor_divide(x, y)
    # floor rounds down where the exact quotient is negative and inexact: one step back up
    return q + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))


FUNCS = {
    "elementwise_add": (np.add, False),
    "elementwise_sub": (np.subtract, False),
    "elementwise_mul": (np.multiply, False),
    "elementwise_div": (_divide, False),
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


# -- gradients --------------------------------------------------------------------------------

def sum_to(g, shape):
    """``g`` summed over the dims along which an operand of ``shape`` was broadcast to it."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g.reshape(shape)


def _partials(op, x, y, out, d):
    """(X@GRAD, Y@GRAD) at every output position, in float64, before the broadcast sums
    (Paddle's routing for max and min: ties go to Y)."""
    if op == "elementwise_add":
        return d, d
    if op == "elementwise_sub":
        return d, -d
    if op == "elementwise_mul":
        return d * y, d * x
    if op == "elementwise_div":
        return d / y, -d * out / y
    if op in ("elementwise_max", "elementwise_min"):
        pick_x = (x > y) if op == "elementwise_max" else (x < y)
        return np.where(pick_x, d, 0.0), np.where(pick_x, 0.0, d)
    # pow: d(x**y)/dy = x**y ln x, taken as 0 at x == 0
    safe = np.where(x == 0, 1.0, x)
    return d * y * x ** (y - 1.0), np.where(x == 0, 0.0, d * x ** y * np.log(safe))


def _grad(op):
    def reference(inputs, attrs):
        x0, y0 = np.asarray(inputs["X"]), np.asarray(inputs["Y"])
        x, y = paddle_align(x0, y0, attrs.get("axis", -1))
        d = np.asarray(inputs["Out@GRAD"])
        shape = np.broadcast_shapes(x.shape, y.shape)
        if d.shape != shape:
            raise ValueError(f"Out@GRAD {d.shape} is not the broadcast shape {shape}")
        out = None
        if op == "elementwise_div":
            out = f64(inputs["Out"])
            if out.shape != shape:
                raise ValueError(f"Out {out.shape} is not the broadcast shape {shape}")
        with np.errstate(all="ignore"):
            gx, gy = _partials(op, f64(x), f64(y), out, f64(d))
        gx, gy = np.broadcast_to(gx, shape), np.broadcast_to(gy, shape)
        return {"X@GRAD": like(sum_to(gx, x.shape).reshape(x0.shape), x0),
                "Y@GRAD": like(sum_to(gy, y.shape).reshape(y0.shape), y0)}
    return reference


def _grad_sampler(op):
    forward = SAMPLES[op]

    def sample(rng, dtype):
        inputs, attrs = forward(rng, dtype)
        out = REFERENCES[op](inputs, attrs)["Out"]
        inputs["Out@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
        if op == "elementwise_div":
            inputs["Out"] = out
        return inputs, attrs
    return sample


REFERENCES.update({op + "_grad": _grad(op) for op in FUNCS})
SAMPLES.update({op + "_grad": _grad_sampler(op) for op in FUNCS})
