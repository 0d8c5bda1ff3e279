"""Helpers the reference modules share (a private module: reference discovery skips it).

The array, attribute and shape helpers are the core's (its reference modules need the same
ones for fill_constant and assign); only the LoD helper is this plugin's own.
"""
from headrace.core_ops.reference._util import data, f32, int_tensor, np_dtype, shape_from
from headrace.runtime.tensor import Tensor

__all__ = ["FLOATS", "data", "lod", "f32", "np_dtype", "shape_from", "int_tensor"]

FLOATS = ("float32", "float64")


def lod(v):
    """The LoD of an input (empty for a plain array)."""
    return [list(level) for level in v.lod] if isinstance(v, Tensor) else []
