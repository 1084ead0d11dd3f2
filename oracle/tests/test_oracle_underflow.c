/* test_oracle_underflow.c — the fp64 tiers' underflow allowance (oracle/README.md,
 * "Underflow"): where scores span more than about 745, the fp64 weights P = exp(s - LSE)
 * of far keys become 0 or lose bits as subnormals while MPFR keeps them, so an output whose
 * exact value is itself that small differs by its whole size. The allowance U (per row /
 * key column and tensor, af_cert_row_mass / af_cert_key_mass) lets such a difference
 * through the certification and nothing larger.
 *
 *  - a constructed row (q 64, keys 0 and -746/64, scale 1): its dQ and key 1's dK are
 *    subnormal in MPFR and 0 in the fp64 tier; without the allowance the relative gap is
 *    1 (> 1e-10: "fp64 tier disagrees with MPFR"); with it, AUTO's sampled certification
 *    passes, and the measured difference is within U;
 *  - the edges: a difference of U + 2^-1074 is not counted, the next double above it (one
 *    subnormal step) is, by af_cert_gap (relative gap > 1e-10) and af_cert_ratio (> 1);
 *  - 2000 random problems (oracle_testlib.h) with fp32 queries of exponents -30 to 16 (the
 *    range test_oracle_integer_sums stops at 0 for this reason), every other one with a
 *    value row spanning 2^+-40: every element of the whole CPU fp64 tier is within its
 *    stated bound of the whole MPFR tier, allowance included; AUTO's sampled certification
 *    passes on each; and some elements need the allowance (their difference exceeds the
 *    bound without it, and their relative gap the 1e-10 the certification allows). The
 *    worst difference over U among those is printed: the measurement of the rounding U
 *    models (at most 0.4 % of U here: the allowance is generous, and still tiny).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "oracle/src/oracle_internal.h"
#include "oracle/tests/oracle_testlib.h"

static void run_tier(const test_problem *t, af_oracle_tier tier, double budget, af_oracle_result *r) {
    char why[512] = "";
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = tier;
    if (budget > 0) o.mpfr_budget = budget;
    CHECK_MSG(af_oracle_run(&t->p, &o, r, why, sizeof why) == 0, "%s", why);
}

/* Whether every element of fp64 result f is within its stated bound of MPFR result m:
 * worst_ratio the worst af_cert_ratio; needing the elements whose difference exceeds the
 * bound without U, gap_failing those whose relative gap without U exceeds 1e-10;
 * worst_u the worst |f - m| / (U + 2^-1074) among the needing ones. */
typedef struct {
    double worst_ratio, worst_u;
    long needing, gap_failing;
} bound_stats;

static void note(bound_stats *st, const double *x, const double *ref, int n, const double *mass, double rel,
                 double abs_scale, double uf) {
    st->worst_ratio = fmax(st->worst_ratio, af_cert_ratio(x, ref, n, mass, rel, abs_scale, uf));
    for (int d = 0; d < n; d++)
        if (af_cert_ratio(x + d, ref + d, 1, mass + d, rel, abs_scale, 0.0) > 1.0) {
            st->needing++;
            st->gap_failing += af_cert_gap(x + d, ref + d, 1, mass[d], 0.0) > 1e-10;
            st->worst_u = fmax(st->worst_u, fabs(x[d] - ref[d]) / (uf + 0x1p-1074));
        }
}

static bound_stats whole_bound(const test_problem *t, const af_oracle_result *f, const af_oracle_result *m) {
    const af_oracle_problem *p = &t->p;
    bound_stats st = {0.0, 0.0, 0, 0};
    double rel = f->bound_rel, abs_scale = f->bound_abs_scale + m->bound_abs_scale;
    int dim = p->Dqk > p->Dv ? p->Dqk : p->Dv;
    double ma[16], mb[16], scratch[64], uf[2];
    CHECK(dim <= 16 && p->Skv <= 64);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->len_q[b]; i++) {
                size_t row = af_idx_row(p, b, h, i);
                af_cert_row_mass(p, b, h, i, m->out.lse[row], ma, mb, uf, scratch);
                note(&st, f->out.o + row * p->Dv, m->out.o + row * p->Dv, p->Dv, ma, rel, abs_scale, uf[0]);
                note(&st, f->out.dq + row * p->Dqk, m->out.dq + row * p->Dqk, p->Dqk, mb, rel, abs_scale, uf[1]);
            }
    for (int b = 0; b < p->B; b++)
        for (int g = 0; g < p->Hkv; g++)
            for (int j = 0; j < p->len_kv[b]; j++) {
                size_t key = af_idx_key(p, b, g, j);
                af_cert_key_mass(p, f->out.lse, b, g, j, ma, mb, uf, scratch);
                note(&st, f->out.dk + key * p->Dqk, m->out.dk + key * p->Dqk, p->Dqk, ma, rel, abs_scale, uf[0]);
                note(&st, f->out.dv + key * p->Dv, m->out.dv + key * p->Dv, p->Dv, mb, rel, abs_scale, uf[1]);
            }
    return st;
}

static void constructed(void) {
    test_shape s;
    memset(&s, 0, sizeof s);
    s.B = s.Hq = s.Hkv = 1, s.Sq = 1, s.Skv = 2, s.Dqk = s.Dv = 1;
    s.left = s.right = -1, s.backward = true, s.scale = 1.0;
    test_problem t;
    test_problem_init(&t, &s);
    t.in.q[0] = 64.0;
    t.in.k[0] = 0.0, t.in.k[1] = -746.0 / 64.0; /* scores 0 and -746: e^-746 < 2^-1075 */
    t.in.v[0] = 0.0, t.in.v[1] = 1.0;
    t.in.dout[0] = 1.0;
    af_oracle_result m, f, a;
    run_tier(&t, AF_ORACLE_MPFR, 0, &m);
    run_tier(&t, AF_ORACLE_FP64, 0, &f);
    /* dK of key 1 = dS q = 64 e^-746 (1 - O): subnormal in MPFR, 0 in fp64; dQ likewise */
    double dk_mp = m.out.dk[1], dq_mp = m.out.dq[0];
    printf("constructed: dK[key 1] MPFR %.6g fp64 %.6g; dQ MPFR %.6g fp64 %.6g\n", dk_mp, f.out.dk[1], dq_mp,
           f.out.dq[0]);
    CHECK(dk_mp > 0 && dk_mp < 0x1p-1022 && f.out.dk[1] == 0.0);
    CHECK(dq_mp < 0 && dq_mp > -0x1p-1022 && f.out.dq[0] == 0.0);
    /* without the allowance the gap is the whole value: the old failure */
    CHECK(af_cert_gap(&f.out.dk[1], &dk_mp, 1, 0.0, 0.0) == 1.0);
    CHECK(af_cert_gap(&f.out.dq[0], &dq_mp, 1, 0.0, 0.0) == 1.0);

    double ma[1], mb[1], scratch[2], uk[2], ur[2];
    af_cert_key_mass(&t.p, f.out.lse, 0, 0, 1, ma, mb, uk, scratch);
    af_cert_row_mass(&t.p, 0, 0, 0, m.out.lse[0], ma, mb, ur, scratch);
    printf("constructed: U(dK key 1) %.3g (|gap| / U = %.3g), U(dQ row 0) %.3g (|gap| / U = %.3g)\n", uk[0],
           dk_mp / uk[0], ur[1], -dq_mp / ur[1]);
    CHECK(dk_mp <= uk[0] && -dq_mp <= ur[1]);
    CHECK(uk[0] < 1e-318 && ur[1] < 1e-318); /* nothing a kernel's error could hide in */
    CHECK(af_cert_gap(&f.out.dk[1], &dk_mp, 1, 0.0, uk[0]) == 0.0);

    /* the sampled certification (AUTO over a budget of 1) now passes */
    run_tier(&t, AF_ORACLE_AUTO, 1.0, &a);
    CHECK(!a.all_mpfr && a.cert_rows + a.cert_keys > 0);
    CHECK(a.cert_gap_over_bound <= 1.0 && a.fp64_vs_mpfr_rel <= 1e-10);
    printf("constructed: sampled certification %d rows %d keys, gap / bound %.3g, relative gap %.3g\n", a.cert_rows,
           a.cert_keys, a.cert_gap_over_bound, a.fp64_vs_mpfr_rel);
    af_oracle_result_free(&m);
    af_oracle_result_free(&f);
    af_oracle_result_free(&a);
    test_problem_free(&t);
}

static void edges(void) {
    const double u = 0x1p-1060, ref = 0x1p-1065, mass = 0x1p-1064;
    double at = ref + (u + 0x1p-1074), above = nextafter(at, 1.0);
    CHECK(at - ref == u + 0x1p-1074 && above - ref == u + 0x1p-1073); /* exact in the subnormal range */
    CHECK(af_cert_gap(&at, &ref, 1, mass, u) == 0.0);
    CHECK(af_cert_gap(&above, &ref, 1, mass, u) > 1e-10);
    CHECK(af_cert_ratio(&at, &ref, 1, &mass, 4 * 0x1p-53, 1e-13, u) <= 1.0);
    CHECK(af_cert_ratio(&above, &ref, 1, &mass, 4 * 0x1p-53, 1e-13, u) > 1.0);
    /* a NaN or a difference over a zero magnitude is never let through */
    double nan = NAN, zero = 0.0, tiny = 0x1p-1074;
    CHECK(af_cert_gap(&nan, &ref, 1, mass, u) == INFINITY);
    CHECK(af_cert_gap(&above, &zero, 1, 0.0, 0.0) == INFINITY);
    CHECK(af_cert_gap(&tiny, &zero, 1, 0.0, 0.0) == 0.0); /* within the reference's own rounding */
    double inf = INFINITY;
    CHECK(af_cert_gap(&inf, &inf, 1, 0.0, 0.0) == 0.0);
}

static void random_wide_queries(void) {
    bound_stats all = {0.0, 0.0, 0, 0};
    int problems_needing = 0;
    for (int c = 0; c < 2000; c++) {
        test_problem t;
        test_problem_random(&t, 7000 + (uint64_t)c);
        uint64_t sq = 5 + (uint64_t)c;
        for (size_t x = 0; x < test_rows(&t) * (size_t)t.p.Dqk; x++) t.in.q[x] = test_format_value(&sq, 24, -30, 16);
        if (c % 2) { /* a value row of fp32 values 2^+-40 apart (test_oracle_integer_sums) */
            uint64_t st = 99 + (uint64_t)c;
            for (int d = 0; d < t.p.Dv; d++)
                t.in.v[d] = ldexp(1.0 + (double)(test_random(&st) % 8388608) / 8388608.0, d % 2 ? 40 : -40);
        }
        af_oracle_result m, f, a;
        run_tier(&t, AF_ORACLE_MPFR, 0, &m);
        run_tier(&t, AF_ORACLE_FP64, 0, &f);
        bound_stats st = whole_bound(&t, &f, &m);
        CHECK_MSG(st.worst_ratio <= 1.0, "problem %d: fp64 tier outside its bound (ratio %g)", c, st.worst_ratio);
        all.worst_ratio = fmax(all.worst_ratio, st.worst_ratio);
        all.worst_u = fmax(all.worst_u, st.worst_u);
        all.needing += st.needing;
        all.gap_failing += st.gap_failing;
        problems_needing += st.needing > 0;
        run_tier(&t, AF_ORACLE_AUTO, 1.0, &a); /* fails the test with the oracle's message */
        CHECK(a.cert_gap_over_bound <= 1.0 && a.fp64_vs_mpfr_rel <= 1e-10);
        af_oracle_result_free(&m);
        af_oracle_result_free(&f);
        af_oracle_result_free(&a);
        test_problem_free(&t);
    }
    printf("2000 problems, fp32 queries 2^-30..2^16: worst gap / bound %.3g; %ld elements in %d problems need the "
           "allowance (%ld of them over the 1e-10 relative gap without it), worst |gap| / U among them %.3g\n",
           all.worst_ratio, all.needing, problems_needing, all.gap_failing, all.worst_u);
    CHECK(problems_needing >= 5 && all.gap_failing >= 1 && all.worst_u <= 1.0);
}

int main(void) {
    constructed();
    edges();
    random_wide_queries();
    CHECK_DONE("test_oracle_underflow");
}
