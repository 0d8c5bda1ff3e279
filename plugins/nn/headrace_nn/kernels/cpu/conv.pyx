# cython: language_level=3, boundscheck=False, cdivision=True
# wraparound stays on: shapes are Python tuples indexed from the end (xs[-1], xs[:-1]); the
# C loops index raw pointers, which it never touches.
"""conv2d as im2col + GEMM (the core's packed GEMM for float32, else BLAS), NCHW and NHWC;
float32 NCHW convs of 2+ taps whose output rows fill 16-float vectors go without a col matrix
on AVX-512 CPUs (_conv_direct.h: forward, filter gradient, stride-1 input gradient), and the
forward of 3x3 stride-1 ones with 8+ channels through Winograd F(2x2, 3x3) (_conv_wino.h).

The batch is processed in chunks of images sized so that the chunk's col matrix stays within a
few MB (cache-friendly), with one GEMM per chunk and group:
- NCHW: col[K, chunk*P] holds the K = C/g*kh*kw taps of each of the P = Ho*Wo output positions
  of every image of the chunk; tmp[M/g, chunk*P] = Filter_g [M/g, K] @ col is then unpacked
  into Output[n, group rows] (one contiguous [M/g, P] block per image); a one-image chunk's
  GEMM writes that block directly. A 1x1 filter with stride 1 and no padding needs no im2col:
  an image's [C/g, H*W] planes are its col matrix.
- NHWC: row[chunk*P, K] holds each position's taps with channels innermost (contiguous copies of
  C/g channels); the filter is reordered once per call to [M, kh, kw, C/g], and
  Output rows [chunk*P, M] (the group's columns, ldc = M) = row @ Filter_g^T: already NHWC.
  A 1x1 filter with stride 1 and no padding needs no copy at all: the input is the row matrix.

Bias and ResidualData prefill Output; the GEMM (NHWC) or the unpack (NCHW) then accumulates,
so neither costs a pass of its own. Row-major C = A @ B is the column-major C^T = B^T A^T (see
math's matmul.pyx), so no operand is ever transposed in memory.

conv2d_grad(Input, Filter, Output@GRAD) -> Input@GRAD, Filter@GRAD, Bias@GRAD,
ResidualData@GRAD, each computed only when bound. Same chunks and the same im2col/im2row:
- NCHW: the chunk's Output@GRAD of a group is packed into dY [Mg, chunk*P] (one copy; no copy
  for a one-image chunk, whose [Mg, P] block is already a matrix with ld P).
  Filter@GRAD_g^T [K, Mg] += col @ dY^T (this orientation measured faster than dY @ col^T),
  transposed into Filter@GRAD at the end; col [K, chunk*P] = Filter_g^T @ dY, then col2im adds
  each column back onto the input positions it was read from. 1x1/stride 1/no padding: per
  image, Filter@GRAD_g += dY_g @ X_g^T and Input@GRAD_g = Filter_g^T @ dY_g, no col matrix.
- NHWC: the chunk's Output@GRAD rows [chunk*P, M] are used in place (the group's columns,
  lda = M). Filter@GRAD_g (in the [M, kh, kw, C/g] row order) += dY_g^T @ row;
  row = dY_g @ Filter_g, then row2im. A 1x1/stride 1/no-padding filter needs neither.
Bias@GRAD sums Output@GRAD over images and positions; ResidualData@GRAD is a copy of it.
"""
cimport numpy as cnp
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy, memset
from headrace.kernels.common cimport contiguous, empty, real, shape_of
from headrace.kernels.packed_gemm cimport hr_pgemm, hr_pgemm_ok, hr_pgemm_packed_size
from ._common cimport expect_shape, fast_gemm, float_array, gemm
from ._conv_direct cimport (direct_filter_grad, direct_fits, direct_forward,
                            direct_forward_fits, direct_input_fits, direct_input_grad,
                            hr_conv_direct_ok, set_s2_in_place)
from ._conv_wino cimport wino_filter, wino_filter_size, wino_fits, wino_forward
from ._im2col cimport Geom, _col2im, _im2col, _im2row, _row2im

import numpy as np

from ..host.conv import GRADS, ConvAttrs
from ..host._common import wanted

cnp.import_array()

DTYPES = ("float32", "float64")
cdef Py_ssize_t INT_MAX = 2147483647
# Bytes of the col matrix of one chunk of images (at least one image per chunk): about what
# measured fastest for LeNet-sized layers, the col matrix staying in the caches.
cdef Py_ssize_t CHUNK_BYTES = 1 << 20
# The gradient's GEMMs run fastest with a few hundred columns per call (measured on the LeNet
# layers with OpenBLAS: a 1-image chunk for 28x28 outputs, 2-4 images for 8x8 ones), and a col
# buffer of at most 512 KB.
cdef Py_ssize_t GRAD_CHUNK_COLS = 256
cdef Py_ssize_t GRAD_CHUNK_BYTES = 1 << 19
# float32 NCHW on _conv_direct.h's kernels (no col matrix) where they apply (direct_fits);
# False: im2col + GEMM everywhere (the tests compare both; the benchmarks' A/B).
DIRECT = True
DIRECT_OK = bool(hr_conv_direct_ok())   # the CPU has them (AVX-512)
# With DIRECT: the forward of wino_fits' convs through Winograd F(2x2, 3x3); False: on the
# direct kernels (the tests compare both).
WINOGRAD = True


cdef inline void _gemm(bint trans_b, int M, int N, int K, const real* A, int lda,
                       const real* B, int ldb, real beta, real* C, int ldc) noexcept nogil:
    """Row-major C[M, N] = A[M, K] @ op(B) + beta * C; op(B) = B^T [N, K] when trans_b."""
    fast_gemm(False, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc)


cdef void _unpack(const real* tmp, real* out, Py_ssize_t n0, Py_ssize_t b, int grp,
                  Py_ssize_t nb, const Geom* g, bint accumulate) noexcept nogil:
    """NCHW: image b of the chunk's GEMM result tmp [Mg, nb*P] into out[n0 + b, group rows]."""
    cdef Py_ssize_t P = <Py_ssize_t>g.Ho * g.Wo, m, p
    cdef const real* s
    cdef real* d
    for m in range(g.Mg):
        s = tmp + m * nb * P + b * P
        d = out + ((n0 + b) * g.M + <Py_ssize_t>grp * g.Mg + m) * P
        if accumulate:
            for p in range(P):
                d[p] += s[p]
        else:
            memcpy(d, s, P * sizeof(real))


cdef int _run(const real* x, const real* w, real* out, Py_ssize_t N, const Geom* g,
              bint nhwc, bint accumulate, Py_ssize_t chunk, bint direct, const real* bias,
              bint relu) noexcept nogil:
    """Every image, ``chunk`` images per GEMM; -1 when scratch memory is lacking.

    One GEMM per chunk and group ([Mg, K] x [K, chunk*P]) keeps a multi-threaded BLAS busy
    (per-image products are too small for it to split well) while the chunk's col matrix
    stays small enough for the caches. No OpenMP here: BLAS already brings threads when it is
    allowed them, and OpenMP workers spinning beside BLAS's own pool (or a threaded BLAS called
    from several threads) made it several times slower than one thread in measurements.
    """
    cdef Py_ssize_t K = <Py_ssize_t>g.Cg * g.kh * g.kw, P = <Py_ssize_t>g.Ho * g.Wo
    cdef Py_ssize_t hw = <Py_ssize_t>g.H * g.W, n0, nb, b
    cdef const real* wg
    cdef real beta = 1 if accumulate else 0
    cdef int grp
    if nhwc and g.direct:
        # 1x1, stride 1, no padding: the images are the [N*H*W, C] row matrix already; only
        # the int range of BLAS splits it.
        n0 = 0
        while n0 < N:
            nb = min(INT_MAX // P, N - n0)
            for grp in range(g.groups):
                _gemm(True, <int>(nb * P), g.Mg, <int>K, x + n0 * P * g.C + grp * g.Cg, g.C,
                      w + <Py_ssize_t>grp * g.Mg * K, <int>K, beta,
                      out + n0 * P * g.M + grp * g.Mg, g.M)
            n0 += nb
        return 0
    if real is float and direct and not nhwc and direct_forward_fits(g):
        return direct_forward(x, w, out, N, g, accumulate, bias, relu)
    if g.direct:
        # NCHW 1x1, stride 1, no padding: an image's [C, H*W] planes are its im2col matrix;
        # Output[n, group rows] = Filter_g [Mg, Cg] @ X_g [Cg, H*W], nothing copied.
        for n0 in range(N):
            for grp in range(g.groups):
                _gemm(False, g.Mg, <int>P, <int>K, w + <Py_ssize_t>grp * g.Mg * K, <int>K,
                      x + (n0 * g.C + <Py_ssize_t>grp * g.Cg) * hw, <int>P, beta,
                      out + (n0 * g.M + <Py_ssize_t>grp * g.Mg) * P, <int>P)
        return 0
    # float32 NCHW on the packed GEMM (see fast_gemm's rule), im2col writing its panels, one
    # image per GEMM: where an image has 512+ output positions (16+ panels). Smaller images
    # measured faster in multi-image chunks (LeNet-2's 8x8 outputs: 10%; 16x16: 0-7%).
    cdef bint packed = (real is float and not nhwc and P >= 512 and
                        <Py_ssize_t>g.Mg * P * K >= 65536 and hr_pgemm_ok())
    cdef Py_ssize_t ncol = K * chunk * P
    if packed:
        # Measured: one image per GEMM is as fast as several here, and needs no unpacking.
        chunk = 1
        ncol = hr_pgemm_packed_size(<int>K, <int>P)
    cdef real* col = <real*>malloc(ncol * sizeof(real))
    cdef real* tmp = NULL
    if not nhwc and chunk > 1:   # a one-image chunk's GEMM writes into Output directly
        tmp = <real*>malloc(<Py_ssize_t>g.Mg * chunk * P * sizeof(real))
    if col == NULL or (not nhwc and chunk > 1 and tmp == NULL):
        free(col)
        free(tmp)
        return -1
    if packed and P & 31:   # the last panel's lanes past the columns: zeros, once
        memset(col + (P >> 5) * K * 32, 0, K * 32 * sizeof(real))
    n0 = 0
    while n0 < N:
        nb = min(chunk, N - n0)
        for grp in range(g.groups):
            wg = w + <Py_ssize_t>grp * g.Mg * K
            if nhwc:
                # Rows of consecutive images follow each other, as do their output rows.
                for b in range(nb):
                    _im2row(x + (n0 + b) * hw * g.C + grp * g.Cg, col + b * P * K, g)
                _gemm(True, <int>(nb * P), g.Mg, <int>K, col, <int>K, wg, <int>K, beta,
                      out + n0 * P * g.M + grp * g.Mg, g.M)
            elif packed:
                # One image per GEMM (chunk 1), straight into its [Mg, P] block of Output.
                _im2col(x + (n0 * g.C + <Py_ssize_t>grp * g.Cg) * hw, col, K, True, g)
                hr_pgemm(g.Mg, <int>P, <int>K, <const float*>wg, K, 1, <float*>col,
                         <float*>out + (n0 * g.M + <Py_ssize_t>grp * g.Mg) * P, P, accumulate)
            else:
                for b in range(nb):
                    _im2col(x + ((n0 + b) * g.C + <Py_ssize_t>grp * g.Cg) * hw, col + b * P,
                            nb * P, False, g)
                if nb == 1:
                    # One image: its [Mg, P] block of Output is a matrix with ld P already.
                    _gemm(False, g.Mg, <int>P, <int>K, wg, <int>K, col, <int>P, beta,
                          out + (n0 * g.M + <Py_ssize_t>grp * g.Mg) * P, <int>P)
                    continue
                _gemm(False, g.Mg, <int>(nb * P), <int>K, wg, <int>K, col, <int>(nb * P), 0,
                      tmp, <int>(nb * P))
                for b in range(nb):
                    _unpack(tmp, out, n0, b, grp, nb, g, accumulate)
        n0 += nb
    free(col)
    free(tmp)
    return 0


cdef cnp.ndarray _into(object into, object like, int t):
    """``into`` checked to be a writable C-contiguous array of dtype ``t`` and the shape of
    ``like`` (a shape, or the ResidualData to copy into it), as the C loops write it blind."""
    cdef tuple shape = like if type(like) is tuple else like.shape
    if type(into) is not cnp.ndarray or cnp.PyArray_TYPE(<cnp.ndarray>into) != t or \
            not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>into) or \
            not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>into) or into.shape != shape:
        raise ValueError(f"conv2d: the array to write Output into must be a writable "
                         f"C-contiguous {'float32' if t == cnp.NPY_FLOAT32 else 'float64'}"
                         f"{list(shape)}")
    if type(like) is not tuple:
        np.copyto(into, like)
    return <cnp.ndarray>into


cdef void _relu(real* p, Py_ssize_t n) noexcept nogil:
    """relu in place, as math's relu kernel: 0 where p < 0, so NaN and -0.0 pass through."""
    cdef Py_ssize_t i
    for i in range(n):
        p[i] = 0 if p[i] < 0 else p[i]


cdef class Conv2D:
    cdef object attrs      # the host plan (kernels/host/conv.py), shared with the CUDA kernel
    cdef object last       # the Geometry that ``geo`` holds
    cdef Geom geo
    cdef bint nhwc
    cdef str name
    cdef cnp.ndarray wino_w   # the Filter values wino_u was transformed from
    cdef cnp.ndarray wino_u   # their Winograd transform (_conv_wino.pxd's wino_filter)

    def __init__(self, dict attrs, info=None):
        self.name = "conv2d"
        self.attrs = ConvAttrs(attrs)
        self.nhwc = self.attrs.nhwc

    cdef void _geometry(self, Geom* g, tuple xs, tuple ws) except *:
        """Fill ``g`` for Input ``xs`` and Filter ``ws``: the host plan's Geometry (checked to
        fit a C int there), copied into the C struct once per shape."""
        geo = self.attrs.geometry(self.name, xs, ws)
        if geo is not self.last:
            (C, H, W, Cg, groups, kh, kw, sh, sw, dh, dw, pt, pl, Ho, Wo, M, Mg,
             direct) = geo[:18]
            self.geo.C, self.geo.H, self.geo.W, self.geo.Cg = C, H, W, Cg
            self.geo.M, self.geo.Mg, self.geo.groups = M, Mg, groups
            self.geo.kh, self.geo.kw, self.geo.sh, self.geo.sw = kh, kw, sh, sw
            self.geo.dh, self.geo.dw, self.geo.pt, self.geo.pl = dh, dw, pt, pl
            self.geo.Ho, self.geo.Wo, self.geo.direct = Ho, Wo, direct
            self.last = geo
        g[0] = self.geo

    cdef cnp.ndarray _wino_filter(self, cnp.ndarray w, const Geom* g):
        """The Winograd transform of Filter ``w``, kept while Filter holds the values it was
        made from: compared whole each call (a few us for the small ResNet's filters, where
        transforming them took ~20 us a layer); an inference program's filters never change,
        a training step's change every step and are transformed again."""
        cdef cnp.ndarray k = self.wino_w
        if k is not None and shape_of(k) == shape_of(w) and memcmp(
                cnp.PyArray_DATA(k), cnp.PyArray_DATA(w), cnp.PyArray_NBYTES(w)) == 0:
            return self.wino_u
        cdef cnp.ndarray u = np.empty(wino_filter_size(g), np.float32)
        with nogil:
            wino_filter(<const float*>cnp.PyArray_DATA(w), <float*>cnp.PyArray_DATA(u), g)
        self.wino_w, self.wino_u = w.copy(), u
        return u

    def __call__(self, input, filter, bias=None, residual=None, into=None, bint relu=False):
        """``into``: an array to write Output into instead of a new one (fused_conv.pyx's
        recycled Output: nothing else may reference it). ``relu``: Output = relu(conv +
        Bias + ResidualData) (fused_conv2d_add_act's activation)."""
        cdef cnp.ndarray x = contiguous(input)
        cdef cnp.ndarray w = contiguous(filter)
        cdef int t = cnp.PyArray_TYPE(x)
        if (t != cnp.NPY_FLOAT32 and t != cnp.NPY_FLOAT64) or cnp.PyArray_TYPE(w) != t:
            raise TypeError(f"conv2d: Input and Filter must both be float32 or float64, got "
                            f"{x.dtype} and {w.dtype}")
        cdef tuple xs = shape_of(x), ws = shape_of(w)
        cdef Geom g
        self._geometry(&g, xs, ws)
        cdef Py_ssize_t N = xs[0]
        oshape = (N, g.Ho, g.Wo, g.M) if self.nhwc else (N, g.M, g.Ho, g.Wo)
        cdef cnp.ndarray out
        cdef double beta = 0.0
        cdef Py_ssize_t K = <Py_ssize_t>g.Cg * g.kh * g.kw, P = <Py_ssize_t>g.Ho * g.Wo
        cdef bint use_direct = DIRECT
        # On the direct kernels (float32) Bias and relu go into the kernel's one store of each
        # output, not into passes of their own over Output.
        cdef bint epi = (t == cnp.NPY_FLOAT32 and use_direct and not self.nhwc and N > 0 and
                         g.M > 0 and P > 0 and K > 0 and hr_conv_direct_ok())
        cdef bint wino = epi and WINOGRAD and wino_fits(&g)
        epi = wino or (epi and direct_forward_fits(&g))
        cdef cnp.ndarray bvec = None, rvec = None
        cdef void* pbias = NULL
        cdef const float* pres = NULL
        if residual is not None:
            r = np.asarray(residual)
            if r.dtype != x.dtype or r.shape != oshape:
                raise ValueError(f"conv2d: ResidualData {r.dtype}{list(r.shape)} must be "
                                 f"{x.dtype}{list(oshape)} (Output's shape)")
            if wino:   # read in the kernel's store, not copied into Output first
                rvec = contiguous(r)
                pres = <const float*>cnp.PyArray_DATA(rvec)
                out = empty(oshape, t) if into is None else _into(into, oshape, t)
            else:
                out = np.array(r, order="C", copy=True) if into is None else _into(into, r, t)
                beta = 1.0
        else:
            out = empty(oshape, t) if into is None else _into(into, oshape, t)
        if bias is not None:
            b = np.asarray(bias)
            if b.dtype != x.dtype or b.shape != (g.M,):
                raise ValueError(f"conv2d: Bias {b.dtype}{list(b.shape)} must be "
                                 f"{x.dtype}[{g.M}]")
            if epi:
                bvec = contiguous(b)
                pbias = cnp.PyArray_DATA(bvec)
            else:
                bshape = [1, 1, 1, 1]
                bshape[3 if self.nhwc else 1] = g.M
                if beta:
                    out += b.reshape(bshape)
                else:
                    out[...] = b.reshape(bshape)
                beta = 1.0
        if N == 0 or g.M == 0 or g.Ho * g.Wo == 0:
            return (out,)
        if K == 0:
            if not beta:
                out.fill(0)
            return (self._relu_out(out) if relu else out,)
        if self.nhwc and not g.direct:
            w = np.ascontiguousarray(w.transpose(0, 2, 3, 1))  # [M, kh, kw, Cg]: row order
        cdef Py_ssize_t chunk = max(1, min(N, CHUNK_BYTES // (K * P * cnp.PyArray_ITEMSIZE(x))))
        # The GEMM of a chunk gets chunk*P columns (NCHW) or rows (NHWC): keep it in int range.
        chunk = max(1, min(chunk, INT_MAX // P))
        cdef bint acc = beta != 0
        cdef int rc
        cdef cnp.ndarray u
        if wino:
            u = self._wino_filter(w, &g)
            with nogil:
                rc = wino_forward(<const float*>cnp.PyArray_DATA(x),
                                  <const float*>cnp.PyArray_DATA(u),
                                  <float*>cnp.PyArray_DATA(out), N, &g, pres,
                                  <const float*>pbias, relu)
            if rc:
                raise MemoryError("conv2d: no memory for the Winograd buffers")
            return (out,)
        if t == cnp.NPY_FLOAT32:
            with nogil:
                rc = _run(<const float*>cnp.PyArray_DATA(x), <const float*>cnp.PyArray_DATA(w),
                          <float*>cnp.PyArray_DATA(out), N, &g, self.nhwc, acc, chunk,
                          use_direct, <const float*>pbias, relu and epi)
        else:
            with nogil:
                rc = _run(<const double*>cnp.PyArray_DATA(x),
                          <const double*>cnp.PyArray_DATA(w), <double*>cnp.PyArray_DATA(out),
                          N, &g, self.nhwc, acc, chunk, False, NULL, False)
        if rc:
            raise MemoryError("conv2d: no memory for the im2col buffers")
        return (self._relu_out(out) if relu and not epi else out,)

    cdef cnp.ndarray _relu_out(self, cnp.ndarray out):
        cdef Py_ssize_t n = cnp.PyArray_SIZE(out)
        if cnp.PyArray_TYPE(out) == cnp.NPY_FLOAT32:
            with nogil:
                _relu(<float*>cnp.PyArray_DATA(out), n)
        else:
            with nogil:
                _relu(<double*>cnp.PyArray_DATA(out), n)
        return out


# -- gradient -----------------------------------------------------------------------------------

cdef int _run_grad(const real* x, const real* w, const real* dy, real* dx, real* dw,
                   Py_ssize_t N, const Geom* g, bint nhwc, Py_ssize_t chunk,
                   bint direct) noexcept nogil:
    """Input@GRAD into a zeroed dx and Filter@GRAD into a zeroed dw (either may be NULL: not
    wanted); w and dw in the row order of the layout (NHWC: [M, kh, kw, Cg]). -1: no memory."""
    cdef Py_ssize_t K = <Py_ssize_t>g.Cg * g.kh * g.kw, P = <Py_ssize_t>g.Ho * g.Wo
    cdef Py_ssize_t hw = <Py_ssize_t>g.H * g.W, n0, nb, b, m, cols
    cdef int grp
    cdef real one = 1
    cdef bint half_panel = 0 < g.Mg % 32 <= 16
    cdef const real* dyg
    cdef real* col = NULL
    cdef real* pack = NULL
    cdef real* dwt = NULL
    cdef Py_ssize_t k
    if nhwc and g.direct:
        n0 = 0
        while n0 < N:
            nb = min(INT_MAX // P, N - n0)
            for grp in range(g.groups):
                dyg = dy + n0 * P * g.M + grp * g.Mg
                if dw != NULL:   # dW_g [Mg, Cg] += dY_g^T [Mg, rows] @ X_g [rows, Cg]
                    fast_gemm(True, False, g.Mg, <int>K, <int>(nb * P), dyg, g.M,
                              x + n0 * P * g.C + grp * g.Cg, g.C, one, dw + grp * g.Mg * K,
                              <int>K)
                if dx != NULL:   # dX_g [rows, Cg] = dY_g [rows, Mg] @ W_g [Mg, Cg]
                    fast_gemm(False, False, <int>(nb * P), <int>K, g.Mg, dyg, g.M,
                              w + grp * g.Mg * K, <int>K, one, dx + n0 * P * g.C + grp * g.Cg,
                              g.C)
            n0 += nb
        return 0
    if real is float and direct and not nhwc and direct_fits(g):
        if dw != NULL:
            if direct_filter_grad(x, dy, dw, N, g):
                return -1
            dw = NULL
        # The input gradient of a stride-1 conv is a stride-1 conv of Output@GRAD; a strided
        # one stays on col2im.
        if dx != NULL and direct_input_fits(g):
            if direct_input_grad(w, dy, dx, N, g):
                return -1
            dx = NULL
        if dx == NULL:
            return 0
    if g.direct:
        # NCHW 1x1, stride 1, no padding: per image, X_g [Cg, P] is the im2col matrix.
        for n0 in range(N):
            for grp in range(g.groups):
                dyg = dy + (n0 * g.M + <Py_ssize_t>grp * g.Mg) * P
                if dw != NULL:   # dW_g [Mg, Cg] += dY_g [Mg, P] @ X_g^T [P, Cg]
                    fast_gemm(False, True, g.Mg, <int>K, <int>P, dyg, <int>P,
                              x + (n0 * g.C + <Py_ssize_t>grp * g.Cg) * P, <int>P, one,
                              dw + <Py_ssize_t>grp * g.Mg * K, <int>K)
                if dx != NULL:   # dX_g [Cg, P] = W_g^T [Cg, Mg] @ dY_g [Mg, P]
                    fast_gemm(True, False, <int>K, <int>P, g.Mg, w + <Py_ssize_t>grp * g.Mg * K,
                              <int>K, dyg, <int>P, 0,
                              dx + (n0 * g.C + <Py_ssize_t>grp * g.Cg) * P, <int>P)
        return 0
    col = <real*>malloc(K * chunk * P * sizeof(real))
    if not nhwc and chunk > 1:
        pack = <real*>malloc(<Py_ssize_t>g.Mg * chunk * P * sizeof(real))
    if not nhwc and dw != NULL:
        dwt = <real*>calloc(K * g.M, sizeof(real))   # per group [K, Mg]
    if col == NULL or (not nhwc and chunk > 1 and pack == NULL) or \
            (not nhwc and dw != NULL and dwt == NULL):
        free(col)
        free(pack)
        free(dwt)
        return -1
    n0 = 0
    while n0 < N:
        nb = min(chunk, N - n0)
        cols = nb * P
        for grp in range(g.groups):
            if nhwc:
                dyg = dy + n0 * P * g.M + grp * g.Mg   # [cols, Mg] with ld M
                if dw != NULL:
                    for b in range(nb):
                        _im2row(x + (n0 + b) * hw * g.C + grp * g.Cg, col + b * P * K, g)
                    fast_gemm(True, False, g.Mg, <int>K, <int>cols, dyg, g.M, col, <int>K, one,
                              dw + grp * g.Mg * K, <int>K)
                if dx != NULL:
                    fast_gemm(False, False, <int>cols, <int>K, g.Mg, dyg, g.M,
                              w + grp * g.Mg * K, <int>K, 0, col, <int>K)
                    for b in range(nb):
                        _row2im(col + b * P * K, dx + (n0 + b) * hw * g.C + grp * g.Cg, g)
                continue
            # NCHW: dY of the chunk and group as one [Mg, cols] matrix.
            if nb == 1:
                dyg = dy + (n0 * g.M + <Py_ssize_t>grp * g.Mg) * P
            else:
                for b in range(nb):
                    for m in range(g.Mg):
                        memcpy(pack + m * cols + b * P,
                               dy + ((n0 + b) * g.M + <Py_ssize_t>grp * g.Mg + m) * P,
                               P * sizeof(real))
                dyg = pack
            if dw != NULL:
                for b in range(nb):
                    _im2col(x + ((n0 + b) * g.C + <Py_ssize_t>grp * g.Cg) * hw, col + b * P,
                            cols, False, g)
                # Filter@GRAD_g^T [K, Mg]: Mg is the packed GEMM's panel width (32 columns);
                # where half a panel or more would be empty (Mg = 16 and the like), BLAS
                # (measured: 16 -> 16 and 3 -> 16 3x3 filters 16-30% faster per call; at
                # Mg = 32 the packed GEMM stays ahead).
                if half_panel:
                    gemm(False, True, <int>K, g.Mg, <int>cols, col, <int>cols, dyg, <int>cols,
                         one, dwt + grp * g.Mg * K, g.Mg)
                else:
                    fast_gemm(False, True, <int>K, g.Mg, <int>cols, col, <int>cols, dyg,
                              <int>cols, one, dwt + grp * g.Mg * K, g.Mg)
            if dx != NULL:
                fast_gemm(True, False, <int>K, <int>cols, g.Mg, w + grp * g.Mg * K, <int>K, dyg,
                          <int>cols, 0, col, <int>cols)
                for b in range(nb):
                    _col2im(col + b * P, dx + ((n0 + b) * g.C + <Py_ssize_t>grp * g.Cg) * hw,
                            cols, g)
        n0 += nb
    if dwt != NULL:
        for grp in range(g.groups):
            for m in range(g.Mg):
                for k in range(K):
                    dw[(grp * g.Mg + m) * K + k] = dwt[grp * g.Mg * K + k * g.Mg + m]
    free(col)
    free(pack)
    free(dwt)
    return 0


cdef class Conv2DGrad(Conv2D):
    """conv2d_grad(Input, Filter, Output@GRAD) -> (Input@GRAD, Filter@GRAD, Bias@GRAD,
    ResidualData@GRAD); unbound outputs are skipped (None)."""
    cdef bint want_x, want_w, want_b, want_r

    def __init__(self, dict attrs, info=None):
        Conv2D.__init__(self, attrs, info)
        self.name = "conv2d_grad"
        self.want_x, self.want_w, self.want_b, self.want_r = wanted(info, GRADS)

    def __call__(self, input, filter, dout):
        name = "conv2d_grad"
        cdef cnp.ndarray x = float_array(input, name, "Input")
        cdef cnp.ndarray w = float_array(filter, name, "Filter")
        cdef cnp.ndarray dy = float_array(dout, name, "Output@GRAD")
        cdef int t = cnp.PyArray_TYPE(x)
        if cnp.PyArray_TYPE(w) != t or cnp.PyArray_TYPE(dy) != t:
            raise TypeError(f"{name}: Input, Filter and Output@GRAD must have one dtype, got "
                            f"{x.dtype}, {w.dtype} and {dy.dtype}")
        cdef tuple xs = shape_of(x), ws = shape_of(w)
        cdef Geom g
        self._geometry(&g, xs, ws)
        cdef Py_ssize_t N = xs[0]
        oshape = (N, g.Ho, g.Wo, g.M) if self.nhwc else (N, g.M, g.Ho, g.Wo)
        expect_shape(dy, oshape, name, "Output@GRAD", "Output's shape")
        cdef cnp.ndarray dx = None, dw = None, db = None, dr = None
        if self.want_b:
            db = dy.sum(axis=(0, 1, 2) if self.nhwc else (0, 2, 3), dtype=np.float64
                        ).astype(x.dtype)
        if self.want_r:
            dr = dy.copy()
        if self.want_x:
            dx = np.zeros(xs, x.dtype)
        if self.want_w:
            dw = np.zeros((g.M, g.kh, g.kw, g.Cg) if self.nhwc and not g.direct else ws,
                          x.dtype)
        cdef Py_ssize_t K = <Py_ssize_t>g.Cg * g.kh * g.kw, P = <Py_ssize_t>g.Ho * g.Wo
        if (dx is None and dw is None) or N == 0 or g.M == 0 or P == 0 or K == 0:
            return (dx, dw, db, dr)
        if self.nhwc and not g.direct and dx is not None:
            w = np.ascontiguousarray(w.transpose(0, 2, 3, 1))  # [M, kh, kw, Cg]: row order
        cdef Py_ssize_t chunk = max(1, min(N, GRAD_CHUNK_COLS // P,
                                           GRAD_CHUNK_BYTES // (K * P * cnp.PyArray_ITEMSIZE(x))))
        chunk = max(1, min(chunk, INT_MAX // P))
        cdef void* pdx = cnp.PyArray_DATA(dx) if dx is not None else NULL
        cdef void* pdw = cnp.PyArray_DATA(dw) if dw is not None else NULL
        cdef bint use_direct = DIRECT
        cdef int rc
        if t == cnp.NPY_FLOAT32:
            with nogil:
                rc = _run_grad(<const float*>cnp.PyArray_DATA(x),
                               <const float*>cnp.PyArray_DATA(w),
                               <const float*>cnp.PyArray_DATA(dy), <float*>pdx, <float*>pdw,
                               N, &g, self.nhwc, chunk, use_direct)
        else:
            with nogil:
                rc = _run_grad(<const double*>cnp.PyArray_DATA(x),
                               <const double*>cnp.PyArray_DATA(w),
                               <const double*>cnp.PyArray_DATA(dy), <double*>pdx,
                               <double*>pdw, N, &g, self.nhwc, chunk, False)
        if rc:
            raise MemoryError(f"{name}: no memory for the im2col buffers")
        if dw is not None and self.nhwc and not g.direct:
            dw = np.ascontiguousarray(dw.transpose(0, 3, 1, 2))  # back to [M, Cg, kh, kw]
        return (dx, dw, db, dr)


def direct_paths(dict attrs, tuple input_shape, tuple filter_shape):
    """Which float32 computations of conv2d with ``attrs`` on these shapes run on
    _conv_direct.h's kernels while ``DIRECT`` is on: (forward, filter gradient, input
    gradient). For the tests, which must reach each path."""
    plan = ConvAttrs(attrs)
    cdef Conv2D k = Conv2D(attrs)
    cdef Geom g
    k._geometry(&g, input_shape, filter_shape)
    fits = bool(DIRECT and not plan.nhwc and direct_fits(&g))
    forward = bool(DIRECT and not plan.nhwc and direct_forward_fits(&g))
    return forward, fits, fits and bool(direct_input_fits(&g))


def s2_in_place(bint on):
    """Column-stride-2 forwards read in place (_conv_s2.h, the default) or through the padded
    copy (False): for the tests' and the benchmarks' comparisons of the two."""
    set_s2_in_place(on)


def winograd_path(dict attrs, tuple input_shape, tuple filter_shape):
    """Whether the float32 forward of conv2d with ``attrs`` on these shapes runs through
    Winograd F(2x2, 3x3) (_conv_wino.h) while ``DIRECT`` and ``WINOGRAD`` are on."""
    plan = ConvAttrs(attrs)
    cdef Conv2D k = Conv2D(attrs)
    cdef Geom g
    k._geometry(&g, input_shape, filter_shape)
    return bool(DIRECT and WINOGRAD and not plan.nhwc and hr_conv_direct_ok() and
                wino_fits(&g))


KERNELS = [("conv2d", Conv2D, DTYPES), ("conv2d_grad", Conv2DGrad, DTYPES)]

