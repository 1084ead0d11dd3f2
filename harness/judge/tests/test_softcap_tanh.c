/* test_softcap_tanh.c — the softcap tanh term of the criterion (verdict.h
 * AF_SOFTCAP_TANH_REL), at its edge, in both of the criterion's tiers.
 *
 * Two causal backward cases:
 *   small: bf16, 2 heads, 128 tokens, softcap 30 (the shape of corpora/gpu/feat-softcap-
 *          causal-bf16-bwd.case, smaller): judged with its element budgets;
 *   large: fp16, 1 head, 768 tokens, softcap 50, data normal:4: above
 *          AF_CRITERION_TERMS_MAX_WORK, judged by the row floors alone (verdict.h), where
 *          the LSE rows carry tc_i through af_criterion_lse_rows_only.
 * The kernel here is exact attention in fp64 except for its tanh, which is off by
 * 0.98 AF_SOFTCAP_TANH_REL relative, away from zero on every score, and its stored
 * O (rounded to the case's dtype) and LSE (rounded to fp32):
 *   t~_ij = c tanh(r_ij / c) (1 + 0.98 eps sign(r_ij)),  eps = AF_SOFTCAP_TANH_REL
 * forward (O, LSE) from t~ and backward from the kernel's own O and LSE, with the
 * derivative 1 - (t~ / c)^2 (what a kernel with an approximate tanh computes).
 * Recomputed here from the dense inputs: tc_i = eps c tanh(max_j |r_ij| / c).
 * For each case the test checks:
 *  1. every tensor of that kernel passes;
 *  2. its LSE error on some row is above that row's allowance less tc_i (the term is
 *     needed: before it, this kernel was the F9 finding's kind);
 *  3. the LSE of the row with the largest tc_i moved to 1.02 x its allowance is a
 *     mismatch at that row, 0.98 x passes and is above the allowance less tc_i;
 *  4. the tanh error at 2 eps (twice the bound) is a finding: the term is not unbounded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/backend.h"
#include "judge/compare.h"
#include "judge/criterion/criterion.h"
#include "judge/runner.h"
#include "judge/verdict.h"
#include "util/check.h"
#include "judge/tests/criterion_fixture.h"

#include "model/numeric.h"

typedef struct {
    const char *name, *text;
    int heads, seqlen; /* H, S (batch 1, head dim DD) */
    double softcap;    /* c */
    bool large;        /* above AF_CRITERION_TERMS_MAX_WORK: no element budgets */
} tanh_case;

#define DD 64

static const tanh_case cases[2] = {
    {"small bf16",
     "dtype = bf16\nbatch = 1\nheads = 2\nseqlen = 128\nhead_dim = 64\nmask = causal\n"
     "data = normal:2\nsoftcap = 30\nbackward = yes\nseed = 409\n",
     2, 128, 30.0, false},
    {"large fp16",
     "dtype = fp16\nbatch = 1\nheads = 1\nseqlen = 768\nhead_dim = 64\nmask = causal\n"
     "data = normal:4\nsoftcap = 50\nbackward = yes\nseed = 409\n",
     1, 768, 50.0, true},
};

/* the stored O's rounding to the case's dtype */
static double store(af_dtype dt, double x) {
    return dt == AF_DT_FP16 ? af_f16_to_f32(af_f32_to_f16((float)x)) : af_bf16_to_f32(af_f32_to_bf16((float)x));
}

/* the kernel with tanh off by rel (relative, away from zero): k (dense, like the oracle's);
 * tc: (H, S) each row's tc_i */
static void emulate(const tanh_case *tk, af_dtype dt, const af_inputs *in, double scale, double rel, af_outputs *k,
                    double *tc) {
    int H = tk->heads, S = tk->seqlen;
    double C = tk->softcap;
    memset(k->dq, 0, (size_t)H * S * DD * sizeof(double));
    memset(k->dk, 0, (size_t)H * S * DD * sizeof(double));
    memset(k->dv, 0, (size_t)H * S * DD * sizeof(double));
    double *s = malloc((size_t)S * sizeof *s), *th = malloc((size_t)S * sizeof *th); /* (S) one row's */
    CHECK(s && th);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < S; i++) {
            size_t r = (size_t)h * S + i;
            const double *q = in->q + r * DD, *dO = in->dout + r * DD;
            double m = -INFINITY, R = 0;
            for (int j = 0; j <= i; j++) { /* causal: keys 0..i */
                const double *kk = in->k + ((size_t)h * S + j) * DD;
                double dot = 0;
                for (int d = 0; d < DD; d++) dot += q[d] * kk[d];
                double raw = scale * dot;
                R = fmax(R, fabs(raw));
                th[j] = tanh(raw / C) * (1.0 + rel * (raw > 0 ? 1 : raw < 0 ? -1 : 0));
                s[j] = C * th[j];
                m = fmax(m, s[j]);
            }
            tc[r] = AF_SOFTCAP_TANH_REL * C * tanh(R / C);
            double z = 0;
            for (int j = 0; j <= i; j++) z += exp(s[j] - m);
            double L = m + log(z), *o = k->o + r * DD, D = 0;
            k->lse[r] = (float)L;
            memset(o, 0, DD * sizeof(double));
            for (int j = 0; j <= i; j++) {
                const double *v = in->v + ((size_t)h * S + j) * DD;
                for (int d = 0; d < DD; d++) o[d] += exp(s[j] - L) * v[d];
            }
            for (int d = 0; d < DD; d++) o[d] = store(dt, o[d]);
            for (int d = 0; d < DD; d++) D += dO[d] * o[d];
            for (int j = 0; j <= i; j++) {
                size_t kr = (size_t)h * S + j;
                const double *kk = in->k + kr * DD, *v = in->v + kr * DD;
                double pj = exp(s[j] - k->lse[r]), dp = 0;
                for (int d = 0; d < DD; d++) dp += dO[d] * v[d];
                double dr = pj * (dp - D) * (1.0 - th[j] * th[j]);
                for (int d = 0; d < DD; d++) {
                    k->dq[r * DD + d] += scale * dr * kk[d];
                    k->dk[kr * DD + d] += scale * dr * q[d];
                    k->dv[kr * DD + d] += pj * dO[d];
                }
            }
        }
    free(s), free(th);
}

static void judge(const af_prepared *p, const af_outputs *k, af_verdict *v) {
    af_verdict_init(v, "test");
    af_compare_outputs(&p->c, k, &p->ref, &p->oracle, &p->terms, v);
}

static void run_case(const tanh_case *tk) {
    af_prepared p;
    af_backend *cpu;
    fx_prepare_any(tk->text, &p, &cpu);
    int H = tk->heads, S = tk->seqlen;
    CHECK_MSG(p.terms.ready == !tk->large, "%s: the case %s its element budgets", tk->name,
              tk->large ? "has" : "lacks");
    double scale = af_case_scale(&p.c);
    double *tc = calloc((size_t)H * S, sizeof *tc); /* (H, S) */
    CHECK(tc != NULL);
    af_outputs k;
    CHECK(af_outputs_alloc(&k, &p.c) == 0);

    /* 1, 2: the kernel with its tanh at 0.98 eps */
    emulate(tk, p.c.dtype, &p.inputs, scale, 0.98 * AF_SOFTCAP_TANH_REL, &k, tc);
    af_verdict v;
    judge(&p, &k, &v);
    for (int t = 0; t < AF_T_COUNT; t++)
        if (v.stats[t].judged)
            printf("%s: tanh at 0.98 eps: %s ratio %.3f\n", tk->name, af_tensor_name((af_tensor_id)t),
                   v.stats[t].ratio);
    CHECK_MSG(v.n_findings == 0, "%s: a kernel whose tanh is within the bound judged a finding (%s %s, ratio %.3f)",
              tk->name, v.n_findings ? af_tensor_name(v.findings[0].tensor) : "",
              v.n_findings ? v.findings[0].detail : "", v.n_findings ? v.findings[0].ratio : 0.0);
    af_tensor_stats *st = &v.stats[AF_T_LSE];
    size_t wr = (size_t)st->h * S + st->row;
    double need = st->err / (st->allowed - tc[wr]);
    printf("%s: LSE worst row h%d r%d: err %.3g, allowed %.3g, tc %.3g; without tc %.2f x\n", tk->name, st->h, st->row,
           st->err, st->allowed, tc[wr], need);
    CHECK_MSG(need > 1, "%s: the LSE error is within the allowance without tc (%.3f): the test shows nothing", tk->name,
              need);

    /* 3: the LSE edge at the row with the largest tc (the exact outputs otherwise) */
    fx_copy(&p.c, &p.oracle.out, &k);
    size_t er = 0;
    for (size_t r = 0; r < (size_t)H * S; r++)
        if (tc[r] > tc[er]) er = r;
    double exact = p.oracle.out.lse[er];
    k.lse[er] = exact + 2.0 * tc[er]; /* the row's allowance, from a run where it is the worst */
    judge(&p, &k, &v);
    CHECK_MSG((size_t)v.stats[AF_T_LSE].h * S + v.stats[AF_T_LSE].row == er, "%s: the worst LSE row is not row %zu",
              tk->name, er);
    double allowed = v.stats[AF_T_LSE].allowed;
    for (int f = 0; f < 2; f++) {
        double x = f ? 1.02 : 0.98;
        k.lse[er] = exact + x * allowed;
        judge(&p, &k, &v);
        if (f)
            CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_LSE &&
                          (size_t)v.findings[0].h * S + v.findings[0].row == er,
                      "%s: LSE at 1.02 x the row's allowance not found there (ratio %.3f)", tk->name,
                      v.stats[AF_T_LSE].ratio);
        else {
            CHECK_MSG(v.n_findings == 0, "%s: LSE at 0.98 x the row's allowance judged a finding (ratio %.3f)",
                      tk->name, v.stats[AF_T_LSE].ratio);
            CHECK_MSG(x * allowed > allowed - tc[er], "%s: 0.98 x is within the allowance without tc", tk->name);
        }
        printf("%s: LSE row %zu at %.2f x its allowance %.4g (tc %.4g): ratio %.3f -> %s\n", tk->name, er, x, allowed,
               tc[er], v.stats[AF_T_LSE].ratio, v.n_findings ? "mismatch" : "pass");
    }

    /* 4: twice the bound is caught */
    emulate(tk, p.c.dtype, &p.inputs, scale, 2.0 * AF_SOFTCAP_TANH_REL, &k, tc);
    judge(&p, &k, &v);
    printf("%s: tanh at 2 eps: %d finding(s), first %s ratio %.3f\n", tk->name, v.n_findings,
           v.n_findings ? af_tensor_name(v.findings[0].tensor) : "-", v.n_findings ? v.findings[0].ratio : 0.0);
    CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH,
              "%s: a tanh twice as coarse as the bound passed", tk->name);
    free(tc);
    af_outputs_free(&k);
    af_prepared_free(&p);
    cpu->destroy(cpu);
}

int main(void) {
    for (int i = 0; i < 2; i++) run_case(&cases[i]);
    CHECK_DONE("test_softcap_tanh");
}
