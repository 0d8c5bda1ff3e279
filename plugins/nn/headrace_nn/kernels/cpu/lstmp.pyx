# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""lstmp and lstmp_grad: the whole time loop in one kernel, without the GIL.

The sequences are ranked by length, longest first, and their rows gathered step-major (step t
holds one row per sequence longer than t, in rank order; ``_rnn.layout``), so each step is a
prefix of the one before. Per step: one GEMM r_{t-1} @ Weight over the running sequences, the
cells, then one GEMM h_t @ ProjWeight and the projection's activation and clip. The gradient
walks the steps back the same way (per step: the projection's clip and activation, one GEMM
into dh, the cells, one GEMM into dr_{t-1}); the two weight gradients are one GEMM each over
all steps after the loop. What the forward pass keeps for the gradient is Paddle's: the
activated gates (BatchGate), cell_activation(c) (BatchCellPreAct) and h (BatchHidden),
step-major, and the Projection and Cell outputs.

Paddle's kernel applies cell_activation to the projection whenever proj_activation is not
identity (it passes cell_act where proj_act is meant, forward and backward); programs from
Paddle compute that, so this kernel does too.
"""
cimport numpy as cnp
from libc.string cimport memcpy, memset
from scipy.linalg.cython_blas cimport dgemm, sgemm
from headrace.kernels.common cimport real
from headrace.kernels.fastmath cimport hr_f32_sigmoid, hr_f32_tanh
from ._common cimport act, dact

import numpy as np

from headrace.runtime.tensor import Tensor

from ._rnn import ACTIVATIONS, checked, layout

cnp.import_array()

DTYPES = ("float32", "float64")
cdef enum:
    IDENTITY = 3  # _rnn.ACTIVATIONS["identity"]


cdef inline void _gemm(bint ta, bint tb, int m, int n, int k, const real* a, int lda,
                       const real* b, int ldb, real beta, real* c, int ldc) noexcept nogil:
    """Row-major c[m, n] = op(a) @ op(b) + beta * c through BLAS (column-major BLAS computes
    c^T = op(b)^T op(a)^T). op(a) = a^T when ``ta`` (a stored [k, m]), op(b) = b^T when ``tb``
    (b stored [n, k])."""
    cdef char ca = b'T' if ta else b'N'
    cdef char cb = b'T' if tb else b'N'
    cdef real one = 1
    if m <= 0 or n <= 0:
        return
    if k <= 0:
        if beta == 0:
            _zero_rows(c, m, n, ldc)
        return
    if real is float:
        sgemm(&cb, &ca, &n, &m, &k, &one, <float*>b, &ldb, <float*>a, &lda, &beta, c, &ldc)
    else:
        dgemm(&cb, &ca, &n, &m, &k, &one, <double*>b, &ldb, <double*>a, &lda, &beta, c, &ldc)


cdef inline void _zero_rows(real* c, int m, int n, int ldc) noexcept nogil:
    cdef int r
    for r in range(m):
        memset(c + r * ldc, 0, n * sizeof(real))


cdef inline real _clip(real v, real bound) noexcept nogil:
    if v < -bound:
        return -bound
    if v > bound:
        return bound
    return v


cdef inline void _activate(int code, real* x, Py_ssize_t n) noexcept nogil:
    """Activation ``code`` over x[:n] in place; float32 sigmoid and tanh through the core's
    vectorized loops (a few float32 ulp), the rest element by element."""
    cdef Py_ssize_t k
    if code == IDENTITY or n <= 0:
        return
    if real is float:
        if code == 0:
            hr_f32_sigmoid(x, x, n)
            return
        if code == 1:
            hr_f32_tanh(x, x, n)
            return
    for k in range(n):
        x[k] = act(code, x[k])


cdef struct Acts:
    int gate, cand, cell, proj  # activation codes (_rnn.ACTIVATIONS); proj: Paddle's choice


cdef void _forward(real* gates, real* hb, real* cb, real* acb, real* rb, const real* h0r,
                   const real* c0r, const real* w, const real* pw, const real* bias,
                   const real* peep, const Py_ssize_t* alive, const Py_ssize_t* first,
                   Py_ssize_t steps, int d, int p, Acts a, real cell_clip,
                   real proj_clip) noexcept nogil:
    """gates: [rows, 4D] step-major input projections in, activated gates out; hb, cb, acb
    [rows, D] (h, c, act(c)) and rb [rows, P] (r) out. h0r/c0r: initial states in rank order
    (NULL: zeros); peep: the peephole weights (NULL: none)."""
    cdef Py_ssize_t t, s, n, r, j, k
    cdef int d4 = 4 * d
    cdef real *g
    cdef real *gr
    cdef real *cr
    cdef real *acr
    cdef real *hr_
    cdef const real *pc
    cdef const real *pcr
    cdef real c
    for t in range(steps):
        s, n = first[t], alive[t]
        g = gates + s * d4
        # The recurrent term of every gate: r_{t-1} @ Weight (H0 at the first step; none
        # without H0: r_0 = 0).
        if t > 0:
            _gemm(False, False, n, d4, p, rb + first[t - 1] * p, p, w, d4, 1, g, d4)
        elif h0r != NULL:
            _gemm(False, False, n, d4, p, h0r, p, w, d4, 1, g, d4)
        if t > 0:
            pc = cb + first[t - 1] * d
        else:
            pc = c0r
        # Row by row: the activations over each gate's contiguous columns at once (float32:
        # the core's vectorized sigmoid/tanh; the transcendentals are most of a cell's work).
        for r in range(n):
            gr = g + r * d4
            pcr = pc + r * d if pc != NULL else NULL
            for j in range(d4):
                gr[j] = gr[j] + bias[j]
            if peep != NULL and pcr != NULL:
                for j in range(d):
                    gr[d + j] = gr[d + j] + peep[j] * pcr[j]
                    gr[2 * d + j] = gr[2 * d + j] + peep[d + j] * pcr[j]
            _activate(a.cand, gr, d)
            _activate(a.gate, gr + d, 2 * d)  # i and f, side by side
            cr = cb + (s + r) * d
            for j in range(d):
                c = gr[j] * gr[d + j]
                if pcr != NULL:
                    c = c + pcr[j] * gr[2 * d + j]
                if cell_clip > 0:
                    c = _clip(c, cell_clip)
                cr[j] = c
                if peep != NULL:
                    gr[3 * d + j] = gr[3 * d + j] + peep[2 * d + j] * c  # the clipped c
            _activate(a.gate, gr + 3 * d, d)
            acr = acb + (s + r) * d
            memcpy(acr, cr, d * sizeof(real))
            _activate(a.cell, acr, d)
            hr_ = hb + (s + r) * d
            for j in range(d):
                hr_[j] = gr[3 * d + j] * acr[j]
        # r_t = clip(act(h_t @ ProjWeight))
        _gemm(False, False, n, p, d, hb + s * d, d, pw, p, 0, rb + s * p, p)
        _activate(a.proj, rb + s * p, n * p)
        if proj_clip > 0:
            for k in range(s * p, (s + n) * p):
                rb[k] = _clip(rb[k], proj_clip)


cdef void _backward(const real* gates, const real* cb, const real* acb, const real* rb,
                    const real* c0r, const real* w, const real* pw, const real* peep,
                    const real* dcb, real* dr, real* dg, real* dh, real* dc, real* dh0,
                    real* dpeep, const Py_ssize_t* alive, const Py_ssize_t* first,
                    Py_ssize_t steps, int d, int p, Acts a, real cell_clip,
                    real proj_clip) noexcept nogil:
    """dr: [rows, P] step-major, Projection's gradient in; out, the gradient of each r_t's
    pre-activation (for ProjWeight's gradient after the loop). dg [rows, 4D] out: the gates'
    pre-activation gradients. dh: [sequences, D] scratch. dc: [sequences, D] zeros in; out,
    C0's gradient in rank order. dh0 (NULL: not wanted): [sequences, P] out, H0's. dcb: Cell's
    gradient step-major (NULL: none). dpeep: [3D] zeros in, the peepholes' gradient out."""
    cdef Py_ssize_t t, s, n, r, j, k, q
    cdef int d4 = 4 * d
    cdef const real *g
    cdef const real *pc
    cdef real *e
    cdef real cand, i, f, o, c, cp, y, dhh, dgo, dcc, dgi, dgf
    for t in range(steps - 1, -1, -1):
        s, n = first[t], alive[t]
        # Back through r_t = clip(act(h_t @ ProjWeight)): Paddle's rule, a value at or
        # beyond the bound passes nothing; the derivative from the kept (clipped) output.
        if a.proj != IDENTITY or proj_clip > 0:
            for q in range(s * p, (s + n) * p):
                y = rb[q]
                if proj_clip > 0 and not (-proj_clip < y < proj_clip):
                    dr[q] = 0
                elif a.proj != IDENTITY:
                    dr[q] = dr[q] * dact(a.proj, y)
        _gemm(False, True, n, d, p, dr + s * p, p, pw, p, 0, dh, d)
        g = gates + s * d4
        e = dg + s * d4
        if t > 0:
            pc = cb + first[t - 1] * d
        else:
            pc = c0r
        for r in range(n):
            for j in range(d):
                k = r * d + j
                cand, i, f, o = g[r * d4 + j], g[r * d4 + d + j], g[r * d4 + 2 * d + j], \
                    g[r * d4 + 3 * d + j]
                c = cb[s * d + k]
                cp = pc[k] if pc != NULL else 0
                dhh = dh[k]
                dgo = dact(a.gate, o) * dhh * acb[s * d + k]
                # dc holds c's gradient from the step after; Cell's own is added (Paddle's
                # maker does not pass it). A clipped c passes nothing back.
                dcc = dc[k] + (dcb[s * d + k] if dcb != NULL else 0)
                if cell_clip > 0 and (c >= cell_clip or c <= -cell_clip):
                    dcc = 0
                else:
                    dcc = dcc + dact(a.cell, acb[s * d + k]) * dhh * o
                    if peep != NULL:
                        dcc = dcc + dgo * peep[2 * d + j]
                dgi = dact(a.gate, i) * dcc * cand
                dgf = dact(a.gate, f) * dcc * cp
                e[r * d4 + j] = dact(a.cand, cand) * dcc * i
                e[r * d4 + d + j], e[r * d4 + 2 * d + j], e[r * d4 + 3 * d + j] = dgi, dgf, dgo
                dcc = dcc * f
                if peep != NULL:
                    dcc = dcc + dgi * peep[j] + dgf * peep[d + j]
                    dpeep[j] += dgi * cp
                    dpeep[d + j] += dgf * cp
                    dpeep[2 * d + j] += dgo * c
                dc[k] = dcc
        # The gates' gradient into r_{t-1} (a prefix of the step before: the sequences that
        # go on), or into H0.
        if t > 0:
            _gemm(False, True, n, p, d4, e, d4, w, d4, 1, dr + first[t - 1] * p, p)
        elif dh0 != NULL:
            _gemm(False, True, n, p, d4, e, d4, w, d4, 0, dh0, p)


cdef void _previous_r(const real* rb, const real* h0r, real* out, const Py_ssize_t* alive,
                      const Py_ssize_t* first, Py_ssize_t steps, int p) noexcept nogil:
    """Per step-major row, r of the step before (H0 or zeros at the first step): the left
    operand of Weight's one gradient GEMM."""
    cdef Py_ssize_t t
    if steps == 0:
        return
    if h0r != NULL:
        memcpy(out, h0r, alive[0] * p * sizeof(real))
    else:
        memset(out, 0, alive[0] * p * sizeof(real))
    for t in range(1, steps):
        memcpy(out + first[t] * p, rb + first[t - 1] * p, alive[t] * p * sizeof(real))


cdef inline void* _ptr(cnp.ndarray a):
    return NULL if a is None else cnp.PyArray_DATA(a)


cdef class _Options:
    """The attributes both kernels read, and the checks of their operands."""
    cdef bint peep, reverse
    cdef Acts acts
    cdef double cell_clip, proj_clip

    def __init__(self, dict attrs, info=None):
        self.peep, self.reverse = attrs["use_peepholes"], attrs["is_reverse"]
        self.acts.gate = ACTIVATIONS[attrs["gate_activation"]]
        self.acts.cand = ACTIVATIONS[attrs["candidate_activation"]]
        self.acts.cell = ACTIVATIONS[attrs["cell_activation"]]
        # Paddle's kernel: cell_activation on the projection unless proj_activation is identity.
        self.acts.proj = IDENTITY if attrs["proj_activation"] == "identity" else self.acts.cell
        # Paddle's attributes are float32, cast to the kernel's type.
        self.cell_clip = float(np.float32(attrs["cell_clip"]))
        self.proj_clip = float(np.float32(attrs["proj_clip"]))

    def _weights(self, op, dtype, weight, proj_weight, bias, d):
        pw = checked(proj_weight, dtype, tuple(np.shape(getattr(proj_weight, "data",
                                                                proj_weight))), op, "ProjWeight")
        if pw.ndim != 2 or pw.shape[0] != d or pw.shape[1] == 0:
            raise ValueError(f"{op}: ProjWeight must be [hidden, proj_size] = [{d}, P > 0], "
                             f"found {list(pw.shape)}")
        p = pw.shape[1]
        w = checked(weight, dtype, (p, 4 * d), op, "Weight")
        b = checked(bias, dtype, (1, (7 if self.peep else 4) * d), op, "Bias").reshape(-1)
        return w, pw, b, p

    def _states(self, op, dtype, h0, c0, order, d, p):
        if h0 is not None and c0 is None:
            raise ValueError(f"{op}: C0 must be given with H0")
        return [None if v is None else
                np.ascontiguousarray(checked(v, dtype, (len(order), cols), op, slot)[order])
                for v, slot, cols in ((h0, "H0", p), (c0, "C0", d))]

    def _lod(self, op, x, slot):
        """(data, rows, layout) of the LoD operand that carries the sequences."""
        data = np.asarray(x.data)
        if data.dtype not in (np.float32, np.float64):
            raise TypeError(f"{op}: {slot} has dtype {data.dtype}, expected float32 or float64")
        if data.ndim != 2:
            raise ValueError(f"{op}: {slot} must be 2-D, found {list(data.shape)}")
        return data, data.shape[0], layout(x.lod, data.shape[0], self.reverse, op)


cdef class LSTMP(_Options):

    def __call__(self, x, h0, c0, weight, proj_weight, bias):
        op = "lstmp"
        data, rows, (order, alive, first, idx) = self._lod(op, x, "Input")
        if data.shape[1] == 0 or data.shape[1] % 4:
            raise ValueError(f"{op}: Input must be [rows, 4 * hidden], found {list(data.shape)}")
        d = data.shape[1] // 4
        dtype = data.dtype
        w, pw, b, p = self._weights(op, dtype, weight, proj_weight, bias, d)
        h0r, c0r = self._states(op, dtype, h0, c0, order, d, p)
        gates = np.ascontiguousarray(data[idx])
        hb, cb, acb = (np.empty((rows, d), dtype) for _ in range(3))
        rb = np.empty((rows, p), dtype)
        alive, first = alive.astype(np.intp), first.astype(np.intp)
        peep = np.ascontiguousarray(b[4 * d:]) if self.peep else None
        if dtype == np.float32:
            _run_forward[float](gates, hb, cb, acb, rb, h0r, c0r, w, pw, b, peep, alive, first,
                                d, p, self.acts, self.cell_clip, self.proj_clip)
        else:
            _run_forward[double](gates, hb, cb, acb, rb, h0r, c0r, w, pw, b, peep, alive,
                                 first, d, p, self.acts, self.cell_clip, self.proj_clip)
        proj = np.empty((rows, p), dtype)
        cell = np.empty((rows, d), dtype)
        proj[idx] = rb
        cell[idx] = cb
        return Tensor(proj, x.lod), Tensor(cell, x.lod), gates, acb, hb


cdef _run_forward(cnp.ndarray gates, cnp.ndarray hb, cnp.ndarray cb, cnp.ndarray acb,
                  cnp.ndarray rb, cnp.ndarray h0r, cnp.ndarray c0r, cnp.ndarray w,
                  cnp.ndarray pw, cnp.ndarray b, cnp.ndarray peep, Py_ssize_t[::1] alive,
                  Py_ssize_t[::1] first, int d, int p, Acts acts, real cell_clip,
                  real proj_clip):
    cdef Py_ssize_t steps = alive.shape[0]
    cdef const Py_ssize_t* pa = &alive[0] if steps else NULL
    cdef const Py_ssize_t* pf = &first[0] if steps else NULL
    cdef real* g = <real*>cnp.PyArray_DATA(gates)
    cdef real* h = <real*>cnp.PyArray_DATA(hb)
    cdef real* c = <real*>cnp.PyArray_DATA(cb)
    cdef real* ac = <real*>cnp.PyArray_DATA(acb)
    cdef real* r = <real*>cnp.PyArray_DATA(rb)
    cdef const real* ph0 = <real*>_ptr(h0r)
    cdef const real* pc0 = <real*>_ptr(c0r)
    cdef const real* pw_ = <const real*>cnp.PyArray_DATA(w)
    cdef const real* ppw = <const real*>cnp.PyArray_DATA(pw)
    cdef const real* pb = <const real*>cnp.PyArray_DATA(b)
    cdef const real* pp = <real*>_ptr(peep)
    with nogil:
        _forward(g, h, c, ac, r, ph0, pc0, pw_, ppw, pb, pp, pa, pf, steps, d, p, acts,
                 cell_clip, proj_clip)


cdef class LSTMPGrad(_Options):

    def __call__(self, weight, proj_weight, bias, projection, cell, batch_gate,
                 batch_cell_pre_act, batch_hidden, h0, c0, dprojection, dcell):
        op = "lstmp_grad"
        # Paddle's grad op does not read Input: the sequences are Projection's.
        proj, rows, (order, alive, first, idx) = self._lod(op, projection, "Projection")
        g = np.asarray(getattr(batch_gate, "data", batch_gate))
        dtype = g.dtype
        if dtype not in (np.float32, np.float64) or g.ndim != 2 or g.shape[1] == 0 or \
                g.shape[1] % 4:
            raise ValueError(f"{op}: BatchGate must be a float [rows, 4 * hidden], found "
                             f"{g.dtype} {list(g.shape)}")
        d = g.shape[1] // 4
        w, pw, b, p = self._weights(op, dtype, weight, proj_weight, bias, d)
        gates = checked(batch_gate, dtype, (rows, 4 * d), op, "BatchGate")
        rb = np.ascontiguousarray(checked(projection, dtype, (rows, p), op, "Projection")[idx])
        cb = np.ascontiguousarray(checked(cell, dtype, (rows, d), op, "Cell")[idx])
        acb = checked(batch_cell_pre_act, dtype, (rows, d), op, "BatchCellPreAct")
        hb = checked(batch_hidden, dtype, (rows, d), op, "BatchHidden")
        h0r, c0r = self._states(op, dtype, h0, c0, order, d, p)
        dr, dcb = (None if v is None or v.data is None else
                   np.ascontiguousarray(checked(v, dtype, (rows, cols), op, slot)[idx])
                   for v, slot, cols in ((dprojection, "Projection@GRAD", p),
                                         (dcell, "Cell@GRAD", d)))
        if dr is None:
            dr = np.zeros((rows, p), dtype)
        n_seq = len(order)
        dg = np.empty((rows, 4 * d), dtype)
        dh = np.empty((max(n_seq, 1), d), dtype)
        dc = np.zeros((max(n_seq, 1), d), dtype)
        dh0r = np.zeros((max(n_seq, 1), p), dtype) if h0 is not None else None
        dpeep = np.zeros(3 * d, dtype)
        prev = np.empty((rows, p), dtype)
        dw = np.empty((p, 4 * d), dtype)
        dpw = np.empty((d, p), dtype)
        alive, first = alive.astype(np.intp), first.astype(np.intp)
        peep = np.ascontiguousarray(b[4 * d:]) if self.peep else None
        if dtype == np.float32:
            _run_backward[float](gates, cb, acb, hb, rb, h0r, c0r, w, pw, peep, dcb, dr, dg, dh,
                                 dc, dh0r, dpeep, prev, dw, dpw, alive, first, d, p, self.acts,
                                 self.cell_clip, self.proj_clip)
        else:
            _run_backward[double](gates, cb, acb, hb, rb, h0r, c0r, w, pw, peep, dcb, dr, dg, dh,
                                  dc, dh0r, dpeep, prev, dw, dpw, alive, first, d, p, self.acts,
                                  self.cell_clip, self.proj_clip)
        dx = np.empty((rows, 4 * d), dtype)
        dx[idx] = dg
        db = dg.sum(axis=0)
        if self.peep:
            db = np.concatenate([db, dpeep])
        dh0 = dc0 = None
        if h0 is not None:
            dh0 = np.zeros((n_seq, p), dtype)
            dh0[order] = dh0r[:n_seq]
        if c0 is not None:
            dc0 = np.zeros((n_seq, d), dtype)
            dc0[order] = dc[:n_seq]
        return Tensor(dx, projection.lod), dh0, dc0, dw, dpw, db.reshape(1, -1)


cdef _run_backward(cnp.ndarray gates, cnp.ndarray cb, cnp.ndarray acb, cnp.ndarray hb,
                   cnp.ndarray rb, cnp.ndarray h0r, cnp.ndarray c0r, cnp.ndarray w,
                   cnp.ndarray pw, cnp.ndarray peep, cnp.ndarray dcb, cnp.ndarray dr,
                   cnp.ndarray dg, cnp.ndarray dh, cnp.ndarray dc, cnp.ndarray dh0r,
                   cnp.ndarray dpeep, cnp.ndarray prev, cnp.ndarray dw, cnp.ndarray dpw,
                   Py_ssize_t[::1] alive, Py_ssize_t[::1] first, int d, int p, Acts acts,
                   real cell_clip, real proj_clip):
    cdef Py_ssize_t steps = alive.shape[0]
    cdef int rows = gates.shape[0]
    cdef const Py_ssize_t* pa = &alive[0] if steps else NULL
    cdef const Py_ssize_t* pf = &first[0] if steps else NULL
    cdef const real* pg = <const real*>cnp.PyArray_DATA(gates)
    cdef const real* pcb = <const real*>cnp.PyArray_DATA(cb)
    cdef const real* pacb = <const real*>cnp.PyArray_DATA(acb)
    cdef const real* phb = <const real*>cnp.PyArray_DATA(hb)
    cdef const real* prb = <const real*>cnp.PyArray_DATA(rb)
    cdef const real* ph0 = <real*>_ptr(h0r)
    cdef const real* pc0 = <real*>_ptr(c0r)
    cdef const real* pw_ = <const real*>cnp.PyArray_DATA(w)
    cdef const real* ppw = <const real*>cnp.PyArray_DATA(pw)
    cdef const real* pp = <real*>_ptr(peep)
    cdef const real* pdcb = <real*>_ptr(dcb)
    cdef real* pdr = <real*>cnp.PyArray_DATA(dr)
    cdef real* pdg = <real*>cnp.PyArray_DATA(dg)
    cdef real* pdh = <real*>cnp.PyArray_DATA(dh)
    cdef real* pdc = <real*>cnp.PyArray_DATA(dc)
    cdef real* pdh0 = <real*>_ptr(dh0r)
    cdef real* pdpeep = <real*>cnp.PyArray_DATA(dpeep)
    cdef real* pprev = <real*>cnp.PyArray_DATA(prev)
    cdef real* pdw = <real*>cnp.PyArray_DATA(dw)
    cdef real* pdpw = <real*>cnp.PyArray_DATA(dpw)
    with nogil:
        _backward(pg, pcb, pacb, prb, pc0, pw_, ppw, pp, pdcb, pdr, pdg, pdh, pdc, pdh0,
                  pdpeep, pa, pf, steps, d, p, acts, cell_clip, proj_clip)
        # The weight gradients, one GEMM each over all steps: Weight's from r_{t-1} and the
        # gates' gradients, ProjWeight's from h_t and r_t's.
        _previous_r(prb, ph0, pprev, pa, pf, steps, p)
        _gemm(True, False, p, 4 * d, rows, pprev, p, pdg, 4 * d, 0, pdw, 4 * d)
        _gemm(True, False, d, p, rows, phb, d, pdr, p, 0, pdpw, p)


KERNELS = [("lstmp", LSTMP, DTYPES, "lod"), ("lstmp_grad", LSTMPGrad, DTYPES, "lod")]
