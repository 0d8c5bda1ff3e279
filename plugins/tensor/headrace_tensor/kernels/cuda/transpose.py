"""transpose2 (and its gradient) on CUDA: Out = X with its dims permuted, into a new contiguous
device array. The permutation is simplified first (size-1 dims dropped, neighbours that stay
in order merged: NCHW -> NHWC is [N, C, HW] -> [N, HW, C]). Then:
- a swap of the last two dims behind untouched leading ones (a batched 2-D transpose, the
  common case) of a 4- or 8-byte type: 32 x 32 tiles staged in shared memory (rows padded by
  one against bank conflicts), so both the reads of X and the writes of Out are coalesced;
- anything else: one strided gather with one thread per output element (coalesced writes).
transpose2_grad is the same copy by the inverse permutation.
"""
import numpy as np
from numba import cuda, from_dtype

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_empty, flat
from headrace.kernels.cuda_strided import contiguous_strides, strided_copy

from ..host.transpose import inverse, permutation
from ._common import ALL_DTYPES, GRAD_DTYPES, dense, xshape_of
from .reshape import x_dims_of


TILE, TILE_ROWS = 32, 8   # a 32 x 32 tile moved by 32 x 8 threads, 4 elements each
TILE_SHAPE = (32, 33)     # its shared array, rows padded by one (a constant for the compiler)
_TILED = {}               # element type -> its tiled kernel (a shared array needs a fixed type)


def _tiled_kernel(dtype):
    if dtype not in _TILED:
        nbtype = from_dtype(dtype)

        @cuda.jit
        def kernel(x, out, R, C):
            tile = cuda.shared.array(TILE_SHAPE, nbtype)
            base = cuda.blockIdx.z * R * C
            c0, r0 = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
            tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
            for j in range(0, TILE, TILE_ROWS):
                r, c = r0 + ty + j, c0 + tx
                if r < R and c < C:
                    tile[ty + j, tx] = x[base + r * C + c]
            cuda.syncthreads()
            for j in range(0, TILE, TILE_ROWS):
                c, r = c0 + ty + j, r0 + tx
                if c < C and r < R:
                    out[base + c * R + r] = tile[tx, ty + j]
        _TILED[dtype] = kernel
    return _TILED[dtype]


def simplified(shape, perm):
    """(dims, perm) with size-1 dims dropped and input dims that stay neighbours merged."""
    keep = [ax for ax in perm if shape[ax] != 1]
    groups = []   # runs of consecutive input dims, in output order
    for ax in keep:
        if groups and groups[-1][-1] + 1 == ax:
            groups[-1].append(ax)
        else:
            groups.append([ax])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    dims = [int(np.prod([shape[ax] for ax in groups[g]])) for g in order]
    new_of = {g: i for i, g in enumerate(order)}
    return dims, [new_of[g] for g in range(len(groups))]


def transposed(a, perm):
    """A new contiguous device array: ``a`` with dims permuted by ``perm``."""
    shape = tuple(a.shape)
    out_shape = tuple(shape[ax] for ax in perm)
    out = device_empty(out_shape, a.dtype)
    if out.size == 0:
        return out
    dims, p = simplified(shape, perm)
    k = len(dims)
    if (k >= 2 and p[-2:] == [k - 1, k - 2] and p[:-2] == list(range(k - 2))
            and np.dtype(a.dtype).itemsize in (4, 8) and np.dtype(a.dtype).kind in "iuf"):
        B, R, C = int(np.prod(dims[:-2])), dims[-2], dims[-1]
        if B < 65536:
            blocks = ((C + TILE - 1) // TILE, (R + TILE - 1) // TILE, B)
            _tiled_kernel(np.dtype(a.dtype))[blocks, (TILE, TILE_ROWS), current_stream()](
                flat(a), flat(out), R, C)
            return out
    xs = contiguous_strides(shape)
    return strided_copy(a, out, out_shape, tuple(xs[ax] for ax in perm),
                        contiguous_strides(out_shape))


class Transpose2:
    def __init__(self, attrs, info=None):
        self.axis = tuple(int(a) for a in attrs["axis"])

    def __call__(self, x):
        a = dense(x, "transpose2", "X")
        shape = tuple(a.shape)
        perm = permutation(self.axis, shape, "transpose2")
        return (transposed(a, perm), xshape_of(a))


class Transpose2Grad:
    """transpose2_grad: (XShape, Out@GRAD) -> (X@GRAD,) = Out@GRAD permuted by the inverse
    permutation; X's dims come from XShape ([0] + X.dims)."""

    def __init__(self, attrs, info=None):
        self.axis = tuple(int(a) for a in attrs["axis"])

    def __call__(self, xshape, dout):
        op = "transpose2_grad"
        dense(xshape, op, "XShape")  # named first, as the CPU kernel does
        g = dense(dout, op, "Out@GRAD")
        inv = inverse(self.axis, x_dims_of(xshape, g, op), tuple(g.shape), op)
        return (transposed(g, inv),)


KERNELS = [("transpose2", Transpose2, ALL_DTYPES),
           ("transpose2_grad", Transpose2Grad, GRAD_DTYPES)]
