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
"""
cimport numpy as cnp
from libc.stdlib cimport free, malloc
from ._common cimport contiguous, empty, real, shape_of

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


cdef void _plane(const real* x, real* out, const Win* w) noexcept nogil:
    """One NCHW plane."""
    cdef int oh, ow, c
    cdef Py_ssize_t y, W = w.W, o
    cdef double acc, n
    cdef real m
    for oh in range(w.Ho):
        for ow in range(w.Wo):
            o = <Py_ssize_t>oh * w.Wo + ow
            n = <double>(w.he[oh] - w.hs[oh]) * (w.we[ow] - w.ws[ow])
            if n <= 0:
                out[o] = 0
                continue
            if w.is_max:
                m = x[w.hs[oh] * W + w.ws[ow]]   # the window holds a real element (n > 0)
                for y in range(w.hs[oh], w.he[oh]):
                    for c in range(w.ws[ow], w.we[ow]):
                        if x[y * W + c] > m:
                            m = x[y * W + c]
                out[o] = m
            else:
                acc = 0.0
                for y in range(w.hs[oh], w.he[oh]):
                    for c in range(w.ws[ow], w.we[ow]):
                        acc += x[y * W + c]
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
                            if src[c] > dst[c]:
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


cdef void _run(const real* x, real* out, Py_ssize_t N, const Win* w, bint nhwc,
               double* acc) noexcept nogil:
    cdef Py_ssize_t p, hw = <Py_ssize_t>w.H * w.W, ohw = <Py_ssize_t>w.Ho * w.Wo
    if nhwc:
        for p in range(N):
            _pixels(x + p * hw * w.C, out + p * ohw * w.C, w, acc)
    else:
        for p in range(N * w.C):
            _plane(x + p * hw, out + p * ohw, w)


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
    cdef bint is_max, global_pooling, exclusive, adaptive, ceil_mode, nhwc
    cdef int kh, kw, sh, sw, algo
    cdef list paddings

    def __init__(self, dict attrs, info=None):
        ptype = attrs.get("pooling_type", "max")
        if ptype not in ("max", "avg"):
            raise ValueError(f"pool2d: pooling_type must be 'max' or 'avg', got {ptype!r}")
        self.is_max = ptype == "max"
        ksize, strides = list(attrs["ksize"]), list(attrs.get("strides", [1, 1]))
        if len(ksize) != 2 or min(ksize) < 1 or len(strides) != 2 or min(strides) < 1:
            raise ValueError(f"pool2d: ksize {ksize} and strides {strides} must hold 2 "
                             f"values >= 1")
        self.kh, self.kw = ksize
        self.sh, self.sw = strides
        pads = list(attrs.get("paddings", [0, 0]))
        if len(pads) == 2:
            pads = [pads[0], pads[0], pads[1], pads[1]]
        if len(pads) != 4 or min(pads) < 0:
            raise ValueError(f"pool2d: paddings must hold 2 or 4 values >= 0, got "
                             f"{attrs.get('paddings')}")
        self.paddings = pads
        self.global_pooling = attrs.get("global_pooling", False)
        self.exclusive = attrs.get("exclusive", True)
        self.adaptive = attrs.get("adaptive", False)
        self.ceil_mode = attrs.get("ceil_mode", False)
        self.nhwc = attrs.get("data_format", "NCHW") == "NHWC"
        algo = attrs.get("padding_algorithm", "EXPLICIT")
        self.algo = {"EXPLICIT": 0, "SAME": 1, "VALID": 2}.get(algo, -1)
        if self.algo < 0:
            raise ValueError(f"pool2d: unknown padding_algorithm {algo!r}")

    cdef tuple _plan(self, int H, int W):
        """(Ho, Wo, kh, kw, pads top/left, exclusive) for an H x W input."""
        kh, kw = self.kh, self.kw
        pt, pb, pl, pr = self.paddings
        if self.adaptive:
            ho, wo = (H, W) if self.global_pooling else (kh, kw)
            return ho, wo, kh, kw, 0, 0, True
        if self.global_pooling:
            return 1, 1, H, W, 0, 0, self.exclusive
        if self.algo == 2:
            pt = pb = pl = pr = 0
        elif self.algo == 1:
            th = max(((H + self.sh - 1) // self.sh - 1) * self.sh + kh - H, 0)
            tw = max(((W + self.sw - 1) // self.sw - 1) * self.sw + kw - W, 0)
            pt, pb, pl, pr = th // 2, th - th // 2, tw // 2, tw - tw // 2
        if max(H + pt + pb + self.sh + kh, W + pl + pr + self.sw + kw) > 2147483647:
            raise ValueError(f"pool2d: the padded plane [{H}+{pt}+{pb}, {W}+{pl}+{pr}] exceeds "
                             f"the C int range of the kernel")
        ch = self.sh - 1 if self.ceil_mode else 0
        cw = self.sw - 1 if self.ceil_mode else 0
        ho = (H - kh + pt + pb + ch) // self.sh + 1
        wo = (W - kw + pl + pr + cw) // self.sw + 1
        if ho <= 0 or wo <= 0:
            raise ValueError(f"pool2d: the input plane [{H}, {W}] is smaller than the window "
                             f"[{kh}, {kw}] plus paddings [{pt}, {pb}, {pl}, {pr}]")
        return ho, wo, kh, kw, pt, pl, self.exclusive

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
        if self.nhwc:
            w.H, w.W, w.C = xs[1], xs[2], xs[3]
        else:
            w.C, w.H, w.W = xs[1], xs[2], xs[3]
        ho, wo, kh, kw, pt, pl, w.exclusive = self._plan(w.H, w.W)
        w.Ho, w.Wo = ho, wo
        w.area = <double>kh * kw
        w.is_max = self.is_max
        oshape = (N, w.Ho, w.Wo, w.C) if self.nhwc else (N, w.C, w.Ho, w.Wo)
        cdef cnp.ndarray out = empty(oshape, t)
        if N * w.C * w.Ho * w.Wo == 0:
            return (out,)
        cdef int* idx = <int*>malloc(2 * (w.Ho + w.Wo) * sizeof(int))
        cdef double* acc = <double*>malloc((w.C + 1) * sizeof(double))
        if idx == NULL or acc == NULL:
            free(idx)
            free(acc)
            raise MemoryError("pool2d: no memory for the window tables")
        w.hs, w.he = idx, idx + w.Ho
        w.ws, w.we = idx + 2 * w.Ho, idx + 2 * w.Ho + w.Wo
        _fill(w.hs, w.he, w.H, w.Ho, kh, self.sh, pt, self.adaptive)
        _fill(w.ws, w.we, w.W, w.Wo, kw, self.sw, pl, self.adaptive)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                _run(<const float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(out), N, &w,
                     self.nhwc, acc)
        else:
            with nogil:
                _run(<const double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(out), N,
                     &w, self.nhwc, acc)
        free(idx)
        free(acc)
        return (out,)


KERNELS = [("pool2d", Pool2D, DTYPES)]
