"""batch_norm and batch_norm_grad on CUDA, training and inference, NCHW and NHWC, 2-D to 5-D, as
the CPU kernel (kernels/cpu/batch_norm.pyx).

X is viewed as [N, C, S] (NHWC: N = every leading dim, S = 1), so element (n, c, s) is at
(n*C + c)*S + s in both layouts. Per-channel work runs one block per channel: its threads stride
over the channel's N*S values and reduce in float64 shared-memory trees, two passes (mean, then
the mean squared deviation) as the CPU kernel; a channel of at most SHORT_ROW values (and
test mode, with nothing to sum) runs a thread instead. Thread 0 then finishes the channel:
SavedMean / SavedVariance (1/sqrt(var + eps)), the running MeanOut / VarianceOut (momentum from
the attribute or MomentumTensor, read on the device; float32 running values rounded step by
step as the CPU's ``out *= momentum; out += batch * (1 - momentum)``) and the coefficients
a = Scale*inv, b = Bias - mean*Scale*inv in float64. Y = X*a[c] + b[c] is then one thread per
element.

MeanOut / VarianceOut are written into the Mean / Variance device arrays when info.in_place says
so (they are the same persistable variable), else into new arrays. With global statistics
(is_test without trainable_statistics, or use_global_stats) Mean / Variance are returned as
MeanOut / VarianceOut unchanged and SavedMean / SavedVariance are zeros, as on the CPU.

batch_norm_grad: one block per channel reduces sum(dY) and sum(dY*(X - mean)) in float64; its
thread 0 writes Scale@GRAD / Bias@GRAD and the coefficients of X@GRAD = k*dY - q*X - r (the
CPU kernel's expansion), then one thread per element writes X@GRAD.
"""
import math

import numpy as np
from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, device_empty, device_fill, empty_like,
                                          flat, float_input, launch)
from headrace.kernels.cuda_rows import block_reduce, rounded, row_grid

from ..host._common import wanted
from ..host.batch_norm import GRADS, BatchNormAttrs

DTYPES = ("float32", "float64")


@cuda.jit(device=True)
def _term(x, dy, q, mu, mode):
    """Value q's term of a channel sum: x (mode 0), (x - mu)^2 (mode 1) or dy*(x - mu)
    (mode 2), in float64."""
    if mode == 0:
        return float64(x[q])
    if mode == 1:
        d = x[q] - mu
        return d * d
    return float64(dy[q]) * (x[q] - mu)


@cuda.jit(device=True)
def _channel_sum(x, dy, c, C, S, m, mu, mode, buf, block):
    """Sum over channel c's m = N*S values of _term(mode), in float64, by every thread of the
    block (``block``) or by this thread alone."""
    s = float64(0.0)
    if not block:
        for k in range(c * S, m // S * C * S, C * S):   # image by image
            for q in range(k, k + S):
                s += _term(x, dy, q, mu, mode)
        return s
    for j in range(cuda.threadIdx.x, m, ROW_THREADS):
        s += _term(x, dy, ((j // S) * C + c) * S + j % S, mu, mode)
    return block_reduce(buf, s, False)


@cuda.jit
def _stats(x, scale, bias, mean, var, mom, has_mom, momentum, C, S, m, eps, train, is32,
           mean_out, var_out, saved_mean, saved_inv, ca, cb, block):
    """One block (or thread) per channel: statistics, saved/running values, Y's
    coefficients."""
    c = cuda.blockIdx.x if block else cuda.grid(1)
    if c >= C:
        return
    buf = cuda.shared.array(ROW_THREADS, float64)
    if train:
        mu = _channel_sum(x, x, c, C, S, m, 0.0, 0, buf, block) / m
        v = _channel_sum(x, x, c, C, S, m, mu, 1, buf, block) / m
    else:
        mu = float64(mean[c])
        v = float64(var[c])
    if block and cuda.threadIdx.x != 0:
        return
    inv = 1.0 / math.sqrt(v + eps)
    sc = float64(scale[c])
    ca[c] = sc * inv
    cb[c] = float64(bias[c]) - mu * sc * inv
    if train:
        mo = float64(mom[0]) if has_mom else momentum
        mo32 = rounded(mo, is32)        # NumPy casts the scalar to float32 for `out *= mo`
        mean_out[c] = rounded(rounded(float64(mean[c]) * mo32, is32)
                               + rounded(mu * (1.0 - mo), is32), is32)
        var_out[c] = rounded(rounded(float64(var[c]) * mo32, is32)
                              + rounded(v * (1.0 - mo), is32), is32)
        saved_mean[c] = mu
        saved_inv[c] = inv


@cuda.jit
def _apply(x, y, ca, cb, C, S):
    i = cuda.grid(1)
    if i < y.size:
        c = (i // S) % C
        y[i] = x[i] * ca[c] + cb[c]


def _layout(x, nhwc, op):
    xs = tuple(x.shape)
    if not 2 <= len(xs) <= 5:
        raise ValueError(f"{op}: X{list(xs)} must be 2-D to 5-D")
    if nhwc:
        return xs[-1], int(np.prod(xs[:-1], dtype=np.int64)), 1
    return xs[1], xs[0], int(np.prod(xs[2:], dtype=np.int64))


def _param(p, C, x, op, slot):
    if p.dtype != x.dtype or tuple(p.shape) != (C,):
        raise ValueError(f"{op}: {slot} {p.dtype}{list(p.shape)} must be {x.dtype}[{C}] (one "
                         f"value per channel of X{list(x.shape)})")
    return p


class BatchNorm:
    def __init__(self, attrs, info=None):
        a = BatchNormAttrs(attrs)
        self.global_stats, self.nhwc, self.momentum, self.eps = \
            a.global_stats, a.nhwc, a.momentum, a.eps
        self.inplace_m = info is not None and info.in_place("Mean", "MeanOut")
        self.inplace_v = info is not None and info.in_place("Variance", "VarianceOut")

    def __call__(self, x, scale, bias, mean, variance, momentum_tensor=None):
        op = "batch_norm"
        float_input(x, op, "X")
        C, N, S = _layout(x, self.nhwc, op)
        for slot, p in (("Scale", scale), ("Bias", bias), ("Mean", mean),
                        ("Variance", variance)):
            _param(p, C, x, op, slot)
        if momentum_tensor is not None and momentum_tensor.size != 1:
            raise ValueError(f"{op}: MomentumTensor must hold one value, got shape "
                             f"{list(momentum_tensor.shape)}")
        train = not self.global_stats
        if train and N * S == 0:
            raise ValueError(f"{op}: X{list(x.shape)} has no values to compute batch "
                             f"statistics from (training mode)")
        y = empty_like(x)
        ca, cb = device_empty((C,), np.float64), device_empty((C,), np.float64)
        if train:
            mean_out = mean if self.inplace_m else empty_like(mean)
            var_out = variance if self.inplace_v else empty_like(variance)
            saved_mean, saved_inv = empty_like(mean), empty_like(mean)
        else:
            mean_out, var_out = mean, variance
            # Paddle leaves the saved statistics zero when it uses the running ones.
            saved_mean = device_fill(empty_like(mean), x.dtype.type(0))
            saved_inv = device_fill(empty_like(mean), x.dtype.type(0))
        if C:
            mom = momentum_tensor if momentum_tensor is not None else ca
            blocks, threads, block = row_grid(C, N * S if train else 0)
            _stats[blocks, threads, current_stream()](
                flat(x), scale, bias, mean, variance, flat(mom), momentum_tensor is not None,
                float(self.momentum), C, S, N * S, float(self.eps), train,
                x.dtype == np.float32, mean_out, var_out, saved_mean, saved_inv, ca, cb, block)
        launch(_apply, y.size, flat(x), flat(y), ca, cb, C, S)
        # ReserveSpace: Paddle's cuDNN workspace, empty here.
        return (y, mean_out, var_out, saved_mean, saved_inv, device_empty((0,), x.dtype))


# -- gradient -----------------------------------------------------------------------------------

@cuda.jit
def _grad_stats(x, dy, scale, mean, vinv, C, S, m, eps, global_stats, sums, dscale, dbias,
                ck, cq, cr, block):
    """One block (or thread) per channel: sum(dY), sum(dY*(X - mean)); Scale@GRAD, Bias@GRAD
    and X@GRAD's coefficients."""
    c = cuda.blockIdx.x if block else cuda.grid(1)
    if c >= C:
        return
    buf = cuda.shared.array(ROW_THREADS, float64)
    mu = float64(mean[c])
    sdy = sdyx = float64(0.0)
    if sums:
        sdy = _channel_sum(dy, dy, c, C, S, m, 0.0, 0, buf, block)
        sdyx = _channel_sum(x, dy, c, C, S, m, mu, 2, buf, block)
    if block and cuda.threadIdx.x != 0:
        return
    inv = 1.0 / math.sqrt(float64(vinv[c]) + eps) if global_stats else float64(vinv[c])
    dscale[c] = sdyx * inv
    dbias[c] = sdy
    k = float64(scale[c]) * inv
    ck[c] = k
    if global_stats:
        cq[c] = 0.0
        cr[c] = 0.0
    else:
        q = k * inv * inv * sdyx / m
        cq[c] = q
        cr[c] = k * sdy / m - q * mu


@cuda.jit
def _grad_x(x, dy, dx, ck, cq, cr, C, S):
    i = cuda.grid(1)
    if i < dx.size:
        c = (i // S) % C
        dx[i] = ck[c] * dy[i] - cq[c] * x[i] - cr[c]


class BatchNormGrad:
    """batch_norm_grad(X, Scale, Bias, Mean, Variance, SavedMean, SavedVariance, Y@GRAD) ->
    (X@GRAD, Scale@GRAD, Bias@GRAD); Mean and Variance are read only with global statistics."""

    def __init__(self, attrs, info=None):
        a = BatchNormAttrs(attrs)
        self.global_stats, self.nhwc, self.eps = a.global_stats, a.nhwc, a.eps
        self.want_x, self.want_scale, self.want_bias = wanted(info, GRADS)

    def __call__(self, x, scale, bias, mean, variance, saved_mean, saved_variance, dy):
        op = "batch_norm_grad"
        float_input(x, op, "X")
        float_input(dy, op, "Y@GRAD")
        if dy.dtype != x.dtype:
            raise TypeError(f"{op}: Y@GRAD has dtype {dy.dtype} but X is {x.dtype}")
        C, N, S = _layout(x, self.nhwc, op)
        if tuple(dy.shape) != tuple(x.shape):
            raise ValueError(f"{op}: Y@GRAD{list(dy.shape)} must have X's shape "
                             f"{list(x.shape)}")
        slots = [("Scale", scale), ("Bias", bias)]
        if self.global_stats:
            slots += [("Mean", mean), ("Variance", variance)]
        else:
            slots += [("SavedMean", saved_mean), ("SavedVariance", saved_variance)]
        for slot, v in slots:
            if v is None:
                raise ValueError(f"{op}: input {slot} is needed ("
                                 + ("global" if self.global_stats else "batch")
                                 + " statistics) but not bound")
            _param(v, C, x, op, slot)
        mu, vinv = (slots[2][1], slots[3][1])
        sums = self.want_scale or self.want_bias or (self.want_x and not self.global_stats)
        dscale, dbias = empty_like(scale), empty_like(scale)
        ck, cq, cr = (device_empty((C,), np.float64) for _ in range(3))
        if C:
            sums = sums and N * S > 0
            blocks, threads, block = row_grid(C, N * S if sums else 0)
            _grad_stats[blocks, threads, current_stream()](
                flat(x), flat(dy), scale, mu, vinv, C, S, N * S, float(self.eps),
                self.global_stats, sums, dscale, dbias, ck, cq, cr, block)
        dx = None
        if self.want_x:
            dx = empty_like(x)
            launch(_grad_x, dx.size, flat(x), flat(dy), flat(dx), ck, cq, cr, C, S)
        return (dx, dscale if self.want_scale else None, dbias if self.want_bias else None)


KERNELS = [("batch_norm", BatchNorm, DTYPES), ("batch_norm_grad", BatchNormGrad, DTYPES)]
