# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""rnn and rnn_grad: every layer, direction and step of Paddle's rnn op in one kernel.

Per layer and direction the input projection of all steps is one GEMM (x W_ih^T, written
straight into the Reserve block of the direction, whose rows are [gates | extras | h] per step
and sequence), then the time loop runs in C without the GIL: one recurrent GEMM per step over
the whole batch, then the cells row by row (float32 exp/tanh from the core's vectorized
fastmath; float32 LSTM cells, forward and back, one pass a row in _rnn_gemm.h). The gradient
walks the steps back the same way, a GEMM per step for dh', and the weights' gradients, the
input's and the biases' are one GEMM (or sum) per layer and direction over all steps after the
loop. SequenceLength masks rows: a finished sequence outputs zeros and
carries its state, in the forward pass and, as a pass-through of dh and dc, in the backward.
"""
cimport numpy as cnp
from libc.math cimport exp, tanh
from libc.string cimport memcpy, memset
from headrace.kernels.common cimport real
from headrace.kernels.fastmath cimport hr_f32_sigmoid, hr_f32_tanh
from ._common cimport gemm, mm
from ._rnn_gemm cimport (hr_rnn_gemm, hr_rnn_gemm_b, hr_rnn_gemm_ok, hr_rnn_lstm_row,
                         hr_rnn_lstm_row_grad, hr_rnn_pack, hr_rnn_packed_size)

import numpy as np

from ..host.rnn import RNNAttrs, lens_error, lens_operand, stack_operands

cnp.import_array()

DTYPES = ("float32", "float64")


# float32's products against W_hh, and the gradients' big products, through the nn kernels'
# packed AVX-512 GEMM (_rnn_gemm.h: W_hh packed once per call instead of by every per-step
# sgemm); float64 and CPUs without AVX-512 on BLAS. The input projection is always BLAS.
cdef bint PACKED = hr_rnn_gemm_ok()


def use_packed_gemm(on=None):
    """Whether float32 runs on the packed AVX-512 GEMM (only where the CPU has AVX-512);
    ``on=False`` puts this module on BLAS (tests of that path, comparisons)."""
    global PACKED
    if on is not None:
        PACKED = bool(on) and hr_rnn_gemm_ok()
    return PACKED


cdef _packed(w, bint trans, int k, int n):
    """``w`` ([k, n], or [n, k] if ``trans``) packed for hr_rnn_gemm, or None (float64, or no
    AVX-512: BLAS then)."""
    if not PACKED or w.dtype != np.float32 or k == 0 or n == 0:
        return None
    out = np.empty(hr_rnn_packed_size(k, n), np.float32)
    hr_rnn_pack(<float*>cnp.PyArray_DATA(w), w.strides[0] // 4, trans, k, n,
                <float*>cnp.PyArray_DATA(out))
    return out


cdef int _proj(cnp.ndarray a, cnp.ndarray w, cnp.ndarray c) except -1:
    """``c = a @ w^T``, every step's input projection (``c``: the gate columns of Reserve):
    float32 on the packed GEMM (w^T packed once), else BLAS."""
    cdef int m = c.shape[0], n = c.shape[1], k = a.shape[1]
    cdef cnp.ndarray wp = _packed(w, True, k, n) if m and a.flags.c_contiguous else None
    if wp is None:
        return mm(a, w, c, False, True, 0)
    cdef const float* pa = <float*>cnp.PyArray_DATA(a)
    cdef const float* pb = <float*>cnp.PyArray_DATA(wp)
    cdef float* pc = <float*>cnp.PyArray_DATA(c)
    cdef Py_ssize_t ldc = c.strides[0] // 4
    with nogil:
        hr_rnn_gemm(m, n, k, pa, k, 1, pb, pc, ldc, 0)
    return 0


cdef int _mm(cnp.ndarray a, bint ta, cnp.ndarray b, cnp.ndarray c, bint accumulate) except -1:
    """``c = op(a) @ b (+ c)`` for 2-D arrays with contiguous rows (``c`` and ``b`` may be
    column blocks): float32 through hr_rnn_gemm_b (A read transposed in place), else BLAS."""
    cdef int m = c.shape[0], n = c.shape[1], k = a.shape[0] if ta else a.shape[1]
    cdef Py_ssize_t lda
    if not PACKED or c.dtype != np.float32:
        return mm(a, b, c, ta, False, 1 if accumulate else 0)
    if m == 0 or n == 0:
        return 0
    if k == 0:
        if not accumulate:
            c[...] = 0
        return 0
    lda = a.strides[0] // 4
    if ta and not accumulate and b.strides[0] < a.strides[0]:
        # a^T b with a the wider (dgx^T x): read b transposed instead, c = (b^T a)^T, as
        # _gemm does for mul (a's rows a page apart ran 15-25% slower)
        t = np.empty((n, m), np.float32)
        _mm(b, True, a, t, False)
        c[...] = t.T
        return 0
    with nogil:
        hr_rnn_gemm_b(m, n, k, <float*>cnp.PyArray_DATA(a), 1 if ta else lda,
                      lda if ta else 1, <float*>cnp.PyArray_DATA(b), b.strides[0] // 4,
                      <float*>cnp.PyArray_DATA(c), c.strides[0] // 4, accumulate)
    return 0


cdef inline int _gates(int mode) noexcept nogil:
    return 4 if mode == 0 else (3 if mode == 1 else 1)


cdef inline int _width(int mode) noexcept nogil:
    # Reserve's columns per hidden unit (ops/rnn.py RESERVE_WIDTH)
    return 6 if mode == 0 else (5 if mode == 1 else 2)


cdef inline void _sigmoid(real* x, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    if real is float:
        hr_f32_sigmoid(x, x, n)
    else:
        for j in range(n):
            x[j] = 1 / (1 + exp(-x[j]))


cdef inline void _tanh(const real* x, real* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t j
    if real is float:
        hr_f32_tanh(x, y, n)
    else:
        for j in range(n):
            y[j] = tanh(x[j])


cdef void _forward_dir(int mode, int T, int N, int H, bint reverse, real* res,
                       const real* w_hh, const float* wp, const real* b_hc, const real* bias,
                       const real* h0, const real* c0, const long long* lens, real* out,
                       int ldo, real* tmp) noexcept nogil:
    """One direction of one layer. ``res`` [T, N, K*H] holds x W_ih^T + biases in its gate
    columns on entry (float32 LSTM: x W_ih^T, the cells add ``bias``); the step's h goes to
    ``out`` (row stride ``ldo``) and ``res``."""
    cdef int G = _gates(mode), K = _width(mode)
    cdef int KH = K * H, GH = G * H
    cdef int s, t, tp, n, j, ldh, ldc
    cdef const real* hp
    cdef const real* cp
    cdef real* g
    cdef real* row
    cdef real* tr
    cdef real* o
    cdef real c, u
    cdef bint alive
    for s in range(T):
        t = T - 1 - s if reverse else s
        g = res + <Py_ssize_t>t * N * KH
        if s == 0:
            hp, ldh, cp, ldc = h0, H, c0, H
        else:
            tp = t + 1 if reverse else t - 1
            hp = res + <Py_ssize_t>tp * N * KH + (K - 1) * H
            cp = res + <Py_ssize_t>tp * N * KH + 4 * H
            ldh, ldc = KH, KH
        # h' W_hh^T (wp: W_hh^T packed), into the gates (GRU: aside, for the reset)
        if real is float and wp != NULL:
            if mode == 1:
                hr_rnn_gemm(N, GH, H, hp, ldh, 1, wp, tmp, GH, 0)
            else:
                hr_rnn_gemm(N, GH, H, hp, ldh, 1, wp, g, KH, 1)
        elif mode == 1:
            gemm[real](False, True, N, GH, H, hp, ldh, w_hh, H, 0, tmp, GH)
        else:
            gemm[real](False, True, N, GH, H, hp, ldh, w_hh, H, 1, g, KH)
        for n in range(N):
            row = g + <Py_ssize_t>n * KH
            o = out + (<Py_ssize_t>t * N + n) * ldo
            alive = lens == NULL or t < lens[n]
            if not alive:
                # a finished sequence: zeros out, the state carried; the rest of its Reserve
                # row zeros too (it held this step's input projection, or nothing: GRU's
                # recurrent part is not written for it), so Reserve is the same every run
                memset(o, 0, H * sizeof(real))
                memset(row, 0, KH * sizeof(real))
                memcpy(row + (K - 1) * H, hp + <Py_ssize_t>n * ldh, H * sizeof(real))
                if mode == 0:
                    memcpy(row + 4 * H, cp + <Py_ssize_t>n * ldc, H * sizeof(real))
                continue
            if mode == 0:
                if real is float:   # one vectorized pass (_rnn_gemm.h)
                    hr_rnn_lstm_row(H, row, bias, cp + <Py_ssize_t>n * ldc, o)
                    continue
                _sigmoid(row, 2 * H)
                _tanh(row + 2 * H, row + 2 * H, H)
                _sigmoid(row + 3 * H, H)
                for j in range(H):
                    row[4 * H + j] = row[H + j] * cp[n * ldc + j] + row[j] * row[2 * H + j]
                _tanh(row + 4 * H, row + 5 * H, H)
                for j in range(H):
                    row[5 * H + j] *= row[3 * H + j]
                    o[j] = row[5 * H + j]
            elif mode == 1:
                tr = tmp + <Py_ssize_t>n * GH
                for j in range(2 * H):
                    row[j] += tr[j]
                _sigmoid(row, 2 * H)
                for j in range(H):
                    row[3 * H + j] = tr[2 * H + j] + b_hc[j]
                    row[2 * H + j] += row[j] * row[3 * H + j]
                _tanh(row + 2 * H, row + 2 * H, H)
                for j in range(H):
                    u = row[H + j]
                    c = u * hp[n * ldh + j] + (1 - u) * row[2 * H + j]
                    row[4 * H + j] = c
                    o[j] = c
            else:
                if mode == 2:
                    for j in range(H):
                        if not row[j] > 0:
                            row[j] = 0
                else:
                    _tanh(row, row, H)
                for j in range(H):
                    row[H + j] = row[j]
                    o[j] = row[j]


cdef inline void _lstm_row_grad(const real* row, const real* tc, const real* cp,
                                const real* dh, const real* do, real* dc, real* ex, real* dhp,
                                int H) noexcept nogil:
    """One sequence's LSTM step back: gate gradients (tc: tanh(c), precomputed), dc'."""
    cdef int j
    cdef real i, f, gg, o, t, dht, dcc
    for j in range(H):
        i, f, gg, o, t = row[j], row[H + j], row[2 * H + j], row[3 * H + j], tc[j]
        dht = dh[j] + do[j]
        dcc = dc[j] + dht * o * (1 - t * t)
        ex[j] = dcc * gg * i * (1 - i)
        ex[H + j] = dcc * cp[j] * f * (1 - f)
        ex[2 * H + j] = dcc * i * (1 - gg * gg)
        ex[3 * H + j] = dht * t * o * (1 - o)
        dc[j] = dcc * f
        dhp[j] = 0


cdef inline void _gru_row_grad(const real* row, const real* hp, const real* dh, const real* do,
                               real* ex, real* eh, real* dhp, int H) noexcept nogil:
    cdef int j
    cdef real r, u, cand, dht, dn
    for j in range(H):
        r, u, cand = row[j], row[H + j], row[2 * H + j]
        dht = dh[j] + do[j]
        dn = dht * (1 - u) * (1 - cand * cand)
        ex[j] = dn * row[3 * H + j] * r * (1 - r)
        ex[H + j] = dht * (hp[j] - cand) * u * (1 - u)
        ex[2 * H + j] = dn
        eh[j] = ex[j]
        eh[H + j] = ex[H + j]
        eh[2 * H + j] = dn * r
        dhp[j] = dht * u


cdef inline void _simple_row_grad(int mode, const real* row, const real* dh, const real* do,
                                  real* ex, real* dhp, int H) noexcept nogil:
    cdef int j
    cdef real y
    for j in range(H):
        y = row[j]
        if mode == 2:
            ex[j] = dh[j] + do[j] if y > 0 else 0
        else:
            ex[j] = (dh[j] + do[j]) * (1 - y * y)
        dhp[j] = 0


cdef void _backward_dir(int mode, int T, int N, int H, bint reverse, const real* res,
                        const real* w_hh, const real* h0, const real* c0,
                        const long long* lens, const real* dout, int ldo, real* dh, real* dc,
                        real* dhp, real* dgx, real* dgh, real* scratch,
                        const float* wtp, real* db) noexcept nogil:
    """Back through one direction: the gates' pre-activation gradients into ``dgx`` (input
    side) and ``dgh`` (recurrent side; the same buffer but for GRU's candidate), and dh/dc of
    the initial state in ``dh``/``dc`` (on entry: the gradients of the final state).
    ``scratch``: 2 * H values (tanh(c) of a row, and zeros standing for a missing dOut).
    float32 LSTM: ``db`` [4H] gets the gates' gradients summed (the biases' gradient)."""
    cdef int G = _gates(mode), K = _width(mode)
    cdef int KH = K * H, GH = G * H
    cdef int s, t, tp, n, ldh, ldc
    cdef const real* hp
    cdef const real* cp
    cdef const real* row
    cdef const real* do
    cdef real* ex
    cdef real* eh
    cdef real* dh0 = dh
    cdef real* swap
    cdef real* tc = scratch
    cdef real* zeros = scratch + H
    cdef bint alive
    memset(zeros, 0, H * sizeof(real))
    for s in range(T - 1, -1, -1):
        t = T - 1 - s if reverse else s
        if s == 0:
            hp, ldh, cp, ldc = h0, H, c0, H
        else:
            tp = t + 1 if reverse else t - 1
            hp = res + <Py_ssize_t>tp * N * KH + (K - 1) * H
            cp = res + <Py_ssize_t>tp * N * KH + 4 * H
            ldh, ldc = KH, KH
        for n in range(N):
            row = res + (<Py_ssize_t>t * N + n) * KH
            ex = dgx + (<Py_ssize_t>t * N + n) * GH
            eh = dgh + (<Py_ssize_t>t * N + n) * GH
            alive = lens == NULL or t < lens[n]
            if not alive:
                # nothing of this step reaches the loss: dh and dc pass through
                memset(ex, 0, GH * sizeof(real))
                if eh != ex:
                    memset(eh, 0, GH * sizeof(real))
                memcpy(dhp + <Py_ssize_t>n * H, dh + <Py_ssize_t>n * H, H * sizeof(real))
                continue
            do = zeros if dout == NULL else dout + (<Py_ssize_t>t * N + n) * ldo
            if mode == 0:
                if real is float:   # one vectorized pass (_rnn_gemm.h)
                    hr_rnn_lstm_row_grad(H, row, cp + <Py_ssize_t>n * ldc, dh + <Py_ssize_t>n * H,
                                         do, dc + <Py_ssize_t>n * H, ex,
                                         dhp + <Py_ssize_t>n * H, db)
                    continue
                _tanh(row + 4 * H, tc, H)   # vectorized, once per row
                _lstm_row_grad(row, tc, cp + <Py_ssize_t>n * ldc, dh + <Py_ssize_t>n * H, do,
                               dc + <Py_ssize_t>n * H, ex, dhp + <Py_ssize_t>n * H, H)
            elif mode == 1:
                _gru_row_grad(row, hp + <Py_ssize_t>n * ldh, dh + <Py_ssize_t>n * H, do, ex,
                              eh, dhp + <Py_ssize_t>n * H, H)
            else:
                _simple_row_grad(mode, row, dh + <Py_ssize_t>n * H, do, ex,
                                 dhp + <Py_ssize_t>n * H, H)
        # dh' += dG_hh W_hh over the batch, one GEMM
        if real is float and wtp != NULL:   # W_hh packed as it lies
            hr_rnn_gemm(N, H, GH, dgh + <Py_ssize_t>t * N * GH, GH, 1, wtp, dhp, H, 1)
        else:
            gemm[real](False, False, N, H, GH, dgh + <Py_ssize_t>t * N * GH, GH, w_hh, H, 1,
                       dhp, H)
        swap = dh
        dh = dhp
        dhp = swap
    if dh != dh0:
        memcpy(dh0, dh, <Py_ssize_t>N * H * sizeof(real))


def _checked(v, dtype, shape, op, slot):
    """``v`` as a C-contiguous ``dtype`` array of ``shape``, or a clear error."""
    if v is None:
        raise ValueError(f"{op}: {slot} has no value")
    a = np.asarray(getattr(v, "data", v))
    if a.dtype != dtype:
        raise TypeError(f"{op}: {slot} has dtype {a.dtype}, Input is {np.dtype(dtype).name}")
    if a.shape != tuple(shape):
        raise ValueError(f"{op}: {slot} has shape {list(a.shape)}, expected {list(shape)}")
    return np.ascontiguousarray(a)


cdef class _Options:
    """The attributes, and the operands both kernels check the same way."""
    cdef public int mode, layers, dirs, hid, isize
    cdef public double p
    cdef public bint is_test
    cdef public object seed, gen, info

    def __init__(self, dict attrs, info=None):
        a = RNNAttrs(attrs, info)
        self.mode, self.layers, self.dirs, self.hid, self.isize = (a.mode, a.layers, a.dirs,
                                                                   a.hid, a.isize)
        self.p, self.is_test, self.seed, self.info = a.p, a.is_test, a.seed, info
        self.gen = np.random.default_rng(a.stream_seed)

    def operands(self, op, x, states, weights, lens):
        x, T, N, states, ws = stack_operands(op, self, np.asarray(getattr(x, "data", x)),
                                             states, weights, _checked)
        if lens is not None:
            s = lens_operand(op, np.asarray(getattr(lens, "data", lens)), N)
            if N and (s.min() < 0 or s.max() > T):
                raise lens_error(op, T, f"{s.min()}..{s.max()}")
            lens = np.ascontiguousarray(s, np.int64)
        return x, T, N, states, ws, lens

    def drop(self, a, mask):
        """Paddle's upscaled dropout in place: a * mask / (1 - p), zeros when p is 1."""
        if self.p == 1:
            a[...] = 0
        else:
            a *= mask
            a /= np.asarray(np.float32(1) - np.float32(self.p), a.dtype)
        return a


cdef inline float* _f(cnp.ndarray a) noexcept nogil:
    return <float*>cnp.PyArray_DATA(a)


cdef inline double* _d(cnp.ndarray a) noexcept nogil:
    return <double*>cnp.PyArray_DATA(a)


cdef void _run_forward(int mode, int T, int N, int H, bint reverse, cnp.ndarray res,
                       cnp.ndarray w_hh, cnp.ndarray b_hc, cnp.ndarray bias, cnp.ndarray h0,
                       cnp.ndarray c0, cnp.ndarray lens, cnp.ndarray out, int d,
                       cnp.ndarray tmp):
    cdef const long long* pl = NULL if lens is None else <long long*>cnp.PyArray_DATA(lens)
    cdef int ldo = out.shape[2], G = _gates(mode)
    cdef const float* pw = NULL
    if out.dtype.num == cnp.NPY_FLOAT32:
        wp = _packed(w_hh, True, H, G * H) if T and N else None   # W_hh^T
        if wp is not None:
            pw = _f(wp)
        with nogil:
            _forward_dir[float](mode, T, N, H, reverse, _f(res), _f(w_hh), pw, _f(b_hc),
                                _f(bias), _f(h0), _f(c0), pl, _f(out) + d * H, ldo, _f(tmp))
    else:
        with nogil:
            _forward_dir[double](mode, T, N, H, reverse, _d(res), _d(w_hh), NULL, _d(b_hc),
                                 _d(bias), _d(h0), _d(c0), pl, _d(out) + d * H, ldo, _d(tmp))


def _forward(_Options opt, x, int T, int N, states, ws, lens, mask):
    """(Out, [h_n(, c_n)], Reserve, the layers' inputs)."""
    cdef int L = opt.layers, D = opt.dirs, H = opt.hid, mode = opt.mode
    cdef int G = _gates(mode), K = _width(mode), l, d, k
    dtype = x.dtype
    reserve = np.empty((L * D, T, N, K * H), dtype)
    finals = [np.empty((L * D, N, H), dtype) for _ in states]
    tmp = np.empty((max(N, 1), G * H), dtype)
    inp, inputs = x, []
    for l in range(L):
        if l and mask is not None:
            inp = opt.drop(inp.copy(), mask)
        inputs.append(inp)
        out = np.empty((T, N, D * H), dtype)
        flat = inp.reshape(T * N, inp.shape[2])
        for d in range(D):
            k = l * D + d
            w_ih, w_hh, b_ih, b_hh = ws[k]
            res = reserve[k]
            gates = res.reshape(T * N, K * H)[:, :G * H]
            _proj(flat, w_ih, gates)   # every step's input projection at once
            bias = b_ih + b_hh
            if mode == 1:
                bias[2 * H:] = b_ih[2 * H:]   # GRU: b_hc goes inside the reset product
            if mode != 0 or dtype != np.float32:   # float32 LSTM cells add it themselves
                gates += bias
            h0 = states[0][k]
            c0 = states[1][k] if mode == 0 else h0
            _run_forward(mode, T, N, H, d == 1, res, w_hh, np.ascontiguousarray(b_hh[2 * H:]),
                         bias, h0, c0, lens, out, d, tmp)
            last = T - 1 if d == 0 else 0
            finals[0][k] = res[last, :, (K - 1) * H:] if T else h0
            if mode == 0:
                finals[1][k] = res[last, :, 4 * H:5 * H] if T else c0
        inp = out
    return inp, finals, reserve, inputs


cdef class RNN(_Options):

    def __call__(self, x, pre_state, weights, lens):
        x, T, N, states, ws, lens = self.operands("rnn", x, pre_state, weights, lens)
        shape = (T, N, self.dirs * self.hid)
        mask = None
        if not self.is_test and self.p > 0 and self.layers > 1:
            gen = np.random.default_rng(self.seed) if self.seed is not None else self.gen
            mask = (gen.random(shape, dtype=np.float32) >= np.float32(self.p)).astype(np.uint8)
        out, finals, reserve, _ = _forward(self, x, T, N, states, ws, lens, mask)
        if self.info is not None:   # as many final states as State binds (Paddle: all)
            finals = finals[:self.info.n_outputs("State")]
        return out, (mask if mask is not None else np.ones(shape, np.uint8)), reserve, finals


cdef void _run_backward(int mode, int T, int N, int H, bint reverse, cnp.ndarray res,
                        cnp.ndarray w_hh, cnp.ndarray h0, cnp.ndarray c0, cnp.ndarray lens,
                        cnp.ndarray dout, int d, cnp.ndarray dh, cnp.ndarray dc,
                        cnp.ndarray dhp, cnp.ndarray dgx, cnp.ndarray dgh,
                        cnp.ndarray scratch, cnp.ndarray db):
    cdef const long long* pl = NULL if lens is None else <long long*>cnp.PyArray_DATA(lens)
    cdef int ldo = 0 if dout is None else dout.shape[2]
    cdef int G = _gates(mode)
    cdef const float* pw = NULL
    if res.dtype.num == cnp.NPY_FLOAT32:
        wp = _packed(w_hh, False, G * H, H) if T and N else None   # W_hh as it lies
        if wp is not None:
            pw = _f(wp)
        with nogil:
            _backward_dir[float](mode, T, N, H, reverse, _f(res), _f(w_hh), _f(h0), _f(c0), pl,
                                 NULL if dout is None else _f(dout) + d * H, ldo, _f(dh),
                                 _f(dc), _f(dhp), _f(dgx), _f(dgh), _f(scratch), pw,
                                 NULL if db is None else _f(db))
    else:
        with nogil:
            _backward_dir[double](mode, T, N, H, reverse, _d(res), _d(w_hh), _d(h0), _d(c0),
                                  pl, NULL if dout is None else _d(dout) + d * H, ldo, _d(dh),
                                  _d(dc), _d(dhp), _d(dgx), _d(dgh), _d(scratch), NULL,
                                  NULL)


cdef class RNNGrad(_Options):

    def _count(self, slot, int full):
        """How many gradients to return for duplicable output ``slot``: none when unbound."""
        return full if self.info is None else (full if self.info.n_outputs(slot) else 0)

    def __call__(self, x, pre_state, weights, lens, out, dropout_state, reserve, dout,
                 dstate):
        op = "rnn_grad"
        x, T, N, states, ws, lens = self.operands(op, x, pre_state, weights, lens)
        cdef int L = self.layers, D = self.dirs, H = self.hid, mode = self.mode
        cdef int G = _gates(mode), K = _width(mode), l, d, k
        dtype = x.dtype
        shape = (T, N, D * H)
        _checked(out, dtype, shape, op, "Out")
        res_all = _checked(reserve, dtype, (L * D, T, N, K * H), op, "Reserve")
        mask = None
        if not self.is_test and self.p > 0 and L > 1:
            if dropout_state is None:
                raise ValueError(f"{op}: dropout_prob > 0 needs DropoutState (the mask)")
            mask = _checked(dropout_state, np.uint8, shape, op, "DropoutState")
        dnext = None if dout is None or getattr(dout, "data", dout) is None else \
            _checked(dout, dtype, shape, op, "Out@GRAD")
        dstate = list(dstate or ())
        dstate += [None] * (len(states) - len(dstate))
        dfinal = [None if g is None or getattr(g, "data", g) is None else
                  _checked(g, dtype, (L * D, N, H), op, f"State@GRAD[{i}]")
                  for i, g in enumerate(dstate[:len(states)])]
        # the layers' inputs again: Input, then each layer's Out (zeros past the lengths, as
        # kept in Reserve), dropped out as the forward pass did
        inputs = [x]
        for l in range(1, L):
            prev = np.empty(shape, dtype)
            for d in range(D):
                np.copyto(prev[:, :, d * H:(d + 1) * H],
                          res_all[(l - 1) * D + d][:, :, (K - 1) * H:])
            if lens is not None:
                prev *= (np.arange(T)[:, None] < lens[None, :])[:, :, None]
            if mask is not None:
                self.drop(prev, mask)
            inputs.append(prev)
        dws = [None] * (4 * L * D)
        dpre = [np.empty((L * D, N, H), dtype) for _ in states]
        dh = np.empty((max(N, 1), H), dtype)
        dc = np.zeros((max(N, 1), H), dtype)
        dhp = np.empty((max(N, 1), H), dtype)
        dgx = np.empty((T * N, G * H), dtype)
        dgh = np.empty((T * N, G * H), dtype) if mode == 1 else dgx
        scratch = np.empty(2 * H, dtype)
        dx = None
        want_x = self.info is None or self.info.wants("Input@GRAD")
        for l in range(L - 1, -1, -1):
            inp = inputs[l].reshape(T * N, inputs[l].shape[2])
            dinp = np.zeros(inp.shape, dtype) if (l or want_x) else None
            for d in range(D):
                k = l * D + d
                w_ih, w_hh, _, _ = ws[k]
                res = res_all[k]
                h0 = states[0][k]
                c0 = states[1][k] if mode == 0 else h0
                for dst, g in ((dh, dfinal[0]), (dc, dfinal[1] if mode == 0 else None)):
                    if g is None:
                        dst[...] = 0
                    else:
                        dst[:N] = g[k]
                # float32 LSTM: the biases' gradient summed by the cells' pass
                db = np.zeros(G * H, dtype) if mode == 0 and dtype == np.float32 else None
                _run_backward(mode, T, N, H, d == 1, res, w_hh, h0, c0, lens, dnext, d, dh,
                              dc, dhp, dgx, dgh, scratch, db)
                dpre[0][k] = dh[:N]
                if mode == 0:
                    dpre[1][k] = dc[:N]
                # the weights' gradients: one GEMM each over all steps
                dw_ih = np.empty(w_ih.shape, dtype)
                _mm(dgx, True, inp, dw_ih, False)
                dw_hh = np.zeros(w_hh.shape, dtype)
                if T:
                    hs = res.reshape(T * N, K * H)[:, (K - 1) * H:]   # h after every step
                    first, rest = (T - 1, slice(0, (T - 1) * N)) if d else \
                        (0, slice(N, T * N))
                    _mm(dgh[first * N:(first + 1) * N], True, h0, dw_hh, False)
                    prev_h = hs[N:] if d else hs[:(T - 1) * N]
                    _mm(dgh[rest], True, prev_h, dw_hh, True)
                if dinp is not None:
                    _mm(dgx, False, w_ih, dinp, True)
                dws[2 * k], dws[2 * k + 1] = dw_ih, dw_hh
                dws[2 * L * D + 2 * k] = dgx.sum(axis=0) if db is None else db
                dws[2 * L * D + 2 * k + 1] = dgh.sum(axis=0) if mode == 1 else \
                    dws[2 * L * D + 2 * k].copy()
            if l:
                dnext = dinp.reshape(shape)
                if mask is not None:
                    self.drop(dnext, mask)
            else:
                dx = None if dinp is None else dinp.reshape(x.shape)
        return (dx, dpre[:self._count("PreState@GRAD", len(dpre))],
                dws[:self._count("WeightList@GRAD", len(dws))])


KERNELS = [("rnn", RNN, DTYPES), ("rnn_grad", RNNGrad, DTYPES)]
