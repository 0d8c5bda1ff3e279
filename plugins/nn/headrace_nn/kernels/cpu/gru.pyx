# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""gru and gru_grad: the whole time loop in one kernel, in C without the GIL, laid out like
lstm's (sequences ranked, rows step-major, each step a prefix of the one before). A step is
Input's rows gathered with the bias, two products (the update/reset gates from h, then the
candidate from r * h) around the activations (float32 sigmoid/tanh vectorized); the gradient
runs the same steps back with two products per step for dh, and the weight gradient is two
GEMMs over all steps after the loop. float32's products against the weights go through the
packed AVX-512 GEMM of _rnn_gemm.h (the weights packed once per call), else BLAS.
"""
cimport numpy as cnp
from libc.string cimport memcpy, memset
from headrace.kernels.common cimport real
from ._common cimport act_rows, dact, gemm, mm
from ._rnn_gemm cimport (hr_rnn_gemm, hr_rnn_gemm_b, hr_rnn_gemm_ok, hr_rnn_pack,
                         hr_rnn_packed_size)

import numpy as np

from headrace.runtime.tensor import Tensor

from ._rnn import ACTIVATIONS, checked, layout

cnp.import_array()

DTYPES = ("float32", "float64")
cdef bint PACKED = hr_rnn_gemm_ok()


def use_packed_gemm(on=None):
    """Whether float32 runs on the packed AVX-512 GEMM (only where the CPU has AVX-512);
    ``on=False`` puts this module's kernels on BLAS (tests of that path, comparisons)."""
    global PACKED
    if on is not None:
        PACKED = bool(on) and hr_rnn_gemm_ok()
    return PACKED


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
    return (np.ascontiguousarray(data), rows, d, order, alive, first,
            np.ascontiguousarray(idx, np.int64), w, b, h0r)


cdef _packed(w, bint trans, int k, int n):
    """The [k, n] operand ``w`` (its transpose [n, k] stored if ``trans``) packed for
    hr_rnn_gemm, or None (float64, no AVX-512): BLAS then."""
    if not PACKED or w.dtype != np.float32 or k == 0 or n == 0:
        return None
    out = np.empty(hr_rnn_packed_size(k, n), np.float32)
    hr_rnn_pack(<float*>cnp.PyArray_DATA(w), w.strides[0] // 4, trans, k, n,
                <float*>cnp.PyArray_DATA(out))
    return out


cdef inline void _product(int m, int n, int k, const real* a, int lda, const real* b, int ldb,
                          bint tb, const real* bp, real* c, int ldc,
                          bint accumulate) noexcept nogil:
    """c[m, n] = a[m, k] op(b) (+ c): b row-major [k, n] (or [n, k] when ``tb``, op(b) its
    transpose), or packed (``bp``, float32)."""
    if real is float:
        if bp != NULL:
            hr_rnn_gemm(m, n, k, a, lda, 1, bp, c, ldc, accumulate)
            return
    gemm(False, tb, m, n, k, a, lda, b, ldb, 1 if accumulate else 0, c, ldc)


cdef void _forward(const real* x, const cnp.int64_t* idx, const real* bias, const real* w,
                   const real* wp_ur, const real* wp_c, const real* h0, real* gates, real* rb,
                   real* hb, real* hidden, const cnp.int64_t* alive, const cnp.int64_t* first,
                   Py_ssize_t steps, int d, int ag, int ac, bint origin) noexcept nogil:
    """``bias``/``h0`` may be NULL (zeros); ``wp_ur``/``wp_c``: the packed W_ur, W_c or
    NULL."""
    cdef Py_ssize_t t, r, j, s, n
    cdef int d2 = 2 * d, d3 = 3 * d
    cdef const real* ph
    cdef const real* src
    cdef real* g
    cdef real* h
    cdef real* rr
    cdef real u, c, hp
    for t in range(steps):
        s, n = first[t], alive[t]
        ph = h0 if t == 0 else hb + first[t - 1] * d
        for r in range(n):
            src = x + idx[s + r] * d3
            g = gates + (s + r) * d3
            if bias != NULL:
                for j in range(d3):
                    g[j] = src[j] + bias[j]
            else:
                memcpy(g, src, d3 * sizeof(real))
        if ph != NULL:   # [u, r] += h' W_ur
            _product(<int>n, d2, d, ph, d, w, d2, False, wp_ur, gates + s * d3, d3, True)
        for r in range(n):
            g, rr = gates + (s + r) * d3, rb + (s + r) * d
            act_rows(ag, g, d2)
            if ph != NULL:
                for j in range(d):
                    rr[j] = g[d + j] * ph[r * d + j]
            else:
                memset(rr, 0, d * sizeof(real))
        if ph != NULL:   # c += (r * h') W_c
            _product(<int>n, d, d, rb + s * d, d, w + d2 * d, d, False, wp_c,
                     gates + s * d3 + d2, d3, True)
        for r in range(n):
            g, h = gates + (s + r) * d3, hb + (s + r) * d
            act_rows(ac, g + d2, d)
            for j in range(d):
                u, c = g[j], g[d2 + j]
                hp = ph[r * d + j] if ph != NULL else 0
                # origin: h = u h' + (1 - u) c; else h = (1 - u) h' + u c
                h[j] = c + u * (hp - c) if origin else hp + u * (c - hp)
            memcpy(hidden + idx[s + r] * d, h, d * sizeof(real))


cdef void _backward(const real* gates, const real* hb, const real* dhid,
                    const cnp.int64_t* idx, const real* h0, const real* w, const real* wtp_ur,
                    const real* wtp_c, bint want_dh0, real* dg, real* dh, real* dhp, real* drh,
                    const cnp.int64_t* alive, const cnp.int64_t* first, Py_ssize_t steps,
                    int d, int ag, int ac, bint origin) noexcept nogil:
    """dg (the gates' pre-activation gradients, step-major) and, in ``dh`` (rank order), the
    gradient of the initial state; ``wtp_*``: W_ur^T, W_c^T packed, or NULL."""
    cdef Py_ssize_t t, r, j, s, n, prev_n
    cdef int d3 = 3 * d, d2 = 2 * d
    cdef const real* ph
    cdef const real* g
    cdef real* e
    cdef real dhh, u, c, hp, du, dcand
    for t in range(steps - 1, -1, -1):
        s, n = first[t], alive[t]
        ph = h0 if t == 0 else hb + first[t - 1] * d
        for r in range(n):
            g = gates + (s + r) * d3
            e = dg + (s + r) * d3
            if dhid != NULL:
                for j in range(d):
                    dh[r * d + j] += dhid[idx[s + r] * d + j]
            for j in range(d):
                dhh = dh[r * d + j]
                u, c = g[j], g[d2 + j]
                hp = ph[r * d + j] if ph != NULL else 0
                if origin:
                    du, dcand, dhp[r * d + j] = dhh * (hp - c), dhh * (1 - u), dhh * u
                else:
                    du, dcand, dhp[r * d + j] = dhh * (c - hp), dhh * u, dhh * (1 - u)
                e[j] = du * dact(ag, u)
                e[d2 + j] = dcand * dact(ac, c)
                e[d + j] = 0
        if ph != NULL:
            # The candidate's product (r * h') W_c, back to r and h'.
            _product(<int>n, d, d, dg + s * d3 + d2, d3, w + d2 * d, d, True, wtp_c, drh, d,
                     False)
            for r in range(n):
                e = dg + (s + r) * d3
                g = gates + (s + r) * d3
                for j in range(d):
                    e[d + j] = drh[r * d + j] * ph[r * d + j] * dact(ag, g[d + j])
                    dhp[r * d + j] += drh[r * d + j] * g[d + j]
            if t > 0 or want_dh0:
                _product(<int>n, d, d2, dg + s * d3, d3, w, d2, True, wtp_ur, dhp, d, True)
        memcpy(dh, dhp, n * d * sizeof(real))
        # Sequences that end at the step before start from a zero gradient.
        prev_n = alive[t - 1] if t > 0 else n
        if prev_n > n:
            memset(dh + n * d, 0, (prev_n - n) * d * sizeof(real))


cdef inline void* _ptr(a):
    return NULL if a is None else cnp.PyArray_DATA(<cnp.ndarray>a)


cdef class _Options:
    cdef int ag, ac
    cdef bint reverse, origin

    def __init__(self, dict attrs, info=None):
        self.ag = ACTIVATIONS[attrs["gate_activation"]]
        self.ac = ACTIVATIONS[attrs["activation"]]
        self.reverse, self.origin = attrs["is_reverse"], attrs["origin_mode"]


cdef class GRU(_Options):

    def __call__(self, x, h0, weight, bias):
        data, rows, d, order, alive, first, idx, w, b, h0r = _operands(
            "gru", x, h0, weight, bias, self.reverse)
        dtype, total = data.dtype, len(idx)
        gates = np.empty((total, 3 * d), dtype)
        rb = np.empty((total, d), dtype)
        hb = np.empty((total, d), dtype)
        hidden = np.empty((rows, d), dtype)
        recurrent = len(alive) > 1 or h0r is not None
        wp_ur = _packed(w[:2 * d * d].reshape(d, 2 * d), False, d, 2 * d) if recurrent else None
        wp_c = _packed(w[2 * d * d:].reshape(d, d), False, d, d) if recurrent else None
        cdef void* p[11]
        for k, v in enumerate((data, b, w, wp_ur, wp_c, h0r, gates, rb, hb, hidden, idx)):
            p[k] = _ptr(v)
        cdef Py_ssize_t steps = len(alive)
        cdef cnp.int64_t* pa = <cnp.int64_t*>_ptr(alive)
        cdef cnp.int64_t* pf = <cnp.int64_t*>_ptr(first)
        cdef int dd = d, ag = self.ag, ac = self.ac
        cdef bint origin = self.origin
        if total == 0:
            pass
        elif dtype == np.float32:
            with nogil:
                _forward[float](<float*>p[0], <cnp.int64_t*>p[10], <float*>p[1], <float*>p[2],
                                <float*>p[3], <float*>p[4], <float*>p[5], <float*>p[6],
                                <float*>p[7], <float*>p[8], <float*>p[9], pa, pf, steps, dd,
                                ag, ac, origin)
        else:
            with nogil:
                _forward[double](<double*>p[0], <cnp.int64_t*>p[10], <double*>p[1],
                                 <double*>p[2], NULL, NULL, <double*>p[5], <double*>p[6],
                                 <double*>p[7], <double*>p[8], <double*>p[9], pa, pf, steps,
                                 dd, ag, ac, origin)
        return gates, rb, hb, Tensor(hidden, x.lod)


cdef _transposed_product(cnp.ndarray a, cnp.ndarray b, cnp.ndarray c):
    """c += a^T b (rows contiguous; b and c may be column blocks): float32 through the AVX-512
    GEMM, else BLAS."""
    cdef int k = a.shape[0], m = a.shape[1], n = b.shape[1]
    cdef Py_ssize_t lda = a.strides[0] // a.itemsize, ldb = b.strides[0] // b.itemsize
    cdef Py_ssize_t ldc = c.strides[0] // c.itemsize
    if k == 0:
        return
    if not PACKED or a.dtype != np.float32:
        mm(a, b, c, True, False, 1)
        return
    with nogil:
        hr_rnn_gemm_b(m, n, k, <float*>cnp.PyArray_DATA(a), 1, lda,
                      <float*>cnp.PyArray_DATA(b), ldb, <float*>cnp.PyArray_DATA(c), ldc, 1)


def _previous(hb, h0r, alive, first):
    """Per step-major row, h of the step before (H0's row, or zeros, at the first step)."""
    total, d = hb.shape
    prev = np.empty_like(hb)
    if len(alive) == 0:
        return prev
    n0 = alive[0]
    if h0r is None:
        prev[:n0] = 0
    else:
        prev[:n0] = h0r[:n0]
    for t in range(1, len(alive)):
        s, n, p = first[t], alive[t], first[t - 1]
        prev[s:s + n] = hb[p:p + n]
    return prev


cdef class GRUGrad(_Options):

    def __call__(self, x, h0, weight, bias, batch_gate, batch_reset, batch_hidden, hidden,
                 dhidden):
        op = "gru_grad"
        data, rows, d, order, alive, first, idx, w, b, h0r = _operands(
            op, x, h0, weight, bias, self.reverse)
        dtype, n_seq, total = data.dtype, len(order), len(idx)
        gates = checked(batch_gate, dtype, (total, 3 * d), op, "BatchGate")
        rb = checked(batch_reset, dtype, (total, d), op, "BatchResetHiddenPrev")
        hb = checked(batch_hidden, dtype, (total, d), op, "BatchHidden")
        dhid = None if dhidden is None or dhidden.data is None else \
            checked(dhidden, dtype, (rows, d), op, "Hidden@GRAD")
        dg = np.empty((total, 3 * d), dtype)
        m = max(n_seq, 1)
        dh, dhp, drh = np.zeros((m, d), dtype), np.empty((m, d), dtype), np.empty((m, d), dtype)
        recurrent = len(alive) > 1 or h0r is not None
        wt_ur = _packed(w[:2 * d * d].reshape(d, 2 * d), True, 2 * d, d) if recurrent else None
        wt_c = _packed(w[2 * d * d:].reshape(d, d), True, d, d) if recurrent else None
        cdef void* p[11]
        for k, v in enumerate((gates, hb, dhid, idx, h0r, w, wt_ur, wt_c, dg, dh, dhp)):
            p[k] = _ptr(v)
        cdef void* pdrh = _ptr(drh)
        cdef Py_ssize_t steps = len(alive)
        cdef cnp.int64_t* pa = <cnp.int64_t*>_ptr(alive)
        cdef cnp.int64_t* pf = <cnp.int64_t*>_ptr(first)
        cdef int dd = d, ag = self.ag, ac = self.ac
        cdef bint origin = self.origin, want = h0r is not None
        if total == 0:
            pass
        elif dtype == np.float32:
            with nogil:
                _backward[float](<float*>p[0], <float*>p[1], <float*>p[2],
                                 <cnp.int64_t*>p[3], <float*>p[4], <float*>p[5], <float*>p[6],
                                 <float*>p[7], want, <float*>p[8], <float*>p[9],
                                 <float*>p[10], <float*>pdrh, pa, pf, steps, dd, ag, ac,
                                 origin)
        else:
            with nogil:
                _backward[double](<double*>p[0], <double*>p[1], <double*>p[2],
                                  <cnp.int64_t*>p[3], <double*>p[4], <double*>p[5], NULL,
                                  NULL, want, <double*>p[8], <double*>p[9], <double*>p[10],
                                  <double*>pdrh, pa, pf, steps, dd, ag, ac, origin)
        # The weight gradient, two GEMMs over all steps: W_ur's from h' and the gates'
        # gradients, W_c's from r * h' and the candidate's.
        dw = np.zeros(3 * d * d, dtype)
        _transposed_product(_previous(hb, h0r, alive, first), dg[:, :2 * d],
                            dw[:2 * d * d].reshape(d, 2 * d))
        _transposed_product(rb, dg[:, 2 * d:], dw[2 * d * d:].reshape(d, d))
        dx = np.empty((rows, 3 * d), dtype)
        dx[idx] = dg
        dh0 = None
        if h0 is not None:
            dh0 = np.zeros((n_seq, d), dtype)
            dh0[order] = dh[:n_seq]
        db = None if bias is None else dg.sum(axis=0).reshape(1, -1)
        return Tensor(dx, x.lod), dh0, dw.reshape(d, 3 * d), db


KERNELS = [("gru", GRU, DTYPES, "lod"), ("gru_grad", GRUGrad, DTYPES, "lod")]
