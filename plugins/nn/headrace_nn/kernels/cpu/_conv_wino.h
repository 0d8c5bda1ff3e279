/* Winograd F(2x2, 3x3) for float32 NCHW 3x3 convs of stride 1 and dilation 1 (AVX-512), for
 * conv.pyx's forward. The direct kernels (_conv_direct.h) do 9 multiply-adds per tap and
 * output, near the core's FMA peak already; here each 2x2 block of outputs ("tile") is
 * A^T [(G w G^T) . (B^T d B)] A, 16 multiply-adds per input channel and filter for 4 outputs
 * (2.25x fewer), the rest adds on the FP add pipes beside the FMAs.
 *
 * Per image the planes are copied once into a zero-padded buffer split into even and odd
 * columns (each row's even half, then its odd half, Qs floats each), so the 4x4 input window
 * of tile (ty, tx) at element (i, j) lies at a fixed offset + ty*4*Qs + tx: 8 tiles of a
 * tile row are one contiguous 8-float load. A vector holds 16 tiles as two such halves (8
 * tiles each; a tile row of 16 tiles, or two rows of 8 of a 16x16 image), a block one
 * vector. Per block:
 * - input transform: V[e][c][16 tiles] = (B^T d B)[e], e = 4i + j, for every channel;
 * - per 16 filters (8, 4, 1 at the tail): for each e, M[e][16][16] = U[e] (the transformed
 *   filters, [Cin][Cout], computed once by hr_wg_filter) x V[e], 16 filters x 1 vector of
 *   accumulators; then the output transform A^T M A, + the residual (read where Output is
 *   written, never copied into Output first), + bias, relu, each tile's 2x2 outputs
 *   interleaved back into rows and stored masked.
 * One vector a block, not two (8 filters x 2 vectors of accumulators): V (16 KB at 16
 * channels) and M (16 KB) then stay in the 32 KB L1 cache beside the filters, where two
 * vectors' 32 KB of V alone spilled to L2 (16 -> 16 channels at 32x32: 43 -> 36 us an image).
 * F(2x2, 3x3)'s transforms hold only 0, +-1, +-1/2: its float32 error stays within a few ulps
 * of the direct sum's (the tests compare both against the float64 reference). */
#ifndef HEADRACE_CONV_WINO_H
#define HEADRACE_CONV_WINO_H

#include <stdint.h>

#include "_conv_direct.h"   /* hr_cd_scratch, HR_AVX512 */

/* A group's conv: Cin planes of Hin x Win in, Cout of Ho x Wo out, top/left paddings (the
 * bottom/right ones follow from Ho, Wo), the epilogue as hr_cd_geom's. */
typedef struct {
    int Cin, Hin, Win, Cout, Ho, Wo, pt, pl;
    const float* bias;
    int relu;
} hr_wg_geom;

/* u[e][c][m] = (G w[m][c] G^T)[e / 4][e % 4] of Cout x Cin 3x3 filters w ([m][c][3][3]),
 * G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]; in double, rounded once. */
static void hr_wg_filter(const float* w, int Cout, int Cin, float* u) {
    size_t cm = (size_t)Cin * Cout;
    for (int m = 0; m < Cout; m++)
        for (int c = 0; c < Cin; c++) {
            const float* g = w + ((size_t)m * Cin + c) * 9;
            double t[4][3];
            for (int j = 0; j < 3; j++) {
                double a = g[j], b = g[3 + j], d = g[6 + j];
                t[0][j] = a;
                t[1][j] = 0.5 * (a + b + d);
                t[2][j] = 0.5 * (a - b + d);
                t[3][j] = d;
            }
            for (int i = 0; i < 4; i++) {
                double a = t[i][0], b = t[i][1], d = t[i][2];
                float* o = u + (size_t)(4 * i) * cm + (size_t)c * Cout + m;
                o[0] = (float)a;
                o[cm] = (float)(0.5 * (a + b + d));
                o[2 * cm] = (float)(0.5 * (a - b + d));
                o[3 * cm] = (float)d;
            }
        }
}

/* The tiles of a geometry and the padded buffer's extents. */
typedef struct {
    int TH, TW, nseg, nhalf, nvec, R, Qs;
    size_t chan;                 /* floats of one channel's buffer: R x 2 phases x Qs */
} hr_wg_plan;

static void hr_wg_plan_make(const hr_wg_geom* g, hr_wg_plan* p) {
    p->TH = (g->Ho + 1) / 2;
    p->TW = (g->Wo + 1) / 2;
    p->nseg = (p->TW + 7) / 8;
    p->nhalf = p->TH * p->nseg;
    p->nvec = (p->nhalf + 1) / 2;
    p->R = 2 * p->TH + 4;        /* + 2 zero rows a lane-less half may read (hr_wg_input) */
    p->Qs = p->nseg * 8 + 8;     /* a half reads q up to tx0 + 8 <= nseg * 8 */
    p->chan = (size_t)2 * p->R * p->Qs;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define HR_WG_NV 1       /* vectors per block (2 measured slower: see above) */
#define HR_WG_MB (16 / HR_WG_NV)   /* filters per GEMM tile */
#define HR_WG_LANES (16 * HR_WG_NV)   /* tiles per block */
#define HR_WG_MASKS 8    /* hr_wg_prep's masks kept: rows of up to 256 padded columns */

/* One image's buffer: dst[c][r][f][q] = src[c][r - pt][2q + f - pl], 0 outside. Each row is
 * read as vectors of 32 padded columns, masked loads straight from the image, split into even
 * and odd lanes, as hr_cd_prep reads a stride-2 conv's. */
HR_AVX512 static void hr_wg_prep(const float* src, const hr_wg_geom* g, const hr_wg_plan* p,
                                 float* dst) {
    size_t plane = (size_t)g->Hin * g->Win;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6,
                                          4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    size_t fstep = (size_t)p->Qs;   /* a row's odd phase */
    /* The masks of a row's first HR_WG_MASKS vectors, the same on every row: the two loads'
     * and the store's (computing them per row took a third of the copy's time). */
    __mmask16 mk[3 * HR_WG_MASKS];
    for (int q = 0, j = 0; q < p->Qs && j < HR_WG_MASKS; q += 16, j++) {
        mk[3 * j] = hr_cd_span(2 * q - g->pl, g->Win);
        mk[3 * j + 1] = hr_cd_span(2 * q - g->pl + 16, g->Win);
        mk[3 * j + 2] = p->Qs - q >= 16 ? 0xFFFF : (__mmask16)((1u << (p->Qs - q)) - 1);
    }
    for (int c = 0; c < g->Cin; c++)
        for (int r = 0; r < p->R; r++) {
            int ih = r - g->pt;
            float* d = dst + c * p->chan + (size_t)r * 2 * p->Qs;
            if (ih < 0 || ih >= g->Hin) {
                memset(d, 0, sizeof(float) * (size_t)p->Qs);
                memset(d + fstep, 0, sizeof(float) * (size_t)p->Qs);
                continue;
            }
            const float* s = src + c * plane + (size_t)ih * g->Win;
            for (int q = 0, j = 0; q < p->Qs; q += 16, j++) {
                int base = 2 * q - g->pl;
                __mmask16 ka, kb, k;
                if (j < HR_WG_MASKS) {
                    ka = mk[3 * j];
                    kb = mk[3 * j + 1];
                    k = mk[3 * j + 2];
                } else {
                    ka = hr_cd_span(base, g->Win);
                    kb = hr_cd_span(base + 16, g->Win);
                    k = p->Qs - q >= 16 ? 0xFFFF : (__mmask16)((1u << (p->Qs - q)) - 1);
                }
                __m512 a = _mm512_maskz_loadu_ps(ka, s + base);
                __m512 b = _mm512_maskz_loadu_ps(kb, s + base + 16);
                _mm512_mask_storeu_ps(d + q, k, _mm512_permutex2var_ps(a, even, b));
                _mm512_mask_storeu_ps(d + fstep + q, k, _mm512_permutex2var_ps(a, odd, b));
            }
        }
}

/* Half h's offset in a channel's buffer (its tiles' top-left input), output row and column. */
static inline void hr_wg_half(const hr_wg_plan* p, int h, ptrdiff_t* off, int* orow,
                              int* ocol) {
    int ty = h / p->nseg, tx0 = (h % p->nseg) * 8;
    *off = (ptrdiff_t)4 * ty * p->Qs + tx0;
    *orow = 2 * ty;
    *ocol = 2 * tx0;
}

/* 16 tiles at two halves' offsets, s and s + delta: one 16-float load where they are
 * adjacent (adj), else two 8-float ones (insertf64x4: AVX-512F; insertf32x8 would need DQ,
 * which hr_conv_direct_ok does not ask). */
#define HR_WG_LOAD(s)                                                                        \
    (adj ? _mm512_loadu_ps(s)                                                                \
         : _mm512_castpd_ps(_mm512_insertf64x4(                                              \
               _mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(s))),                 \
               _mm256_castps_pd(_mm256_loadu_ps((s) + delta)), 1)))

/* Row i of d (columns 2tx + j: even phase tx, odd tx, even tx + 1, odd tx + 1) times B. */
#define HR_WG_ROW(i, w0, w1, w2, w3)                                                         \
    {                                                                                        \
        const float* r_ = b + (size_t)(i) * 2 * qs;                                          \
        __m512 d0 = HR_WG_LOAD(r_), d1 = HR_WG_LOAD(r_ + qs);                                \
        __m512 d2 = HR_WG_LOAD(r_ + 1), d3 = HR_WG_LOAD(r_ + qs + 1);                        \
        w0 = _mm512_sub_ps(d0, d2);                                                          \
        w1 = _mm512_add_ps(d1, d2);                                                          \
        w2 = _mm512_sub_ps(d2, d1);                                                          \
        w3 = _mm512_sub_ps(d1, d3);                                                          \
    }

/* Column j of B^T (rows of d times B), stored at V[e = 4i + j]. */
#define HR_WG_COL(j, a0, a1, a2, a3)                                                         \
    _mm512_storeu_ps(o + (size_t)(j) * es, _mm512_sub_ps(a0, a2));                           \
    _mm512_storeu_ps(o + (size_t)(4 + (j)) * es, _mm512_add_ps(a1, a2));                     \
    _mm512_storeu_ps(o + (size_t)(8 + (j)) * es, _mm512_sub_ps(a2, a1));                     \
    _mm512_storeu_ps(o + (size_t)(12 + (j)) * es, _mm512_sub_ps(a1, a3));

/* V[e][c][lane] = (B^T d B)[e] of one vector's tiles (the halves at buf + o0 and + o0 +
 * delta), B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]. Written out, not
 * as loops over arrays of vectors: GCC kept those arrays on the stack. Inlined into callers
 * with qs and delta constant (hr_wg_input): with them in registers GCC spilled the 16-32
 * load addresses it derived per channel. */
HR_AVX512 static inline __attribute__((always_inline, optimize("no-ivopts"))) void hr_wg_input_body(
        const float* buf, size_t chan, int Cin, ptrdiff_t o0, ptrdiff_t qs, ptrdiff_t delta,
        int adj, float* V) {
    size_t es = (size_t)Cin * HR_WG_LANES;   /* one e's [Cin][lanes] */
    const float* b = buf + o0;
    float* o = V;
    for (int c = 0; c < Cin; c++, b += chan, o += HR_WG_LANES) {
        __m512 w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23;
        __m512 w30, w31, w32, w33;
        HR_WG_ROW(0, w00, w01, w02, w03)
        HR_WG_ROW(1, w10, w11, w12, w13)
        HR_WG_ROW(2, w20, w21, w22, w23)
        HR_WG_ROW(3, w30, w31, w32, w33)
        HR_WG_COL(0, w00, w10, w20, w30)
        HR_WG_COL(1, w01, w11, w21, w31)
        HR_WG_COL(2, w02, w12, w22, w32)
        HR_WG_COL(3, w03, w13, w23, w33)
    }
}

/* One block's V from the halves at off[0], off[1]: 8 tiles a row (16x16 images: halves a
 * tile row apart, 4*Qs floats, a lane-less second half reading the buffer's zero rows), 16
 * (32x32: adjacent), or any other width. */
HR_AVX512 __attribute__((optimize("no-ivopts"))) static void hr_wg_input(
        const float* buf, const hr_wg_plan* p, int Cin, const ptrdiff_t* off, float* V) {
    if (p->nseg == 1)
        hr_wg_input_body(buf, p->chan, Cin, off[0], 16, 64, 0, V);
    else if (p->nseg == 2)
        hr_wg_input_body(buf, p->chan, Cin, off[0], 24, 8, 1, V);
    else
        hr_wg_input_body(buf, p->chan, Cin, off[0], p->Qs, off[1] - off[0],
                         off[1] == off[0] + 8, V);
}

/* M[e][r][lanes] = sum_c U[e][c][m0 + r] V[e][c][lanes] for MB filters, every e. */
#define HR_WG_GEMM(MB)                                                                       \
HR_AVX512 static void hr_wg_gemm_##MB(int Cin, int Cout, const float* U, const float* V,    \
                                       float* M) {                                           \
    for (int e = 0; e < 16; e++) {                                                           \
        const float* ue = U + (size_t)e * Cin * Cout;                                        \
        const float* ve = V + (size_t)e * Cin * HR_WG_LANES;                                 \
        __m512 a[MB][HR_WG_NV];                                                              \
        _Pragma("GCC unroll 16") for (int r = 0; r < MB; r++)                                \
            _Pragma("GCC unroll 2") for (int v = 0; v < HR_WG_NV; v++)                       \
                a[r][v] = _mm512_setzero_ps();                                               \
        for (int k = 0; k < Cin; k++) {                                                      \
            __m512 x[HR_WG_NV];                                                              \
            _Pragma("GCC unroll 2") for (int v = 0; v < HR_WG_NV; v++)                       \
                x[v] = _mm512_loadu_ps(ve + (size_t)k * HR_WG_LANES + 16 * v);               \
            const float* ur = ue + (size_t)k * Cout;                                         \
            _Pragma("GCC unroll 16") for (int r = 0; r < MB; r++) {                          \
                __m512 b = _mm512_set1_ps(ur[r]);                                            \
                _Pragma("GCC unroll 2") for (int v = 0; v < HR_WG_NV; v++)                   \
                    a[r][v] = _mm512_fmadd_ps(b, x[v], a[r][v]);                             \
            }                                                                                \
        }                                                                                    \
        _Pragma("GCC unroll 16") for (int r = 0; r < MB; r++)                                \
            _Pragma("GCC unroll 2") for (int v = 0; v < HR_WG_NV; v++)                       \
                _mm512_storeu_ps(M + ((size_t)e * HR_WG_MB + r) * HR_WG_LANES + 16 * v,      \
                                 a[r][v]);                                                   \
    }                                                                                        \
}

HR_WG_GEMM(16) HR_WG_GEMM(8) HR_WG_GEMM(4) HR_WG_GEMM(1)

/* One output row of 16 tiles' 2 columns interleaved (lanes 0-7 or 8-15: `idx`), + the
 * residual at res (NULL: none), relu, stored masked at o (n outputs). */
HR_AVX512 static inline void hr_wg_store(__m512 y0, __m512 y1, __m512i idx, float* o,
                                         const float* res, int n, int relu) {
    __m512 s = _mm512_permutex2var_ps(y0, idx, y1);
    __mmask16 k = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
    if (res)
        s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(k, res));
    if (relu)   /* max(0, s) returns s where s is NaN */
        s = _mm512_max_ps(_mm512_setzero_ps(), s);
    _mm512_mask_storeu_ps(o, k, s);
}

/* Output of filters m0 .. m0+MB-1 of the block's tiles from M: y = A^T m A, A^T =
 * [[1, 1, 1, 0], [0, 1, -1, -1]]; halves from h0 (those < nhalf). The bias goes into m[1][1],
 * which A^T m A adds once to each of the tile's 4 outputs: one add instead of four. */
HR_AVX512 static void hr_wg_output(const float* M, int MB, const hr_wg_plan* p,
                                   const hr_wg_geom* g, int m0, int h0, float* out,
                                   const float* res) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    size_t ldo = (size_t)g->Ho * g->Wo;
    for (int r = 0; r < MB; r++) {
        __m512 bias = _mm512_set1_ps(g->bias ? g->bias[m0 + r] : 0.0f);
        float* om = out + (size_t)(m0 + r) * ldo;
        const float* rm = res ? res + (size_t)(m0 + r) * ldo : NULL;
        for (int v = 0; v < HR_WG_NV; v++) {
            const float* s = M + (size_t)r * HR_WG_LANES + v * 16;
            size_t es = (size_t)HR_WG_MB * HR_WG_LANES;
            __m512 t0[4], t1[4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m512 m0v = _mm512_loadu_ps(s + (size_t)j * es);
                __m512 m1v = _mm512_loadu_ps(s + (size_t)(4 + j) * es);
                if (j == 1)   /* m[1][1] enters each of the 4 outputs once, with sign + */
                    m1v = _mm512_add_ps(m1v, bias);
                __m512 m2v = _mm512_loadu_ps(s + (size_t)(8 + j) * es);
                __m512 m3v = _mm512_loadu_ps(s + (size_t)(12 + j) * es);
                t0[j] = _mm512_add_ps(_mm512_add_ps(m0v, m1v), m2v);
                t1[j] = _mm512_sub_ps(_mm512_sub_ps(m1v, m2v), m3v);
            }
            __m512 y00 = _mm512_add_ps(_mm512_add_ps(t0[0], t0[1]), t0[2]);
            __m512 y01 = _mm512_sub_ps(_mm512_sub_ps(t0[1], t0[2]), t0[3]);
            __m512 y10 = _mm512_add_ps(_mm512_add_ps(t1[0], t1[1]), t1[2]);
            __m512 y11 = _mm512_sub_ps(_mm512_sub_ps(t1[1], t1[2]), t1[3]);
            for (int half = 0; half < 2; half++) {
                int h = h0 + 2 * v + half;
                if (h >= p->nhalf)
                    break;
                ptrdiff_t off;
                int orow, ocol;
                hr_wg_half(p, h, &off, &orow, &ocol);
                __m512i idx = half ? hi : lo;
                int n = g->Wo - ocol;
                size_t at = (size_t)orow * g->Wo + ocol;
                const float* ra = rm ? rm + at : NULL;
                hr_wg_store(y00, y01, idx, om + at, ra, n, g->relu);
                if (orow + 1 < g->Ho)
                    hr_wg_store(y10, y11, idx, om + at + g->Wo, ra ? ra + g->Wo : NULL, n,
                                g->relu);
            }
        }
    }
}

/* Bytes of one call's scratch: the padded image, V and M, and 64 to align V on. */
static size_t hr_wg_scratch_size(const hr_wg_geom* g, const hr_wg_plan* p) {
    return sizeof(float) * ((size_t)g->Cin * p->chan + 16 * (size_t)g->Cin * HR_WG_LANES +
                            16 * (size_t)HR_WG_MB * HR_WG_LANES) + 64;
}

/* Out (Cout planes, images img_out apart) = conv(src) + res (NULL: none; laid out as Out),
 * + bias, relu, over n images, with u from hr_wg_filter. -1: no memory. */
HR_AVX512 static int hr_wg_conv(const float* src, ptrdiff_t img_in, float* out,
                                ptrdiff_t img_out, ptrdiff_t n, const hr_wg_geom* g,
                                const float* u, const float* res) {
    hr_wg_plan p;
    hr_wg_plan_make(g, &p);
    float* buf = hr_cd_scratch(HR_CD_PAD, hr_wg_scratch_size(g, &p));
    if (!buf)
        return -1;
    /* V and M on 64-byte lines (each of their vectors then one line): malloc's 16-byte
     * alignment split every one of their loads and stores over two lines, which measured
     * 2-8% of the conv (one image: 16 -> 16 channels 32x32 + residual 33.0 -> 31.1-32.4 us,
     * 32 -> 32 at 16x16 28.0 -> 25.5-25.7 us) */
    float* V = (float*)(((uintptr_t)(buf + (size_t)g->Cin * p.chan) + 63) & ~(uintptr_t)63);
    float* M = V + 16 * (size_t)g->Cin * HR_WG_LANES;
    int nblk = (p.nhalf + 2 * HR_WG_NV - 1) / (2 * HR_WG_NV);
    size_t in_bytes = sizeof(float) * (size_t)g->Cin * g->Hin * g->Win;
    size_t out_bytes = sizeof(float) * (size_t)g->Cout * g->Ho * g->Wo;
    for (ptrdiff_t b = 0; b < n; b++) {
        hr_wg_prep(src + b * img_in, g, &p, buf);
        float* o = out + b * img_out;
        const float* ri = res ? res + b * img_out : NULL;
        for (int h0 = 0; h0 < p.nhalf; h0 += 2 * HR_WG_NV) {
            /* The next image's input, residual and output lines into L2 a share a block,
             * behind this image's arithmetic: at batch 64 the copy's loads and the output
             * transform's residual loads and stores otherwise waited on memory (a third of
             * their time). */
            if (b + 1 < n) {
                int blk = h0 / (2 * HR_WG_NV);
                hr_cd_prefetch(src + (b + 1) * img_in, in_bytes, blk, nblk, 0);
                hr_cd_prefetch(o + img_out, out_bytes, blk, nblk, 1);
                if (ri)
                    hr_cd_prefetch(ri + img_out, out_bytes, blk, nblk, 0);
            }
            ptrdiff_t off[2 * HR_WG_NV];
            int orow, ocol;
            for (int k = 0; k < 2 * HR_WG_NV; k++)   /* halves past the last: any valid offset */
                hr_wg_half(&p, h0 + k < p.nhalf ? h0 + k : h0, &off[k], &orow, &ocol);
            hr_wg_input(buf, &p, g->Cin, off, V);
            int m = 0;
#if HR_WG_MB == 16
            for (; m + 16 <= g->Cout; m += 16) {
                hr_wg_gemm_16(g->Cin, g->Cout, u + m, V, M);
                hr_wg_output(M, 16, &p, g, m, h0, o, ri);
            }
#endif
            for (; m + 8 <= g->Cout; m += 8) {
                hr_wg_gemm_8(g->Cin, g->Cout, u + m, V, M);
                hr_wg_output(M, 8, &p, g, m, h0, o, ri);
            }
            for (; m + 4 <= g->Cout; m += 4) {
                hr_wg_gemm_4(g->Cin, g->Cout, u + m, V, M);
                hr_wg_output(M, 4, &p, g, m, h0, o, ri);
            }
            for (; m < g->Cout; m++) {
                hr_wg_gemm_1(g->Cin, g->Cout, u + m, V, M);
                hr_wg_output(M, 1, &p, g, m, h0, o, ri);
            }
        }
    }
    hr_cd_scratch_done(HR_CD_PAD, buf);
    return 0;
}

#else
static int hr_wg_conv(const float* src, ptrdiff_t img_in, float* out, ptrdiff_t img_out,
                      ptrdiff_t n, const hr_wg_geom* g, const float* u, const float* res) {
    (void)src; (void)img_in; (void)out; (void)img_out; (void)n; (void)g; (void)u; (void)res;
    return -1;
}
#endif

#endif
