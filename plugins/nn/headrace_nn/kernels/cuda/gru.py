"""gru and gru_grad on CUDA, laid out as the CPU kernel (kernels/cpu/gru.pyx) and lstm's CUDA
kernel: sequences ranked, rows step-major (_rnn.py), Input's rows gathered with the bias by one
kernel. A step is two GEMMs over the step's rows on the shared tiled GEMM (the update/reset
gates from h', then the candidate from r * h', reading column blocks of the [rows, 3D] gates
in place through leading dimensions and offsets), each followed by an elementwise kernel (the
reset gate must be activated before the candidate's product, so a step cannot be one kernel);
the gate math in float64, stored in Input's dtype.

The gradient runs the steps back: an elementwise kernel for the update and candidate gates'
gradients and dh's direct term, the candidate's product back to r and h' (a GEMM, then an
elementwise kernel), and one GEMM for the rest of dh'. The weight gradient is two GEMMs over all
rows after the loop (W_ur's from h' gathered step-major, W_c's from BatchResetHiddenPrev), the
bias's column sums, Input@GRAD a scatter back to Input's rows.
"""
from numba import cuda

from headrace.kernels.cuda_gemm import gemm, sum_batches
from headrace.kernels.cuda_launch import device_empty
from headrace.runtime import Tensor

from ._rnn import (ACTIVATIONS, Layouts, gather_rows, launch, operand, prev_rows, scatter_rows,
                   unrank, value)
from .gru_unit import _act, _deriv

DTYPES = ("float32", "float64")


@cuda.jit
def _gates(g, hp, hp_off, rb, s, D, total, ag, has_hp):
    """Activate u and r of the step's rows in place; rb = r * h' (zeros without h')."""
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        row = s + r
        base = row * 3 * D
        g[base + j] = _act(ag, float(g[base + j]))
        reset = _act(ag, float(g[base + D + j]))
        g[base + D + j] = reset
        rb[row * D + j] = reset * hp[hp_off + r * D + j] if has_hp else 0.0


@cuda.jit
def _hidden(g, hp, hp_off, hb, hidden, idx, s, D, total, ac, origin, has_hp):
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        row = s + r
        base = row * 3 * D
        c = _act(ac, float(g[base + 2 * D + j]))
        g[base + 2 * D + j] = c
        u = float(g[base + j])
        h = float(hp[hp_off + r * D + j]) if has_hp else 0.0
        # origin: h = u h' + (1 - u) c; else h = (1 - u) h' + u c (the CPU's forms)
        h = c + u * (h - c) if origin else h + u * (c - h)
        hb[row * D + j] = h
        hidden[idx[row] * D + j] = h


@cuda.jit
def _grad_uc(g, hp, hp_off, dhc, dhid, idx, dg, dhp, s, n_next, D, total, ag, ac, origin,
             has_hp, has_dhid):
    """The u and c gates' gradients of the step's rows (r's zero until _grad_r) and dh's
    direct term into dhp; dhc holds dh from the step after, for its rows."""
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        row = s + r
        base = row * 3 * D
        dh = float(dhc[r * D + j]) if r < n_next else 0.0
        if has_dhid:
            dh += dhid[idx[row] * D + j]
        u = float(g[base + j])
        c = float(g[base + 2 * D + j])
        h = float(hp[hp_off + r * D + j]) if has_hp else 0.0
        if origin:
            du = dh * (h - c)
            dcand = dh * (1 - u)
            dhp[r * D + j] = dh * u
        else:
            du = dh * (c - h)
            dcand = dh * u
            dhp[r * D + j] = dh * (1 - u)
        dg[base + j] = du * _deriv(ag, u)
        dg[base + D + j] = 0
        dg[base + 2 * D + j] = dcand * _deriv(ac, c)


@cuda.jit
def _grad_r(g, hp, hp_off, drh, dg, dhp, s, D, total, ag):
    """drh = d(r * h'): r's gradient, and dhp += drh * r."""
    k = cuda.grid(1)
    if k < total:
        r = k // D
        j = k - r * D
        base = (s + r) * 3 * D
        reset = float(g[base + D + j])
        dg[base + D + j] = drh[k] * hp[hp_off + k] * _deriv(ag, reset)
        dhp[k] += drh[k] * reset


class _Options:
    def __init__(self, attrs, info=None):
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["activation"]]
        self.reverse, self.origin = bool(attrs["is_reverse"]), bool(attrs["origin_mode"])
        self.info = info
        self.layouts = Layouts()

    def operands(self, op, x, h0, weight, bias):
        data, rows, d, st = self.layouts.sequences(op, x, self.reverse, 3)
        dtype = data.dtype
        w = operand(weight, dtype, (d, 3 * d), op, "Weight")
        b = None if bias is None else operand(bias, dtype, (1, 3 * d), op, "Bias")
        h0r = None if h0 is None else gather_rows(operand(h0, dtype, (st.n_seq, d), op, "H0"),
                                                  st.order, st.n_seq, d, dtype).reshape(-1)
        return data.reshape(-1), rows, d, dtype, st, w, b, h0r

    def previous(self, st, t, hbf, h0r, d):
        """(h' buffer, its offset, whether there is one) at step ``t``."""
        if t > 0:
            return hbf, st.first[t - 1] * d, True
        return (hbf if h0r is None else h0r), 0, h0r is not None


class GRU(_Options):

    def __call__(self, x, h0, weight, bias):
        xf, rows, d, dtype, st, w, b, h0r = self.operands("gru", x, h0, weight, bias)
        total = st.total
        gates = gather_rows(xf, st.idx, total, 3 * d, dtype, bias=b)
        rb, hb = device_empty((total, d), dtype), device_empty((total, d), dtype)
        hidden = device_empty((rows, d), dtype)
        gf, rbf, hbf = gates.reshape(-1), rb.reshape(-1), hb.reshape(-1)
        for t in range(st.steps):
            s, n = st.first[t], st.alive[t]
            hp, off, has = self.previous(st, t, hbf, h0r, d)
            if has:   # [u, r] += h' W_ur
                gemm(hp, w, gf, n, 2 * d, d, beta=1.0, ldb=2 * d, ldc=3 * d, a_offset=off,
                     c_offset=s * 3 * d)
            launch(_gates, n * d, gf, hp, off, rbf, s, d, n * d, self.ag, has)
            if has:   # c += (r * h') W_c
                gemm(rbf, w, gf, n, d, d, beta=1.0, ldb=d, ldc=3 * d, a_offset=s * d,
                     b_offset=2 * d * d, c_offset=s * 3 * d + 2 * d)
            launch(_hidden, n * d, gf, hp, off, hbf, hidden.reshape(-1), st.idx, s, d, n * d,
                   self.ac, self.origin, has)
        return gates, rb, hb, Tensor(hidden, x.lod)


class GRUGrad(_Options):

    def __call__(self, x, h0, weight, bias, batch_gate, batch_reset, batch_hidden, hidden,
                 dhidden):
        op = "gru_grad"
        xf, rows, d, dtype, st, w, b, h0r = self.operands(op, x, h0, weight, bias)
        total = st.total
        gf = operand(batch_gate, dtype, (total, 3 * d), op, "BatchGate")
        rbf = operand(batch_reset, dtype, (total, d), op, "BatchResetHiddenPrev")
        hbf = operand(batch_hidden, dtype, (total, d), op, "BatchHidden")
        dhid = None if dhidden is None or value(dhidden) is None else \
            operand(dhidden, dtype, (rows, d), op, "Hidden@GRAD")
        m = max(st.n_seq, 1) * d
        dg = device_empty((total, 3 * d), dtype)
        dgf = dg.reshape(-1)
        dhc, dhp, drh = (device_empty((m,), dtype) for _ in range(3))
        for t in range(st.steps - 1, -1, -1):
            s, n = st.first[t], st.alive[t]
            n_next = st.alive[t + 1] if t + 1 < st.steps else 0
            hp, off, has = self.previous(st, t, hbf, h0r, d)
            launch(_grad_uc, n * d, gf, hp, off, dhc, dgf if dhid is None else dhid, st.idx,
                   dgf, dhp, s, n_next, d, n * d, self.ag, self.ac, self.origin, has,
                   dhid is not None)
            if has:
                # the candidate's product (r * h') W_c back to r and h'
                gemm(dgf, w, drh, n, d, d, trans_b=True, lda=3 * d, ldb=d,
                     a_offset=s * 3 * d + 2 * d, b_offset=2 * d * d)
                launch(_grad_r, n * d, gf, hp, off, drh, dgf, dhp, s, d, n * d, self.ag)
                # dh' += [du, dr] W_ur^T
                gemm(dgf, w, dhp, n, d, 2 * d, trans_b=True, beta=1.0, lda=3 * d,
                     ldb=2 * d, a_offset=s * 3 * d)
            dhc, dhp = dhp, dhc
        dx = scatter_rows(dgf, st.idx, device_empty((rows, 3 * d), dtype), total, 3 * d)
        dw = device_empty((d, 3 * d), dtype)
        dwf = dw.reshape(-1)
        prev = prev_rows(hbf, st, h0r, d, dtype)
        gemm(prev.reshape(-1), dgf, dwf, d, 2 * d, total, trans_a=True, ldb=3 * d,
             ldc=2 * d)
        gemm(rbf, dgf, dwf, d, d, total, trans_a=True, ldb=3 * d, ldc=d, b_offset=2 * d,
             c_offset=2 * d * d)
        db = None
        if b is not None:
            db = device_empty((1, 3 * d), dtype)
            sum_batches(dg, db, (total,), (False,), 3 * d)
        dh0 = None if h0r is None else unrank(dhc, st, d, dtype)
        return Tensor(dx, x.lod), dh0, dw, db


KERNELS = [("gru", GRU, DTYPES, "lod"), ("gru_grad", GRUGrad, DTYPES, "lod")]
