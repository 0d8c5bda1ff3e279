"""lstm_unit and its gradient on CUDA: elementwise gate math over the [N, D] cells, one thread
per (n, j) reading its four gates X[n, j + kD] (k = i, f, o, g), computed in float64 and
stored in X's dtype, as the CPU kernel (kernels/cpu/lstm_unit.pyx)."""
import math

from numba import cuda

from headrace.devices.cuda import current_stream
from headrace.kernels.cuda_launch import device_empty, float_input, grid
from headrace.kernels.cuda_math import sigmoid as _sigmoid

DTYPES = ("float32", "float64")


@cuda.jit
def _lstm_unit(x, c_prev, c, h, D, total, forget_bias):
    k = cuda.grid(1)
    if k < total:
        n = k // D
        j = k % D
        base = n * 4 * D + j
        i = _sigmoid(x[base])
        f = _sigmoid(x[base + D] + forget_bias)
        o = _sigmoid(x[base + 2 * D])
        g = math.tanh(x[base + 3 * D])
        cell = f * c_prev[k] + i * g
        c[k] = cell
        h[k] = o * math.tanh(cell)


@cuda.jit
def _lstm_unit_grad(x, c_prev, cell, dc, dh, dx, dc_prev, D, total, forget_bias, has_dc,
                    has_dh):
    k = cuda.grid(1)
    if k < total:
        n = k // D
        j = k % D
        base = n * 4 * D + j
        i = _sigmoid(x[base])
        f = _sigmoid(x[base + D] + forget_bias)
        o = _sigmoid(x[base + 2 * D])
        g = math.tanh(x[base + 3 * D])
        tc = math.tanh(cell[k])
        gh = dh[k] if has_dh else 0.0
        term = (dc[k] if has_dc else 0.0) + gh * o * (1 - tc * tc)
        dx[base] = term * g * i * (1 - i)
        dx[base + D] = term * c_prev[k] * f * (1 - f)
        dx[base + 2 * D] = gh * tc * o * (1 - o)
        dx[base + 3 * D] = term * i * (1 - g * g)
        dc_prev[k] = term * f


def _shapes(x, c_prev, op):
    float_input(x, op, "X")
    float_input(c_prev, op, "C_prev")
    if x.ndim != 2 or c_prev.ndim != 2 or tuple(x.shape) != (c_prev.shape[0],
                                                            4 * c_prev.shape[1]):
        raise ValueError(f"{op}: X must be [N, 4D] for C_prev [N, D]; found "
                         f"{list(x.shape)}, {list(c_prev.shape)}")
    if c_prev.dtype != x.dtype:
        raise TypeError(f"{op}: C_prev has dtype {c_prev.dtype}, X {x.dtype}")
    return c_prev.shape[0] * c_prev.shape[1], c_prev.shape[1]


class LstmUnit:
    def __init__(self, attrs, info=None):
        self.forget_bias = float(attrs["forget_bias"])

    def __call__(self, x, c_prev):
        total, D = _shapes(x, c_prev, "lstm_unit")
        c = device_empty(c_prev.shape, x.dtype)
        h = device_empty(c_prev.shape, x.dtype)
        if total:
            blocks, threads = grid(total)
            _lstm_unit[blocks, threads, current_stream()](
                x.reshape(-1), c_prev.reshape(-1), c.reshape(-1), h.reshape(-1), D, total,
                self.forget_bias)
        return c, h


class LstmUnitGrad:
    """lstm_unit_grad(X, C_prev, C, C@GRAD, H@GRAD) -> (X@GRAD, C_prev@GRAD); an absent
    output gradient counts as zeros."""

    def __init__(self, attrs, info=None):
        self.forget_bias = float(attrs["forget_bias"])

    def __call__(self, x, c_prev, cell, dc, dh):
        op = "lstm_unit_grad"
        total, D = _shapes(x, c_prev, op)
        if tuple(cell.shape) != tuple(c_prev.shape):
            raise ValueError(f"{op}: C has shape {list(cell.shape)}, C_prev "
                             f"{list(c_prev.shape)}")
        for v in (dh, dc):
            if v is not None and tuple(v.shape) != tuple(c_prev.shape):
                raise ValueError(f"{op}: H@GRAD and C@GRAD must be {list(c_prev.shape)}; "
                                 f"found {None if dh is None else list(dh.shape)}, "
                                 f"{None if dc is None else list(dc.shape)}")
        for v, slot in ((cell, "C"), (dc, "C@GRAD"), (dh, "H@GRAD")):
            if v is not None and v.dtype != x.dtype:
                raise TypeError(f"{op}: {slot} has dtype {v.dtype}, X {x.dtype}")
        dx = device_empty(x.shape, x.dtype)
        dcp = device_empty(c_prev.shape, x.dtype)
        if total:
            cf = cell.reshape(-1)
            blocks, threads = grid(total)
            _lstm_unit_grad[blocks, threads, current_stream()](
                x.reshape(-1), c_prev.reshape(-1), cf,
                cf if dc is None else dc.reshape(-1), cf if dh is None else dh.reshape(-1),
                dx.reshape(-1), dcp.reshape(-1), D, total, self.forget_bias, dc is not None,
                dh is not None)
        return dx, dcp


KERNELS = [("lstm_unit", LstmUnit, DTYPES), ("lstm_unit_grad", LstmUnitGrad, DTYPES)]
