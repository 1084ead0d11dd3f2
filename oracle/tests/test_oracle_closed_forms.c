/* test_oracle_closed_forms.c — the oracle against answers known in closed form.
 *
 *  - all keys equal: O = mean of the visible V rows (exactly the correctly rounded
 *    mean), LSE = scale q.k + ln(n_visible) (within 1 ulp), dQ = 0 (up to the
 *    stated 128-bit term), for several masks, GQA and padding;
 *  - Q = 0: the same with score 0;
 *  - one visible key (window (0,0)): O = that V row, LSE = the score, dQ = dK = 0,
 *    dV = sum of the dO rows that see the key, all exactly, in both tiers;
 *  - a 2x2 causal case worked out by hand: every output exact (LSE within 1 ulp).
 */
#include <mpfr.h>
#include "oracle/mask_spec.h"
#include "oracle/tests/oracle_testlib.h"

/* Every key row of each (b, kv head) is the same vector; returns nothing. */
static void make_keys_equal(test_problem *t) {
    const af_oracle_problem *p = &t->p;
    for (int b = 0; b < p->B; b++)
        for (int g = 0; g < p->Hkv; g++) {
            double *k0 = t->in.k + (((size_t)b * p->Hkv + g) * p->Skv) * p->Dqk;
            for (int j = 1; j < p->Skv; j++) memcpy(k0 + (size_t)j * p->Dqk, k0, (size_t)p->Dqk * sizeof *k0);
        }
}

/* The score of row (b,h,i) against key (b,g,j), as the correctly rounded double. */
static double exact_score(const test_problem *t, int b, int h, int i, int j) {
    const af_oracle_problem *p = &t->p;
    int g = h / (p->Hq / p->Hkv);
    const double *q = t->in.q + (((size_t)b * p->Hq + h) * p->Sq + i) * p->Dqk;
    const double *k = t->in.k + (((size_t)b * p->Hkv + g) * p->Skv + j) * p->Dqk;
    mpfr_t acc, prod;
    mpfr_inits2(400, acc, prod, (mpfr_ptr)0);
    mpfr_set_zero(acc, 1);
    for (int d = 0; d < p->Dqk; d++) {
        mpfr_set_d(prod, q[d], MPFR_RNDN);
        mpfr_mul_d(prod, prod, k[d], MPFR_RNDN);
        mpfr_add(acc, acc, prod, MPFR_RNDN);
    }
    mpfr_mul_d(acc, acc, p->scale, MPFR_RNDN);
    double s = mpfr_get_d(acc, MPFR_RNDN);
    mpfr_clears(acc, prod, (mpfr_ptr)0);
    return s;
}

/* score + ln(n), correctly rounded. */
static double exact_lse_equal_scores(const test_problem *t, int b, int h, int i, int j, int n) {
    const af_oracle_problem *p = &t->p;
    int g = h / (p->Hq / p->Hkv);
    const double *q = t->in.q + (((size_t)b * p->Hq + h) * p->Sq + i) * p->Dqk;
    const double *k = t->in.k + (((size_t)b * p->Hkv + g) * p->Skv + j) * p->Dqk;
    mpfr_t acc, prod;
    mpfr_inits2(400, acc, prod, (mpfr_ptr)0);
    mpfr_set_zero(acc, 1);
    for (int d = 0; d < p->Dqk; d++) {
        mpfr_set_d(prod, q[d], MPFR_RNDN);
        mpfr_mul_d(prod, prod, k[d], MPFR_RNDN);
        mpfr_add(acc, acc, prod, MPFR_RNDN);
    }
    mpfr_mul_d(acc, acc, p->scale, MPFR_RNDN);
    mpfr_set_ui(prod, (unsigned long)n, MPFR_RNDN);
    mpfr_log(prod, prod, MPFR_RNDN);
    mpfr_add(acc, acc, prod, MPFR_RNDN);
    double s = mpfr_get_d(acc, MPFR_RNDN);
    mpfr_clears(acc, prod, (mpfr_ptr)0);
    return s;
}

/* O = mean of visible V rows, LSE = score + ln n, dQ ~ 0, on every valid row. */
static void check_equal_keys(const test_problem *t, const af_oracle_result *r) {
    const af_oracle_problem *p = &t->p;
    double dq_limit = 1e-30 * fabs(p->scale) * (1.0 + test_max_abs(t->in.k, test_keys(t) * p->Dqk));
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->Sq; i++) {
                size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
                int g = h / (p->Hq / p->Hkv);
                af_mask_keys keys;
                int n = af_mask_visible_keys(&p->mask, b, p->len_q[b], p->len_kv[b], i, &keys);
                if (i >= p->len_q[b]) {
                    for (int d = 0; d < p->Dv; d++) CHECK(r->out.o[row * p->Dv + d] == 0.0);
                    continue;
                }
                if (n == 0) {
                    CHECK(isinf(r->out.lse[row]) && r->out.lse[row] < 0);
                    continue;
                }
                for (int d = 0; d < p->Dv; d++) {
                    double sum = 0.0; /* exact: few fp16 values */
                    for (int ks = 0; ks < keys.n; ks++)
                        for (int j = keys.first[ks]; j <= keys.last[ks]; j++)
                            sum += t->in.v[(((size_t)b * p->Hkv + g) * p->Skv + j) * p->Dv + d];
                    double mean = sum / n;
                    CHECK_MSG(r->out.o[row * p->Dv + d] == mean, "O[%d,%d,%d,%d] = %.17g, mean %.17g", b, h, i, d,
                              r->out.o[row * p->Dv + d], mean);
                }
                double lse = exact_lse_equal_scores(t, b, h, i, keys.first[0], n);
                CHECK_MSG(test_ulps(r->out.lse[row], lse) <= 1.0, "LSE[%d,%d,%d] = %.17g want %.17g", b, h, i,
                          r->out.lse[row], lse);
                if (r->out.dq)
                    for (int d = 0; d < p->Dqk; d++)
                        CHECK_MSG(fabs(r->out.dq[row * p->Dqk + d]) <= dq_limit, "dQ = %g",
                                  r->out.dq[row * p->Dqk + d]);
            }
}

static void equal_keys(void) {
    static const struct {
        bool causal, br;
        int left, right;
        bool padded;
    } masks[] = {
        {false, false, -1, -1, false}, {true, false, -1, -1, false}, {true, true, -1, -1, false},
        {false, false, 2, 1, false},   {true, true, -1, -1, true},   {false, true, 1, 3, true},
    };
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        test_shape s = {2, 4, 2, 6, 9, 8, 5, masks[m].causal, masks[m].br, masks[m].left, masks[m].right, true, 0.0};
        test_problem t;
        test_problem_init(&t, &s);
        test_problem_randomize(&t, 100 + m, 1.0);
        if (masks[m].padded) t.len_q[1] = 3, t.len_kv[1] = 4;
        make_keys_equal(&t);
        af_oracle_result r;
        test_run(&t, AF_ORACLE_MPFR, 128, 2, &r);
        CHECK(r.all_mpfr);
        check_equal_keys(&t, &r);
        af_oracle_result_free(&r);
        /* Q = 0: every score is 0, the same closed form. */
        memset(t.in.q, 0, test_rows(&t) * t.p.Dqk * sizeof(double));
        test_run(&t, AF_ORACLE_MPFR, 128, 1, &r);
        check_equal_keys(&t, &r);
        af_oracle_result_free(&r);
        test_problem_free(&t);
    }
}

/* Window (0,0): each row sees exactly its diagonal key. Exact in both tiers. */
static void one_visible_key(void) {
    for (int variant = 0; variant < 3; variant++) {
        /* 0: causal top-left 7x7; 1: bottom-right 4x7 (diag = i + 3); 2: padded. */
        test_shape s = {2, 4, 2, variant == 1 ? 4 : 7, 7, 8, 6, variant != 1, variant == 1, 0, 0, true, 0.25};
        test_problem t;
        test_problem_init(&t, &s);
        test_problem_randomize(&t, 7 + variant, 1.0);
        if (variant == 2) t.len_q[0] = 5, t.len_kv[0] = 5;
        for (int tier = 0; tier < 2; tier++) {
            af_oracle_result r;
            test_run(&t, tier == 0 ? AF_ORACLE_MPFR : AF_ORACLE_FP64, 128, 2, &r);
            const af_oracle_problem *p = &t.p;
            int group = p->Hq / p->Hkv;
            for (int b = 0; b < p->B; b++)
                for (int h = 0; h < p->Hq; h++)
                    for (int i = 0; i < p->len_q[b]; i++) {
                        size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
                        int g = h / group;
                        int j = i + (p->mask.bottom_right ? p->len_kv[b] - p->len_q[b] : 0);
                        const double *v = t.in.v + (((size_t)b * p->Hkv + g) * p->Skv + j) * p->Dv;
                        for (int d = 0; d < p->Dv; d++) CHECK(r.out.o[row * p->Dv + d] == v[d]);
                        CHECK_MSG(r.out.lse[row] == exact_score(&t, b, h, i, j), "tier %d: LSE %.17g score %.17g", tier,
                                  r.out.lse[row], exact_score(&t, b, h, i, j));
                        for (int d = 0; d < p->Dqk; d++) CHECK(r.out.dq[row * p->Dqk + d] == 0.0);
                    }
            for (int b = 0; b < p->B; b++)
                for (int g = 0; g < p->Hkv; g++)
                    for (int j = 0; j < p->Skv; j++) {
                        size_t key = ((size_t)b * p->Hkv + g) * p->Skv + j;
                        for (int d = 0; d < p->Dqk; d++) CHECK(r.out.dk[key * p->Dqk + d] == 0.0);
                        int i = j - (p->mask.bottom_right ? p->len_kv[b] - p->len_q[b] : 0);
                        for (int d = 0; d < p->Dv; d++) {
                            double want = 0.0; /* exact: a sum of 2 fp16 values */
                            if (j < p->len_kv[b] && i >= 0 && i < p->len_q[b])
                                for (int hh = 0; hh < group; hh++)
                                    want += t.in.dout[(((size_t)b * p->Hq + g * group + hh) * p->Sq + i) * p->Dv + d];
                            CHECK_MSG(r.out.dv[key * p->Dv + d] == want, "tier %d dV[%d,%d,%d,%d] %.17g want %.17g",
                                      tier, b, g, j, d, r.out.dv[key * p->Dv + d], want);
                        }
                    }
            af_oracle_result_free(&r);
        }
        test_problem_free(&t);
    }
}

/* 2x2, causal top-left, scale 0.5, worked out by hand:
 *   q0 = (2,0) q1 = (1,1)  k0 = (1,0) k1 = (0,1)  v0 = (1,2) v1 = (3,-4)
 *   dO0 = (1,0) dO1 = (0.5,1)
 * row 0 sees key 0: s = 1, O0 = v0, LSE0 = 1, dS = 0.
 * row 1: s10 = s11 = 0.5, P = 1/2: O1 = (2,-1), LSE1 = 0.5 + ln 2,
 *   dP = (2.5, -2.5), D = dO1.O1 = 0, dS = (1.25, -1.25), dQ1 = 0.5*1.25*(k0-k1).
 * dK0 = 0.5*1.25*q1, dK1 = -dK0; dV0 = dO0 + dO1/2, dV1 = dO1/2. */
static void hand_2x2(void) {
    test_shape s = {1, 1, 1, 2, 2, 2, 2, true, false, -1, -1, true, 0.5};
    test_problem t;
    test_problem_init(&t, &s);
    const double q[] = {2, 0, 1, 1}, k[] = {1, 0, 0, 1}, v[] = {1, 2, 3, -4}, dout[] = {1, 0, 0.5, 1};
    memcpy(t.in.q, q, sizeof q);
    memcpy(t.in.k, k, sizeof k);
    memcpy(t.in.v, v, sizeof v);
    memcpy(t.in.dout, dout, sizeof dout);
    const double want_o[] = {1, 2, 2, -1};
    const double want_dq[] = {0, 0, 0.625, -0.625};
    const double want_dk[] = {0.625, 0.625, -0.625, -0.625};
    const double want_dv[] = {1.25, 0.5, 0.25, 0.5};
    mpfr_t l;
    mpfr_init2(l, 300);
    mpfr_const_log2(l, MPFR_RNDN);
    mpfr_add_d(l, l, 0.5, MPFR_RNDN);
    double lse1 = mpfr_get_d(l, MPFR_RNDN);
    mpfr_clear(l);
    for (int tier = 0; tier < 2; tier++) {
        af_oracle_result r;
        test_run(&t, tier == 0 ? AF_ORACLE_MPFR : AF_ORACLE_FP64, 128, 1, &r);
        /* MPFR: exact. fp64: the key pass uses exp(s - LSE) with LSE = 0.5 + ln 2
         * rounded, so P = 1/2 only to a few ulps there. */
        double tol = tier == 0 ? 0.0 : 4.0;
        for (int x = 0; x < 4; x++) {
            CHECK_MSG(r.out.o[x] == want_o[x], "tier %d O[%d] = %.17g", tier, x, r.out.o[x]);
            CHECK_MSG(test_ulps(r.out.dq[x], want_dq[x]) <= tol, "tier %d dQ[%d] = %.17g", tier, x, r.out.dq[x]);
            CHECK_MSG(test_ulps(r.out.dk[x], want_dk[x]) <= tol, "tier %d dK[%d] = %.17g", tier, x, r.out.dk[x]);
            CHECK_MSG(test_ulps(r.out.dv[x], want_dv[x]) <= tol, "tier %d dV[%d] = %.17g", tier, x, r.out.dv[x]);
        }
        CHECK(r.out.lse[0] == 1.0);
        if (tier == 0)
            CHECK_MSG(r.out.lse[1] == lse1, "LSE1 %.17g want %.17g", r.out.lse[1], lse1);
        else
            CHECK(test_ulps(r.out.lse[1], lse1) <= 1.0);
        af_oracle_result_free(&r);
    }
    test_problem_free(&t);
}

int main(void) {
    hand_2x2();
    one_visible_key();
    equal_keys();
    CHECK_DONE("test_oracle_closed_forms");
}
