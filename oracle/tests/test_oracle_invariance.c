/* test_oracle_invariance.c — symmetries the exact answer has, which the MPFR tier
 * must keep bit for bit (mpfr_sum is correctly rounded whatever the order):
 *  - permuting the keys together with their values (no mask; under padding, only
 *    the valid keys) leaves O, LSE and dQ unchanged and permutes dK, dV;
 *  - GQA equals MHA with K and V replicated per group: O, LSE, dQ identical; the
 *    GQA dK/dV equal the sum over the group's MHA heads (within 2 ulps + the
 *    cancellation term: the MHA parts are rounded separately);
 *  - the thread count changes nothing, in every tier.
 */
#include "oracle/tests/oracle_testlib.h"

static void key_permutation(void) {
    test_shape s = {2, 4, 2, 9, 13, 8, 6, false, false, -1, -1, true, 0.0};
    test_problem t, u;
    test_problem_init(&t, &s);
    test_problem_init(&u, &s);
    test_problem_randomize(&t, 41, 2.0);
    t.len_kv[1] = 10, u.len_kv[1] = 10;
    memcpy(u.in.q, t.in.q, test_rows(&t) * s.Dqk * sizeof(double));
    memcpy(u.in.dout, t.in.dout, test_rows(&t) * s.Dv * sizeof(double));
    int perm[2][13]; /* u's key j is t's key perm[b][j] */
    uint64_t st = 5;
    for (int b = 0; b < 2; b++) {
        for (int j = 0; j < 13; j++) perm[b][j] = j;
        for (int j = t.len_kv[b] - 1; j > 0; j--) { /* Fisher-Yates on the valid keys */
            int r = (int)(test_random(&st) % (uint64_t)(j + 1));
            int x = perm[b][j];
            perm[b][j] = perm[b][r], perm[b][r] = x;
        }
        for (int g = 0; g < 2; g++)
            for (int j = 0; j < 13; j++) {
                size_t dst = ((size_t)b * 2 + g) * 13 + j, src = ((size_t)b * 2 + g) * 13 + perm[b][j];
                memcpy(u.in.k + dst * s.Dqk, t.in.k + src * s.Dqk, s.Dqk * sizeof(double));
                memcpy(u.in.v + dst * s.Dv, t.in.v + src * s.Dv, s.Dv * sizeof(double));
            }
    }
    af_oracle_result a, c;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &a);
    test_run(&u, AF_ORACLE_MPFR, 128, 3, &c);
    size_t rows = test_rows(&t);
    CHECK(memcmp(a.out.o, c.out.o, rows * s.Dv * sizeof(double)) == 0);
    CHECK(memcmp(a.out.lse, c.out.lse, rows * sizeof(double)) == 0);
    CHECK(memcmp(a.out.dq, c.out.dq, rows * s.Dqk * sizeof(double)) == 0);
    for (int b = 0; b < 2; b++)
        for (int g = 0; g < 2; g++)
            for (int j = 0; j < 13; j++) {
                size_t dst = ((size_t)b * 2 + g) * 13 + j, src = ((size_t)b * 2 + g) * 13 + perm[b][j];
                CHECK(memcmp(c.out.dk + dst * s.Dqk, a.out.dk + src * s.Dqk, s.Dqk * sizeof(double)) == 0);
                CHECK(memcmp(c.out.dv + dst * s.Dv, a.out.dv + src * s.Dv, s.Dv * sizeof(double)) == 0);
            }
    af_oracle_result_free(&a);
    af_oracle_result_free(&c);
    test_problem_free(&t);
    test_problem_free(&u);
}

static void gqa_is_replicated_mha(void) {
    test_shape sg = {2, 6, 2, 8, 11, 8, 5, true, true, 3, -1, true, 0.0};
    test_shape sm = sg;
    sm.Hkv = 6;
    test_problem g, m;
    test_problem_init(&g, &sg);
    test_problem_init(&m, &sm);
    test_problem_randomize(&g, 64, 2.0);
    g.len_q[0] = 6, g.len_kv[0] = 9, m.len_q[0] = 6, m.len_kv[0] = 9;
    memcpy(m.in.q, g.in.q, test_rows(&g) * sg.Dqk * sizeof(double));
    memcpy(m.in.dout, g.in.dout, test_rows(&g) * sg.Dv * sizeof(double));
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 6; h++) {
            size_t src = ((size_t)b * 2 + h / 3) * 11, dst = ((size_t)b * 6 + h) * 11;
            memcpy(m.in.k + dst * sg.Dqk, g.in.k + src * sg.Dqk, 11 * sg.Dqk * sizeof(double));
            memcpy(m.in.v + dst * sg.Dv, g.in.v + src * sg.Dv, 11 * sg.Dv * sizeof(double));
        }
    af_oracle_result a, c;
    test_run(&g, AF_ORACLE_MPFR, 128, 2, &a);
    test_run(&m, AF_ORACLE_MPFR, 128, 2, &c);
    size_t rows = test_rows(&g);
    CHECK(memcmp(a.out.o, c.out.o, rows * sg.Dv * sizeof(double)) == 0);
    CHECK(memcmp(a.out.lse, c.out.lse, rows * sizeof(double)) == 0);
    CHECK(memcmp(a.out.dq, c.out.dq, rows * sg.Dqk * sizeof(double)) == 0);
    double scale_k = test_max_abs(c.out.dk, test_keys(&m) * sg.Dqk);
    double scale_v = test_max_abs(c.out.dv, test_keys(&m) * sg.Dv);
    for (int b = 0; b < 2; b++)
        for (int kv = 0; kv < 2; kv++)
            for (int j = 0; j < 11; j++)
                for (int d = 0; d < 8; d++) {
                    size_t gi = ((size_t)b * 2 + kv) * 11 + j;
                    double sum = 0.0, mag = 0.0;
                    for (int hh = 0; hh < 3; hh++) {
                        double x = c.out.dk[(((size_t)b * 6 + kv * 3 + hh) * 11 + j) * sg.Dqk + d];
                        sum += x, mag += fabs(x);
                    }
                    CHECK(fabs(a.out.dk[gi * sg.Dqk + d] - sum) <= 0x1p-51 * mag + 1e-30 * scale_k);
                    if (d >= sg.Dv) continue;
                    sum = 0.0, mag = 0.0;
                    for (int hh = 0; hh < 3; hh++) {
                        double x = c.out.dv[(((size_t)b * 6 + kv * 3 + hh) * 11 + j) * sg.Dv + d];
                        sum += x, mag += fabs(x);
                    }
                    CHECK(fabs(a.out.dv[gi * sg.Dv + d] - sum) <= 0x1p-51 * mag + 1e-30 * scale_v);
                }
    af_oracle_result_free(&a);
    af_oracle_result_free(&c);
    test_problem_free(&g);
    test_problem_free(&m);
}

static void thread_count(void) {
    test_shape s = {2, 4, 2, 40, 37, 8, 8, true, false, 9, -1, true, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 3, 1.0);
    t.len_q[1] = 29;
    static const af_oracle_tier tiers[] = {AF_ORACLE_MPFR, AF_ORACLE_FP64, AF_ORACLE_AUTO};
    for (int k = 0; k < 3; k++) {
        af_oracle_opts o;
        af_oracle_opts_default(&o);
        o.tier = tiers[k];
        o.mpfr_budget = 3e4; /* AUTO: sampled */
        af_oracle_result one, many;
        char why[256];
        o.threads = 1;
        CHECK(af_oracle_run(&t.p, &o, &one, why, sizeof why) == 0);
        o.threads = 5;
        CHECK(af_oracle_run(&t.p, &o, &many, why, sizeof why) == 0);
        size_t rows = test_rows(&t), keys = test_keys(&t);
        CHECK(memcmp(one.out.o, many.out.o, rows * s.Dv * sizeof(double)) == 0);
        CHECK(memcmp(one.out.lse, many.out.lse, rows * sizeof(double)) == 0);
        CHECK(memcmp(one.out.dq, many.out.dq, rows * s.Dqk * sizeof(double)) == 0);
        CHECK(memcmp(one.out.dk, many.out.dk, keys * s.Dqk * sizeof(double)) == 0);
        CHECK(memcmp(one.out.dv, many.out.dv, keys * s.Dv * sizeof(double)) == 0);
        CHECK(one.mpfr_rows == many.mpfr_rows && one.fp64_vs_mpfr_rel == many.fp64_vs_mpfr_rel);
        af_oracle_result_free(&one);
        af_oracle_result_free(&many);
    }
    test_problem_free(&t);
}

int main(void) {
    key_permutation();
    gqa_is_replicated_mha();
    thread_count();
    CHECK_DONE("test_oracle_invariance");
}
