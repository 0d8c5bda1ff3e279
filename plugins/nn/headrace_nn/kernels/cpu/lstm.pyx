# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""lstm and lstm_grad: the whole time loop in one kernel.

The sequences are ranked by length, longest first, and their rows gathered step-major (step t
holds one row per sequence longer than t, in rank order), so each step is a prefix of the
previous one: one recurrent GEMM per step through BLAS over the running sequences, then the
gates with NumPy's vectorized loops on the step's block (the transcendental functions are most
of a cell's work). The gradient walks the steps back the same way, and the weight gradient is
one GEMM over all steps at the end. The step-major activated gates (BatchGate) and cells
(BatchCellPreAct) are what the forward pass keeps for the gradient.
"""
cimport numpy as cnp
from headrace.kernels.common cimport real
from ._common cimport dact, mm

import numpy as np

from headrace.runtime.tensor import Tensor

from ._rnn import ACTIVATIONS, activate, checked as _checked, derivative, layout, previous_rows

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


def _forward(gates, hb, cb, h0r, c0r, w, b, alive, first, int d, bint peep, int ag, int ac,
             int ah):
    cdef Py_ssize_t t, s, n
    cdef int d2 = 2 * d, d3 = 3 * d, d4 = 4 * d
    gates += b[:d4]
    if peep:
        w_ic, w_fc, w_oc = b[d4:d4 + d], b[d4 + d:d4 + d2], b[d4 + d2:]
    for t in range(len(alive)):
        s, n = first[t], alive[t]
        if t == 0:
            ph, pc = h0r, c0r
        else:
            ph, pc = hb[first[t - 1]:first[t - 1] + n], cb[first[t - 1]:first[t - 1] + n]
        g = gates[s:s + n]
        if ph is not None:
            mm(ph[:n], w, g, False, False, 1)
        cand, i, f, o = g[:, :d], g[:, d:d2], g[:, d2:d3], g[:, d3:]
        if peep and pc is not None:
            i += w_ic * pc[:n]
            f += w_fc * pc[:n]
        activate(ac, cand)
        activate(ag, i)
        activate(ag, f)
        c = cb[s:s + n]
        np.multiply(i, cand, out=c)
        if pc is not None:
            c += f * pc[:n]
        if peep:
            o += w_oc * c
        activate(ag, o)
        h = hb[s:s + n]
        np.copyto(h, c)
        activate(ah, h)
        h *= o


cdef void _cell_grads(const real* g, const real* c, const real* ahc, const real* pc,
                      const real* dhb, const real* dcb, real* dh, real* dc, real* e,
                      const real* peep_w, real* dpeep, Py_ssize_t n, int d, int ag, int ac,
                      int ah) noexcept nogil:
    """One step's gate gradients (into e) and the cell gradient of the step before (into dc),
    from dh/dc after the step; derivatives from the kept activations, no transcendentals."""
    cdef Py_ssize_t r, j, k
    cdef int d2 = 2 * d, d3 = 3 * d, d4 = 4 * d
    cdef real h_g, cand, i, f, o, cp, dgo, dgi, dgf, dcc, dhh
    for r in range(n):
        for j in range(d):
            k = r * d + j
            cand, i, f, o = g[r * d4 + j], g[r * d4 + d + j], g[r * d4 + d2 + j], \
                g[r * d4 + d3 + j]
            dhh = dh[k] + (dhb[k] if dhb != NULL else 0)
            dgo = dhh * ahc[k] * dact(ag, o)
            dcc = dc[k] + dhh * o * dact(ah, ahc[k]) + (dcb[k] if dcb != NULL else 0)
            if peep_w != NULL:
                dcc = dcc + dgo * peep_w[d2 + j]
                dpeep[d2 + j] += dgo * c[k]
            cp = pc[k] if pc != NULL else 0
            dgi = dcc * cand * dact(ag, i)
            dgf = dcc * cp * dact(ag, f)
            e[r * d4 + j] = dcc * i * dact(ac, cand)
            e[r * d4 + d + j], e[r * d4 + d2 + j], e[r * d4 + d3 + j] = dgi, dgf, dgo
            dcc = dcc * f
            if peep_w != NULL:
                dcc = dcc + dgi * peep_w[j] + dgf * peep_w[d + j]
                dpeep[j] += dgi * cp
                dpeep[d + j] += dgf * cp
            dc[k] = dcc


cdef _step_grads(real[:, ::1] g, real[:, ::1] c, real[:, ::1] ahc, pc, dhb, dcb,
                 real[:, ::1] dh, real[:, ::1] dc, real[:, ::1] e, peep_w, real[::1] dpeep,
                 Py_ssize_t n, int d, int ag, int ac, int ah):
    cdef real[:, ::1] v
    cdef real[::1] pw
    cdef const real* ppc = NULL
    cdef const real* pdh = NULL
    cdef const real* pdc = NULL
    cdef const real* ppw = NULL
    if n == 0:
        return
    if pc is not None:
        v = pc
        ppc = &v[0, 0]
    if dhb is not None:
        v = dhb
        pdh = &v[0, 0]
    if dcb is not None:
        v = dcb
        pdc = &v[0, 0]
    if peep_w is not None:
        pw = peep_w
        ppw = &pw[0]
    with nogil:
        _cell_grads(&g[0, 0], &c[0, 0], &ahc[0, 0], ppc, pdh, pdc, &dh[0, 0], &dc[0, 0],
                    &e[0, 0], ppw, &dpeep[0], n, d, ag, ac, ah)


def _backward(gates, hb, cb, dhb, dcb, h0r, c0r, w, b, dg, alive, first, int d, bint peep,
              int ag, int ac, int ah, Py_ssize_t n_seq):
    """dg (the gates' pre-activation gradients, step-major), and the gradients of the initial
    states and of the peephole weights."""
    cdef Py_ssize_t t, s, n, prev_n
    dtype = gates.dtype
    dh_next = np.zeros((max(n_seq, 1), d), dtype)  # rank order, every sequence
    dc_next = np.zeros_like(dh_next)
    dpeep = np.zeros(3 * d, dtype)
    ahc = np.empty_like(dh_next)
    peep_w = np.ascontiguousarray(b[4 * d:]) if peep else None
    for t in range(len(alive) - 1, -1, -1):
        s, n = first[t], alive[t]
        pc = (c0r[:n] if c0r is not None else None) if t == 0 else \
            cb[first[t - 1]:first[t - 1] + n]
        a = ahc[:n]
        np.copyto(a, cb[s:s + n])
        activate(ah, a)
        e = dg[s:s + n]
        if dtype == np.float32:
            _step_grads[float](gates[s:s + n], cb[s:s + n], a, pc,
                               None if dhb is None else dhb[s:s + n],
                               None if dcb is None else dcb[s:s + n], dh_next[:n],
                               dc_next[:n], e, peep_w, dpeep, n, d, ag, ac, ah)
        else:
            _step_grads[double](gates[s:s + n], cb[s:s + n], a, pc,
                                None if dhb is None else dhb[s:s + n],
                                None if dcb is None else dcb[s:s + n], dh_next[:n],
                                dc_next[:n], e, peep_w, dpeep, n, d, ag, ac, ah)
        mm(e, w, dh_next[:n], False, True, 0)
        prev_n = alive[t - 1] if t > 0 else n
        dh_next[n:prev_n] = 0
        dc_next[n:prev_n] = 0
    return dh_next, dc_next, dpeep


cdef class _Options:
    """The attributes both kernels read."""
    cdef bint peep, reverse
    cdef int ag, ac, ah

    def __init__(self, dict attrs, info=None):
        self.peep, self.reverse = attrs["use_peepholes"], attrs["is_reverse"]
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["candidate_activation"]]
        self.ah = ACTIVATIONS[attrs["cell_activation"]]


cdef class LSTM(_Options):

    def __call__(self, x, h0, c0, weight, bias):
        data, rows, d, order, alive, first, idx, w, b, h0r, c0r = _operands(
            "lstm", x, h0, c0, weight, bias, self.peep, self.reverse)
        gates = np.ascontiguousarray(data[idx])
        hb = np.empty((len(idx), d), data.dtype)
        cb = np.empty((len(idx), d), data.dtype)
        _forward(gates, hb, cb, h0r, c0r, w, b, alive, first, d, self.peep, self.ag, self.ac,
                 self.ah)
        hidden = np.empty((rows, d), data.dtype)
        cell = np.empty((rows, d), data.dtype)
        hidden[idx] = hb
        cell[idx] = cb
        return Tensor(hidden, x.lod), Tensor(cell, x.lod), gates, cb


cdef class LSTMGrad(_Options):

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
        dg = np.empty((total, 4 * d), dtype)
        dh_next, dc_next, dpeep = _backward(gates, hb, cb, dhb, dcb, h0r, c0r, w, b, dg, alive,
                                            first, d, self.peep, self.ag, self.ac, self.ah,
                                            n_seq)
        dw = np.zeros((d, 4 * d), dtype)
        mm(previous_rows(hb, first, alive, h0r), dg, dw, True, False, 0)  # one GEMM, all steps
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


KERNELS = [("lstm", LSTM, DTYPES, "lod"), ("lstm_grad", LSTMGrad, DTYPES, "lod")]
