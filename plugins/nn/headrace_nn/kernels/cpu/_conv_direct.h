/* conv2d in float32 NCHW without a col matrix (AVX-512), for conv.pyx: the small-channel
 * layers of CNNs (3/16/32 channels, 3x3 and 1x1, 32x32 and 16x16 images) spent as long
 * writing and re-reading im2col's [C*kh*kw, P] matrix as multiplying it, and their 16 or 32
 * filters half-filled the packed GEMM's 12-row tiles (12 + 4).
 *
 * Each image's group planes are first copied once into a zero-padded buffer split by column
 * phase (column q of phase f holds padded column q*sw + f), so the input of tap (c, i, j) for
 * output (oh, ow) lies at a fixed offset off[c, i, j] + oh*sh*Wq + ow: every tap of a row of
 * 16 outputs is one contiguous 16-float load, whatever the stride or dilation. Then, per 16
 * output positions of a row ("vector", masked at the row's end):
 * - forward: Out[m, v] += W[m, t] * X[t, v] over the taps t, 8 filters x 3 vectors of
 *   accumulators (the packed GEMM's register tile, its B operand read in place);
 * - filter gradient: dW[m, t] += dY[m, v] . X[t, v], 4 filters x 6 taps of accumulators over
 *   every vector of the image, their 16 lanes summed once at the end of the batch;
 * - input gradient of a stride-1 conv: the forward of dY with the filter flipped and
 *   transposed (a "full" correlation: paddings (k-1)*d - p).
 * hr_conv_direct_ok() is 0 without AVX-512: conv.pyx keeps im2col + GEMM then. */
#ifndef HEADRACE_CONV_DIRECT_H
#define HEADRACE_CONV_DIRECT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "headrace/kernels/packed_gemm.h"

#define HR_CD_VEC 6   /* vectors per forward group: the tiles below take 3 or 6 of them */
#define HR_CD_TB 6    /* taps per filter-gradient tile */
/* Floats of hr_cd_prep's padded row: Wq*sw columns, 32 more read by the last vectors. */
#define HR_CD_ROW(g, p) ((size_t)(p)->Wq * (g)->sw + 64)

/* One conv of a group's planes: Cin input channels of Hin x Win (images img_in floats
 * apart), Cout outputs of Ho x Wo, kh x kw taps, strides, dilations, top/left paddings
 * (negative: rows/columns cropped). */
typedef struct {
    int Cin, Hin, Win, Cout, Ho, Wo, kh, kw, sh, sw, dh, dw, pt, pl;
    /* The forward's epilogue, on the tile's registers before the one store: + bias[m]
     * (NULL: none), then relu (0 where < 0; NaN and -0.0 pass, as the relu op). */
    const float* bias;
    int relu;
} hr_cd_geom;

/* The padded, phase-split buffer's extents and the vectors of a geometry. */
typedef struct {
    int nph, Hp, Wq, nvec, K;
    size_t size;                 /* floats of one image's buffer */
    int* toff;                   /* [K] tap offsets in the buffer */
    ptrdiff_t* ib;               /* [nvec rounded up] vector's input offset */
    int* ob;                     /* [...] its output offset (oh * Wo + ow) */
    unsigned short* mk;          /* [...] its lanes */
} hr_cd_plan;

static void hr_cd_free(hr_cd_plan* p) {
    free(p->toff);
    free(p->ib);
    free(p->ob);
    free(p->mk);
}

/* -1 when memory is lacking. Taps run (c, i, j) in Filter's row order. */
static int hr_cd_plan_make(const hr_cd_geom* g, hr_cd_plan* p) {
    int maxq = 0;
    p->nph = g->kw == 1 ? 1 : g->sw;   /* a 1x1 filter reads phase 0 only */
    for (int j = 0; j < g->kw; j++)
        if ((j * g->dw) / g->sw > maxq)
            maxq = (j * g->dw) / g->sw;
    p->Hp = (g->Ho - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    p->Wq = g->Wo + maxq;
    p->K = g->Cin * g->kh * g->kw;
    p->size = (size_t)g->Cin * p->nph * p->Hp * p->Wq;
    int per_row = (g->Wo + 15) / 16;
    p->nvec = g->Ho * per_row;
    int nalloc = (p->nvec + HR_CD_VEC - 1) / HR_CD_VEC * HR_CD_VEC;
    p->toff = malloc(sizeof(int) * (size_t)(p->K + HR_CD_TB));
    p->ib = malloc(sizeof(ptrdiff_t) * (size_t)nalloc);
    p->ob = malloc(sizeof(int) * (size_t)nalloc);
    p->mk = malloc(sizeof(unsigned short) * (size_t)nalloc);
    if (!p->toff || !p->ib || !p->ob || !p->mk) {
        hr_cd_free(p);
        return -1;
    }
    int t = 0;
    for (int c = 0; c < g->Cin; c++)
        for (int i = 0; i < g->kh; i++)
            for (int j = 0; j < g->kw; j++) {
                int col = j * g->dw;
                p->toff[t++] = (int)((((size_t)c * p->nph + col % g->sw) * p->Hp + i * g->dh)
                                     * p->Wq + col / g->sw);
            }
    for (; t < p->K + HR_CD_TB; t++)   /* the gradient's tap tail: harmless reads, dropped */
        p->toff[t] = 0;
    int v = 0;
    for (int oh = 0; oh < g->Ho; oh++)
        for (int ow = 0; ow < g->Wo; ow += 16) {
            int n = g->Wo - ow < 16 ? g->Wo - ow : 16;
            p->ib[v] = (ptrdiff_t)oh * g->sh * p->Wq + ow;
            p->ob[v] = oh * g->Wo + ow;
            p->mk[v] = (unsigned short)((1u << n) - 1);
            v++;
        }
    for (; v < nalloc; v++) {          /* the last group's missing vectors: no lanes */
        p->ib[v] = 0;
        p->ob[v] = 0;
        p->mk[v] = 0;
    }
    return 0;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#include <pthread.h>

/* Scratch reused across calls, one set per thread (conv_images and filter_grad_split run the
 * kernels on OpenMP's threads, each with buffers of its own): the padded image (HR_CD_PAD)
 * and the filter gradient's [Cout, taps x 16] partial sums (HR_CD_PART, 150-600 KB for the
 * ResNet layers), which were a malloc and a calloc per call; glibc serves such sizes from
 * mmap, so each call also paid their page faults. A request over HR_CD_KEEP bytes is
 * allocated and freed per call, so no thread holds a huge buffer for good. A thread's set is
 * freed when the thread exits (the key's destructor), the exiting thread's at exit. */
enum { HR_CD_PAD, HR_CD_PART, HR_CD_NSCRATCH };
#define HR_CD_KEEP ((size_t)16 << 20)
typedef struct {
    void* p[HR_CD_NSCRATCH];
    size_t cap[HR_CD_NSCRATCH];
} hr_cd_ws;
static __thread hr_cd_ws* hr_cd_tls;
static pthread_key_t hr_cd_key;
static pthread_once_t hr_cd_once = PTHREAD_ONCE_INIT;
static int hr_cd_key_ok;

static void hr_cd_ws_free(void* v) {
    hr_cd_ws* w = v;
    for (int i = 0; i < HR_CD_NSCRATCH; i++)
        free(w->p[i]);
    free(w);
}

static void hr_cd_ws_atexit(void) {
    hr_cd_ws* w = hr_cd_tls;
    hr_cd_tls = NULL;
    if (w) {
        pthread_setspecific(hr_cd_key, NULL);
        hr_cd_ws_free(w);
    }
}

static void hr_cd_key_make(void) {
    hr_cd_key_ok = pthread_key_create(&hr_cd_key, hr_cd_ws_free) == 0 &&
                   atexit(hr_cd_ws_atexit) == 0;
}

/* This thread's scratch `which` of at least `bytes` (contents undefined), or a fresh
 * allocation that hr_cd_scratch_done frees (over HR_CD_KEEP, or no thread key); NULL: no
 * memory. */
static void* hr_cd_scratch(int which, size_t bytes) {
    pthread_once(&hr_cd_once, hr_cd_key_make);
    if (bytes > HR_CD_KEEP || !hr_cd_key_ok)
        return malloc(bytes);
    hr_cd_ws* w = hr_cd_tls;
    if (!w) {
        w = calloc(1, sizeof *w);
        if (!w || pthread_setspecific(hr_cd_key, w)) {
            free(w);
            return malloc(bytes);
        }
        hr_cd_tls = w;
    }
    if (w->cap[which] < bytes) {
        free(w->p[which]);
        w->p[which] = malloc(bytes);
        w->cap[which] = w->p[which] ? bytes : 0;
    }
    return w->p[which];
}

static void hr_cd_scratch_done(int which, void* p) {
    hr_cd_ws* w = hr_cd_tls;
    if (p && !(w && w->p[which] == p))
        free(p);
}

static inline int hr_conv_direct_ok(void) { return hr_pgemm_ok(); }

/* Share i of nshare of the bytes [p, p + bytes) prefetched into L2, for reading or writing:
 * the next image's input and output, a share per group of vectors, behind the current
 * image's arithmetic (at batch 64 the image copies' loads and the stores otherwise waited
 * on memory). */
static inline void hr_cd_prefetch(const void* p, size_t bytes, int i, int nshare, int write) {
    size_t lo = bytes * (size_t)i / (size_t)nshare & ~(size_t)63;
    size_t hi = bytes * (size_t)(i + 1) / (size_t)nshare;
    for (size_t at = lo; at < hi; at += 64) {
        if (write)
            __builtin_prefetch((const char*)p + at, 1, 2);
        else
            __builtin_prefetch((const char*)p + at, 0, 2);
    }
}

/* Lanes k of a 16-float vector whose column base + k lies in [0, n). */
static inline __mmask16 hr_cd_span(int base, int n) {
    int lo = base < 0 ? -base : 0, hi = n - base;
    if (hi > 16)
        hi = 16;
    if (lo >= hi)
        return 0;
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* The buffer of one image's group: dst[c][f][r][q] = src[c][r - pt][q*sw + f - pl], 0 outside
 * the image. With column stride 1 or 2 each row is read as vectors of the padded row, masked
 * loads straight from the image (no lane outside it is read), with stride 2 split into even
 * and odd lanes (a scalar gather per value took a third of the strided layer's time). A copy
 * into a zero-padded row first, read back as vectors, stalled each vector load on the
 * store-to-load forwarding of the copy's narrower stores (a third of a 1x1 stride-2 conv's
 * time at batch 1); other strides still go through that row, value by value. */
HR_AVX512 static void hr_cd_prep(const float* src, const hr_cd_geom* g, const hr_cd_plan* p,
                                 float* row, float* dst) {
    size_t plane = (size_t)g->Hin * g->Win;
    int span = p->Wq * g->sw;          /* padded columns read: q*sw + f < Wq*sw */
    int lo = g->pl < 0 ? 0 : g->pl;    /* row[lo, hi) comes from the image */
    int hi = g->Win + g->pl < span ? g->Win + g->pl : span;
    if (hi < lo)
        hi = lo;
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6,
                                          4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    if (g->sw > 2)
        memset(row, 0, sizeof(float) * (size_t)(span + 32));
    for (int c = 0; c < g->Cin; c++)
        for (int r = 0; r < p->Hp; r++) {
            int ih = r - g->pt;
            float* d = dst + ((size_t)c * p->nph * p->Hp + r) * p->Wq;
            size_t fstep = (size_t)p->Hp * p->Wq;   /* phase f's row r: d + f * fstep */
            if (g->kh == 1 && r % g->sh)   /* a row no tap reads (1x1 filter, row stride) */
                continue;
            if (ih < 0 || ih >= g->Hin) {
                for (int f = 0; f < p->nph; f++)
                    memset(d + f * fstep, 0, sizeof(float) * (size_t)p->Wq);
                continue;
            }
            const float* s = src + c * plane + (size_t)ih * g->Win;
            if (g->sw == 1) {
                for (int q = 0; q < p->Wq; q += 16) {
                    __mmask16 k = p->Wq - q >= 16 ? 0xFFFF : (__mmask16)((1u << (p->Wq - q)) - 1);
                    int base = q - g->pl;
                    _mm512_mask_storeu_ps(d + q, k, _mm512_maskz_loadu_ps(
                        hr_cd_span(base, g->Win), s + base));
                }
            } else if (g->sw == 2) {
                for (int q = 0; q < p->Wq; q += 16) {
                    int base = 2 * q - g->pl;
                    __m512 a = _mm512_maskz_loadu_ps(hr_cd_span(base, g->Win), s + base);
                    __m512 b = _mm512_maskz_loadu_ps(hr_cd_span(base + 16, g->Win),
                                                     s + base + 16);
                    __mmask16 k = p->Wq - q >= 16 ? 0xFFFF : (__mmask16)((1u << (p->Wq - q)) - 1);
                    _mm512_mask_storeu_ps(d + q, k, _mm512_permutex2var_ps(a, even, b));
                    if (p->nph > 1)
                        _mm512_mask_storeu_ps(d + fstep + q, k,
                                              _mm512_permutex2var_ps(a, odd, b));
                }
            } else {
                memcpy(row + lo, s + (lo - g->pl), sizeof(float) * (size_t)(hi - lo));
                for (int f = 0; f < p->nph; f++)
                    for (int q = 0; q < p->Wq; q++)
                        d[f * fstep + q] = row[q * g->sw + f];
            }
        }
}

/* Forward tile: MB filters x NV vectors. wt[t * ldw + r]: filter r's tap t. hr_cd_fwd_*
 * loads each vector under its lanes' mask; hr_cd_fwdf_* ("full") loads all 16 lanes, for
 * tiles whose vectors all have them: masked loads measured 7-8% slower on this AMD core
 * (3 -> 16 and 16 -> 16 channels at 32x32, one image, a C harness of hr_cd_conv). */
#define HR_CD_FWD_(NAME, MB, NV, LOAD)                                                       \
HR_AVX512 static void NAME(int K, const float* wt, int ldw,                                  \
        const int* toff, const float* x, const ptrdiff_t* ib, const int* ob,                 \
        const unsigned short* mk, float* out, ptrdiff_t ldo, int acc, const float* bias,     \
        int relu) {                                                                          \
    __m512 a[MB][NV];                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < MB; r++)                                     \
        _Pragma("GCC unroll 6") for (int v = 0; v < NV; v++) a[r][v] = _mm512_setzero_ps();   \
    for (int t = 0; t < K; t++) {                                                            \
        const float* xt = x + toff[t];                                                       \
        const float* wr = wt + (size_t)t * ldw;                                              \
        __m512 xv[NV];                                                                       \
        _Pragma("GCC unroll 6") for (int v = 0; v < NV; v++)                                 \
            xv[v] = LOAD(mk[v], xt + ib[v]);                                                 \
        _Pragma("GCC unroll 8") for (int r = 0; r < MB; r++) {                               \
            __m512 b = _mm512_set1_ps(wr[r]);                                                \
            _Pragma("GCC unroll 6") for (int v = 0; v < NV; v++)                             \
                a[r][v] = _mm512_fmadd_ps(b, xv[v], a[r][v]);                                \
        }                                                                                    \
    }                                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < MB; r++)                                     \
        _Pragma("GCC unroll 6") for (int v = 0; v < NV; v++) {                               \
            float* o = out + r * ldo + ob[v];                                                \
            __m512 s = a[r][v];                                                              \
            if (acc)                                                                         \
                s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mk[v], o));                       \
            if (bias)                                                                        \
                s = _mm512_add_ps(s, _mm512_set1_ps(bias[r]));                               \
            if (relu)   /* max(0, s) returns s where s is NaN */                             \
                s = _mm512_max_ps(_mm512_setzero_ps(), s);                                   \
            _mm512_mask_storeu_ps(o, mk[v], s);                                              \
        }                                                                                    \
}
#define HR_CD_MASKED(k, p) _mm512_maskz_loadu_ps((k), (p))
#define HR_CD_FULL(k, p) _mm512_loadu_ps(p)
#define HR_CD_FWD(MB, NV)                                                                    \
    HR_CD_FWD_(hr_cd_fwd_##MB##_##NV, MB, NV, HR_CD_MASKED)                                  \
    HR_CD_FWD_(hr_cd_fwdf_##MB##_##NV, MB, NV, HR_CD_FULL)

HR_CD_FWD(8, 3) HR_CD_FWD(8, 2) HR_CD_FWD(8, 1) HR_CD_FWD(4, 6) HR_CD_FWD(2, 6) HR_CD_FWD(1, 6)

/* Whether vectors mk[0 .. n) all have 16 lanes (their tile's loads need no mask). */
static inline int hr_cd_full(const unsigned short* mk, int n) {
    for (int v = 0; v < n; v++)
        if (mk[v] != 0xFFFF)
            return 0;
    return 1;
}

/* Filter-gradient tile: MB filters x HR_CD_TB taps over all vectors of one image, added to
 * part[r * ldp + t * 16 + lane]; hr_cd_wgtf_* without masks, for images whose vectors all
 * have 16 lanes (as hr_cd_fwdf_*). */
#define HR_CD_WGT_(NAME, MB, LOAD)                                                           \
HR_AVX512 static void NAME(int nvec, const float* dy, ptrdiff_t ldy,                         \
        const int* toff, const float* x, const ptrdiff_t* ib, const int* ob,                 \
        const unsigned short* mk, float* part, ptrdiff_t ldp) {                               \
    __m512 a[MB][HR_CD_TB];                                                                  \
    _Pragma("GCC unroll 4") for (int r = 0; r < MB; r++)                                     \
        _Pragma("GCC unroll 6") for (int t = 0; t < HR_CD_TB; t++)                           \
            a[r][t] = _mm512_setzero_ps();                                                   \
    for (int v = 0; v < nvec; v++) {                                                         \
        __m512 d[MB];                                                                        \
        _Pragma("GCC unroll 4") for (int r = 0; r < MB; r++)                                 \
            d[r] = LOAD(mk[v], dy + r * ldy + ob[v]);                                        \
        const float* xv = x + ib[v];                                                         \
        _Pragma("GCC unroll 6") for (int t = 0; t < HR_CD_TB; t++) {                         \
            __m512 xt = LOAD(mk[v], xv + toff[t]);                                           \
            _Pragma("GCC unroll 4") for (int r = 0; r < MB; r++)                             \
                a[r][t] = _mm512_fmadd_ps(d[r], xt, a[r][t]);                                \
        }                                                                                    \
    }                                                                                        \
    _Pragma("GCC unroll 4") for (int r = 0; r < MB; r++)                                     \
        _Pragma("GCC unroll 6") for (int t = 0; t < HR_CD_TB; t++) {                         \
            float* q = part + r * ldp + t * 16;                                              \
            _mm512_storeu_ps(q, _mm512_add_ps(_mm512_loadu_ps(q), a[r][t]));                 \
        }                                                                                    \
}

#define HR_CD_WGT(MB)                                                                        \
    HR_CD_WGT_(hr_cd_wgt_##MB, MB, HR_CD_MASKED) HR_CD_WGT_(hr_cd_wgtf_##MB, MB, HR_CD_FULL)

HR_CD_WGT(4) HR_CD_WGT(2) HR_CD_WGT(1)

#include "_conv_s2.h"   /* hr_cd_conv_s2t: column stride 2, read in place */

/* Out (Cout planes of Ho*Wo per image, images img_out apart) = conv(src) with wt [K, Cout]
 * (tap-major), over n images; + Out when acc; then g's epilogue. -1: no memory. */
HR_AVX512 static int hr_cd_conv(const float* src, ptrdiff_t img_in, float* out,
                                ptrdiff_t img_out, ptrdiff_t n, const hr_cd_geom* g,
                                const float* wt, int acc) {
    if (hr_cd_s2t_on && hr_cd_s2t_fits(g))
        return hr_cd_conv_s2t(src, img_in, out, img_out, n, g, wt, acc);
    hr_cd_plan p;
    if (hr_cd_plan_make(g, &p))
        return -1;
    float* buf = hr_cd_scratch(HR_CD_PAD, sizeof(float) * (p.size + HR_CD_ROW(g, &p)));
    if (!buf) {
        hr_cd_free(&p);
        return -1;
    }
    ptrdiff_t ldo = (ptrdiff_t)g->Ho * g->Wo;
#define BIAS(m) (g->bias ? g->bias + (m) : NULL)
    int ngrp = (p.nvec + HR_CD_VEC - 1) / HR_CD_VEC;
    size_t in_bytes = sizeof(float) * (size_t)g->Cin * g->Hin * g->Win;
    size_t out_bytes = sizeof(float) * (size_t)g->Cout * ldo;
    for (ptrdiff_t b = 0; b < n; b++) {
        hr_cd_prep(src + b * img_in, g, &p, buf + p.size, buf);
        float* o = out + b * img_out;
        for (int v = 0; v < p.nvec; v += HR_CD_VEC) {
            if (b + 1 < n) {
                hr_cd_prefetch(src + (b + 1) * img_in, in_bytes, v / HR_CD_VEC, ngrp, 0);
                hr_cd_prefetch(o + img_out, out_bytes, v / HR_CD_VEC, ngrp, 1);
            }
            const ptrdiff_t* ib = p.ib + v;
            const int* ob = p.ob + v;
            const unsigned short* mk = p.mk + v;
            int m = 0, rem = p.nvec - v;
            for (; m + 8 <= g->Cout; m += 8) {
                /* 8 filters: 3 vectors a tile; the image's last 1-5 vectors without the
                 * lane-less ones the 4-filter tiles below compute */
                for (int u = 0, nv; u < HR_CD_VEC && u < rem; u += nv) {
                    nv = rem - u == 4 ? 2 : rem - u < 3 ? rem - u : 3;
                    float* om = o + m * ldo;
                    int full = hr_cd_full(mk + u, nv);
#define FWD8(NV)                                                                             \
    (full ? hr_cd_fwdf_8_##NV : hr_cd_fwd_8_##NV)(p.K, wt + m, g->Cout, p.toff, buf, ib + u,  \
                                                  ob + u, mk + u, om, ldo, acc, BIAS(m),      \
                                                  g->relu)
                    if (nv == 3)
                        FWD8(3);
                    else if (nv == 2)
                        FWD8(2);
                    else
                        FWD8(1);
#undef FWD8
                }
            }
            int full6 = rem >= HR_CD_VEC && hr_cd_full(mk, HR_CD_VEC);
#define FWD6(MB)                                                                             \
    (full6 ? hr_cd_fwdf_##MB##_6 : hr_cd_fwd_##MB##_6)(p.K, wt + m, g->Cout, p.toff, buf, ib,  \
                                                       ob, mk, o + m * ldo, ldo, acc,         \
                                                       BIAS(m), g->relu)
            for (; m + 4 <= g->Cout; m += 4)
                FWD6(4);
            for (; m + 2 <= g->Cout; m += 2)
                FWD6(2);
            for (; m < g->Cout; m++)
                FWD6(1);
#undef FWD6
        }
    }
#undef BIAS
    hr_cd_scratch_done(HR_CD_PAD, buf);
    hr_cd_free(&p);
    return 0;
}

/* dW[m, t] += sum over n images and positions of dY[m, pos] * X[t, pos] (the geometry's
 * forward: Cout = filters); dw is [Cout, K]. -1: no memory. */
HR_AVX512 static int hr_cd_filter_grad(const float* src, ptrdiff_t img_in, const float* dy,
                                       ptrdiff_t img_dy, ptrdiff_t n, const hr_cd_geom* g,
                                       float* dw) {
    hr_cd_plan p;
    if (hr_cd_plan_make(g, &p))
        return -1;
    int kt = (p.K + HR_CD_TB - 1) / HR_CD_TB * HR_CD_TB;
    ptrdiff_t ldp = (ptrdiff_t)kt * 16;
    float* buf = hr_cd_scratch(HR_CD_PAD, sizeof(float) * (p.size + HR_CD_ROW(g, &p)));
    float* part = hr_cd_scratch(HR_CD_PART, sizeof(float) * (size_t)g->Cout * ldp);
    if (!buf || !part) {
        hr_cd_scratch_done(HR_CD_PAD, buf);
        hr_cd_scratch_done(HR_CD_PART, part);
        hr_cd_free(&p);
        return -1;
    }
    memset(part, 0, sizeof(float) * (size_t)g->Cout * ldp);
    ptrdiff_t ldy = (ptrdiff_t)g->Ho * g->Wo;
    int full = hr_cd_full(p.mk, p.nvec);
    for (ptrdiff_t b = 0; b < n; b++) {
        hr_cd_prep(src + b * img_in, g, &p, buf + p.size, buf);
        const float* d = dy + b * img_dy;
        for (int t = 0; t < p.K; t += HR_CD_TB) {
            int m = 0;
#define WGT(MB)                                                                              \
    (full ? hr_cd_wgtf_##MB : hr_cd_wgt_##MB)(p.nvec, d + m * ldy, ldy, p.toff + t, buf,      \
                                              p.ib, p.ob, p.mk, part + m * ldp + t * 16, ldp)
            for (; m + 4 <= g->Cout; m += 4)
                WGT(4);
            for (; m + 2 <= g->Cout; m += 2)
                WGT(2);
            for (; m < g->Cout; m++)
                WGT(1);
#undef WGT
        }
    }
    for (int m = 0; m < g->Cout; m++)
        for (int t = 0; t < p.K; t++)
            dw[(size_t)m * p.K + t] += _mm512_reduce_add_ps(
                _mm512_loadu_ps(part + m * ldp + t * 16));
    hr_cd_scratch_done(HR_CD_PAD, buf);
    hr_cd_scratch_done(HR_CD_PART, part);
    hr_cd_free(&p);
    return 0;
}

#else
static int hr_cd_s2t_on = 1;
static inline int hr_conv_direct_ok(void) { return 0; }
static int hr_cd_conv(const float* src, ptrdiff_t img_in, float* out, ptrdiff_t img_out,
                      ptrdiff_t n, const hr_cd_geom* g, const float* wt, int acc) {
    (void)src; (void)img_in; (void)out; (void)img_out; (void)n; (void)g; (void)wt; (void)acc;
    return -1;
}
static int hr_cd_filter_grad(const float* src, ptrdiff_t img_in, const float* dy,
                             ptrdiff_t img_dy, ptrdiff_t n, const hr_cd_geom* g, float* dw) {
    (void)src; (void)img_in; (void)dy; (void)img_dy; (void)n; (void)g; (void)dw;
    return -1;
}
#endif

#endif
