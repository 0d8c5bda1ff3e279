# cython: language_level=3
"""expand_v2, expand_as_v2, expand and their gradients.

The forward ops resolve the target shape as their shape rule does, with the values the
tensors hold now (kernels/host/expand.py, shared with the CUDA kernel), then copy a broadcast view of X (``np.broadcast_to`` of X reshaped with
leading 1s; expand tiles through a view with a length-1 axis before each dim of X). The
gradients sum Out@GRAD over the broadcast axes (expand: over the tile axes) in X's dtype.
"""
cimport numpy as cnp
from headrace.kernels.common cimport check_plain
from ._common cimport int_values, ints_of_list

import numpy as np

from ..host.expand import (broadcast_lead, check_times, check_tiling, expanded,
                           given_values)

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


cdef object broadcast_copy(object x, tuple shape):
    lead = len(shape) - x.ndim
    return np.array(np.broadcast_to(x.reshape((1,) * lead + x.shape), shape), order="C")


cdef class ExpandV2:
    """expand_v2: (X, Shape, expand_shapes_tensor) -> (Out,)."""
    cdef list shape

    def __init__(self, dict attrs, info=None):
        self.shape = [int(v) for v in attrs["shape"]]

    def __call__(self, x, shape_tensor=None, shape_list=None):
        a = dense(x, "expand_v2", "X")
        target = given_values(self.shape, shape_tensor, shape_list, "expand_v2", "Shape",
                              "expand_shapes_tensor", _ints, _ints_of_list)
        what = "the target shape" if target is not self.shape else "attribute 'shape'"
        return (broadcast_copy(a, expanded(a.shape, tuple(target), "expand_v2", what, True)),)


cdef class ExpandAsV2:
    """expand_as_v2: (X, Y) -> (Out,); Y's shape wins over target_shape."""
    cdef list target

    def __init__(self, dict attrs, info=None):
        self.target = [int(v) for v in attrs["target_shape"]]

    def __call__(self, x, y=None):
        a = dense(x, "expand_as_v2", "X")
        if y is not None:
            target, what = list(dense(y, "expand_as_v2", "Y").shape), "the shape of Y"
        else:
            target, what = self.target, "attribute 'target_shape'"
        return (broadcast_copy(a, expanded(a.shape, tuple(target), "expand_as_v2", what,
                                           False)),)


cdef class Expand:
    """expand: (X, ExpandTimes, expand_times_tensor) -> (Out,) = numpy.tile(X, times)."""
    cdef list times

    def __init__(self, dict attrs, info=None):
        self.times = [int(v) for v in attrs["expand_times"]]

    def __call__(self, x, times_tensor=None, times_list=None):
        a = dense(x, "expand", "X")
        times = given_values(self.times, times_tensor, times_list, "expand", "ExpandTimes",
                             "expand_times_tensor", _ints, _ints_of_list)
        check_times(times, a.ndim)
        # [.., 1, d_i, ..] broadcast to [.., t_i, d_i, ..]: the tiles side by side
        inter = tuple(v for d in a.shape for v in (1, d))
        big = tuple(v for t, d in zip(times, a.shape) for v in (t, d))
        out = np.array(np.broadcast_to(a.reshape(inter), big), order="C")
        return (out.reshape(tuple(t * d for t, d in zip(times, a.shape))),)


cdef object grad_operands(object x, object dout, str op):
    a = dense(x, op, "X")
    g = dense(dout, op, "Out@GRAD")
    if g.dtype.name not in GRAD_DTYPES or g.dtype != a.dtype:
        raise TypeError(f"{op}: Out@GRAD is {g.dtype.name} and X {a.dtype.name}; both must "
                        f"be float32 or both float64")
    return a, g


cdef class BroadcastGrad:
    """expand_v2_grad / expand_as_v2_grad: (X, [shape tensors,] Out@GRAD) -> (X@GRAD,):
    Out@GRAD summed over the new leading dims and the dims where X has 1."""
    cdef str op

    def __init__(self, dict attrs, info=None, op="expand_v2_grad"):
        self.op = info.op_type if info is not None else op

    def __call__(self, x, *rest):
        a, g = grad_operands(x, rest[-1], self.op)
        lead = broadcast_lead(a.shape, g.shape, self.op)
        axes = list(range(lead))
        for k in range(a.ndim):
            if a.shape[k] != g.shape[lead + k]:
                axes.append(lead + k)
        if not axes:
            return (g.copy(),)
        return (g.sum(axis=tuple(axes), dtype=g.dtype).reshape(a.shape),)


class ExpandAsV2Grad(BroadcastGrad):
    def __init__(self, dict attrs, info=None):
        super().__init__(attrs, info, "expand_as_v2_grad")


cdef class ExpandGrad:
    """expand_grad: (X, ExpandTimes, expand_times_tensor, Out@GRAD) -> (X@GRAD,): Out@GRAD
    summed over the tiles (the factors are read from the shapes)."""

    def __init__(self, dict attrs, info=None):
        pass

    def __call__(self, x, *rest):
        a, g = grad_operands(x, rest[-1], "expand_grad")
        check_tiling(a.shape, g.shape)
        if 0 in a.shape:
            return (np.zeros(a.shape, a.dtype),)
        split = tuple(v for d, e in zip(a.shape, g.shape) for v in (e // d, d))
        return (g.reshape(split).sum(axis=tuple(range(0, 2 * a.ndim, 2)), dtype=g.dtype),)


KERNELS = [
    ("expand_v2", ExpandV2, ALL_DTYPES),
    ("expand_as_v2", ExpandAsV2, ALL_DTYPES),
    ("expand", Expand, ALL_DTYPES),
    ("expand_v2_grad", BroadcastGrad, GRAD_DTYPES),
    ("expand_as_v2_grad", ExpandAsV2Grad, GRAD_DTYPES),
    ("expand_grad", ExpandGrad, GRAD_DTYPES),
]
