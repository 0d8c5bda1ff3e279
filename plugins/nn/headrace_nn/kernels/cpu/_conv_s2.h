/* conv2d forward of column stride 2 (a ResNet's 3x3 stride-2 downsampling conv and its 1x1
 * stride-2 shortcut projection) reading each image where it lies, for _conv_direct.h's
 * hr_cd_conv (included there, inside its AVX-512 section: hr_cd_span, HR_AVX512, hr_cd_geom,
 * HR_CD_FULL and HR_CD_MASKED).
 *
 * hr_cd_conv's other path first copies each image into a zero-padded buffer split by column
 * phase, so that every tap of 16 outputs is one contiguous load. For the small ResNet's 16 -> 32
 * channel, 32x32 -> 16x16 layer that copy was ~20% of the layer (perf: hr_cd_prep 13% of the
 * samples beside 49% in the tiles, at batch 64 and at batch 1 alike): 72 KB of misaligned
 * stores per image, read back from L2. Here tap (c, i, j) of output vector v (16 columns from
 * ow of row oh) loads the 32 input columns from 2*ow - pl + j*dw of row oh*sh - pt + i*dh
 * (two masked loads: padding is the masks' zero lanes, a row outside the image no lane at
 * all) and keeps the even ones with one in-lane shuffle (vshufps), which leaves them in the
 * order 0 1 8 9 | 2 3 10 11 | ...: every tap's vector in that same order, so the
 * accumulators are put back in column order once, before the store. A cross-lane permute
 * per tap (vpermt2ps) measured as slow as the copy it saves: on this AMD core it takes the
 * multiply-adds' pipes longer than the shuffle. The 1x1 projection (16 -> 32 channels) had a
 * kernel of its own with that permute, 8 filters x 3 vectors a tile and the next image's
 * input rows prefetched: 246 -> 196 us at batch 64 (3.5 -> 3.1 us at batch 1) here (a C
 * harness of hr_cd_conv, one thread).
 *
 * The masks of each vector and tap (i, j) of the filter's kh*kw come from a table built once
 * per call; the input offset of tap (c, i, j) is c*plane + toff[i*kw + j] + ib[v]. */
#ifndef HEADRACE_CONV_S2_H
#define HEADRACE_CONV_S2_H

/* One tap t of a tile over the channels: each vector's two loads (LA, LB: HR_CD_FULL or
 * HR_CD_MASKED, _conv_direct.h) at xp[v], shuffled, times the tap's MB weights wr[r] of
 * each channel (kk * ldw floats apart). */
#define HR_CD_S2T_CHANNELS(MB, NV, LA, LB)                                                   \
    for (int c = 0; c < Cin; c++, wr += (size_t)kk * ldw) {                                  \
        __m512 xv[NV];                                                                       \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                               \
            xv[v] = _mm512_shuffle_ps(LA(la[v], xp[v]), LB(lb[v], xp[v] + 16), 0x88);        \
            xp[v] += plane;                                                                  \
        }                                                                                    \
        _Pragma("GCC unroll 16") for (int r = 0; r < MB; r++) {                              \
            __m512 b = _mm512_set1_ps(wr[r]);                                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++)                             \
                a[r][v] = _mm512_fmadd_ps(b, xv[v], a[r][v]);                                \
        }                                                                                    \
    }

/* Tile: MB filters x NV vectors. wt[(c*kk + t) * ldw + r]: filter r's weight of channel c,
 * tap t; ka/kb[v*kk + t]: vector v's masks for tap t. The taps run (i, j) outside the
 * channels, so that a vector's two masks stay in registers over the channels, and a tap
 * whose loads all have 16 lanes (every tap but the row's first and last columns' in the
 * small ResNet's layer) loads them without masks: masked loads measured slower on this AMD
 * core (_conv_direct.h's hr_cd_fwdf_*). */
#define HR_CD_S2T(MB, NV)                                                                    \
HR_AVX512 static void hr_cd_s2t_##MB##_##NV(int Cin, int kk, const float* wt, int ldw,        \
        const float* x, ptrdiff_t plane, const ptrdiff_t* toff, const ptrdiff_t* ib,        \
        const __mmask16* ka, const __mmask16* kb, const int* ob, const unsigned short* mk,  \
        float* out, ptrdiff_t ldo, int acc, const float* bias, int relu) {                   \
    const __m512i order = _mm512_set_epi32(15, 14, 11, 10, 7, 6, 3, 2, 13, 12, 9, 8, 5, 4,  \
                                           1, 0);                                            \
    __m512 a[MB][NV];                                                                        \
    _Pragma("GCC unroll 16") for (int r = 0; r < MB; r++)                                     \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] = _mm512_setzero_ps();   \
    for (int t = 0; t < kk; t++) {                                                           \
        __mmask16 la[NV], lb[NV];                                                            \
        const float* xp[NV];                                                                 \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                               \
            la[v] = ka[v * kk + t];                                                          \
            lb[v] = kb[v * kk + t];                                                          \
            xp[v] = x + toff[t] + ib[v];                                                     \
        }                                                                                    \
        const float* wr = wt + (size_t)t * ldw;                                              \
        int fa = 1, fb = 1;                                                                  \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                               \
            fa &= la[v] == 0xFFFF;                                                           \
            fb &= lb[v] == 0xFFFF;                                                           \
        }                                                                                    \
        if (fa && fb)                                                                        \
            HR_CD_S2T_CHANNELS(MB, NV, HR_CD_FULL, HR_CD_FULL)                               \
        else if (fa)                                                                         \
            HR_CD_S2T_CHANNELS(MB, NV, HR_CD_FULL, HR_CD_MASKED)                             \
        else if (fb)                                                                         \
            HR_CD_S2T_CHANNELS(MB, NV, HR_CD_MASKED, HR_CD_FULL)                             \
        else                                                                                 \
            HR_CD_S2T_CHANNELS(MB, NV, HR_CD_MASKED, HR_CD_MASKED)                           \
    }                                                                                        \
    _Pragma("GCC unroll 16") for (int r = 0; r < MB; r++)                                     \
        _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) {                               \
            float* o = out + r * ldo + ob[v];                                                \
            __m512 s = _mm512_permutexvar_ps(order, a[r][v]);                                \
            if (acc)                                                                         \
                s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mk[v], o));                       \
            if (bias)                                                                        \
                s = _mm512_add_ps(s, _mm512_set1_ps(bias[r]));                               \
            if (relu)                                                                        \
                s = _mm512_max_ps(_mm512_setzero_ps(), s);                                   \
            _mm512_mask_storeu_ps(o, mk[v], s);                                              \
        }                                                                                    \
}

HR_CD_S2T(16, 1) HR_CD_S2T(8, 3) HR_CD_S2T(8, 2) HR_CD_S2T(8, 1) HR_CD_S2T(4, 3) HR_CD_S2T(4, 2)
HR_CD_S2T(4, 1) HR_CD_S2T(1, 3) HR_CD_S2T(1, 2) HR_CD_S2T(1, 1)

/* 0: hr_cd_conv takes such convs through the padded copy instead (conv.pyx's s2_in_place,
 * for the tests' and the benchmarks' comparisons). */
static int hr_cd_s2t_on = 1;

/* Whether hr_cd_conv takes g through hr_cd_conv_s2t: column stride 2. */
static inline int hr_cd_s2t_fits(const hr_cd_geom* g) {
    return g->sw == 2;
}

/* hr_cd_conv of such a geometry; -1: no memory. The next image's output lines of a group of
 * vectors are prefetched for writing while the group is computed; its input rows are not
 * (prefetching them measured 4-5% slower at batch 8 and 64 for the 3x3 conv, one
 * thread, and no faster within bench_inference's ResNet). */
HR_AVX512 static int hr_cd_conv_s2t(const float* src, ptrdiff_t img_in, float* out,
                                    ptrdiff_t img_out, ptrdiff_t n, const hr_cd_geom* g,
                                    const float* wt, int acc) {
    int per_row = (g->Wo + 15) / 16, nvec = g->Ho * per_row, kk = g->kh * g->kw;
    size_t each = sizeof(ptrdiff_t) + sizeof(int) + sizeof(unsigned short) +
                  2 * sizeof(__mmask16) * (size_t)kk;
    ptrdiff_t* ib = malloc(each * (size_t)nvec + sizeof(ptrdiff_t) * (size_t)kk);
    if (!ib)
        return -1;
    ptrdiff_t* toff = ib + nvec;
    int* ob = (int*)(toff + kk);
    __mmask16* ka = (__mmask16*)(ob + nvec);
    __mmask16* kb = ka + (size_t)nvec * kk;
    unsigned short* mk = (unsigned short*)(kb + (size_t)nvec * kk);
    for (int i = 0; i < g->kh; i++)
        for (int j = 0; j < g->kw; j++)
            toff[i * g->kw + j] = (ptrdiff_t)i * g->dh * g->Win + (ptrdiff_t)j * g->dw;
    for (int oh = 0, v = 0; oh < g->Ho; oh++)
        for (int ow = 0; ow < g->Wo; ow += 16, v++) {
            int w = g->Wo - ow < 16 ? g->Wo - ow : 16;
            ib[v] = (ptrdiff_t)(oh * g->sh - g->pt) * g->Win + 2 * ow - g->pl;
            ob[v] = oh * g->Wo + ow;
            mk[v] = (unsigned short)((1u << w) - 1);
            for (int i = 0; i < g->kh; i++) {
                int ih = oh * g->sh - g->pt + i * g->dh;
                for (int j = 0; j < g->kw; j++) {
                    int col = 2 * ow - g->pl + j * g->dw, t = v * kk + i * g->kw + j;
                    int in = ih >= 0 && ih < g->Hin;
                    ka[t] = in ? hr_cd_span(col, g->Win) : 0;
                    kb[t] = in ? hr_cd_span(col + 16, g->Win) : 0;
                }
            }
        }
    ptrdiff_t plane = (ptrdiff_t)g->Hin * g->Win, ldo = (ptrdiff_t)g->Ho * g->Wo;
    /* Filter blocks: 16 filters x 1 vector a tile (measured fastest: with 16 accumulators
     * the multiply-adds take the filters' weights as embedded broadcasts, and each input
     * vector's shuffle serves 16 of them; 8 x 3 and 12 x 2 tiles measured 6% slower), then 8,
     * 4 and 1 filters x up to 3 vectors; the weights packed block by block, [K][block]. */
    int nvmax = g->Cout >= 16 ? 1 : 3, K = g->Cin * kk;
#define S2T_BLOCK(m) \
    (g->Cout - (m) >= 16 ? 16 : g->Cout - (m) >= 8 ? 8 : g->Cout - (m) >= 4 ? 4 : 1)
    float* wp = malloc(sizeof(float) * (size_t)K * g->Cout);
    if (!wp) {
        free(ib);
        return -1;
    }
    for (int m = 0, w; m < g->Cout; m += w) {
        /* one masked 16-float copy a tap (GCC made the plain loop a `rep movsq` per tap,
         * ~35 cycles each: 12% of the 16 -> 32 channel layer at batch 1) */
        w = S2T_BLOCK(m);
        __mmask16 k = (__mmask16)((1u << w) - 1);
        for (int t = 0; t < K; t++)
            _mm512_mask_storeu_ps(wp + (size_t)m * K + (size_t)t * w, k,
                                  _mm512_maskz_loadu_ps(k, wt + (size_t)t * g->Cout + m));
    }
#define S2T_CALL(MB, NV)                                                                     \
    hr_cd_s2t_##MB##_##NV(g->Cin, kk, wp + (size_t)m * K, MB, x, plane, toff, ib + v,       \
                          ka + v * kk, kb + v * kk, ob + v, mk + v, o + m * ldo, ldo, acc,   \
                          g->bias ? g->bias + m : NULL, g->relu)
    for (ptrdiff_t b = 0; b < n; b++) {
        const float* x = src + b * img_in;
        float* o = out + b * img_out;
        for (int v = 0, nv; v < nvec; v += nv) {
            int rem = nvec - v;
            nv = rem == 4 && nvmax == 3 ? 2 : rem < nvmax ? rem : nvmax;
            if (b + 1 < n)   /* the next image's output lines of these vectors */
                for (int u = v; u < v + nv; u++)
                    for (int m = 0; m < g->Cout; m++)
                        __builtin_prefetch(o + img_out + m * ldo + ob[u], 1, 2);
            for (int m = 0, w; m < g->Cout; m += w) {
                w = S2T_BLOCK(m);
                if (w == 16)
                    S2T_CALL(16, 1);
                else if (w == 8 && nv == 3)
                    S2T_CALL(8, 3);
                else if (w == 8 && nv == 2)
                    S2T_CALL(8, 2);
                else if (w == 8)
                    S2T_CALL(8, 1);
                else if (w == 4 && nv == 3)
                    S2T_CALL(4, 3);
                else if (w == 4 && nv == 2)
                    S2T_CALL(4, 2);
                else if (w == 4)
                    S2T_CALL(4, 1);
                else if (nv == 3)
                    S2T_CALL(1, 3);
                else if (nv == 2)
                    S2T_CALL(1, 2);
                else
                    S2T_CALL(1, 1);
            }
        }
    }
#undef S2T_CALL
#undef S2T_BLOCK
    free(wp);
    free(ib);
    return 0;
}

#endif
