/* test_softcap_tanh.c — the softcap tanh term of the criterion (verdict.h
 * AF_SOFTCAP_TANH_REL), at its edge.
 *
 * A bf16 softcap 30 causal backward case (the shape of corpora/gpu/feat-softcap-causal-
 * bf16-bwd.case, smaller). The kernel here is exact attention in fp64 except for its tanh,
 * which is off by 0.98 AF_SOFTCAP_TANH_REL relative, away from zero on every score:
 *   t~_ij = c tanh(r_ij / c) (1 + 0.98 eps sign(r_ij)),  eps = AF_SOFTCAP_TANH_REL
 * forward (O, LSE) from t~ and backward from the kernel's own O and LSE, with the
 * derivative 1 - (t~ / c)^2 (what a kernel with an approximate tanh computes).
 * Recomputed here from the dense inputs: tc_i = eps c tanh(max_j |r_ij| / c).
 * The test checks:
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
#include "judge/criterion.h"
#include "judge/runner.h"
#include "judge/verdict.h"
#include "util/check.h"
#include "judge/tests/criterion_fixture.h"

#define H  2
#define S  128
#define DD 64
#define C  30.0

static const char *const case_text = "dtype = bf16\nbatch = 1\nheads = 2\nseqlen = 128\nhead_dim = 64\n"
                                     "mask = causal\ndata = normal:2\nsoftcap = 30\nbackward = yes\nseed = 409\n";

/* the kernel with tanh off by rel (relative, away from zero): k (dense, like the oracle's) */
static void emulate(const af_inputs *in, double scale, double rel, af_outputs *k, double *tc) {
    memset(k->dq, 0, (size_t)H * S * DD * sizeof(double));
    memset(k->dk, 0, (size_t)H * S * DD * sizeof(double));
    memset(k->dv, 0, (size_t)H * S * DD * sizeof(double));
    static double s[S], th[S];
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
            k->lse[r] = L;
            memset(o, 0, DD * sizeof(double));
            for (int j = 0; j <= i; j++) {
                const double *v = in->v + ((size_t)h * S + j) * DD;
                for (int d = 0; d < DD; d++) o[d] += exp(s[j] - L) * v[d];
            }
            for (int d = 0; d < DD; d++) D += dO[d] * o[d];
            for (int j = 0; j <= i; j++) {
                size_t kr = (size_t)h * S + j;
                const double *kk = in->k + kr * DD, *v = in->v + kr * DD;
                double pj = exp(s[j] - L), dp = 0;
                for (int d = 0; d < DD; d++) dp += dO[d] * v[d];
                double dr = pj * (dp - D) * (1.0 - th[j] * th[j]);
                for (int d = 0; d < DD; d++) {
                    k->dq[r * DD + d] += scale * dr * kk[d];
                    k->dk[kr * DD + d] += scale * dr * q[d];
                    k->dv[kr * DD + d] += pj * dO[d];
                }
            }
        }
}

static void judge(const af_prepared *p, const af_outputs *k, af_verdict *v) {
    af_verdict_init(v, "test");
    af_compare_outputs(&p->c, k, &p->ref, &p->oracle, &p->terms, v);
}

int main(void) {
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(case_text, "softcap_tanh", &c, &e) == 0, "%s: %s", e.field, e.message);
    af_runner run;
    memset(&run, 0, sizeof run);
    af_oracle_opts_default(&run.oracle);
    run.reference = af_backend_cpu_new();
    run.ref_choice = AF_REF_CPU;
    af_prepared p;
    char why[256];
    CHECK_MSG(af_prepare(&run, &c, &p, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(p.terms.ready && p.have_ref, "the case needs its element budgets and the cpu reference");
    double scale = af_case_scale(&p.c);
    static double tc[H * S];
    af_outputs k;
    CHECK(af_outputs_alloc(&k, &p.c) == 0);

    /* 1, 2: the kernel with its tanh at 0.98 eps */
    emulate(&p.inputs, scale, 0.98 * AF_SOFTCAP_TANH_REL, &k, tc);
    af_verdict v;
    judge(&p, &k, &v);
    for (int t = 0; t < AF_T_COUNT; t++)
        if (v.stats[t].judged)
            printf("tanh at 0.98 eps: %s ratio %.3f\n", af_tensor_name((af_tensor_id)t), v.stats[t].ratio);
    CHECK_MSG(v.n_findings == 0, "a kernel whose tanh is within the bound judged a finding (%s %s, ratio %.3f)",
              v.n_findings ? af_tensor_name(v.findings[0].tensor) : "", v.n_findings ? v.findings[0].detail : "",
              v.n_findings ? v.findings[0].ratio : 0.0);
    af_tensor_stats *st = &v.stats[AF_T_LSE];
    size_t wr = (size_t)st->h * S + st->row;
    double need = st->err / (st->allowed - tc[wr]);
    printf("LSE worst row h%d r%d: err %.3g, allowed %.3g, tc %.3g; without tc %.2f x\n", st->h, st->row, st->err,
           st->allowed, tc[wr], need);
    CHECK_MSG(need > 1, "the LSE error is within the allowance without tc (%.3f): the test shows nothing", need);

    /* 3: the LSE edge at the row with the largest tc (the exact outputs otherwise) */
    fx_copy(&p.c, &p.oracle.out, &k);
    size_t er = 0;
    for (size_t r = 0; r < (size_t)H * S; r++)
        if (tc[r] > tc[er]) er = r;
    double exact = p.oracle.out.lse[er];
    k.lse[er] = exact + 2.0 * tc[er]; /* the row's allowance, from a run where it is the worst */
    judge(&p, &k, &v);
    CHECK_MSG((size_t)v.stats[AF_T_LSE].h * S + v.stats[AF_T_LSE].row == er, "the worst LSE row is not row %zu", er);
    double allowed = v.stats[AF_T_LSE].allowed;
    for (int f = 0; f < 2; f++) {
        double x = f ? 1.02 : 0.98;
        k.lse[er] = exact + x * allowed;
        judge(&p, &k, &v);
        if (f)
            CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_LSE &&
                          (size_t)v.findings[0].h * S + v.findings[0].row == er,
                      "LSE at 1.02 x the row's allowance not found there (ratio %.3f)", v.stats[AF_T_LSE].ratio);
        else {
            CHECK_MSG(v.n_findings == 0, "LSE at 0.98 x the row's allowance judged a finding (ratio %.3f)",
                      v.stats[AF_T_LSE].ratio);
            CHECK_MSG(x * allowed > allowed - tc[er], "0.98 x is within the allowance without tc");
        }
        printf("LSE row %zu at %.2f x its allowance %.4g (tc %.4g): ratio %.3f -> %s\n", er, x, allowed, tc[er],
               v.stats[AF_T_LSE].ratio, v.n_findings ? "mismatch" : "pass");
    }

    /* 4: twice the bound is caught */
    emulate(&p.inputs, scale, 2.0 * AF_SOFTCAP_TANH_REL, &k, tc);
    judge(&p, &k, &v);
    printf("tanh at 2 eps: %d finding(s), first %s ratio %.3f\n", v.n_findings,
           v.n_findings ? af_tensor_name(v.findings[0].tensor) : "-", v.n_findings ? v.findings[0].ratio : 0.0);
    CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH, "a tanh twice as coarse as the bound passed");
    af_outputs_free(&k);
    af_prepared_free(&p);
    run.reference->destroy(run.reference);
    CHECK_DONE("test_softcap_tanh");
}
