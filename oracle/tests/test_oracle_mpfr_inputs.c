/* test_oracle_mpfr_inputs.c — the MPFR tier's 53-bit input copies (af_mpfr_inputs_new)
 * change no bit:
 *  - every copy holds its input exactly (the sign of a zero and subnormals included);
 *  - af_mpfr_row and af_mpfr_key give the same bits (outputs, LSE, the row statistics at
 *    prec, the masses) with the copies as without them (each double converted where it
 *    is used), on 40 random small problems with GQA, masks and padding, and on problems
 *    holding signed zeros, subnormals, fp16's largest value, a soft cap and sinks;
 *  - a problem above AF_MPFR_INPUTS_MAX_ELEMS gets no copies (NULL), and AUTO on a small
 *    problem still equals the MPFR tier bit for bit (the run builds copies).
 */
#include <stdio.h>
#include "oracle/src/oracle_internal.h"
#include "oracle/tests/oracle_testlib.h"

/* Same bits, NaN payloads aside (none here). */
static bool same_bits(const double *a, const double *b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

static mpfr_t *stats(size_t n, int prec) {
    mpfr_t *a = malloc((n ? n : 1) * sizeof *a);
    CHECK(a);
    for (size_t k = 0; k < n; k++) mpfr_init2(a[k], prec);
    return a;
}

static void stats_free(mpfr_t *a, size_t n) {
    for (size_t k = 0; k < n; k++) mpfr_clear(a[k]);
    free(a);
}

/* Every row, then every key column, of t through the MPFR functions with or without the
 * input copies; outputs into out (allocated here), masses into mass_r (rows) / mass_k. */
typedef struct {
    double *o, *lse, *dq, *dk, *dv, *lse_stat, *drow_stat;
    af_oracle_mass *mass_r, *mass_k;
} pass_out;

static void run_passes(const test_problem *t, bool copies, pass_out *po) {
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t), keys = test_keys(t);
    const int prec = 128;
    po->o = calloc(rows * (size_t)p->Dv, sizeof(double));
    po->lse = calloc(rows, sizeof(double));
    po->dq = calloc(rows * (size_t)p->Dqk, sizeof(double));
    po->dk = calloc(keys * (size_t)p->Dqk, sizeof(double));
    po->dv = calloc(keys * (size_t)p->Dv, sizeof(double));
    po->lse_stat = calloc(rows, sizeof(double));
    po->drow_stat = calloc(rows, sizeof(double));
    po->mass_r = calloc(rows, sizeof *po->mass_r);
    po->mass_k = calloc(keys, sizeof *po->mass_k);
    CHECK(po->o && po->lse && po->dq && po->dk && po->dv && po->lse_stat && po->drow_stat && po->mass_r && po->mass_k);
    af_oracle_ctx c;
    memset(&c, 0, sizeof c);
    c.p = p;
    c.prec = prec;
    c.backward = true;
    c.lse_mp = stats(rows, prec);
    c.drow_mp = stats(rows, prec);
    af_mpfr_inputs *x = copies ? af_mpfr_inputs_new(p) : NULL;
    CHECK(!copies || x);
    c.x = x;
    af_mpfr_scratch *s = af_mpfr_scratch_new(p, prec, true);
    CHECK(s);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->Sq; i++) {
                size_t r = af_idx_row(p, b, h, i);
                af_mpfr_row(&c, s, b, h, i, po->o + r * (size_t)p->Dv, &po->lse[r], po->dq + r * (size_t)p->Dqk,
                            &po->mass_r[r]);
                po->lse_stat[r] = mpfr_get_d(c.lse_mp[r], MPFR_RNDN);
                po->drow_stat[r] = mpfr_get_d(c.drow_mp[r], MPFR_RNDN);
            }
    for (int b = 0; b < p->B; b++)
        for (int g = 0; g < p->Hkv; g++)
            for (int j = 0; j < p->Skv; j++) {
                size_t k = af_idx_key(p, b, g, j);
                af_mpfr_key(&c, s, b, g, j, po->dk + k * (size_t)p->Dqk, po->dv + k * (size_t)p->Dv, &po->mass_k[k]);
            }
    af_mpfr_scratch_free(s);
    af_mpfr_inputs_free(x);
    stats_free(c.lse_mp, rows);
    stats_free(c.drow_mp, rows);
}

static void pass_out_free(pass_out *po) {
    free(po->o), free(po->lse), free(po->dq), free(po->dk), free(po->dv);
    free(po->lse_stat), free(po->drow_stat), free(po->mass_r), free(po->mass_k);
}

static int compared;

static void same_with_and_without(const test_problem *t, const char *what) {
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t), keys = test_keys(t);
    pass_out a, b;
    run_passes(t, false, &a);
    run_passes(t, true, &b);
    CHECK_MSG(same_bits(a.o, b.o, rows * (size_t)p->Dv), "%s: O", what);
    CHECK_MSG(same_bits(a.lse, b.lse, rows), "%s: LSE", what);
    CHECK_MSG(same_bits(a.dq, b.dq, rows * (size_t)p->Dqk), "%s: dQ", what);
    CHECK_MSG(same_bits(a.dk, b.dk, keys * (size_t)p->Dqk), "%s: dK", what);
    CHECK_MSG(same_bits(a.dv, b.dv, keys * (size_t)p->Dv), "%s: dV", what);
    CHECK_MSG(same_bits(a.lse_stat, b.lse_stat, rows) && same_bits(a.drow_stat, b.drow_stat, rows),
              "%s: row statistics", what);
    CHECK_MSG(memcmp(a.mass_r, b.mass_r, rows * sizeof *a.mass_r) == 0 &&
                  memcmp(a.mass_k, b.mass_k, keys * sizeof *a.mass_k) == 0,
              "%s: masses", what);
    compared++;
    pass_out_free(&a);
    pass_out_free(&b);
}

/* The copies hold every input exactly, zeros' signs and subnormals included. */
static void copies_exact(void) {
    test_shape sh = {2, 4, 2, 5, 7, 3, 6, false, false, -1, -1, true, 0.0};
    test_problem t;
    test_problem_init(&t, &sh);
    test_problem_randomize(&t, 5, 1.0);
    const double special[] = {0.0, -0.0, 0x1p-1074, -0x1p-1060, 65504.0, -0x1.fffffffffffffp+1023, 0x1p-1022};
    for (size_t x = 0; x < sizeof special / sizeof special[0]; x++) {
        t.in.q[x * 3] = special[x];
        t.in.k[x * 2] = special[x];
        t.in.v[x * 5] = special[x];
        t.in.dout[x * 7] = special[x];
    }
    af_mpfr_inputs *x = af_mpfr_inputs_new(&t.p);
    CHECK(x);
    const double *src[4] = {t.in.q, t.in.k, t.in.v, t.in.dout};
    mpfr_t *cp[4] = {x->q, x->k, x->v, x->dout};
    size_t n[4] = {test_rows(&t) * 3, test_keys(&t) * 3, test_keys(&t) * 6, test_rows(&t) * 6};
    size_t checked = 0;
    for (int a = 0; a < 4; a++)
        for (size_t e = 0; e < n[a]; e++, checked++) {
            double back = mpfr_get_d(cp[a][e], MPFR_RNDN);
            CHECK_MSG(memcmp(&back, &src[a][e], sizeof back) == 0, "array %d element %zu: %a became %a", a, e,
                      src[a][e], back);
            CHECK(mpfr_get_prec(cp[a][e]) == 53);
        }
    printf("copies: %zu elements exact (signed zeros, subnormals, 65504, -DBL_MAX among them)\n", checked);
    af_mpfr_inputs_free(x);
    test_problem_free(&t);
}

static void random_problems(void) {
    for (int c = 0; c < 40; c++) {
        test_problem t;
        test_problem_random(&t, 4200 + (uint64_t)c);
        char what[48];
        snprintf(what, sizeof what, "random problem %d", c);
        same_with_and_without(&t, what);
        test_problem_free(&t);
    }
    printf("40 random problems: the same bits with and without the copies\n");
}

static void special_values_and_features(void) {
    test_shape sh = {1, 4, 2, 9, 11, 8, 5, true, true, -1, -1, true, 0.0};
    for (int f = 0; f < 3; f++) {
        test_problem t;
        test_problem_init(&t, &sh);
        test_problem_randomize(&t, 31 + (uint64_t)f, 2.0);
        const double special[] = {-0.0, 0x1p-1074, -0x1p-1050, 65504.0, 0x1p-24, -65504.0};
        for (size_t x = 0; x < sizeof special / sizeof special[0]; x++) {
            t.in.q[5 + x * 7] = special[x];
            t.in.k[3 + x * 5] = special[x];
            t.in.v[1 + x * 4] = special[x];
            t.in.dout[2 + x * 6] = special[x];
        }
        double sinks[4] = {0.5, -1.0, 2.0, -0.0};
        if (f == 1) t.in.feat.softcap = 3.0;
        if (f == 2) {
            t.in.feat.sink = 1;
            t.in.sink = sinks;
        }
        static const char *names[] = {"special values", "special values, soft cap", "special values, sinks"};
        same_with_and_without(&t, names[f]);
        t.in.sink = NULL;
        test_problem_free(&t);
    }
    printf("signed zeros, subnormals, +-65504, soft cap, sinks: the same bits\n");
}

static void too_large_and_auto(void) {
    /* q, k, v, dout of 1 x 1 x 1025 x 1024 elements each: 4 * 1049600 > 2^22 */
    af_oracle_problem p;
    memset(&p, 0, sizeof p);
    af_inputs in;
    memset(&in, 0, sizeof in);
    p.B = p.Hq = p.Hkv = 1;
    p.Sq = p.Skv = 1025;
    p.Dqk = p.Dv = 1024;
    in.dout = (double *)&in; /* only its presence is read */
    p.in = &in;
    CHECK(4L * 1025 * 1024 > AF_MPFR_INPUTS_MAX_ELEMS);
    CHECK(af_mpfr_inputs_new(&p) == NULL);

    test_problem t;
    test_problem_random(&t, 77);
    af_oracle_result m, a;
    test_run(&t, AF_ORACLE_MPFR, 128, 2, &m);
    test_run(&t, AF_ORACLE_AUTO, 128, 2, &a);
    CHECK(a.all_mpfr);
    size_t rows = test_rows(&t), keys = test_keys(&t);
    CHECK(same_bits(m.out.o, a.out.o, rows * (size_t)t.p.Dv) && same_bits(m.out.dk, a.out.dk, keys * (size_t)t.p.Dqk));
    af_oracle_result_free(&m);
    af_oracle_result_free(&a);
    test_problem_free(&t);
    printf("above %ld elements: no copies; AUTO within the budget equals the MPFR tier\n",
           (long)AF_MPFR_INPUTS_MAX_ELEMS);
}

int main(void) {
    copies_exact();
    random_problems();
    special_values_and_features();
    too_large_and_auto();
    printf("%d problems compared\n", compared);
    CHECK(compared == 43);
    CHECK_DONE("test_oracle_mpfr_inputs");
}
