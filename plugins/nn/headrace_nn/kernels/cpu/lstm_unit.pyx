# cython: language_level=3
"""lstm_unit and its gradient with NumPy's vectorized loops over the [N, D] gates."""
import numpy as np

DTYPES = ("float32", "float64")


def _sigmoid(v):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-v))


def _gates(x, c_prev, double forget_bias, op):
    a, c = np.asarray(x), np.asarray(c_prev)
    if a.ndim != 2 or c.ndim != 2 or a.shape != (c.shape[0], 4 * c.shape[1]):
        raise ValueError(f"{op}: X must be [N, 4D] for C_prev [N, D]; found "
                         f"{list(a.shape)}, {list(c.shape)}")
    d = c.shape[1]
    return (a, c, _sigmoid(a[:, :d]), _sigmoid(a[:, d:2 * d] + forget_bias),
            _sigmoid(a[:, 2 * d:3 * d]), np.tanh(a[:, 3 * d:]))


cdef class LstmUnit:
    cdef double forget_bias

    def __init__(self, dict attrs, info=None):
        self.forget_bias = attrs["forget_bias"]

    def __call__(self, x, c_prev):
        a, c, i, f, o, g = _gates(x, c_prev, self.forget_bias, "lstm_unit")
        cell = f * c + i * g
        return cell.astype(a.dtype), (o * np.tanh(cell)).astype(a.dtype)


cdef class LstmUnitGrad:
    cdef double forget_bias

    def __init__(self, dict attrs, info=None):
        self.forget_bias = attrs["forget_bias"]

    def __call__(self, x, c_prev, cell, dc, dh):  # the output gradients in slot order
        a, c, i, f, o, g = _gates(x, c_prev, self.forget_bias, "lstm_unit_grad")
        cell = np.asarray(cell)
        if cell.shape != c.shape:
            raise ValueError(f"lstm_unit_grad: C has shape {list(cell.shape)}, C_prev "
                             f"{list(c.shape)}")
        dh = np.zeros_like(c) if dh is None else np.asarray(dh)
        dc = np.zeros_like(c) if dc is None else np.asarray(dc)
        if dh.shape != c.shape or dc.shape != c.shape:
            raise ValueError(f"lstm_unit_grad: H@GRAD and C@GRAD must be {list(c.shape)}; "
                             f"found {list(dh.shape)}, {list(dc.shape)}")
        tc = np.tanh(cell)
        term = dc + dh * o * (1 - tc * tc)
        dx = np.concatenate([term * g * i * (1 - i), term * c * f * (1 - f),
                             dh * tc * o * (1 - o), term * i * (1 - g * g)], axis=1)
        return dx.astype(a.dtype), (term * f).astype(a.dtype)


KERNELS = [("lstm_unit", LstmUnit, DTYPES), ("lstm_unit_grad", LstmUnitGrad, DTYPES)]
