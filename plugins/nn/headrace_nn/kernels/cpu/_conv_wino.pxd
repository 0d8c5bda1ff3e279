# cython: language_level=3
"""conv.pyx's Winograd F(2x2, 3x3) forward for float32 NCHW 3x3 convs of stride 1
(_conv_wino.h: why and how): which convs take it, the filter transform, and the images split
over the threads. Only conv.pyx cimports it."""
from cython.parallel cimport prange
from headrace.kernels.threads cimport GEMM_GRAIN, threads_for
from ._im2col cimport Geom

cdef extern from "_conv_wino.h" nogil:
    ctypedef struct hr_wg_geom:
        int Cin, Hin, Win, Cout, Ho, Wo, pt, pl
        const float* bias
        int relu
    void hr_wg_filter(const float* w, int Cout, int Cin, float* u)
    int hr_wg_conv(const float* src, Py_ssize_t img_in, float* out, Py_ssize_t img_out,
                   Py_ssize_t n, const hr_wg_geom* g, const float* u, const float* res)


cdef inline bint wino_fits(const Geom* g) noexcept nogil:
    """3x3, stride 1, no dilation, 8+ channels and 4+ filters a group (3 input channels, the
    first layer's, measured no faster than the direct kernel: the transforms outweigh the
    products saved), 8+ output columns (a 4-column image fills a quarter of each half's 8
    lanes), and a padded buffer within C int offsets."""
    cdef Py_ssize_t room = (<Py_ssize_t>g.Cg * 2 * (g.Ho + 4) * (g.Wo + 32))
    return (g.kh == 3 and g.kw == 3 and g.sh == 1 and g.sw == 1 and g.dh == 1 and
            g.dw == 1 and g.Cg >= 8 and g.Mg >= 4 and g.Wo >= 8 and g.Ho >= 2 and
            room < (1 << 30))


cdef inline Py_ssize_t wino_filter_size(const Geom* g) noexcept nogil:
    """Floats of the transformed filters: [groups][16][Cg][Mg]."""
    return <Py_ssize_t>g.groups * 16 * g.Cg * g.Mg


cdef inline void wino_filter(const float* w, float* u, const Geom* g) noexcept nogil:
    cdef int grp
    cdef Py_ssize_t per = <Py_ssize_t>16 * g.Cg * g.Mg
    for grp in range(g.groups):
        hr_wg_filter(w + grp * <Py_ssize_t>g.Mg * g.Cg * 9, g.Mg, g.Cg, u + grp * per)


cdef inline int wino_images(const float* src, Py_ssize_t img_in, float* out,
                            Py_ssize_t img_out, Py_ssize_t N, const hr_wg_geom* d,
                            const float* u, const float* res) noexcept nogil:
    """hr_wg_conv of N images, split over the threads by whole images as conv_images
    (_conv_direct.pxd) splits the direct kernels'; each image's output is the serial one."""
    cdef double work = (<double>N * d.Ho * d.Wo) * d.Cout * d.Cin * 9
    cdef int t, rc = 0, nt = threads_for(work, GEMM_GRAIN)
    cdef Py_ssize_t i0, i1
    nt = nt if nt < N else <int>N
    if nt <= 1:
        return hr_wg_conv(src, img_in, out, img_out, N, d, u, res)
    for t in prange(nt, nogil=True, num_threads=nt, schedule="static"):
        i0 = N * t // nt
        i1 = N * (t + 1) // nt
        rc |= hr_wg_conv(src + i0 * img_in, img_in, out + i0 * img_out, img_out, i1 - i0, d,
                         u, res + i0 * img_out if res != NULL else NULL)
    return rc


cdef inline int wino_forward(const float* x, const float* u, float* out, Py_ssize_t N,
                             const Geom* g, const float* res, const float* bias,
                             bint relu) noexcept nogil:
    """Output = conv + ``res`` (ResidualData, laid out as Output; NULL: none) + ``bias``
    (NULL: none), relu when ``relu``, of every image and group from the transformed filters
    ``u`` (wino_filter); -1: no memory."""
    cdef hr_wg_geom d
    d.Cin, d.Hin, d.Win, d.Cout, d.Ho, d.Wo, d.pt, d.pl = (g.Cg, g.H, g.W, g.Mg, g.Ho, g.Wo,
                                                           g.pt, g.pl)
    d.relu = relu
    cdef Py_ssize_t hw = <Py_ssize_t>g.H * g.W, P = <Py_ssize_t>g.Ho * g.Wo
    cdef Py_ssize_t per = <Py_ssize_t>16 * g.Cg * g.Mg
    cdef int grp
    for grp in range(g.groups):
        d.bias = bias + <Py_ssize_t>grp * g.Mg if bias != NULL else NULL
        if wino_images(x + <Py_ssize_t>grp * g.Cg * hw, g.C * hw,
                       out + <Py_ssize_t>grp * g.Mg * P, g.M * P, N, &d, u + grp * per,
                       res + <Py_ssize_t>grp * g.Mg * P if res != NULL else NULL):
            return -1
    return 0
