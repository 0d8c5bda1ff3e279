/* The recurrent kernels' float32 helpers in C: the LSTM cell's gradient (one clone per vector
 * width). Their GEMM is the core's (headrace/kernels/packed_gemm.h). */
#ifndef HEADRACE_RNN_GEMM_H
#define HEADRACE_RNN_GEMM_H

#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__)) \
    && defined(__linux__)
#define HR_RNN_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define HR_RNN_CLONES
#endif

/* One step's gate gradients for sigmoid gates and tanh candidate and cell (the defaults), so
 * the derivatives are plain products the loops vectorize (one clone per vector width). Per
 * row r < n: g the activated gates [candidate, input, forget, output] (row stride 4d), a =
 * tanh(c), pc the cell before; dh, dc (row stride d) hold the gradients reaching h and c and
 * leave dc as the gradient of the cell before; e gets the gates' pre-activation gradients.
 * peep ({W_ic, W_fc, W_oc}) may be NULL; with it, dpeep sums the peepholes' gradients. */
HR_RNN_CLONES static void hr_lstm_cell_grad(ptrdiff_t n, int d, const float* g, const float* c,
                                            const float* a, const float* pc, const float* dh,
                                            float* dc, float* e, const float* peep,
                                            float* dpeep) {
    for (ptrdiff_t r = 0; r < n; r++) {
        const float* gc = g + r * 4 * d;
        const float* gi = gc + d;
        const float* gf = gc + 2 * d;
        const float* go = gc + 3 * d;
        const float* ar = a + r * d;
        const float* cr = c + r * d;
        const float* pr = pc + r * d;
        const float* dhr = dh + r * d;
        float* dcr = dc + r * d;
        float* ec = e + r * 4 * d;
        if (peep == NULL) {
            for (int j = 0; j < d; j++) {
                float o = go[j], at = ar[j], i = gi[j], f = gf[j], cand = gc[j];
                float dgo = dhr[j] * at * o * (1.0f - o);
                float dcc = dcr[j] + dhr[j] * o * (1.0f - at * at);
                ec[j] = dcc * i * (1.0f - cand * cand);
                ec[d + j] = dcc * cand * i * (1.0f - i);
                ec[2 * d + j] = dcc * pr[j] * f * (1.0f - f);
                ec[3 * d + j] = dgo;
                dcr[j] = dcc * f;
            }
        } else {
            for (int j = 0; j < d; j++) {
                float o = go[j], at = ar[j], i = gi[j], f = gf[j], cand = gc[j], cp = pr[j];
                float dgo = dhr[j] * at * o * (1.0f - o);
                float dcc = dcr[j] + dhr[j] * o * (1.0f - at * at) + dgo * peep[2 * d + j];
                float dgi = dcc * cand * i * (1.0f - i);
                float dgf = dcc * cp * f * (1.0f - f);
                ec[j] = dcc * i * (1.0f - cand * cand);
                ec[d + j] = dgi;
                ec[2 * d + j] = dgf;
                ec[3 * d + j] = dgo;
                dcr[j] = dcc * f + dgi * peep[j] + dgf * peep[d + j];
                dpeep[j] += dgi * cp;
                dpeep[d + j] += dgf * cp;
                dpeep[2 * d + j] += dgo * cr[j];
            }
        }
    }
}

#endif
