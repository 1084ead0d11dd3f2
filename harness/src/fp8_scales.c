/* fp8_scales.c — the per-tensor scales the harness chooses before an fp8_e4m3 backward
 * runs (attnfuzz/tensors.h, docs/fp8.md): scale_dp for the kernel-internal dS and
 * scale_dq/dk/dv for the E4M3 gradients, each the largest power of two with
 * 2 * amax(exact) * scale <= 448.
 *
 * amax of dS = max over visible (b, h, i, j) of |attn_scale * P_ij * (dO_i . v_j - D_i)|,
 * P_ij = exp(attn_scale * q_i . k_j - LSE_i), D_i = dO_i . O_i, from the exact inputs and
 * the oracle's O and LSE; visibility from the oracle's mask rule. Plain fp64: a
 * magnitude that picks a power of two, its own rounding does not matter.
 */
#include <math.h>
#include "attnfuzz/oracle.h"
#include "attnfuzz/tensors.h"

/* max |dS| (see above). in: exact inputs; exact: dense O (B,Hq,Sq,Dv), LSE (B,Hq,Sq). */
static double ds_amax(const af_case *c, const af_inputs *in, const af_outputs *exact) {
    af_oracle_problem prob;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_oracle_problem_from_case(&prob, c, in, len_q, len_kv);
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv;
    int Dqk = c->head_dim_qk, Dv = c->head_dim_v, group = Hq / Hkv;
    double best = 0;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < len_q[b]; i++) {
                int first, last;
                if (af_mask_visible_range(&prob.mask, len_q[b], len_kv[b], i, &first, &last) == 0) continue;
                size_t row = ((size_t)b * Hq + h) * Sq + i;
                const double *q = in->q + row * Dqk;        /* (Dqk) */
                const double *dout = in->dout + row * Dv;   /* (Dv)  */
                const double *o = exact->o + row * Dv;      /* (Dv)  */
                double lse = exact->lse[row], dd = 0;
                for (int d = 0; d < Dv; d++) dd += dout[d] * o[d];
                for (int j = first; j <= last; j++) {
                    size_t key = ((size_t)b * Hkv + h / group) * Skv + j;
                    const double *k = in->k + key * Dqk, *v = in->v + key * Dv; /* (Dqk), (Dv) */
                    double s = 0, dp = 0;
                    for (int d = 0; d < Dqk; d++) s += q[d] * k[d];
                    for (int d = 0; d < Dv; d++) dp += dout[d] * v[d];
                    double ds = fabs(prob.scale * exp(prob.scale * s - lse) * (dp - dd));
                    if (ds > best) best = ds;
                }
            }
    return best;
}

/* max |x| over n dense values (rows past a sequence's length hold 0). */
static double amax_of(const double *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* descale for amax with one binade of headroom: a power of two, exact inverse. */
static float descale_for(double amax) { return 1.0f / af_fp8_output_scale(2.0 * amax); }

void af_fp8_set_bwd_scales(af_tensors *t, const af_case *c, const af_inputs *in, const af_outputs *exact) {
    if (c->dtype != AF_DT_FP8_E4M3 || !c->backward || !exact->dq || !in->dout) return;
    int64_t nq = (int64_t)c->batch * c->heads_q * c->seqlen_q, nk = (int64_t)c->batch * c->heads_kv * c->seqlen_kv;
    t->descale_dp = descale_for(ds_amax(c, in, exact));
    t->descale_dq = descale_for(amax_of(exact->dq, nq * c->head_dim_qk));
    t->descale_dk = descale_for(amax_of(exact->dk, nk * c->head_dim_qk));
    t->descale_dv = descale_for(amax_of(exact->dv, nk * c->head_dim_v));
}
