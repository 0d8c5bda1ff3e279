"""Data-movement helpers shared by the CUDA kernels of every plugin: a copy between two strided
views of flat device arrays (transpose, slice, concat, split, stack, pad, expand are all one),
a zero fill, and the sum of a tiled/broadcast array back onto its tile (expand's gradients, a
broadcast operand's gradient).

A "view" here is host metadata only: an element offset and one element stride per dim of the
index space, passed to the kernel as tuples (by value, so a launch copies nothing to the
device). One thread per element of the index space; ranks up to the tensors' own (each rank
compiles its own specialization).
"""
import numpy as np
from numba import cuda, float64

from .cuda_launch import ROW_THREADS, device_empty, flat, launch
from .cuda_rows import block_reduce
from ..devices.cuda import current_stream

__all__ = ["contiguous_strides", "strided_copy", "zeros", "sum_tiles"]


def contiguous_strides(shape):
    """Element strides of a C-contiguous array of ``shape``."""
    strides, s = [], 1
    for d in reversed(tuple(shape)):
        strides.append(s)
        s *= int(d)
    return tuple(reversed(strides))


def _simplify(dims, s_str, d_str):
    """Drop size-1 dims and merge neighbours contiguous in both views: fewer divisions per
    thread (NCHW -> NHWC is a 3-D copy, a row slice a 2-D one). Returns at least one dim."""
    out = []
    for d, a, b in zip(dims, s_str, d_str):
        if d == 1:
            continue
        if out and out[-1][1] == a * d and out[-1][2] == b * d:
            out[-1] = [out[-1][0] * d, a, b]
        else:
            out.append([d, a, b])
    if not out:
        out = [[1, 0, 0]]
    return (tuple(int(v[0]) for v in out), tuple(int(v[1]) for v in out),
            tuple(int(v[2]) for v in out))


@cuda.jit
def _strided_copy(src, s_off, s_str, dst, d_off, d_str, dims, n):
    i = cuda.grid(1)
    if i < n:
        r = i
        s = s_off
        d = d_off
        for k in range(len(dims) - 1, -1, -1):
            c = r % dims[k]
            r //= dims[k]
            s += c * s_str[k]
            d += c * d_str[k]
        dst[d] = src[s]


def strided_copy(src, dst, dims, src_strides, dst_strides, src_offset=0, dst_offset=0):
    """For every index c of ``dims``: dst.flat[dst_offset + c . dst_strides] =
    src.flat[src_offset + c . src_strides] (element units; a stride may be 0 to broadcast or
    negative to reverse). ``src``/``dst`` are contiguous device arrays of one dtype; ``dst`` is
    returned."""
    n = 1
    for d in dims:
        n *= int(d)
    if n == 0:
        return dst
    dims, s_str, d_str = _simplify(dims, src_strides, dst_strides)
    launch(_strided_copy, n, flat(src), int(src_offset), s_str, flat(dst), int(dst_offset),
           d_str, dims, n)
    return dst


@cuda.jit
def _zero(a, n):
    i = cuda.grid(1)
    if i < n:
        a[i] = 0


def zeros(shape, dtype):
    """A new device array of ``shape`` filled with zeros by a kernel on the executor's stream."""
    out = device_empty(shape, dtype)
    launch(_zero, out.size, flat(out), out.size)
    return out


@cuda.jit(device=True)
def _tile_base(j, xdims, gstr):
    """g's offset of element ``j`` of the first tile."""
    base = 0
    r = j
    for k in range(len(xdims) - 1, -1, -1):
        base += (r % xdims[k]) * gstr[k]
        r //= xdims[k]
    return base


@cuda.jit(device=True)
def _tile_offset(base, m, xdims, reps, gstr):
    """g's offset of the element at ``base`` in tile ``m``."""
    off = base
    for k in range(len(reps) - 1, -1, -1):
        off += (m % reps[k]) * xdims[k] * gstr[k]
        m //= reps[k]
    return off


@cuda.jit
def _sum_tiles(g, out, xdims, reps, gstr, M):
    # One block per element j of the tile; its threads stride over the M tiles, accumulate in
    # float64 and meet in a shared-memory tree.
    buf = cuda.shared.array(ROW_THREADS, float64)
    j = cuda.blockIdx.x
    t = cuda.threadIdx.x
    base = _tile_base(j, xdims, gstr)
    acc = 0.0
    m = t
    while m < M:
        acc += g[_tile_offset(base, m, xdims, reps, gstr)]
        m += ROW_THREADS
    acc = block_reduce(buf, acc, False)
    if t == 0:
        out[j] = acc


@cuda.jit
def _sum_tiles_serial(g, out, xdims, reps, gstr, M, nx):
    # Few copies per element: one thread per element of the tile, a serial float64 sum.
    j = cuda.grid(1)
    if j < nx:
        base = _tile_base(j, xdims, gstr)
        acc = 0.0
        for m in range(M):
            acc += g[_tile_offset(base, m, xdims, reps, gstr)]
        out[j] = acc


# Up to this many copies per element, a thread sums them alone (no block, no shared memory).
SERIAL_TILES = 32


def sum_tiles(g, xdims, reps):
    """X-shaped sum of ``g`` (contiguous, dims xdims[k] * reps[k]) over its tiles:
    out[j] = sum over r of g[r * xdims + j] per dim. A broadcast dim is xdims[k] = 1, reps[k] =
    the broadcast size; a new leading dim of g is a dim with xdims[k] = 1 too. A new array of
    g's dtype with shape ``xdims`` (reshape it as needed); sums accumulate in float64: a thread
    per element when there are few tiles, else a block per element and a shared-memory tree."""
    xdims = tuple(int(d) for d in xdims) or (1,)
    reps = tuple(int(r) for r in reps) or (1,)
    out = device_empty(xdims, g.dtype)
    nx = int(np.prod(xdims, dtype=np.int64))
    M = int(np.prod(reps, dtype=np.int64))
    if nx == 0:
        return out
    if M == 0:
        launch(_zero, nx, flat(out), nx)
        return out
    gstr = contiguous_strides(tuple(d * r for d, r in zip(xdims, reps)))
    if M <= SERIAL_TILES:
        launch(_sum_tiles_serial, nx, flat(g), flat(out), xdims, reps, gstr, M, nx)
        return out
    _sum_tiles[nx, ROW_THREADS, current_stream()](flat(g), flat(out), xdims, reps, gstr, M)
    return out
