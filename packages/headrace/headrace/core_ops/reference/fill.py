"""References and samples: fill_constant, fill_zeros_like, fill_any_like."""
import math

import numpy as np

from headrace import dtypes as dt

from ._util import data, f32, int_tensor, np_dtype, shape_from


def _as(value, dtype):
    """C-style conversion, checked: float -> int truncates; nonzero -> true."""
    if dtype.kind == "b":
        return np.bool_(value != 0)
    if dtype.kind in "iu":
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{value} does not fit {dtype}")
        v = int(value)
        if not np.iinfo(dtype).min <= v <= np.iinfo(dtype).max:
            raise ValueError(f"{v} does not fit {dtype}")
        return dtype.type(v)
    with np.errstate(over="ignore"):
        return dtype.type(value)


def fill_constant(inputs, attrs):
    dtype = np_dtype(attrs.get("dtype", 5))
    shape = shape_from(inputs, attrs)
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dim in {shape}")
    if inputs.get("ValueTensor") is not None:
        value = data(inputs["ValueTensor"]).reshape(-1)[0].item()
    elif attrs.get("str_value", ""):
        text = attrs["str_value"].strip()
        try:
            value = int(text) if dtype.kind in "iu" else float(text)
        except ValueError:
            value = float(text)
    else:
        value = f32(attrs.get("value", 0.0))
    out = np.empty(shape, dtype)
    out[...] = _as(value, dtype)
    return {"Out": out}


def fill_zeros_like(inputs, attrs):
    x = data(inputs["X"])
    return {"Out": np.zeros_like(x)}


def sample_fill_constant(rng, dtype):
    out_dtype = rng.choice([dtype, "int32", "int64", "bool", "float16"])
    attrs = {"dtype": dt.to_proto(out_dtype), "value": float(rng.choice([0.0, -2.5, 3.0]))}
    kind = rng.integers(4)
    if kind == 0:
        return {}, {**attrs, "shape": [2, 3]}
    if kind == 1:  # exact int64 text beats value
        return {}, {**attrs, "shape": [3], "str_value": "-7",
                    "dtype": dt.to_proto(rng.choice(["int64", dtype]))}
    if kind == 2:
        return {"ShapeTensor": int_tensor(rng, [2, 1, 3])}, {**attrs, "shape": []}
    return ({"ShapeTensorList": [int_tensor(rng, [4]), int_tensor(rng, [2])],
             "ValueTensor": rng.standard_normal(1).astype(dtype)}, {**attrs, "shape": [-1, 2]})


def sample_fill_zeros_like(rng, dtype):
    return {"X": rng.standard_normal((3, 4)).astype(dtype)}, {}


def fill_any_like(inputs, attrs):
    x = inputs["X"]
    if not isinstance(x, np.ndarray):
        raise TypeError("fill_any_like: X must be a tensor")
    code = attrs.get("dtype", -1)
    dtype = x.dtype if code == -1 else np_dtype(code)
    out = np.empty(x.shape, dtype)
    out[...] = _as(f32(attrs.get("value", 0.0)), dtype)
    return {"Out": out}


def sample_fill_any_like(rng, dtype):
    attrs = {"value": float(rng.choice([1.0, -2.5, 0.0])),
             "dtype": int(rng.choice([-1, dt.to_proto("float64"), dt.to_proto("int32")]))}
    return {"X": rng.standard_normal((3, 2)).astype(dtype)}, attrs


REFERENCES = {"fill_constant": fill_constant, "fill_zeros_like": fill_zeros_like,
              "fill_any_like": fill_any_like}
SAMPLES = {"fill_constant": sample_fill_constant, "fill_zeros_like": sample_fill_zeros_like,
           "fill_any_like": sample_fill_any_like}
