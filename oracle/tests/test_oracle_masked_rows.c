/* test_oracle_masked_rows.c — fully masked rows and padding, in every tier.
 *
 *  - fully masked rows (bottom-right with sq > skv; a window that leaves some rows
 *    nothing; a sequence with len_kv = 0): O = 0, LSE = -inf, dQ = 0 exactly;
 *  - they contribute nothing: changing their Q and dO leaves every output bitwise
 *    unchanged;
 *  - padding rows (i >= len_q) are 0 in O, LSE, dQ; padding keys (j >= len_kv) have
 *    dK = dV = 0; changing any padded input leaves every output bitwise unchanged.
 */
#include "oracle/mask_spec.h"
#include "oracle/tests/oracle_testlib.h"

static void same_outputs(const test_problem *t, const af_oracle_result *a, const af_oracle_result *b) {
    size_t rows = test_rows(t), keys = test_keys(t);
    CHECK(memcmp(a->out.o, b->out.o, rows * t->p.Dv * sizeof(double)) == 0);
    CHECK(memcmp(a->out.lse, b->out.lse, rows * sizeof(double)) == 0);
    CHECK(memcmp(a->out.dq, b->out.dq, rows * t->p.Dqk * sizeof(double)) == 0);
    CHECK(memcmp(a->out.dk, b->out.dk, keys * t->p.Dqk * sizeof(double)) == 0);
    CHECK(memcmp(a->out.dv, b->out.dv, keys * t->p.Dv * sizeof(double)) == 0);
}

/* Perturbs every input that no visible output may depend on: Q and dO of rows that
 * see nothing or do not exist; K and V of keys that no row sees. */
static void perturb_invisible(test_problem *t, uint64_t seed) {
    const af_oracle_problem *p = &t->p;
    uint64_t st = seed;
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->Sq; i++) {
                af_mask_keys keys;
                if (af_mask_visible_keys(&p->mask, b, p->len_q[b], p->len_kv[b], i, &keys)) continue;
                size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
                for (int d = 0; d < p->Dqk; d++) t->in.q[row * p->Dqk + d] = test_fp16(&st, 8.0);
                for (int d = 0; d < p->Dv; d++) t->in.dout[row * p->Dv + d] = test_fp16(&st, 8.0);
            }
    for (int b = 0; b < p->B; b++)
        for (int g = 0; g < p->Hkv; g++)
            for (int j = 0; j < p->Skv; j++) {
                int first, last;
                if (af_mask_rows_seeing_key(&p->mask, p->len_q[b], p->len_kv[b], j, &first, &last)) continue;
                size_t key = ((size_t)b * p->Hkv + g) * p->Skv + j;
                for (int d = 0; d < p->Dqk; d++) t->in.k[key * p->Dqk + d] = test_fp16(&st, 8.0);
                for (int d = 0; d < p->Dv; d++) t->in.v[key * p->Dv + d] = test_fp16(&st, 8.0);
            }
}

static void check_masked(const test_problem *t, const af_oracle_result *r, int *n_empty) {
    const af_oracle_problem *p = &t->p;
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->Sq; i++) {
                af_mask_keys keys;
                if (af_mask_visible_keys(&p->mask, b, p->len_q[b], p->len_kv[b], i, &keys)) continue;
                size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
                if (i < p->len_q[b]) {
                    CHECK(isinf(r->out.lse[row]) && r->out.lse[row] < 0);
                    *n_empty += 1;
                } else {
                    CHECK(r->out.lse[row] == 0.0);
                }
                for (int d = 0; d < p->Dv; d++) CHECK(r->out.o[row * p->Dv + d] == 0.0);
                for (int d = 0; d < p->Dqk; d++) CHECK(r->out.dq[row * p->Dqk + d] == 0.0);
            }
    for (int b = 0; b < p->B; b++)
        for (int g = 0; g < p->Hkv; g++)
            for (int j = 0; j < p->Skv; j++) {
                int first, last;
                if (af_mask_rows_seeing_key(&p->mask, p->len_q[b], p->len_kv[b], j, &first, &last)) continue;
                size_t key = ((size_t)b * p->Hkv + g) * p->Skv + j;
                for (int d = 0; d < p->Dqk; d++) CHECK(r->out.dk[key * p->Dqk + d] == 0.0);
                for (int d = 0; d < p->Dv; d++) CHECK(r->out.dv[key * p->Dv + d] == 0.0);
            }
}

typedef struct {
    test_shape s;
    int len_q1, len_kv1;
    int min_empty; /* fully masked rows (b, h, i) the case must have */
} masked_case;

int main(void) {
    static const masked_case cases[] = {
        /* bottom-right, sq 6 > skv 3: rows 0..2 of each head see nothing */
        {{1, 2, 1, 6, 3, 4, 5, true, true, -1, -1, true, 0.0}, 0, 0, 6},
        /* top-left window (1,0), sq 6 > skv 3: rows 4, 5 see nothing */
        {{1, 2, 2, 6, 3, 4, 4, false, false, 1, 0, true, 0.0}, 0, 0, 4},
        /* sequence 1 has no keys: all its rows are fully masked; padding of q too */
        {{2, 2, 1, 5, 4, 3, 3, true, false, -1, -1, true, 0.0}, 3, 0, 6},
        /* padding + bottom-right causal: sequence 1 is 2 x 4 inside 5 x 6 */
        {{2, 4, 2, 5, 6, 4, 4, true, true, -1, -1, true, 0.0}, 2, 4, 0},
        /* bottom-right window (0,0) with sq > skv and padding */
        {{2, 2, 1, 7, 4, 3, 3, false, true, 0, 0, true, 0.0}, 6, 2, 10},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        test_problem t;
        test_problem_init(&t, &cases[c].s);
        test_problem_randomize(&t, 500 + c, 1.0);
        if (cases[c].len_q1 || cases[c].len_kv1) t.len_q[1] = cases[c].len_q1, t.len_kv[1] = cases[c].len_kv1;
        static const af_oracle_tier tiers[] = {AF_ORACLE_MPFR, AF_ORACLE_FP64, AF_ORACLE_AUTO};
        for (int k = 0; k < 3; k++) {
            af_oracle_result before, after;
            test_run(&t, tiers[k], 128, 2, &before);
            int n_empty = 0;
            check_masked(&t, &before, &n_empty);
            CHECK_MSG(n_empty >= cases[c].min_empty, "case %zu: %d empty rows", c, n_empty);
            perturb_invisible(&t, 900 + c * 7 + k);
            test_run(&t, tiers[k], 128, 2, &after);
            same_outputs(&t, &before, &after);
            af_oracle_result_free(&before);
            af_oracle_result_free(&after);
        }
        test_problem_free(&t);
    }
    CHECK_DONE("test_oracle_masked_rows");
}
