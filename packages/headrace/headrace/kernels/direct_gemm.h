/* float32 GEMM with B read where it lies, no packing, and an optional bias + relu applied as C
 * is stored: C[m, n] = act(A B (+ C) + bias). AVX-512, the tiles of packed_gemm.h (12 rows x
 * one 32-column panel, two 16-float accumulators a row).
 *
 * Why: for the products of a layer with few rows (fc/mul at batch 1-512: [64, 784] x [784,
 * 256]) packing B costs more than it saves. hr_pgemm_b copies every 32-column block of B
 * before its tiles (6-7% of [64, 784] x [784, 256]: 239 -> 223 us here), and the packed copy
 * is read only m / 12 times. Read in place, a panel's rows lie ldb apart: the L1 cannot keep a
 * k-block of them across the row tiles, but the row tile needs only 128 bytes of B per 24
 * FMAs, which the L2 and its prefetcher supply. Measured on the AMD EPYC (Zen 4) development
 * machine, one thread, against hr_pgemm_b: [1..16, 784] x [784, 256] 0.44-0.77x the time,
 * [64..512, 784] x [784, 256] 0.92-0.96x, [64, 1024] x [1024, 1024] 0.92x; from ~1600 rows
 * packing wins (the L1 reuse pays: [1600, 128] x [128, 512] 1.04x, [2048, 256] x [256, 1024]
 * 1.04x), and for a long k: a panel's k rows, ldb apart, map to few L2 sets and no longer stay
 * there across the row tiles ([64, 4096] x [4096, 1024] 1.9x, [256, 2048] x [2048, 768]
 * 1.2x; A transposed, [256, 2048]^T x [2048, 1024] 1.16x). Callers take this path where
 * hr_dgemm_pays(m, k); A^T B (a weight's gradient X^T G) is then as fast or faster: [256,
 * 128]^T x [128, 10] 18.4 -> 9.7 us, [128, 1024]^T x [1024, 768] 0.94x, [256, 64]^T x [64,
 * 1024] 1.05x the worst seen.
 *
 * A tile reads its 12 rows of A through four pointers, one per three rows, stepped by a_ks
 * each l; the other two rows of a group lie a_rs and 2 a_rs past it (one index register,
 * scaled by 4 or 8). With a pointer or an offset a row, the inner loop spilled registers
 * whenever the sizes were not compile-time constants, as in a kernel: [64, 784] x [784,
 * 256] 227 -> 219 us. The tiles load full panels unmasked: a masked load from memory
 * (_mm512_maskz_loadu_ps) in the inner loop took 8% longer on Zen 4, so only the last,
 * partial panel is masked.
 *
 * The fused epilogue (bias, relu) replaces a second pass over C (fc's mul + add + relu).
 * Every element of C is one sum over l = 0..k-1 in order, whatever the thread count. */
#ifndef HEADRACE_DIRECT_GEMM_H
#define HEADRACE_DIRECT_GEMM_H

#include "headrace/kernels/packed_gemm.h"

/* Whether C[m, n] = A[m, k] B[k, n] should read B in place (else hr_pgemm_b's packing pays):
 * up to 512 rows of C and a sum of up to 1024 products. */
static inline int hr_dgemm_pays(int m, int k) { return m <= 512 && k <= 1024; }

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define HR_DLOAD_FULL(P, M) _mm512_loadu_ps(P)
#define HR_DLOAD_MASK(P, M) _mm512_maskz_loadu_ps(M, P)

/* One tile: MR rows of C, one panel (NV = 2: 32 columns, masks m0/m1; NV = 1: the last
 * panel's <= 16 columns, mask m0, half the FMAs), over all of k. */
#define HR_DTILE(MR, SUF, LOAD, NV)                                                           \
HR_AVX512 static void hr_dgemm_tile##MR##SUF(int k, const float* a, ptrdiff_t a_rs,            \
                                            ptrdiff_t a_ks, const float* b, ptrdiff_t ldb,    \
                                            float* c, ptrdiff_t ldc, int accumulate,          \
                                            const float* bias, int relu, __mmask16 m0,        \
                                            __mmask16 m1) {                                   \
    __m512 c0[MR], c1[MR];                                                                   \
    _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                                  \
        c0[r] = _mm512_setzero_ps();                                                         \
        c1[r] = _mm512_setzero_ps();                                                         \
    }                                                                                        \
    const float* ag[(MR + 2) / 3];                                                           \
    _Pragma("GCC unroll 4") for (int g = 0; g < (MR + 2) / 3; g++)                           \
        ag[g] = a + 3 * g * a_rs;                                                            \
    const float* bl = b;                                                                     \
    for (int l = 0; l < k; l++) {                                                            \
        __m512 b0 = LOAD(bl, m0);                                                            \
        __m512 b1 = NV > 1 ? LOAD(bl + 16, m1) : b0;                                         \
        bl += ldb;                                                                           \
        _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                              \
            __m512 av = _mm512_set1_ps(ag[r / 3][(r % 3) * a_rs]);                           \
            c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);                                          \
            if (NV > 1)                                                                      \
                c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);                                      \
        }                                                                                    \
        _Pragma("GCC unroll 4") for (int g = 0; g < (MR + 2) / 3; g++)                       \
            ag[g] += a_ks;                                                                   \
    }                                                                                        \
    HR_DSTORE(MR, 0, c0, m0);                                                                \
    if (NV > 1)                                                                              \
        HR_DSTORE(MR, 16, c1, m1);                                                           \
}

/* Stores accumulators ACC (columns J.. of the MR rows) as act(ACC (+ C) + bias). */
#define HR_DSTORE(MR, J, ACC, M)                                                              \
    do {                                                                                     \
        __m512 z = bias != NULL ? _mm512_maskz_loadu_ps(M, bias + (J))                       \
                                : _mm512_setzero_ps();                                       \
        _Pragma("GCC unroll 12") for (int r = 0; r < MR; r++) {                              \
            float* cr = c + r * ldc + (J);                                                   \
            __m512 v = _mm512_add_ps(ACC[r], z);                                             \
            if (accumulate)                                                                  \
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(M, cr));                          \
            if (relu)                                                                        \
                v = _mm512_max_ps(v, _mm512_setzero_ps());                                   \
            _mm512_mask_storeu_ps(cr, M, v);                                                 \
        }                                                                                    \
    } while (0)

#define HR_DTILES(MR) HR_DTILE(MR, f, HR_DLOAD_FULL, 2) HR_DTILE(MR, m, HR_DLOAD_MASK, 2)     \
                      HR_DTILE(MR, h, HR_DLOAD_MASK, 1)
HR_DTILES(12) HR_DTILES(8) HR_DTILES(4) HR_DTILES(2) HR_DTILES(1)

/* One row of C over four full panels (128 columns): eight independent sums where a 1-row tile
 * has two, each waiting on its FMA's latency (a row alone: fc at batch 1). */
HR_AVX512 static void hr_dgemm_row4p(int k, const float* a, ptrdiff_t a_ks, const float* b,
                                     ptrdiff_t ldb, float* c, int accumulate,
                                     const float* bias, int relu) {
    __m512 acc[8];
    _Pragma("GCC unroll 8") for (int v = 0; v < 8; v++)
        acc[v] = _mm512_setzero_ps();
    for (int l = 0; l < k; l++) {
        __m512 av = _mm512_set1_ps(a[l * a_ks]);
        const float* bl = b + (size_t)l * ldb;
        _Pragma("GCC unroll 8") for (int v = 0; v < 8; v++)
            acc[v] = _mm512_fmadd_ps(av, _mm512_loadu_ps(bl + 16 * v), acc[v]);
    }
    ptrdiff_t ldc = 0;
    _Pragma("GCC unroll 8") for (int v = 0; v < 8; v++) {
        __m512 one[1] = {acc[v]};
        HR_DSTORE(1, 16 * v, one, (__mmask16)0xFFFF);
    }
}

#define HR_DROWS(I0, SUF)                                                                     \
    do {                                                                                     \
        int i = (I0);                                                                        \
        for (; i + 12 <= i1; i += 12)                                                        \
            hr_dgemm_tile12##SUF(k, a + i * a_rs, a_rs, a_ks, bj, ldb, cj + i * ldc, ldc,     \
                                 accumulate, biasj, relu, m0, m1);                           \
        for (; i + 8 <= i1; i += 8)                                                          \
            hr_dgemm_tile8##SUF(k, a + i * a_rs, a_rs, a_ks, bj, ldb, cj + i * ldc, ldc,      \
                                accumulate, biasj, relu, m0, m1);                            \
        for (; i + 4 <= i1; i += 4)                                                          \
            hr_dgemm_tile4##SUF(k, a + i * a_rs, a_rs, a_ks, bj, ldb, cj + i * ldc, ldc,      \
                                accumulate, biasj, relu, m0, m1);                            \
        for (; i + 2 <= i1; i += 2)                                                          \
            hr_dgemm_tile2##SUF(k, a + i * a_rs, a_rs, a_ks, bj, ldb, cj + i * ldc, ldc,      \
                                accumulate, biasj, relu, m0, m1);                            \
        for (; i < i1; i++)                                                                  \
            hr_dgemm_tile1##SUF(k, a + i * a_rs, a_rs, a_ks, bj, ldb, cj + i * ldc, ldc,      \
                                accumulate, biasj, relu, m0, m1);                            \
    } while (0)

/* Rows [i0, i1) and panels [p0, p1) of C: one thread's share (hr_pgemm_split). Fewer than 4
 * rows take hr_dgemm_row4p over each run of four full panels. */
HR_AVX512 static void hr_dgemm_part(int i0, int i1, int p0, int p1, int n, int k,
                                    const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                                    const float* b, ptrdiff_t ldb, float* c, ptrdiff_t ldc,
                                    int accumulate, const float* bias, int relu) {
    if (k < 0)
        k = 0;
    if (i1 - i0 < 4)
        for (; p0 + 4 <= p1 && (p0 + 4) * HR_NR <= n; p0 += 4)
            for (int i = i0; i < i1; i++)
                hr_dgemm_row4p(k, a + i * a_rs, a_ks, b + p0 * HR_NR, ldb,
                               c + i * ldc + p0 * HR_NR, accumulate,
                               bias != NULL ? bias + p0 * HR_NR : NULL, relu);
    for (int p = p0; p < p1; p++) {
        int j0 = p * HR_NR, nj = n - j0 < HR_NR ? n - j0 : HR_NR;
        const float* bj = b + j0;
        const float* biasj = bias != NULL ? bias + j0 : NULL;
        float* cj = c + j0;
        HR_MASKS(nj);
        if (nj == HR_NR)
            HR_DROWS(i0, f);
        else if (nj > 16)
            HR_DROWS(i0, m);
        else
            HR_DROWS(i0, h);
    }
}

/* C[m, n] = act(A B (+ C when accumulate) + bias) on nthreads threads (OpenMP; serial in a
 * build without it). bias: n floats or NULL; relu: 0 or 1. */
static void hr_dgemm_mt(int m, int n, int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                        const float* b, ptrdiff_t ldb, float* c, ptrdiff_t ldc, int accumulate,
                        const float* bias, int relu, int nthreads) {
    HR_PARALLEL(hr_dgemm_part(i0, i1, p0, p1, n, k, a, a_rs, a_ks, b, ldb, c, ldc, accumulate,
                              bias, relu))
    hr_dgemm_part(0, m, 0, (n + HR_NR - 1) / HR_NR, n, k, a, a_rs, a_ks, b, ldb, c, ldc,
                  accumulate, bias, relu);
}

#else
static void hr_dgemm_mt(int m, int n, int k, const float* a, ptrdiff_t a_rs, ptrdiff_t a_ks,
                        const float* b, ptrdiff_t ldb, float* c, ptrdiff_t ldc, int accumulate,
                        const float* bias, int relu, int nthreads) {
    /* never called: hr_pgemm_ok() is 0 here and the callers stay on BLAS */
    (void)m; (void)n; (void)k; (void)a; (void)a_rs; (void)a_ks; (void)b; (void)ldb; (void)c;
    (void)ldc; (void)accumulate; (void)bias; (void)relu; (void)nthreads;
}
#endif

#endif
