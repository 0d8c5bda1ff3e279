"""Converting a Python/NumPy number to an element of a given dtype, as C does but checked.

Kernels that take a value from an attribute (fill_constant in the core, assign_value and
fill_constant_batch_size_like in headrace-tensor, on every device) convert it once, when the
kernel is made: float to int truncates toward zero,
nonzero (NaN included) to bool is true, a too large float becomes inf, and a value an integer
dtype cannot hold (out of range, inf, NaN) is a ValueError instead of undefined behaviour.
"""
import math

import numpy as np

__all__ = ["checked_scalar", "parse_str_value"]


def checked_scalar(v, dtype, op):
    """``v`` as a NumPy scalar of ``dtype`` (a ``numpy.dtype``); errors name ``op``."""
    kind = dtype.kind
    if kind == "b":
        return np.bool_(v != 0)  # NaN != 0: true, as in C
    if kind in "iu":
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(v):
                raise ValueError(f"{op}: value {v} cannot be stored in {dtype.name}")
            v = int(v)  # truncates toward zero
        v = int(v)
        info = np.iinfo(dtype)
        if not info.min <= v <= info.max:
            raise ValueError(f"{op}: value {v} is out of the range of {dtype.name} "
                             f"[{info.min}, {info.max}]")
        return dtype.type(v)
    with np.errstate(over="ignore"):  # a too large float becomes inf, as a C cast does
        return dtype.type(v)


def parse_str_value(text, dtype, op, what="str_value"):
    """The attribute str_value as Paddle reads it: exact for an integer ``dtype`` (an int64
    beyond 2**53 stays exact: "9223372036854775807"), else a double ("inf", "-1e-30");
    ``what`` names the attribute in the error."""
    s = text.strip()
    if dtype.kind in "iu":
        try:
            return int(s)
        except ValueError:
            pass
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"{op}: {what} {text!r} is not a number") from None
