# cython: language_level=3
"""conv.pyx's windows, as inline functions: the geometry struct, im2col (plain, or into the
packed GEMM's panels) and im2row with their adjoints col2im / row2im. Split from conv.pyx to keep
each module to one concern; only conv.pyx cimports it."""
from libc.string cimport memcpy, memset
from headrace.kernels.common cimport real


cdef struct Geom:
    int C, H, W            # input channels (all groups), height, width
    int Cg, Mg, M, groups  # channels and filters per group, filters
    int kh, kw, sh, sw, dh, dw, pt, pl
    int Ho, Wo
    bint direct            # 1x1, stride 1, no padding: no im2col


cdef inline void _span(int off, int stride, int size, int n, int* lo,
                       int* hi) noexcept nogil:
    """Output positions o in [lo, hi) whose input off + o*stride is in [0, size)."""
    cdef int a = 0, b
    if off < 0:
        a = (-off + stride - 1) // stride
    if size - 1 - off < 0:
        b = 0
    else:
        b = (size - 1 - off) // stride + 1
    if b > n:
        b = n
    if a > b:
        a = b
    lo[0] = a
    hi[0] = b


cdef inline void _window_row(real* d, const real* src, int t0, int t1, int lo, int hi, int sw,
                             bint inside) noexcept nogil:
    """d[t] = src[t * sw] for t in [t0, t1) that are in [lo, hi) on a row inside the image
    (``inside``), else 0. Plain loops, not memcpy: the rows are short (Wo values) and the
    compiler vectorizes these, where a call per row would cost more than the copy."""
    cdef int t, a = t1, b = t1
    if inside:
        a = min(max(lo, t0), t1)
        b = min(max(hi, a), t1)
    for t in range(t0, a):
        d[t] = 0
    if sw == 1:
        for t in range(a, b):
            d[t] = src[t]
    else:
        for t in range(a, b):
            d[t] = src[t * sw]
    for t in range(b, t1):
        d[t] = 0


cdef inline void _im2col(const real* img, real* col, Py_ssize_t ld, bint packed,
                         const Geom* g) noexcept nogil:
    """col[(c, i, j), (oh, ow)] = img[c, oh*sh - pt + i*dh, ow*sw - pl + j*dw] or 0; img is the
    group's [Cg, H, W] planes of one image. Rows ``ld`` apart; or, ``packed``, the packed
    GEMM's B panels of a matrix of ld rows (packed_gemm.h: panels of 32 columns, [ld, 32]
    each), which the GEMM reads as they lie, where hr_pgemm_b would copy the whole col matrix
    once more to pack it."""
    cdef int c, i, j, oh, ow, ih, off, lo, hi, Wo = g.Wo, run
    cdef Py_ssize_t r = 0, q
    cdef const real* src
    for c in range(g.Cg):
        for i in range(g.kh):
            for j in range(g.kw):
                off = j * g.dw - g.pl
                _span(off, g.sw, g.W, Wo, &lo, &hi)
                for oh in range(g.Ho):
                    ih = oh * g.sh - g.pt + i * g.dh
                    src = img + (<Py_ssize_t>c * g.H + ih) * g.W + off
                    if not packed:
                        _window_row(col + r * ld + oh * Wo, src, 0, Wo, lo, hi, g.sw,
                                    0 <= ih < g.H)
                        continue
                    ow = 0
                    while ow < Wo:       # the row's stretch inside one panel at a time
                        q = <Py_ssize_t>oh * Wo + ow
                        run = min(32 - <int>(q & 31), Wo - ow)
                        _window_row(col + (q >> 5) * ld * 32 + r * 32 + (q & 31) - ow, src, ow,
                                    ow + run, lo, hi, g.sw, 0 <= ih < g.H)
                        ow += run
                r += 1


cdef inline void _im2row(const real* img, real* row, const Geom* g) noexcept nogil:
    """row[(oh, ow), (i, j, c)] = img[oh*sh - pt + i*dh, ow*sw - pl + j*dw, c] or 0; img
    points at the group's first channel of one [H, W, C] image."""
    cdef int oh, ow, i, j, ih, iw
    cdef Py_ssize_t cg = g.Cg
    for oh in range(g.Ho):
        for ow in range(g.Wo):
            for i in range(g.kh):
                ih = oh * g.sh - g.pt + i * g.dh
                for j in range(g.kw):
                    iw = ow * g.sw - g.pl + j * g.dw
                    if ih < 0 or ih >= g.H or iw < 0 or iw >= g.W:
                        memset(row, 0, cg * sizeof(real))
                    else:
                        memcpy(row, img + (<Py_ssize_t>ih * g.W + iw) * g.C, cg * sizeof(real))
                    row += cg


cdef inline void _col2im(const real* col, real* img, Py_ssize_t ld,
                         const Geom* g) noexcept nogil:
    """The adjoint of _im2col: img[c, oh*sh - pt + i*dh, ow*sw - pl + j*dw] += col[(c, i, j),
    (oh, ow)] for the positions inside the image; img is the group's [Cg, H, W] planes."""
    cdef int c, i, j, oh, ow, ih, off, lo, hi, Wo = g.Wo
    cdef const real* s
    cdef real* dst
    for c in range(g.Cg):
        for i in range(g.kh):
            for j in range(g.kw):
                off = j * g.dw - g.pl
                _span(off, g.sw, g.W, Wo, &lo, &hi)
                for oh in range(g.Ho):
                    ih = oh * g.sh - g.pt + i * g.dh
                    if ih < 0 or ih >= g.H:
                        continue
                    s = col + oh * Wo
                    dst = img + (<Py_ssize_t>c * g.H + ih) * g.W + off
                    if g.sw == 1:
                        for ow in range(lo, hi):
                            dst[ow] += s[ow]
                    else:
                        for ow in range(lo, hi):
                            dst[ow * g.sw] += s[ow]
                col += ld


cdef inline void _row2im(const real* row, real* img, const Geom* g) noexcept nogil:
    """The adjoint of _im2row: img[ih, iw, group channels] += row[(oh, ow), (i, j, c)]."""
    cdef int oh, ow, i, j, ih, iw, c
    cdef int cg = g.Cg
    cdef real* d
    for oh in range(g.Ho):
        for ow in range(g.Wo):
            for i in range(g.kh):
                ih = oh * g.sh - g.pt + i * g.dh
                for j in range(g.kw):
                    iw = ow * g.sw - g.pl + j * g.dw
                    if ih >= 0 and ih < g.H and iw >= 0 and iw < g.W:
                        d = img + (<Py_ssize_t>ih * g.W + iw) * g.C
                        for c in range(cg):
                            d[c] += row[c]
                    row += cg
