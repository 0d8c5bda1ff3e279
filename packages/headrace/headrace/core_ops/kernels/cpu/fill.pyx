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

from headrace.kernels.scalars import checked_scalar

from ..host.assign import each_tensor
from ..host.fill import ALL_DTYPES, constant_attrs, out_dtype, output_shape

cnp.import_array()

cdef list int_values(object t, str op, str slot):
    """The integers held by an int tensor (any shape, row-major) as a Python list."""
    a = np.asarray(t)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: input '{slot}' must hold integers (int32/int64), got "
                        f"{a.dtype.name}")
    return [int(v) for v in a.reshape(-1)]


def _int_values(t, op, slot):
    return int_values(t, op, slot)


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
    cdef tuple fixed  # the attribute's shape when it is valid: no check per call

    def __init__(self, dict attrs, info=None):
        self.dtype, self.shape, self.value = constant_attrs(attrs, "CPU")
        self.fixed = tuple(self.shape) if all(d >= 0 for d in self.shape) else None

    def __call__(self, shape_tensor=None, shape_list=None, value_tensor=None):
        if shape_tensor is None and not shape_list and self.fixed is not None:
            shape = self.fixed
        else:
            shape = output_shape(shape_tensor, shape_list, self.shape, _int_values)
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
            return (each_tensor(x, zeros_of),)
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
        dtype = x.dtype if self.code == -1 else out_dtype(self.code, "fill_any_like", "CPU")
        return (filled(tuple(x.shape), np.dtype(dtype),
                       checked_scalar(self.value, dtype, "fill_any_like")),)


KERNELS = [
    ("fill_constant", FillConstant, None),
    ("fill_zeros_like", FillZerosLike, ALL_DTYPES),
    ("fill_any_like", FillAnyLike, ALL_DTYPES),
]
