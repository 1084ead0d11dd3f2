/* convention.c — the LSE-convention probe (AF_V_CONVENTION, probes.h): the stored LSE
 * is the natural log of the row's sum of exp(scale q.k). A kernel that keeps its
 * softmax in the exp2 domain and stores lse2 = LSE / ln 2 without converting back is
 * consistent with itself (its backward reads what it stored) but not with the ABI; the
 * comparison would call that a mismatch of every LSE row, which names the wrong cause.
 * This probe tells the two bases apart on sampled rows (exact fp64 LSE from the exact
 * stored inputs, expect.h) and reports the base with its fix; the runner then drops
 * the LSE mismatches the base explains (af_probe_stats.lse_base2). No extra run.
 * A case with `stats = log2` declares the base-2 LSE (cuDNN's log2 stats): then base 2
 * is the convention and a natural-log LSE is the wrong one.
 *
 * The other LSE convention, fully masked rows (LSE = -inf, or the sink logit with sinks:
 * the sink alone stays in the denominator; O = 0), is checked on every row by the buffer
 * checks (judge/compare.c af_masked_row_lse), with the fix in the message. */
#include "judge/probes/expect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CONVENTION_ROWS 16 /* sampled rows (b, h, i) */

/* How far a correct kernel's LSE may be from the exact one: generous (expect.h's
 * 2^-10 (1 + |LSE|) widened 4x, plus 4 score errors); fp8 scores carry FP8-accumulation
 * error (verdict.h AF_FP8_ACC_UNIT) on top. */
static double lse_slack(const af_case *c, const row_stats *rs, double score_abs) {
    double t = 0x1p-8 * (1 + fabs(rs->lse)) + 4 * rs->score_err;
    if (af_dtype_is_fp8(c->dtype)) t += AF_FP8_ACC_UNIT * score_abs + 0x1p-6;
    return t;
}

void probe_convention(probe_ctx *x) {
    const af_case *c = x->c;
    const af_inputs *in = x->tg->inputs;
    const af_tensors *t = x->tg->baseline;
    double *o = calloc((size_t)c->head_dim_v + 1, sizeof(double));
    double *mass = calloc((size_t)c->head_dim_v + 1, sizeof(double));
    if (!o || !mass) {
        free(o);
        free(mass);
        probe_note(x, "%s", "convention: out of memory");
        return;
    }
    double scale = af_case_scale(c);
    int natural = 0, base2 = 0, fb = -1, fh = -1, fi = -1;
    double f_kernel = 0, f_exact = 0;
    for (int k = 0; k < CONVENTION_ROWS; k++) {
        int b = probe_rng_below(&x->rng, c->batch), h = probe_rng_below(&x->rng, c->heads_q), lq = len_q(x, b);
        if (lq <= 0) continue;
        int i = probe_rng_below(&x->rng, lq), lo, hi;
        if (probe_visible_range(x, b, i, &lo, &hi) == 0) continue;
        row_stats rs;
        if (probe_row_fp64(x, &x->rule, in, b, h, i, lo, hi, scale, o, mass, NULL, &rs)) break;
        if (!probe_row_checkable(&rs)) continue;
        double kernel = probe_load(t, AF_T_LSE, offset_of(t, AF_T_LSE, b, h, i, 0));
        if (!isfinite(kernel)) continue;
        /* rs.score_err = 2^-21 (Dqk + 2) A: A recovered for the fp8 slack */
        double slack = lse_slack(c, &rs, rs.score_err / (0x1p-21 * (c->head_dim_qk + 2)));
        double as_base2 = rs.lse * M_LOG2E;
        if (fabs(as_base2 - rs.lse) <= 2 * slack) continue; /* the bases agree here */
        x->st->convention_rows++;
        /* declared: the base the case asks for; other: the wrong one */
        double declared = c->lse_base2 ? as_base2 : rs.lse, other = c->lse_base2 ? rs.lse : as_base2;
        if (c->lse_base2) slack *= M_LOG2E;
        if (fabs(kernel - declared) <= slack) {
            natural++;
        } else if (fabs(kernel - other) <= slack) {
            if (base2++ == 0) {
                fb = b;
                fh = h;
                fi = i;
                f_kernel = kernel;
                f_exact = rs.lse;
            }
        }
    }
    free(o);
    free(mass);
    if (base2 == 0 || natural > 0) return;
    x->st->lse_base2 = true;
    char msg[256];
    if (c->lse_base2)
        snprintf(msg, sizeof msg,
                 "LSE stored in the natural base: on %d of %d rows it is ln of the softmax sum (b%d h%d r%d: %.7g); "
                 "the case asks for stats = log2: fix: store lse / ln 2 (x 1.442695)",
                 base2, x->st->convention_rows, fb, fh, fi, f_kernel);
    else
        snprintf(msg, sizeof msg,
                 "LSE stored in base 2: on %d of %d rows it is log2 of the softmax sum (b%d h%d r%d: %.7g = %.7g / ln "
                 "2); the ABI's LSE is the natural log: fix: store lse2 * ln 2 (0.6931472)",
                 base2, x->st->convention_rows, fb, fh, fi, f_kernel, f_exact);
    probe_finding(x, AF_V_CONVENTION, AF_T_LSE, fb, fh, fi, -1, f_exact, f_kernel, 0, msg);
}
