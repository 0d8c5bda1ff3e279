# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Constant tensors: fill_constant, assign_value, fill_zeros_like.

Every call returns a fresh array: the output variable may be an optimizer's state that later
ops update in place, so a constant cached in the kernel must never be handed out itself.

Filling is one ``PyArray_FillWithScalar`` (NumPy's typed C loop) into a new array of the
requested dtype; what needs care is the value: it is converted once, when the kernel is made
(or per call from ValueTensor), with C semantics made safe - float to int truncates toward
zero, nonzero (NaN included) to bool is true, and a value an integer dtype cannot hold (out of
range, inf, NaN) is a ValueError instead of undefined behaviour.
"""
cimport numpy as cnp
from headrace.kernels.common cimport empty
from ._common cimport int_values, ints_of_list

import math

import numpy as np

from headrace import dtypes as _dt
from headrace.runtime.tensor import Tensor, TensorArray

cnp.import_array()

# Dtypes NumPy can hold; the kernels of fill_constant/assign_value take their output dtype from
# an attribute (any input is a shape or value tensor), so they register for any input dtype.
ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


cdef object out_dtype(int enum_value, str op):
    """The NumPy dtype of a VarType enum attribute (bfloat16, size_t: a TypeError)."""
    name = _dt.from_proto(enum_value)
    if name not in ALL_DTYPES:
        raise TypeError(f"{op}: dtype {enum_value} ({name}) has no CPU kernel; supported: "
                        + ", ".join(ALL_DTYPES))
    return np.dtype(name)


cdef object convert(object v, object dtype, str op):
    """``v`` (a Python/NumPy number) as a NumPy scalar of ``dtype``, C-style but checked."""
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


cdef object parse_str_value(str text, object dtype, str op):
    """str_value: exact for integers ("9223372036854775807"), else a double ("inf", "1e-30")."""
    s = text.strip()
    if dtype.kind in "iu":
        try:
            return int(s)
        except ValueError:
            pass
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"{op}: str_value {text!r} is not a number") from None


cdef tuple checked_shape(list dims, str op, str source):
    for d in dims:
        if d < 0:
            raise ValueError(f"{op}: the output shape from {source} has a negative dim: "
                             f"{dims}")
    return tuple(dims)


cdef cnp.ndarray filled(tuple shape, object dtype, object value):
    cdef cnp.ndarray out = empty(shape, dtype.num)
    if cnp.PyArray_SIZE(out):
        cnp.PyArray_FillWithScalar(out, value)
    return out


cdef class FillConstant:
    """Out = shape (attribute, ShapeTensor or ShapeTensorList) filled with the value
    (attribute value/str_value, or ValueTensor) in the dtype attribute's type."""
    cdef object dtype, value
    cdef list shape

    def __init__(self, dict attrs, info=None):
        self.dtype = out_dtype(attrs["dtype"], "fill_constant")
        self.shape = [int(d) for d in attrs["shape"]]
        text = attrs.get("str_value", "")
        raw = parse_str_value(text, self.dtype, "fill_constant") if text else attrs["value"]
        self.value = convert(raw, self.dtype, "fill_constant")

    def __call__(self, shape_tensor=None, shape_list=None, value_tensor=None):
        if shape_tensor is not None:
            shape = checked_shape(int_values(shape_tensor, "fill_constant", "ShapeTensor"),
                                  "fill_constant", "ShapeTensor")
        elif shape_list:
            shape = checked_shape(ints_of_list(shape_list, "fill_constant", "ShapeTensorList"),
                                  "fill_constant", "ShapeTensorList")
        else:
            shape = checked_shape(self.shape, "fill_constant", "attribute 'shape'")
        value = self.value
        if value_tensor is not None:
            v = np.asarray(value_tensor)
            if v.size != 1 or v.dtype.kind not in "biuf":
                raise ValueError(f"fill_constant: ValueTensor must hold one number, got "
                                 f"{v.dtype.name} of shape {list(v.shape)}")
            value = convert(v.reshape(-1)[0].item(), self.dtype, "fill_constant")
        return (filled(shape, self.dtype, value),)


# dtype -> the attribute holding assign_value's data (Paddle's names).
_VALUE_ATTRS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
                "bool": "bool_values", "float64": "fp64_values"}


cdef class AssignValue:
    """Out = the constant in the values attribute matching dtype, built once in the maker."""
    cdef cnp.ndarray const

    def __init__(self, dict attrs, info=None):
        name = _dt.from_proto(attrs["dtype"])
        if name not in _VALUE_ATTRS:
            raise TypeError(f"assign_value: dtype {attrs['dtype']} ({name}) is not one of "
                            + ", ".join(_VALUE_ATTRS))
        key = _VALUE_ATTRS[name]
        shape = [int(d) for d in attrs["shape"]]
        values = list(attrs.get(key, []))
        n = 1
        for d in shape:
            if d < 0:
                raise ValueError(f"assign_value: shape {shape} has a negative dim")
            n *= d
        if len(values) != n:
            raise ValueError(f"assign_value: {key} holds {len(values)} values, shape {shape} "
                             f"needs {n}")
        dtype = np.dtype(name)
        self.const = np.array([convert(v, dtype, "assign_value") for v in values],
                              dtype=dtype).reshape(shape)

    def __call__(self):
        return (self.const.copy(),)


cdef object zeros_of(object x):
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, x.dtype)
    raise TypeError(f"fill_zeros_like: X must be a tensor or a tensor array, got "
                    f"{type(x).__name__}")


cdef class FillZerosLike:
    """Out = zeros with X's shape and dtype; a tensor array gives an array of zero tensors
    (same shapes, dtypes and LoDs)."""

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x):
        if isinstance(x, list):
            return (TensorArray(None if t is None else
                                Tensor(zeros_of(t.data), [list(l) for l in t.lod])
                                for t in x),)
        return (zeros_of(x),)


KERNELS = [
    ("fill_constant", FillConstant, None),
    ("assign_value", AssignValue, None),
    ("fill_zeros_like", FillZerosLike, ALL_DTYPES),
]
