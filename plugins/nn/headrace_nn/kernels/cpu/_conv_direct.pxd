# cython: language_level=3
"""conv.pyx's float32 NCHW convolutions without a col matrix (_conv_direct.h: why and how),
per group: the forward, the filter gradient, and the input gradient of a stride-1 conv. Only
conv.pyx cimports it."""
from cython.parallel cimport prange
from libc.stdlib cimport free, malloc
from headrace.kernels.threads cimport GEMM_GRAIN, threads_for
from ._im2col cimport Geom

cdef extern from "_conv_direct.h" nogil:
    ctypedef struct hr_cd_geom:
        int Cin, Hin, Win, Cout, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl
        const float* bias
        int relu
    int hr_conv_direct_ok()
    int hr_cd_s2t_on   # column stride 2 read in place (_conv_s2.h), else the padded copy
    int hr_cd_conv(const float* src, Py_ssize_t img_in, float* out, Py_ssize_t img_out,
                   Py_ssize_t n, const hr_cd_geom* g, const float* wt, int acc)
    int hr_cd_filter_grad(const float* src, Py_ssize_t img_in, const float* dy,
                          Py_ssize_t img_dy, Py_ssize_t n, const hr_cd_geom* g, float* dw)


cdef inline int conv_images(const float* src, Py_ssize_t img_in, float* out,
                            Py_ssize_t img_out, Py_ssize_t N, const hr_cd_geom* d,
                            const float* wt, int acc) noexcept nogil:
    """hr_cd_conv of N images, split over hr.set_num_threads' threads by whole images from
    GEMM_GRAIN multiply-adds a thread (each image's output is the serial one)."""
    cdef double work = (<double>N * d.Ho * d.Wo) * d.Cout * d.Cin * d.kh * d.kw
    cdef int t, rc = 0, nt = threads_for(work, GEMM_GRAIN)
    cdef Py_ssize_t i0, i1
    nt = nt if nt < N else <int>N
    if nt <= 1:
        return hr_cd_conv(src, img_in, out, img_out, N, d, wt, acc)
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        i0 = N * t // nt
        i1 = N * (t + 1) // nt
        rc |= hr_cd_conv(src + i0 * img_in, img_in, out + i0 * img_out, img_out, i1 - i0, d,
                         wt, acc)
    return rc


cdef inline int filter_grad_split(const float* src, Py_ssize_t img_in, const float* dy,
                                  Py_ssize_t img_dy, Py_ssize_t N, const hr_cd_geom* d,
                                  float* dw) noexcept nogil:
    """hr_cd_filter_grad split over the threads by filters, in shares of whole 4-filter tiles
    (each filter summed over the images as serially; every thread pads the images itself)."""
    cdef double work = (<double>N * d.Ho * d.Wo) * d.Cout * d.Cin * d.kh * d.kw
    cdef int t, rc = 0, nt = threads_for(work, GEMM_GRAIN), tiles = d.Cout // 4
    cdef int m0, m1
    cdef Py_ssize_t K = <Py_ssize_t>d.Cin * d.kh * d.kw, P = <Py_ssize_t>d.Ho * d.Wo
    cdef hr_cd_geom part
    nt = nt if nt < tiles else tiles
    if nt <= 1:
        return hr_cd_filter_grad(src, img_in, dy, img_dy, N, d, dw)
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        m0 = tiles * t // nt * 4
        m1 = d.Cout if t == nt - 1 else tiles * (t + 1) // nt * 4
        part = d[0]
        part.Cout = m1 - m0
        rc |= hr_cd_filter_grad(src, img_in, dy + m0 * P, img_dy, N, &part, dw + m0 * K)
    return rc


cdef inline void set_s2_in_place(bint on) noexcept nogil:
    global hr_cd_s2t_on
    hr_cd_s2t_on = on


cdef inline bint direct_rows(int wo) noexcept nogil:
    """Whether rows of ``wo`` outputs fill the kernel's 16-lane vectors well enough (3/4):
    LeNet-2's 8-wide rows would waste half of every multiply, and stay on im2col + GEMM."""
    return wo * 4 >= ((wo + 15) // 16) * 16 * 3


cdef inline bint _direct_shape_ok(const Geom* g) noexcept nogil:
    """Rows that fill the vectors, at most 1024 taps (a tile's input window then outgrows the
    L1 cache), and the padded buffers' offsets within C ints (a generous bound on both
    directions' buffers)."""
    cdef Py_ssize_t taps = <Py_ssize_t>g.Cg * g.kh * g.kw
    cdef Py_ssize_t room = (<Py_ssize_t>(g.Cg + g.Mg) * g.sw * (g.H + g.Ho + 2 * g.kh * g.dh) *
                            (g.W + g.Wo + 2 * g.kw * g.dw))
    return direct_rows(g.Wo) and taps <= 1024 and room < (1 << 30) and hr_conv_direct_ok()


cdef inline bint direct_fits(const Geom* g) noexcept nogil:
    """Convs the kernels take, forward and filter gradient: _direct_shape_ok's, of more than
    one tap (a 1x1 filter's 16 taps per output measured slower than its GEMM: the per-image
    copy outweighs the products)."""
    return g.kh * g.kw > 1 and _direct_shape_ok(g)


cdef inline bint direct_forward_fits(const Geom* g) noexcept nogil:
    """The forward also takes strided 1x1 filters (a ResNet shortcut's projection): there
    im2col's strided copy, the GEMM and Bias, ResidualData and relu as passes of their own
    took 3x ONNX Runtime's time at batch 64 (16 -> 32 channels, 32x32 -> 16x16: 719 -> ~600
    us; its filter and input gradients stay on im2col + GEMM, not measured here)."""
    return direct_fits(g) or (g.kh * g.kw == 1 and (g.sh > 1 or g.sw > 1) and
                              _direct_shape_ok(g))


cdef inline bint direct_input_fits(const Geom* g) noexcept nogil:
    """Whether the input gradient goes through direct_input_grad: stride 1, input rows that
    fill the vectors, and 4+ channels a group (its outputs; 1-3 filters a tile measured no
    faster than col2im)."""
    return g.sh == 1 and g.sw == 1 and direct_rows(g.W) and g.Cg >= 4


cdef inline hr_cd_geom forward_geom(const Geom* g) noexcept nogil:
    cdef hr_cd_geom d
    d.Cin, d.Hin, d.Win, d.Cout, d.Ho, d.Wo = g.Cg, g.H, g.W, g.Mg, g.Ho, g.Wo
    d.kh, d.kw, d.sh, d.sw, d.dh, d.dw, d.pt, d.pl = (g.kh, g.kw, g.sh, g.sw, g.dh, g.dw,
                                                      g.pt, g.pl)
    d.bias, d.relu = NULL, 0
    return d


cdef inline int direct_forward(const float* x, const float* w, float* out, Py_ssize_t N,
                               const Geom* g, bint acc, const float* bias,
                               bint relu) noexcept nogil:
    """Output (+ Output when ``acc``) of every image and group, + ``bias`` [M] (NULL: none),
    then relu when ``relu``: both in the kernel's store; -1: no memory."""
    cdef hr_cd_geom d = forward_geom(g)
    d.relu = relu
    cdef Py_ssize_t K = <Py_ssize_t>g.Cg * g.kh * g.kw, hw = <Py_ssize_t>g.H * g.W
    cdef Py_ssize_t P = <Py_ssize_t>g.Ho * g.Wo, t, m
    cdef int grp, rc = 0
    cdef float* wt = <float*>malloc(K * g.Mg * sizeof(float))   # [K, Mg]: tap-major
    if wt == NULL:
        return -1
    for grp in range(g.groups):
        for m in range(g.Mg):
            for t in range(K):
                wt[t * g.Mg + m] = w[(<Py_ssize_t>grp * g.Mg + m) * K + t]
        d.bias = bias + <Py_ssize_t>grp * g.Mg if bias != NULL else NULL
        rc = conv_images(x + <Py_ssize_t>grp * g.Cg * hw, g.C * hw,
                         out + <Py_ssize_t>grp * g.Mg * P, g.M * P, N, &d, wt, acc)
        if rc:
            break
    free(wt)
    return rc


cdef inline int direct_filter_grad(const float* x, const float* dy, float* dw, Py_ssize_t N,
                                   const Geom* g) noexcept nogil:
    """Filter@GRAD [M, Cg*kh*kw] += over every image; -1: no memory."""
    cdef hr_cd_geom d = forward_geom(g)
    cdef Py_ssize_t K = <Py_ssize_t>g.Cg * g.kh * g.kw, hw = <Py_ssize_t>g.H * g.W
    cdef Py_ssize_t P = <Py_ssize_t>g.Ho * g.Wo
    cdef int grp
    for grp in range(g.groups):
        if filter_grad_split(x + <Py_ssize_t>grp * g.Cg * hw, g.C * hw,
                             dy + <Py_ssize_t>grp * g.Mg * P, g.M * P, N, &d,
                             dw + <Py_ssize_t>grp * g.Mg * K):
            return -1
    return 0


cdef inline int direct_input_grad(const float* w, const float* dy, float* dx, Py_ssize_t N,
                                  const Geom* g) noexcept nogil:
    """Input@GRAD of a stride-1 conv: Output@GRAD correlated with the filter flipped and
    transposed, dX[c, y, x] = sum W[m, c, i, j] dY[m, y + pt - i*dh, x + pl - j*dw], written
    (not added) into dx; -1: no memory."""
    cdef hr_cd_geom d
    d.Cin, d.Hin, d.Win, d.Cout, d.Ho, d.Wo = g.Mg, g.Ho, g.Wo, g.Cg, g.H, g.W
    d.kh, d.kw, d.sh, d.sw, d.dh, d.dw = g.kh, g.kw, 1, 1, g.dh, g.dw
    d.pt = (g.kh - 1) * g.dh - g.pt
    d.pl = (g.kw - 1) * g.dw - g.pl
    d.bias, d.relu = NULL, 0
    cdef Py_ssize_t K = <Py_ssize_t>g.Cg * g.kh * g.kw, hw = <Py_ssize_t>g.H * g.W
    cdef Py_ssize_t P = <Py_ssize_t>g.Ho * g.Wo, kk = <Py_ssize_t>g.kh * g.kw
    cdef Py_ssize_t m, c, i, j
    cdef int grp, rc = 0
    cdef float* wt = <float*>malloc(K * g.Mg * sizeof(float))   # [(m, i', j'), c]
    if wt == NULL:
        return -1
    for grp in range(g.groups):
        for m in range(g.Mg):
            for c in range(g.Cg):
                for i in range(g.kh):
                    for j in range(g.kw):
                        wt[((m * g.kh + g.kh - 1 - i) * g.kw + g.kw - 1 - j) * g.Cg + c] = \
                            w[((<Py_ssize_t>grp * g.Mg + m) * g.Cg + c) * kk + i * g.kw + j]
        rc = conv_images(dy + <Py_ssize_t>grp * g.Mg * P, g.M * P,
                         dx + <Py_ssize_t>grp * g.Cg * hw, g.C * hw, N, &d, wt, 0)
        if rc:
            break
    free(wt)
    return rc
