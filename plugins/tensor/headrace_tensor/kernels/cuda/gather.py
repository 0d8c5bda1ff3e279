"""gather, gather_nd and their gradients on CUDA.

The forward kernels run one thread per output element (consecutive threads read a row of X
in order); every index is checked in the kernel before it is used, and a bad one is never
read through: its position goes to the run's bad-index flag (atomic min, so the first bad
position in the CPU kernel's order wins), and the CPU kernel's IndexError is raised from it at
the end of the run (the offending value read back only then). The gradients zero-fill X's
shape and scatter-add Out@GRAD with atomic adds (repeated indices accumulate).

Exception to "values stay on the device": gather's Axis tensor is shape metadata, read on the
host as the CPU kernel reads it.
"""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_launch import check_flag, device_empty, flat, launch, new_flag
from headrace.kernels.cuda_strided import zeros

from ._common import dense, norm_axis, one_int, prod

ALL_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
              "float64")
FLOATS = ("float32", "float64")


def var_name(info, slot):
    """The variable bound to input ``slot``, for messages (the slot itself without an info)."""
    if info is None or not info.inputs.get(slot):
        return slot
    v = info.inputs[slot][0]
    return slot if v is None else f"{slot} ({v.name})"


def int_index(index, op, who):
    if np.dtype(index.dtype).kind not in "iu":
        raise TypeError(f"{op}: {who} must hold int32/int64 indices, got {index.dtype}")
    return index


def raise_bad(flag, total, index, op, who, what_of, info):
    """Queue the check of ``flag``: the CPU kernel's IndexError for the first bad position;
    ``what_of(pos)`` gives (the dim's description, its size)."""
    def report(pos):
        value = int(flat(index)[pos:pos + 1].copy_to_host()[0])
        at = [int(v) for v in np.unravel_index(pos, tuple(index.shape) or (1,))]
        what, size = what_of(pos)
        return IndexError(f"{op}: {who} holds {value} at {at}, out of range for {what} of size "
                          f"{size} (valid: 0..{size - 1})")
    check_flag(flag, total, report, info)


def out_grad(dout, expected, op):
    """Out@GRAD, a float device array of Out's shape ``expected``."""
    g = dense(dout, op, "Out@GRAD")
    if tuple(g.shape) != expected:
        raise ValueError(f"{op}: Out@GRAD has shape {list(g.shape)}, expected "
                         f"{list(expected)} (Out's shape)")
    if str(g.dtype) not in FLOATS:
        raise TypeError(f"{op}: Out@GRAD has dtype {g.dtype}, expected float32 or float64")
    return g


# -- gather -----------------------------------------------------------------------------------

@cuda.jit(device=True)
def _offsets(t, idx, outer, size, n, inner, bad):
    """Thread ``t`` of [max(outer, 1), n, max(inner, 1)]: (its element's offset in the
    [outer, size, inner] operand, in the [outer, n, inner] one), or (-1, -1) where nothing
    moves. Even an empty slice checks its index: a bad one goes to the flag."""
    w = max(inner, 1)
    j = t % w
    i = (t // w) % n
    o = t // (w * n)
    v = idx[i]
    if v < 0 or v >= size:
        cuda.atomic.min(bad, 0, i)
    elif o < outer and j < inner:
        return (o * size + v) * inner + j, (o * n + i) * inner + j
    return -1, -1


@cuda.jit
def _take(x, idx, out, outer, size, n, inner, total, bad):
    t = cuda.grid(1)
    if t < total:
        src, dst = _offsets(t, idx, outer, size, n, inner, bad)
        if src >= 0:
            out[dst] = x[src]


@cuda.jit
def _put_add(g, idx, dx, outer, size, n, inner, total, bad):
    t = cuda.grid(1)
    if t < total:
        dst, src = _offsets(t, idx, outer, size, n, inner, bad)
        if dst >= 0:
            cuda.atomic.add(dx, dst, g[src])


class _GatherBase:
    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]
        self.who = var_name(info, "Index")
        self.info = info

    def _geometry(self, xs, index, axis_t, op):
        if len(xs) == 0:
            raise ValueError(f"{op}: X must have rank >= 1, got a 0-D tensor")
        axis = self.axis if axis_t is None else one_int(axis_t, op, "Axis")
        axis = norm_axis(axis, len(xs), op)
        int_index(index, op, self.who)
        ishape = tuple(index.shape)
        if len(ishape) > 2 or (len(ishape) == 2 and ishape[1] != 1):
            raise ValueError(f"{op}: {self.who} must be 1-D, [N, 1] or 0-D, got shape "
                             f"{list(ishape)}")
        n = prod(ishape)
        oshape = xs[:axis] + (() if not ishape else (n,)) + xs[axis + 1:]
        return axis, n, prod(xs[:axis]), xs[axis], prod(xs[axis + 1:]), oshape

    def _run(self, kernel, x, index, out, axis, n, outer, size, inner, op):
        total = max(outer, 1) * n * max(inner, 1)
        if total:
            bad = new_flag(n)
            launch(kernel, total, flat(x), flat(index), flat(out), outer, size, n, inner, total,
                   bad)
            raise_bad(bad, n, index, op, self.who, lambda pos: (f"dim {axis} of X", size),
                      self.info)


class Gather(_GatherBase):
    def __call__(self, x, index, axis_t=None):
        a = dense(x, "gather", "X")
        axis, n, outer, size, inner, oshape = self._geometry(tuple(a.shape), index, axis_t,
                                                             "gather")
        out = device_empty(oshape, a.dtype)
        self._run(_take, a, index, out, axis, n, outer, size, inner, "gather")
        return (out,)


class GatherGrad(_GatherBase):
    def __call__(self, x, index, axis_t, dout):
        op = "gather_grad"
        xs = tuple(x.shape)
        axis, n, outer, size, inner, expected = self._geometry(xs, index, axis_t, op)
        g = out_grad(dout, expected, op)
        dx = zeros(xs, g.dtype)
        self._run(_put_add, g, index, dx, axis, n, outer, size, inner, op)
        return (dx,)


# -- gather_nd --------------------------------------------------------------------------------

@cuda.jit(device=True)
def _nd_offset(idx, i, k, dims, bad):
    """Row offset of index tuple i (in units of the trailing slice), or -1 (recorded)."""
    off = 0
    for c in range(k):
        v = idx[i * k + c]
        if v < 0 or v >= dims[c]:
            cuda.atomic.min(bad, 0, i * k + c)
            return -1
        off = off * dims[c] + v
    return off


@cuda.jit(device=True)
def _nd_offsets(t, idx, k, dims, inner, bad):
    """Thread ``t`` of [m, max(inner, 1)]: (its element's offset in X's shape, in Out's), or
    (-1, -1) where nothing moves (a bad index flagged, or an empty slice's check)."""
    w = max(inner, 1)
    i = t // w
    j = t % w
    off = _nd_offset(idx, i, k, dims, bad)
    if off >= 0 and j < inner:
        return off * inner + j, i * inner + j
    return -1, -1


@cuda.jit
def _take_nd(x, idx, out, k, dims, inner, total, bad):
    t = cuda.grid(1)
    if t < total:
        src, dst = _nd_offsets(t, idx, k, dims, inner, bad)
        if src >= 0:
            out[dst] = x[src]


@cuda.jit
def _add_nd(g, idx, dx, k, dims, inner, total, bad):
    t = cuda.grid(1)
    if t < total:
        dst, src = _nd_offsets(t, idx, k, dims, inner, bad)
        if dst >= 0:
            cuda.atomic.add(dx, dst, g[src])


class _GatherNdBase:
    def __init__(self, attrs, info=None):
        self.who = var_name(info, "Index")
        self.info = info

    def _geometry(self, xs, index, op):
        int_index(index, op, self.who)
        ishape = tuple(index.shape)
        if not ishape:
            raise ValueError(f"{op}: {self.who} must have rank >= 1, got a 0-D tensor")
        k = ishape[-1]
        if k > len(xs):
            raise ValueError(f"{op}: the last dim of {self.who} ({k}) exceeds X's rank "
                             f"{len(xs)}")
        m = prod(ishape[:-1])
        return k, m, prod(xs[k:]), ishape[:-1] + xs[k:]

    def _run(self, kernel, x, index, out, xs, k, m, inner, op):
        total = m * max(inner, 1)
        if total:
            bad = new_flag(prod(index.shape))
            dims = tuple(int(d) for d in xs[:k]) or (1,)
            launch(kernel, total, flat(x), flat(index), flat(out), k, dims, inner, total, bad)
            raise_bad(bad, prod(index.shape), index, op, self.who,
                      lambda pos: (f"dim {pos % k} of X", xs[pos % k]), self.info)


class GatherNd(_GatherNdBase):
    def __call__(self, x, index):
        a = dense(x, "gather_nd", "X")
        xs = tuple(a.shape)
        k, m, inner, oshape = self._geometry(xs, index, "gather_nd")
        out = device_empty(oshape, a.dtype)
        self._run(_take_nd, a, index, out, xs, k, m, inner, "gather_nd")
        return (out,)


class GatherNdGrad(_GatherNdBase):
    def __call__(self, x, index, dout):
        op = "gather_nd_grad"
        xs = tuple(x.shape)
        k, m, inner, expected = self._geometry(xs, index, op)
        g = out_grad(dout, expected, op)
        dx = zeros(xs, g.dtype)
        self._run(_add_nd, g, index, dx, xs, k, m, inner, op)
        return (dx,)


KERNELS = [("gather", Gather, ALL_DTYPES), ("gather_grad", GatherGrad, FLOATS),
           ("gather_nd", GatherNd, ALL_DTYPES), ("gather_nd_grad", GatherNdGrad, FLOATS)]
