# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""lstm and lstm_grad: the whole time loop in one kernel.

The sequences are ranked by length, longest first, and their rows gathered step-major (step t
holds one row per sequence longer than t, in rank order), so each step is a prefix of the
previous one: one recurrent GEMM per step through BLAS over the running sequences, then one
pass of C over the gates. The gradient walks the steps back the same way. The step-major
activated gates (BatchGate) and cells (BatchCellPreAct) are what the forward pass keeps for
the gradient.
"""
cimport numpy as cnp
from headrace.kernels.common cimport real
from ._common cimport act, dact, gemm

import numpy as np

from headrace.runtime.tensor import Tensor

from ._rnn import ACTIVATIONS, checked as _checked, layout

cnp.import_array()

DTYPES = ("float32", "float64")


def _operands(op, x, h0, c0, weight, bias, bint peep, bint reverse):
    data = np.asarray(x.data)
    if data.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: Input has dtype {data.dtype}, expected float32 or float64")
    if data.ndim != 2 or data.shape[1] % 4:
        raise ValueError(f"{op}: Input must be [rows, 4 * hidden], found {list(data.shape)}")
    rows, d = data.shape[0], data.shape[1] // 4
    order, alive, first, idx = layout(x.lod, rows, reverse)
    w = _checked(weight, data.dtype, (d, 4 * d), op, "Weight")
    b = _checked(bias, data.dtype, (1, (7 if peep else 4) * d), op, "Bias").reshape(-1)
    states = [None if v is None else
              _checked(v, data.dtype, (len(order), d), op, slot)[order]
              for v, slot in ((h0, "H0"), (c0, "C0"))]
    if (states[0] is None) != (states[1] is None):
        raise ValueError(f"{op}: H0 and C0 are given together or not at all")
    return data, rows, d, order, alive, first, idx, w, b, states[0], states[1]


cdef void _forward(real* gates, real* hb, real* cb, const real* h0, const real* c0,
                   const real* w, const real* bias, const cnp.int64_t* alive,
                   const cnp.int64_t* first, Py_ssize_t steps, int d, bint peep, int ag, int ac,
                   int ah) noexcept nogil:
    cdef Py_ssize_t t, r, j, s, n
    cdef int d4 = 4 * d
    cdef const real* ph
    cdef const real* pc
    cdef real* g
    cdef real cp, cand, i, f, o, c, gi, gf, go
    for t in range(steps):
        s, n = first[t], alive[t]
        if t == 0:
            ph, pc = h0, c0
        else:
            ph, pc = hb + first[t - 1] * d, cb + first[t - 1] * d
        if ph != NULL:
            gemm(False, False, <int>n, d4, d, ph, d, w, d4, 1, gates + s * d4, d4)
        for r in range(n):
            g = gates + (s + r) * d4
            for j in range(d):
                cp = pc[r * d + j] if pc != NULL else 0
                gi = g[d + j] + bias[d + j]
                gf = g[2 * d + j] + bias[2 * d + j]
                if peep:
                    gi = gi + bias[d4 + j] * cp
                    gf = gf + bias[d4 + d + j] * cp
                cand = act(ac, g[j] + bias[j])
                i = act(ag, gi)
                f = act(ag, gf)
                c = f * cp + i * cand
                go = g[3 * d + j] + bias[3 * d + j]
                if peep:
                    go = go + bias[d4 + 2 * d + j] * c
                o = act(ag, go)
                g[j], g[d + j], g[2 * d + j], g[3 * d + j] = cand, i, f, o
                cb[(s + r) * d + j] = c
                hb[(s + r) * d + j] = o * act(ah, c)


cdef void _backward(const real* gates, const real* hb, const real* cb, const real* dhb,
                    const real* dcb, const real* h0, const real* c0, const real* w, const real* bias,
                    real* dg, real* dh_next, real* dc_next, real* dw, real* dpeep,
                    const cnp.int64_t* alive, const cnp.int64_t* first, Py_ssize_t steps, int d,
                    bint peep, int ag, int ac, int ah) noexcept nogil:
    cdef Py_ssize_t t, r, j, s, n, prev_n
    cdef int d4 = 4 * d
    cdef const real* ph
    cdef const real* pc
    cdef const real* g
    cdef real* e
    cdef real dh, dc, c, ahc, cand, i, f, o, cp, dgo, dgi, dgf, dcp
    for t in range(steps - 1, -1, -1):
        s, n = first[t], alive[t]
        if t == 0:
            ph, pc = h0, c0
        else:
            ph, pc = hb + first[t - 1] * d, cb + first[t - 1] * d
        for r in range(n):
            g = gates + (s + r) * d4
            e = dg + (s + r) * d4
            for j in range(d):
                dh = dh_next[r * d + j]
                if dhb != NULL:
                    dh = dh + dhb[(s + r) * d + j]
                cand, i, f, o = g[j], g[d + j], g[2 * d + j], g[3 * d + j]
                c = cb[(s + r) * d + j]
                ahc = act(ah, c)
                dgo = dh * ahc * dact(ag, o)
                dc = dc_next[r * d + j] + dh * o * dact(ah, ahc)
                if dcb != NULL:
                    dc = dc + dcb[(s + r) * d + j]
                if peep:
                    dc = dc + dgo * bias[d4 + 2 * d + j]
                    dpeep[2 * d + j] += dgo * c
                cp = pc[r * d + j] if pc != NULL else 0
                dgi = dc * cand * dact(ag, i)
                dgf = dc * cp * dact(ag, f)
                e[j] = dc * i * dact(ac, cand)
                e[d + j], e[2 * d + j], e[3 * d + j] = dgi, dgf, dgo
                dcp = dc * f
                if peep:
                    dcp = dcp + dgi * bias[d4 + j] + dgf * bias[d4 + d + j]
                    dpeep[j] += dgi * cp
                    dpeep[d + j] += dgf * cp
                dc_next[r * d + j] = dcp
        # The step before: its first n sequences get the recurrent gradient, the rest (they
        # ended there) none.
        gemm(False, True, <int>n, d, d4, dg + s * d4, d4, w, d4, 0, dh_next, d)
        prev_n = alive[t - 1] if t > 0 else n
        for r in range(n * d, prev_n * d):
            dh_next[r] = 0
            dc_next[r] = 0
        if ph != NULL:
            gemm(True, False, d, d4, <int>n, ph, d, dg + s * d4, d4, 1, dw, d4)


cdef class LSTM:
    cdef bint peep, reverse
    cdef int ag, ac, ah

    def __init__(self, dict attrs, info=None):
        self.peep, self.reverse = attrs["use_peepholes"], attrs["is_reverse"]
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["candidate_activation"]]
        self.ah = ACTIVATIONS[attrs["cell_activation"]]

    def __call__(self, x, h0, c0, weight, bias):
        data, rows, d, order, alive, first, idx, w, b, h0r, c0r = _operands(
            "lstm", x, h0, c0, weight, bias, self.peep, self.reverse)
        gates = np.ascontiguousarray(data[idx])
        hb = np.empty((len(idx), d), data.dtype)
        cb = np.empty((len(idx), d), data.dtype)
        if data.dtype == np.float32:
            _run_forward[float](gates, hb, cb, h0r, c0r, w, b, alive, first, d, self)
        else:
            _run_forward[double](gates, hb, cb, h0r, c0r, w, b, alive, first, d, self)
        hidden = np.empty((rows, d), data.dtype)
        cell = np.empty((rows, d), data.dtype)
        hidden[idx] = hb
        cell[idx] = cb
        return Tensor(hidden, x.lod), Tensor(cell, x.lod), gates, cb


cdef _run_forward(real[:, ::1] gates, real[:, ::1] hb, real[:, ::1] cb, h0r, c0r,
                  real[:, ::1] w, real[::1] b, cnp.int64_t[::1] alive, cnp.int64_t[::1] first,
                  int d, LSTM k):
    cdef real[:, ::1] h0v, c0v
    cdef const real* ph = NULL
    cdef const real* pc = NULL
    if h0r is not None:
        h0v, c0v = h0r, c0r
        if h0v.shape[0]:
            ph, pc = &h0v[0, 0], &c0v[0, 0]
    if gates.shape[0] == 0:
        return
    with nogil:
        _forward(&gates[0, 0], &hb[0, 0], &cb[0, 0], ph, pc, &w[0, 0], &b[0], &alive[0],
                 &first[0], alive.shape[0], d, k.peep, k.ag, k.ac, k.ah)


cdef class LSTMGrad:
    cdef bint peep, reverse
    cdef int ag, ac, ah
    cdef object wanted

    def __init__(self, dict attrs, info=None):
        self.peep, self.reverse = attrs["use_peepholes"], attrs["is_reverse"]
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["candidate_activation"]]
        self.ah = ACTIVATIONS[attrs["cell_activation"]]

    def __call__(self, x, h0, c0, weight, bias, hidden, cell, batch_gate, batch_cell, dhidden,
                 dcell):
        op = "lstm_grad"
        data, rows, d, order, alive, first, idx, w, b, h0r, c0r = _operands(
            op, x, h0, c0, weight, bias, self.peep, self.reverse)
        dtype, n_seq, total = data.dtype, len(order), len(idx)
        gates = _checked(batch_gate, dtype, (total, 4 * d), op, "BatchGate")
        cb = _checked(batch_cell, dtype, (total, d), op, "BatchCellPreAct")
        hb = np.ascontiguousarray(_checked(hidden, dtype, (rows, d), op, "Hidden")[idx])
        dhb, dcb = (None if g is None or g.data is None else
                    np.ascontiguousarray(_checked(g, dtype, (rows, d), op, slot)[idx])
                    for g, slot in ((dhidden, "Hidden@GRAD"), (dcell, "Cell@GRAD")))
        dg = np.empty((len(idx), 4 * d), dtype)
        dh_next = np.zeros((max(n_seq, 1), d), dtype)
        dc_next = np.zeros((max(n_seq, 1), d), dtype)
        dw = np.zeros((d, 4 * d), dtype)
        dpeep = np.zeros(3 * d, dtype)
        if len(idx):
            if dtype == np.float32:
                _run_backward[float](gates, hb, cb, dhb, dcb, h0r, c0r, w, b, dg, dh_next, dc_next,
                                     dw, dpeep, alive, first, d, self)
            else:
                _run_backward[double](gates, hb, cb, dhb, dcb, h0r, c0r, w, b, dg, dh_next,
                                      dc_next, dw, dpeep, alive, first, d, self)
        dx = np.empty((rows, 4 * d), dtype)
        dx[idx] = dg
        db = dg.sum(axis=0)
        if self.peep:
            db = np.concatenate([db, dpeep])
        dh0 = dc0 = None
        if h0 is not None:
            dh0 = np.zeros((n_seq, d), dtype)
            dc0 = np.zeros((n_seq, d), dtype)
            dh0[order] = dh_next[:n_seq]
            dc0[order] = dc_next[:n_seq]
        return (Tensor(dx, x.lod), dh0, dc0, dw, db.reshape(1, -1))


cdef _run_backward(real[:, ::1] gates, real[:, ::1] hb, real[:, ::1] cb, dhb, dcb, h0r, c0r,
                   real[:, ::1] w, real[::1] b, real[:, ::1] dg, real[:, ::1] dh_next,
                   real[:, ::1] dc_next, real[:, ::1] dw, real[::1] dpeep,
                   cnp.int64_t[::1] alive, cnp.int64_t[::1] first, int d, LSTMGrad k):
    cdef real[:, ::1] dhv, dcv, h0v, c0v
    cdef const real* pdh = NULL
    cdef const real* pdc = NULL
    cdef const real* ph = NULL
    cdef const real* pc = NULL
    if dhb is not None:
        dhv = dhb
        pdh = &dhv[0, 0]
    if dcb is not None:
        dcv = dcb
        pdc = &dcv[0, 0]
    if h0r is not None:
        h0v, c0v = h0r, c0r
        if h0v.shape[0]:
            ph, pc = &h0v[0, 0], &c0v[0, 0]
    with nogil:
        _backward(&gates[0, 0], &hb[0, 0], &cb[0, 0], pdh, pdc, ph, pc, &w[0, 0], &b[0], &dg[0, 0],
                  &dh_next[0, 0], &dc_next[0, 0], &dw[0, 0], &dpeep[0], &alive[0], &first[0],
                  alive.shape[0], d, k.peep, k.ag, k.ac, k.ah)


KERNELS = [("lstm", LSTM, DTYPES, "lod"), ("lstm_grad", LSTMGrad, DTYPES, "lod")]
