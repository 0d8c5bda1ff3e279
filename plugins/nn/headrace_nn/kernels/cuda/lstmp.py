"""lstmp and lstmp_grad on CUDA, as the CPU kernel (kernels/cpu/lstmp.pyx), Paddle's quirks
included (proj_activation other than identity applies cell_activation; a value clipped at or
beyond its bound passes no gradient). Laid out as lstm's CUDA kernel (_rnn.py: sequences
ranked, rows step-major, Input's rows gathered with the bias by one kernel). Per step: one GEMM
r' Weight over the step's rows (the shared tiled GEMM), one elementwise kernel for the cells
(peepholes, activations, the cell clip, c and h, Cell's Input rows), one GEMM h ProjWeight and
one elementwise kernel for the projection's activation and clip (Projection's Input rows). The
gate math runs in float64, stored in Input's dtype.

The gradient walks the steps back: the projection's clip and activation (elementwise), one GEMM
into dh, the cells (elementwise: gate gradients, the carried dc, each row's peephole terms kept
for a sum after the loop), one GEMM into dr of the step before (or H0's). The weight gradients
are one GEMM each over all rows after the loop, Bias@GRAD column sums, Input@GRAD a scatter.
"""
import numpy as np
from numba import cuda

from headrace.kernels.cuda_gemm import gemm, sum_batches
from headrace.kernels.cuda_launch import device_empty, float_input
from headrace.runtime import Tensor

from ._rnn import (ACTIVATIONS, Layouts, gather_rows, launch, operand, prev_rows, scatter_rows,
                   unrank, value, zeros)
from .gru_unit import _act, _deriv
from .lstm import cell, cell_grad

DTYPES = ("float32", "float64")
IDENTITY = ACTIVATIONS["identity"]


@cuda.jit
def _cells(g, cb, acb, hb, cell_out, idx, pc, pc_off, peep, s, D, total, ag, ac, acell, clip,
           has_pc, has_peep):
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        row = s + r
        cp = float(pc[pc_off + k]) if has_pc else 0.0
        c, a, o = cell(g, row * 4 * D, D, j, cp, peep, ag, ac, acell, clip, has_pc, has_peep)
        cb[row * D + j] = c
        acb[row * D + j] = a
        hb[row * D + j] = o * a
        cell_out[idx[row] * D + j] = c


@cuda.jit
def _projection(rb, proj, idx, s, P, total, aproj, clip):
    """r = clip(act(h ProjWeight)) of the step's rows, in place and to Projection."""
    k = cuda.grid(1)
    if k < total:
        r = k // P
        q = s * P + k
        v = _act(aproj, float(rb[q]))
        if clip > 0:
            v = min(max(v, -clip), clip)
        rb[q] = v
        proj[idx[s + r] * P + k - r * P] = v


@cuda.jit
def _projection_grad(rb, dr, s, P, total, aproj, clip):
    """Back through r = clip(act(.)): nothing passes at or beyond the bound; the derivative
    from the kept (clipped) output."""
    k = cuda.grid(1)
    if k < total:
        q = s * P + k
        y = float(rb[q])
        if clip > 0 and not (-clip < y < clip):
            dr[q] = 0
        elif aproj != IDENTITY:
            dr[q] = dr[q] * _deriv(aproj, y)


@cuda.jit
def _cells_grad(g, cb, acb, pc, pc_off, dh, dc, dcb, peep, dg, pe, s, n_next, D, total, ag,
                ac, acell, clip, has_pc, has_dcb, has_peep):
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        row = s + r
        # dc carries c's gradient from the step after (for its rows); Cell's own joins it
        dcv = float(dc[k]) if r < n_next else 0.0
        if has_dcb:
            dcv += dcb[row * D + j]
        cp = float(pc[pc_off + k]) if has_pc else 0.0
        dc[k] = cell_grad(g, dg, pe, row * 4 * D, row * 3 * D, D, j, float(dh[k]), dcv,
                          float(cb[row * D + j]), float(acb[row * D + j]), cp, peep, ag, ac,
                          acell, clip, has_peep)


class _Options:
    """The attributes both kernels read (as the CPU kernel's), and their weights' checks."""

    def __init__(self, attrs, info=None):
        self.peep, self.reverse = bool(attrs["use_peepholes"]), bool(attrs["is_reverse"])
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["candidate_activation"]]
        self.acell = ACTIVATIONS[attrs["cell_activation"]]
        # Paddle's kernel: cell_activation on the projection unless proj_activation is identity.
        self.aproj = IDENTITY if attrs["proj_activation"] == "identity" else self.acell
        # Paddle's attributes are float32, cast to the kernel's type.
        self.cell_clip = float(np.float32(attrs["cell_clip"]))
        self.proj_clip = float(np.float32(attrs["proj_clip"]))
        self.info = info
        self.layouts = Layouts()

    def weights(self, op, dtype, weight, proj_weight, bias, d):
        pw = float_input(value(proj_weight), op, "ProjWeight")
        if pw.ndim != 2 or pw.shape[0] != d or pw.shape[1] == 0:
            raise ValueError(f"{op}: ProjWeight must be [hidden, proj_size] = [{d}, P > 0], "
                             f"found {list(pw.shape)}")
        p = pw.shape[1]
        pw = operand(proj_weight, dtype, (d, p), op, "ProjWeight")
        w = operand(weight, dtype, (p, 4 * d), op, "Weight")
        b = operand(bias, dtype, (1, (7 if self.peep else 4) * d), op, "Bias")
        return w, pw, b, p

    def states(self, op, dtype, h0, c0, st, d, p):
        if h0 is not None and c0 is None:
            raise ValueError(f"{op}: C0 must be given with H0")
        return [None if v is None else
                gather_rows(operand(v, dtype, (st.n_seq, cols), op, slot), st.order,
                            st.n_seq, cols, dtype).reshape(-1)
                for v, slot, cols in ((h0, "H0", p), (c0, "C0", d))]

    def cell_before(self, st, t, cbf, c0r, d):
        if t > 0:
            return cbf, st.first[t - 1] * d, True
        return (cbf if c0r is None else c0r), 0, c0r is not None


class LSTMP(_Options):

    def __call__(self, x, h0, c0, weight, proj_weight, bias):
        op = "lstmp"
        data, rows, d, st = self.layouts.sequences(op, x, self.reverse, 4, nonempty=True)
        dtype, total = data.dtype, st.total
        w, pw, b, p = self.weights(op, dtype, weight, proj_weight, bias, d)
        h0r, c0r = self.states(op, dtype, h0, c0, st, d, p)
        gates = gather_rows(data.reshape(-1), st.idx, total, 4 * d, dtype, bias=b)
        cb, acb, hb = (device_empty((total, d), dtype) for _ in range(3))
        rb = device_empty((total, p), dtype)
        proj, cell = device_empty((rows, p), dtype), device_empty((rows, d), dtype)
        gf, cbf, hbf, rbf = gates.reshape(-1), cb.reshape(-1), hb.reshape(-1), rb.reshape(-1)
        peep = b[4 * d:] if self.peep else b
        for t in range(st.steps):
            s, n = st.first[t], st.alive[t]
            if t > 0:   # the recurrent term of every gate: r' Weight
                gemm(rbf, w, gf, n, 4 * d, p, beta=1.0, a_offset=st.first[t - 1] * p,
                     c_offset=s * 4 * d)
            elif h0r is not None:
                gemm(h0r, w, gf, n, 4 * d, p, beta=1.0)
            pc, off, has_pc = self.cell_before(st, t, cbf, c0r, d)
            launch(_cells, n * d, gf, cbf, acb.reshape(-1), hbf, cell.reshape(-1), st.idx, pc,
                   off, peep, s, d, n * d, self.ag, self.ac, self.acell, self.cell_clip,
                   has_pc, self.peep)
            gemm(hbf, pw, rbf, n, p, d, a_offset=s * d, c_offset=s * p)
            launch(_projection, n * p, rbf, proj.reshape(-1), st.idx, s, p, n * p, self.aproj,
                   self.proj_clip)
        return Tensor(proj, x.lod), Tensor(cell, x.lod), gates, acb, hb


class LSTMPGrad(_Options):

    def __call__(self, weight, proj_weight, bias, projection, cell, batch_gate,
                 batch_cell_pre_act, batch_hidden, h0, c0, dprojection, dcell):
        op = "lstmp_grad"
        # Paddle's grad op does not read Input: the sequences are Projection's.
        _, rows, _, st = self.layouts.sequences(op, projection, self.reverse, slot="Projection")
        g = float_input(value(batch_gate), op, "BatchGate")
        if g.ndim != 2 or g.shape[1] == 0 or g.shape[1] % 4:
            raise ValueError(f"{op}: BatchGate must be a float [rows, 4 * hidden], found "
                             f"{g.dtype} {list(g.shape)}")
        d, dtype, total = g.shape[1] // 4, g.dtype, st.total
        w, pw, b, p = self.weights(op, dtype, weight, proj_weight, bias, d)
        gf = operand(batch_gate, dtype, (rows, 4 * d), op, "BatchGate")
        rb = gather_rows(operand(projection, dtype, (rows, p), op, "Projection"), st.idx, total, p,
                         dtype).reshape(-1)
        cbf = gather_rows(operand(cell, dtype, (rows, d), op, "Cell"), st.idx, total, d,
                          dtype).reshape(-1)
        acbf = operand(batch_cell_pre_act, dtype, (rows, d), op, "BatchCellPreAct")
        hbf = operand(batch_hidden, dtype, (rows, d), op, "BatchHidden")
        h0r, c0r = self.states(op, dtype, h0, c0, st, d, p)
        dr, dcb = (None if v is None or value(v) is None else
                   gather_rows(operand(v, dtype, (rows, cols), op, slot), st.idx, total, cols,
                               dtype).reshape(-1)
                   for v, slot, cols in ((dprojection, "Projection@GRAD", p),
                                         (dcell, "Cell@GRAD", d)))
        dr = zeros((total * p,), dtype) if dr is None else dr
        m = max(st.n_seq, 1)
        dg = device_empty((total, 4 * d), dtype)
        pe = device_empty((total, 3 * d), dtype) if self.peep else dg
        dh, dc = device_empty((m * d,), dtype), device_empty((m * d,), dtype)
        dh0r = None if h0r is None else device_empty((m * p,), dtype)
        dgf = dg.reshape(-1)
        peep = b[4 * d:] if self.peep else b
        for t in range(st.steps - 1, -1, -1):
            s, n = st.first[t], st.alive[t]
            n_next = st.alive[t + 1] if t + 1 < st.steps else 0
            if self.aproj != IDENTITY or self.proj_clip > 0:
                launch(_projection_grad, n * p, rb, dr, s, p, n * p, self.aproj,
                       self.proj_clip)
            gemm(dr, pw, dh, n, d, p, trans_b=True, a_offset=s * p)
            pc, off, has_pc = self.cell_before(st, t, cbf, c0r, d)
            launch(_cells_grad, n * d, gf, cbf, acbf, pc, off, dh, dc,
                   dgf if dcb is None else dcb, peep, dgf, pe.reshape(-1), s, n_next, d,
                   n * d, self.ag, self.ac, self.acell, self.cell_clip, has_pc,
                   dcb is not None, self.peep)
            # the gates' gradient into r of the step before (its running prefix), or H0
            if t > 0:
                gemm(dgf, w, dr, n, p, 4 * d, trans_b=True, beta=1.0, a_offset=s * 4 * d,
                     c_offset=st.first[t - 1] * p)
            elif dh0r is not None:
                gemm(dgf, w, dh0r, n, p, 4 * d, trans_b=True, a_offset=s * 4 * d)
        dw, dpw = device_empty((p, 4 * d), dtype), device_empty((d, p), dtype)
        prev = prev_rows(rb, st, h0r, p, dtype)
        gemm(prev.reshape(-1), dgf, dw.reshape(-1), p, 4 * d, total, trans_a=True)
        gemm(hbf, dr, dpw.reshape(-1), d, p, total, trans_a=True)
        dx = scatter_rows(dgf, st.idx, device_empty((rows, 4 * d), dtype), total, 4 * d)
        db = device_empty((1, (7 if self.peep else 4) * d), dtype)
        dbf = db.reshape(-1)
        sum_batches(dg, dbf[:4 * d], (total,), (False,), 4 * d)
        if self.peep:
            sum_batches(pe, dbf[4 * d:], (total,), (False,), 3 * d)
        dh0 = None if h0r is None else unrank(dh0r, st, p, dtype)
        dc0 = None if c0r is None else unrank(dc, st, d, dtype)
        return Tensor(dx, projection.lod), dh0, dc0, dw, dpw, db


KERNELS = [("lstmp", LSTMP, DTYPES, "lod"), ("lstmp_grad", LSTMPGrad, DTYPES, "lod")]
