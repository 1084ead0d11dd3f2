/* criterion_rowsum.c — the LSE share of the recipe lse_rowsum_dtype_p (docs/criterion.md
 * "A row sum of rounded P"): a kernel that forms the softmax denominator from the P it
 * rounds to the input dtype for the PV product (FlashInfer's fp16 prefill: measured,
 * docs/targets.md) moves its LSE by the relative error of that row sum.
 *
 * Derivation. The kernel's row sum is L = sum_j rn(P_j), P_j = exp(s_j - m*) with m* its
 * running max, and LSE = m* + ln L. Each rounding to the dtype errs by at most u P_j (u =
 * 2^-11 fp16, 2^-8 bf16: half an ulp, relative) or, for fp16 P below 2^-14, by half a
 * subnormal step, 2^-25 absolute. Relative errors are unchanged by the rescalings of a
 * running max, and a subnormal step taken at a tile's own max m_t <= m* is 2^-25
 * exp(m_t - m*) <= 2^-25 in units of exp(s - m*), a P below 2^-14 at m_t being below it at
 * m* too: so with m* the row's final max (the sink's logit when larger, as the forward's
 * sub in criterion.c) each term's bound b_j = u P_j + [fp16, P_j < 2^-14] 2^-25 covers
 * every tiling. In units of the row sum (exp(lse - m*)), with q_j = exp(s_j - lse):
 *   b_j = u q_j + [fp16, P_j < 2^-14] 2^-25 exp(m* - lse),  |d LSE| <= |dL| / L (first
 * order; the share is below 2^-8) and |dL| / L <= W = sum_j b_j (the worst case, <= u plus
 * the subnormal steps). The share is min(W, 5 sigma), sigma^2 = sum_c B_c^2 / 3: the
 * roundings as independent errors uniform in +-b (variance b^2 / 3), as the fp8 cast share
 * (criterion_fp8.c cast_share) takes them, except that P values within two dtype ulps of
 * one another are one term c with B_c the sum of their b_j: equal or nearly equal P (a
 * repeated key, a constant input) may round the same way in the kernel's grid (two ulps:
 * a tile max below m* scales the grid by up to a binade), so they add linearly. With few
 * keys, or one dominant key, 5 sigma exceeds W and the worst case holds. */
#include "judge/criterion/criterion.h"
#include "judge/problem.h"
#include "judge/tolerance.h"
#include "oracle/feature_spec.h"
#include "util/parfor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double p, b; /* P_j = exp(s_j - m*) and its bound b_j (row-sum units) */
} rs_term;

typedef struct {
    const af_oracle_problem *p;
    const double *lse;
    bool fp16;
    double u;
    double *out;
    int rows_per_block;
    int fail;
} rs_ctx;

static int by_p(const void *a, const void *b) {
    double x = ((const rs_term *)a)->p, y = ((const rs_term *)b)->p;
    return x < y ? -1 : x > y ? 1 : 0;
}

static af_storage rowsum_storage(bool fp16) { return fp16 ? AF_ST_F16 : AF_ST_BF16; }

/* One dtype ulp at value x (x >= 0), from the unit table (judge/tolerance.h): the unit
 * scaled to x's binade; for fp16 below its smallest normal, the subnormal step. */
static double dtype_ulp(double x, bool fp16) {
    af_storage st = rowsum_storage(fp16);
    int e;
    if (fp16 && x < af_storage_min_normal(st)) return 2.0 * af_storage_subnormal_half_step(st);
    frexp(x, &e); /* x = f 2^e, f in [0.5, 1) */
    return ldexp(af_storage_unit(st), e - 1);
}

double af_criterion_lse_rowsum_row(const double *P, const double *q, int n, double exp_m_lse, bool fp16, double u,
                                   void *scratch) {
    rs_term *t = scratch;
    af_storage st = rowsum_storage(fp16);
    double min_normal = af_storage_min_normal(st), half_step = af_storage_subnormal_half_step(st);
    double worst = 0;
    for (int k = 0; k < n; k++) {
        double b = u * q[k] + (fp16 && P[k] < min_normal ? half_step * exp_m_lse : 0.0);
        t[k].p = P[k];
        t[k].b = b;
        worst += b;
    }
    qsort(t, (size_t)n, sizeof *t, by_p);
    double var = 0, cl = 0;
    for (int k = 0; k < n; k++) {
        if (k > 0 && t[k].p - t[k - 1].p > 2.0 * dtype_ulp(t[k].p, fp16)) { /* a new cluster */
            var += cl * cl;
            cl = 0;
        }
        cl += t[k].b;
    }
    var += cl * cl;
    return fmin(worst, 5.0 * sqrt(var / 3.0));
}

static void rs_block(void *vctx, long block) {
    rs_ctx *x = vctx;
    const af_oracle_problem *p = x->p;
    const af_inputs *in = p->in;
    size_t skv = (size_t)(p->Skv > 0 ? p->Skv : 1);
    double *s = malloc(skv * sizeof(double)), *P = malloc(skv * sizeof(double)), *q = malloc(skv * sizeof(double));
    rs_term *scratch = malloc(skv * sizeof(rs_term));
    size_t nq = (size_t)p->B * p->Hq * p->Sq;
    size_t r0 = (size_t)block * x->rows_per_block, r1 = r0 + x->rows_per_block < nq ? r0 + x->rows_per_block : nq;
    if (!s || !P || !q || !scratch) {
        x->fail = 1; /* a race on an int set to 1 only: read after the join */
        free(s), free(P), free(q), free(scratch);
        return;
    }
    bool drops = af_mask_rule_drops(&p->mask);
    for (size_t row = r0; row < r1; row++) {
        int i = (int)(row % (size_t)p->Sq), h = (int)(row / (size_t)p->Sq % (size_t)p->Hq);
        int b = (int)(row / ((size_t)p->Sq * p->Hq));
        int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
        double lse = x->lse[row];
        x->out[row] = 0;
        af_mask_keys keys;
        if (i >= lq || !isfinite(lse) || af_mask_visible_keys(&p->mask, b, lq, lkv, i, &keys) == 0) continue;
        int hk = h / (p->Hq / p->Hkv), n = 0;
        const double *qv = in->q + row * p->Dqk;
        double m = -INFINITY;
        for (int ks = 0; ks < keys.n; ks++)
            for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                if (drops && !af_mask_rule_kept(&p->mask, b, i, j)) continue; /* no term of the sum */
                const double *k = in->k + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dqk;
                double dot = 0, dt_dr = 1.0;
                for (int d = 0; d < p->Dqk; d++) dot += qv[d] * k[d];
                double sc = af_feat_score64(p, b, h, i, j, dot * p->scale, &dt_dr);
                s[n++] = sc;
                if (sc > m) m = sc;
            }
        if (n == 0) continue;
        double m_run = in->feat.sink && in->sink ? fmax(m, in->sink[h]) : m;
        for (int k = 0; k < n; k++) {
            P[k] = exp(s[k] - m_run);
            q[k] = exp(s[k] - lse);
        }
        x->out[row] = af_criterion_lse_rowsum_row(P, q, n, exp(m_run - lse), x->fp16, x->u, scratch);
    }
    free(s), free(P), free(q), free(scratch);
}

/* The recipe's dtypes: fp16 and bf16 (their P is what the PV product takes). */
static bool rowsum_dtype(af_dtype dtype) { return dtype == AF_DT_FP16 || dtype == AF_DT_BF16; }

int af_criterion_lse_rowsum_share(const af_oracle_problem *p, const double *lse_exact, af_dtype dtype, double *out) {
    if (!rowsum_dtype(dtype)) return -1;
    size_t nq = (size_t)p->B * p->Hq * p->Sq;
    rs_ctx x = {.p = p,
                .lse = lse_exact,
                .fp16 = dtype == AF_DT_FP16,
                .u = af_storage_unit(rowsum_storage(dtype == AF_DT_FP16)) / 2, /* half an ulp, relative */
                .out = out,
                .rows_per_block = 16};
    long blocks = (long)((nq + 15) / 16);
    double work = (double)nq * p->Skv * (p->Dqk + 8);
    af_parfor(blocks, af_parfor_threads(work), rs_block, &x);
    return x.fail ? -1 : 0;
}

int af_criterion_lse_rowsum_ensure(const af_oracle_problem *p, const double *lse_exact, af_dtype dtype,
                                   af_criterion_terms *t) {
    if (t->lse_rowsum) return 0;
    if (!rowsum_dtype(dtype) || !af_criterion_terms_have(t, AF_T_LSE) || !lse_exact) return -1;
    size_t nq = (size_t)p->B * p->Hq * p->Sq;
    double *share = calloc(nq ? nq : 1, sizeof(double));
    if (!share) return -1;
    if (af_criterion_lse_rowsum_share(p, lse_exact, dtype, share) != 0) {
        free(share);
        return -1;
    }
    t->lse_rowsum = share;
    return 0;
}
