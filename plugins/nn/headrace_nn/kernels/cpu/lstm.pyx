# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""lstm and lstm_grad: the whole time loop in one kernel, in C without the GIL.

The sequences are ranked by length, longest first, and each step is the prefix of the ranking
still running, so a step is one recurrent GEMM over a contiguous block of the step-major
BatchGate rows, then the cells. For float32 and the default activations (sigmoid gates, tanh
candidate and cell) the cells are one vectorized pass per step (_rnn_gemm.h): Input's rows and
the bias added to the product as it activates them, h and c straight to their Input-order rows
of Hidden and Cell and h to a small rank-order buffer the next step's product reads; other
activations and float64 gather Input's rows with the bias first, the product accumulating onto
them, then activate row by row. The step-major activated gates (BatchGate) and cells
(BatchCellPreAct) are what the forward pass keeps for the gradient. float32's products against
the weight run on the core's packed AVX-512 GEMM (packed_gemm.h), the weight packed once per
call (BLAS repacks it in every call); float64's, and float32's on a CPU without AVX-512, go
through BLAS.

The gradient walks the steps back the same way: the step's gate gradients into a rank-order
buffer (for the default float32 cells in the same fused pass that adds the step's output
gradients, writes Input@GRAD's rows and sums the bias gradient), then one GEMM for dh of the
step before. The weight gradient is then one GEMM over all rows at once, from Hidden and
Input@GRAD as they lie: in Input's order the step before a row is the row before it (after
it, reversed), so Hidden[:-1]^T dX[1:] is every step's product but the pairs that straddle two
sequences; a small GEMM takes those out and adds H0's.
"""
cimport numpy as cnp
from libc.string cimport memcpy, memset
from headrace.kernels.common cimport real
from ._common cimport act_rows, dact, gemm, mm
from ._rnn_gemm cimport (hr_lstm_cells, hr_lstm_cells_grad, hr_rnn_gemm, hr_rnn_gemm_b,
                         hr_rnn_gemm_ok, hr_rnn_pack, hr_rnn_packed_size)

import numpy as np

from headrace.runtime.tensor import Tensor

from ._rnn import ACTIVATIONS, checked as _checked, layout, reused as _reused

cnp.import_array()

DTYPES = ("float32", "float64")
# float32's products against the weight through _rnn_gemm.h's packed AVX-512 GEMM, else BLAS.
cdef bint PACKED = hr_rnn_gemm_ok()
# The gradient's rank-order gate-gradient rows are this many values longer than 4 * hidden.
cdef int E_PAD = 16


def use_packed_gemm(on=None):
    """Whether float32 runs on the packed AVX-512 GEMM (only where the CPU has AVX-512);
    ``on=False`` puts this module's kernels on BLAS (tests of that path, comparisons)."""
    global PACKED
    if on is not None:
        PACKED = bool(on) and hr_rnn_gemm_ok()
    return PACKED


cdef _packed(dict spare, w, bint trans, int k, int n):
    """``w`` ([k, n], or [n, k] if ``trans``) packed for hr_rnn_gemm, or None (float64, or
    no AVX-512): the kernels then call BLAS."""
    if not PACKED or w.dtype != np.float32 or k == 0 or n == 0:
        return None
    out = _reused(spare, "packed", (hr_rnn_packed_size(k, n),), np.float32)
    hr_rnn_pack(<float*>cnp.PyArray_DATA(w), w.strides[0] // 4, trans, k, n,
                <float*>cnp.PyArray_DATA(out))
    return out


cdef inline void _product(int m, int n, int k, const real* a, const real* b, int ldb,
                          const real* bp, real* c, bint accumulate) noexcept nogil:
    """c[m, n] = a[m, k] b (+ c): b [k, n] row-major (``ldb``) or packed (``bp``)."""
    if real is float:
        if bp != NULL:
            hr_rnn_gemm(m, n, k, a, k, 1, bp, c, n, accumulate)
            return
    gemm(False, False, m, n, k, a, k, b, ldb, 1 if accumulate else 0, c, n)


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
    return (np.ascontiguousarray(data), rows, d, order, alive, first,
            np.ascontiguousarray(idx, np.int64), w, b, states[0], states[1])


cdef void _forward(const real* x, const cnp.int64_t* idx, const real* bias, const real* peep,
                   const real* w, const real* wp, const real* h0, const real* c0, real* gates, real* cb,
                   real* hidden, real* cell, real* hbuf, Py_ssize_t hstride,
                   const cnp.int64_t* alive, const cnp.int64_t* first, Py_ssize_t steps,
                   int d, int ag, int ac, int ah) noexcept nogil:
    """``hbuf``: two [sequences, d] blocks (``hstride`` apart), this step's h and the last's;
    ``c0``/``h0``: rank order, or NULL (zeros); ``peep``: {W_ic, W_fc, W_oc} or NULL."""
    cdef Py_ssize_t t, r, j, s, n, row
    cdef int d2 = 2 * d, d3 = 3 * d, d4 = 4 * d
    cdef const real* ph
    cdef const real* pc
    cdef const real* src
    cdef real* g
    cdef real* c
    cdef real* h
    # sigmoid gates, tanh candidate and cell in float32: the product first, then one pass
    # over the cells (_rnn_gemm.h) that adds Input's rows and the bias as it activates them.
    cdef bint fast = real is float and ag == 0 and ac == 1 and ah == 1
    for t in range(steps):
        s, n = first[t], alive[t]
        ph = h0 if t == 0 else hbuf + ((t - 1) % 2) * hstride
        pc = c0 if t == 0 else cb + first[t - 1] * d
        if real is float and fast:
            if ph != NULL:
                _product(<int>n, d4, d, ph, w, d4, wp, gates + s * d4, False)
            hr_lstm_cells(n, d, x, idx + s, bias, peep, ph != NULL, pc, gates + s * d4,
                          cb + s * d, hbuf + (t % 2) * hstride, hidden, cell)
            continue
        # Input's rows of the step with the bias, then + h' W: the block stays in cache.
        for r in range(n):
            src = x + idx[s + r] * d4
            g = gates + (s + r) * d4
            for j in range(d4):
                g[j] = src[j] + bias[j]
        if ph != NULL:
            _product(<int>n, d4, d, ph, w, d4, wp, gates + s * d4, True)
        for r in range(n):
            g = gates + (s + r) * d4   # [candidate, input, forget, output]
            c = cb + (s + r) * d
            h = hbuf + (t % 2) * hstride + r * d
            if peep != NULL and pc != NULL:
                for j in range(d):
                    g[d + j] += peep[j] * pc[r * d + j]
                    g[d2 + j] += peep[d + j] * pc[r * d + j]
            act_rows(ac, g, d)
            act_rows(ag, g + d, d2 if peep != NULL else d3)
            if pc != NULL:
                for j in range(d):
                    c[j] = g[d + j] * g[j] + g[d2 + j] * pc[r * d + j]
            else:
                for j in range(d):
                    c[j] = g[d + j] * g[j]
            if peep != NULL:
                for j in range(d):
                    g[d3 + j] += peep[d2 + j] * c[j]
                act_rows(ag, g + d3, d)
            memcpy(h, c, d * sizeof(real))
            act_rows(ah, h, d)
            for j in range(d):
                h[j] *= g[d3 + j]
            row = idx[s + r]
            memcpy(hidden + row * d, h, d * sizeof(real))
            memcpy(cell + row * d, c, d * sizeof(real))


cdef void _cell_grads(Py_ssize_t n, int d, const real* gates, const real* cb, const real* ahc,
                      const real* pc, const real* dh, real* dc, real* e, int lde,
                      const real* peep, real* dpeep, int ag, int ac, int ah) noexcept nogil:
    """One step's gate gradients (into ``e``) and the cell gradient of the step before (into
    ``dc``), any activations: hr_lstm_cells_grad's arithmetic with the derivatives by code."""
    cdef Py_ssize_t r, j
    cdef int d2 = 2 * d, d3 = 3 * d, d4 = 4 * d
    cdef const real* g
    cdef const real* c
    cdef const real* a
    cdef real* er
    cdef const real* dhr
    cdef real* dcr
    cdef real cand, i, f, o, cp, dgo, dgi, dgf, dcc, dhh
    for r in range(n):
        g, c, a = gates + r * d4, cb + r * d, ahc + r * d
        er, dhr, dcr = e + r * lde, dh + r * d, dc + r * d
        if peep == NULL:
            for j in range(d):
                cand, i, f, o = g[j], g[d + j], g[d2 + j], g[d3 + j]
                dhh, cp = dhr[j], pc[r * d + j]
                dgo = dhh * a[j] * dact(ag, o)
                dcc = dcr[j] + dhh * o * dact(ah, a[j])
                dgi = dcc * cand * dact(ag, i)
                dgf = dcc * cp * dact(ag, f)
                er[j] = dcc * i * dact(ac, cand)
                er[d + j], er[d2 + j], er[d3 + j] = dgi, dgf, dgo
                dcr[j] = dcc * f
        else:
            for j in range(d):
                cand, i, f, o = g[j], g[d + j], g[d2 + j], g[d3 + j]
                dhh, cp = dhr[j], pc[r * d + j]
                dgo = dhh * a[j] * dact(ag, o)
                dcc = dcr[j] + dhh * o * dact(ah, a[j]) + dgo * peep[d2 + j]
                dgi = dcc * cand * dact(ag, i)
                dgf = dcc * cp * dact(ag, f)
                er[j] = dcc * i * dact(ac, cand)
                er[d + j], er[d2 + j], er[d3 + j] = dgi, dgf, dgo
                dcr[j] = dcc * f + dgi * peep[j] + dgf * peep[d + j]
                dpeep[j] += dgi * cp
                dpeep[d + j] += dgf * cp
                dpeep[d2 + j] += dgo * c[j]


cdef void _backward(const real* gates, const real* cb, const real* dhid, const real* dcell,
                    const cnp.int64_t* idx, const real* w, const real* wtp, const real* peep,
                    const real* c0, bint want_dh0, real* dx, real* e, int lde, real* dh,
                    real* dc, real* ahc, real* db, real* dpeep, const cnp.int64_t* alive,
                    const cnp.int64_t* first, Py_ssize_t steps, int d, int ag, int ac,
                    int ah) noexcept nogil:
    """Back through the steps: ``dh``/``dc`` (rank order) carry the gradients of the step
    after into the one before; ``e`` (row stride ``lde``) holds one step's gate gradients;
    ``c0``: rank order, or zeros. Writes every row of ``dx`` and sums into ``db`` and
    ``dpeep``."""
    cdef Py_ssize_t t, r, j, s, n, row, prev_n
    cdef int d4 = 4 * d
    cdef const real* pc
    cdef real* er
    # sigmoid gates, tanh candidate and cell in float32: the step's cells in one pass
    # (_rnn_gemm.h) that also gathers this step's output gradients, writes Input@GRAD's rows
    # and sums the bias gradient.
    cdef bint fast = real is float and ag == 0 and ac == 1 and ah == 1
    for t in range(steps - 1, -1, -1):
        s, n = first[t], alive[t]
        pc = c0 if t == 0 else cb + first[t - 1] * d
        if real is float and fast:
            hr_lstm_cells_grad(n, d, gates + s * d4, cb + s * d, pc, idx + s, dhid, dcell, dh,
                               dc, e, lde, dx, db, peep, dpeep)
        else:
            memcpy(ahc, cb + s * d, n * d * sizeof(real))
            act_rows(ah, ahc, n * d)
            # The gradients from this step's own outputs join those from the step after.
            for r in range(n):
                row = idx[s + r]
                if dhid != NULL:
                    for j in range(d):
                        dh[r * d + j] += dhid[row * d + j]
                if dcell != NULL:
                    for j in range(d):
                        dc[r * d + j] += dcell[row * d + j]
            _cell_grads(n, d, gates + s * d4, cb + s * d, ahc, pc, dh, dc, e, lde, peep, dpeep,
                        ag, ac, ah)
            for r in range(n):
                er = e + r * lde
                for j in range(d4):
                    db[j] += er[j]
                memcpy(dx + idx[s + r] * d4, er, d4 * sizeof(real))
        if t > 0 or want_dh0:
            if real is float and wtp != NULL:   # W^T packed
                hr_rnn_gemm(<int>n, d, d4, e, lde, 1, wtp, dh, d, 0)
            else:
                gemm(False, True, <int>n, d, d4, e, lde, w, d4, 0, dh, d)
        # Sequences that end at the step before start from zero gradients.
        prev_n = alive[t - 1] if t > 0 else n
        if prev_n > n:
            memset(dh + n * d, 0, (prev_n - n) * d * sizeof(real))
            memset(dc + n * d, 0, (prev_n - n) * d * sizeof(real))


cdef inline void* _ptr(a):
    return NULL if a is None else cnp.PyArray_DATA(<cnp.ndarray>a)


cdef class _Options:
    """The attributes both kernels read, and the arrays a kernel may hand out again."""
    cdef bint peep, reverse
    cdef int ag, ac, ah
    cdef dict spare

    def __init__(self, dict attrs, info=None):
        self.spare = {}
        self.peep, self.reverse = attrs["use_peepholes"], attrs["is_reverse"]
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["candidate_activation"]]
        self.ah = ACTIVATIONS[attrs["cell_activation"]]


cdef class LSTM(_Options):

    def __call__(self, x, h0, c0, weight, bias):
        data, rows, d, order, alive, first, idx, w, b, h0r, c0r = _operands(
            "lstm", x, h0, c0, weight, bias, self.peep, self.reverse)
        dtype, n_seq, total = data.dtype, len(order), len(idx)
        gates = _reused(self.spare, "gates", (total, 4 * d), dtype)
        cb = _reused(self.spare, "cb", (total, d), dtype)
        hidden = _reused(self.spare, "hidden", (rows, d), dtype)
        cell = _reused(self.spare, "cell", (rows, d), dtype)
        hbuf = _reused(self.spare, "hbuf", (2, max(n_seq, 1), d), dtype)
        peep = b[4 * d:] if self.peep else None
        wp = (_packed(self.spare, w, False, d, 4 * d) if len(alive) > 1 or h0r is not None
              else None)
        cdef void* args[12]
        cdef cnp.int64_t* pa = <cnp.int64_t*>_ptr(alive)
        cdef cnp.int64_t* pf = <cnp.int64_t*>_ptr(first)
        cdef cnp.int64_t* pi = <cnp.int64_t*>_ptr(idx)
        cdef Py_ssize_t steps = len(alive), hstride = max(n_seq, 1) * d
        cdef int dd = d
        for k, v in enumerate((data, b, peep, w, wp, h0r, c0r, gates, cb, hidden, cell, hbuf)):
            args[k] = _ptr(v)
        if total == 0:
            pass
        elif dtype == np.float32:
            with nogil:
                _forward[float](<float*>args[0], pi, <float*>args[1], <float*>args[2],
                                <float*>args[3], <float*>args[4], <float*>args[5],
                                <float*>args[6], <float*>args[7], <float*>args[8],
                                <float*>args[9], <float*>args[10], <float*>args[11], hstride,
                                pa, pf, steps, dd, self.ag, self.ac, self.ah)
        else:
            with nogil:
                _forward[double](<double*>args[0], pi, <double*>args[1], <double*>args[2],
                                 <double*>args[3], NULL, <double*>args[5], <double*>args[6],
                                 <double*>args[7], <double*>args[8], <double*>args[9],
                                 <double*>args[10], <double*>args[11], hstride, pa, pf, steps,
                                 dd, self.ag, self.ac, self.ah)
        return Tensor(hidden, x.lod), Tensor(cell, x.lod), gates, cb


cdef _transposed_product(cnp.ndarray a, cnp.ndarray b, cnp.ndarray c, bint accumulate):
    """c = a^T b (+ c) for C-contiguous rows: float32 through the AVX-512 GEMM (b packed a
    block at a time as it goes, a^T read in place), else BLAS."""
    cdef int k = a.shape[0], m = a.shape[1], n = b.shape[1]
    cdef Py_ssize_t lda = a.strides[0] // a.itemsize, ldb = b.strides[0] // b.itemsize
    if not PACKED or a.dtype != np.float32 or k == 0:
        mm(a, b, c, True, False, 1 if accumulate else 0)
        return
    with nogil:
        hr_rnn_gemm_b(m, n, k, <float*>cnp.PyArray_DATA(a), 1, lda,
                      <float*>cnp.PyArray_DATA(b), ldb, <float*>cnp.PyArray_DATA(c), n,
                      accumulate)


def _weight_grad(dw, hidden, dx, h0, lod, bint reverse):
    """dW (into ``dw``) = sum over rows of h(step before)^T dgates: one GEMM over Input's order
    (the step before a row is the row before it, or after it reversed), less the pairs that
    straddle two sequences, plus H0's (``h0`` in sequence order, or None) products with the
    first steps."""
    rows, d = hidden.shape
    if rows > 1:   # writes every element of dw
        if reverse:
            _transposed_product(hidden[1:rows], dx[:rows - 1], dw, False)
        else:
            _transposed_product(hidden[:rows - 1], dx[1:rows], dw, False)
    else:
        dw.fill(0)
    offsets = np.asarray(lod[len(lod) - 1], np.int64)
    nonempty = offsets[1:] > offsets[:len(offsets) - 1]
    firsts = (offsets[1:] - 1 if reverse else offsets[:len(offsets) - 1])[nonempty]
    # First steps whose neighbour in that pairing is the last step of another sequence.
    wrong = firsts[firsts < rows - 1] if reverse else firsts[firsts > 0]
    left = [-hidden[wrong + 1 if reverse else wrong - 1]]
    right = [dx[wrong]]
    if h0 is not None:
        left.append(h0[nonempty])
        right.append(dx[firsts])
    _transposed_product(np.concatenate(left), np.concatenate(right), dw, True)
    return dw


cdef class LSTMGrad(_Options):

    def __call__(self, x, h0, c0, weight, bias, hidden, cell, batch_gate, batch_cell, dhidden,
                 dcell):
        op = "lstm_grad"
        data, rows, d, order, alive, first, idx, w, b, h0r, c0r = _operands(
            op, x, h0, c0, weight, bias, self.peep, self.reverse)
        dtype, n_seq, total = data.dtype, len(order), len(idx)
        gates = _checked(batch_gate, dtype, (total, 4 * d), op, "BatchGate")
        cb = _checked(batch_cell, dtype, (total, d), op, "BatchCellPreAct")
        hid = _checked(hidden, dtype, (rows, d), op, "Hidden")
        dhid, dcel = (None if g is None or g.data is None else
                      _checked(g, dtype, (rows, d), op, slot)
                      for g, slot in ((dhidden, "Hidden@GRAD"), (dcell, "Cell@GRAD")))
        m = max(n_seq, 1)
        dx = _reused(self.spare, "dx", (rows, 4 * d), dtype)
        # e's rows E_PAD values apart beyond 4d: 4d floats are often a multiple of 4 KB, and
        # the product into dh reads a tile's rows side by side, which would then share their
        # L1 sets (12 rows, 8 ways: ~5% of that product's time at hidden 256)
        e = _reused(self.spare, "e", (m, 4 * d + E_PAD), dtype)
        dh, dc = _reused(self.spare, "dh", (m, d), dtype), _reused(self.spare, "dc", (m, d), dtype)
        dh.fill(0)
        dc.fill(0)
        ahc = _reused(self.spare, "ahc", (m, d), dtype)
        db = np.zeros(4 * d, dtype)
        dpeep = np.zeros(3 * d, dtype)
        c0z = c0r if c0r is not None else np.zeros((m, d), dtype)
        peep = b[4 * d:] if self.peep else None
        wtp = (_packed(self.spare, w, True, 4 * d, d)   # W^T
               if len(alive) > 1 or h0r is not None else None)
        cdef void* args[15]
        cdef cnp.int64_t* pa = <cnp.int64_t*>_ptr(alive)
        cdef cnp.int64_t* pf = <cnp.int64_t*>_ptr(first)
        cdef cnp.int64_t* pi = <cnp.int64_t*>_ptr(idx)
        cdef Py_ssize_t steps = len(alive)
        cdef int dd = d, lde = 4 * d + E_PAD
        cdef bint want = h0r is not None
        for k, v in enumerate((gates, cb, dhid, dcel, w, wtp, peep, c0z, dx, e, dh, dc, ahc, db,
                               dpeep)):
            args[k] = _ptr(v)
        if total == 0:
            pass
        elif dtype == np.float32:
            with nogil:
                _backward[float](<float*>args[0], <float*>args[1], <float*>args[2],
                                 <float*>args[3], pi, <float*>args[4], <float*>args[5],
                                 <float*>args[6], <float*>args[7], want, <float*>args[8],
                                 <float*>args[9], lde, <float*>args[10], <float*>args[11],
                                 <float*>args[12], <float*>args[13], <float*>args[14], pa, pf,
                                 steps, dd, self.ag, self.ac, self.ah)
        else:
            with nogil:
                _backward[double](<double*>args[0], <double*>args[1], <double*>args[2],
                                  <double*>args[3], pi, <double*>args[4], NULL,
                                  <double*>args[6], <double*>args[7], want, <double*>args[8],
                                  <double*>args[9], lde, <double*>args[10],
                                  <double*>args[11], <double*>args[12], <double*>args[13],
                                  <double*>args[14], pa, pf, steps, dd, self.ag, self.ac, self.ah)
        h0s = None if h0 is None else _checked(h0, dtype, (n_seq, d), op, "H0")
        dw = _weight_grad(_reused(self.spare, "dw", (d, 4 * d), dtype), hid, dx, h0s, x.lod,
                          self.reverse)
        if self.peep:
            db = np.concatenate([db, dpeep])
        dh0 = dc0 = None
        if h0 is not None:
            dh0 = np.zeros((n_seq, d), dtype)
            dc0 = np.zeros((n_seq, d), dtype)
            dh0[order] = dh[:n_seq]
            dc0[order] = dc[:n_seq]
        return (Tensor(dx, x.lod), dh0, dc0, dw, db.reshape(1, -1))


KERNELS = [("lstm", LSTM, DTYPES, "lod"), ("lstm_grad", LSTMGrad, DTYPES, "lod")]
