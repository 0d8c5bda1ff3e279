"""stack and its gradient on CUDA. stack is a concat along a new axis: one strided-copy launch
per input (one thread per element). stack_grad's slices are views of Y@GRAD on the CPU; here a
slice along axis 0 is a view too (contiguous), any other is a strided copy, and a copy is made
wherever the CPU kernel copies (a persistable variable involved, or no op info).
"""
from headrace.kernels.cuda_launch import device_empty
from headrace.kernels.cuda_strided import strided_copy

from ._common import ALL_DTYPES, GRAD_DTYPES, dense, prod


def _axis(axis, rank, op):
    if not -rank <= axis < rank:
        raise IndexError(f"{op}: axis {axis} is out of range for a result of rank {rank} "
                         f"(valid: {-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


def take(a, k, axis):
    """A new device array: slice ``k`` of ``a`` along ``axis`` (np.take)."""
    shape = tuple(a.shape)
    outer, inner, n = prod(shape[:axis]), prod(shape[axis + 1:]), shape[axis]
    out = device_empty(shape[:axis] + shape[axis + 1:], a.dtype)
    return strided_copy(a, out, (outer, inner), (n * inner, 1), (inner, 1),
                        src_offset=k * inner)


def stacked(arrays, axis):
    """np.stack(arrays, axis) on the device (arrays of one shape and dtype)."""
    shape = tuple(arrays[0].shape)
    n = len(arrays)
    out = device_empty(shape[:axis] + (n,) + shape[axis:], arrays[0].dtype)
    outer, inner = prod(shape[:axis]), prod(shape[axis:])
    for k, a in enumerate(arrays):
        strided_copy(a, out, (outer, inner), (inner, 1), (n * inner, 1), dst_offset=k * inner)
    return out


class Stack:
    """stack: (X,) -> (Y,), Y = numpy.stack(X, axis)."""

    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, xs):
        if not isinstance(xs, list) or not xs:
            raise ValueError("stack: X must be a non-empty list of tensors")
        for i, x in enumerate(xs):
            dense(x, "stack", f"X[{i}]")
            if tuple(x.shape) != tuple(xs[0].shape) or x.dtype != xs[0].dtype:
                raise ValueError(f"stack: X[{i}] is {x.dtype} {list(x.shape)} but X[0] "
                                 f"is {xs[0].dtype} {list(xs[0].shape)}; all must match")
        return (stacked(xs, _axis(self.axis, len(xs[0].shape) + 1, "stack")),)


class StackGrad:
    """stack_grad: (Y@GRAD,) -> (X@GRAD,): the slices of Y@GRAD along axis; entries nobody
    wants (info.wanted) are None."""

    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]
        self.wanted = info.wanted("X@GRAD") if info is not None else None
        self.copy = info is None or not info.may_alias("Y@GRAD", "X@GRAD")

    def __call__(self, dy):
        op = "stack_grad"
        dense(dy, op, "Y@GRAD")
        if str(dy.dtype) not in GRAD_DTYPES:
            raise TypeError(f"{op}: Y@GRAD has dtype {dy.dtype}; supported: "
                            f"{', '.join(GRAD_DTYPES)}")
        if len(dy.shape) == 0:
            raise ValueError(f"{op}: Y@GRAD is 0-D; it must have the stacked axis")
        axis = _axis(self.axis, len(dy.shape), op)
        n = dy.shape[axis]
        wanted = [True] * n if self.wanted is None else self.wanted
        if len(wanted) != n:
            raise ValueError(f"{op}: {len(wanted)} X@GRAD variables for {n} slices of "
                             f"Y@GRAD {list(dy.shape)} along axis {axis}")
        return ([None if not w else dy[k] if axis == 0 and not self.copy else take(dy, k, axis)
                 for k, w in enumerate(wanted)],)


KERNELS = [("stack", Stack, ALL_DTYPES), ("stack_grad", StackGrad, GRAD_DTYPES)]
