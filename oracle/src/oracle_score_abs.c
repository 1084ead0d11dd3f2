/* oracle_score_abs.c — the magnitude of each row's scores, for criteria that depend on
 * how a kernel accumulates Q K^T (fp8: Hopper's FP8 tensor-core accumulator keeps
 * fewer bits than fp32; docs/cudnn-findings.md F5).
 *
 *   out[b, h, i] = max over keys j visible to row i of  scale * sum_d |q[b,h,i,d] k[b,hk,j,d]|
 *                  out: (B, Hq, Sq), 0 for rows past len_q or seeing no key
 *
 * fp64 with absolute values throughout: a magnitude, not a value to judge, so its own
 * rounding (relative 2^-53 * Dqk) does not matter. Visibility comes from the oracle's
 * mask specification (mask_spec.h), like every other oracle quantity.
 */
#include <math.h>
#include <string.h>
#include "oracle_internal.h"

void af_oracle_score_abs(const af_oracle_problem *p, double *out)
{
    const af_inputs *in = p->in;
    int group = p->Hq / p->Hkv;
    memset(out, 0, (size_t)p->B * p->Hq * p->Sq * sizeof *out);
    for (int b = 0; b < p->B; b++) {
        int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
        for (int h = 0; h < p->Hq; h++) {
            int hk = h / group;
            for (int i = 0; i < lq; i++) {
                int first, last;
                if (af_mask_visible_range(&p->mask, lq, lkv, i, &first, &last) == 0) continue;
                const double *q = in->q + (((size_t)b * p->Hq + h) * p->Sq + i) * p->Dqk; /* (Dqk) */
                double best = 0;
                for (int j = first; j <= last; j++) {
                    const double *k = in->k + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dqk; /* (Dqk) */
                    double s = 0;
                    for (int d = 0; d < p->Dqk; d++) s += fabs(q[d] * k[d]);
                    if (s > best) best = s;
                }
                out[((size_t)b * p->Hq + h) * p->Sq + i] = best * p->scale;
            }
        }
    }
}
