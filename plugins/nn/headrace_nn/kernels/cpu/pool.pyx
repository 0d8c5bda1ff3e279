# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""pool2d: max / avg over 2-D windows (plain, global, adaptive), NCHW and NHWC.

The windows of each spatial axis are computed once per call into [start, end) arrays, already
clipped to the input, so one loop serves every mode: plain (strides, paddings, ceil_mode),
global (one window over the plane) and adaptive ([floor(i*in/out), ceil((i+1)*in/out))).
Padding never enters a max; avg divides by the real elements of the window when exclusive (or
adaptive), else by kh*kw as Paddle does. A window with no real element gives 0.
NCHW pools one contiguous plane at a time; NHWC keeps channels innermost, pooling all C values
of an output pixel together so the input is read in order.

pool2d_grad(X, Out, Out@GRAD) -> X@GRAD walks the same windows: max adds each Out@GRAD value to
the first position of its window holding the maximum (the argmax, recomputed from X with the
forward's comparisons, so ties go to the first in row-major order, as Paddle's first
X == Out match); avg spreads Out@GRAD / divisor over the window's real elements, with the
forward's divisor (the real count when exclusive or adaptive, else kh*kw). Out only has its
shape checked. X@GRAD is zeroed plane by plane just before the plane is written (in cache),
and the common 2x2/stride-2 max pooling has an unrolled, branch-free path for its full windows.
The forward has a vectorizable path for those windows too (_max2x2_fwd_rows), and writes
its last Out again when nothing else holds it (recycled: no allocation in a steady run).
NCHW pooling with one window over the whole plane (global, adaptive 1x1, ksize = H x W) runs
_pool_planes.h's vectorized reductions instead (its avg gradient: a fill per plane).
Above ELEMENT_GRAIN values a thread (threads_for), the planes (NCHW) or images (NHWC) are
split between the threads in contiguous shares, forward and gradient: each output is written
by one thread, in the serial order, so the results do not depend on the thread count.
"""
cimport numpy as cnp
from libc.stdlib cimport free, malloc
from libc.string cimport memset
from cpython.object cimport PyObject
from cython.parallel cimport prange
from headrace.kernels.common cimport contiguous, empty, kept, real, recycled, shape_of
from headrace.kernels.threads cimport ELEMENT_GRAIN, threads_for
from ._common cimport expect_shape, float_array, same_float

import numpy as np

from ..host.pool import PoolAttrs

cdef extern from "_pool_planes.h" nogil:
    void hr_avg_planes_f32(const float* x, float* out, Py_ssize_t planes, Py_ssize_t n,
                           double div)
    void hr_avg_planes_f64(const double* x, double* out, Py_ssize_t planes, Py_ssize_t n,
                           double div)
    void hr_max_planes_f32(const float* x, float* out, Py_ssize_t planes, Py_ssize_t n)
    void hr_max_planes_f64(const double* x, double* out, Py_ssize_t planes, Py_ssize_t n)
    void hr_avg_planes_grad_f32(const float* dy, float* dx, Py_ssize_t planes, Py_ssize_t n,
                                double div)
    void hr_avg_planes_grad_f64(const double* dy, double* dx, Py_ssize_t planes,
                                Py_ssize_t n, double div)

cnp.import_array()

DTYPES = ("float32", "float64")


cdef struct Win:
    int H, W, C, Ho, Wo
    int* hs    # hs[oh], he[oh]: rows of window oh; ws, we likewise for columns
    int* he
    int* ws
    int* we
    double area   # kh*kw: the avg divisor when not exclusive
    bint exclusive, is_max


cdef inline bint _takes(real v, real m) noexcept nogil:
    """Whether a max window's running maximum m gives way to v: v is larger, or v is the
    window's first NaN. So a NaN anywhere in a window is its maximum, as NumPy's max and
    argmax have it (a plain v > m kept a NaN only when it came first), and the gradient
    goes to that first NaN."""
    return (v > m) | ((v != v) & (m == m))


cdef inline double _sum(const real* p, Py_ssize_t n) noexcept nogil:
    """The sum of p[:n] in double, in four partial sums from 8 values on (one running sum
    waits for each add's latency: global average pooling took ~6x ONNX Runtime's time)."""
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0
    cdef Py_ssize_t i = 0
    if n >= 8:
        while i + 4 <= n:
            s0 += p[i]
            s1 += p[i + 1]
            s2 += p[i + 2]
            s3 += p[i + 3]
            i += 4
    while i < n:
        s0 += p[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


cdef inline real _max2(real m, real v) noexcept nogil:
    """The running maximum m after v (``_takes``'s rule: NaN wins)."""
    return v if _takes(v, m) else m


cdef void _max2x2_fwd_rows(const real* x, real* out, Py_ssize_t W, Py_ssize_t rows,
                           Py_ssize_t cols, Py_ssize_t wo) noexcept nogil:
    """Stride-2 2x2 max windows that lie inside the plane (the first ``rows`` x ``cols`` of
    the output grid, ``wo`` outputs a row), in two vectorizable steps: the two input rows'
    elementwise maximum (contiguous), then the maximum of its neighbouring pairs, 256 windows
    at a time in a buffer that stays in L1. The general loop's result (a NaN anywhere in the
    window gives NaN, else the maximum) in another order of comparisons: only which of two
    equal zeros (0.0, -0.0) comes out can differ, which no comparison tells apart."""
    cdef Py_ssize_t oh, j0, nb, i
    cdef const real* r0
    cdef const real* r1
    cdef real* o
    cdef real t[512]
    for oh in range(rows):
        r0 = x + 2 * oh * W
        r1 = r0 + W
        o = out + oh * wo
        j0 = 0
        while j0 < cols:
            nb = min(<Py_ssize_t>256, cols - j0)
            for i in range(2 * nb):
                t[i] = _max2(r0[2 * j0 + i], r1[2 * j0 + i])
            for i in range(nb):
                o[j0 + i] = _max2(t[2 * i], t[2 * i + 1])
            j0 += nb


cdef void _plane(const real* x, real* out, const Win* w, int fast_rows,
                 int fast_cols) noexcept nogil:
    """One NCHW plane; its first fast_rows x fast_cols outputs are full stride-2 2x2 max
    windows."""
    cdef int oh, ow, c
    cdef Py_ssize_t y, W = w.W, o
    cdef double acc, n
    cdef real m
    if fast_rows and fast_cols:
        _max2x2_fwd_rows(x, out, W, fast_rows, fast_cols, w.Wo)
    for oh in range(w.Ho):
        for ow in range(fast_cols if oh < fast_rows else 0, w.Wo):
            o = <Py_ssize_t>oh * w.Wo + ow
            n = <double>(w.he[oh] - w.hs[oh]) * (w.we[ow] - w.ws[ow])
            if n <= 0:
                out[o] = 0
                continue
            if w.is_max:
                m = x[w.hs[oh] * W + w.ws[ow]]   # the window holds a real element (n > 0)
                for y in range(w.hs[oh], w.he[oh]):
                    for c in range(w.ws[ow], w.we[ow]):
                        if _takes(x[y * W + c], m):
                            m = x[y * W + c]
                out[o] = m
            elif w.we[ow] - w.ws[ow] == W:   # whole rows (global pooling): one run
                acc = _sum(x + w.hs[oh] * W, (w.he[oh] - w.hs[oh]) * W)
                out[o] = <real>(acc / (n if w.exclusive else w.area))
            else:
                acc = 0.0
                for y in range(w.hs[oh], w.he[oh]):
                    acc += _sum(x + y * W + w.ws[ow], w.we[ow] - w.ws[ow])
                out[o] = <real>(acc / (n if w.exclusive else w.area))


cdef void _pixels(const real* x, real* out, const Win* w, double* acc) noexcept nogil:
    """One NHWC image: each output pixel pools its window for all C channels at once."""
    cdef int oh, ow, y, xx, c, C = w.C
    cdef double n, div
    cdef const real* src
    cdef real* dst
    for oh in range(w.Ho):
        for ow in range(w.Wo):
            dst = out + (<Py_ssize_t>oh * w.Wo + ow) * C
            n = <double>(w.he[oh] - w.hs[oh]) * (w.we[ow] - w.ws[ow])
            if n <= 0:
                for c in range(C):
                    dst[c] = 0
                continue
            if w.is_max:
                src = x + (<Py_ssize_t>w.hs[oh] * w.W + w.ws[ow]) * C
                for c in range(C):
                    dst[c] = src[c]
                for y in range(w.hs[oh], w.he[oh]):
                    for xx in range(w.ws[ow], w.we[ow]):
                        src = x + (<Py_ssize_t>y * w.W + xx) * C
                        for c in range(C):
                            if _takes(src[c], dst[c]):
                                dst[c] = src[c]
            else:
                for c in range(C):
                    acc[c] = 0.0
                for y in range(w.hs[oh], w.he[oh]):
                    for xx in range(w.ws[ow], w.we[ow]):
                        src = x + (<Py_ssize_t>y * w.W + xx) * C
                        for c in range(C):
                            acc[c] += src[c]
                div = n if w.exclusive else w.area
                for c in range(C):
                    dst[c] = <real>(acc[c] / div)


cdef void _share(const real* x, real* out, const Win* w, bint nhwc, double* acc,
                 int fast_rows, int fast_cols, Py_ssize_t p0, Py_ssize_t p1) noexcept nogil:
    """Images (NHWC) or planes (NCHW) p0..p1."""
    cdef Py_ssize_t p, hw = <Py_ssize_t>w.H * w.W, ohw = <Py_ssize_t>w.Ho * w.Wo
    if nhwc:
        for p in range(p0, p1):
            _pixels(x + p * hw * w.C, out + p * ohw * w.C, w, acc)
    else:
        for p in range(p0, p1):
            _plane(x + p * hw, out + p * ohw, w, fast_rows, fast_cols)


cdef void _run(const real* x, real* out, Py_ssize_t N, const Win* w, bint nhwc,
               double* acc, int fast_rows, int fast_cols, int nt) noexcept nogil:
    """Every image or plane, on ``nt`` threads (acc: nt rows of C + 1)."""
    cdef Py_ssize_t P = N if nhwc else N * w.C
    cdef int t
    if nt <= 1:
        _share(x, out, w, nhwc, acc, fast_rows, fast_cols, 0, P)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        _share(x, out, w, nhwc, acc + t * (w.C + 1), fast_rows, fast_cols, P * t // nt,
               P * (t + 1) // nt)


cdef int _threads(const Win* w, Py_ssize_t N, bint nhwc) noexcept nogil:
    """Threads for pooling N images: no more than the shares there are."""
    cdef Py_ssize_t P = N if nhwc else N * w.C
    cdef int nt = threads_for(<double>N * w.C * w.H * w.W, ELEMENT_GRAIN)
    return <int>P if nt > P else nt


cdef void _whole_share(int kind, const char* x, char* out, Py_ssize_t p0, Py_ssize_t p1,
                       Py_ssize_t hw, double div) noexcept nogil:
    """_pool_planes.h's reduction of planes p0..p1 (kind: 0/1 max/avg float32, 2/3 float64;
    4/5 the avg gradient, float32/float64: ``x`` is Out@GRAD, ``out`` X@GRAD)."""
    cdef Py_ssize_t n = p1 - p0
    if kind == 0:
        hr_max_planes_f32(<const float*>x + p0 * hw, <float*>out + p0, n, hw)
    elif kind == 1:
        hr_avg_planes_f32(<const float*>x + p0 * hw, <float*>out + p0, n, hw, div)
    elif kind == 2:
        hr_max_planes_f64(<const double*>x + p0 * hw, <double*>out + p0, n, hw)
    elif kind == 3:
        hr_avg_planes_f64(<const double*>x + p0 * hw, <double*>out + p0, n, hw, div)
    elif kind == 4:
        hr_avg_planes_grad_f32(<const float*>x + p0, <float*>out + p0 * hw, n, hw, div)
    else:
        hr_avg_planes_grad_f64(<const double*>x + p0, <double*>out + p0 * hw, n, hw, div)


cdef void _whole_run(int kind, const char* x, char* out, Py_ssize_t planes, Py_ssize_t hw,
                     double div) noexcept nogil:
    cdef int t, nt = threads_for(<double>planes * hw, ELEMENT_GRAIN)
    nt = <int>planes if nt > planes else nt
    if nt <= 1:
        _whole_share(kind, x, out, 0, planes, hw, div)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        _whole_share(kind, x, out, planes * t // nt, planes * (t + 1) // nt, hw, div)


cdef inline bint _whole(const Win* w) noexcept:
    """Whether the only window is the whole plane (global pooling, adaptive 1x1, a window the
    size of an unpadded input): NCHW then reduces each contiguous plane at once. Its divisor
    stays the general loop's (kh*kw when not exclusive)."""
    return (w.Ho == 1 and w.Wo == 1 and w.hs[0] == 0 and w.he[0] == w.H and w.ws[0] == 0
            and w.we[0] == w.W and w.H > 0 and w.W > 0)


cdef inline double _divisor(const Win* w) noexcept:
    return <double>w.H * w.W if w.exclusive else w.area


cdef int _fill(int* s, int* e, int size, int n, int k, int stride, int pad, bint adaptive):
    """Windows of one axis, clipped to [0, size)."""
    cdef int i
    cdef long long a, b
    for i in range(n):
        if adaptive:
            a = (<long long>i * size) // n
            b = ((<long long>i + 1) * size + n - 1) // n
        else:
            a = i * stride - pad
            b = a + k
        s[i] = <int>min(max(a, 0), size)
        e[i] = <int>max(min(b, size), s[i])
    return 0


cdef class Pool2D:
    cdef object attrs     # the host plan (kernels/host/pool.py), shared with the CUDA kernel
    cdef object last      # the PoolPlan that ``win`` and the scalars below hold
    cdef Win win
    cdef int kh, kw, sh, sw, pt, pl
    cdef bint is_max, adaptive, global_pooling, nhwc
    cdef object _out      # the last Out, written again when nothing else holds it (recycled)

    def __init__(self, dict attrs, info=None):
        self.attrs = PoolAttrs(attrs)
        self.is_max, self.adaptive = self.attrs.is_max, self.attrs.adaptive
        self.global_pooling, self.nhwc = self.attrs.global_pooling, self.attrs.nhwc

    cdef tuple _windows(self, Win* w, tuple xs):
        """Fill ``w`` for X of shape ``xs`` (window tables not yet allocated): the host plan,
        copied into C fields once per shape; Out's shape."""
        p = self.attrs.plan(xs)
        if p is not self.last:
            self.win.C, self.win.H, self.win.W, self.win.Ho, self.win.Wo = \
                p.C, p.H, p.W, p.Ho, p.Wo
            self.win.area = <double>p.kh * p.kw
            self.win.exclusive = p.exclusive
            self.win.is_max = self.is_max
            self.win.hs = self.win.he = self.win.ws = self.win.we = NULL
            self.kh, self.kw, self.sh, self.sw, self.pt, self.pl = \
                p.kh, p.kw, p.sh, p.sw, p.pt, p.pl
            self.last = p
        w[0] = self.win
        return p.oshape

    cdef void _fast(self, const Win* w, int* rows, int* cols) noexcept:
        """The common 2x2/stride-2 max pooling: its windows with no padding in them (the first
        rows x cols outputs) take an unrolled path; those of a padded border or a ceil_mode
        tail the general one. 0 x 0 for any other pooling."""
        rows[0] = cols[0] = 0
        if (self.is_max and self.kh == 2 and self.kw == 2 and self.sh == 2 and self.sw == 2
                and not self.adaptive and not self.global_pooling and self.pt == 0
                and self.pl == 0):
            rows[0], cols[0] = min(w.Ho, w.H // 2), min(w.Wo, w.W // 2)

    cdef int* _tables(self, Win* w) except NULL:
        cdef int* idx = <int*>malloc((2 * (w.Ho + w.Wo) + 1) * sizeof(int))
        if idx == NULL:
            raise MemoryError("pool2d: no memory for the window tables")
        w.hs, w.he = idx, idx + w.Ho
        w.ws, w.we = idx + 2 * w.Ho, idx + 2 * w.Ho + w.Wo
        _fill(w.hs, w.he, w.H, w.Ho, self.kh, self.sh, self.pt, self.adaptive)
        _fill(w.ws, w.we, w.W, w.Wo, self.kw, self.sw, self.pl, self.adaptive)
        return idx

    def __call__(self, x):
        cdef cnp.ndarray a = contiguous(x)
        cdef int t = cnp.PyArray_TYPE(a)
        if t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64:
            raise TypeError(f"pool2d: X has dtype {a.dtype}, expected float32 or float64")
        cdef tuple xs = shape_of(a)
        if len(xs) != 4:
            raise ValueError(f"pool2d: X{list(xs)} must be 4-D")
        cdef Win w
        cdef Py_ssize_t N = xs[0]
        oshape = self._windows(&w, xs)
        cdef cnp.ndarray out = recycled(<PyObject*>self._out, oshape, t)
        self._out = kept(out)   # (None in a pooled run: common.kept)
        if N * w.C * w.Ho * w.Wo == 0:
            return (out,)
        cdef int fast_rows, fast_cols
        self._fast(&w, &fast_rows, &fast_cols)
        cdef int* idx = self._tables(&w)
        cdef Py_ssize_t planes = N * w.C, hw = <Py_ssize_t>w.H * w.W
        cdef double div = _divisor(&w)
        cdef int kind = (0 if self.is_max else 1) + (0 if t == cnp.NPY_FLOAT32 else 2)
        if not self.nhwc and _whole(&w):
            free(idx)
            with nogil:
                _whole_run(kind, <const char*>cnp.PyArray_DATA(a),
                           <char*>cnp.PyArray_DATA(out), planes, hw, div)
            return (out,)
        cdef int nt = _threads(&w, N, self.nhwc)
        cdef double* acc = <double*>malloc(nt * (w.C + 1) * sizeof(double))
        if acc == NULL:
            free(idx)
            raise MemoryError("pool2d: no memory for the window tables")
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _run(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out), N, &w,
                     self.nhwc, acc, fast_rows, fast_cols, nt)
        else:
            with nogil:
                _run(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out), N,
                     &w, self.nhwc, acc, fast_rows, fast_cols, nt)
        free(idx)
        free(acc)
        return (out,)


# -- gradient -----------------------------------------------------------------------------------

cdef void _max2x2_rows(const real* x, const real* dy, real* dx, Py_ssize_t W,
                       Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t wo) noexcept nogil:
    """Stride-2 2x2 max windows that lie inside the plane (the first ``rows`` x ``cols`` of the
    output grid, ``wo`` outputs a row): each Out@GRAD value to its window's first maximum, by
    the forward's sequence of comparisons. The running position is selected with integer
    arithmetic on the comparison bits and the running maximum re-read from it: the position
    is data, and a branch on it (what a C select of floats compiles to) mispredicts half the
    time."""
    cdef Py_ssize_t oh, ow, k
    cdef const real* q
    cdef const real* g
    cdef real* d
    for oh in range(rows):
        q = x + 2 * oh * W
        d = dx + 2 * oh * W
        g = dy + oh * wo
        for ow in range(cols):
            k = <Py_ssize_t>_takes(q[1], q[0])
            k += <Py_ssize_t>_takes(q[W], q[k]) * (W - k)
            k += <Py_ssize_t>_takes(q[W + 1], q[k]) * (W + 1 - k)
            d[k] += g[ow]
            q += 2
            d += 2


cdef void _plane_grad(const real* x, const real* dy, real* dx, const Win* w,
                      int fast_rows, int fast_cols) noexcept nogil:
    """One NCHW plane: dx = the adjoint of _plane (dx is zeroed here, while it is in cache).
    The first fast_rows x fast_cols outputs are full stride-2 2x2 max windows."""
    cdef int oh, ow, c
    cdef Py_ssize_t y, W = w.W, o, arg, k
    cdef double n
    cdef real m, v
    cdef bint gt
    memset(dx, 0, <Py_ssize_t>w.H * W * sizeof(real))
    if fast_rows and fast_cols:
        _max2x2_rows(x, dy, dx, W, fast_rows, fast_cols, w.Wo)
    for oh in range(w.Ho):
        for ow in range(fast_cols if oh < fast_rows else 0, w.Wo):
            o = <Py_ssize_t>oh * w.Wo + ow
            n = <double>(w.he[oh] - w.hs[oh]) * (w.we[ow] - w.ws[ow])
            if n <= 0:
                continue
            if w.is_max:
                arg = w.hs[oh] * W + w.ws[ow]
                m = x[arg]
                for y in range(w.hs[oh], w.he[oh]):
                    for c in range(w.ws[ow], w.we[ow]):
                        k = y * W + c
                        v = x[k]
                        gt = _takes(v, m)
                        m = v if gt else m
                        arg = k if gt else arg
                dx[arg] += dy[o]
            else:
                v = <real>(dy[o] / (n if w.exclusive else w.area))
                for y in range(w.hs[oh], w.he[oh]):
                    for c in range(w.ws[ow], w.we[ow]):
                        dx[y * W + c] += v


cdef void _pixels_grad(const real* x, const real* dy, real* dx, const Win* w, real* best,
                       Py_ssize_t* arg) noexcept nogil:
    """One NHWC image: the adjoint of _pixels; best/arg: scratch of C values."""
    cdef int oh, ow, y, xx, c, C = w.C
    cdef double n, div
    cdef Py_ssize_t p
    cdef bint gt
    cdef const real* src
    cdef const real* g
    cdef real* dst
    memset(dx, 0, <Py_ssize_t>w.H * w.W * C * sizeof(real))
    for oh in range(w.Ho):
        for ow in range(w.Wo):
            g = dy + (<Py_ssize_t>oh * w.Wo + ow) * C
            n = <double>(w.he[oh] - w.hs[oh]) * (w.we[ow] - w.ws[ow])
            if n <= 0:
                continue
            if w.is_max:
                p = (<Py_ssize_t>w.hs[oh] * w.W + w.ws[ow]) * C
                for c in range(C):
                    best[c] = x[p + c]
                    arg[c] = p + c
                for y in range(w.hs[oh], w.he[oh]):
                    for xx in range(w.ws[ow], w.we[ow]):
                        p = (<Py_ssize_t>y * w.W + xx) * C
                        src = x + p
                        for c in range(C):
                            gt = _takes(src[c], best[c])
                            best[c] = src[c] if gt else best[c]
                            arg[c] = p + c if gt else arg[c]
                for c in range(C):
                    dx[arg[c]] += g[c]
            else:
                div = n if w.exclusive else w.area
                for c in range(C):
                    best[c] = <real>(g[c] / div)
                for y in range(w.hs[oh], w.he[oh]):
                    for xx in range(w.ws[ow], w.we[ow]):
                        dst = dx + (<Py_ssize_t>y * w.W + xx) * C
                        for c in range(C):
                            dst[c] += best[c]


cdef void _share_grad(const real* x, const real* dy, real* dx, const Win* w, bint nhwc,
                      real* best, Py_ssize_t* arg, int fast_rows, int fast_cols, Py_ssize_t p0,
                      Py_ssize_t p1) noexcept nogil:
    cdef Py_ssize_t p, hw = <Py_ssize_t>w.H * w.W, ohw = <Py_ssize_t>w.Ho * w.Wo
    if nhwc:
        for p in range(p0, p1):
            _pixels_grad(x + p * hw * w.C, dy + p * ohw * w.C, dx + p * hw * w.C, w, best, arg)
    else:
        for p in range(p0, p1):
            _plane_grad(x + p * hw, dy + p * ohw, dx + p * hw, w, fast_rows, fast_cols)


cdef void _run_grad(const real* x, const real* dy, real* dx, Py_ssize_t N, const Win* w,
                    bint nhwc, real* best, Py_ssize_t* arg, int fast_rows,
                    int fast_cols, int nt) noexcept nogil:
    """Every image or plane, on ``nt`` threads (best, arg: nt rows of C + 1)."""
    cdef Py_ssize_t P = N if nhwc else N * w.C
    cdef int t
    if nt <= 1:
        _share_grad(x, dy, dx, w, nhwc, best, arg, fast_rows, fast_cols, 0, P)
        return
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        _share_grad(x, dy, dx, w, nhwc, best + t * (w.C + 1), arg + t * (w.C + 1), fast_rows,
                    fast_cols, P * t // nt, P * (t + 1) // nt)


cdef class Pool2DGrad(Pool2D):
    """pool2d_grad(X, Out, Out@GRAD) -> (X@GRAD,)."""
    cdef bint want

    def __init__(self, dict attrs, info=None):
        Pool2D.__init__(self, attrs, info)
        self.want = info is None or info.wants("X@GRAD")

    def __call__(self, x, out, dout):
        name = "pool2d_grad"
        cdef cnp.ndarray a = float_array(x, name, "X")
        cdef cnp.ndarray y = float_array(out, name, "Out")
        cdef cnp.ndarray dy = float_array(dout, name, "Out@GRAD")
        same_float(a, y, name, "X", "Out")
        same_float(a, dy, name, "X", "Out@GRAD")
        cdef tuple xs = shape_of(a)
        if len(xs) != 4:
            raise ValueError(f"{name}: X{list(xs)} must be 4-D")
        cdef Win w
        oshape = self._windows(&w, xs)
        expect_shape(y, oshape, name, "Out", "the pooled shape")
        expect_shape(dy, oshape, name, "Out@GRAD", "Out's shape")
        if not self.want:
            return (None,)
        cdef Py_ssize_t N = xs[0]
        if N * w.C * w.Ho * w.Wo == 0:
            return (np.zeros(xs, a.dtype),)
        cdef cnp.ndarray dx = empty(xs, cnp.PyArray_TYPE(a))   # zeroed plane by plane
        cdef int fast_rows, fast_cols
        self._fast(&w, &fast_rows, &fast_cols)
        cdef int* idx = self._tables(&w)
        cdef Py_ssize_t planes = N * w.C, hw = <Py_ssize_t>w.H * w.W
        cdef double div = _divisor(&w)
        cdef int kind = 4 if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT32 else 5
        if not self.nhwc and not self.is_max and _whole(&w):
            free(idx)
            with nogil:
                _whole_run(kind, <const char*>cnp.PyArray_DATA(dy), <char*>cnp.PyArray_DATA(dx),
                           planes, hw, div)
            return (dx,)
        cdef int nt = _threads(&w, N, self.nhwc)
        cdef Py_ssize_t* arg = <Py_ssize_t*>malloc(nt * (w.C + 1) * sizeof(Py_ssize_t))
        cdef double* best = <double*>malloc(nt * (w.C + 1) * sizeof(double))
        if arg == NULL or best == NULL:
            free(idx)
            free(arg)
            free(best)
            raise MemoryError(f"{name}: no memory for the window tables")
        if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT32:
            with nogil:
                _run_grad(<const float*>cnp.PyArray_DATA(a), <const float*>cnp.PyArray_DATA(dy),
                          <float*>cnp.PyArray_DATA(dx), N, &w, self.nhwc, <float*>best, arg,
                          fast_rows, fast_cols, nt)
        else:
            with nogil:
                _run_grad(<const double*>cnp.PyArray_DATA(a),
                          <const double*>cnp.PyArray_DATA(dy), <double*>cnp.PyArray_DATA(dx),
                          N, &w, self.nhwc, best, arg, fast_rows, fast_cols, nt)
        free(idx)
        free(arg)
        free(best)
        return (dx,)


KERNELS = [("pool2d", Pool2D, DTYPES), ("pool2d_grad", Pool2DGrad, DTYPES)]
