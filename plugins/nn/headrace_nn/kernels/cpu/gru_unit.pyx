# cython: language_level=3
"""gru_unit and its gradient: two GEMMs (NumPy's, through BLAS) and vectorized gates."""
import numpy as np

from ._rnn import activate, derivative

DTYPES = ("float32", "float64")
# Paddle's integer activation codes -> this plugin's codes (_rnn.ACTIVATIONS).
CODES = {0: 3, 1: 0, 2: 1, 3: 2}


def _operands(x, h, w, b, op):
    a, hp, wv = np.asarray(x), np.asarray(h), np.asarray(w)
    d = wv.shape[0] if wv.ndim == 2 else -1
    if wv.shape != (d, 3 * d) or a.ndim != 2 or a.shape[1] != 3 * d or \
            hp.shape != (a.shape[0], d):
        raise ValueError(f"{op}: Input, HiddenPrev and Weight must be [N, 3D], [N, D], "
                         f"[D, 3D]; found {list(a.shape)}, {list(hp.shape)}, "
                         f"{list(wv.shape)}")
    flat = wv.reshape(-1)
    bias = None if b is None else np.asarray(b).reshape(-1)
    if bias is not None and bias.size != 3 * d:
        raise ValueError(f"{op}: Bias must hold 3D = {3 * d} values, found {bias.size}")
    return a, hp, flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d), bias, d


cdef class GruUnit:
    cdef int act, gate
    cdef bint origin

    def __init__(self, dict attrs, info=None):
        self.act, self.gate = CODES[attrs["activation"]], CODES[attrs["gate_activation"]]
        self.origin = attrs["origin_mode"]

    def __call__(self, x, h, w, b):
        a, hp, w_ur, w_c, bias, d = _operands(x, h, w, b, "gru_unit")
        g = a.astype(a.dtype, copy=True)
        if bias is not None:
            g += bias
        g[:, :2 * d] += hp @ w_ur
        activate(self.gate, g[:, :2 * d])
        reset = g[:, d:2 * d] * hp
        g[:, 2 * d:] += reset @ w_c
        activate(self.act, g[:, 2 * d:])
        u, c = g[:, :d], g[:, 2 * d:]
        hidden = u * hp + (1 - u) * c if self.origin else (1 - u) * hp + u * c
        return g, reset.astype(a.dtype), hidden.astype(a.dtype)


cdef class GruUnitGrad:
    cdef int act, gate
    cdef bint origin

    def __init__(self, dict attrs, info=None):
        self.act, self.gate = CODES[attrs["activation"]], CODES[attrs["gate_activation"]]
        self.origin = attrs["origin_mode"]

    def __call__(self, x, h, w, b, gate, reset, dhidden):
        op = "gru_unit_grad"
        a, hp, w_ur, w_c, bias, d = _operands(x, h, w, b, op)
        g, rh = np.asarray(gate), np.asarray(reset)
        if g.shape != a.shape or rh.shape != hp.shape:
            raise ValueError(f"{op}: Gate and ResetHiddenPrev must be {list(a.shape)} and "
                             f"{list(hp.shape)}; found {list(g.shape)}, {list(rh.shape)}")
        dh = np.asarray(dhidden)
        if dh.shape != hp.shape:
            raise ValueError(f"{op}: Hidden@GRAD must be {list(hp.shape)}, found "
                             f"{list(dh.shape)}")
        u, r, c = g[:, :d], g[:, d:2 * d], g[:, 2 * d:]
        if self.origin:
            du, dc, dhp = dh * (hp - c), dh * (1 - u), dh * u
        else:
            du, dc, dhp = dh * (c - hp), dh * u, dh * (1 - u)
        dzc = dc * derivative(self.act, c)
        drh = dzc @ w_c.T
        dzu = du * derivative(self.gate, u)
        dzr = drh * hp * derivative(self.gate, r)
        dz_ur = np.concatenate([dzu, dzr], axis=1)
        dhp = dhp + drh * r + dz_ur @ w_ur.T
        dw = np.concatenate([(hp.T @ dz_ur).reshape(-1), (rh.T @ dzc).reshape(-1)])
        dx = np.concatenate([dz_ur, dzc], axis=1)
        return (dx.astype(a.dtype), dhp.astype(a.dtype), dw.reshape(d, 3 * d).astype(a.dtype),
                None if bias is None else dx.sum(axis=0).reshape(1, -1).astype(a.dtype))


KERNELS = [("gru_unit", GruUnit, DTYPES), ("gru_unit_grad", GruUnitGrad, DTYPES)]
