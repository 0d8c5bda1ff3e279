# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""gru and gru_grad: the whole time loop in one kernel, laid out like lstm's (sequences ranked,
rows step-major, each step a prefix of the one before). A step is two GEMMs through BLAS (the
update/reset gates from h, then the candidate from r * h) around the activations (NumPy's
vectorized loops); the gradient runs the same steps back, its cell arithmetic in C.
"""
cimport numpy as cnp
from headrace.kernels.common cimport real
from ._common cimport dact, gemm, mm

import numpy as np

from headrace.runtime.tensor import Tensor

from ._rnn import ACTIVATIONS, activate, checked, layout

cnp.import_array()

DTYPES = ("float32", "float64")


def _operands(op, x, h0, weight, bias, bint reverse):
    data = np.asarray(x.data)
    if data.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: Input has dtype {data.dtype}, expected float32 or float64")
    if data.ndim != 2 or data.shape[1] % 3:
        raise ValueError(f"{op}: Input must be [rows, 3 * hidden], found {list(data.shape)}")
    rows, d = data.shape[0], data.shape[1] // 3
    order, alive, first, idx = layout(x.lod, rows, reverse, op)
    w = checked(weight, data.dtype, (d, 3 * d), op, "Weight").reshape(-1)
    b = None if bias is None else checked(bias, data.dtype, (1, 3 * d), op, "Bias")
    h0r = None if h0 is None else checked(h0, data.dtype, (len(order), d), op, "H0")[order]
    return data, rows, d, order, alive, first, idx, w, b, h0r


def _forward(gates, rb, hb, h0r, w, alive, first, int d, int ag, int ac, bint origin):
    """The steps, each two GEMMs through BLAS around the gates' activations with NumPy's
    vectorized loops (the transcendental functions are most of a cell's work)."""
    cdef Py_ssize_t t, s, n
    cdef int d2 = 2 * d
    w_ur, w_c = w[:d2 * d].reshape(d, d2), w[d2 * d:].reshape(d, d)
    for t in range(len(alive)):
        s, n = first[t], alive[t]
        ph = (h0r[:n] if h0r is not None else None) if t == 0 else \
            hb[first[t - 1]:first[t - 1] + n]
        g = gates[s:s + n]
        if ph is not None:
            mm(ph, w_ur, g[:, :d2], False, False, 1)
        activate(ag, g[:, :d2])
        u, cand, reset = g[:, :d], g[:, d2:], rb[s:s + n]
        if ph is not None:
            np.multiply(g[:, d:d2], ph, out=reset)
            mm(reset, w_c, cand, False, False, 1)
        else:
            reset[...] = 0
        activate(ac, cand)
        h = hb[s:s + n]
        if origin:   # h = u h' + (1 - u) c = c + u (h' - c)
            if ph is not None:
                np.subtract(ph, cand, out=h)
            else:
                np.negative(cand, out=h)
            h *= u
            h += cand
        else:        # h = (1 - u) h' + u c = h' + u (c - h')
            if ph is not None:
                np.subtract(cand, ph, out=h)
            else:
                np.copyto(h, cand)
            h *= u
            if ph is not None:
                h += ph


cdef void _backward(const real* gates, const real* rb, const real* hb, const real* dhb,
                    const real* h0, const real* w, real* dg, real* dh_next, real* dhp,
                    real* drh, real* dw, const cnp.int64_t* alive, const cnp.int64_t* first,
                    Py_ssize_t steps, int d, int ag, int ac, bint origin) noexcept nogil:
    cdef Py_ssize_t t, r, j, s, n, prev_n
    cdef int d3 = 3 * d, d2 = 2 * d
    cdef const real* ph
    cdef const real* wc = w + d2 * d
    cdef const real* g
    cdef real* e
    cdef real dh, u, c, hp, du, dcand
    for t in range(steps - 1, -1, -1):
        s, n = first[t], alive[t]
        ph = h0 if t == 0 else hb + first[t - 1] * d
        for r in range(n):
            g = gates + (s + r) * d3
            e = dg + (s + r) * d3
            for j in range(d):
                dh = dh_next[r * d + j]
                if dhb != NULL:
                    dh = dh + dhb[(s + r) * d + j]
                u, c = g[j], g[d2 + j]
                hp = ph[r * d + j] if ph != NULL else 0
                if origin:
                    du, dcand, dhp[r * d + j] = dh * (hp - c), dh * (1 - u), dh * u
                else:
                    du, dcand, dhp[r * d + j] = dh * (c - hp), dh * u, dh * (1 - u)
                e[j] = du * dact(ag, u)
                e[d2 + j] = dcand * dact(ac, c)
                e[d + j] = 0
        if ph != NULL:
            # The candidate's product (r * h') W_c, back to r and h'.
            gemm(False, True, <int>n, d, d, dg + s * d3 + d2, d3, wc, d, 0, drh, d)
            for r in range(n):
                e = dg + (s + r) * d3
                for j in range(d):
                    e[d + j] = drh[r * d + j] * ph[r * d + j] * dact(ag, gates[(s + r) * d3
                                                                         + d + j])
                    dhp[r * d + j] += drh[r * d + j] * gates[(s + r) * d3 + d + j]
            gemm(False, True, <int>n, d, d2, dg + s * d3, d3, w, d2, 1, dhp, d)
            gemm(True, False, d, d, <int>n, rb + s * d, d, dg + s * d3 + d2, d3, 1,
                 dw + d2 * d, d)
            gemm(True, False, d, d2, <int>n, ph, d, dg + s * d3, d3, 1, dw, d2)
        for r in range(n * d):
            dh_next[r] = dhp[r]
        prev_n = alive[t - 1] if t > 0 else n
        for r in range(n * d, prev_n * d):
            dh_next[r] = 0


cdef class GRU:
    cdef int ag, ac
    cdef bint reverse, origin

    def __init__(self, dict attrs, info=None):
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["activation"]]
        self.reverse, self.origin = attrs["is_reverse"], attrs["origin_mode"]

    def __call__(self, x, h0, weight, bias):
        data, rows, d, order, alive, first, idx, w, b, h0r = _operands(
            "gru", x, h0, weight, bias, self.reverse)
        gates = np.ascontiguousarray(data[idx])
        if b is not None:
            gates += b
        total = len(idx)
        rb = np.empty((total, d), data.dtype)
        hb = np.empty((total, d), data.dtype)
        _forward(gates, rb, hb, h0r, w, alive, first, d, self.ag, self.ac, self.origin)
        hidden = np.empty((rows, d), data.dtype)
        hidden[idx] = hb
        return gates, rb, hb, Tensor(hidden, x.lod)


cdef class GRUGrad:
    cdef int ag, ac
    cdef bint reverse, origin

    def __init__(self, dict attrs, info=None):
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["activation"]]
        self.reverse, self.origin = attrs["is_reverse"], attrs["origin_mode"]

    def __call__(self, x, h0, weight, bias, batch_gate, batch_reset, batch_hidden, hidden,
                 dhidden):
        op = "gru_grad"
        data, rows, d, order, alive, first, idx, w, b, h0r = _operands(
            op, x, h0, weight, bias, self.reverse)
        dtype, n_seq, total = data.dtype, len(order), len(idx)
        gates = checked(batch_gate, dtype, (total, 3 * d), op, "BatchGate")
        rb = checked(batch_reset, dtype, (total, d), op, "BatchResetHiddenPrev")
        hb = checked(batch_hidden, dtype, (total, d), op, "BatchHidden")
        dhb = None if dhidden is None or dhidden.data is None else \
            np.ascontiguousarray(checked(dhidden, dtype, (rows, d), op, "Hidden@GRAD")[idx])
        dg = np.zeros((total, 3 * d), dtype)
        dh_next, dhp, drh = (np.zeros((max(n_seq, 1), d), dtype) for _ in range(3))
        dw = np.zeros(3 * d * d, dtype)
        if total:
            if dtype == np.float32:
                _run_backward[float](gates, rb, hb, dhb, h0r, w, dg, dh_next, dhp, drh, dw,
                                     alive, first, d, self)
            else:
                _run_backward[double](gates, rb, hb, dhb, h0r, w, dg, dh_next, dhp, drh, dw,
                                      alive, first, d, self)
        dx = np.empty((rows, 3 * d), dtype)
        dx[idx] = dg
        dh0 = None
        if h0 is not None:
            dh0 = np.zeros((n_seq, d), dtype)
            dh0[order] = dh_next[:n_seq]
        db = None if bias is None else dg.sum(axis=0).reshape(1, -1)
        return Tensor(dx, x.lod), dh0, dw.reshape(d, 3 * d), db


cdef _run_backward(real[:, ::1] gates, real[:, ::1] rb, real[:, ::1] hb, dhb, h0r,
                   real[::1] w, real[:, ::1] dg, real[:, ::1] dh_next, real[:, ::1] dhp,
                   real[:, ::1] drh, real[::1] dw, cnp.int64_t[::1] alive,
                   cnp.int64_t[::1] first, int d, GRUGrad k):
    cdef real[:, ::1] dhv, h0v
    cdef const real* pdh = NULL
    cdef const real* ph = NULL
    if dhb is not None:
        dhv = dhb
        pdh = &dhv[0, 0]
    if h0r is not None:
        h0v = np.ascontiguousarray(h0r)
        if h0v.shape[0]:
            ph = &h0v[0, 0]
    with nogil:
        _backward(&gates[0, 0], &rb[0, 0], &hb[0, 0], pdh, ph, &w[0], &dg[0, 0],
                  &dh_next[0, 0], &dhp[0, 0], &drh[0, 0], &dw[0], &alive[0], &first[0],
                  alive.shape[0], d, k.ag, k.ac, k.origin)


KERNELS = [("gru", GRU, DTYPES, "lod"), ("gru_grad", GRUGrad, DTYPES, "lod")]
