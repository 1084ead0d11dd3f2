/* test_oracle_tiers.c — the fp64 tier, AUTO tiering and sampling.
 *
 *  - fp64 vs MPFR agree to 1e-13 of each row's (key column's) magnitude, on random
 *    cases with several masks, GQA and padding, and the stated fp64 bound holds;
 *  - AUTO within the budget is all-MPFR and bitwise equal to the MPFR tier;
 *  - AUTO over the budget: fp64 everywhere plus MPFR on the sampled rows, which
 *    include the first/last valid rows and both sides of every shape change of the
 *    visible interval (checked against rows worked out by hand); sampled rows are
 *    bitwise the MPFR tier's, the others bitwise the fp64 tier's; mpfr_rows,
 *    fp64_vs_mpfr_rel and bound_rel are reported; a larger budget adds the rows
 *    at multiples of 128 and their neighbours;
 *  - scores so large that fp64 loses accuracy make AUTO fail with a reason.
 */
#include "oracle/src/oracle_internal.h"
#include "oracle/tests/oracle_testlib.h"

/* Largest gap over rows of `width` values, relative to the max magnitude of the
 * row's group of `group` rows (1: the row itself; a head's rows for gradients,
 * whose rows can be small by cancellation: P ~ 1 makes dS = P (dP - D) ~ 0, and
 * the fp64 error is then relative to the mass of the terms, not to the row). */
static double row_gap(const double *a, const double *b, size_t rows, int width, size_t group) {
    double worst = 0.0;
    for (size_t r = 0; r < rows; r++) {
        double mag = test_max_abs(b + (r / group) * group * width, group * (size_t)width);
        double gap = test_max_rel(a + r * width, b + r * width, (size_t)width, mag);
        if (!(gap <= worst)) worst = gap;
    }
    return worst;
}

static void fp64_agrees_with_mpfr(void) {
    static const test_shape shapes[] = {
        {2, 4, 2, 33, 40, 16, 8, true, true, -1, -1, true, 0.0},
        {1, 2, 1, 40, 31, 8, 16, false, false, 5, 3, true, 0.0},
        {2, 2, 2, 24, 24, 32, 32, true, false, -1, -1, true, 0.0},
        {1, 3, 1, 20, 50, 8, 8, false, false, -1, -1, true, 0.0},
    };
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        test_problem t;
        test_problem_init(&t, &shapes[c]);
        test_problem_randomize(&t, 77 + c, 2.0);
        if (t.p.B > 1) t.len_q[1] = t.p.Sq - 7, t.len_kv[1] = t.p.Skv - 3;
        af_oracle_result m, f;
        test_run(&t, AF_ORACLE_MPFR, 128, 2, &m);
        test_run(&t, AF_ORACLE_FP64, 128, 2, &f);
        CHECK(!f.all_mpfr && f.mpfr_rows == 0);
        CHECK(f.bound_rel == 4 * 0x1p-53 && f.bound_abs_scale > m.bound_abs_scale);
        size_t rows = test_rows(&t), keys = test_keys(&t);
        double g_o = row_gap(f.out.o, m.out.o, rows, t.p.Dv, 1);
        double g_lse = test_max_rel(f.out.lse, m.out.lse, rows, 1.0);
        double g_dq = row_gap(f.out.dq, m.out.dq, rows, t.p.Dqk, (size_t)t.p.Sq);
        double g_dk = row_gap(f.out.dk, m.out.dk, keys, t.p.Dqk, (size_t)t.p.Skv);
        double g_dv = row_gap(f.out.dv, m.out.dv, keys, t.p.Dv, (size_t)t.p.Skv);
        printf("case %zu: fp64 vs MPFR: O %.2g LSE %.2g dQ %.2g dK %.2g dV %.2g\n", c, g_o, g_lse, g_dq, g_dk, g_dv);
        CHECK(g_o <= 1e-13 && g_lse <= 1e-13 && g_dq <= 1e-13 && g_dk <= 1e-13 && g_dv <= 1e-13);
        for (size_t x = 0; x < rows; x++) CHECK(isinf(m.out.lse[x]) == isinf(f.out.lse[x]));
        af_oracle_result_free(&m);
        af_oracle_result_free(&f);
        test_problem_free(&t);
    }
}

/* 60 random small problems: the same agreement, and AUTO sampled on each. */
static void fp64_agrees_random(void) {
    double worst = 0.0;
    for (int c = 0; c < 60; c++) {
        test_problem t;
        test_problem_random(&t, 9100 + (uint64_t)c);
        af_oracle_result m, f, a;
        test_run(&t, AF_ORACLE_MPFR, 128, 2, &m);
        test_run(&t, AF_ORACLE_FP64, 128, 2, &f);
        size_t rows = test_rows(&t), keys = test_keys(&t);
        /* The stated fp64 bound, with crude masses, and 1e-13 of |value| + mass. */
        test_masses ms = test_crude_masses(&t);
        const double *fv[5] = {f.out.o, f.out.lse, f.out.dq, f.out.dk, f.out.dv};
        const double *mv[5] = {m.out.o, m.out.lse, m.out.dq, m.out.dk, m.out.dv};
        size_t n[5] = {rows * t.p.Dv, rows, rows * t.p.Dqk, keys * t.p.Dqk, keys * t.p.Dv};
        double mass[5] = {ms.o, ms.lse, ms.dq, ms.dk, ms.dv};
        for (int k = 0; k < 5; k++) {
            double stated = test_bound_ratio(fv[k], mv[k], n[k], f.bound_rel, f.bound_abs_scale, mass[k]);
            double g = test_bound_ratio(fv[k], mv[k], n[k], 1.0, 1.0, mass[k]);
            CHECK_MSG(stated <= 1.0, "random case %d tensor %d: %g of the stated bound", c, k, stated);
            CHECK_MSG(g <= 1e-13, "random case %d tensor %d: gap %g", c, k, g);
            if (g > worst) worst = g;
        }
        af_oracle_opts o;
        af_oracle_opts_default(&o);
        o.mpfr_budget = 1.0; /* sampled */
        char why[512] = "";
        CHECK_MSG(af_oracle_run(&t.p, &o, &a, why, sizeof why) == 0, "random case %d: %s", c, why);
        /* (A problem with no visible pair has no work: all MPFR, trivially.) */
        CHECK(a.all_mpfr == (af_oracle_total_work(&t.p) <= 1.0));
        CHECK_MSG(a.fp64_vs_mpfr_rel <= 1e-13, "random case %d: AUTO gap %g", c, a.fp64_vs_mpfr_rel);
        af_oracle_result_free(&m);
        af_oracle_result_free(&f);
        af_oracle_result_free(&a);
        test_problem_free(&t);
    }
    printf("random problems: worst fp64 vs MPFR gap %.3g of |value| + mass\n", worst);
}

static void auto_within_budget(void) {
    test_shape s = {1, 2, 1, 20, 20, 8, 8, true, false, -1, -1, true, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 5, 1.0);
    af_oracle_result a, m;
    test_run(&t, AF_ORACLE_AUTO, 128, 2, &a);
    test_run(&t, AF_ORACLE_MPFR, 128, 1, &m);
    CHECK(a.all_mpfr && a.mpfr_rows == 2 * 20 && a.fp64_vs_mpfr_rel == 0.0);
    CHECK(memcmp(a.out.o, m.out.o, test_rows(&t) * s.Dv * sizeof(double)) == 0);
    CHECK(memcmp(a.out.dk, m.out.dk, test_keys(&t) * s.Dqk * sizeof(double)) == 0);
    af_oracle_result_free(&a);
    af_oracle_result_free(&m);
    test_problem_free(&t);
}

static bool has_item(const af_sample_item *items, int n, int b, int h, int idx) {
    for (int k = 0; k < n; k++)
        if (items[k].b == b && items[k].h == h && items[k].idx == idx) return true;
    return false;
}

static bool rows_equal(const af_oracle_result *x, const af_oracle_result *y, size_t row, int Dv, int Dqk) {
    return memcmp(x->out.o + row * Dv, y->out.o + row * Dv, Dv * sizeof(double)) == 0 &&
           memcmp(x->out.lse + row, y->out.lse + row, sizeof(double)) == 0 &&
           memcmp(x->out.dq + row * Dqk, y->out.dq + row * Dqk, Dqk * sizeof(double)) == 0;
}

/* Causal bottom-right + window left 50; sequence 0 is 200 x 180 (diag = i - 20:
 * rows 0..19 see nothing, the left bound leaves key 0 at row 71), sequence 1 is
 * 130 x 150 (diag = i + 20: the left bound leaves key 0 at row 31). */
static void auto_sampled(void) {
    test_shape s = {2, 4, 2, 200, 180, 16, 8, true, true, 50, -1, true, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 2024, 1.0);
    t.len_q[1] = 130, t.len_kv[1] = 150;
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.threads = 2;
    o.mpfr_budget = 2e4; /* far below the case's work: sampled mode, class 0 only */
    CHECK(af_oracle_total_work(&t.p) > 100 * o.mpfr_budget);
    af_oracle_result a, m, f;
    char why[512] = "";
    CHECK_MSG(af_oracle_run(&t.p, &o, &a, why, sizeof why) == 0, "%s", why);
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &m);
    test_run(&t, AF_ORACLE_FP64, 128, 2, &f);
    CHECK(!a.all_mpfr);
    CHECK(a.fp64_vs_mpfr_rel > 0.0 && a.fp64_vs_mpfr_rel <= 1e-13);
    CHECK(a.bound_rel == f.bound_rel && a.bound_abs_scale == f.bound_abs_scale);
    printf("AUTO sampled: %d MPFR rows, fp64 vs MPFR gap %.3g, %.3f s\n", a.mpfr_rows, a.fp64_vs_mpfr_rel, a.seconds);

    af_sample_item *rows = NULL, *keys = NULL;
    int n_rows = af_oracle_sample_rows(&t.p, 0.5 * o.mpfr_budget, &rows);
    int n_keys = af_oracle_sample_keys(&t.p, 0.5 * o.mpfr_budget, &keys);
    CHECK(n_rows == a.mpfr_rows && n_keys > 0);
    static const int boundary[2][6] = {{0, 199, 19, 20, 70, 71}, {0, 129, 30, 31, -1, -1}};
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 6; k++) {
            if (boundary[b][k] < 0) continue;
            CHECK_MSG(has_item(rows, n_rows, b, 0, boundary[b][k]), "b %d row %d not sampled", b, boundary[b][k]);
            CHECK(has_item(rows, n_rows, b, 3, boundary[b][k]));
        }
    /* Keys: first and last valid key of each sequence, kv heads 0 and 1. */
    CHECK(has_item(keys, n_keys, 0, 0, 0) && has_item(keys, n_keys, 0, 1, 179));
    CHECK(has_item(keys, n_keys, 1, 0, 149) && has_item(keys, n_keys, 1, 1, 0));
    /* Sampled rows are the MPFR tier's values, the others the fp64 tier's. */
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 4; h++)
            for (int i = 0; i < t.len_q[b]; i++) {
                size_t row = ((size_t)b * 4 + h) * 200 + i;
                const af_oracle_result *want = has_item(rows, n_rows, b, h, i) ? &m : &f;
                CHECK_MSG(rows_equal(&a, want, row, s.Dv, s.Dqk), "row (%d,%d,%d)", b, h, i);
            }
    for (int k = 0; k < n_keys; k++) {
        size_t key = ((size_t)keys[k].b * 2 + keys[k].h) * 180 + keys[k].idx;
        CHECK(test_max_rel(a.out.dk + key * s.Dqk, m.out.dk + key * s.Dqk, s.Dqk,
                           test_max_abs(m.out.dk + key * s.Dqk, s.Dqk)) <= 1e-13);
    }
    free(rows);
    free(keys);
    af_oracle_result_free(&a);

    /* A larger budget also takes the rows around multiples of 128. */
    o.mpfr_budget = 4e6;
    CHECK(af_oracle_total_work(&t.p) > o.mpfr_budget);
    CHECK_MSG(af_oracle_run(&t.p, &o, &a, why, sizeof why) == 0, "%s", why);
    n_rows = af_oracle_sample_rows(&t.p, 0.5 * o.mpfr_budget, &rows);
    CHECK(n_rows == a.mpfr_rows);
    int head = (128 / 32) % 4;
    CHECK(has_item(rows, n_rows, 0, head, 127) && has_item(rows, n_rows, 0, head, 128) &&
          has_item(rows, n_rows, 0, head, 129));
    CHECK(has_item(rows, n_rows, 1, head, 127) && has_item(rows, n_rows, 1, head, 128));
    for (int k = 0; k < n_rows; k++) {
        size_t row = ((size_t)rows[k].b * 4 + rows[k].h) * 200 + rows[k].idx;
        CHECK(rows_equal(&a, &m, row, s.Dv, s.Dqk));
    }
    free(rows);
    af_oracle_result_free(&a);
    af_oracle_result_free(&m);
    af_oracle_result_free(&f);
    test_problem_free(&t);
}

/* Scores of size ~1e7 that differ by O(1): every fp64 score carries a rounding
 * error ~1e-9 (the scale is not a power of two), which the softmax turns into
 * relative errors ~1e-9 > the 1e-10 limit; the MPFR check must catch it. */
static void auto_rejects_inaccurate_fp64(void) {
    test_shape s = {1, 1, 1, 16, 16, 16, 8, false, false, -1, -1, false, (double)(float)(1.0 / sqrt(3.0))};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 99, 1.0);
    for (int i = 0; i < 16; i++) t.in.q[i * 16] = 4096.0; /* a huge common component */
    for (int j = 0; j < 16; j++) {
        t.in.k[j * 16] = 4096.0;
        for (int d = 1; d < 16; d++) t.in.k[j * 16 + d] *= 0.25; /* O(1) differences */
    }
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.mpfr_budget = 1.0;
    af_oracle_result r;
    char why[512] = "";
    int rc = af_oracle_run(&t.p, &o, &r, why, sizeof why);
    printf("huge scores: rc %d, %s\n", rc, rc ? why : "(accepted)");
    CHECK(rc == -1);
    CHECK(strstr(why, "fp64 tier disagrees with MPFR") != NULL);
    CHECK(r.out.o == NULL);
    test_problem_free(&t);
}

int main(void) {
    fp64_agrees_with_mpfr();
    fp64_agrees_random();
    auto_within_budget();
    auto_sampled();
    auto_rejects_inaccurate_fp64();
    CHECK_DONE("test_oracle_tiers");
}
