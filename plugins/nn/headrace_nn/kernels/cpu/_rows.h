/* float32 row kernels of layer_norm and softmax (last axis) in C, one clone per vector width.
 *
 * Why C: the reductions (a row's sum, max, dot product) do not vectorize when written as one
 * running scalar (the compiler may not reorder float additions), and a Cython build targets
 * SSE2 only. Here every reduction runs over HR_LANES independent partial results, which
 * vectorizes without reassociating anything, and GCC's target_clones compile each loop for
 * AVX-512, AVX2+FMA and the baseline (the loader picks the widest the CPU has). The partial
 * sums are double, as the scalar kernels' running sums were: a float32 row of many values
 * keeps its precision. The partials are combined in a fixed order, so results do not depend
 * on the clone that ran. */
#ifndef HEADRACE_NN_ROWS_H
#define HEADRACE_NN_ROWS_H

#include <math.h>
#include <stddef.h>

#include "headrace/kernels/fastmath.h"

#define HR_LANES 16

/* sum over i < n of f(i) in double, HR_LANES partial sums combined pairwise. */
#define HR_ROW_SUM(result, n, expr)                                                       \
    do {                                                                                  \
        double acc_[HR_LANES] = {0};                                                      \
        ptrdiff_t i = 0;                                                                  \
        for (; i + HR_LANES <= (n); i += HR_LANES) {                                      \
            for (int l_ = 0; l_ < HR_LANES; l_++) {                                       \
                ptrdiff_t j = i + l_;                                                     \
                acc_[l_] += (double)(expr);                                               \
            }                                                                             \
        }                                                                                 \
        for (int l_ = 0; i < (n); i++, l_++) {                                            \
            ptrdiff_t j = i;                                                              \
            acc_[l_] += (double)(expr);                                                   \
        }                                                                                 \
        for (int w_ = HR_LANES / 2; w_ > 0; w_ /= 2)                                      \
            for (int l_ = 0; l_ < w_; l_++)                                               \
                acc_[l_] += acc_[l_ + w_];                                                \
        (result) = acc_[0];                                                               \
    } while (0)

/* layer_norm of `rows` rows of n values: mean and variance per row (two passes, the variance
 * of the deviations), then y = (x - mean) / sqrt(var + eps) * s + b (s, b NULL: 1 and 0). */
HR_CLONES static void hr_layer_norm_f32(const float* restrict x, const float* restrict s,
                                        const float* restrict b, float* restrict y,
                                        float* restrict mean, float* restrict var,
                                        ptrdiff_t rows, ptrdiff_t n, double eps) {
    for (ptrdiff_t r = 0; r < rows; r++) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        double m, v;
        HR_ROW_SUM(m, n, xr[j]);
        m /= (double)n;
        float mf = (float)m;
        HR_ROW_SUM(v, n, ((double)xr[j] - m) * ((double)xr[j] - m));
        v /= (double)n;
        mean[r] = mf;
        var[r] = (float)v;
        float inv = (float)(1.0 / sqrt(v + eps));
        if (s != NULL && b != NULL)
            for (ptrdiff_t j = 0; j < n; j++) yr[j] = (xr[j] - mf) * inv * s[j] + b[j];
        else if (s != NULL)
            for (ptrdiff_t j = 0; j < n; j++) yr[j] = (xr[j] - mf) * inv * s[j];
        else if (b != NULL)
            for (ptrdiff_t j = 0; j < n; j++) yr[j] = (xr[j] - mf) * inv + b[j];
        else
            for (ptrdiff_t j = 0; j < n; j++) yr[j] = (xr[j] - mf) * inv;
    }
}

/* layer_norm_grad with xhat = (x - mean) inv, g = dy s: dx = inv (g - mean(g) - xhat
 * mean(g xhat)); ds += dy xhat and db += dy summed over the rows in double (NULL: not
 * wanted), dx NULL when not wanted. s NULL: 1. */
HR_CLONES static void hr_layer_norm_grad_f32(const float* restrict x, const float* restrict s,
                                             const float* restrict mean,
                                             const float* restrict var,
                                             const float* restrict dy, float* restrict dx,
                                             double* restrict ds, double* restrict db,
                                             ptrdiff_t rows, ptrdiff_t n, double eps) {
    for (ptrdiff_t r = 0; r < rows; r++) {
        const float* xr = x + r * n;
        const float* gr = dy + r * n;
        float m = mean[r];
        float inv = (float)(1.0 / sqrt((double)var[r] + eps));
        if (ds != NULL)
            for (ptrdiff_t j = 0; j < n; j++) ds[j] += (double)gr[j] * ((xr[j] - m) * inv);
        if (db != NULL)
            for (ptrdiff_t j = 0; j < n; j++) db[j] += (double)gr[j];
        if (dx == NULL)
            continue;
        float* dr = dx + r * n;
        double sg, sgx;
        if (s != NULL) {
            HR_ROW_SUM(sg, n, gr[j] * s[j]);
            HR_ROW_SUM(sgx, n, gr[j] * s[j] * ((xr[j] - m) * inv));
        } else {
            HR_ROW_SUM(sg, n, gr[j]);
            HR_ROW_SUM(sgx, n, gr[j] * ((xr[j] - m) * inv));
        }
        float mg = (float)(sg / (double)n), mgx = (float)(sgx / (double)n);
        if (s != NULL)
            for (ptrdiff_t j = 0; j < n; j++)
                dr[j] = inv * (gr[j] * s[j] - mg - (xr[j] - m) * inv * mgx);
        else
            for (ptrdiff_t j = 0; j < n; j++)
                dr[j] = inv * (gr[j] - mg - (xr[j] - m) * inv * mgx);
    }
}

/* softmax of each contiguous row of n values: the max (HR_LANES running maxima), exp(x - max)
 * by fastmath.h's float32 exp, the sum in double, then the scale. */
HR_CLONES static void hr_softmax_rows_f32(const float* restrict x, float* restrict out,
                                          ptrdiff_t rows, ptrdiff_t n) {
    for (ptrdiff_t r = 0; r < rows; r++) {
        const float* xr = x + r * n;
        float* o = out + r * n;
        float mx[HR_LANES];
        for (int l = 0; l < HR_LANES; l++) mx[l] = xr[0];
        ptrdiff_t i = 0;
        for (; i + HR_LANES <= n; i += HR_LANES)
            for (int l = 0; l < HR_LANES; l++)
                mx[l] = xr[i + l] > mx[l] ? xr[i + l] : mx[l];
        for (int l = 0; i < n; i++, l++)
            mx[l] = xr[i] > mx[l] ? xr[i] : mx[l];
        float m = mx[0];
        for (int l = 1; l < HR_LANES; l++) m = mx[l] > m ? mx[l] : m;
        for (ptrdiff_t j = 0; j < n; j++) o[j] = hr_fexp(xr[j] - m);
        double sum;
        HR_ROW_SUM(sum, n, o[j]);
        float inv = (float)(1.0 / sum);
        for (ptrdiff_t j = 0; j < n; j++) o[j] *= inv;
    }
}

/* softmax_grad of contiguous rows: dx = y (dy - sum(y dy)), the dot product in double. */
HR_CLONES static void hr_softmax_grad_rows_f32(const float* restrict y, const float* restrict dy,
                                               float* restrict dx, ptrdiff_t rows,
                                               ptrdiff_t n) {
    for (ptrdiff_t r = 0; r < rows; r++) {
        const float* yr = y + r * n;
        const float* gr = dy + r * n;
        float* d = dx + r * n;
        double dot;
        HR_ROW_SUM(dot, n, yr[j] * gr[j]);
        float sf = (float)dot;
        for (ptrdiff_t j = 0; j < n; j++) d[j] = yr[j] * (gr[j] - sf);
    }
}

#endif
