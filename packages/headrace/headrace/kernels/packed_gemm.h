/* float32 GEMM, AVX-512, for every plugin's kernels: C[m, n] = A[m, k] B[k, n] (+ C), B packed
 * into panels of 32 columns (once per call for a weight the recurrent kernels multiply by at
 * every step; block by block for one large product, hr_pgemm_b).
 *
 * Why not BLAS: every sgemm call packs both operands, so a step's [32, 256] x [256, 1024]
 * repacks the whole 1 MB weight (a quarter of the call's time through OpenBLAS), fifty times a
 * sequence; packed once, the per-step product only streams it. And the loops here are AVX-512
 * (two 16-float accumulators per row, 12 rows a tile), whatever core OpenBLAS was told to use
 * (the environment may pin its AVX2 kernels). On a CPU without AVX-512 hr_pgemm_ok()
 * returns 0 and the callers stay on BLAS.
 *
 * A is read through two strides, A[i, l] = a[i * a_rs + l * a_ks], so a transposed A (the
 * weight gradient's h^T) needs no copy. */
#ifndef HEADRACE_PACKED_GEMM_H
#define HEADRACE_PACKED_GEMM_H

#include <stddef.h>
#include <string.h>

#define HR_NR 32   /* columns per panel */
#define HR_MR 12   /* rows per tile: 24 accumulators + 2 B vectors of the 32 registers */

/* Floats of B packed: ceil(n / 32) panels of [k, 32]. */
static inline size_t hr_pgemm_packed_size(int k, int n) {
    return (size_t)((n + HR_NR - 1) / HR_NR) * HR_NR * (size_t)(k > 0 ? k : 0);
}

/* Pack B[l, j] = src[l * ldb + j] (trans = 0) or src[j * ldb + l] (trans = 1) into panels,
 * the columns past n zero. */
static void hr_pgemm_pack(const float* src, ptrdiff_t ldb, int trans, int k, int n, float* dst) {
    for (int p = 0; p < (n + HR_NR - 1) / HR_NR; p++) {
        float* d = dst + (size_t)p * k * HR_NR;
        int j0 = p * HR_NR, nj = n - j0 < HR_NR ? n - j0 : HR_NR;
        if (nj < HR_NR)
            memset(d, 0, sizeof(float) * (size_t)k * HR_NR);
        if (trans) {   /* row j of src is column j of B: read it contiguously */
            for (int j = 0; j < nj; j++) {
                const float* s = src + (size_t)(j0 + j) * ldb;
                for (int l = 0; l < k; l++)
                    d[(size_t)l * HR_NR + j] = s[l];
            }
        } else {
            for (int l = 0; l < k; l++)
                memcpy(d + (size_t)l * HR_NR, src + (size_t)l * ldb + j0, sizeof(float) * nj);
        }
    }
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

#define HR_AVX512 __attribute__((target("avx512f,fma")))

static inline int hr_pgemm_ok(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

/* One tile: MR rows of C, one panel (nj <= 32 columns, masks m0/m1), over all of k. */
#define HR_TILE(MR)                                                                          \
HR_AVX512 static void hr_pgemm_tile##MR(int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks, \
                                      const float* b, float* c, ptrdiff_t ldc, int accumulate, \
                                      __mmask16 m0, __mmask16 m1) {                          \
    __m512 c0[MR], c1[MR];                                                                   \
    _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                                  \
        c0[r] = _mm512_setzero_ps();                                                         \
        c1[r] = _mm512_setzero_ps();                                                         \
    }                                                                                        \
    const float* ag[(MR + 2) / 3];   /* (why: direct_gemm.h) */                              \
    _Pragma("GCC unroll 4") for (int g = 0; g < (MR + 2) / 3; g++)                           \
        ag[g] = a + 3 * g * a_rs;                                                            \
    for (int l = 0; l < k; l++) {                                                            \
        __m512 b0 = _mm512_loadu_ps(b + (size_t)l * HR_NR);                                  \
        __m512 b1 = _mm512_loadu_ps(b + (size_t)l * HR_NR + 16);                             \
        _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                              \
            __m512 av = _mm512_set1_ps(ag[r / 3][(r % 3) * a_rs]);                           \
            c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);                                          \
            c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);                                          \
        }                                                                                    \
        _Pragma("GCC unroll 4") for (int g = 0; g < (MR + 2) / 3; g++)                       \
            ag[g] += a_ks;                                                                   \
    }                                                                                        \
    _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                                  \
        float* cr = c + r * ldc;                                                             \
        if (accumulate) {                                                                    \
            c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, cr));                     \
            c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, cr + 16));                \
        }                                                                                    \
        _mm512_mask_storeu_ps(cr, m0, c0[r]);                                                \
        _mm512_mask_storeu_ps(cr + 16, m1, c1[r]);                                           \
    }                                                                                        \
}

HR_TILE(12) HR_TILE(8) HR_TILE(4) HR_TILE(2) HR_TILE(1)

/* One 16 x 16 block transposed in registers: d[i * ldd + j] = s[j * lds + i]. */
HR_AVX512 static void hr_pgemm_tr16(const float* s, ptrdiff_t lds, float* d, ptrdiff_t ldd) {
    __m512 r[16], t[16];
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(s + i * lds);
    _Pragma("GCC unroll 8") for (int i = 0; i < 16; i += 2) {   /* pairs of 32-bit lanes */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < 16; i += 4) {   /* 64-bit pairs */
        __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        __m512d c = _mm512_castps_pd(t[i + 2]), e = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e));
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {       /* 128-bit lanes */
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    }
    _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
        _mm512_storeu_ps(d + i * ldd, r[i]);
}

/* hr_pgemm_pack(src, ldb, 1, k, n, dst) (B = src^T: a product with a weight transposed, G
 * W^T) in 16 x 16 blocks transposed in registers, the same panels: the scalar loop stores one
 * float at a time 128 bytes apart ([784, 256]^T 82 -> 53 us, [256, 256]^T 25 -> 15 us). */
HR_AVX512 static void hr_pgemm_pack_t(const float* src, ptrdiff_t ldb, int k, int n,
                                      float* dst) {
    for (int p = 0; p < (n + HR_NR - 1) / HR_NR; p++) {
        float* d = dst + (size_t)p * k * HR_NR;
        int j0 = p * HR_NR, nj = n - j0 < HR_NR ? n - j0 : HR_NR, h = 0;
        if (nj < HR_NR)
            memset(d, 0, sizeof(float) * (size_t)k * HR_NR);
        for (; h + 16 <= nj; h += 16) {   /* 16 columns of B: 16 rows of src */
            const float* s = src + (size_t)(j0 + h) * ldb;
            int l = 0;
            for (; l + 16 <= k; l += 16)
                hr_pgemm_tr16(s + l, ldb, d + (size_t)l * HR_NR + h, HR_NR);
            for (; l < k; l++)
                for (int j = 0; j < 16; j++)
                    d[(size_t)l * HR_NR + h + j] = s[(size_t)j * ldb + l];
        }
        for (int j = h; j < nj; j++) {
            const float* s = src + (size_t)(j0 + j) * ldb;
            for (int l = 0; l < k; l++)
                d[(size_t)l * HR_NR + j] = s[l];
        }
    }
}

/* The row tiles of rows [i0, i1) against one panel block (kc rows of b, columns j0.. of c). */
#define HR_ROWS(I0, I1, KC, AK, B, CP)                                                        \
    do {                                                                                     \
        int i = (I0);                                                                        \
        for (; i + 12 <= (I1); i += 12)                                                      \
            hr_pgemm_tile12(KC, AK + i * a_rs, a_rs, a_ks, B, CP + i * ldc, ldc, acc, m0, m1); \
        for (; i + 8 <= (I1); i += 8)                                                        \
            hr_pgemm_tile8(KC, AK + i * a_rs, a_rs, a_ks, B, CP + i * ldc, ldc, acc, m0, m1);  \
        for (; i + 4 <= (I1); i += 4)                                                        \
            hr_pgemm_tile4(KC, AK + i * a_rs, a_rs, a_ks, B, CP + i * ldc, ldc, acc, m0, m1);  \
        for (; i + 2 <= (I1); i += 2)                                                        \
            hr_pgemm_tile2(KC, AK + i * a_rs, a_rs, a_ks, B, CP + i * ldc, ldc, acc, m0, m1);  \
        for (; i < (I1); i++)                                                                \
            hr_pgemm_tile1(KC, AK + i * a_rs, a_rs, a_ks, B, CP + i * ldc, ldc, acc, m0, m1);  \
    } while (0)

#define HR_MASKS(NJ)                                                                          \
    __mmask16 m0 = (NJ) >= 16 ? 0xFFFF : (__mmask16)((1u << (NJ)) - 1);                       \
    __mmask16 m1 = (NJ) >= 32 ? 0xFFFF : (NJ) > 16 ? (__mmask16)((1u << ((NJ) - 16)) - 1) : 0

/* C[m, n] = A B (+ C when accumulate), B packed by hr_pgemm_pack. k in blocks of HR_KC: a
 * panel's block (32 KB) stays in L1 while every row tile passes over it, and the weight
 * gradient's A block (h^T, k rows of it) in L2 across the panels. This computes rows [i0, i1)
 * and panels [p0, p1) of C: one thread's share (hr_pgemm_split). */
#define HR_KC 256

HR_AVX512 static void hr_pgemm_part(int i0, int i1, int p0, int p1, int n, int k,
                                    const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                                    const float* bp, float* c, ptrdiff_t ldc, int accumulate) {
    if (k <= 0 && !accumulate)   /* an empty product: C = 0, as BLAS with beta 0 */
        for (int i = i0; i < i1; i++)
            for (int p = p0; p < p1; p++)
                memset(c + i * ldc + p * HR_NR, 0,
                       sizeof(float) * (size_t)(n - p * HR_NR < HR_NR ? n - p * HR_NR : HR_NR));
    for (int k0 = 0; k0 < k; k0 += HR_KC) {
        int kc = k - k0 < HR_KC ? k - k0 : HR_KC;
        int acc = accumulate || k0 > 0;
        const float* ak = a + k0 * a_ks;
        for (int p = p0; p < p1; p++) {
            int j0 = p * HR_NR, nj = n - j0 < HR_NR ? n - j0 : HR_NR;
            HR_MASKS(nj);
            HR_ROWS(i0, i1, kc, ak, bp + ((size_t)p * k + k0) * HR_NR, c + j0);
        }
    }
}

/* The same with B as it lies (row stride ldb): each panel's k block is packed into a 32 KB
 * buffer just before its tiles, so a large B (the weight gradient's, the gates' gradients of
 * every step) is read once and never copied whole. */
HR_AVX512 static void hr_pgemm_b_part(int i0, int i1, int p0, int p1, int n, int k,
                                      const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                                      const float* b, ptrdiff_t ldb, float* c, ptrdiff_t ldc,
                                      int accumulate) {
    float buf[HR_KC * HR_NR] __attribute__((aligned(64)));
    if (k <= 0) {
        hr_pgemm_part(i0, i1, p0, p1, n, k, a, a_rs, a_ks, b, c, ldc, accumulate);
        return;
    }
    for (int k0 = 0; k0 < k; k0 += HR_KC) {
        int kc = k - k0 < HR_KC ? k - k0 : HR_KC;
        int acc = accumulate || k0 > 0;
        const float* ak = a + k0 * a_ks;
        for (int p = p0; p < p1; p++) {
            int j0 = p * HR_NR, nj = n - j0 < HR_NR ? n - j0 : HR_NR;
            HR_MASKS(nj);
            for (int l = 0; l < kc; l++) {
                const float* src = b + (size_t)(k0 + l) * ldb + j0;
                _mm512_store_ps(buf + l * HR_NR, _mm512_maskz_loadu_ps(m0, src));
                _mm512_store_ps(buf + l * HR_NR + 16, _mm512_maskz_loadu_ps(m1, src + 16));
            }
            HR_ROWS(i0, i1, kc, ak, buf, c + j0);
        }
    }
}

/* Thread t of nt's share of C: whole panels when there are enough of them to go round (each
 * thread then reads only its part of B), else bands of whole 12-row tiles. Every element of C
 * is computed by one thread in the same order as serially: the result does not depend on the
 * thread count. */
static inline void hr_pgemm_split(int m, int n, int t, int nt, int* i0, int* i1, int* p0,
                                  int* p1) {
    int np = (n + HR_NR - 1) / HR_NR, tiles = (m + HR_MR - 1) / HR_MR;
    if (np >= 2 * nt || np >= tiles || (np >= nt && np % nt == 0)) {
        *i0 = 0; *i1 = m;
        *p0 = (int)((long)np * t / nt); *p1 = (int)((long)np * (t + 1) / nt);
    } else {
        *p0 = 0; *p1 = np;
        *i0 = (int)((long)tiles * t / nt) * HR_MR; *i1 = (int)((long)tiles * (t + 1) / nt) * HR_MR;
        if (*i1 > m) *i1 = m;
    }
}

#ifdef _OPENMP
#include <omp.h>
/* Runs CALL on each of nthreads threads (the caller's variable), each with its share. */
#define HR_PARALLEL(CALL)                                                                     \
    if (nthreads > 1) {                                                                      \
        _Pragma("omp parallel num_threads(nthreads)")                                        \
        {                                                                                    \
            int i0, i1, p0, p1;                                                              \
            hr_pgemm_split(m, n, omp_get_thread_num(), omp_get_num_threads(),                \
                           &i0, &i1, &p0, &p1);                                              \
            CALL;                                                                            \
        }                                                                                    \
        return;                                                                              \
    }
#else
#define HR_PARALLEL(CALL)
#endif

/* C[m, n] = A B (+ C when accumulate), B packed by hr_pgemm_pack, on nthreads threads
 * (OpenMP; serial in a build without it). */
static void hr_pgemm_mt(int m, int n, int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                        const float* bp, float* c, ptrdiff_t ldc, int accumulate,
                        int nthreads) {
    HR_PARALLEL(hr_pgemm_part(i0, i1, p0, p1, n, k, a, a_rs, a_ks, bp, c, ldc,
                                        accumulate))
    hr_pgemm_part(0, m, 0, (n + HR_NR - 1) / HR_NR, n, k, a, a_rs, a_ks, bp, c, ldc,
                  accumulate);
}

/* C[m, n] = A B (+ C) with B as it lies, on nthreads threads. */
static void hr_pgemm_b_mt(int m, int n, int k, const float* a, ptrdiff_t a_rs,
                          ptrdiff_t a_ks, const float* b, ptrdiff_t ldb, float* c,
                          ptrdiff_t ldc, int accumulate, int nthreads) {
    HR_PARALLEL(hr_pgemm_b_part(i0, i1, p0, p1, n, k, a, a_rs, a_ks, b, ldb, c, ldc,
                                          accumulate))
    hr_pgemm_b_part(0, m, 0, (n + HR_NR - 1) / HR_NR, n, k, a, a_rs, a_ks, b, ldb, c, ldc,
                    accumulate);
}

static inline void hr_pgemm(int m, int n, int k, const float* a, ptrdiff_t a_rs,
                            ptrdiff_t a_ks, const float* bp, float* c, ptrdiff_t ldc,
                            int accumulate) {
    hr_pgemm_mt(m, n, k, a, a_rs, a_ks, bp, c, ldc, accumulate, 1);
}

static inline void hr_pgemm_b(int m, int n, int k, const float* a, ptrdiff_t a_rs,
                              ptrdiff_t a_ks, const float* b, ptrdiff_t ldb, float* c,
                              ptrdiff_t ldc, int accumulate) {
    hr_pgemm_b_mt(m, n, k, a, a_rs, a_ks, b, ldb, c, ldc, accumulate, 1);
}

#else
#define HR_AVX512
static inline int hr_pgemm_ok(void) { return 0; }
static void hr_pgemm_pack_t(const float* src, ptrdiff_t ldb, int k, int n, float* dst) {
    hr_pgemm_pack(src, ldb, 1, k, n, dst);
}
static void hr_pgemm(int m, int n, int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                        const float* bp, float* c, ptrdiff_t ldc, int accumulate) {
    (void)m; (void)n; (void)k; (void)a; (void)a_rs; (void)a_ks; (void)bp; (void)c; (void)ldc;
    (void)accumulate;
}
static void hr_pgemm_b(int m, int n, int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                          const float* b, ptrdiff_t ldb, float* c, ptrdiff_t ldc,
                          int accumulate) {
    (void)m; (void)n; (void)k; (void)a; (void)a_rs; (void)a_ks; (void)b; (void)ldb; (void)c;
    (void)ldc; (void)accumulate;
}
static void hr_pgemm_mt(int m, int n, int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                        const float* bp, float* c, ptrdiff_t ldc, int accumulate, int nt) {
    (void)nt;
    hr_pgemm(m, n, k, a, a_rs, a_ks, bp, c, ldc, accumulate);
}
static void hr_pgemm_b_mt(int m, int n, int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                          const float* b, ptrdiff_t ldb, float* c, ptrdiff_t ldc,
                          int accumulate, int nt) {
    (void)nt;
    hr_pgemm_b(m, n, k, a, a_rs, a_ks, b, ldb, c, ldc, accumulate);
}
#endif

#endif
