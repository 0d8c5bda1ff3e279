"""reshape2 and flatten_contiguous_range (and their one gradient kernel) on CUDA: the same
elements in row-major order under a new shape, so no kernel runs for the data: Out is a view
of X's contiguous device array, copied (one elementwise copy kernel) exactly where the CPU
kernel copies: when X or Out may not alias (a persistable variable an optimizer updates in
place). XShape is a placeholder of shape [0] + X.dims with no data.

Exception to "values stay on the device": the Shape / ShapeTensor inputs are shape metadata,
read on the host as the CPU kernel reads them (one small copy each, only when given).
"""
from headrace.kernels.cuda_launch import empty_like
from headrace.kernels.cuda_strided import strided_copy

from ..host.reshape import resolve
from ._common import (ALL_DTYPES, GRAD_DTYPES, dense, host_ints, ints_of_list, norm_axis,
                      prod, xshape_of)


def copy_of(a):
    """A new device array equal to ``a`` (one thread per element)."""
    out = empty_like(a)
    return strided_copy(a, out, (a.size,), (1,), (1,))


def reshaped(a, dims, own):
    """``a`` with shape ``dims``: a view, or a copy of its own when ``own``."""
    return (copy_of(a) if own else a).reshape(tuple(dims))


class Reshape2:
    """inputs X, Shape (1-D int tensor), ShapeTensor (one-element int tensors); ShapeTensor
    beats Shape beats the attribute."""

    def __init__(self, attrs, info=None):
        self.shape = tuple(int(d) for d in attrs["shape"])
        self.own = info is not None and not info.may_alias("X", "Out")

    def __call__(self, x, shape=None, shape_tensor=None):
        a = dense(x, "reshape2", "X")
        xdims = tuple(a.shape)
        if shape_tensor:
            dims = resolve(tuple(ints_of_list(shape_tensor, "reshape2", "ShapeTensor")), xdims,
                           "input 'ShapeTensor'")
        elif shape is not None:
            dims = resolve(tuple(host_ints(shape, "reshape2", "Shape")), xdims,
                           "input 'Shape'")
        else:
            dims = resolve(self.shape, xdims, "attribute 'shape'")
        return (reshaped(a, dims, self.own), xshape_of(a))


class FlattenContiguousRange:
    """Out = X with dims start_axis..stop_axis (inclusive) merged; a 0-D X gives [1]."""

    def __init__(self, attrs, info=None):
        self.start, self.stop = attrs["start_axis"], attrs["stop_axis"]
        self.own = info is not None and not info.may_alias("X", "Out")

    def __call__(self, x):
        op = "flatten_contiguous_range"
        a = dense(x, op, "X")
        xdims = tuple(a.shape)
        dims = list(xdims) or [1]
        rank = len(dims)
        start = norm_axis(self.start, rank, op, "start_axis")
        stop = norm_axis(self.stop, rank, op, "stop_axis")
        if start > stop:
            raise ValueError(f"{op}: start_axis {self.start} ({start}) comes after stop_axis "
                             f"{self.stop} ({stop}) for rank {len(xdims)}")
        out = dims[:start] + [prod(dims[start:stop + 1])] + dims[stop + 1:]
        return (reshaped(a, out, self.own), xshape_of(a))


def x_dims_of(xshape, dout, op):
    """X.dims from XShape ([0] + X.dims), after checking XShape against Out@GRAD."""
    xs = dense(xshape, op, "XShape")
    if len(xs.shape) == 0:
        raise ValueError(f"{op}: XShape must be [0] + X.dims (rank >= 1), got a 0-D tensor")
    if str(dout.dtype) not in GRAD_DTYPES:
        raise TypeError(f"{op}: Out@GRAD has dtype {dout.dtype}; supported: "
                        f"{', '.join(GRAD_DTYPES)}")
    if xs.dtype != dout.dtype:
        raise TypeError(f"{op}: Out@GRAD is {dout.dtype} but X (XShape) is {xs.dtype}")
    return tuple(xs.shape)[1:]


class ReshapeGrad:
    """reshape2_grad / flatten_contiguous_range_grad / squeeze2_grad / unsqueeze2_grad:
    (XShape, Out@GRAD) -> (X@GRAD,) = Out@GRAD with the shape XShape[1:]."""

    def __init__(self, attrs, info=None, op="reshape2_grad"):
        self.op = info.op_type if info is not None else op
        self.own = info is not None and not info.may_alias("Out@GRAD", "X@GRAD")

    def __call__(self, xshape, dout):
        g = dense(dout, self.op, "Out@GRAD")
        xdims = x_dims_of(xshape, g, self.op)
        if prod(xdims) != g.size:
            raise ValueError(f"{self.op}: Out@GRAD of shape {list(g.shape)} ({g.size} "
                             f"elements) does not fit X's shape {list(xdims)} "
                             f"({prod(xdims)} elements, from XShape)")
        return (reshaped(g, xdims, self.own),)


KERNELS = [
    ("reshape2", Reshape2, ALL_DTYPES),
    ("flatten_contiguous_range", FlattenContiguousRange, ALL_DTYPES),
    ("reshape2_grad", ReshapeGrad, GRAD_DTYPES),
    ("flatten_contiguous_range_grad", ReshapeGrad, GRAD_DTYPES),
]
