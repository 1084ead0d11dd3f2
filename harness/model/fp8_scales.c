/* fp8_scales.c — the per-tensor scales the harness chooses before an fp8_e4m3 backward
 * runs (model/tensors.h, docs/fp8.md): scale_dp for the kernel-internal dS and
 * scale_dq/dk/dv for the E4M3 gradients, each the largest power of two with
 * 2 * amax(exact) * scale <= 448 (E4M3; 57344 for fp8_e5m2's E5M2).
 *
 * amax of dS = max over visible (b, h, i, j) of |attn_scale * P_ij * (dO_i . v_j - D_i)|
 * comes from the oracle's pass over the gradients' terms (af_oracle_grad_abs, the same
 * pass that gives the cancellation floors); the gradients' amax from the exact dQ, dK, dV.
 */
#include <math.h>
#include "model/tensors.h"

/* max |x| over n dense values (rows past a sequence's length hold 0). */
static double amax_of(const double *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* descale for amax with one binade of headroom in fp8 storage st: a power of two, exact
 * inverse. */
static float descale_for(af_storage st, double amax) { return 1.0f / af_fp8_output_scale_for(st, 2.0 * amax); }

void af_fp8_set_bwd_scales(af_tensors *t, const af_case *c, const af_outputs *exact, double ds_amax) {
    if (!af_dtype_is_fp8_tensor(c->dtype) || !c->backward || !exact->dq) return;
    af_storage st = af_tensor_storage(c->dtype, AF_T_DQ); /* the gradients' and dS8's */
    int64_t nq = (int64_t)c->batch * c->heads_q * c->seqlen_q, nk = (int64_t)c->batch * c->heads_kv * c->seqlen_kv;
    t->descale_dp = descale_for(st, ds_amax);
    t->descale_dq = descale_for(st, amax_of(exact->dq, nq * c->head_dim_qk));
    t->descale_dk = descale_for(st, amax_of(exact->dk, nk * c->head_dim_qk));
    t->descale_dv =
        descale_for(st, amax_of(exact->dv, (int64_t)c->batch * af_case_heads_v(c) * c->seqlen_kv * c->head_dim_v));
}
