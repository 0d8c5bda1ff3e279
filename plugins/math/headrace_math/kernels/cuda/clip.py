"""clip and clip_grad, clip_by_norm, squared_l2_norm and its gradient on CUDA.

clip is one thread per element. Bounds given as attributes are resolved on the host as the CPU
kernel does (for integer X truncated into the type's range, as Paddle's cast); bounds given as
one-element Min/Max tensors are read by the kernel itself, never copied to the host. The CPU
kernel's "lower bound exceeds the upper bound" check of tensor bounds is made by the kernel
into a one-element device flag, read at the end of the executor's run only to raise (the two
bounds are then read back for the message). A Min/Max tensor of another dtype than X's, which
the op's shape inference refuses before any kernel runs, is refused here too (the CPU kernel
would read its value; the device kernel reads it in X's type).

The sums (clip_grad's Min@GRAD / Max@GRAD, the squares of clip_by_norm and squared_l2_norm)
are shared-memory tree reductions in double, as the CPU kernel's: a first launch of up to
_BLOCKS blocks (threads striding over the elements, each block's partial sum by a tree), then
one block that sums the partials by a tree and finishes (writes the sums, or the scale of
clip_by_norm in X's type with Paddle's arithmetic), so the result stays on the device.
"""
import math

import numpy as np
from numba import cuda, float64

from headrace.devices.cuda import SIMULATOR, current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, check_flag, device_empty, empty_like,
                                          flat, grid, launch, new_flag, tree_reduce)
from headrace.kernels.cuda_rows import block_reduce

DTYPES = ("float32", "float64", "int32", "int64")
FLOATS = ("float32", "float64")

# Blocks of a reduction's first launch (each a partial sum): enough to fill a GPU; the
# simulator runs each thread in Python.
_BLOCKS = 2 if SIMULATOR else 1024


def _reduce_blocks(n):
    return max(1, min(_BLOCKS, (n + ROW_THREADS - 1) // ROW_THREADS))


# -- clip ---------------------------------------------------------------------------------------

@cuda.jit(device=True)
def _bound(b, has, attr):
    return b[0] if has else attr


@cuda.jit(device=True)
def _check_bounds(mn, mx, has_min, has_max, lo_d, hi_d, bad):
    # The CPU kernel compares the bounds before any truncation, as Python numbers.
    lo = float64(mn[0]) if has_min else lo_d
    hi = float64(mx[0]) if has_max else hi_d
    if lo > hi:
        cuda.atomic.min(bad, 0, 0)


@cuda.jit
def _clip(x, out, mn, mx, has_min, has_max, lo_t, hi_t, lo_d, hi_d, bad):
    i = cuda.grid(1)
    if i == 0 and (has_min or has_max):
        _check_bounds(mn, mx, has_min, has_max, lo_d, hi_d, bad)
    if i < out.size:
        lo = _bound(mn, has_min, lo_t)
        hi = _bound(mx, has_max, hi_t)
        v = x[i]
        out[i] = lo if v < lo else (hi if v > hi else v)


@cuda.jit(device=True)
def _sum_pair(below, above, t, sb, sa):
    """The block's sums of ``sb`` and ``sa`` (thread ``t``'s parts) into below[0], above[0]:
    two shared-memory trees after one barrier."""
    below[t] = sb
    above[t] = sa
    cuda.syncthreads()
    tree_reduce(below, t, False)
    tree_reduce(above, t, False)


@cuda.jit
def _clip_grad_sums(x, g, dx, mn, mx, has_min, has_max, want_dx, lo_t, hi_t, lo_d, hi_d, bad,
                    partial):
    # X@GRAD one element per thread visit (a grid-stride loop), and each block's sums of
    # Out@GRAD below and above the bounds into partial[0, block], partial[1, block].
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    if t == 0 and b == 0 and (has_min or has_max):
        _check_bounds(mn, mx, has_min, has_max, lo_d, hi_d, bad)
    lo = _bound(mn, has_min, lo_t)
    hi = _bound(mx, has_max, hi_t)
    below = cuda.shared.array(ROW_THREADS, float64)
    above = cuda.shared.array(ROW_THREADS, float64)
    sb = 0.0
    sa = 0.0
    for i in range(b * ROW_THREADS + t, x.size, cuda.gridDim.x * ROW_THREADS):
        v = x[i]
        if v > lo and v < hi:       # Paddle's mask: a value at a bound gets nothing
            if want_dx:
                dx[i] = g[i]
        else:
            if want_dx:
                dx[i] = 0
            if v < lo:
                sb += g[i]
            elif v > hi:
                sa += g[i]
    _sum_pair(below, above, t, sb, sa)
    if t == 0:
        partial[0, b] = below[0]
        partial[1, b] = above[0]


@cuda.jit
def _clip_grad_finish(partial, dmin, dmax, want_min, want_max):
    t = cuda.threadIdx.x
    below = cuda.shared.array(ROW_THREADS, float64)
    above = cuda.shared.array(ROW_THREADS, float64)
    sb = 0.0
    sa = 0.0
    for k in range(t, partial.shape[1], ROW_THREADS):
        sb += partial[0, k]
        sa += partial[1, k]
    _sum_pair(below, above, t, sb, sa)
    if t == 0:
        if want_min:
            for k in range(dmin.size):
                dmin[k] = below[0]
        if want_max:
            for k in range(dmax.size):
                dmax[k] = above[0]


def _one(b, op, slot):
    if b.size != 1:
        raise ValueError(f"{op}: input '{slot}' must hold one element, got shape "
                         f"{list(b.shape)}")
    return flat(b)


class _ClipBase:
    def __init__(self, attrs, info=None):
        self.lo, self.hi = float(attrs["min"]), float(attrs["max"])
        self.info = info

    def _bounds(self, x, mn, mx, op):
        """(Min, Max device views (x itself where absent), has_min, has_max, the attribute
        bounds in X's type, the attribute bounds as doubles, the device flag), after the
        CPU kernel's checks of what the host knows."""
        if mn is not None and mn.dtype != x.dtype or mx is not None and mx.dtype != x.dtype:
            b, slot = (mn, "Min") if mn is not None and mn.dtype != x.dtype else (mx, "Max")
            raise TypeError(f"{op}: input '{slot}' has dtype {b.dtype}, expected X's "
                            f"{x.dtype}")
        lo, hi = self.lo, self.hi
        if mn is None and mx is None and lo > hi:
            raise ValueError(f"{op}: the lower bound {lo} exceeds the upper bound {hi}")
        dt = np.dtype(x.dtype)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            lo_t = int(min(max(np.trunc(lo), info.min), info.max))
            hi_t = int(min(max(np.trunc(hi), info.min), info.max))
        else:
            lo_t, hi_t = lo, hi
        mn_d = _one(mn, op, "Min") if mn is not None else flat(x)
        mx_d = _one(mx, op, "Max") if mx is not None else flat(x)
        bad = new_flag(1) if mn is not None or mx is not None else self._no_flag()
        return (mn_d, mx_d, mn is not None, mx is not None, dt.type(lo_t), dt.type(hi_t),
                lo, hi, bad)

    def _no_flag(self):
        # A flag argument that no thread touches (bounds from attributes were checked here).
        if getattr(self, "_unused", None) is None:
            self._unused = cuda.device_array(1, dtype=np.int64, stream=current_stream())
        return self._unused

    def _raise_bad(self, bad, b, op):
        mn_d, mx_d, has_min, has_max, _, _, lo, hi, _ = b

        def report(pos):    # only when the bounds were crossed: read back for the message
            lo_v = mn_d.copy_to_host()[0].item() if has_min else lo
            hi_v = mx_d.copy_to_host()[0].item() if has_max else hi
            return ValueError(f"{op}: the lower bound {lo_v} exceeds the upper bound {hi_v}")
        if has_min or has_max:
            check_flag(bad, 1, report, self.info)


class Clip(_ClipBase):
    def __call__(self, x, mn=None, mx=None):
        if str(x.dtype) not in DTYPES:
            raise TypeError(f"clip: X has dtype {x.dtype}, expected one of {', '.join(DTYPES)}")
        b = self._bounds(x, mn, mx, "clip")
        out = empty_like(x)
        blocks, threads = grid(out.size)    # at least one thread: it checks the bounds
        _clip[blocks, threads, current_stream()](flat(x), flat(out), *b)
        self._raise_bad(b[-1], b, "clip")
        return (out,)


class ClipGrad(_ClipBase):
    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_min = info is None or info.wants("Min@GRAD")
        self.want_max = info is None or info.wants("Max@GRAD")

    def __call__(self, x, mn, mx, dout):
        if tuple(x.shape) != tuple(dout.shape) or x.dtype != dout.dtype:
            raise ValueError(f"clip_grad: Out@GRAD ({dout.dtype}{list(dout.shape)}) must have "
                             f"X's shape and dtype ({x.dtype}{list(x.shape)})")
        if str(x.dtype) not in FLOATS:
            raise TypeError(f"clip_grad: X has dtype {x.dtype}, expected float32 or float64")
        b = self._bounds(x, mn, mx, "clip_grad")
        dx = empty_like(x) if self.want_x else None
        want_min = self.want_min and mn is not None
        want_max = self.want_max and mx is not None
        dmin = device_empty(mn.shape, x.dtype) if want_min else None
        dmax = device_empty(mx.shape, x.dtype) if want_max else None
        stream = current_stream()
        if want_min or want_max or b[2] or b[3] or (dx is not None and dx.size):
            nb = _reduce_blocks(x.size)
            partial = cuda.device_array((2, nb), dtype=np.float64, stream=stream)
            dx_d = flat(dx) if dx is not None else flat(x)
            _clip_grad_sums[nb, ROW_THREADS, stream](
                flat(x), flat(dout), dx_d, b[0], b[1], b[2], b[3], dx is not None, *b[4:],
                partial)
            if want_min or want_max:
                _clip_grad_finish[1, ROW_THREADS, stream](
                    partial, flat(dmin) if want_min else partial[0], flat(dmax) if want_max
                    else partial[1], want_min, want_max)
            self._raise_bad(b[-1], b, "clip_grad")
        return dx, dmin, dmax


KERNELS = [("clip", Clip, DTYPES), ("clip_grad", ClipGrad, FLOATS)]


# -- clip_by_norm, squared_l2_norm ----------------------------------------------------------------

@cuda.jit
def _sum_squares(x, partial):
    # Each block's sum of squares (in double: a float32 tensor's squares without float32
    # rounding) into partial[block].
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = 0.0
    for i in range(b * ROW_THREADS + t, x.size, cuda.gridDim.x * ROW_THREADS):
        v = float64(x[i])
        s += v * v
    s = block_reduce(buf, s, False)
    if t == 0:
        partial[b] = s


@cuda.jit(device=True)
def _total(partial, buf, t):
    s = 0.0
    for k in range(t, partial.size, ROW_THREADS):
        s += partial[k]
    return block_reduce(buf, s, False)


@cuda.jit
def _store_sum(partial, out):
    t = cuda.threadIdx.x
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = _total(partial, buf, t)
    if t == 0:
        out[0] = s


@cuda.jit
def _norm_scale(partial, scale, max_norm, eps, tiny, one, zero):
    # Paddle's arithmetic in X's type (max_norm, eps, tiny, one, zero are of it): the norm,
    # the eps a norm <= tiny gets, max_norm / (norm + eps) if the norm exceeds max_norm, else 1.
    t = cuda.threadIdx.x
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = _total(partial, buf, t)
    if t == 0:
        scale[0] = math.sqrt(s)     # rounded to X's type on store
        norm = scale[0]
        if norm <= max_norm:
            scale[0] = one
        else:
            scale[0] = max_norm / (norm + (eps if norm <= tiny else zero))


@cuda.jit
def _scaled(x, scale, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * scale[0]


@cuda.jit
def _scaled_twice(x, g, out):
    # squared_l2_norm_grad in Paddle's order: X times (2 * Out@GRAD) (exact), in X's type.
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] * (g[0] + g[0])


def _float_x(op, x):
    if str(x.dtype) not in FLOATS:
        raise TypeError(f"{op}: X has dtype {x.dtype}, expected float32 or float64")


def _partial_sums(x):
    stream = current_stream()
    nb = _reduce_blocks(x.size)
    partial = cuda.device_array(nb, dtype=np.float64, stream=stream)
    _sum_squares[nb, ROW_THREADS, stream](flat(x), partial)
    return partial


class ClipByNorm:
    def __init__(self, attrs, info=None):
        self.max_norm = attrs["max_norm"]

    def __call__(self, x):
        _float_x("clip_by_norm", x)
        t = np.dtype(x.dtype).type
        partial = _partial_sums(x)
        scale = device_empty((1,), x.dtype)
        _norm_scale[1, ROW_THREADS, current_stream()](partial, scale, t(self.max_norm), t(1e-6),
                                                      t(1e-30), t(1), t(0))
        out = empty_like(x)
        launch(_scaled, out.size, flat(x), scale, flat(out))
        return (out,)


class SquaredL2Norm:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x):
        _float_x("squared_l2_norm", x)
        out = device_empty((1,), x.dtype)
        _store_sum[1, ROW_THREADS, current_stream()](_partial_sums(x), out)
        return (out,)


class SquaredL2NormGrad:
    def __init__(self, attrs, info=None):
        pass

    def __call__(self, x, dout):
        _float_x("squared_l2_norm_grad", x)
        if dout.size != 1:
            raise ValueError(f"squared_l2_norm_grad: Out@GRAD has shape {list(dout.shape)}, "
                             f"expected one element")
        if dout.dtype != x.dtype:
            raise TypeError(f"squared_l2_norm_grad: Out@GRAD has dtype {dout.dtype}, "
                            f"expected X's {x.dtype}")
        dx = empty_like(x)
        launch(_scaled_twice, dx.size, flat(x), flat(dout), flat(dx))
        return (dx,)


KERNELS += [("clip_by_norm", ClipByNorm, FLOATS), ("squared_l2_norm", SquaredL2Norm, FLOATS),
            ("squared_l2_norm_grad", SquaredL2NormGrad, FLOATS)]
