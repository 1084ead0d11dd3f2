/* test_oracle_dropout.c — dropout in the oracle (oracle/feature_spec.h) against closed
 * forms, precision doubling and finite differences:
 *  - equal scores (q = 0): P_ij = 1 / n, so O_i = sum over the kept keys of v_j / (n (1 - p))
 *    and LSE_i = ln n whatever the mask (the stats are the undropped softmax's); a row whose
 *    keys are all dropped has O = 0 with LSE still ln n, a row with all kept is mean(v) / (1 - p);
 *  - p -> 0 (a threshold of 0 drops nothing) gives plain attention bit for bit;
 *  - MPFR at 128 and 256 bits agree to 2^-110 of each output's mass; fp64 agrees with MPFR;
 *  - dQ, dK, dV of L = sum dO . O match central finite differences of the MPFR tier with
 *    dropout on (the mask is fixed by seed and offset, so L is smooth in the inputs);
 *  - a different offset is a different mask (O moves);
 *  - a given mask (dropout_rng = kernel: feat.dropout_keep) replaces the Philox one: O and dV
 *    match a brute-force sum over the given mask, the given Philox mask is Philox's bit for
 *    bit, and its complement moves O.
 */
#include <mpfr.h>
#include "oracle/dropout_spec.h"
#include "oracle/feature_spec.h"
#include "oracle/tests/oracle_testlib.h"

static void set_dropout(test_problem *t, double p, uint64_t seed, uint64_t offset) {
    t->in.feat.dropout_p = p;
    t->in.feat.dropout_seed = seed;
    t->in.feat.dropout_offset = offset;
}

/* Kept keys of row (b, h, i) among keys 0..n-1, by the oracle's own mask. */
static int kept_count(const test_problem *t, int b, int h, int i, int n) {
    int kept = 0;
    for (int j = 0; j < n; j++) kept += af_feat_dropout_kept(&t->p, b, h, i, j);
    return kept;
}

static void test_equal_scores_closed_form(void) {
    /* B 1, Hq 4 (GQA 2), Sq 8, Skv 3, Dqk 4, Dv 5, no mask; p = 0.5: rows with 0 and 3 of 3
     * kept both occur among the 32 rows for this seed (checked below) */
    const test_shape shape = {1, 4, 2, 8, 3, 4, 5, false, false, -1, -1, false, 0.0};
    test_problem t;
    test_problem_init(&t, &shape);
    test_problem_randomize(&t, 5, 1.0);
    memset(t.in.q, 0, test_rows(&t) * 4 * sizeof(double)); /* every score 0 */
    const double p = 0.5;
    set_dropout(&t, p, 0x1234567890ABCDEFull, 77);
    af_oracle_result r;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &r);
    int rows_none = 0, rows_all = 0;
    for (int h = 0; h < 4; h++)
        for (int i = 0; i < 8; i++) {
            size_t row = ((size_t)h) * 8 + (size_t)i;
            int g = h / 2, kept = kept_count(&t, 0, h, i, 3);
            rows_none += kept == 0;
            rows_all += kept == 3;
            CHECK_MSG(fabs(r.out.lse[row] - log(3.0)) < 1e-15, "row %zu: LSE %.17g, want ln 3 (undropped)", row,
                      r.out.lse[row]);
            for (int d = 0; d < 5; d++) {
                double want = 0.0;
                for (int j = 0; j < 3; j++)
                    if (af_feat_dropout_kept(&t.p, 0, h, i, j)) want += t.in.v[((size_t)g * 3 + (size_t)j) * 5 + d];
                want /= 3.0 * (1.0 - p);
                double got = r.out.o[row * 5 + (size_t)d];
                CHECK_MSG(fabs(got - want) <= 1e-15 * fmax(1.0, fabs(want)), "row %zu d %d: O %.17g, want %.17g", row,
                          d, got, want);
                if (kept == 0) CHECK_MSG(got == 0.0, "row %zu all dropped: O %.17g, want 0", row, got);
            }
        }
    CHECK_MSG(rows_none > 0 && rows_all > 0, "the seed gave %d all-dropped and %d all-kept rows: pick another",
              rows_none, rows_all);
    af_oracle_result_free(&r);
    test_problem_free(&t);
}

static void test_zero_threshold_is_plain(void) {
    const test_shape shape = {2, 2, 1, 5, 6, 4, 3, true, true, 3, -1, true, 0.0};
    test_problem a, b;
    test_problem_init(&a, &shape);
    test_problem_init(&b, &shape);
    test_problem_randomize(&a, 9, 1.0);
    test_problem_randomize(&b, 9, 1.0);
    set_dropout(&b, 0x1p-40, 3, 4); /* round(p 2^32) = 0: nothing dropped, weight 1 + 2^-40 */
    CHECK(af_oracle_dropout_rate(0x1p-40) == 0.0);
    af_oracle_result ra, rb;
    test_run(&a, AF_ORACLE_MPFR, 128, 2, &ra);
    test_run(&b, AF_ORACLE_MPFR, 128, 2, &rb);
    double worst = test_max_rel(rb.out.o, ra.out.o, test_rows(&a) * 3, 1.0);
    worst = fmax(worst, test_max_rel(rb.out.dv, ra.out.dv, test_keys(&a) * 3, 1.0));
    CHECK_MSG(worst < 1e-11, "a threshold-0 dropout moved the outputs by %.3g (weight 1 + 2^-40 only)", worst);
    CHECK(!memcmp(ra.out.lse, rb.out.lse, test_rows(&a) * sizeof(double)));
    af_oracle_result_free(&ra);
    af_oracle_result_free(&rb);
    test_problem_free(&a);
    test_problem_free(&b);
}

static const test_shape shape_small = {2, 2, 1, 5, 6, 4, 3, true, true, 3, -1, true, 0.0};

static void test_precision_doubling_and_fp64(double p, uint64_t seed) {
    test_problem t;
    test_problem_init(&t, &shape_small);
    test_problem_randomize(&t, seed, 2.0);
    set_dropout(&t, p, seed * 31 + 1, seed);
    af_oracle_result lo, hi, d;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &lo);
    test_run(&t, AF_ORACLE_MPFR, 256, 2, &hi);
    test_run(&t, AF_ORACLE_FP64, 128, 2, &d);
    test_masses ms = test_crude_masses(&t);
    double keep = 1.0 / (1.0 - p); /* every mass scales by at most the keep factor */
    size_t rows = test_rows(&t), keys = test_keys(&t);
    const af_oracle_result *pair[2][2] = {{&lo, &hi}, {&d, &hi}};
    const double limit[2] = {0x1p-110, 1e-11};
    for (int k = 0; k < 2; k++) {
        const af_oracle_result *x = pair[k][0], *ref = pair[k][1];
        double worst = fmax(test_max_rel(x->out.o, ref->out.o, rows * 3, keep * ms.o),
                            test_max_rel(x->out.lse, ref->out.lse, rows, 1.0));
        worst = fmax(worst, test_max_rel(x->out.dq, ref->out.dq, rows * 4, keep * ms.dq));
        worst = fmax(worst, test_max_rel(x->out.dk, ref->out.dk, keys * 4, keep * ms.dk));
        worst = fmax(worst, test_max_rel(x->out.dv, ref->out.dv, keys * 3, keep * ms.dv));
        CHECK_MSG(worst < limit[k], "p %g seed %llu: %s vs MPFR 256 relative gap %.3g (limit %.3g)", p,
                  (unsigned long long)seed, k ? "fp64" : "MPFR 128", worst, limit[k]);
    }
    af_oracle_result_free(&lo);
    af_oracle_result_free(&hi);
    af_oracle_result_free(&d);
    test_problem_free(&t);
}

static double loss_of(const test_problem *t, const af_oracle_result *r) {
    double l = 0.0;
    for (size_t x = 0; x < test_rows(t) * (size_t)t->p.Dv; x++) l += t->in.dout[x] * r->out.o[x];
    return l;
}

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

static void test_gradients_finite_differences(double p, uint64_t seed) {
    test_problem t;
    test_problem_init(&t, &shape_small);
    test_problem_randomize(&t, seed, 1.0);
    t.len_q[1] = 4;
    set_dropout(&t, p, seed ^ 0xD509u, 3 * seed);
    af_oracle_result r;
    test_run(&t, AF_ORACLE_MPFR, 160, 2, &r);
    size_t nq = test_rows(&t) * 4, nk = test_keys(&t) * 4, nv = test_keys(&t) * 3;
    double gmax = fmax(fmax(test_max_abs(r.out.dq, nq), test_max_abs(r.out.dk, nk)), test_max_abs(r.out.dv, nv));
    double tol = 1e-6 * fmax(gmax, 1e-2);
    int nonzero_dv = 0;
    for (size_t x = 0; x < nq; x += 3) {
        double fd = finite_difference(&t, &t.in.q[x], 1e-5);
        CHECK_MSG(fabs(r.out.dq[x] - fd) <= tol, "p %g dQ[%zu]: oracle %.12g vs fd %.12g", p, x, r.out.dq[x], fd);
    }
    for (size_t x = 0; x < nk; x += 2) {
        double fd = finite_difference(&t, &t.in.k[x], 1e-5);
        CHECK_MSG(fabs(r.out.dk[x] - fd) <= tol, "p %g dK[%zu]: oracle %.12g vs fd %.12g", p, x, r.out.dk[x], fd);
    }
    for (size_t x = 0; x < nv; x++) {
        double fd = finite_difference(&t, &t.in.v[x], 1e-5);
        CHECK_MSG(fabs(r.out.dv[x] - fd) <= tol, "p %g dV[%zu]: oracle %.12g vs fd %.12g", p, x, r.out.dv[x], fd);
        nonzero_dv += r.out.dv[x] != 0.0;
    }
    CHECK_MSG(nonzero_dv > 0, "p %g: every dV is 0 (nothing checked)", p);
    af_oracle_result_free(&r);
    test_problem_free(&t);
}

static void test_offset_moves_mask(void) {
    test_problem t;
    test_problem_init(&t, &shape_small);
    test_problem_randomize(&t, 21, 1.0);
    set_dropout(&t, 0.5, 99, 0);
    af_oracle_result a, b;
    test_run(&t, AF_ORACLE_FP64, 128, 2, &a);
    set_dropout(&t, 0.5, 99, 1);
    test_run(&t, AF_ORACLE_FP64, 128, 2, &b);
    CHECK_MSG(memcmp(a.out.o, b.out.o, test_rows(&t) * 3 * sizeof(double)) != 0, "offset 0 and 1 gave the same O");
    CHECK(!memcmp(a.out.lse, b.out.lse, test_rows(&t) * sizeof(double))); /* stats undropped */
    af_oracle_result_free(&a);
    af_oracle_result_free(&b);
    test_problem_free(&t);
}

/* feat.dropout_keep (B, Hq, Sq, Skv): the kernel's mask, given. No attention mask here, so
 * every row sees every key and the brute force needs no visibility rule. */
static void test_given_mask(void) {
    const test_shape shape = {2, 2, 1, 5, 6, 4, 3, false, false, -1, -1, true, 0.0};
    const int B = 2, Hq = 2, Sq = 5, Skv = 6, Dqk = 4, Dv = 3;
    const double p = 0.5;
    test_problem t;
    test_problem_init(&t, &shape);
    test_problem_randomize(&t, 77, 2.0);
    set_dropout(&t, p, 4242, 5);
    uint8_t given[2 * 2 * 5 * 6], philox[2 * 2 * 5 * 6], flipped[2 * 2 * 5 * 6];
    uint64_t rs = 9;
    size_t n = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < Sq; i++)
                for (int j = 0; j < Skv; j++, n++) {
                    given[n] = (uint8_t)(test_random(&rs) & 1);
                    philox[n] = af_feat_dropout_kept(&t.p, b, h, i, j);
                    flipped[n] = !philox[n];
                }
    af_oracle_result plain, r;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &plain);
    t.in.feat.dropout_keep = given;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &r);
    double worst = 0.0;
    long double *dv = calloc((size_t)B * Skv * Dv, sizeof *dv);
    CHECK(dv != NULL);
    n = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < Sq; i++, n += (size_t)Skv) {
                size_t row = ((size_t)b * Hq + (size_t)h) * Sq + (size_t)i;
                long double s[6], m = -INFINITY, l = 0;
                for (int j = 0; j < Skv; j++) {
                    long double dot = 0;
                    for (int d = 0; d < Dqk; d++)
                        dot += (long double)t.in.q[row * Dqk + (size_t)d] *
                               t.in.k[((size_t)b * Skv + (size_t)j) * Dqk + (size_t)d];
                    s[j] = dot * (long double)t.p.scale;
                    if (s[j] > m) m = s[j];
                }
                for (int j = 0; j < Skv; j++) l += expl(s[j] - m);
                for (int d = 0; d < Dv; d++) {
                    long double o = 0;
                    for (int j = 0; j < Skv; j++)
                        if (given[n + (size_t)j]) {
                            long double pw = expl(s[j] - m) / l / (1.0L - p);
                            o += pw * t.in.v[((size_t)b * Skv + (size_t)j) * Dv + (size_t)d];
                            dv[((size_t)b * Skv + (size_t)j) * Dv + (size_t)d] += pw * t.in.dout[row * Dv + (size_t)d];
                        }
                    worst = fmax(worst, fabs((double)o - r.out.o[row * Dv + (size_t)d]));
                }
            }
    for (size_t x = 0; x < (size_t)B * Skv * Dv; x++) worst = fmax(worst, fabs((double)dv[x] - r.out.dv[x]));
    CHECK_MSG(worst < 1e-13, "the given mask's O / dV differ from the brute force by %.3g", worst);
    t.in.feat.dropout_keep = philox;
    af_oracle_result_free(&r);
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &r);
    CHECK(!memcmp(r.out.o, plain.out.o, test_rows(&t) * Dv * sizeof(double)));
    t.in.feat.dropout_keep = flipped;
    af_oracle_result_free(&r);
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &r);
    CHECK(memcmp(r.out.o, plain.out.o, test_rows(&t) * Dv * sizeof(double)) != 0);
    free(dv);
    af_oracle_result_free(&r);
    af_oracle_result_free(&plain);
    test_problem_free(&t);
}

int main(void) {
    test_given_mask();
    test_equal_scores_closed_form();
    test_zero_threshold_is_plain();
    test_offset_moves_mask();
    const double ps[] = {0.1, 0.5, 0.9};
    for (int k = 0; k < 3; k++) {
        test_precision_doubling_and_fp64(ps[k], 300 + (uint64_t)k);
        test_gradients_finite_differences(ps[k], 400 + (uint64_t)k);
    }
    printf("test_oracle_dropout: ok\n");
    return 0;
}
