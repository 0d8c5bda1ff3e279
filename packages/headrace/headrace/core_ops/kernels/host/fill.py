"""fill_constant host logic shared by the CPU and CUDA kernels: the dtype attribute, the value
(value or str_value, converted and checked once when the kernel is made) and the output shape
from the attribute or the shape tensors."""
import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.scalars import checked_scalar, parse_str_value

# Dtypes NumPy can hold; fill_constant's kernel takes its output dtype from an attribute (any
# input is a shape or value tensor), so it registers for any input dtype.
ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


def out_dtype(enum_value, op, device):
    """The NumPy dtype of a VarType enum attribute (bfloat16, size_t: a TypeError naming the
    ``device``, "CPU" or "CUDA")."""
    name = _dt.from_proto(enum_value)
    if name not in ALL_DTYPES:
        raise TypeError(f"{op}: dtype {enum_value} ({name}) has no {device} kernel; "
                        f"supported: " + ", ".join(ALL_DTYPES))
    return np.dtype(name)


def constant_attrs(attrs, device):
    """fill_constant's (dtype, shape attribute, checked value) from its attributes."""
    dtype = out_dtype(attrs["dtype"], "fill_constant", device)
    text = attrs.get("str_value", "")
    raw = parse_str_value(text, dtype, "fill_constant") if text else attrs["value"]
    return dtype, [int(d) for d in attrs["shape"]], checked_scalar(raw, dtype, "fill_constant")


def ints_of_list(ts, op, slot, int_values):
    """One integer from each one-element int tensor of a duplicable slot; ``int_values``
    reads a tensor's integers on the host (the device's reader)."""
    out = []
    for i, t in enumerate(ts):
        vals = int_values(t, op, f"{slot}[{i}]")
        if len(vals) != 1:
            raise ValueError(f"{op}: input '{slot}[{i}]' must hold exactly one element, got "
                             f"{len(vals)}")
        out.append(vals[0])
    return out


def checked_shape(dims, op, source):
    """``dims`` as a tuple, if none is negative."""
    for d in dims:
        if d < 0:
            raise ValueError(f"{op}: the output shape from {source} has a negative dim: "
                             f"{dims}")
    return tuple(dims)


def output_shape(shape_tensor, shape_list, attr_shape, int_values):
    """fill_constant's output shape: ShapeTensor, else ShapeTensorList, else the attribute."""
    if shape_tensor is not None:
        return checked_shape(int_values(shape_tensor, "fill_constant", "ShapeTensor"),
                             "fill_constant", "ShapeTensor")
    if shape_list:
        return checked_shape(ints_of_list(shape_list, "fill_constant", "ShapeTensorList",
                                          int_values), "fill_constant", "ShapeTensorList")
    return checked_shape(attr_shape, "fill_constant", "attribute 'shape'")
