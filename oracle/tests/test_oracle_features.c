/* test_oracle_features.c — the features of oracle/feature_spec.h against closed forms and
 * finite differences:
 *  - softcap with a huge cap is no softcap (to ~r^3 / (3 c^2));
 *  - a sink logit of -inf is no sink (bit for bit), off_by_one with zero scores gives
 *    P = 1 / (n + 1): O = n / (n + 1) mean(v), LSE = ln(n + 1);
 *  - ALiBi equals the explicit bias tensor holding its values (bit for bit);
 *  - the gradients (dQ, dK, dV, dsink) of L = sum dO . O + sum g . LSE_out (LSE_out in the
 *    output's base) match central finite differences of the MPFR tier, with softcap,
 *    sinks, bias, ALiBi, dLSE, log2 stats and each score_mod;
 *  - each score_mod (squared, trig, trig2) on a one-row, two-key problem written out by hand
 *    from the closed forms, forward and backward;
 *  - the fp64 tier agrees with MPFR on feature cases (relative gap < 1e-11), score_mods too.
 */
#include <mpfr.h>
#include "oracle/feature_spec.h"
#include "oracle/tests/oracle_testlib.h"

#define LN2 0.69314718055994530942

typedef struct {
    double softcap;
    int sink; /* 0, 1 (off_by_one: logits 0), 2 (learnable: random logits) */
    int bias_b, bias_h;
    bool alibi, base2, dlse;
    af_score_mod score_mod; /* never with softcap */
} feat_opts;

/* Sets in->feat and allocates the feature arrays with random values. */
static void feat_setup(test_problem *t, const feat_opts *f, uint64_t seed) {
    af_inputs *in = &t->in;
    const af_oracle_problem *p = &t->p;
    uint64_t st = seed * 7919 + 3;
    in->feat.softcap = f->softcap;
    in->feat.score_mod = f->score_mod;
    in->feat.sink = f->sink;
    in->feat.bias_b = f->bias_b;
    in->feat.bias_h = f->bias_h;
    in->feat.bias_q = f->bias_b ? p->Sq : 0;
    in->feat.alibi = f->alibi;
    in->feat.alibi_b = f->alibi ? 1 : 0;
    in->feat.lse_base2 = f->base2;
    if (f->sink) {
        in->sink = calloc((size_t)p->Hq, sizeof(double));
        CHECK(in->sink);
        for (int h = 0; h < p->Hq; h++) in->sink[h] = f->sink == 2 ? test_fp16(&st, 2.0) : 0.0;
    }
    if (f->bias_b) {
        size_t n = (size_t)f->bias_b * f->bias_h * p->Sq * p->Skv;
        in->bias = calloc(n, sizeof(double));
        CHECK(in->bias);
        for (size_t x = 0; x < n; x++) in->bias[x] = test_fp16(&st, 1.0);
    }
    if (f->alibi) {
        in->alibi_slope = calloc((size_t)p->Hq, sizeof(double));
        CHECK(in->alibi_slope);
        for (int h = 0; h < p->Hq; h++) in->alibi_slope[h] = (double)(float)exp2(-8.0 * (h + 1) / p->Hq);
    }
    if (f->dlse) {
        in->dlse = calloc(test_rows(t), sizeof(double));
        CHECK(in->dlse);
        for (size_t x = 0; x < test_rows(t); x++) in->dlse[x] = test_fp16(&st, 0.5);
    }
}

static void feat_free(test_problem *t) {
    free(t->in.sink);
    free(t->in.bias);
    free(t->in.alibi_slope);
    free(t->in.dlse);
    t->in.sink = t->in.bias = t->in.alibi_slope = t->in.dlse = NULL;
    test_problem_free(t);
}

static const test_shape shape_small = {2, 2, 1, 5, 6, 4, 3, true, true, 3, -1, true, 0.0};

/* Worst relative gap of every output of two results (norm: 1e-300 floor). */
static double outputs_gap(const test_problem *t, const af_oracle_result *a, const af_oracle_result *b) {
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t), keys = test_keys(t);
    double g = test_max_rel(a->out.o, b->out.o, rows * p->Dv, 1e-300);
    g = fmax(g, test_max_rel(a->out.lse, b->out.lse, rows, 1e-300));
    if (a->out.dq) {
        g = fmax(g, test_max_rel(a->out.dq, b->out.dq, rows * p->Dqk, 1e-300));
        g = fmax(g, test_max_rel(a->out.dk, b->out.dk, keys * p->Dqk, 1e-300));
        g = fmax(g, test_max_rel(a->out.dv, b->out.dv, keys * p->Dv, 1e-300));
    }
    return g;
}

static bool outputs_identical(const test_problem *t, const af_oracle_result *a, const af_oracle_result *b) {
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t), keys = test_keys(t);
    return !memcmp(a->out.o, b->out.o, rows * p->Dv * sizeof(double)) &&
           !memcmp(a->out.lse, b->out.lse, rows * sizeof(double)) &&
           (!a->out.dq || (!memcmp(a->out.dq, b->out.dq, rows * p->Dqk * sizeof(double)) &&
                           !memcmp(a->out.dk, b->out.dk, keys * p->Dqk * sizeof(double)) &&
                           !memcmp(a->out.dv, b->out.dv, keys * p->Dv * sizeof(double))));
}

static void test_huge_softcap_is_none(void) {
    test_problem t;
    test_problem_init(&t, &shape_small);
    test_problem_randomize(&t, 11, 1.0);
    af_oracle_result plain, capped, tight;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &plain);
    feat_opts f = {1e9, 0, 0, 0, false, false, false, AF_SCORE_MOD_NONE};
    feat_setup(&t, &f, 1);
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &capped);
    double gap = outputs_gap(&t, &plain, &capped);
    CHECK_MSG(gap < 1e-12, "softcap 1e9 vs none: relative gap %.3g", gap);
    t.in.feat.softcap = 2.0; /* a real cap does change the outputs */
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &tight);
    CHECK_MSG(outputs_gap(&t, &plain, &tight) > 1e-3, "softcap 2 changed nothing (gap %.3g)",
              outputs_gap(&t, &plain, &tight));
    af_oracle_result_free(&plain);
    af_oracle_result_free(&capped);
    af_oracle_result_free(&tight);
    feat_free(&t);
}

static void test_sink_minus_inf_is_none(void) {
    test_problem t;
    test_problem_init(&t, &shape_small);
    test_problem_randomize(&t, 12, 1.0);
    af_oracle_result plain, sunk;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &plain);
    feat_opts f = {0.0, 2, 0, 0, false, false, false, AF_SCORE_MOD_NONE};
    feat_setup(&t, &f, 2);
    for (int h = 0; h < t.p.Hq; h++) t.in.sink[h] = -INFINITY;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &sunk);
    CHECK_MSG(outputs_identical(&t, &plain, &sunk), "sink logit -inf differs from no sink");
    for (int h = 0; h < t.p.Hq; h++)
        CHECK_MSG(sunk.out.dsink[h] == 0.0, "dsink[%d] = %g for a -inf logit", h, sunk.out.dsink[h]);
    af_oracle_result_free(&plain);
    af_oracle_result_free(&sunk);
    feat_free(&t);
}

static void test_off_by_one_zero_scores(void) {
    test_shape s = {1, 1, 1, 3, 4, 2, 3, false, false, -1, -1, false, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 13, 1.0);
    memset(t.in.q, 0, test_rows(&t) * 2 * sizeof(double)); /* every score 0 */
    feat_opts f = {0.0, 1, 0, 0, false, false, false, AF_SCORE_MOD_NONE};
    feat_setup(&t, &f, 3);
    af_oracle_result r;
    test_run(&t, AF_ORACLE_MPFR, 128, 1, &r);
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(test_ulps(r.out.lse[i], log(5.0)) <= 1, "row %d: LSE %.17g, want ln 5", i, r.out.lse[i]);
        for (int d = 0; d < 3; d++) {
            double sum = 0.0;
            for (int j = 0; j < 4; j++) sum += t.in.v[j * 3 + d];
            double want = sum / 5.0; /* n / (n + 1) * mean = sum / (n + 1) */
            CHECK_MSG(fabs(r.out.o[i * 3 + d] - want) <= 1e-15 * fmax(1.0, fabs(want)),
                      "row %d d %d: O %.17g want %.17g", i, d, r.out.o[i * 3 + d], want);
        }
    }
    af_oracle_result_free(&r);
    feat_free(&t);
}

static void test_alibi_equals_explicit_bias(void) {
    test_shape s = {2, 4, 2, 5, 7, 4, 4, false, false, -1, -1, true, 0.0};
    test_problem a, b;
    test_problem_init(&a, &s);
    test_problem_init(&b, &s);
    test_problem_randomize(&a, 14, 1.0);
    test_problem_randomize(&b, 14, 1.0);
    a.len_q[1] = 3, a.len_kv[1] = 6, b.len_q[1] = 3, b.len_kv[1] = 6; /* the diagonal moves with lengths */
    feat_opts fa = {0.0, 0, 0, 0, true, false, false, AF_SCORE_MOD_NONE};
    feat_setup(&a, &fa, 4);
    feat_opts fb = {0.0, 0, 2, 4, false, false, false, AF_SCORE_MOD_NONE};
    feat_setup(&b, &fb, 4);
    for (int bb = 0; bb < 2; bb++)
        for (int h = 0; h < 4; h++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 7; j++)
                    b.in.bias[((bb * 4 + h) * 5 + i) * 7 + j] = af_feat_additive(&a.p, bb, h, i, j);
    /* the ALiBi value by hand at one point: head 0 of 4 has slope 2^-2; b = 1, i = 0, j = 6:
     * diagonal 0 + 6 - 3 = 3, distance 3 */
    CHECK_MSG(af_feat_additive(&a.p, 1, 0, 0, 6) == -0.75, "ALiBi(1, 0, 0, 6) = %g, want -0.75",
              af_feat_additive(&a.p, 1, 0, 0, 6));
    af_oracle_result ra, rb;
    test_run(&a, AF_ORACLE_MPFR, 128, 2, &ra);
    test_run(&b, AF_ORACLE_MPFR, 128, 2, &rb);
    CHECK_MSG(outputs_identical(&a, &ra, &rb), "ALiBi and the explicit bias of its values differ");
    af_oracle_result_free(&ra);
    af_oracle_result_free(&rb);
    feat_free(&a);
    feat_free(&b);
}

/* One query row (batch 1 of 2: tan(1) enters trig and trig2) against two keys, head dims 1,
 * every output written out from the closed forms of oracle/feature_spec.h in long double
 * (sinl, cosl, tanl; no oracle code): r_j = s q k_j, t_j = f(r_j) (+ tan 1), P_j = softmax,
 * O = sum P_j v_j, LSE = ln sum e^t_j, dS_j = P_j (dO v_j - dO O), dR_j = dS_j f'(r_j),
 * dQ = s sum dR_j k_j, dK_j = s dR_j q, dV_j = P_j dO. The MPFR tier matches to 4 ulp. */
static void test_score_mod_by_hand(af_score_mod mod) {
    test_shape s = {2, 1, 1, 1, 2, 1, 1, false, false, -1, -1, true, 0.75};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 15, 1.0);
    const double q = 1.5, k[2] = {1.25, -2.0}, v[2] = {0.5, -1.75}, dO = 0.625; /* batch 1's */
    t.in.q[1] = q, t.in.k[2] = k[0], t.in.k[3] = k[1], t.in.v[2] = v[0], t.in.v[3] = v[1], t.in.dout[1] = dO;
    feat_opts f = {0.0, 0, 0, 0, false, false, false, mod};
    feat_setup(&t, &f, 5);
    af_oracle_result r;
    test_run(&t, AF_ORACLE_MPFR, 160, 1, &r);
    long double sc = 0.75L, tan1 = tanl(1.0L), tj[2], dfj[2], rj[2];
    for (int j = 0; j < 2; j++) {
        long double x = sc * q * k[j];
        rj[j] = x;
        if (mod == AF_SCORE_MOD_SQUARED)
            tj[j] = x * x, dfj[j] = 2 * x;
        else if (mod == AF_SCORE_MOD_TRIG)
            tj[j] = sinl(cosl(x)) + tan1, dfj[j] = -sinl(x) * cosl(cosl(x));
        else
            tj[j] = cosl(x) * sinl(x) + tan1, dfj[j] = cosl(2 * x);
    }
    long double z = expl(tj[0]) + expl(tj[1]), p0 = expl(tj[0]) / z, p1 = expl(tj[1]) / z;
    long double o = p0 * v[0] + p1 * v[1], lse = logl(z), dd = dO * o;
    long double dr0 = p0 * (dO * v[0] - dd) * dfj[0], dr1 = p1 * (dO * v[1] - dd) * dfj[1];
    struct {
        const char *what;
        double got;
        long double want;
    } outs[] = {{"O", r.out.o[1], o},
                {"LSE", r.out.lse[1], lse},
                {"dQ", r.out.dq[1], sc * (dr0 * k[0] + dr1 * k[1])},
                {"dK0", r.out.dk[2], sc * dr0 * q},
                {"dK1", r.out.dk[3], sc * dr1 * q},
                {"dV0", r.out.dv[2], p0 * dO},
                {"dV1", r.out.dv[3], p1 * dO}};
    for (size_t x = 0; x < sizeof outs / sizeof outs[0]; x++)
        CHECK_MSG(test_ulps(outs[x].got, (double)outs[x].want) <= 4,
                  "score_mod %d (r = %.3Lg, %.3Lg): %s %.17g, want %.17Lg", (int)mod, rj[0], rj[1], outs[x].what,
                  outs[x].got, outs[x].want);
    af_oracle_result_free(&r);
    feat_free(&t);
}

/* L = sum over rows of dO . O + g . LSE_out (rows with LSE = -inf skipped). */
static double loss_of(const test_problem *t, const af_oracle_result *r) {
    const af_oracle_problem *p = &t->p;
    double l = 0.0;
    for (size_t row = 0; row < test_rows(t); row++) {
        for (int d = 0; d < p->Dv; d++) l += t->in.dout[row * p->Dv + d] * r->out.o[row * p->Dv + d];
        if (t->in.dlse && isfinite(r->out.lse[row]))
            l += t->in.dlse[row] * (t->in.feat.lse_base2 ? r->out.lse[row] / LN2 : r->out.lse[row]);
    }
    return l;
}

/* Central difference of L in x (perturbed in place by +-eps). */
static double finite_difference(test_problem *t, double *x, double eps) {
    double keep = *x;
    af_oracle_result r;
    *x = keep + eps;
    test_run(t, AF_ORACLE_MPFR, 160, 2, &r);
    double up = loss_of(t, &r);
    af_oracle_result_free(&r);
    *x = keep - eps;
    test_run(t, AF_ORACLE_MPFR, 160, 2, &r);
    double down = loss_of(t, &r);
    af_oracle_result_free(&r);
    *x = keep;
    return (up - down) / (2.0 * eps);
}

static void check_grad(const char *what, double analytic, double fd, double scale) {
    double tol = 1e-6 * fmax(scale, 1e-2);
    CHECK_MSG(fabs(analytic - fd) <= tol, "%s: oracle %.12g vs finite difference %.12g (tol %.3g)", what, analytic, fd,
              tol);
}

static void test_gradients_finite_differences(const feat_opts *f, uint64_t seed) {
    test_problem t;
    test_problem_init(&t, &shape_small);
    test_problem_randomize(&t, seed, 1.0);
    t.len_q[1] = 4;
    feat_setup(&t, f, seed);
    af_oracle_result r;
    test_run(&t, AF_ORACLE_MPFR, 160, 2, &r);
    const af_oracle_problem *p = &t.p;
    const double eps = 1e-5;
    double gmax = fmax(test_max_abs(r.out.dq, test_rows(&t) * p->Dqk), test_max_abs(r.out.dk, test_keys(&t) * p->Dqk));
    size_t probes[] = {0, 5, 17, 33};
    char what[96];
    for (size_t k = 0; k < 4; k++) {
        size_t xq = probes[k] % (test_rows(&t) * p->Dqk), xk = probes[k] % (test_keys(&t) * p->Dqk);
        size_t xv = probes[k] % (test_keys(&t) * p->Dv);
        snprintf(what, sizeof what, "seed %llu dQ[%zu]", (unsigned long long)seed, xq);
        check_grad(what, r.out.dq[xq], finite_difference(&t, &t.in.q[xq], eps), gmax);
        snprintf(what, sizeof what, "seed %llu dK[%zu]", (unsigned long long)seed, xk);
        check_grad(what, r.out.dk[xk], finite_difference(&t, &t.in.k[xk], eps), gmax);
        snprintf(what, sizeof what, "seed %llu dV[%zu]", (unsigned long long)seed, xv);
        check_grad(what, r.out.dv[xv], finite_difference(&t, &t.in.v[xv], eps), gmax);
    }
    if (f->sink == 2)
        for (int h = 0; h < p->Hq; h++) {
            snprintf(what, sizeof what, "seed %llu dsink[%d]", (unsigned long long)seed, h);
            CHECK_MSG(r.out.dsink[h] != 0.0, "%s is 0", what);
            check_grad(what, r.out.dsink[h], finite_difference(&t, &t.in.sink[h], eps), fabs(r.out.dsink[h]));
        }
    af_oracle_result_free(&r);
    feat_free(&t);
}

static void test_fp64_tier_agrees(const feat_opts *f, uint64_t seed) {
    test_problem t;
    test_problem_init(&t, &shape_small);
    test_problem_randomize(&t, seed, 2.0);
    feat_setup(&t, f, seed);
    af_oracle_result m, d;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &m);
    test_run(&t, AF_ORACLE_FP64, 128, 2, &d);
    test_masses ms = test_crude_masses(&t);
    size_t rows = test_rows(&t), keys = test_keys(&t);
    double worst = fmax(test_max_rel(d.out.o, m.out.o, rows * t.p.Dv, ms.o),
                        test_max_rel(d.out.lse, m.out.lse, rows, 1.0 + fabs(f->softcap)));
    worst = fmax(worst, test_max_rel(d.out.dq, m.out.dq, rows * t.p.Dqk, ms.dq));
    worst = fmax(worst, test_max_rel(d.out.dk, m.out.dk, keys * t.p.Dqk, ms.dk));
    worst = fmax(worst, test_max_rel(d.out.dv, m.out.dv, keys * t.p.Dv, ms.dv));
    if (f->sink == 2) worst = fmax(worst, test_max_rel(d.out.dsink, m.out.dsink, (size_t)t.p.Hq, 1e-3));
    CHECK_MSG(worst < 1e-11, "seed %llu: fp64 vs MPFR relative gap %.3g", (unsigned long long)seed, worst);
    af_oracle_result_free(&m);
    af_oracle_result_free(&d);
    feat_free(&t);
}

int main(void) {
    test_huge_softcap_is_none();
    test_sink_minus_inf_is_none();
    test_off_by_one_zero_scores();
    test_alibi_equals_explicit_bias();
    for (int m = AF_SCORE_MOD_SQUARED; m <= AF_SCORE_MOD_TRIG2; m++) test_score_mod_by_hand((af_score_mod)m);
    const feat_opts cases[] = {
        {3.0, 0, 0, 0, false, false, false, AF_SCORE_MOD_NONE},    /* softcap alone */
        {0.0, 2, 0, 0, false, false, false, AF_SCORE_MOD_NONE},    /* learnable sinks */
        {0.0, 0, 1, 2, true, false, true, AF_SCORE_MOD_NONE},      /* bias broadcast over batch, ALiBi, dLSE */
        {5.0, 2, 2, 1, true, true, true, AF_SCORE_MOD_NONE},       /* everything, log2 stats */
        {0.0, 0, 0, 0, false, false, false, AF_SCORE_MOD_SQUARED}, /* score_mods (feature_spec.h) */
        {0.0, 0, 1, 2, true, false, true, AF_SCORE_MOD_TRIG},      /* with bias, ALiBi, dLSE */
        {0.0, 2, 0, 0, false, true, true, AF_SCORE_MOD_TRIG2},     /* with learnable sinks, log2 stats */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        test_gradients_finite_differences(&cases[k], 100 + k);
        test_fp64_tier_agrees(&cases[k], 200 + k);
    }
    printf("test_oracle_features: ok\n");
    return 0;
}
