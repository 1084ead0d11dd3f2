/* fp8_bwd_exact.h — for the fp8_e4m3 backward tests (test_fp8_backward.c,
 * harness/judge/tests/test_cudnn_fp8.c): the exact max |dS| of a case, dS_ij = attn_scale *
 * P_ij * (dO_i . v_j - D_i), D_i = dO_i . O_i, in fp64 from the exact inputs and the
 * oracle's O and LSE; visibility from the oracle's mask rule (mask_spec.h). It is the
 * value cuDNN's Amax_dP estimates and the one scale_dp must leave headroom for. A
 * magnitude, so plain fp64 sums are enough. Also max_abs_rows, the largest |x| of a
 * dense output over its valid rows, which both tests compare scales and amax against.
 */
#ifndef ATTNFUZZ_FP8_BWD_EXACT_H
#define ATTNFUZZ_FP8_BWD_EXACT_H

#include <math.h>
#include <stdbool.h>
#include "judge/problem.h"
#include "oracle/oracle.h"

static inline double fp8_exact_ds_amax(const af_case *c, const af_inputs *in, const af_outputs *exact) {
    af_oracle_problem prob;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_problem_from_case(&prob, c, in, len_q, len_kv);
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv;
    int Dqk = c->head_dim_qk, Dv = c->head_dim_v, group = Hq / Hkv;
    double best = 0;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < len_q[b]; i++) {
                af_mask_keys keys;
                if (af_mask_visible_keys(&prob.mask, b, len_q[b], len_kv[b], i, &keys) == 0) continue;
                size_t row = ((size_t)b * Hq + h) * Sq + i;
                const double *q = in->q + row * Dqk, *dout = in->dout + row * Dv, *o = exact->o + row * Dv;
                double lse = exact->lse[row], dd = 0;
                for (int d = 0; d < Dv; d++) dd += dout[d] * o[d];
                for (int ks = 0; ks < keys.n; ks++)
                    for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                        size_t key = ((size_t)b * Hkv + h / group) * Skv + j;
                        const double *k = in->k + key * Dqk, *v = in->v + key * Dv;
                        double s = 0, dp = 0;
                        for (int d = 0; d < Dqk; d++) s += q[d] * k[d];
                        for (int d = 0; d < Dv; d++) dp += dout[d] * v[d];
                        double ds = fabs(prob.scale * exp(prob.scale * s - lse) * (dp - dd));
                        if (ds > best) best = ds;
                    }
            }
    return best;
}

/* max |x| over the valid rows of a dense (B, H, S, D) tensor (kv: the key side). */
static inline double max_abs_rows(const af_case *c, const double *x, bool kv, int D) {
    int H = kv ? c->heads_kv : c->heads_q, S = kv ? c->seqlen_kv : c->seqlen_q;
    double m = 0;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < (kv ? af_case_len_kv(c, b) : af_case_len_q(c, b)); i++)
                for (int d = 0; d < D; d++) m = fmax(m, fabs(x[(((size_t)b * H + h) * S + i) * D + d]));
    return m;
}

#endif
