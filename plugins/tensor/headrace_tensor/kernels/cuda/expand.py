"""expand_v2, expand_as_v2, expand and their gradients on CUDA.

The forward ops resolve the target shape by the CPU kernel's host plan
(kernels/host/expand.py), then copy a broadcast view of X in one strided-copy launch (one
thread per output element): a broadcast dim reads with stride 0; expand (numpy.tile) splits
each dim into (tile, element) with the tile stride 0. The gradients sum Out@GRAD over the
broadcast axes (expand: over the tiles) with headrace.kernels.cuda_strided.sum_tiles: one block
per X@GRAD element, a shared-memory tree over its copies, accumulated in float64 (the CPU
kernel sums in X's dtype).

Exception to "values stay on the device": the Shape / expand_shapes_tensor / ExpandTimes /
expand_times_tensor inputs are shape metadata, read on the host as the CPU kernel reads them.
"""
from headrace.kernels.cuda_launch import device_empty
from headrace.kernels.cuda_strided import contiguous_strides, strided_copy, sum_tiles

from ..host.expand import (broadcast_lead, check_times, check_tiling, expanded,
                           given_values)
from ._common import ALL_DTYPES, GRAD_DTYPES, dense, host_ints, ints_of_list
from .reshape import copy_of

def broadcast_copy(a, shape):
    """A new device array: ``a`` broadcast to ``shape`` (numpy.broadcast_to, copied)."""
    xs = (1,) * (len(shape) - len(a.shape)) + tuple(a.shape)
    strides = tuple(0 if d == 1 else s for d, s in zip(xs, contiguous_strides(xs)))
    out = device_empty(shape, a.dtype)
    return strided_copy(a, out, shape, strides, contiguous_strides(shape))


class ExpandV2:
    """expand_v2: (X, Shape, expand_shapes_tensor) -> (Out,)."""

    def __init__(self, attrs, info=None):
        self.shape = [int(v) for v in attrs["shape"]]

    def __call__(self, x, shape_tensor=None, shape_list=None):
        a = dense(x, "expand_v2", "X")
        target = given_values(self.shape, shape_tensor, shape_list, "expand_v2", "Shape",
                              "expand_shapes_tensor", host_ints, ints_of_list)
        what = "the target shape" if target is not self.shape else "attribute 'shape'"
        return (broadcast_copy(a, expanded(tuple(a.shape), tuple(target), "expand_v2", what,
                                           True)),)


class ExpandAsV2:
    """expand_as_v2: (X, Y) -> (Out,); Y's shape wins over target_shape."""

    def __init__(self, attrs, info=None):
        self.target = [int(v) for v in attrs["target_shape"]]

    def __call__(self, x, y=None):
        a = dense(x, "expand_as_v2", "X")
        if y is not None:
            target, what = list(dense(y, "expand_as_v2", "Y").shape), "the shape of Y"
        else:
            target, what = self.target, "attribute 'target_shape'"
        return (broadcast_copy(a, expanded(tuple(a.shape), tuple(target), "expand_as_v2",
                                           what, False)),)


class Expand:
    """expand: (X, ExpandTimes, expand_times_tensor) -> (Out,) = numpy.tile(X, times)."""

    def __init__(self, attrs, info=None):
        self.times = [int(v) for v in attrs["expand_times"]]

    def __call__(self, x, times_tensor=None, times_list=None):
        a = dense(x, "expand", "X")
        nd = len(a.shape)
        times = given_values(self.times, times_tensor, times_list, "expand", "ExpandTimes",
                             "expand_times_tensor", host_ints, ints_of_list)
        check_times(times, nd)
        # Each dim as (tile, element): the tiles read X again (stride 0), side by side.
        xs = contiguous_strides(a.shape)
        dims = tuple(v for t, d in zip(times, a.shape) for v in (t, d))
        src = tuple(v for s in xs for v in (0, s))
        out_shape = tuple(t * d for t, d in zip(times, a.shape))
        out = device_empty(out_shape, a.dtype)
        return (strided_copy(a, out, dims, src, contiguous_strides(dims)),)


def grad_operands(x, dout, op):
    a = dense(x, op, "X")
    g = dense(dout, op, "Out@GRAD")
    if str(g.dtype) not in GRAD_DTYPES or g.dtype != a.dtype:
        raise TypeError(f"{op}: Out@GRAD is {g.dtype} and X {a.dtype}; both must be float32 "
                        f"or both float64")
    return a, g


class BroadcastGrad:
    """expand_v2_grad / expand_as_v2_grad: (X, [shape tensors,] Out@GRAD) -> (X@GRAD,):
    Out@GRAD summed over the new leading dims and the dims where X has 1."""

    def __init__(self, attrs, info=None, op="expand_v2_grad"):
        self.op = info.op_type if info is not None else op

    def __call__(self, x, *rest):
        a, g = grad_operands(x, rest[-1], self.op)
        xshape, gshape = tuple(a.shape), tuple(g.shape)
        lead = broadcast_lead(xshape, gshape, self.op)
        if gshape == xshape:
            return (copy_of(g),)
        xdims = (1,) * lead + xshape
        reps = tuple(e // d if d else 1 for d, e in zip(xdims, gshape))
        return (sum_tiles(g, xdims, reps).reshape(xshape),)


class ExpandAsV2Grad(BroadcastGrad):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info, "expand_as_v2_grad")


class ExpandGrad:
    """expand_grad: (X, ExpandTimes, expand_times_tensor, Out@GRAD) -> (X@GRAD,): Out@GRAD
    summed over the tiles (the factors are read from the shapes)."""

    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x, *rest):
        a, g = grad_operands(x, rest[-1], "expand_grad")
        xshape, gshape = tuple(a.shape), tuple(g.shape)
        check_tiling(xshape, gshape)
        reps = tuple(e // d if d else 1 for d, e in zip(xshape, gshape))
        return (sum_tiles(g, xshape, reps).reshape(xshape),)


KERNELS = [
    ("expand_v2", ExpandV2, ALL_DTYPES),
    ("expand_as_v2", ExpandAsV2, ALL_DTYPES),
    ("expand", Expand, ALL_DTYPES),
    ("expand_v2_grad", BroadcastGrad, GRAD_DTYPES),
    ("expand_as_v2_grad", ExpandAsV2Grad, GRAD_DTYPES),
    ("expand_grad", ExpandGrad, GRAD_DTYPES),
]
