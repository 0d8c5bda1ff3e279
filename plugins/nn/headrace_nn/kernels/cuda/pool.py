"""pool2d and pool2d_grad on CUDA: max / avg over 2-D windows (plain, global, adaptive), NCHW and
NHWC, with the CPU kernel's window rules (kernels/cpu/pool.pyx).

Each window is computed in the kernel from scalars (no host tables copied per call): a plain
window is [i*stride - pad, +k) clipped to the input, an adaptive one
[floor(i*in/out), ceil((i+1)*in/out)); global pooling is a plain window of the whole plane.

pool2d runs one thread per output element: max keeps the CPU kernel's comparisons (a NaN
anywhere in a window is its maximum), avg sums in float64 and divides by the real count when
exclusive (or adaptive), else by kh*kw; a window with no real element gives 0.

pool2d_grad runs one thread per X@GRAD element, gathering from the windows that cover it (their
output rows/columns found in closed form), so no atomics are needed: max recomputes each
covering window's first argmax (ties to the first in row-major order, NaN wins as in the
forward) and takes that window's Out@GRAD if the argmax is this element; avg adds
Out@GRAD / divisor, rounded to X's dtype first. The windows are visited in row-major output
order and summed in X's dtype, as the CPU kernel adds them into X@GRAD.
"""
import numpy as np
from numba import cuda, float64

from headrace.kernels.cuda_launch import (device_empty, empty_like, flat, float_input, launch,
                                          same_shape_dtype)
from headrace.kernels.cuda_rows import rounded

from ..host.pool import PoolAttrs
from ._pixels import pixel_of, plane_of

DTYPES = ("float32", "float64")


@cuda.jit(device=True)
def _win(i, size, n, k, stride, pad, adaptive):
    """[start, end) of window ``i`` of one axis, clipped to [0, size) as the CPU's _fill."""
    if adaptive:
        a = (i * size) // n
        b = ((i + 1) * size + n - 1) // n
    else:
        a = i * stride - pad
        b = a + k
    s = min(max(a, 0), size)
    e = max(min(b, size), s)
    return s, e


@cuda.jit(device=True)
def _takes(v, m):
    """The CPU kernel's rule: v replaces the running maximum m if larger or the first NaN."""
    return v > m or (v != v and m == m)


@cuda.jit(device=True)
def _argmax(x, base, ys, ye, xs, xe, W, cstride):
    """Flat offset (from ``base``) of the first maximum of a non-empty window."""
    arg = (ys * W + xs) * cstride
    m = x[base + arg]
    for y in range(ys, ye):
        for c in range(xs, xe):
            k = (y * W + c) * cstride
            if _takes(x[base + k], m):
                m = x[base + k]
                arg = k
    return arg


@cuda.jit
def _pool(x, out, C, H, W, Ho, Wo, kh, kw, sh, sw, pt, pl, adaptive, is_max, exclusive, nhwc):
    o = cuda.grid(1)
    if o >= out.size:
        return
    # Output index -> (n, c, oh, ow); ``base`` is X's offset of (n, c, 0, 0) and ``cs`` the
    # stride between neighbouring pixels of one channel.
    oh, ow, n, c = pixel_of(o, C, Ho, Wo, nhwc)
    base, cs = plane_of(n, c, C, H, W, nhwc)
    ys, ye = _win(oh, H, Ho, kh, sh, pt, adaptive)
    xs, xe = _win(ow, W, Wo, kw, sw, pl, adaptive)
    cnt = (ye - ys) * (xe - xs)
    if cnt <= 0:
        out[o] = 0
        return
    if is_max:
        out[o] = x[base + _argmax(x, base, ys, ye, xs, xe, W, cs)]
    else:
        acc = float64(0.0)
        for y in range(ys, ye):
            for c2 in range(xs, xe):
                acc += x[base + (y * W + c2) * cs]
        div = float64(cnt) if exclusive else float64(kh * kw)
        out[o] = acc / div


@cuda.jit(device=True)
def _covering(i, size, n, k, stride, pad, adaptive):
    """[first, last] output indices of one axis whose windows hold input position ``i``."""
    if adaptive:
        return (i * n) // size, min(((i + 1) * n - 1) // size, n - 1)
    # i in [o*stride - pad, o*stride - pad + k)  <=>  (i + pad - k) < o*stride <= i + pad
    lo_num = i + pad - k + 1
    lo = (lo_num + stride - 1) // stride if lo_num > 0 else 0
    return lo, min((i + pad) // stride, n - 1)


@cuda.jit
def _pool_grad(x, dy, dx, C, H, W, Ho, Wo, kh, kw, sh, sw, pt, pl, adaptive, is_max,
               exclusive, nhwc, is32):
    i = cuda.grid(1)
    if i >= dx.size:
        return
    yy, xx, n, c = pixel_of(i, C, H, W, nhwc)
    base, cs = plane_of(n, c, C, H, W, nhwc)
    obase, _ = plane_of(n, c, C, Ho, Wo, nhwc)
    me = (yy * W + xx) * cs
    acc = float64(0.0)   # holds X's dtype's values: each sum rounded as the CPU's float +=
    oh0, oh1 = _covering(yy, H, Ho, kh, sh, pt, adaptive)
    ow0, ow1 = _covering(xx, W, Wo, kw, sw, pl, adaptive)
    for oh in range(oh0, oh1 + 1):
        ys, ye = _win(oh, H, Ho, kh, sh, pt, adaptive)
        for ow in range(ow0, ow1 + 1):
            xs, xe = _win(ow, W, Wo, kw, sw, pl, adaptive)
            g = dy[obase + (oh * Wo + ow) * cs]
            if is_max:
                if _argmax(x, base, ys, ye, xs, xe, W, cs) == me:
                    acc = rounded(acc + g, is32)
            else:
                cnt = (ye - ys) * (xe - xs)
                div = float64(cnt) if exclusive else float64(kh * kw)
                acc = rounded(acc + rounded(g / div, is32), is32)
    dx[i] = acc


class Pool2D:
    def __init__(self, attrs, info=None):
        self.attrs = PoolAttrs(attrs)

    def __call__(self, x):
        float_input(x, "pool2d", "X")
        if x.ndim != 4:
            raise ValueError(f"pool2d: X{list(x.shape)} must be 4-D")
        plan = self.attrs.plan(tuple(x.shape))
        out = device_empty(plan.oshape, x.dtype)
        launch(_pool, out.size, flat(x), flat(out), *plan.scalars())
        return (out,)


class Pool2DGrad(Pool2D):
    """pool2d_grad(X, Out, Out@GRAD) -> (X@GRAD,)."""

    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, x, out, dout):
        name = "pool2d_grad"
        for slot, v in (("X", x), ("Out", out), ("Out@GRAD", dout)):
            if v is None:
                raise TypeError(f"{name}: input {slot} is missing")
            float_input(v, name, slot)
        for slot, v in (("Out", out), ("Out@GRAD", dout)):
            if v.dtype != x.dtype:
                raise TypeError(f"{name}: {slot} has dtype {v.dtype} but X is {x.dtype}")
        if x.ndim != 4:
            raise ValueError(f"{name}: X{list(x.shape)} must be 4-D")
        plan = self.attrs.plan(tuple(x.shape))
        oshape = plan.oshape
        if tuple(out.shape) != oshape:
            raise ValueError(f"{name}: Out{list(out.shape)} must have the pooled shape "
                             f"{list(oshape)}")
        same_shape_dtype(out, dout, name, "Out", "Out@GRAD")
        if not self.want:
            return (None,)
        dx = empty_like(x)
        launch(_pool_grad, dx.size, flat(x), flat(dout), flat(dx), *plan.scalars(),
               x.dtype == np.float32)
        return (dx,)


KERNELS = [("pool2d", Pool2D, DTYPES), ("pool2d_grad", Pool2DGrad, DTYPES)]
