/* pool2d over whole NCHW planes (global pooling, adaptive 1x1, a window the size of the
 * input): one contiguous reduction per plane, and for avg's gradient one fill per plane.
 *
 * Why C: the general window loop of pool.pyx sums each plane into one running double (a chain
 * of dependent additions, 4 cycles each) and takes a max by a branch per value; neither
 * vectorizes. Here GCC's vector extensions give the reductions in 256-bit steps, in
 * target_clones for AVX-512, AVX2+FMA and the baseline (which splits them in SSE2 halves).
 *
 * Precision: float64 sums in 4 x 4 double partial sums. float32 sums each group of 8 values a
 * lane (64 a step) pairwise in float32 - at most 3 roundings, each under 2**-24 of the lane's
 * sum of magnitudes - and adds the groups in double, as the general loop's running sum. The
 * partial sums are combined in a fixed order, so no result depends on the clone that ran;
 * a result can differ from the general loop's in its last bits (another order of additions).
 * The max keeps the general loop's rule, a NaN anywhere in the plane is its maximum; only
 * which of two equal zeros (0.0, -0.0) comes out can differ, which no comparison tells. */
#ifndef HEADRACE_NN_POOL_PLANES_H
#define HEADRACE_NN_POOL_PLANES_H

#include <stddef.h>
#include <stdint.h>

#include "headrace/kernels/fastmath.h"

typedef float hr_pv8f __attribute__((vector_size(32)));
typedef float hr_pv4f __attribute__((vector_size(16)));
typedef int32_t hr_pv8i __attribute__((vector_size(32)));
typedef double hr_pv4d __attribute__((vector_size(32)));
typedef int64_t hr_pv4l __attribute__((vector_size(32)));

/* _takes of pool.pyx: v replaces the running maximum m when larger, or when it is the first
 * NaN. On vectors the result is a mask (all ones where it takes). */
#define HR_TAKES(v, m) (((v) > (m)) | (((v) != (v)) & ((m) == (m))))

/* Unaligned loads (an aligned(element) copy of the vector types; may_alias: they read the
 * arrays as T). Macros, not functions: a vector returned by a function of the baseline clone
 * would change the ABI. */
typedef float hr_pv8fu __attribute__((vector_size(32), aligned(4), may_alias));
typedef double hr_pv4du __attribute__((vector_size(32), aligned(8), may_alias));
#define hr_pld8f(p) ((hr_pv8f)(*(const hr_pv8fu*)(p)))
#define hr_pld4d(p) ((hr_pv4d)(*(const hr_pv4du*)(p)))

/* out[p] = (sum of plane p's n values) / div, for `planes` planes of x. */
HR_CLONES static void hr_avg_planes_f32(const float* restrict x, float* restrict out,
                                        ptrdiff_t planes, ptrdiff_t n, double div) {
    for (ptrdiff_t p = 0; p < planes; p++) {
        const float* xp = x + p * n;
        hr_pv4d a0 = {0}, a1 = {0};
        ptrdiff_t i = 0;
        for (; i + 64 <= n; i += 64) {
            hr_pv8f s0 = hr_pld8f(xp + i) + hr_pld8f(xp + i + 8);
            hr_pv8f s1 = hr_pld8f(xp + i + 16) + hr_pld8f(xp + i + 24);
            hr_pv8f s2 = hr_pld8f(xp + i + 32) + hr_pld8f(xp + i + 40);
            hr_pv8f s3 = hr_pld8f(xp + i + 48) + hr_pld8f(xp + i + 56);
            s0 = (s0 + s1) + (s2 + s3);
            a0 += __builtin_convertvector(((hr_pv4f){s0[0], s0[1], s0[2], s0[3]}), hr_pv4d);
            a1 += __builtin_convertvector(((hr_pv4f){s0[4], s0[5], s0[6], s0[7]}), hr_pv4d);
        }
        for (; i + 8 <= n; i += 8) {
            hr_pv8f s0 = hr_pld8f(xp + i);
            a0 += __builtin_convertvector(((hr_pv4f){s0[0], s0[1], s0[2], s0[3]}), hr_pv4d);
            a1 += __builtin_convertvector(((hr_pv4f){s0[4], s0[5], s0[6], s0[7]}), hr_pv4d);
        }
        double tail = 0;
        for (; i < n; i++) tail += (double)xp[i];
        a0 += a1;
        out[p] = (float)((((a0[0] + a0[2]) + (a0[1] + a0[3])) + tail) / div);
    }
}

HR_CLONES static void hr_avg_planes_f64(const double* restrict x, double* restrict out,
                                        ptrdiff_t planes, ptrdiff_t n, double div) {
    for (ptrdiff_t p = 0; p < planes; p++) {
        const double* xp = x + p * n;
        hr_pv4d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        ptrdiff_t i = 0;
        for (; i + 16 <= n; i += 16) {
            a0 += hr_pld4d(xp + i);
            a1 += hr_pld4d(xp + i + 4);
            a2 += hr_pld4d(xp + i + 8);
            a3 += hr_pld4d(xp + i + 12);
        }
        for (; i + 4 <= n; i += 4)
            a0 += hr_pld4d(xp + i);
        double tail = 0;
        for (; i < n; i++) tail += xp[i];
        a0 = (a0 + a1) + (a2 + a3);
        out[p] = (((a0[0] + a0[2]) + (a0[1] + a0[3])) + tail) / div;
    }
}

/* out[p] = the maximum of plane p (NaN if it holds one); n >= 1. Lanes run the general rule
 * on their own values, then are folded into one running maximum, then the tail. */
HR_CLONES static void hr_max_planes_f32(const float* restrict x, float* restrict out,
                                        ptrdiff_t planes, ptrdiff_t n) {
    for (ptrdiff_t p = 0; p < planes; p++) {
        const float* xp = x + p * n;
        ptrdiff_t i = 0;
        float m = xp[0];
        if (n >= 8) {
            hr_pv8f m0 = hr_pld8f(xp), m1 = m0;
            for (i = 8; i + 16 <= n; i += 16) {
                hr_pv8f v0 = hr_pld8f(xp + i), v1 = hr_pld8f(xp + i + 8);
                hr_pv8i k0 = HR_TAKES(v0, m0), k1 = HR_TAKES(v1, m1);
                m0 = (hr_pv8f)(((hr_pv8i)m0 & ~k0) | ((hr_pv8i)v0 & k0));
                m1 = (hr_pv8f)(((hr_pv8i)m1 & ~k1) | ((hr_pv8i)v1 & k1));
            }
            hr_pv8i k = HR_TAKES(m1, m0);
            m0 = (hr_pv8f)(((hr_pv8i)m0 & ~k) | ((hr_pv8i)m1 & k));
            m = m0[0];
            for (int l = 1; l < 8; l++) m = HR_TAKES(m0[l], m) ? m0[l] : m;
        }
        for (; i < n; i++) m = HR_TAKES(xp[i], m) ? xp[i] : m;
        out[p] = m;
    }
}

HR_CLONES static void hr_max_planes_f64(const double* restrict x, double* restrict out,
                                        ptrdiff_t planes, ptrdiff_t n) {
    for (ptrdiff_t p = 0; p < planes; p++) {
        const double* xp = x + p * n;
        ptrdiff_t i = 0;
        double m = xp[0];
        if (n >= 4) {
            hr_pv4d m0 = hr_pld4d(xp), m1 = m0;
            for (i = 4; i + 8 <= n; i += 8) {
                hr_pv4d v0 = hr_pld4d(xp + i), v1 = hr_pld4d(xp + i + 4);
                hr_pv4l k0 = HR_TAKES(v0, m0), k1 = HR_TAKES(v1, m1);
                m0 = (hr_pv4d)(((hr_pv4l)m0 & ~k0) | ((hr_pv4l)v0 & k0));
                m1 = (hr_pv4d)(((hr_pv4l)m1 & ~k1) | ((hr_pv4l)v1 & k1));
            }
            hr_pv4l k = HR_TAKES(m1, m0);
            m0 = (hr_pv4d)(((hr_pv4l)m0 & ~k) | ((hr_pv4l)m1 & k));
            m = m0[0];
            for (int l = 1; l < 4; l++) m = HR_TAKES(m0[l], m) ? m0[l] : m;
        }
        for (; i < n; i++) m = HR_TAKES(xp[i], m) ? xp[i] : m;
        out[p] = m;
    }
}

/* avg's gradient: every value of plane p of dx is dy[p] / div, rounded to the type once as
 * the general loop's. */
HR_CLONES static void hr_avg_planes_grad_f32(const float* restrict dy, float* restrict dx,
                                             ptrdiff_t planes, ptrdiff_t n, double div) {
    for (ptrdiff_t p = 0; p < planes; p++) {
        float v = (float)((double)dy[p] / div);
        float* d = dx + p * n;
        for (ptrdiff_t j = 0; j < n; j++) d[j] = v;
    }
}

HR_CLONES static void hr_avg_planes_grad_f64(const double* restrict dy, double* restrict dx,
                                             ptrdiff_t planes, ptrdiff_t n, double div) {
    for (ptrdiff_t p = 0; p < planes; p++) {
        double v = dy[p] / div;
        double* d = dx + p * n;
        for (ptrdiff_t j = 0; j < n; j++) d[j] = v;
    }
}

#endif
