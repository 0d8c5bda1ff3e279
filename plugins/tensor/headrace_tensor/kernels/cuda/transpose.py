"""transpose2 (and its gradient) on CUDA: Out = X with its dims permuted, into a new contiguous
device array, as one strided gather with one thread per output element (consecutive threads
write consecutive outputs: coalesced writes). The permutation is simplified first (size-1 dims
dropped, neighbours that stay in order merged), so NCHW -> NHWC is a 3-D index map.
transpose2_grad is the same copy by the inverse permutation.
"""
from headrace.kernels.cuda_launch import device_empty
from headrace.kernels.cuda_strided import contiguous_strides, strided_copy

from ._common import ALL_DTYPES, GRAD_DTYPES, dense, xshape_of


def permutation(axis, nd, op, what):
    """``axis`` with negative entries resolved, if it is a permutation of the ``nd`` dims."""
    if len(axis) != nd:
        raise ValueError(f"{op}: axis {axis} needs one entry per dim of {what}")
    perm = [ax + nd if ax < 0 else ax for ax in axis]
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"{op}: axis {axis} is not a permutation of the {nd} dims of X")
    return perm


def transposed(a, perm):
    """A new contiguous device array: ``a`` with dims permuted by ``perm``."""
    shape = tuple(a.shape)
    out_shape = tuple(shape[ax] for ax in perm)
    out = device_empty(out_shape, a.dtype)
    xs = contiguous_strides(shape)
    return strided_copy(a, out, out_shape, tuple(xs[ax] for ax in perm),
                        contiguous_strides(out_shape))


class Transpose2:
    def __init__(self, attrs, info=None):
        self.axis = [int(a) for a in attrs["axis"]]

    def __call__(self, x):
        a = dense(x, "transpose2", "X")
        shape = tuple(a.shape)
        perm = permutation(self.axis, len(shape), "transpose2", f"X (shape {list(shape)})")
        return (transposed(a, perm), xshape_of(a))


class Transpose2Grad:
    """transpose2_grad: (XShape, Out@GRAD) -> (X@GRAD,) = Out@GRAD permuted by the inverse
    permutation; X's dims come from XShape ([0] + X.dims)."""

    def __init__(self, attrs, info=None):
        self.axis = [int(a) for a in attrs["axis"]]

    def __call__(self, xshape, dout):
        op = "transpose2_grad"
        xs = dense(xshape, op, "XShape")
        g = dense(dout, op, "Out@GRAD")
        if len(xs.shape) == 0:
            raise ValueError(f"{op}: XShape must be [0] + X.dims (rank >= 1), got a 0-D tensor")
        if str(g.dtype) not in GRAD_DTYPES:
            raise TypeError(f"{op}: Out@GRAD has dtype {g.dtype}; supported: "
                            f"{', '.join(GRAD_DTYPES)}")
        if xs.dtype != g.dtype:
            raise TypeError(f"{op}: Out@GRAD is {g.dtype} but X (XShape) is {xs.dtype}")
        xdims = tuple(xs.shape)[1:]
        nd = len(xdims)
        perm = permutation(self.axis, nd, op, f"X (shape {list(xdims)}, from XShape)")
        out_dims = tuple(xdims[ax] for ax in perm)
        if tuple(g.shape) != out_dims:
            raise ValueError(f"{op}: Out@GRAD has shape {list(g.shape)}, expected Out's shape "
                             f"{list(out_dims)} (X's {list(xdims)} permuted by axis "
                             f"{self.axis})")
        inv = [0] * nd
        for i in range(nd):
            inv[perm[i]] = i
        return (transposed(g, inv),)


KERNELS = [("transpose2", Transpose2, ALL_DTYPES),
           ("transpose2_grad", Transpose2Grad, GRAD_DTYPES)]
