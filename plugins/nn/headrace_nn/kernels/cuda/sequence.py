"""sequence_pool (AVERAGE, SUM, SQRT, MAX, LAST, FIRST) and its gradient on CUDA, over X's last
LoD level, with the CPU kernel's semantics (kernels/cpu/sequence.pyx): an empty sequence gives
pad_value (MaxIndex -1 under MAX), MaxIndex is the first row of each maximum, a NaN is the
maximum wherever it sits (MaxIndex: its first NaN), and MaxIndex is 0 for the other types.

Forward: one block of POOL_THREADS per (sequence, tile of ``cols`` columns), ``cols`` the
power of two covering the row up to POOL_COLS, the other threads row lanes (POOL_THREADS /
cols of them: 64 for one value per row) that stride over the sequence's rows, consecutive
threads reading consecutive columns of a row; the lanes reduce as a shared-memory tree: sums
in float64, maxima as (value, row) pairs combined so the result is the CPU kernel's whatever
the order of the lanes.

Gradient: one thread per element of X@GRAD: its sequence found by a binary search of the
offsets, its value read from Out@GRAD (no atomics, every element written once). Under MAX the
thread of each sequence's first row checks MaxIndex lies in the sequence; a bad one goes to the
one-element device flag (read at the end of the run, only to raise the CPU kernel's error).

The LoD exception: the offsets are copied to the device once per batch layout (cached on the
kernel object, _seq.DeviceLoD); nothing else crosses between host and device.
"""
import math

import numpy as np
from numba import cuda, float64, int64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import check_flag, device_empty, float_input, grid, new_flag
from headrace.runtime import Tensor

from ._seq import DeviceLoD, lod_key, offsets, rows_of, seq_of

DTYPES = ("float32", "float64")
POOLTYPES = {"AVERAGE": 0, "SUM": 1, "SQRT": 2, "MAX": 3, "LAST": 4, "FIRST": 5}
POOL_THREADS = 64   # threads of a pooling block (a power of two for the tree)
POOL_COLS = 16      # most columns of a block: consecutive, so row reads coalesce


@cuda.jit(device=True)
def _better(v1, i1, v2, i2):
    """Whether (v2, row i2) replaces (v1, row i1) as the maximum; i < 0 is "no row yet". The
    first NaN wins, else the larger value, else (a tie) the earlier row: the CPU kernel's
    sequential scan, whatever the order the pairs are combined in."""
    if i2 < 0:
        return False
    if i1 < 0:
        return True
    if v1 != v1:
        return v2 != v2 and i2 < i1
    if v2 != v2:
        return True
    return v2 > v1 or (v2 == v1 and i2 < i1)


@cuda.jit
def _pool(x, off, out, arg, D, kind, pad, cols):
    s = cuda.blockIdx.x
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    lanes = POOL_THREADS // cols
    d = cuda.blockIdx.y * cols + tx
    t = ty * cols + tx
    val = cuda.shared.array(POOL_THREADS, float64)
    idx = cuda.shared.array(POOL_THREADS, int64)
    a = off[s]
    b = off[s + 1]
    live = d < D
    if a == b or kind >= 4:   # uniform over the block: no lane reduction
        if live and ty == 0:
            k = s * D + d
            if a == b:
                out[k] = pad
                arg[k] = -1 if kind == 3 else 0
            else:
                out[k] = x[(b - 1 if kind == 4 else a) * D + d]
                arg[k] = 0
        return
    v = 0.0
    i = -1
    if live:
        for r in range(a + ty, b, lanes):
            xv = float64(x[r * D + d])
            if kind == 3:
                if _better(v, i, xv, r):
                    v = xv
                    i = r
            else:
                v += xv
    val[t] = v
    idx[t] = i
    cuda.syncthreads()
    step = lanes // 2
    while step > 0:
        if ty < step:
            u = t + step * cols
            if kind == 3:
                if _better(val[t], idx[t], val[u], idx[u]):
                    val[t] = val[u]
                    idx[t] = idx[u]
            else:
                val[t] += val[u]
        cuda.syncthreads()
        step //= 2
    if live and ty == 0:
        k = s * D + d
        v = val[tx]
        if kind == 0:
            v = v / (b - a)
        elif kind == 2:
            v = v / math.sqrt(float64(b - a))
        out[k] = v
        arg[k] = idx[tx] if kind == 3 else 0


@cuda.jit
def _pool_grad(dy, off, arg, dx, S, D, kind, total, bad):
    k = cuda.grid(1)
    if k >= total:
        return
    r = k // D
    d = k % D
    s = seq_of(off, S, r)
    a = off[s]
    b = off[s + 1]
    g = dy[s * D + d]
    if kind == 3:
        m = arg[s * D + d]
        if r == a and (m < a or m >= b):
            cuda.atomic.min(bad, 0, s * D + d)
        dx[k] = g if m == r else 0
    elif kind == 4:
        dx[k] = g if r == b - 1 else 0
    elif kind == 5:
        dx[k] = g if r == a else 0
    elif kind == 1:
        dx[k] = g
    elif kind == 0:
        dx[k] = g / float64(b - a)
    else:
        dx[k] = g / math.sqrt(float64(b - a))


def _kind(attrs, op):
    ptype = attrs.get("pooltype", "AVERAGE")
    if ptype not in POOLTYPES:
        raise ValueError(f"{op}: unknown pooltype {ptype!r}")
    return POOLTYPES[ptype]


def _device_offsets(cache, lod, rows, op):
    """(device offsets of the last level, S), checked on a layout's first sight only."""
    def build():
        off = offsets(lod, rows, op)
        return off, off.size - 1
    return cache.get((rows, lod_key(lod[-1:])), build)


class SequencePool:
    def __init__(self, attrs, info=None):
        self.kind = _kind(attrs, "sequence_pool")
        self.pad = float(attrs.get("pad_value", 0.0))
        self.lod = DeviceLoD()

    def __call__(self, x):
        name = "sequence_pool"
        lod = getattr(x, "lod", None)
        if not lod:
            raise ValueError(f"{name}: X has no LoD; it must be a sequence batch (a Tensor "
                             "with at least one LoD level)")
        a = float_input(x.data, name, "X")
        if a.ndim < 1:
            raise ValueError(f"{name}: X must have a row dim, got shape []")
        rows, D = rows_of(a)
        if rows > 2147483647:
            raise ValueError(f"{name}: X has more rows than MaxIndex (int32) can name")
        off, S = _device_offsets(self.lod, lod, rows, name)
        shape = (S,) + tuple(a.shape[1:])
        out = device_empty(shape, a.dtype)
        arg = device_empty(shape, np.int32)
        if S * D:
            cols = 1
            while cols < min(D, POOL_COLS):
                cols *= 2
            blocks = (S, (D + cols - 1) // cols)
            _pool[blocks, (cols, POOL_THREADS // cols), current_stream()](
                a.reshape(-1), off, out.reshape(-1), arg.reshape(-1), D, self.kind, self.pad,
                cols)
        return (Tensor(out, [list(level) for level in lod[:-1]]), Tensor(arg, []))


class SequencePoolGrad:
    """sequence_pool_grad(X, MaxIndex, Out@GRAD) -> (X@GRAD,); X is read for its LoD and shape."""

    def __init__(self, attrs, info=None):
        self.info = info
        self.kind = _kind(attrs, "sequence_pool_grad")
        self.want = info is None or info.wants("X@GRAD")
        self.lod = DeviceLoD()

    def __call__(self, x, max_index, dout):
        name = "sequence_pool_grad"
        lod = getattr(x, "lod", None)
        if not lod:
            raise ValueError(f"{name}: X has no LoD; it must be the forward's sequence batch")
        a = float_input(x.data, name, "X")
        g = float_input(getattr(dout, "data", dout), name, "Out@GRAD")
        if g.dtype != a.dtype:
            raise TypeError(f"{name}: Out@GRAD has dtype {g.dtype} but X is {a.dtype}")
        if a.ndim < 1:
            raise ValueError(f"{name}: X must have a row dim, got shape []")
        rows, D = rows_of(a)
        off, S = _device_offsets(self.lod, lod, rows, name)
        oshape = (S,) + tuple(a.shape[1:])
        _expect(g, oshape, name, "Out@GRAD")
        m = None
        if self.kind == 3:
            if max_index is None:
                raise ValueError(f"{name}: MAX pooling needs MaxIndex")
            m = getattr(max_index, "data", max_index)
            if str(m.dtype) != "int32":
                raise TypeError(f"{name}: MaxIndex has dtype {m.dtype}, expected int32")
            _expect(m, oshape, name, "MaxIndex")
        if not self.want:
            return (None,)
        dx = device_empty(a.shape, a.dtype)
        total = rows * D
        if total:
            bad = new_flag(S * D)
            blocks, threads = grid(total)
            mflat = m.reshape(-1) if m is not None else off   # unread unless MAX
            _pool_grad[blocks, threads, current_stream()](
                g.reshape(-1), off, mflat, dx.reshape(-1), S, D, self.kind, total, bad)
            if m is not None:
                check_flag(bad, S * D, lambda pos: _bad_index(name, m, lod, pos, D), self.info)
        return (Tensor(dx, [list(level) for level in lod]),)


def _expect(a, shape, op, slot):
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{op}: {slot} has shape {list(a.shape)}, expected {list(shape)} "
                         f"(Out's shape)")


def _bad_index(name, m, lod, pos, D):
    # Only on the error path: the bad value is read back for the message.
    value = int(m.reshape(-1)[pos:pos + 1].copy_to_host()[0])
    s = pos // D if D else 0
    off = lod[-1]
    return IndexError(f"{name}: MaxIndex value {value} (position {pos}) is not a row of "
                      f"sequence {s} [{off[s]}, {off[s + 1]})")


KERNELS = [("sequence_pool", SequencePool, DTYPES, "lod"),
           ("sequence_pool_grad", SequencePoolGrad, DTYPES, "lod")]
