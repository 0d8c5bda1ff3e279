"""Helpers the reference modules share (a private module: reference discovery skips it)."""
import numpy as np

from headrace import dtypes as dt
from headrace.runtime.tensor import Tensor


def data(v):
    """The array of an input given as an array or a Tensor."""
    return np.asarray(v.data if isinstance(v, Tensor) else v)


def f32(v):
    """A 'float' attribute as the op sees it: Fluid stores these as 32-bit floats, so 0.1
    arrives as float32(0.1) and a float64 computation must use that value."""
    return float(np.float32(v))


def fattr(attrs, name, default):
    """The float attribute ``name`` (``default`` when absent) as the op sees it."""
    return f32(attrs.get(name, default))


def np_dtype(enum_value):
    """The NumPy dtype of a VarType enum attribute."""
    return dt.to_numpy(dt.from_proto(enum_value))


def shape_from(inputs, attrs):
    """The shape of fill_constant and the random ops: ShapeTensor, ShapeTensorList, 'shape'."""
    if inputs.get("ShapeTensor") is not None:
        return tuple(int(d) for d in data(inputs["ShapeTensor"]).reshape(-1))
    if inputs.get("ShapeTensorList"):
        return tuple(int(data(t).reshape(-1)[0]) for t in inputs["ShapeTensorList"])
    return tuple(int(d) for d in attrs.get("shape", []))


def int_tensor(rng, values):
    """An int32 or int64 tensor (chosen by rng) holding ``values``."""
    return np.asarray(values, dtype=rng.choice(["int32", "int64"]))
