# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Constant tensors: fill_constant, fill_zeros_like, fill_any_like.

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

import numpy as np

from headrace import dtypes as _dt
from headrace.kernels.scalars import checked_scalar
from headrace.runtime.tensor import Tensor, TensorArray

cnp.import_array()

# Dtypes NumPy can hold; fill_constant's kernel takes its output dtype from an attribute (any
# input is a shape or value tensor), so it registers for any input dtype.
ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")


cdef object out_dtype(int enum_value, str op):
    """The NumPy dtype of a VarType enum attribute (bfloat16, size_t: a TypeError)."""
    name = _dt.from_proto(enum_value)
    if name not in ALL_DTYPES:
        raise TypeError(f"{op}: dtype {enum_value} ({name}) has no CPU kernel; supported: "
                        + ", ".join(ALL_DTYPES))
    return np.dtype(name)


cdef list int_values(object t, str op, str slot):
    """The integers held by an int tensor (any shape, row-major) as a Python list."""
    a = np.asarray(t)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: input '{slot}' must hold integers (int32/int64), got "
                        f"{a.dtype.name}")
    return [int(v) for v in a.reshape(-1)]


cdef list ints_of_list(object ts, str op, str slot):
    """One integer from each one-element int tensor of a duplicable slot."""
    out = []
    for i, t in enumerate(ts):
        vals = int_values(t, op, f"{slot}[{i}]")
        if len(vals) != 1:
            raise ValueError(f"{op}: input '{slot}[{i}]' must hold exactly one element, got "
                             f"{len(vals)}")
        out.append(vals[0])
    return out


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
        self.value = checked_scalar(raw, self.dtype, "fill_constant")

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
            value = checked_scalar(v.reshape(-1)[0].item(), self.dtype, "fill_constant")
        return (filled(shape, self.dtype, value),)


cdef object zeros_of(object x):
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, x.dtype)
    raise TypeError(f"fill_zeros_like: X must be a tensor or a tensor array, got "
                    f"{type(x).__name__}")


cdef class FillZerosLike:
    """Out = zeros with X's shape and dtype; a tensor array gives an array of zero tensors
    (same shapes, dtypes and LoDs); X without a value gives none."""

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x):
        if x is None:
            # A value that never existed (the output of a branch that did not run) has no
            # gradient either: nothing, not zeros of an unknown shape.
            return (None,)
        if isinstance(x, list):
            return (TensorArray(None if t is None else
                                Tensor(zeros_of(t.data), [list(l) for l in t.lod])
                                for t in x),)
        return (zeros_of(x),)


cdef class FillAnyLike:
    """Out = value in X's shape, in the dtype attribute's type (X's when -1)."""
    cdef int code
    cdef object value

    def __init__(self, dict attrs, info=None):
        self.code = attrs["dtype"]
        self.value = attrs["value"]

    def __call__(self, x):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"fill_any_like: X must be a tensor, got {type(x).__name__}")
        dtype = x.dtype if self.code == -1 else out_dtype(self.code, "fill_any_like")
        return (filled(tuple(x.shape), np.dtype(dtype),
                       checked_scalar(self.value, dtype, "fill_any_like")),)


KERNELS = [
    ("fill_constant", FillConstant, None),
    ("fill_zeros_like", FillZerosLike, ALL_DTYPES),
    ("fill_any_like", FillAnyLike, ALL_DTYPES),
]
