/* The recurrent kernels' float32 helpers in C: the LSTM cells of one step, forward and
 * backward (one clone per vector width), of dynamic_lstm and of the rnn op. Their GEMM is the
 * core's (headrace/kernels/packed_gemm.h). */
#ifndef HEADRACE_RNN_GEMM_H
#define HEADRACE_RNN_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "headrace/kernels/fastmath.h"

#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__)) \
    && defined(__linux__)
#define HR_RNN_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define HR_RNN_CLONES
#endif

/* The cells of one step for the default activations (sigmoid gates, tanh candidate and cell),
 * each a single pass over its rows with no temporaries: the math is fastmath.h's inline
 * sigmoid/tanh, so the loops vectorize (restrict: the operands never overlap). Rows r < n are
 * the step's sequences in rank order; idx[r] is the row of Input's order (Input, Hidden,
 * Cell and their gradients) that holds sequence r's step. Gate layout per row (stride 4d):
 * [candidate, input, forget, output]; peep = {W_ic, W_fc, W_oc} or NULL. */

static inline __attribute__((always_inline)) void hr_lstm_row(
        int d, const float* restrict x, const float* restrict bias, const float* restrict peep,
        int product, const float* restrict pc, float* restrict g, float* restrict c,
        float* restrict h, float* restrict hidden, float* restrict cell, const int with_peep,
        const int with_pc) {
    /* one pointer per gate block: offsets inside the index make GCC gather and scatter */
    const float *restrict xi = x + d, *restrict xf = x + 2 * d, *restrict xo = x + 3 * d;
    const float *restrict bi = bias + d, *restrict bf = bias + 2 * d, *restrict bo = bias + 3 * d;
    const float *restrict pi = peep, *restrict pf = peep, *restrict po = peep;
    float *restrict gi = g + d, *restrict gf = g + 2 * d, *restrict go = g + 3 * d;
    if (with_peep) {
        pf = peep + d;
        po = peep + 2 * d;
    }
#pragma GCC ivdep
    for (ptrdiff_t j = 0; j < d; j++) {
        float zc = x[j] + bias[j], zi = xi[j] + bi[j], zf = xf[j] + bf[j], zo = xo[j] + bo[j];
        if (product) {   /* the recurrent product h' W, already in g */
            zc = g[j] + zc;
            zi = gi[j] + zi;
            zf = gf[j] + zf;
            zo = go[j] + zo;
        }
        float cp = with_pc ? pc[j] : 0.0f;
        if (with_peep && with_pc) {
            zi += pi[j] * cp;
            zf += pf[j] * cp;
        }
        float cand = hr_ftanh(zc), i = hr_fsigmoid(zi), f = hr_fsigmoid(zf);
        float cv = with_pc ? i * cand + f * cp : i * cand;
        if (with_peep)
            zo += po[j] * cv;
        float o = hr_fsigmoid(zo);
        float hv = o * hr_ftanh(cv);
        g[j] = cand;
        gi[j] = i;
        gf[j] = f;
        go[j] = o;
        c[j] = cv;
        cell[j] = cv;
        h[j] = hv;
        hidden[j] = hv;
    }
}

/* Forward: the pre-activations are x[idx[r]] + bias (+ the recurrent product in g when
 * `product`) (+ the peepholes' terms). g gets the activated gates (BatchGate), c the cells
 * (BatchCellPreAct), h this step's hidden rows (rank order: the next product's operand),
 * hidden/cell their rows idx[r]. pc: the cells of the step before (rank order), or NULL (0). */
HR_RNN_CLONES static void hr_lstm_cells(ptrdiff_t n, int d, const float* x, const int64_t* idx,
                                        const float* bias, const float* peep, int product,
                                        const float* pc, float* g, float* c, float* h,
                                        float* hidden, float* cell) {
    for (ptrdiff_t r = 0; r < n; r++) {
        const float* xr = x + idx[r] * 4 * d;
        const float* pr = pc == NULL ? NULL : pc + r * d;
        float* gr = g + r * 4 * d;
        float* cr = c + r * d;
        float* hr = h + r * d;
        float* hid = hidden + idx[r] * d;
        float* cel = cell + idx[r] * d;
        if (peep == NULL && pr != NULL)
            hr_lstm_row(d, xr, bias, peep, product, pr, gr, cr, hr, hid, cel, 0, 1);
        else if (peep == NULL)
            hr_lstm_row(d, xr, bias, peep, product, pr, gr, cr, hr, hid, cel, 0, 0);
        else if (pr != NULL)
            hr_lstm_row(d, xr, bias, peep, product, pr, gr, cr, hr, hid, cel, 1, 1);
        else
            hr_lstm_row(d, xr, bias, peep, product, pr, gr, cr, hr, hid, cel, 1, 0);
    }
}

static inline __attribute__((always_inline)) void hr_lstm_row_grad(
        int d, const float* restrict g, const float* restrict c, const float* restrict pc,
        const float* restrict dhid, const float* restrict dcell, const float* restrict dh,
        float* restrict dc, float* restrict e, float* restrict dx, float* restrict db,
        const float* restrict peep, float* restrict dpeep, const int with_peep,
        const int with_dhid, const int with_dcell) {
    /* one pointer per gate block: offsets inside the index make GCC gather and scatter */
    const float *restrict gi = g + d, *restrict gf = g + 2 * d, *restrict go = g + 3 * d;
    float *restrict ei = e + d, *restrict ef = e + 2 * d, *restrict eo = e + 3 * d;
    float *restrict xi = dx + d, *restrict xf = dx + 2 * d, *restrict xo = dx + 3 * d;
    float *restrict bi = db + d, *restrict bf = db + 2 * d, *restrict bo = db + 3 * d;
    const float *restrict pi = peep, *restrict pf = peep, *restrict po = peep;
    float *restrict qi = dpeep, *restrict qf = dpeep, *restrict qo = dpeep;
    if (with_peep) {
        pf = peep + d;
        po = peep + 2 * d;
        qf = dpeep + d;
        qo = dpeep + 2 * d;
    }
#pragma GCC ivdep
    for (ptrdiff_t j = 0; j < d; j++) {
        float o = go[j], i = gi[j], f = gf[j], cand = g[j], cp = pc[j];
        float at = hr_ftanh(c[j]);
        float dhh = with_dhid ? dh[j] + dhid[j] : dh[j];
        float dcc = with_dcell ? dc[j] + dcell[j] : dc[j];
        float dgo = dhh * at * o * (1.0f - o);
        dcc = dcc + dhh * o * (1.0f - at * at);
        if (with_peep)
            dcc = dcc + dgo * po[j];
        float dgc = dcc * i * (1.0f - cand * cand);
        float dgi = dcc * cand * i * (1.0f - i);
        float dgf = dcc * cp * f * (1.0f - f);
        e[j] = dgc;
        ei[j] = dgi;
        ef[j] = dgf;
        eo[j] = dgo;
        dx[j] = dgc;
        xi[j] = dgi;
        xf[j] = dgf;
        xo[j] = dgo;
        db[j] += dgc;
        bi[j] += dgi;
        bf[j] += dgf;
        bo[j] += dgo;
        if (with_peep) {
            dc[j] = dcc * f + dgi * pi[j] + dgf * pf[j];
            qi[j] += dgi * cp;
            qf[j] += dgf * cp;
            qo[j] += dgo * c[j];
        } else {
            dc[j] = dcc * f;
        }
    }
}

/* Backward, the forward's cells in one pass: dh (rank order) holds the gradient reaching h
 * from the step after, dhid/dcell (Input's order, rows idx[r]; either may be NULL) the
 * gradients of this step's own outputs, dc (rank order) the cell's from the step after and
 * leaves it as the gradient of the cell before. The gates' pre-activation gradients go to e
 * (rank order, row stride lde: the operand of the product into dh of the step before) and to
 * dx's rows idx[r] (Input@GRAD), and are summed into db; with peep, dpeep sums the peepholes'
 * gradients. pc: the cells of the step before (rank order; zeros at the first step without
 * C0). */
HR_RNN_CLONES static void hr_lstm_cells_grad(ptrdiff_t n, int d, const float* g, const float* c,
                                             const float* pc, const int64_t* idx,
                                             const float* dhid, const float* dcell,
                                             const float* dh, float* dc, float* e,
                                             ptrdiff_t lde, float* dx, float* db,
                                             const float* peep, float* dpeep) {
    for (ptrdiff_t r = 0; r < n; r++) {
        const float* gr = g + r * 4 * d;
        const float* cr = c + r * d;
        const float* pr = pc + r * d;
        const float* dhr = dh + r * d;
        const float* hid = dhid == NULL ? NULL : dhid + idx[r] * d;
        const float* cel = dcell == NULL ? NULL : dcell + idx[r] * d;
        float* dcr = dc + r * d;
        float* er = e + r * lde;
        float* dxr = dx + idx[r] * 4 * d;
        if (peep != NULL)   /* peepholes: rarer, one general loop */
            hr_lstm_row_grad(d, gr, cr, pr, hid, cel, dhr, dcr, er, dxr, db, peep, dpeep, 1,
                             hid != NULL, cel != NULL);
        else if (hid != NULL && cel != NULL)
            hr_lstm_row_grad(d, gr, cr, pr, hid, cel, dhr, dcr, er, dxr, db, peep, dpeep, 0, 1,
                             1);
        else if (hid != NULL)
            hr_lstm_row_grad(d, gr, cr, pr, hid, cel, dhr, dcr, er, dxr, db, peep, dpeep, 0, 1,
                             0);
        else
            hr_lstm_row_grad(d, gr, cr, pr, hid, cel, dhr, dcr, er, dxr, db, peep, dpeep, 0,
                             0, cel != NULL);
    }
}

/* Paddle 3's rnn op (rnn.pyx), LSTM mode, one sequence's step in one pass: its Reserve row
 * holds [i, f, g, o] pre-activations less the biases (input projection and the recurrent
 * product; bias: [4H], both biases summed) and gets the activated gates, the cell c (at 4H)
 * and h (at 5H); out gets h; cp: the cell before. */
HR_RNN_CLONES static void hr_rnn_lstm_row(int H, float* restrict row, const float* restrict bias,
                                          const float* restrict cp, float* restrict out) {
    float *restrict ri = row, *restrict rf = row + H, *restrict rg = row + 2 * H;
    float *restrict ro = row + 3 * H, *restrict rc = row + 4 * H, *restrict rh = row + 5 * H;
    const float *restrict bi = bias, *restrict bf = bias + H, *restrict bg = bias + 2 * H;
    const float *restrict bo = bias + 3 * H;
#pragma GCC ivdep
    for (ptrdiff_t j = 0; j < H; j++) {
        float i = hr_fsigmoid(ri[j] + bi[j]), f = hr_fsigmoid(rf[j] + bf[j]);
        float g = hr_ftanh(rg[j] + bg[j]), o = hr_fsigmoid(ro[j] + bo[j]);
        float c = f * cp[j] + i * g;
        float h = o * hr_ftanh(c);
        ri[j] = i;
        rf[j] = f;
        rg[j] = g;
        ro[j] = o;
        rc[j] = c;
        rh[j] = h;
        out[j] = h;
    }
}

/* Its gradient, one pass: dh (from the step after) + dout (this step's output) and dc give
 * the gates' pre-activation gradients ex [i, f, g, o], also summed into db [4H] (the biases'
 * gradient); dc becomes the previous cell's gradient; dhp (the previous h's, summed by the
 * product after) starts at 0. */
HR_RNN_CLONES static void hr_rnn_lstm_row_grad(int H, const float* restrict row,
                                               const float* restrict cp,
                                               const float* restrict dh,
                                               const float* restrict dout, float* restrict dc,
                                               float* restrict ex, float* restrict dhp,
                                               float* restrict db) {
    const float *restrict ri = row, *restrict rf = row + H, *restrict rg = row + 2 * H;
    const float *restrict ro = row + 3 * H, *restrict rc = row + 4 * H;
    float *restrict ei = ex, *restrict ef = ex + H, *restrict eg = ex + 2 * H;
    float *restrict eo = ex + 3 * H;
    float *restrict bi = db, *restrict bf = db + H, *restrict bg = db + 2 * H;
    float *restrict bo = db + 3 * H;
#pragma GCC ivdep
    for (ptrdiff_t j = 0; j < H; j++) {
        float i = ri[j], f = rf[j], g = rg[j], o = ro[j], t = hr_ftanh(rc[j]);
        float dht = dh[j] + dout[j];
        float dcc = dc[j] + dht * o * (1.0f - t * t);
        float di = dcc * g * i * (1.0f - i), df = dcc * cp[j] * f * (1.0f - f);
        float dg = dcc * i * (1.0f - g * g), dgo = dht * t * o * (1.0f - o);
        ei[j] = di;
        ef[j] = df;
        eg[j] = dg;
        eo[j] = dgo;
        bi[j] += di;
        bf[j] += df;
        bg[j] += dg;
        bo[j] += dgo;
        dc[j] = dcc * f;
        dhp[j] = 0.0f;
    }
}

#endif
