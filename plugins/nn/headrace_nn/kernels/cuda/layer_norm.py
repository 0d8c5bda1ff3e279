"""layer_norm and layer_norm_grad on CUDA, as the CPU kernel (kernels/cpu/layer_norm.pyx): X is
[left, right] split at begin_norm_axis.

layer_norm runs one block per row: its threads stride over the row's values, the mean and then
the mean squared deviation reduced in float64 shared-memory trees (two passes, as the CPU);
rows of at most SHORT_ROW values run a thread each instead (summed in order, no barriers).
Mean / Variance are stored in X's dtype and Y = (X - mean) * inv * Scale + Bias is computed in
double and rounded once on store.

layer_norm_grad runs one block per row for X@GRAD (the row's sums of g = dY*Scale and
g*xhat reduced in float64 trees, then each element's inv * (g - sum_g/right - xhat*sum_gx/right))
and one thread per column for Scale@GRAD / Bias@GRAD, walking the rows in order in float64
(consecutive threads read consecutive values of a row: coalesced). Scale and Bias are optional;
an absent one is a one-element dummy plus a flag, as kernels take no None.
"""
import math

import numpy as np
from numba import cuda, float32, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import (ROW_THREADS, device_empty, empty_like, flat,
                                          float_input, grid, launch, tree_reduce)

# Rows of at most this many values run a thread each (summed in order, no barriers): a block of
# ROW_THREADS lanes would leave most of them idle through every tree step.
SHORT_ROW = 32

DTYPES = ("float32", "float64")


def _rows(x, axis, op):
    if not (1 <= axis < x.ndim or (x.ndim == 1 and axis == 0)):
        raise ValueError(f"{op}: begin_norm_axis {axis} leaves X of shape {list(x.shape)} no "
                         f"rows to normalize")
    left = int(np.prod(x.shape[:axis], dtype=np.int64))
    return left, x.size // max(left, 1)


def _param(p, right, x, op, slot):
    if p is None:
        return None
    if p.size != right:
        raise ValueError(f"{op}: {slot} holds {p.size} values, a row of X {right}")
    if p.dtype != x.dtype:
        raise TypeError(f"{op}: {slot} has dtype {p.dtype}, expected {x.dtype} (X's)")
    return flat(p)


@cuda.jit(device=True)
def _rounded(v, is32):
    """``v`` rounded to float32 for float32 X: the CPU gradient computes X - Mean and
    dY * Scale in float (C's float arithmetic), so these are replayed to the bit."""
    return float64(float32(v)) if is32 else v


@cuda.jit(device=True)
def _row_sum(buf, s):
    """Sum of every thread's ``s`` over the block (float64), read by all threads."""
    t = cuda.threadIdx.x
    buf[t] = s
    cuda.syncthreads()
    tree_reduce(buf, t, False)
    r = buf[0]
    cuda.syncthreads()                   # every thread has read buf[0] before it is reused
    return r


@cuda.jit(device=True)
def _row(block):
    """(row, first lane, lane step) of this thread: a block's threads share a row, or a
    thread owns one."""
    if block:
        return cuda.blockIdx.x, cuda.threadIdx.x, ROW_THREADS
    return cuda.grid(1), 0, 1


@cuda.jit(device=True)
def _sum(buf, s, block):
    """The row's total of the lanes' partial sums ``s`` (a block's tree; a lone thread's own)."""
    if block:
        return _row_sum(buf, s)
    return s


def _shape(rows, right):
    """(blocks, threads, block mode) of a row launch: a block per row, or a thread per row."""
    block = right > SHORT_ROW
    return ((rows, ROW_THREADS) if block else grid(rows)) + (block,)


@cuda.jit
def _layer_norm(x, scale, bias, has_s, has_b, y, mean, var, rows, right, eps, block):
    row, t, step = _row(block)
    if row >= rows:
        return
    base = row * right
    buf = cuda.shared.array(ROW_THREADS, float64)
    s = float64(0.0)
    for j in range(t, right, step):
        s += x[base + j]
    m = _sum(buf, s, block) / right
    s = float64(0.0)
    for j in range(t, right, step):
        d = x[base + j] - m
        s += d * d
    v = _sum(buf, s, block) / right
    if t == 0:
        mean[row] = m
        var[row] = v
    inv = 1 / math.sqrt(v + eps)
    for j in range(t, right, step):
        d = (x[base + j] - m) * inv
        if has_s:
            d = d * scale[j]
        if has_b:
            d = d + bias[j]
        y[base + j] = d


@cuda.jit
def _layer_norm_dx(x, scale, has_s, mean, var, dy, dx, rows, right, eps, is32, block):
    row, t, step = _row(block)
    if row >= rows:
        return
    base = row * right
    buf = cuda.shared.array(ROW_THREADS, float64)
    mu = float64(mean[row])
    inv = 1 / math.sqrt(float64(var[row]) + eps)
    sg = float64(0.0)
    sgx = float64(0.0)
    for j in range(t, right, step):
        g = float64(dy[base + j])
        if has_s:
            g = g * scale[j]
        sg += g
        sgx += g * (_rounded(x[base + j] - mu, is32) * inv)
    sg = _sum(buf, sg, block)
    sgx = _sum(buf, sgx, block)
    for j in range(t, right, step):
        xhat = _rounded(x[base + j] - mu, is32) * inv
        g = float64(dy[base + j])
        if has_s:
            g = _rounded(g * scale[j], is32)
        dx[base + j] = inv * (g - sg / right - xhat * sgx / right)


@cuda.jit
def _layer_norm_dparams(x, mean, var, dy, ds, db, want_s, want_b, left, right, eps, is32):
    j = cuda.grid(1)
    if j >= right:
        return
    a = float64(0.0)
    b = float64(0.0)
    for i in range(left):
        k = i * right + j
        g = float64(dy[k])
        a += g * (_rounded(x[k] - float64(mean[i]), is32)
                  * (1 / math.sqrt(float64(var[i]) + eps)))
        b += g
    if want_s:
        ds[j] = a
    if want_b:
        db[j] = b


class LayerNorm:
    def __init__(self, attrs, info=None):
        self.eps, self.axis = attrs["epsilon"], attrs["begin_norm_axis"]

    def __call__(self, x, scale, bias):
        op = "layer_norm"
        left, right = _rows(x, self.axis, op)
        s, b = _param(scale, right, x, op, "Scale"), _param(bias, right, x, op, "Bias")
        float_input(x, op, "X")
        y = empty_like(x)
        mean, var = device_empty((left,), x.dtype), device_empty((left,), x.dtype)
        if x.size:
            dummy = flat(x)
            blocks, threads, block = _shape(left, right)
            _layer_norm[blocks, threads, current_stream()](
                flat(x), dummy if s is None else s, dummy if b is None else b, s is not None,
                b is not None, flat(y), mean, var, left, right, float(self.eps), block)
        return y, mean, var


class LayerNormGrad:
    """layer_norm_grad(X, Scale, Bias, Mean, Variance, Y@GRAD) -> (X@GRAD, Scale@GRAD,
    Bias@GRAD)."""

    def __init__(self, attrs, info=None):
        self.eps, self.axis = attrs["epsilon"], attrs["begin_norm_axis"]
        self.want_x = info is None or info.wants("X@GRAD")
        self.want_s = info is None or info.wants("Scale@GRAD")
        self.want_b = info is None or info.wants("Bias@GRAD")

    def __call__(self, x, scale, bias, mean, variance, dy):
        op = "layer_norm_grad"
        float_input(x, op, "X")
        left, right = _rows(x, self.axis, op)
        s = _param(scale, right, x, op, "Scale")
        _param(bias, right, x, op, "Bias")   # checked: its gradient takes its shape
        if mean.size != left or variance.size != left or tuple(dy.shape) != tuple(x.shape):
            raise ValueError(f"{op}: Mean/Variance must hold {left} rows' statistics and "
                             f"Y@GRAD X's shape {list(x.shape)}; found {mean.size}, "
                             f"{variance.size}, {list(dy.shape)}")
        for slot, v in (("Mean", mean), ("Variance", variance), ("Y@GRAD", dy)):
            if v.dtype != x.dtype:
                raise TypeError(f"{op}: {slot} has dtype {v.dtype}, expected {x.dtype} (X's)")
        dx = empty_like(x) if self.want_x else None
        want_s = self.want_s and scale is not None
        want_b = self.want_b and bias is not None
        ds = device_empty(scale.shape, x.dtype) if want_s else None
        db = device_empty(bias.shape, x.dtype) if want_b else None
        dummy = flat(x)
        if dx is not None and x.size:
            blocks, threads, block = _shape(left, right)
            _layer_norm_dx[blocks, threads, current_stream()](
                flat(x), dummy if s is None else s, s is not None, flat(mean), flat(variance),
                flat(dy), flat(dx), left, right, float(self.eps), x.dtype == np.float32, block)
        if want_s or want_b:
            launch(_layer_norm_dparams, right, flat(x), flat(mean), flat(variance), flat(dy),
                   dummy if ds is None else flat(ds), dummy if db is None else flat(db),
                   want_s, want_b, left, right, float(self.eps), x.dtype == np.float32)
        return dx, ds, db


KERNELS = [("layer_norm", LayerNorm, DTYPES), ("layer_norm_grad", LayerNormGrad, DTYPES)]
