"""Kernels shared by group_norm.py and instance_norm.py: X [N, C, S...] normalized over rows of
L contiguous values (group_norm: a row is (n, group), L = C/groups * S; instance_norm: a row
is (n, c), L = S), with a per-channel Scale / Bias. With R rows per image and cpr channels per
row, value j of row r belongs to channel (r % R) * cpr + j // S, for both ops.

Rows longer than SHORT_ROW run one block each and reduce in float64 shared-memory trees
(mean, then the mean squared deviation, as the CPU's NumPy sums of float64 values); shorter
rows run a thread each. The per-channel parameter gradients run one block per channel over its
N*S values, as batch_norm's. Everything is computed in float64 and rounded once on store,
like the CPU kernels (which work on float64 copies).
"""
import math

from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import ROW_THREADS, flat, grid, tree_reduce

# Rows of at most this many values run a thread each (summed in order, no barriers): a block of
# ROW_THREADS lanes would leave most of them idle through every tree step.
SHORT_ROW = 32


@cuda.jit(device=True)
def _block_sum(buf, s):
    """Sum of every thread's ``s`` over the block, read by all threads."""
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
        return _block_sum(buf, s)
    return s


@cuda.jit
def _forward(x, scale, bias, has_s, has_b, y, mean, stat, rows, L, S, R, cpr, eps, divide,
             save_inv, block):
    """A row per block (``block``) or per thread: mean[r], stat[r] (the variance, or
    1/sqrt(var + eps) when ``save_inv``) and Y. ``divide``: Y = (x - mean) / sqrt(var + eps)
    (group_norm's order), else (x - mean) * inv (instance_norm's)."""
    r, t, step = _row(block)
    if r >= rows:
        return
    base = r * L
    buf = cuda.shared.array(ROW_THREADS, float64)
    size = float64(max(L, 1))
    s = float64(0.0)
    for j in range(t, L, step):
        s += x[base + j]
    m = _sum(buf, s, block) / size
    s = float64(0.0)
    for j in range(t, L, step):
        d = x[base + j] - m
        s += d * d
    v = _sum(buf, s, block) / size
    den = math.sqrt(v + eps)
    inv = 1 / den
    if t == 0:
        mean[r] = m
        stat[r] = inv if save_inv else v
    c0 = (r % R) * cpr
    for j in range(t, L, step):
        d = (x[base + j] - m) / den if divide else (x[base + j] - m) * inv
        c = c0 + j // S
        if has_s:
            d = d * scale[c]
        if has_b:
            d = d + bias[c]
        y[base + j] = d


@cuda.jit(device=True)
def _inv(stat, r, eps, stat_is_inv):
    return float64(stat[r]) if stat_is_inv else 1 / math.sqrt(float64(stat[r]) + eps)


@cuda.jit
def _backward_x(x, scale, has_s, mean, stat, dy, dx, rows, L, S, R, cpr, eps, stat_is_inv,
                block):
    """A row per block or per thread: dx = inv * (g - sum(g)/size - xhat * sum(g*xhat)/size),
    g = dY*Scale."""
    r, t, step = _row(block)
    if r >= rows:
        return
    base = r * L
    buf = cuda.shared.array(ROW_THREADS, float64)
    size = float64(max(L, 1))
    m = float64(mean[r])
    inv = _inv(stat, r, eps, stat_is_inv)
    c0 = (r % R) * cpr
    sg = float64(0.0)
    sgx = float64(0.0)
    for j in range(t, L, step):
        g = float64(dy[base + j])
        if has_s:
            g = g * scale[c0 + j // S]
        sg += g
        sgx += g * ((x[base + j] - m) * inv)
    sg = _sum(buf, sg, block)
    sgx = _sum(buf, sgx, block)
    for j in range(t, L, step):
        g = float64(dy[base + j])
        if has_s:
            g = g * scale[c0 + j // S]
        dx[base + j] = inv * (g - sg / size - (x[base + j] - m) * inv * sgx / size)


@cuda.jit
def _backward_params(x, mean, stat, dy, ds, db, want_s, want_b, N, C, S, R, cpr, eps,
                     stat_is_inv, block):
    """A block (or a thread) per channel c: ds[c] = sum dY * xhat, db[c] = sum dY over images
    and positions."""
    c, t, step = _row(block)
    if c >= C:
        return
    buf = cuda.shared.array(ROW_THREADS, float64)
    a = float64(0.0)
    b = float64(0.0)
    for e in range(t, N * S, step):
        n = e // S
        k = (n * C + c) * S + e % S
        r = n * R + c // cpr
        g = float64(dy[k])
        a += g * ((x[k] - float64(mean[r])) * _inv(stat, r, eps, stat_is_inv))
        b += g
    a = _sum(buf, a, block)
    b = _sum(buf, b, block)
    if t == 0:
        if want_s:
            ds[c] = a
        if want_b:
            db[c] = b


def _shape(rows, block):
    """(blocks, threads) of a row launch: a block per row, or a thread per row."""
    return (rows, ROW_THREADS) if block else grid(rows)


def forward(x, scale, bias, y, mean, stat, rows, L, S, R, cpr, eps, divide, save_inv):
    """Launch the forward over ``rows`` rows (nothing for none)."""
    dummy = flat(x)
    if rows:
        block = L > SHORT_ROW
        _forward[_shape(rows, block) + (current_stream(),)](
            flat(x), dummy if scale is None else flat(scale), dummy if bias is None else
            flat(bias), scale is not None, bias is not None, flat(y), flat(mean), flat(stat),
            rows, L, S, R, cpr, float(eps), divide, save_inv, block)


def backward(x, scale, mean, stat, dy, dx, ds, db, rows, L, S, R, cpr, N, C, eps,
             stat_is_inv):
    """Launch the gradient kernels for the wanted outputs (dx, ds, db: None when not)."""
    dummy = flat(x)
    if dx is not None and rows and L:
        block = L > SHORT_ROW
        _backward_x[_shape(rows, block) + (current_stream(),)](
            flat(x), dummy if scale is None else flat(scale), scale is not None, flat(mean),
            flat(stat), flat(dy), flat(dx), rows, L, S, R, cpr, float(eps), stat_is_inv, block)
    if (ds is not None or db is not None) and C:
        block = N * S > SHORT_ROW
        _backward_params[_shape(C, block) + (current_stream(),)](
            flat(x), flat(mean), flat(stat), flat(dy), dummy if ds is None else flat(ds),
            dummy if db is None else flat(db), ds is not None, db is not None, N, C, S, R,
            cpr, float(eps), stat_is_inv, block)

