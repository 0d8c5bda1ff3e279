# cython: language_level=3
"""slice, strided_slice and their gradients.

The starts/ends/strides of each axis are normalized as Paddle does (negative indices count
from the end and are clamped to the dim; with a negative step an end of -1 means "through
element 0"; a range that runs against its step is an error) and turned into a NumPy basic
index once per Input shape (the plan of kernels/host/slice.py, shared with the CUDA kernel),
so Out is a view of Input: no copy unless Input or Out is persistable (an optimizer may update
a persistable array in place, which would show through a view).

The gradients write Out@GRAD through the same index into zeros of Input's shape.
"""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain, dtype_name
from ._common cimport int_values, ints_of_list

import numpy as np

from ..host.slice import Slicing

cnp.import_array()

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64", "complex64", "complex128")
GRAD_DTYPES = ("float32", "float64")


cdef object dense(object x, str op, str slot):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}: input '{slot}' must be a dense tensor (a NumPy array on the "
                        f"CPU), got {type(x).__name__}")
    check_plain(<cnp.ndarray>x, op, slot)
    return x


def _ints(t, op, slot):
    return int_values(t, op, slot)


def _ints_of_list(ts, op, slot):
    return ints_of_list(ts, op, slot)


cdef class _Slicing:
    """The host plan (kernels/host/slice.py, shared with the CUDA kernel) and the index of the
    last call given no tensors, kept here so that a call of the same shape costs a compare."""
    cdef str op
    cdef object slicing
    cdef tuple last_shape, last_index

    def _setup(self, dict attrs, str op, bint strided):
        self.op = op
        self.slicing = Slicing(attrs, op, strided, _ints, _ints_of_list)

    cdef tuple index(self, tuple shape, tuple tensors):
        """(the NumPy index, the sliced shape, Out's shape) for an Input of ``shape``;
        ``tensors``: the optional inputs, in the definition's order."""
        # host.slice.given_nothing, inlined: this runs on every call.
        cdef bint cacheable = all(t is None or (isinstance(t, list) and not t) for t in tensors)
        if cacheable and shape == self.last_shape:
            return self.last_index
        result = self.slicing.plan(shape, tensors)
        if cacheable:
            self.last_shape, self.last_index = shape, result
        return result


cdef class Slice(_Slicing):
    """slice / strided_slice: (Input, the start/end(/stride) tensors...) -> (Out,)."""
    cdef bint copy

    def __init__(self, dict attrs, info=None, op="slice"):
        op = info.op_type if info is not None else op
        self._setup(attrs, op, op == "strided_slice")
        self.copy = info is None or not info.may_alias("Input", "Out")

    def __call__(self, x, *tensors):
        a = dense(x, self.op, "Input")
        idx, sliced, out = self.index(a.shape, tensors)
        view = a[idx]
        if self.copy:
            view = view.copy()
        return (view.reshape(out),)


cdef class SliceGrad(_Slicing):
    """slice_grad / strided_slice_grad: (Input, the tensors..., Out@GRAD) -> (Input@GRAD,):
    zeros of Input's shape with Out@GRAD where the slice was taken."""

    def __init__(self, dict attrs, info=None, op="slice_grad"):
        op = info.op_type if info is not None else op
        self._setup(attrs, op, op == "strided_slice_grad")

    def __call__(self, x, *rest):
        a = dense(x, self.op, "Input")
        g = dense(rest[-1], self.op, "Out@GRAD")
        if dtype_name(g) not in GRAD_DTYPES or g.dtype != a.dtype:
            raise TypeError(f"{self.op}: Out@GRAD is {dtype_name(g)} and Input "
                            f"{dtype_name(a)}; both must be float32 or both float64")
        idx, sliced, out = self.index(a.shape, rest[:-1])
        if g.shape != out:
            raise ValueError(f"{self.op}: Out@GRAD has shape {list(g.shape)}, but the slice "
                             f"of Input {list(a.shape)} has shape {list(out)}")
        dx = np.zeros(a.shape, a.dtype)
        dx[idx] = g.reshape(sliced)
        return (dx,)


class StridedSlice(Slice):
    def __init__(self, dict attrs, info=None):
        super().__init__(attrs, info, "strided_slice")


class StridedSliceGrad(SliceGrad):
    def __init__(self, dict attrs, info=None):
        super().__init__(attrs, info, "strided_slice_grad")


KERNELS = [
    ("slice", Slice, ALL_DTYPES),
    ("strided_slice", StridedSlice, ALL_DTYPES),
    ("slice_grad", SliceGrad, GRAD_DTYPES),
    ("strided_slice_grad", StridedSliceGrad, GRAD_DTYPES),
]
