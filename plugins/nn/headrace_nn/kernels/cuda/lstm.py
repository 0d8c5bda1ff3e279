"""lstm and lstm_grad on CUDA, laid out as the CPU kernel (kernels/cpu/lstm.pyx): sequences
ranked by length, rows step-major (the shared layout, _rnn.py), so a step is a prefix of the
step before and its recurrent product h' W one GEMM over the step's rows (the shared tiled
GEMM, headrace.kernels.cuda_gemm, accumulating into the step's block of the gates); the
layout's index arrays cross to the device once per batch layout, nothing else. Input's
rows are gathered step-major with the bias by one kernel; then per step the GEMM and one
elementwise kernel (a thread per (row, unit): peepholes, activations, c and h, written
step-major and to Hidden/Cell's Input rows), the gate math in float64, stored in Input's
dtype.

The gradient walks the steps back: per step one elementwise kernel (the gate gradients of the
step's rows, the cell gradient carried in place, each row's peephole terms kept to be summed
after the loop: no atomics) and one GEMM for dh of the step before, e W^T. After the loop
Weight@GRAD is one GEMM over all rows (h of the step before, gathered step-major, against the
gate gradients), Bias@GRAD column sums (sum_batches), Input@GRAD a scatter back to Input's
rows. A row whose sequence ends at the step before starts from zero gradients: the kernel reads
the carried ones only for the rows the step after had.
"""
from numba import cuda

from headrace.kernels.cuda_gemm import gemm, sum_batches
from headrace.kernels.cuda_launch import device_empty
from headrace.runtime import Tensor

from ._rnn import (ACTIVATIONS, Layouts, gather_rows, launch, operand, prev_rows, scatter_rows,
                   unrank, value)
from .gru_unit import _act, _deriv

DTYPES = ("float32", "float64")


@cuda.jit(device=True)
def cell(g, base, D, j, cp, peep, ag, ac, ah, clip, has_pc, has_peep):
    """Unit j of one row's cell (lstm's and lstmp's): g [4D] at ``base`` holds the row's
    [candidate, input, forget, output] pre-activations, left activated; cp: c of the step
    before; clip > 0 clips c (before the output gate's peephole). Returns (c, act(c), o)."""
    zi = float(g[base + D + j])
    zf = float(g[base + 2 * D + j])
    if has_peep and has_pc:
        zi += peep[j] * cp
        zf += peep[D + j] * cp
    cand = _act(ac, float(g[base + j]))
    i = _act(ag, zi)
    f = _act(ag, zf)
    c = i * cand + f * cp
    if clip > 0:
        c = min(max(c, -clip), clip)
    zo = float(g[base + 3 * D + j])
    if has_peep:
        zo += peep[2 * D + j] * c
    o = _act(ag, zo)
    g[base + j] = cand
    g[base + D + j] = i
    g[base + 2 * D + j] = f
    g[base + 3 * D + j] = o
    return c, _act(ah, c), o


@cuda.jit(device=True)
def cell_grad(g, dg, pe, base, pe_base, D, j, dh, dc, c, a, cp, peep, ag, ac, ah, clip,
              has_peep):
    """Unit j of one row's cell backwards (lstm's and lstmp's): from dh and dc reaching h
    and c, the gates' pre-activation gradients into dg at ``base`` and the peephole terms
    into pe at ``pe_base``; a: act(c). A clipped c passes nothing back (Paddle's rule).
    Returns the gradient of the cell before."""
    cand = float(g[base + j])
    i = float(g[base + D + j])
    f = float(g[base + 2 * D + j])
    o = float(g[base + 3 * D + j])
    dgo = dh * a * _deriv(ag, o)
    if clip > 0 and (c >= clip or c <= -clip):
        dcc = 0.0
    else:
        dcc = dc + dh * o * _deriv(ah, a)
        if has_peep:
            dcc += dgo * peep[2 * D + j]
    dgi = dcc * cand * _deriv(ag, i)
    dgf = dcc * cp * _deriv(ag, f)
    dg[base + j] = dcc * i * _deriv(ac, cand)
    dg[base + D + j] = dgi
    dg[base + 2 * D + j] = dgf
    dg[base + 3 * D + j] = dgo
    dcc = dcc * f
    if has_peep:
        dcc += dgi * peep[j] + dgf * peep[D + j]
        pe[pe_base + j] = dgi * cp
        pe[pe_base + D + j] = dgf * cp
        pe[pe_base + 2 * D + j] = dgo * c
    return dcc


@cuda.jit
def _step(g, cb, hb, hidden, cell_out, idx, pc, pc_off, peep, s, D, total, ag, ac, ah, has_pc,
          has_peep):
    """One step's cells: g [rows, 4D] step-major pre-activations in, activated out; c and h
    to cb/hb (step-major) and Cell/Hidden."""
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        row = s + r
        cp = float(pc[pc_off + r * D + j]) if has_pc else 0.0
        c, a, o = cell(g, row * 4 * D, D, j, cp, peep, ag, ac, ah, 0.0, has_pc, has_peep)
        h = o * a
        cb[row * D + j] = c
        hb[row * D + j] = h
        out = idx[row] * D + j
        hidden[out] = h
        cell_out[out] = c


@cuda.jit
def _step_grad(g, cb, pc, pc_off, dhc, dc, dhid, dcel, idx, peep, dg, pe, s, n_next, D, total,
               ag, ac, ah, has_pc, has_dhid, has_dcel, has_peep):
    """One step back: the gate gradients into dg (step-major), dc (rank order) from the cell
    gradient of the step after to the one before; dhc holds dh of the step after (its GEMM's),
    read for the rows the step after had; pe gets each row's peephole terms."""
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        row = s + r
        carried = r < n_next
        dh = float(dhc[k]) if carried else 0.0
        dcv = float(dc[k]) if carried else 0.0
        if has_dhid:
            dh += dhid[idx[row] * D + j]
        if has_dcel:
            dcv += dcel[idx[row] * D + j]
        c = float(cb[row * D + j])
        cp = float(pc[pc_off + k]) if has_pc else 0.0
        dc[k] = cell_grad(g, dg, pe, row * 4 * D, row * 3 * D, D, j, dh, dcv, c, _act(ah, c),
                          cp, peep, ag, ac, ah, 0.0, has_peep)


class _Options:
    """The attributes both kernels read, and their operands, checked as the CPU kernel's."""

    def __init__(self, attrs, info=None):
        self.peep, self.reverse = bool(attrs["use_peepholes"]), bool(attrs["is_reverse"])
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["candidate_activation"]]
        self.ah = ACTIVATIONS[attrs["cell_activation"]]
        self.info = info
        self.layouts = Layouts()

    def operands(self, op, x, h0, c0, weight, bias):
        data, rows, d, st = self.layouts.sequences(op, x, self.reverse, 4)
        dtype = data.dtype
        w = operand(weight, dtype, (d, 4 * d), op, "Weight")
        b = operand(bias, dtype, (1, (7 if self.peep else 4) * d), op, "Bias")
        if (h0 is None) != (c0 is None):
            raise ValueError(f"{op}: H0 and C0 are given together or not at all")
        states = [None if v is None else
                  gather_rows(operand(v, dtype, (st.n_seq, d), op, slot), st.order, st.n_seq,
                              d, dtype)
                  for v, slot in ((h0, "H0"), (c0, "C0"))]
        return data.reshape(-1), rows, d, dtype, st, w, b, states[0], states[1]

    def flags(self):
        return self.ag, self.ac, self.ah


class LSTM(_Options):

    def __call__(self, x, h0, c0, weight, bias):
        xf, rows, d, dtype, st, w, b, h0r, c0r = self.operands("lstm", x, h0, c0, weight,
                                                               bias)
        gates = gather_rows(xf, st.idx, st.total, 4 * d, dtype, bias=b)
        cb, hb = device_empty((st.total, d), dtype), device_empty((st.total, d), dtype)
        hidden, cell = device_empty((rows, d), dtype), device_empty((rows, d), dtype)
        gf, cbf, hbf = gates.reshape(-1), cb.reshape(-1), hb.reshape(-1)
        peep = b[4 * d:] if self.peep else b
        for t in range(st.steps):
            s, n = st.first[t], st.alive[t]
            if t > 0:
                gemm(hbf, w, gf, n, 4 * d, d, beta=1.0, a_offset=st.first[t - 1] * d,
                     c_offset=s * 4 * d)
            elif h0r is not None:
                gemm(h0r.reshape(-1), w, gf, n, 4 * d, d, beta=1.0, c_offset=0)
            pc, pc_off = (cbf, st.first[t - 1] * d) if t > 0 else \
                (cbf if c0r is None else c0r.reshape(-1), 0)
            launch(_step, n * d, gf, cbf, hbf, hidden.reshape(-1), cell.reshape(-1), st.idx,
                   pc, pc_off, peep, s, d, n * d, *self.flags(), t > 0 or c0r is not None,
                   self.peep)
        return Tensor(hidden, x.lod), Tensor(cell, x.lod), gates, cb


def _wants(info, slot):
    return info is None or info.wants(slot)


class LSTMGrad(_Options):

    def __call__(self, x, h0, c0, weight, bias, hidden, cell, batch_gate, batch_cell, dhidden,
                 dcell):
        op = "lstm_grad"
        xf, rows, d, dtype, st, w, b, h0r, c0r = self.operands(op, x, h0, c0, weight, bias)
        total = st.total
        gf = operand(batch_gate, dtype, (total, 4 * d), op, "BatchGate")
        cbf = operand(batch_cell, dtype, (total, d), op, "BatchCellPreAct")
        hid = operand(hidden, dtype, (rows, d), op, "Hidden")
        dhid, dcel = (None if v is None or value(v) is None else
                      operand(v, dtype, (rows, d), op, slot)
                      for v, slot in ((dhidden, "Hidden@GRAD"), (dcell, "Cell@GRAD")))
        m = max(st.n_seq, 1)
        dg = device_empty((total, 4 * d), dtype)
        pe = device_empty((total, 3 * d), dtype) if self.peep else dg
        dhc, dc = device_empty((m, d), dtype), device_empty((m, d), dtype)
        dgf, dhcf, dcf = dg.reshape(-1), dhc.reshape(-1), dc.reshape(-1)
        peep = b[4 * d:] if self.peep else b
        for t in range(st.steps - 1, -1, -1):
            s, n = st.first[t], st.alive[t]
            n_next = st.alive[t + 1] if t + 1 < st.steps else 0
            pc, pc_off = (cbf, st.first[t - 1] * d) if t > 0 else \
                (cbf if c0r is None else c0r.reshape(-1), 0)
            launch(_step_grad, n * d, gf, cbf, pc, pc_off, dhcf, dcf,
                   dgf if dhid is None else dhid, dgf if dcel is None else dcel, st.idx, peep,
                   dgf, pe.reshape(-1), s, n_next, d, n * d, *self.flags(),
                   t > 0 or c0r is not None, dhid is not None, dcel is not None, self.peep)
            if t > 0 or h0r is not None:   # dh of the step before (or H0's): e W^T
                gemm(dgf, w, dhcf, n, d, 4 * d, trans_b=True, a_offset=s * 4 * d)
        dx = scatter_rows(dgf, st.idx, device_empty((rows, 4 * d), dtype), total, 4 * d)
        dw = db = None
        if _wants(self.info, "Weight@GRAD"):
            prev = prev_rows(hid, st, h0r, d, dtype, through=st.idx)
            dw = device_empty((d, 4 * d), dtype)
            gemm(prev.reshape(-1), dgf, dw.reshape(-1), d, 4 * d, total, trans_a=True)
        if _wants(self.info, "Bias@GRAD"):
            db = device_empty((1, (7 if self.peep else 4) * d), dtype)
            dbf = db.reshape(-1)
            sum_batches(dg, dbf[:4 * d], (total,), (False,), 4 * d)
            if self.peep:
                sum_batches(pe, dbf[4 * d:], (total,), (False,), 3 * d)
        dh0 = dc0 = None
        if h0r is not None:
            dh0, dc0 = unrank(dhcf, st, d, dtype), unrank(dcf, st, d, dtype)
        return Tensor(dx, x.lod), dh0, dc0, dw, db


KERNELS = [("lstm", LSTM, DTYPES, "lod"), ("lstm_grad", LSTMGrad, DTYPES, "lod")]
