/* test_oracle_bias_alibi.c — the query-broadcast bias shapes (111s ...) and the ALiBi
 * conventions of oracle/feature_spec.h against an explicit full bias tensor whose values
 * this test computes by hand (no af_feat_additive), on both CPU tiers:
 *  - a bias of one row per batch broadcast over every query equals the full (B, Hq, Sq,
 *    Skv) bias that repeats the row (bit for bit);
 *  - signed ALiBi with per-(batch, head) slopes equals the bias slope[b, h] * (j - (i +
 *    len_kv - len_q)) with no mask (keys right of the diagonal gain), bit for bit, and
 *    differs from the |distance| form on the same slopes;
 *  - abs ALiBi with per-(batch, head) slopes equals -slope[b, h] * |distance|.
 */
#include "oracle/feature_spec.h"
#include "oracle/tests/oracle_testlib.h"

static bool outputs_identical(const test_problem *t, const af_oracle_result *a, const af_oracle_result *b) {
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t);
    return !memcmp(a->out.o, b->out.o, rows * p->Dv * sizeof(double)) &&
           !memcmp(a->out.lse, b->out.lse, rows * sizeof(double));
}

enum { B = 2, HQ = 3, SQ = 4, SKV = 6 };
static const test_shape shape = {B, HQ, 1, SQ, SKV, 4, 4, false, false, -1, -1, false, 0.0};

/* b gets a full bias (B, Hq, Sq, Skv) of zeros. */
static void full_bias(test_problem *t) {
    t->in.feat.bias_b = B, t->in.feat.bias_h = HQ, t->in.feat.bias_q = SQ;
    t->in.bias = calloc((size_t)B * HQ * SQ * SKV, sizeof(double));
    CHECK(t->in.bias);
}

static double *full_at(test_problem *t, int b, int h, int i, int j) {
    return &t->in.bias[(((size_t)b * HQ + (size_t)h) * SQ + (size_t)i) * SKV + (size_t)j];
}

static void pair_init(test_problem *a, test_problem *f, uint64_t seed) {
    test_problem_init(a, &shape);
    test_problem_init(f, &shape);
    test_problem_randomize(a, seed, 1.0);
    test_problem_randomize(f, seed, 1.0);
    a->len_q[1] = 3, a->len_kv[1] = 5, f->len_q[1] = 3, f->len_kv[1] = 5; /* the diagonal moves */
    full_bias(f);
}

static void pair_free(test_problem *a, test_problem *f) {
    free(a->in.bias);
    free(a->in.alibi_slope);
    free(f->in.bias);
    a->in.bias = a->in.alibi_slope = f->in.bias = NULL;
    test_problem_free(a);
    test_problem_free(f);
}

static void check_tiers(test_problem *a, test_problem *f, const char *what) {
    for (int tier = AF_ORACLE_MPFR; tier <= AF_ORACLE_FP64; tier++) {
        af_oracle_result ra, rf;
        test_run(a, (af_oracle_tier)tier, 128, 2, &ra);
        test_run(f, (af_oracle_tier)tier, 128, 2, &rf);
        CHECK_MSG(outputs_identical(a, &ra, &rf), "%s (tier %d): differs from its explicit full bias", what, tier);
        af_oracle_result_free(&ra);
        af_oracle_result_free(&rf);
    }
}

static void test_bias_row_broadcast(void) {
    test_problem a, f;
    pair_init(&a, &f, 21);
    uint64_t st = 5;
    a.in.feat.bias_b = B, a.in.feat.bias_h = 1, a.in.feat.bias_q = 1; /* b11s */
    a.in.bias = calloc((size_t)B * SKV, sizeof(double));
    CHECK(a.in.bias);
    for (int x = 0; x < B * SKV; x++) a.in.bias[x] = test_fp16(&st, 2.0);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < SQ; i++)
                for (int j = 0; j < SKV; j++) *full_at(&f, b, h, i, j) = a.in.bias[b * SKV + j];
    check_tiers(&a, &f, "bias b11s");
    pair_free(&a, &f);
}

static void test_alibi(bool is_signed) {
    test_problem a, f;
    pair_init(&a, &f, is_signed ? 22 : 23);
    a.in.feat.alibi = true, a.in.feat.alibi_signed = is_signed, a.in.feat.alibi_b = B;
    a.in.alibi_slope = calloc((size_t)B * HQ, sizeof(double));
    CHECK(a.in.alibi_slope);
    for (int x = 0; x < B * HQ; x++) a.in.alibi_slope[x] = (double)(x + 1) * 0x1p-4; /* per (b, h) */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < SQ; i++)
                for (int j = 0; j < SKV; j++) {
                    int d = j - (i + f.len_kv[b] - f.len_q[b]);
                    double m = (double)(b * HQ + h + 1) * 0x1p-4;
                    *full_at(&f, b, h, i, j) = is_signed ? m * d : -m * (d < 0 ? -d : d);
                }
    /* by hand: b 1, h 2 (slope 6/16), i 0, j 4: diagonal 0 + 5 - 3 = 2, distance +2 */
    double want = is_signed ? 0.75 : -0.75;
    CHECK_MSG(af_feat_additive(&a.p, 1, 2, 0, 4) == want, "ALiBi(1, 2, 0, 4) = %g, want %g",
              af_feat_additive(&a.p, 1, 2, 0, 4), want);
    check_tiers(&a, &f, is_signed ? "signed ALiBi" : "abs ALiBi");
    if (is_signed) { /* the same slopes with |distance| give other outputs */
        af_oracle_result rs, ra;
        test_run(&a, AF_ORACLE_MPFR, 128, 2, &rs);
        a.in.feat.alibi_signed = false;
        test_run(&a, AF_ORACLE_MPFR, 128, 2, &ra);
        CHECK_MSG(!outputs_identical(&a, &rs, &ra), "signed and |distance| ALiBi agree: the sign is not seen");
        af_oracle_result_free(&rs);
        af_oracle_result_free(&ra);
    }
    pair_free(&a, &f);
}

int main(void) {
    test_bias_row_broadcast();
    test_alibi(true);
    test_alibi(false);
    printf("test_oracle_bias_alibi: ok\n");
    return 0;
}
