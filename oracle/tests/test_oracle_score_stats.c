/* test_oracle_score_stats.c — the score statistics (feature_spec.h, outputs = max_sumexp /
 * max_logit) against a brute-force computation written here from the spec's text (plain
 * double scores over the visible keys, no oracle code): each row's max of its visible
 * scores (softcap applied first; the sink's logit left out), the sum of exp(s - max), the
 * (b, h) max of the rows' maxima; -inf and 0 for a fully masked row. MPFR and fp64 tiers,
 * causal bottom-right with Sq > Skv (the first rows see no key), a left window, a padded
 * sequence, a sink logit above every score (it must not become the max) and a softcap. */
#include <stdio.h>
#include "oracle/tests/oracle_testlib.h"

static void brute(const test_problem *t, int b, int h, int i, double *m_out, double *e_out) {
    const af_oracle_problem *p = &t->p;
    const af_inputs *in = &t->in;
    int g = h / (p->Hq / p->Hkv), lq = p->len_q[b], lkv = p->len_kv[b];
    double s[256];
    int n = 0;
    for (int j = 0; j < lkv; j++) {
        if (!af_mask_sees(&p->mask, b, lq, lkv, i, j)) continue;
        const double *q = in->q + (((size_t)b * p->Hq + h) * p->Sq + i) * p->Dqk;
        const double *k = in->k + (((size_t)b * p->Hkv + g) * p->Skv + j) * p->Dqk;
        double r = 0;
        for (int d = 0; d < p->Dqk; d++) r += q[d] * k[d];
        r *= p->scale;
        double c = in->feat.softcap;
        s[n++] = c != 0.0 ? c * tanh(r / c) : r; /* softcap before the max */
    }
    double m = -INFINITY, e = 0;
    for (int x = 0; x < n; x++) m = fmax(m, s[x]);
    for (int x = 0; x < n; x++) e += exp(s[x] - m);
    *m_out = m, *e_out = n ? e : 0.0;
}

static void check(af_oracle_tier tier, int outputs, double softcap, int sink) {
    test_problem t;
    /* causal bottom-right with Sq > Skv: rows 0..2 see no key (fully masked) */
    test_shape sh = {2, 2, 1, 12, 9, 16, 8, true, true, 3, -1, false, 0.0};
    test_problem_init(&t, &sh);
    test_problem_randomize(&t, 42 + (uint64_t)outputs, 2.0);
    t.len_q[1] = 10; /* padding rows past len_q are not judged */
    t.in.feat.softcap = softcap;
    t.in.feat.outputs = outputs;
    if (sink) {
        t.in.feat.sink = 1;
        t.in.sink = calloc((size_t)t.p.Hq, sizeof(double));
        CHECK(t.in.sink);
        t.in.sink[0] = 50.0, t.in.sink[1] = 50.0; /* above every score: M must not take it */
    }
    af_oracle_result r;
    test_run(&t, tier, 128, 1, &r);
    CHECK(outputs == 1 ? r.out.row_max && r.out.row_sumexp && !r.out.max_logit : r.out.max_logit && !r.out.row_max);
    double worst = 0;
    for (int b = 0; b < t.p.B; b++)
        for (int h = 0; h < t.p.Hq; h++) {
            double ml = -INFINITY;
            for (int i = 0; i < t.p.len_q[b]; i++) {
                double m, e;
                brute(&t, b, h, i, &m, &e);
                ml = fmax(ml, m);
                if (outputs != 1) continue;
                size_t row = ((size_t)b * t.p.Hq + h) * t.p.Sq + i;
                double gm = r.out.row_max[row], ge = r.out.row_sumexp[row];
                CHECK_MSG(isinf(m) ? gm == m && ge == 0.0 : fabs(gm - m) <= 1e-12 * (1 + fabs(m)),
                          "row (%d,%d,%d): max %.17g, brute %.17g", b, h, i, gm, m);
                if (!isinf(m)) worst = fmax(worst, fabs(ge - e) / e);
            }
            if (outputs == 2) {
                double g = r.out.max_logit[b * t.p.Hq + h];
                CHECK_MSG(fabs(g - ml) <= 1e-12 * (1 + fabs(ml)), "max_logit (%d,%d): %.17g, brute %.17g", b, h, g, ml);
            }
        }
    CHECK_MSG(worst <= 1e-12, "sum_exp relative gap %.3g", worst);
    printf("tier %d outputs %d softcap %g sink %d: every row matches brute force (sum_exp gap %.2g)\n", (int)tier,
           outputs, softcap, sink, worst);
    af_oracle_result_free(&r);
    free(t.in.sink);
    t.in.sink = NULL;
    test_problem_free(&t);
}

int main(void) {
    for (int tier = 0; tier < 2; tier++) {
        af_oracle_tier tr = tier ? AF_ORACLE_FP64 : AF_ORACLE_MPFR;
        check(tr, 1, 0.0, 0);
        check(tr, 1, 2.0, 1); /* softcap before the max; the sink outside max and sum */
        check(tr, 2, 2.0, 1);
        check(tr, 2, 0.0, 0);
    }
    return 0;
}
