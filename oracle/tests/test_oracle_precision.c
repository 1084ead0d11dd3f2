/* test_oracle_precision.c — precision doubling: the MPFR tier at 128 and at 256
 * bits returns the same doubles (at most 1 ulp apart, which only a value within
 * 2^-120 of a rounding boundary could cause, or apart by no more than the stated
 * 128-bit cancellation term), on random fp16-valued inputs with several masks,
 * GQA, padding, Dqk != Dv and large scores. Also checks the stated bound. */
#include "oracle/tests/oracle_testlib.h"

typedef struct {
    test_shape s;
    int len_q1, len_kv1; /* lengths of sequence 1 (0: full) */
    double q_spread;
} precision_case;

/* Values must agree within 1 ulp (rounding-boundary cases) or within the stated
 * 128-bit term bound_abs_scale * M, M the crude mass of oracle_testlib.h (tiny
 * values made by cancellation, e.g. dQ ~ 1e-50 where the exact dQ is ~0). */
static void compare_tensor(const char *name, const double *a, const double *b, size_t n, double abs_term,
                           size_t *identical, size_t *total) {
    for (size_t x = 0; x < n; x++) {
        *total += 1;
        if (a[x] == b[x] || (isnan(a[x]) && isnan(b[x]))) {
            *identical += 1;
            continue;
        }
        bool close = test_ulps(a[x], b[x]) <= 1.0 || fabs(a[x] - b[x]) <= abs_term;
        CHECK_MSG(close, "%s[%zu]: 128 bits %.17g, 256 bits %.17g", name, x, a[x], b[x]);
    }
}

int main(void) {
    static const precision_case cases[] = {
        {{2, 4, 2, 9, 11, 16, 8, true, true, -1, -1, true, 0.0}, 5, 7, 1.0},
        {{1, 2, 1, 13, 7, 8, 12, false, false, 3, 2, true, 0.0}, 0, 0, 1.0},
        {{2, 3, 3, 8, 8, 32, 32, false, false, -1, -1, true, 0.0}, 3, 8, 4.0},
        {{1, 4, 1, 10, 17, 8, 8, true, true, 4, -1, true, 0.0}, 0, 0, 2.0},
        {{2, 2, 1, 12, 6, 8, 4, true, true, -1, -1, true, 0.0}, 9, 4, 1.0},        /* sq > skv */
        {{1, 2, 2, 16, 16, 16, 16, false, false, -1, -1, false, 0.0}, 0, 0, 16.0}, /* big scores */
    };
    size_t identical = 0, total = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        test_problem t;
        test_problem_init(&t, &cases[c].s);
        test_problem_randomize(&t, 1000 + c, cases[c].q_spread);
        if (cases[c].len_q1) t.len_q[1] = cases[c].len_q1, t.len_kv[1] = cases[c].len_kv1;
        af_oracle_result r128, r256;
        test_run(&t, AF_ORACLE_MPFR, 128, 2, &r128);
        test_run(&t, AF_ORACLE_MPFR, 256, 2, &r256);
        CHECK(r128.all_mpfr && r256.all_mpfr);
        CHECK(r128.bound_rel == 0x1p-53);
        CHECK(r128.bound_abs_scale > 0 && r128.bound_abs_scale < 1e-25);
        CHECK(r256.bound_abs_scale < r128.bound_abs_scale * 1e-30);
        const af_oracle_problem *p = &t.p;
        size_t rows = test_rows(&t), keys = test_keys(&t);
        test_masses m = test_crude_masses(&t);
        double u = r128.bound_abs_scale;
        compare_tensor("O", r128.out.o, r256.out.o, rows * p->Dv, u * m.o, &identical, &total);
        compare_tensor("LSE", r128.out.lse, r256.out.lse, rows, u * m.lse, &identical, &total);
        if (p->in->dout) {
            compare_tensor("dQ", r128.out.dq, r256.out.dq, rows * p->Dqk, u * m.dq, &identical, &total);
            compare_tensor("dK", r128.out.dk, r256.out.dk, keys * p->Dqk, u * m.dk, &identical, &total);
            compare_tensor("dV", r128.out.dv, r256.out.dv, keys * p->Dv, u * m.dv, &identical, &total);
        }
        af_oracle_result_free(&r128);
        af_oracle_result_free(&r256);
        test_problem_free(&t);
    }
    /* A larger head dim, and 60 random small problems (masks, lengths, GQA). */
    for (int c = -1; c < 60; c++) {
        test_problem t;
        if (c < 0) {
            test_shape s = {1, 4, 2, 40, 48, 128, 64, true, false, -1, -1, true, 0.0};
            test_problem_init(&t, &s);
            test_problem_randomize(&t, 4242, 1.0);
        } else {
            test_problem_random(&t, 7000 + (uint64_t)c);
        }
        af_oracle_result r128, r256;
        test_run(&t, AF_ORACLE_MPFR, 128, 2, &r128);
        test_run(&t, AF_ORACLE_MPFR, 256, 2, &r256);
        const af_oracle_problem *p = &t.p;
        size_t rows = test_rows(&t), keys = test_keys(&t);
        test_masses m = test_crude_masses(&t);
        double u = r128.bound_abs_scale;
        compare_tensor("O", r128.out.o, r256.out.o, rows * p->Dv, u * m.o, &identical, &total);
        compare_tensor("LSE", r128.out.lse, r256.out.lse, rows, u * m.lse, &identical, &total);
        compare_tensor("dQ", r128.out.dq, r256.out.dq, rows * p->Dqk, u * m.dq, &identical, &total);
        compare_tensor("dK", r128.out.dk, r256.out.dk, keys * p->Dqk, u * m.dk, &identical, &total);
        compare_tensor("dV", r128.out.dv, r256.out.dv, keys * p->Dv, u * m.dv, &identical, &total);
        af_oracle_result_free(&r128);
        af_oracle_result_free(&r256);
        test_problem_free(&t);
    }
    printf("precision doubling: %zu of %zu values bit-identical\n", identical, total);
    CHECK(identical * 1000 >= total * 999);
    CHECK_DONE("test_oracle_precision");
}
