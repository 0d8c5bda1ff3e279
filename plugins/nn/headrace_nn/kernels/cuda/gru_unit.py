"""gru_unit and its gradient on CUDA, as the CPU kernel (kernels/cpu/gru_unit.pyx): the products
with Weight ([D, 2D] update/reset then [D, D] candidate, one flat buffer) are the shared tiled
GEMM (headrace.kernels.cuda_gemm, reading column blocks of the [N, 3D] gates in place through
leading dimensions and offsets), the gate math elementwise kernels with one thread per element
(in float64, stored in the input's dtype), Bias@GRAD the shared column sum (sum_batches).
"""
import math

from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_gemm import gemm, sum_batches
from headrace.kernels.cuda_launch import device_empty, float_input, grid

DTYPES = ("float32", "float64")
# Paddle's integer activation codes -> this plugin's codes (sigmoid 0, tanh 1, relu 2,
# identity 3), as the CPU kernel.
CODES = {0: 3, 1: 0, 2: 1, 3: 2}


@cuda.jit(device=True)
def _act(code, v):
    if code == 0:
        if v >= 0:               # split on the sign so exp never overflows
            return 1.0 / (1.0 + math.exp(-v))
        e = math.exp(v)
        return e / (1.0 + e)
    if code == 1:
        return math.tanh(v)
    if code == 2:
        return v if v > 0 else 0.0
    return v


@cuda.jit(device=True)
def _deriv(code, y):
    """The activation's derivative from its output y."""
    if code == 0:
        return y * (1 - y)
    if code == 1:
        return 1 - y * y
    if code == 2:
        return 1.0 if y > 0 else 0.0
    return 1.0


@cuda.jit
def _bias(x, b, g, C, total, has_b):
    k = cuda.grid(1)
    if k < total:
        g[k] = x[k] + b[k % C] if has_b else x[k]


@cuda.jit
def _gates(g, hp, reset, D, total, gate):
    """Activate u and r ([N, 2D] of the gates) in place; reset = r * HiddenPrev."""
    k = cuda.grid(1)
    if k < total:
        n = k // (2 * D)
        j = k % (2 * D)
        v = _act(gate, g[n * 3 * D + j])
        g[n * 3 * D + j] = v
        if j >= D:
            reset[n * D + j - D] = v * hp[n * D + j - D]


@cuda.jit
def _hidden(g, hp, h, D, total, act, origin):
    k = cuda.grid(1)
    if k < total:
        n = k // D
        j = k % D
        c = _act(act, g[n * 3 * D + 2 * D + j])
        g[n * 3 * D + 2 * D + j] = c
        u = float(g[n * 3 * D + j])
        if origin:
            h[k] = u * hp[k] + (1 - u) * c
        else:
            h[k] = (1 - u) * hp[k] + u * c


@cuda.jit
def _grad_uc(g, hp, dh, dx, dhp, D, total, act, gate, origin):
    """dx's u and c blocks (dzu, dzc) and dhp's direct term."""
    k = cuda.grid(1)
    if k < total:
        n = k // D
        j = k % D
        u = float(g[n * 3 * D + j])
        c = float(g[n * 3 * D + 2 * D + j])
        d = float(dh[k])
        if origin:
            du = d * (hp[k] - c)
            dc = d * (1 - u)
            dhp[k] = d * u
        else:
            du = d * (c - hp[k])
            dc = d * u
            dhp[k] = d * (1 - u)
        dx[n * 3 * D + j] = du * _deriv(gate, u)
        dx[n * 3 * D + 2 * D + j] = dc * _deriv(act, c)


@cuda.jit
def _grad_r(g, hp, drh, dx, dhp, D, total, gate):
    """dx's r block (dzr) and dhp += drh * r."""
    k = cuda.grid(1)
    if k < total:
        n = k // D
        j = k % D
        r = float(g[n * 3 * D + D + j])
        dx[n * 3 * D + D + j] = drh[k] * hp[k] * _deriv(gate, r)
        dhp[k] += drh[k] * r


def _operands(x, h, w, b, op):
    for v, slot in ((x, "Input"), (h, "HiddenPrev"), (w, "Weight")):
        float_input(v, op, slot)
        if v.dtype != x.dtype:
            raise TypeError(f"{op}: {slot} has dtype {v.dtype}, Input {x.dtype}")
    d = w.shape[0] if w.ndim == 2 else -1
    if tuple(w.shape) != (d, 3 * d) or x.ndim != 2 or x.shape[1] != 3 * d or \
            tuple(h.shape) != (x.shape[0], d):
        raise ValueError(f"{op}: Input, HiddenPrev and Weight must be [N, 3D], [N, D], "
                         f"[D, 3D]; found {list(x.shape)}, {list(h.shape)}, {list(w.shape)}")
    if b is not None:
        if b.dtype != x.dtype:
            raise TypeError(f"{op}: Bias has dtype {b.dtype}, Input {x.dtype}")
        if b.size != 3 * d:
            raise ValueError(f"{op}: Bias must hold 3D = {3 * d} values, found {b.size}")
    return x.shape[0], d


def _launch(kernel, n, *args):
    if n:
        blocks, threads = grid(n)
        kernel[blocks, threads, current_stream()](*args)


class GruUnit:
    def __init__(self, attrs, info=None):
        self.act, self.gate = CODES[attrs["activation"]], CODES[attrs["gate_activation"]]
        self.origin = bool(attrs["origin_mode"])

    def __call__(self, x, h, w, b):
        N, D = _operands(x, h, w, b, "gru_unit")
        xf, hf, wf = x.reshape(-1), h.reshape(-1), w.reshape(-1)
        g = device_empty(x.shape, x.dtype)
        reset = device_empty(h.shape, x.dtype)
        hidden = device_empty(h.shape, x.dtype)
        gf, rf = g.reshape(-1), reset.reshape(-1)
        _launch(_bias, N * 3 * D, xf, xf if b is None else b.reshape(-1), gf, 3 * D,
                N * 3 * D, b is not None)
        # g[:, :2D] += HiddenPrev @ W_ur; activate u, r; reset = r * HiddenPrev.
        gemm(hf, wf, gf, N, 2 * D, D, beta=1.0, ldb=2 * D, ldc=3 * D)
        _launch(_gates, N * 2 * D, gf, hf, rf, D, N * 2 * D, self.gate)
        # g[:, 2D:] += reset @ W_c; activate c; the new hidden state.
        gemm(rf, wf, gf, N, D, D, beta=1.0, ldb=D, ldc=3 * D, b_offset=2 * D * D,
             c_offset=2 * D)
        _launch(_hidden, N * D, gf, hf, hidden.reshape(-1), D, N * D, self.act, self.origin)
        return g, reset, hidden


class GruUnitGrad:
    """gru_unit_grad(Input, HiddenPrev, Weight, Bias, Gate, ResetHiddenPrev, Hidden@GRAD) ->
    (Input@GRAD, HiddenPrev@GRAD, Weight@GRAD, Bias@GRAD); Bias@GRAD None without Bias."""

    def __init__(self, attrs, info=None):
        self.act, self.gate = CODES[attrs["activation"]], CODES[attrs["gate_activation"]]
        self.origin = bool(attrs["origin_mode"])

    def __call__(self, x, h, w, b, gate, reset, dhidden):
        op = "gru_unit_grad"
        N, D = _operands(x, h, w, b, op)
        if tuple(gate.shape) != tuple(x.shape) or tuple(reset.shape) != tuple(h.shape):
            raise ValueError(f"{op}: Gate and ResetHiddenPrev must be {list(x.shape)} and "
                             f"{list(h.shape)}; found {list(gate.shape)}, "
                             f"{list(reset.shape)}")
        if tuple(dhidden.shape) != tuple(h.shape):
            raise ValueError(f"{op}: Hidden@GRAD must be {list(h.shape)}, found "
                             f"{list(dhidden.shape)}")
        for v, slot in ((gate, "Gate"), (reset, "ResetHiddenPrev"), (dhidden, "Hidden@GRAD")):
            if v.dtype != x.dtype:
                raise TypeError(f"{op}: {slot} has dtype {v.dtype}, Input {x.dtype}")
        gf, hf, wf = gate.reshape(-1), h.reshape(-1), w.reshape(-1)
        dx = device_empty(x.shape, x.dtype)
        dhp = device_empty(h.shape, x.dtype)
        drh = device_empty(h.shape, x.dtype)
        dw = device_empty(w.shape, x.dtype)
        dxf, dhpf, drhf, dwf = dx.reshape(-1), dhp.reshape(-1), drh.reshape(-1), dw.reshape(-1)
        _launch(_grad_uc, N * D, gf, hf, dhidden.reshape(-1), dxf, dhpf, D, N * D, self.act,
                self.gate, self.origin)
        # drh = dzc @ W_c^T; dzr and dhp += drh * r; dhp += [dzu, dzr] @ W_ur^T.
        gemm(dxf, wf, drhf, N, D, D, trans_b=True, lda=3 * D, ldb=D, a_offset=2 * D,
             b_offset=2 * D * D)
        _launch(_grad_r, N * D, gf, hf, drhf, dxf, dhpf, D, N * D, self.gate)
        gemm(dxf, wf, dhpf, N, D, 2 * D, trans_b=True, beta=1.0, lda=3 * D, ldb=2 * D)
        # Weight@GRAD: HiddenPrev^T @ [dzu, dzr], then ResetHiddenPrev^T @ dzc.
        gemm(hf, dxf, dwf, D, 2 * D, N, trans_a=True, lda=D, ldb=3 * D, ldc=2 * D)
        gemm(reset.reshape(-1), dxf, dwf, D, D, N, trans_a=True, lda=D, ldb=3 * D,
             b_offset=2 * D, ldc=D, c_offset=2 * D * D)
        db = None
        if b is not None:
            db = device_empty((1, 3 * D), x.dtype)
            sum_batches(dx, db, (N,), (False,), 3 * D)
        return dx, dhp, dw, db


KERNELS = [("gru_unit", GruUnit, DTYPES), ("gru_unit_grad", GruUnitGrad, DTYPES)]
