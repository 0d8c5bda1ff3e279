/* float32 exp, sigmoid, tanh and gelu (Phi by erfc) as straight-line arithmetic, so that loops
 * over them vectorize (libm's are scalar calls: 3-4x slower per element, tanh, erfc 10x in
 * double), and the loops themselves compiled once per vector width.
 *
 * Accuracy: within 2e-7 relative of the exact value over the whole float range (a few float32
 * ulp), with exp's overflow to inf, underflow to 0 (through the subnormals) and NaN kept.
 * Everything is selects and arithmetic; compiled with -fno-trapping-math the branches become
 * vector blends. float64 stays on libm, whose results are correctly rounded or nearly so.
 *
 * Why C and not Cython: the loops carry GCC's target_clones, so one build holds an AVX-512,
 * an AVX2+FMA and a baseline (SSE2) version of each and the loader picks the best the CPU
 * has (an ifunc). A portable -O3 build alone vectorizes for SSE2 only: 4 floats a step where
 * the CPUs this runs on do 8 or 16. The math is always_inline, so each clone inlines it and
 * compiles it for its own target (at -O2 GCC otherwise keeps the larger ones, Phi, as scalar
 * calls: gelu ran 30x slower). FMA contraction in the wider clones changes results by at
 * most an ulp here (every step is a short polynomial or an exact split). */
#ifndef HEADRACE_FASTMATH_H
#define HEADRACE_FASTMATH_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__)) \
    && defined(__linux__)
#define HR_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define HR_CLONES
#endif

#if defined(__GNUC__)
#define HR_MATH static inline __attribute__((always_inline))
#else
#define HR_MATH static inline
#endif

typedef union { float f; int32_t i; } hr_f32bits;

/* exp(x) = 2**n * e**r with |r| <= ln2/2 (Cephes' expf polynomial). The scale 2**n is applied
 * as two factors 2**(n//2) 2**(n - n//2), each a normal float for n in [-152, 128], so
 * results near the overflow and in the subnormal range round correctly. */
HR_MATH float hr_fexp(float x) {
    float t, n, r, p;
    int32_t k, k1;
    hr_f32bits u, s1, s2;
    x = x > 89.0f ? 89.0f : x;          /* beyond these the result is inf / 0 anyway */
    x = x < -105.0f ? -105.0f : x;
    t = x * 1.44269504f + 12582912.0f;  /* 1.5 * 2**23: rounds to an integer n */
    n = t - 12582912.0f;
    r = x - n * 0.693359375f;           /* ln 2 in two parts, exact products */
    r = r - n * -2.12194440e-4f;
    p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    u.f = t;
    k = u.i - 0x4B400000;               /* n, from the low mantissa bits of t */
    k1 = k >> 1;
    s1.i = (k1 + 127) << 23;
    s2.i = (k - k1 + 127) << 23;
    return p * s1.f * s2.f;             /* NaN in, NaN out (through p) */
}

/* 1 / (1 + exp(-x)) from e = exp(-|x|) <= 1: never overflows, keeps the tails. */
HR_MATH float hr_fsigmoid(float x) {
    float e = hr_fexp(x >= 0.0f ? -x : x);
    float r = 1.0f / (1.0f + e);
    return x >= 0.0f ? r : e * r;
}

/* Cephes' tanhf: an odd polynomial for |x| < 0.625 (where 1 - 2/(e**2x + 1) would cancel),
 * 1 - 2 / (exp(2|x|) + 1) with x's sign beyond. */
HR_MATH float hr_ftanh(float x) {
    float z = x >= 0.0f ? x : -x;
    float z2 = x * x;
    float small = ((((-5.70498872745e-3f * z2 + 2.06390887954e-2f) * z2
                     - 5.37397155531e-2f) * z2 + 1.33314422036e-1f) * z2
                   - 3.33332819422e-1f) * z2 * x + x;
    float big = 1.0f - 2.0f / (hr_fexp(2.0f * z) + 1.0f);
    big = x < 0.0f ? -big : big;
    return z < 0.625f ? small : big;
}

/* exp(-x**2 / 2), formed from the float32 x itself: x = xh + xl with xh's low 12 bits cleared,
 * so xh**2 is exact and the exponent carries no rounding error (which exp would turn into a
 * relative error of x**2 / 2 ulp in the tail). The rest, exp(d) with d = -xl (x + xh) / 2,
 * |d| <= x**2 2**-11 < 0.11, is a degree-5 Taylor polynomial (remainder < 3e-9). 0 where
 * x**2 >= 220 (below 1e-47 there). */
HR_MATH float hr_fexp_halfsq(float x) {
    hr_f32bits h;
    float xl, d, ed;
    h.f = x;
    h.i = h.i & (int32_t)0xFFFFF000;
    xl = x - h.f;
    d = -0.5f * xl * (x + h.f);
    ed = 1.0f + d * (1.0f + d * (0.5f + d * (1.6666667e-1f + d * (4.1666668e-2f
                                                                   + d * 8.3333338e-3f))));
    return x * x < 220.0f ? hr_fexp(-0.5f * h.f * h.f) * ed : 0.0f;   /* no inf * 0 beyond */
}

/* The standard normal CDF Phi(x) = 0.5 erfc(-x / sqrt 2), erfc by Cephes' erfcf
 * (single/ndtrf.c): 1 - a T(a**2) for |a| < 1, else exp(-a**2) / |a| times a polynomial in
 * 1/a**2 (one for |a| < 2, one beyond), reflected as 2 - erfc(|a|) for a < 0. Both sides are
 * computed and one selected, so loops over it vectorize. e = hr_fexp_halfsq(x) = exp(-a**2),
 * passed in so that gelu's gradient computes it once for Phi and phi. */
HR_MATH float hr_fphi_e(float x, float e) {
    float a = x * -0.7071067811865476f;
    float ax = a >= 0.0f ? a : -a;
    float z2 = a * a;
    float t, small, q, y, p, r, big;
    t = ((((((7.853861353153693e-5f * z2 - 8.010193625184903e-4f) * z2
             + 5.188327685732524e-3f) * z2 - 2.685381193529856e-2f) * z2
           + 1.128358514861418e-1f) * z2 - 3.761262582423300e-1f) * z2
         + 1.128379165726710f);
    small = 1.0f - a * t;
    q = 1.0f / ax;
    y = q * q;
    p = ((((((((2.326819970068386e-2f * y - 1.387039388740657e-1f) * y
               + 3.687424674597105e-1f) * y - 5.824733027278666e-1f) * y
             + 6.210004621745983e-1f) * y - 4.944515323274145e-1f) * y
           + 3.404879937665872e-1f) * y - 2.741127028184656e-1f) * y
         + 5.638259427386472e-1f);
    r = (((((((-1.047766399936249e1f * y + 1.297719955372516e1f) * y
              - 7.495518717768503f) * y + 2.921019019210786f) * y
            - 1.015265279202700f) * y + 4.218463358204948e-1f) * y
          - 2.820767439740514e-1f) * y + 5.641895067754075e-1f);
    big = e * q * (ax < 2.0f ? p : r);
    big = a < 0.0f ? 2.0f - big : big;
    return 0.5f * (ax < 1.0f ? small : big);
}

HR_MATH float hr_fphi(float x) { return hr_fphi_e(x, hr_fexp_halfsq(x)); }

/* gelu(x) = x Phi(x). */
HR_MATH float hr_fgelu(float x) { return x * hr_fphi(x); }

/* gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x**2 / 2) / sqrt(2 pi), the exp shared with Phi
 * (exact in its argument, as there). Where the sum cancels (x near -0.75, the minimum of
 * gelu) the error is a few ulp of Phi. */
HR_MATH float hr_fdgelu(float x) {
    float e = hr_fexp_halfsq(x);
    return hr_fphi_e(x, e) + x * 0.3989422804014327f * e;
}

/* -- the loops, one clone per vector width ------------------------------------------------- */

HR_CLONES static void hr_f32_exp(const float* x, float* out, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = hr_fexp(x[i]);
}

HR_CLONES static void hr_f32_sigmoid(const float* x, float* out, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = hr_fsigmoid(x[i]);
}

HR_CLONES static void hr_f32_tanh(const float* x, float* out, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = hr_ftanh(x[i]);
}

HR_CLONES static void hr_f32_swish(const float* x, float* out, ptrdiff_t n, float beta) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = x[i] * hr_fsigmoid(beta * x[i]);
}

HR_CLONES static void hr_f32_gelu(const float* x, float* out, ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = hr_fgelu(x[i]);
}

/* x s(2u), u = sqrt(2/pi) (x + 0.044715 x**3): 0.5 (1 + tanh u) without cancelling. */
HR_CLONES static void hr_f32_gelu_tanh(const float* x, float* out, ptrdiff_t n) {
    const float c = 2.0f * 0.7978845608028654f;
    for (ptrdiff_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = v * hr_fsigmoid(c * (v + 0.044715f * v * v * v));
    }
}

HR_CLONES static void hr_f32_gelu_grad(const float* x, const float* d, float* out,
                                       ptrdiff_t n) {
    for (ptrdiff_t i = 0; i < n; i++) out[i] = d[i] * hr_fdgelu(x[i]);
}

#endif
