"""Argument checks of the Python API (layers, optimizers, regularizers, clipping).

Each returns the checked (normalized) value or raises a LayerError whose message names the
function, the argument, what was expected and what was found.
"""
import numbers

import numpy as np

from .errors import LayerError
from .framework import Variable

__all__ = ["check_variable", "check_dtype", "check_int", "check_number", "check_bool",
           "check_choice", "check_ints"]


def check_variable(fn, arg, value, dtypes_=None):
    if not isinstance(value, Variable):
        raise LayerError(f"{fn}: argument '{arg}' must be a Variable, got "
                         f"{type(value).__name__} {value!r}"[:300])
    if dtypes_ is not None:
        check_dtype(fn, arg, value, dtypes_)
    return value


def check_dtype(fn, arg, var, allowed):
    if var.dtype not in allowed:
        raise LayerError(f"{fn}: argument '{arg}' ({var.name}) must have dtype "
                         f"{' or '.join(allowed)}, found {var.dtype}")
    return var


def check_int(fn, arg, value, minimum=None, maximum=None):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise LayerError(f"{fn}: argument '{arg}' must be an int, got "
                         f"{type(value).__name__} {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        bounds = " and ".join(b for b in (f">= {minimum}" if minimum is not None else "",
                                          f"<= {maximum}" if maximum is not None else "") if b)
        raise LayerError(f"{fn}: argument '{arg}' must be {bounds}, got {value}")
    return int(value)


def check_number(fn, arg, value, minimum=None, maximum=None, above=None):
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.number)):
        raise LayerError(f"{fn}: argument '{arg}' must be a number, got "
                         f"{type(value).__name__} {value!r}")
    value = float(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum) \
            or (above is not None and value <= above):
        bounds = [f">= {minimum}" if minimum is not None else "",
                  f"> {above}" if above is not None else "",
                  f"<= {maximum}" if maximum is not None else ""]
        raise LayerError(f"{fn}: argument '{arg}' must be {' and '.join(b for b in bounds if b)}"
                         f", got {value}")
    return value


def check_bool(fn, arg, value):
    if not isinstance(value, (bool, np.bool_)):
        raise LayerError(f"{fn}: argument '{arg}' must be a bool, got {type(value).__name__} "
                         f"{value!r}")
    return bool(value)


def check_choice(fn, arg, value, choices):
    if value not in choices:
        raise LayerError(f"{fn}: argument '{arg}' must be one of "
                         f"{', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def check_ints(fn, arg, value, n, minimum=None):
    """An int or a list of ``n`` ints -> a list of ``n`` ints."""
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
        value = [int(value)] * n
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise LayerError(f"{fn}: argument '{arg}' must be an int or a list of {n} ints, got "
                         f"{value!r}")
    return [check_int(fn, arg, v, minimum) for v in value]
