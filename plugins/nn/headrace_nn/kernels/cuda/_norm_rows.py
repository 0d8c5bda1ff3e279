"""Row kernels shared by group_norm.py, instance_norm.py and layer_norm.py: X normalized over
rows of L contiguous values (group_norm: a row is (n, group), L = C/groups * S; instance_norm: a
row is (n, c), L = S; layer_norm: a row is X's [left, right] row, L = right, with S = R = cpr =
1), with a per-channel Scale / Bias. With R rows per image and cpr channels per row, value j of
row r belongs to channel (r % R) * cpr + j // S (layer_norm: channel j, its column).

Rows longer than SHORT_ROW run one block each and reduce in float64 shared-memory trees
(mean, then the mean squared deviation, as the CPU's sums of float64 values); shorter rows run
a thread each (headrace.kernels.cuda_rows). The per-channel parameter gradients of
group/instance_norm run one block per channel over its N*S values, as batch_norm's.
Everything is computed in float64 and rounded once on store, like the CPU kernels (which work
on float64 copies), except where ``is32`` replays layer_norm's float32 CPU gradient.
"""
import math

from numba import cuda, float64

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import ROW_THREADS, device_empty, empty_like, flat
from headrace.kernels.cuda_rows import rounded, row_grid, row_lanes, row_total

@cuda.jit
def _forward(x, scale, bias, has_s, has_b, y, mean, stat, rows, L, S, R, cpr, eps, divide,
             save_inv, block):
    """A row per block (``block``) or per thread: mean[r], stat[r] (the variance, or
    1/sqrt(var + eps) when ``save_inv``) and Y. ``divide``: Y = (x - mean) / sqrt(var + eps)
    (group_norm's order), else (x - mean) * inv (instance_norm's)."""
    r, t, step = row_lanes(block)
    if r >= rows:
        return
    base = r * L
    buf = cuda.shared.array(ROW_THREADS, float64)
    size = float64(max(L, 1))
    s = float64(0.0)
    for j in range(t, L, step):
        s += x[base + j]
    m = row_total(buf, s, block) / size
    s = float64(0.0)
    for j in range(t, L, step):
        d = x[base + j] - m
        s += d * d
    v = row_total(buf, s, block) / size
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
                is32, block):
    """A row per block or per thread: dx = inv * (g - sum(g)/size - xhat * sum(g*xhat)/size),
    g = dY*Scale; ``is32`` rounds X - mean, and g in the second pass, to float32 as
    layer_norm's CPU gradient computes them (C's float arithmetic)."""
    r, t, step = row_lanes(block)
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
        sgx += g * (rounded(x[base + j] - m, is32) * inv)
    sg = row_total(buf, sg, block)
    sgx = row_total(buf, sgx, block)
    for j in range(t, L, step):
        g = float64(dy[base + j])
        if has_s:
            g = rounded(g * scale[c0 + j // S], is32)
        dx[base + j] = inv * (g - sg / size - rounded(x[base + j] - m, is32) * inv * sgx / size)


@cuda.jit
def _backward_params(x, mean, stat, dy, ds, db, want_s, want_b, N, C, S, R, cpr, eps,
                     stat_is_inv, block):
    """A block (or a thread) per channel c: ds[c] = sum dY * xhat, db[c] = sum dY over images
    and positions."""
    c, t, step = row_lanes(block)
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
    a = row_total(buf, a, block)
    b = row_total(buf, b, block)
    if t == 0:
        if want_s:
            ds[c] = a
        if want_b:
            db[c] = b


def per_channel(p, C, op, slot):
    """Refuse a bound Scale / Bias ``p`` that does not hold one value per channel."""
    if p is not None and p.size != C:
        raise ValueError(f"{op}: {slot} holds {p.size} values, X has {C} channels")


def forward(x, scale, bias, y, mean, stat, rows, L, S, R, cpr, eps, divide, save_inv):
    """Launch the forward over ``rows`` rows (nothing for none)."""
    dummy = flat(x)
    if rows:
        blocks, threads, block = row_grid(rows, L)
        _forward[blocks, threads, current_stream()](
            flat(x), dummy if scale is None else flat(scale), dummy if bias is None else
            flat(bias), scale is not None, bias is not None, flat(y), flat(mean), flat(stat),
            rows, L, S, R, cpr, float(eps), divide, save_inv, block)


def backward_x(x, scale, mean, stat, dy, dx, rows, L, S, R, cpr, eps, stat_is_inv,
               is32=False):
    """Launch X@GRAD's kernel over ``rows`` rows (nothing for none or empty rows)."""
    if rows and L:
        blocks, threads, block = row_grid(rows, L)
        _backward_x[blocks, threads, current_stream()](
            flat(x), flat(x) if scale is None else flat(scale), scale is not None,
            flat(mean), flat(stat), flat(dy), flat(dx), rows, L, S, R, cpr, float(eps),
            stat_is_inv, is32, block)


def gradients(x, scale, bias, mean, stat, dy, rows, L, S, R, cpr, N, C, eps, stat_is_inv,
              op):
    """(X@GRAD, Scale@GRAD, Bias@GRAD) of group/instance_norm, Scale@GRAD / Bias@GRAD only
    where Scale / Bias are bound (as their CPU kernels); Scale is checked first."""
    per_channel(scale, C, op, "Scale")
    dx = empty_like(x)
    ds = None if scale is None else device_empty(scale.shape, x.dtype)
    db = None if bias is None else device_empty(bias.shape, x.dtype)
    backward(x, scale, mean, stat, dy, dx, ds, db, rows, L, S, R, cpr, N, C, eps, stat_is_inv)
    return dx, ds, db


def backward(x, scale, mean, stat, dy, dx, ds, db, rows, L, S, R, cpr, N, C, eps,
             stat_is_inv):
    """Launch the gradient kernels for the wanted outputs (dx, ds, db: None when not)."""
    dummy = flat(x)
    if dx is not None:
        backward_x(x, scale, mean, stat, dy, dx, rows, L, S, R, cpr, eps, stat_is_inv)
    if (ds is not None or db is not None) and C:
        blocks, threads, block = row_grid(C, N * S)
        _backward_params[blocks, threads, current_stream()](
            flat(x), flat(mean), flat(stat), flat(dy), dummy if ds is None else flat(ds),
            dummy if db is None else flat(db), ds is not None, db is not None, N, C, S, R,
            cpr, float(eps), stat_is_inv, block)
