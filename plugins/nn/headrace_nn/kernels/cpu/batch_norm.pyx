# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""batch_norm, training and inference, NCHW and NHWC, 2-D to 5-D.

X is viewed as [N, C, S] (NCHW: S = the spatial size) or [R, C] (NHWC: R = N * spatial), so
both layouts are two flat loops. Statistics are accumulated with two passes (mean, then the mean
squared deviation), which stays accurate for float32 data with a large mean.
Y = (X - mean[c]) * a[c] + Bias[c] with a = Scale / sqrt(var + eps), X centred first so that a
large mean cancels exactly. The per-plane loops run in X's dtype over 16 independent lanes (which
the compiler vectorizes; a double accumulator per channel is a chain of dependent adds), each
plane's lane sums added up in double.

MeanOut / VarianceOut are the Mean / Variance variables (the op updates them in place): the
kernel writes into the arrays it was given when it may (writeable, contiguous, of the right
dtype), and otherwise returns updated copies, which the executor stores in the same variables.

batch_norm_grad(X, Scale, Bias, Mean, Variance, SavedMean, SavedVariance, Y@GRAD) -> X@GRAD,
Scale@GRAD, Bias@GRAD. Per channel, with xhat = (X - mean) * inv: Bias@GRAD = sum(dY),
Scale@GRAD = sum(dY * xhat). Training statistics (mean = SavedMean, inv = SavedVariance, which
depend on X): X@GRAD = Scale * inv * (dY - sum(dY)/m - xhat * sum(dY * xhat)/m), m = the
values per channel. Global statistics (the forward's rule: is_test without
trainable_statistics, or use_global_stats; mean = Mean, inv = 1/sqrt(Variance + eps), constants):
X@GRAD = Scale * inv * dY. One pass for the sums, one for X@GRAD (lanes as above).
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport sqrt
from headrace.kernels.threads cimport ELEMENT_GRAIN, threads_for
from headrace.kernels.common cimport contiguous, empty_like, prod, real, shape_of
from ._common cimport expect_shape, float_array

import numpy as np

from ..host._common import wanted
from ..host.batch_norm import GRADS, BatchNormAttrs

cnp.import_array()

DTYPES = ("float32", "float64")


cdef inline double _plane_sum(const real* x, real shift, bint square,
                             Py_ssize_t S) noexcept nogil:
    """sum of x - shift (or of its square) over one plane: 16 independent lanes in X's dtype
    (vectorized by the compiler; one double accumulator is a chain of dependent adds), at
    most S/16 values a lane, added up in double."""
    cdef real lane[16]
    cdef real d
    cdef Py_ssize_t s = 0, l
    cdef double total = 0.0
    for l in range(16):
        lane[l] = 0
    if square:
        while s + 16 <= S:
            for l in range(16):
                d = x[s + l] - shift
                lane[l] += d * d
            s += 16
    else:
        while s + 16 <= S:
            for l in range(16):
                lane[l] += x[s + l] - shift
            s += 16
    for l in range(16):
        total += lane[l]
    while s < S:
        d = x[s] - shift
        total += d * d if square else d
        s += 1
    return total


cdef void _stat_channels(const real* x, double* mean, double* var, Py_ssize_t N, Py_ssize_t C,
                         Py_ssize_t S, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """NCHW mean and variance of channels [c0, c1): one thread's share."""
    cdef Py_ssize_t n, c
    cdef double cnt = <double>N * S
    for c in range(c0, c1):
        mean[c] = 0.0
        var[c] = 0.0
        for n in range(N):
            mean[c] += _plane_sum(x + (n * C + c) * S, 0, False, S)
        mean[c] /= cnt
        for n in range(N):
            var[c] += _plane_sum(x + (n * C + c) * S, <real>mean[c], True, S)
        var[c] /= cnt


cdef void _stats(const real* x, double* mean, double* var, Py_ssize_t N, Py_ssize_t C,
                 Py_ssize_t S, bint nhwc) noexcept nogil:
    """Biased batch mean and variance per channel (layout [N, C, S], or [N, C] rows if nhwc).
    NCHW splits the channels over the threads (threads_for): each channel is summed by one
    thread in the serial order, so the result does not depend on the thread count."""
    cdef Py_ssize_t n, c
    cdef double d, cnt = <double>N * S
    cdef int t, nt
    if not nhwc:
        nt = threads_for(<double>N * C * S, ELEMENT_GRAIN)
        nt = nt if nt < C else <int>C
        if nt <= 1:
            _stat_channels(x, mean, var, N, C, S, 0, C)
        else:
            for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
                _stat_channels(x, mean, var, N, C, S, C * t // nt, C * (t + 1) // nt)
        return
    for c in range(C):
        mean[c] = 0.0
        var[c] = 0.0
    for n in range(N):
        for c in range(C):
            mean[c] += x[n * C + c]
    for c in range(C):
        mean[c] /= cnt
    for n in range(N):
        for c in range(C):
            d = x[n * C + c] - mean[c]
            var[c] += d * d
    for c in range(C):
        var[c] /= cnt


cdef void _apply_planes(const real* x, real* y, const double* mu, const double* a,
                        const double* b, Py_ssize_t C, Py_ssize_t S, Py_ssize_t p0,
                        Py_ssize_t p1) noexcept nogil:
    """NCHW planes [p0, p1) (plane p = image p // C, channel p % C)."""
    cdef Py_ssize_t p, c, s, base
    cdef real ac, bc, mc
    for p in range(p0, p1):
        c = p % C
        base = p * S
        ac, bc, mc = <real>a[c], <real>b[c], <real>mu[c]
        for s in range(S):
            y[base + s] = (x[base + s] - mc) * ac + bc


cdef void _apply(const real* x, real* y, const double* mu, const double* a, const double* b,
                 Py_ssize_t N, Py_ssize_t C, Py_ssize_t S, bint nhwc) noexcept nogil:
    """y = (x - mu[c]) * a[c] + b[c]; NCHW planes in X's dtype (vectorized), x centred first
    so that a large mean cancels exactly; the planes are split over the threads."""
    cdef Py_ssize_t n, c, P = N * C
    cdef int t, nt
    if nhwc:
        for n in range(N):
            for c in range(C):
                y[n * C + c] = <real>((x[n * C + c] - mu[c]) * a[c] + b[c])
        return
    nt = threads_for(<double>P * S, ELEMENT_GRAIN)
    nt = nt if nt < P else <int>P
    if nt <= 1:
        _apply_planes(x, y, mu, a, b, C, S, 0, P)
    else:
        for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
            _apply_planes(x, y, mu, a, b, C, S, P * t // nt, P * (t + 1) // nt)


cdef class BatchNorm:
    cdef bint global_stats, nhwc
    cdef double momentum, eps

    def __init__(self, dict attrs, info=None):
        a = BatchNormAttrs(attrs)
        self.global_stats, self.nhwc, self.momentum, self.eps = \
            a.global_stats, a.nhwc, a.momentum, a.eps

    def __call__(self, x, scale, bias, mean, variance, momentum_tensor=None):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = cnp.PyArray_TYPE(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"batch_norm: X has dtype {a.dtype}, expected float32 or float64")
        cdef tuple xs = shape_of(a)
        if not 2 <= len(xs) <= 5:
            raise ValueError(f"batch_norm: X{list(xs)} must be 2-D to 5-D")
        cdef Py_ssize_t C, N, S
        if self.nhwc:
            C, N, S = xs[-1], prod(xs[:-1]), 1
        else:
            C, N, S = xs[1], xs[0], prod(xs[2:])
        params = []
        for name, v in (("Scale", scale), ("Bias", bias), ("Mean", mean),
                        ("Variance", variance)):
            p = contiguous(v)
            if p.dtype != a.dtype or shape_of(p) != (C,):
                raise ValueError(f"batch_norm: {name} {p.dtype}{list(shape_of(p))} must be "
                                 f"{a.dtype}[{C}] (one value per channel of X{list(xs)})")
            params.append(p)
        momentum = self.momentum
        if momentum_tensor is not None:
            mt = np.asarray(momentum_tensor)
            if mt.size != 1:
                raise ValueError(f"batch_norm: MomentumTensor must hold one value, got shape "
                                 f"{list(mt.shape)}")
            momentum = float(mt.reshape(-1)[0])
        sc, bi = params[0].astype(np.float64), params[1].astype(np.float64)
        cdef cnp.ndarray y = empty_like(a)
        cdef cnp.ndarray bm = np.zeros(C, np.float64), bv = np.zeros(C, np.float64)
        cdef cnp.ndarray saved_mean, saved_inv, mean_out, var_out
        if self.global_stats:
            mu, var = params[2].astype(np.float64), params[3].astype(np.float64)
            mean_out, var_out = params[2], params[3]
            # Paddle leaves the saved statistics zero when it uses the running ones.
            saved_mean, saved_inv = np.zeros(C, a.dtype), np.zeros(C, a.dtype)
        else:
            if N * S == 0:
                raise ValueError(f"batch_norm: X{list(xs)} has no values to compute batch "
                                 f"statistics from (training mode)")
            if t == cnp.NPY_FLOAT32:
                with nogil:
                    _stats(<const float*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(bm),
                           <double*>cnp.PyArray_DATA(bv), N, C, S, self.nhwc)
            else:
                with nogil:
                    _stats(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(bm),
                           <double*>cnp.PyArray_DATA(bv), N, C, S, self.nhwc)
            mu, var = bm, bv
            mean_out = _running(mean, params[2], bm, momentum)
            var_out = _running(variance, params[3], bv, momentum)
            saved_mean = bm.astype(a.dtype)
            saved_inv = (1.0 / np.sqrt(bv + self.eps)).astype(a.dtype)
        inv = 1.0 / np.sqrt(var + self.eps)
        cdef cnp.ndarray ca = np.ascontiguousarray(sc * inv)
        cdef cnp.ndarray cb = np.ascontiguousarray(bi)
        cdef cnp.ndarray cm = np.ascontiguousarray(mu, dtype=np.float64)
        cdef const double* pmu = <const double*>cnp.PyArray_DATA(cm)
        cdef const double* pa = <const double*>cnp.PyArray_DATA(ca)
        cdef const double* pb = <const double*>cnp.PyArray_DATA(cb)
        if N * C * S:
            if t == cnp.NPY_FLOAT32:
                with nogil:
                    _apply(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(y),
                           pmu, pa, pb, N, C, S, self.nhwc)
            else:
                with nogil:
                    _apply(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(y),
                           pmu, pa, pb, N, C, S, self.nhwc)
        # ReserveSpace: Paddle's cuDNN workspace, empty here.
        return (y, mean_out, var_out, saved_mean, saved_inv, np.empty(0, a.dtype))


cdef cnp.ndarray _running(object given, cnp.ndarray param, cnp.ndarray batch, double momentum):
    """running * momentum + batch * (1 - momentum), into ``given`` itself when it may be written
    (it is the output variable too), else into a copy."""
    cdef cnp.ndarray out = param
    if out is not given or not out.flags.writeable:
        out = np.array(param, copy=True)
    out *= momentum
    out += (batch * (1.0 - momentum)).astype(out.dtype)
    return out


# -- gradient -----------------------------------------------------------------------------------

cdef inline void _plane_sums(const real* x, const real* dy, real mu, Py_ssize_t S,
                             double* sa, double* sb) noexcept nogil:
    """sum dY and sum dY * (X - mu) over one plane: 16 independent lanes in X's dtype (the
    compiler vectorizes them, where one double accumulator is a chain of dependent adds), at
    most S/16 values a lane, added up in double."""
    cdef real la[16]
    cdef real lb[16]
    cdef Py_ssize_t s = 0, l
    cdef double a = 0.0, b = 0.0
    for l in range(16):
        la[l] = 0
        lb[l] = 0
    while s + 16 <= S:
        for l in range(16):
            la[l] += dy[s + l]
            lb[l] += dy[s + l] * (x[s + l] - mu)
        s += 16
    for l in range(16):
        a += la[l]
        b += lb[l]
    while s < S:
        a += dy[s]
        b += dy[s] * (x[s] - mu)
        s += 1
    sa[0] = a
    sb[0] = b


cdef void _grad_channels(const real* x, const real* dy, const double* mean, double* sdy,
                         double* sdyx, Py_ssize_t N, Py_ssize_t C, Py_ssize_t S, Py_ssize_t c0,
                         Py_ssize_t c1) noexcept nogil:
    """NCHW sums of channels [c0, c1): one thread's share."""
    cdef Py_ssize_t n, c
    cdef double a, b
    for c in range(c0, c1):
        sdy[c] = 0.0
        sdyx[c] = 0.0
        for n in range(N):
            _plane_sums(x + (n * C + c) * S, dy + (n * C + c) * S, <real>mean[c], S, &a, &b)
            sdy[c] += a
            sdyx[c] += b


cdef void _grad_sums(const real* x, const real* dy, const double* mean, double* sdy,
                     double* sdyx, Py_ssize_t N, Py_ssize_t C, Py_ssize_t S,
                     bint nhwc) noexcept nogil:
    """sdy[c] = sum dY, sdyx[c] = sum dY * (X - mean[c]); NCHW channels split over the
    threads, each summed by one thread in the serial order."""
    cdef Py_ssize_t n, c
    cdef int t, nt
    if not nhwc:
        nt = threads_for(<double>N * C * S, ELEMENT_GRAIN)
        nt = nt if nt < C else <int>C
        if nt <= 1:
            _grad_channels(x, dy, mean, sdy, sdyx, N, C, S, 0, C)
        else:
            for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
                _grad_channels(x, dy, mean, sdy, sdyx, N, C, S, C * t // nt,
                               C * (t + 1) // nt)
        return
    for c in range(C):
        sdy[c] = 0.0
        sdyx[c] = 0.0
    for n in range(N):
        for c in range(C):
            sdy[c] += dy[n * C + c]
            sdyx[c] += dy[n * C + c] * (x[n * C + c] - mean[c])


cdef void _grad_planes(const real* x, const real* dy, real* dx, const double* k,
                       const double* q, const double* r, const double* mean, Py_ssize_t C,
                       Py_ssize_t S, Py_ssize_t p0, Py_ssize_t p1) noexcept nogil:
    """NCHW planes [p0, p1) of X@GRAD."""
    cdef Py_ssize_t p, c, s, base
    cdef real kc, qc, rc, mc
    for p in range(p0, p1):
        c = p % C
        base = p * S
        kc, qc, rc, mc = <real>k[c], <real>q[c], <real>r[c], <real>mean[c]
        for s in range(S):
            dx[base + s] = kc * dy[base + s] - qc * (x[base + s] - mc) - rc


cdef void _grad_x(const real* x, const real* dy, real* dx, const double* k, const double* q,
                  const double* r, const double* mean, Py_ssize_t N, Py_ssize_t C,
                  Py_ssize_t S, bint nhwc) noexcept nogil:
    """dx = k[c] * dy - q[c] * (x - mean[c]) - r[c] (the training formula expanded; k =
    Scale*inv and q = r = 0 for global statistics). NCHW planes in X's dtype, which the
    compiler vectorizes, split over the threads; x is centred first, so a large mean cancels
    exactly there."""
    cdef Py_ssize_t n, c, P = N * C
    cdef int t, nt
    if nhwc:
        for n in range(N):
            for c in range(C):
                dx[n * C + c] = <real>(k[c] * dy[n * C + c] - q[c] * (x[n * C + c] - mean[c])
                                       - r[c])
        return
    nt = threads_for(<double>P * S, ELEMENT_GRAIN)
    nt = nt if nt < P else <int>P
    if nt <= 1:
        _grad_planes(x, dy, dx, k, q, r, mean, C, S, 0, P)
    else:
        for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
            _grad_planes(x, dy, dx, k, q, r, mean, C, S, P * t // nt, P * (t + 1) // nt)


cdef class BatchNormGrad:
    """batch_norm_grad(X, Scale, Bias, Mean, Variance, SavedMean, SavedVariance, Y@GRAD) ->
    (X@GRAD, Scale@GRAD, Bias@GRAD); Mean and Variance are read only with global statistics."""
    cdef bint global_stats, nhwc, want_x, want_scale, want_bias
    cdef double eps

    def __init__(self, dict attrs, info=None):
        a = BatchNormAttrs(attrs)
        self.global_stats, self.nhwc, self.eps = a.global_stats, a.nhwc, a.eps
        self.want_x, self.want_scale, self.want_bias = wanted(info, GRADS)

    def __call__(self, x, scale, bias, mean, variance, saved_mean, saved_variance, dy):
        name = "batch_norm_grad"
        cdef cnp.ndarray a = float_array(x, name, "X")
        cdef cnp.ndarray g = float_array(dy, name, "Y@GRAD")
        cdef int t = cnp.PyArray_TYPE(a)
        if cnp.PyArray_TYPE(g) != t:
            raise TypeError(f"{name}: Y@GRAD has dtype {g.dtype} but X is {a.dtype}")
        cdef tuple xs = shape_of(a)
        if not 2 <= len(xs) <= 5:
            raise ValueError(f"{name}: X{list(xs)} must be 2-D to 5-D")
        expect_shape(g, xs, name, "Y@GRAD", "X's shape")
        cdef Py_ssize_t C, N, S
        if self.nhwc:
            C, N, S = xs[-1], prod(xs[:-1]), 1
        else:
            C, N, S = xs[1], xs[0], prod(xs[2:])
        slots = [("Scale", scale), ("Bias", bias)]
        if self.global_stats:
            slots += [("Mean", mean), ("Variance", variance)]
        else:
            slots += [("SavedMean", saved_mean), ("SavedVariance", saved_variance)]
        params = {}
        for slot, v in slots:
            if v is None:
                raise ValueError(f"{name}: input {slot} is needed ("
                                 + ("global" if self.global_stats else "batch")
                                 + " statistics) but not bound")
            p = contiguous(v)
            if p.dtype != a.dtype or shape_of(p) != (C,):
                raise ValueError(f"{name}: {slot} {p.dtype}{list(shape_of(p))} must be "
                                 f"{a.dtype}[{C}] (one value per channel of X{list(xs)})")
            params[slot] = p.astype(np.float64)
        sc = params["Scale"]
        if self.global_stats:
            mu = params["Mean"]
            inv = 1.0 / np.sqrt(params["Variance"] + self.eps)
        else:
            mu, inv = params["SavedMean"], params["SavedVariance"]
        cdef cnp.ndarray cmu = np.ascontiguousarray(mu)
        cdef cnp.ndarray sdy = np.zeros(C, np.float64), sdyx = np.zeros(C, np.float64)
        cdef double* pm = <double*>cnp.PyArray_DATA(cmu)
        cdef double* p1 = <double*>cnp.PyArray_DATA(sdy)
        cdef double* p2 = <double*>cnp.PyArray_DATA(sdyx)
        cdef bint sums = self.want_scale or self.want_bias or (self.want_x and
                                                               not self.global_stats)
        if sums and N * C * S:
            if t == cnp.NPY_FLOAT32:
                with nogil:
                    _grad_sums(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(g),
                               pm, p1, p2, N, C, S, self.nhwc)
            else:
                with nogil:
                    _grad_sums(<const double*>cnp.PyArray_DATA(a),
                               <const double*>cnp.PyArray_DATA(g), pm, p1, p2, N, C, S,
                               self.nhwc)
        dscale = (sdyx * inv).astype(a.dtype) if self.want_scale else None
        dbias = sdy.astype(a.dtype) if self.want_bias else None
        if not self.want_x:
            return (None, dscale, dbias)
        cdef cnp.ndarray dx = empty_like(a)
        if N * C * S == 0:
            return (dx, dscale, dbias)
        k = sc * inv
        if self.global_stats:
            q = np.zeros(C)
            r = np.zeros(C)
        else:
            # dx = k (dy - sdy/m - (x - mu) inv^2 sdyx/m) = k dy - q (x - mu) - r
            m = <double>N * S
            q = k * inv * inv * sdyx / m
            r = k * sdy / m
        cdef cnp.ndarray ck = np.ascontiguousarray(k), cq = np.ascontiguousarray(q)
        cdef cnp.ndarray cr = np.ascontiguousarray(r)
        cdef const double* pk = <const double*>cnp.PyArray_DATA(ck)
        cdef const double* pq = <const double*>cnp.PyArray_DATA(cq)
        cdef const double* pr = <const double*>cnp.PyArray_DATA(cr)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _grad_x(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(g),
                        <float*>cnp.PyArray_DATA(dx), pk, pq, pr, pm, N, C, S, self.nhwc)
        else:
            with nogil:
                _grad_x(<const double*>cnp.PyArray_DATA(a), <const double*>cnp.PyArray_DATA(g),
                        <double*>cnp.PyArray_DATA(dx), pk, pq, pr, pm, N, C, S, self.nhwc)
        return (dx, dscale, dbias)


KERNELS = [("batch_norm", BatchNorm, DTYPES), ("batch_norm_grad", BatchNormGrad, DTYPES)]
