"""conv2d and conv2d_grad on CUDA, NCHW and NHWC, groups, strides, paddings (SAME/VALID),
dilations, Bias and ResidualData, as the CPU kernel (kernels/cpu/conv.pyx).

Design: im2col + the shared tiled GEMM (headrace.kernels.cuda_gemm), not a separate implicit-GEMM
kernel. The shared GEMM already is the shared-memory tiled kernel with register blocking and
coalesced tile loads, batched over the grid's z dimension with per-dim operand strides, so one
launch covers every (image, group) product; the im2col pass is one thread per col element
(coalesced writes, reads of neighbouring output positions neighbouring inputs) and costs one
extra write + read of K*P values per image, which for small kernels is little next to the
GEMM's K-fold reuse. Writing and tuning a second tiled kernel (with the patch gather folded
into its shared-memory loads) would duplicate the GEMM's tiling for a gain we cannot measure
here, and the GEMM's tuning then serves matmul, sequence_conv and conv alike. The images are
processed in chunks so the col buffer stays within COL_BYTES (at least one image a chunk).

col[n, g, k, p] (k = (c, i, j) over the group's Cg channels and the kh x kw taps, p = (oh, ow))
has the same layout for both data formats; only the im2col gather and the GEMM's C operand differ:
- NCHW: Output[n, g*Mg:(g+1)*Mg, P] = Filter_g [Mg, K] @ col[n, g] [K, P], batched over (n, g).
- NHWC: Output[n, P, g*Mg:...] (ld M) = col[n, g]^T [P, K] @ Filter_g^T [K, Mg], batched over n,
  one launch per group.
Bias / ResidualData prefill Output (one thread per element) and the GEMM accumulates (beta=1).

conv2d_grad: Output@GRAD is used in place (the NHWC group's columns as a transposed operand
with ld M). Input@GRAD: dcol[n, g] = Filter_g^T @ dY[n, g] by one batched GEMM, then col2im as
one thread per Input@GRAD element gathering the (c, i, j) taps whose windows read it (summed in
float64, no atomics). Filter@GRAD: per-image products dY[n, g] @ col[n, g]^T into a buffer
[n, M, K], summed over the images in float64 by sum_batches (and over the chunks by adding
into a float64 accumulator), so nothing races. Bias@GRAD sums Output@GRAD over images and
positions in float64 (sum_batches); ResidualData@GRAD is a device copy of it.
"""
import numpy as np
from numba import cuda, float64

from headrace.kernels.cuda_gemm import gemm, sum_batches
from headrace.kernels.cuda_launch import device_copy, device_empty, device_fill, flat, launch

from ..host._common import wanted
from ..host.conv import GRADS, ConvAttrs
from ._pixels import pixel_of

DTYPES = ("float32", "float64")
# Bytes of one chunk's col buffer (at least one image per chunk).
COL_BYTES = 64 << 20


@cuda.jit
def _im2col(x, col, n0, C, H, W, Cg, groups, kh, kw, sh, sw, dh, dw, pt, pl, Ho, Wo, nhwc):
    """col[b, g, (c, i, j), (oh, ow)] = x[n0 + b, g*Cg + c, oh*sh - pt + i*dh, ow*sw - pl + j*dw]
    or 0 outside the image; one thread per col element."""
    e = cuda.grid(1)
    if e >= col.size:
        return
    P = Ho * Wo
    K = Cg * kh * kw
    p = e % P
    k = (e // P) % K
    bg = e // (P * K)                  # b * groups + g
    g = bg % groups
    n = n0 + bg // groups
    ow = p % Wo
    oh = p // Wo
    j = k % kw
    i = (k // kw) % kh
    c = g * Cg + k // (kw * kh)
    ih = oh * sh - pt + i * dh
    iw = ow * sw - pl + j * dw
    if ih < 0 or ih >= H or iw < 0 or iw >= W:
        col[e] = 0
    elif nhwc:
        col[e] = x[((n * H + ih) * W + iw) * C + c]
    else:
        col[e] = x[((n * C + c) * H + ih) * W + iw]


@cuda.jit(device=True)
def _reader(pos, pad, tap, dil, stride, n):
    """The output position (of ``n`` along one axis) whose window's ``tap`` reads input
    position ``pos``, or -1 when none does."""
    t = pos + pad - tap * dil
    if t < 0 or t % stride != 0 or t // stride >= n:
        return -1
    return t // stride


@cuda.jit
def _col2im(dcol, dx, n0, C, H, W, Cg, groups, kh, kw, sh, sw, dh, dw, pt, pl, Ho, Wo, nhwc,
            total):
    """dx[n0 + b, ch, y, x] = sum of dcol over the taps (i, j) of channel ch whose windows read
    (y, x); one thread per element of the chunk's images, in float64."""
    e = cuda.grid(1)
    if e >= total:
        return
    yy, xx, b, ch = pixel_of(e, C, H, W, nhwc)
    g = ch // Cg
    c = ch % Cg
    P = Ho * Wo
    K = Cg * kh * kw
    base = (b * groups + g) * K * P
    s = float64(0.0)
    for i in range(kh):
        oh = _reader(yy, pt, i, dh, sh, Ho)
        if oh < 0:
            continue
        for j in range(kw):
            ow = _reader(xx, pl, j, dw, sw, Wo)
            if ow < 0:
                continue
            s += dcol[base + ((c * kh + i) * kw + j) * P + oh * Wo + ow]
    dx[n0 * C * H * W + e] = s


@cuda.jit
def _prefill(out, res, bias, has_r, has_b, M, P, nhwc):
    """Output = ResidualData (+ Bias[m], added in Output's dtype as the CPU's ``out += b``)."""
    e = cuda.grid(1)
    if e >= out.size:
        return
    m = e % M if nhwc else (e // P) % M
    if has_r:
        v = res[e]
        if has_b:
            v = v + bias[m]
    else:
        v = bias[m]
    out[e] = v


@cuda.jit
def _add_into(acc, part):
    e = cuda.grid(1)
    if e < acc.size:
        acc[e] += part[e]


class Conv2D:
    def __init__(self, attrs, info=None):
        self.name = "conv2d"
        self.attrs = ConvAttrs(attrs)
        self.nhwc = self.attrs.nhwc

    def _chunk(self, N, g, itemsize):
        per_image = g.groups * g.Cg * g.kh * g.kw * g.Ho * g.Wo * itemsize
        return max(1, min(N, COL_BYTES // max(per_image, 1)))

    def _col(self, x, col, n0, nb, g):
        launch(_im2col, nb * g.groups * g.Cg * g.kh * g.kw * g.Ho * g.Wo,
               flat(x), col, n0, *g.scalars(), self.nhwc)

    def __call__(self, input, filter, bias=None, residual=None):
        x, w = input, filter
        if str(x.dtype) not in DTYPES or w.dtype != x.dtype:
            raise TypeError(f"conv2d: Input and Filter must both be float32 or float64, got "
                            f"{x.dtype} and {w.dtype}")
        g = self.attrs.geometry(self.name, tuple(x.shape), tuple(w.shape))
        N, M, Ho, Wo, oshape = x.shape[0], g.M, g.Ho, g.Wo, g.oshape
        if residual is not None and (residual.dtype != x.dtype
                                     or tuple(residual.shape) != oshape):
            raise ValueError(f"conv2d: ResidualData {residual.dtype}{list(residual.shape)} "
                             f"must be {x.dtype}{list(oshape)} (Output's shape)")
        if bias is not None and (bias.dtype != x.dtype or tuple(bias.shape) != (M,)):
            raise ValueError(f"conv2d: Bias {bias.dtype}{list(bias.shape)} must be "
                             f"{x.dtype}[{M}]")
        out = device_empty(oshape, x.dtype)
        beta = 0.0
        if out.size and (residual is not None or bias is not None):
            r = flat(residual) if residual is not None else flat(out)
            b = bias if bias is not None else flat(out)
            launch(_prefill, out.size, flat(out), r, b, residual is not None, bias is not None,
                   M, Ho * Wo, self.nhwc)
            beta = 1.0
        K, P = g.Cg * g.kh * g.kw, Ho * Wo
        if N == 0 or M == 0 or P == 0:
            return (out,)
        if K == 0:
            if not beta:
                device_fill(out, x.dtype.type(0))
            return (out,)
        G, Mg = g.groups, g.Mg
        chunk = self._chunk(N, g, x.dtype.itemsize)
        col = device_empty((chunk * G * K * P,), x.dtype)
        for n0 in range(0, N, chunk):
            nb = min(chunk, N - n0)
            self._col(x, col, n0, nb, g)
            if self.nhwc:
                for grp in range(G):    # C's (n, g) blocks are not one stride apart
                    gemm(col, w, out, P, Mg, K, trans_a=True, trans_b=True, beta=beta,
                         lda=P, ldb=K, ldc=M, batch=(nb,), a_strides=(G * K * P,),
                         b_strides=(0,), c_stride=P * M, a_offset=grp * K * P,
                         b_offset=grp * Mg * K, c_offset=n0 * P * M + grp * Mg)
            else:
                gemm(w, col, out, Mg, P, K, beta=beta, batch=(nb, G), a_strides=(0, Mg * K),
                     b_strides=(G * K * P, K * P), c_stride=Mg * P, c_offset=n0 * M * P)
        return (out,)


class Conv2DGrad(Conv2D):
    """conv2d_grad(Input, Filter, Output@GRAD) -> (Input@GRAD, Filter@GRAD, Bias@GRAD,
    ResidualData@GRAD); unbound outputs are skipped (None)."""

    def __init__(self, attrs, info=None):
        super().__init__(attrs, info)
        self.name = "conv2d_grad"
        self.want_x, self.want_w, self.want_b, self.want_r = wanted(info, GRADS)

    def __call__(self, input, filter, dout):
        name = "conv2d_grad"
        x, w, dy = input, filter, dout
        for slot, v in (("Input", x), ("Filter", w), ("Output@GRAD", dy)):
            if v is None:
                raise TypeError(f"{name}: input {slot} is missing")
            if str(v.dtype) not in DTYPES:
                raise TypeError(f"{name}: {slot} has dtype {v.dtype}, expected float32 or "
                                f"float64")
        if w.dtype != x.dtype or dy.dtype != x.dtype:
            raise TypeError(f"{name}: Input, Filter and Output@GRAD must have one dtype, got "
                            f"{x.dtype}, {w.dtype} and {dy.dtype}")
        xs, ws = tuple(x.shape), tuple(w.shape)
        g = self.attrs.geometry(self.name, xs, ws)
        N, M, Ho, Wo, oshape = xs[0], g.M, g.Ho, g.Wo, g.oshape
        if tuple(dy.shape) != oshape:
            raise ValueError(f"{name}: Output@GRAD{list(dy.shape)} must have Output's shape "
                             f"{list(oshape)}")
        G, Mg, K, P = g.groups, g.Mg, g.Cg * g.kh * g.kw, Ho * Wo
        dx = dw = db = dr = None
        if self.want_b:
            db = device_empty((M,), x.dtype)
            if self.nhwc:
                sum_batches(dy, db, (N * P,), (False,), M)
            else:
                sum_batches(dy, db, (N, M, P), (False, True, False), 1)
        if self.want_r:
            dr = device_copy(dy)
        if self.want_x:
            dx = device_empty(xs, x.dtype)
        if self.want_w:
            dw = device_empty(ws, x.dtype)
        if (dx is None and dw is None) or N == 0 or M == 0 or P == 0 or K == 0:
            for a in (dx, dw):      # nothing flows back: zeros, as the CPU's
                if a is not None and a.size:
                    device_fill(a, x.dtype.type(0))
            return (dx, dw, db, dr)
        chunk = self._chunk(N, g, x.dtype.itemsize)
        col = device_empty((chunk * G * K * P,), x.dtype)
        part = acc = None
        if dw is not None:
            part = device_empty((chunk * M * K,), x.dtype)
            acc = device_fill(device_empty((M * K,), np.float64), np.float64(0)) \
                if chunk < N else None
        # dY[n, g] as a [Mg, P] operand: NCHW rows of P; NHWC the group's columns, transposed.
        if self.nhwc:
            dy_t, dy_ld, dy_strides = True, M, (P * M, Mg)
        else:
            dy_t, dy_ld, dy_strides = False, P, (M * P, Mg * P)
        for n0 in range(0, N, chunk):
            nb = min(chunk, N - n0)
            dy_off = n0 * M * P
            if dw is not None:
                self._col(x, col, n0, nb, g)
                # part[b, g] [Mg, K] = dY[b, g] [Mg, P] @ col[b, g]^T
                gemm(dy, col, part, Mg, K, P, trans_a=dy_t, trans_b=True, lda=dy_ld, ldb=P,
                     batch=(nb, G), a_strides=dy_strides, b_strides=(G * K * P, K * P),
                     c_stride=Mg * K, a_offset=dy_off)
                if acc is None:
                    sum_batches(part, dw, (nb,), (False,), M * K)
                else:
                    partial = device_empty((M * K,), np.float64)
                    sum_batches(part, partial, (nb,), (False,), M * K)
                    launch(_add_into, M * K, acc, partial)
            if dx is not None:
                # dcol[b, g] [K, P] = Filter_g^T [K, Mg] @ dY[b, g] [Mg, P]
                gemm(w, dy, col, K, P, Mg, trans_a=True, trans_b=dy_t, lda=K, ldb=dy_ld,
                     batch=(nb, G), a_strides=(0, Mg * K), b_strides=dy_strides,
                     c_stride=K * P, b_offset=dy_off)
                total = nb * g.C * g.H * g.W
                launch(_col2im, total, col, flat(dx), n0, *g.scalars(), self.nhwc, total)
        if acc is not None:
            launch(_cast_into, M * K, flat(dw), acc)
        return (dx, dw, db, dr)


@cuda.jit
def _cast_into(dst, src):
    e = cuda.grid(1)
    if e < dst.size:
        dst[e] = src[e]


KERNELS = [("conv2d", Conv2D, DTYPES), ("conv2d_grad", Conv2DGrad, DTYPES)]
