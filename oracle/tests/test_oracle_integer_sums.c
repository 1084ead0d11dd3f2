/* test_oracle_integer_sums.c — the MPFR tier's integer paths (src/exact_dot.h for the dots
 * of two inputs, src/exact_wsum.h for the sums of prec-bit weights times inputs) change no
 * bit of the oracle's output.
 *
 * Every problem runs twice through af_oracle_run: with the integer paths (the default) and
 * with af_oracle_opts.mpfr_sums_only (every sum by mpfr_sum, as the tier was before them).
 * The MPFR tier's O, LSE, dQ, dK and dV must be equal bit for bit (memcmp), and in the
 * sampled mode (AUTO with a tiny MPFR budget: the rows and key columns the certification
 * recomputes) the figures from those rows too: all_mpfr, mpfr_rows, fp64_vs_mpfr_rel. The
 * problems: 120 small random ones (oracle_testlib.h: GQA, causal, windows, ragged lengths,
 * fp16 inputs; at 128 bits, every fourth at 64), each again with
 *  - fp32 queries of exponents -30 to 0, at 64 bits (the q . k dots' integers of about 75 bits
 *    are rounded, not only converted),
 *  - one value row of fp32 inputs spanning 2^+-40 (wider than a limb: the weighted sums of
 *    the rows that see that key take mpfr_sum, the others the integers), and
 *  - key 1 a copy of key 0 with the negated value (rows that see keys 0 and 1 alone get O
 *    exactly 0: those d are left to mpfr_sum while the other d of the call are not);
 * and two larger ones (s 96 x 80, d 64 / 128, causal and not) at 128 and 200 bits.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <mpfr.h>

#include "oracle/tests/oracle_testlib.h"

static int compared;

static void same_outputs(const test_problem *t, const af_oracle_result *a, const af_oracle_result *b,
                         const char *what) {
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t), keys = test_keys(t);
    const struct {
        const double *x, *y;
        size_t n;
        const char *name;
    } ts[] = {{a->out.o, b->out.o, rows * (size_t)p->Dv, "O"},
              {a->out.lse, b->out.lse, rows, "LSE"},
              {a->out.dq, b->out.dq, rows * (size_t)p->Dqk, "dQ"},
              {a->out.dk, b->out.dk, keys * (size_t)p->Dqk, "dK"},
              {a->out.dv, b->out.dv, keys * (size_t)p->Dv, "dV"}};
    for (int k = 0; k < 5; k++) {
        if (!ts[k].x || !ts[k].y) continue;
        int same = memcmp(ts[k].x, ts[k].y, ts[k].n * sizeof(double)) == 0;
        for (size_t e = 0; !same && e < ts[k].n; e++)
            if (memcmp(&ts[k].x[e], &ts[k].y[e], sizeof(double)) != 0) {
                printf("%s: %s[%zu] integer paths %.17g, mpfr_sum %.17g\n", what, ts[k].name, e, ts[k].x[e],
                       ts[k].y[e]);
                break;
            }
        CHECK_MSG(same, "%s: %s differs", what, ts[k].name);
        compared++;
    }
}

/* MPFR tier and sampled AUTO, each with and without the integer paths. */
static void check(const test_problem *t, int bits, const char *what) {
    char why[512] = "", label[160];
    af_oracle_result r[2];
    for (int mode = 0; mode < 2; mode++) {
        af_oracle_opts o;
        af_oracle_opts_default(&o);
        o.tier = AF_ORACLE_MPFR;
        o.precision_bits = bits;
        o.mpfr_sums_only = mode == 1;
        CHECK_MSG(af_oracle_run(&t->p, &o, &r[mode], why, sizeof why) == 0, "%s: %s", what, why);
    }
    snprintf(label, sizeof label, "%s, MPFR tier, %d bits", what, bits);
    same_outputs(t, &r[0], &r[1], label);
    af_oracle_result_free(&r[0]);
    af_oracle_result_free(&r[1]);
    for (int mode = 0; mode < 2; mode++) {
        af_oracle_opts o;
        af_oracle_opts_default(&o);
        o.mpfr_budget = 1.0; /* sampled: the certification's rows and key columns */
        o.precision_bits = bits;
        o.mpfr_sums_only = mode == 1;
        CHECK_MSG(af_oracle_run(&t->p, &o, &r[mode], why, sizeof why) == 0, "%s: %s", what, why);
    }
    CHECK_MSG(r[0].all_mpfr == r[1].all_mpfr && r[0].mpfr_rows == r[1].mpfr_rows, "%s: sampled rows differ", what);
    CHECK_MSG(memcmp(&r[0].fp64_vs_mpfr_rel, &r[1].fp64_vs_mpfr_rel, sizeof(double)) == 0,
              "%s: sampled gap %.17g with the integer paths, %.17g without", what, r[0].fp64_vs_mpfr_rel,
              r[1].fp64_vs_mpfr_rel);
    af_oracle_result_free(&r[0]);
    af_oracle_result_free(&r[1]);
}

int main(void) {
    char what[96];
    for (int c = 0; c < 120; c++) {
        test_problem t;
        test_problem_random(&t, 7000 + (uint64_t)c);
        const int bits = c % 4 == 3 ? 64 : 128; /* below 127 bits a dot's integer is rounded too */
        snprintf(what, sizeof what, "random problem %d", c);
        check(&t, bits, what);
        /* fp32 queries of exponents -30..0: the q . k dots need about 75 bits, rounded at 64
         * (larger queries, whose weights underflow in the fp64 tier, are
         * test_oracle_underflow's) */
        uint64_t sq = 5 + (uint64_t)c;
        for (size_t x = 0; x < test_rows(&t) * (size_t)t.p.Dqk; x++) t.in.q[x] = test_format_value(&sq, 24, -30, 0);
        snprintf(what, sizeof what, "random problem %d, fp32 queries", c);
        check(&t, 64, what);
        /* a value row of fp32 values 2^+-40 apart: wider than the integers' limb */
        const af_oracle_problem *p = &t.p;
        uint64_t st = 99 + (uint64_t)c;
        for (int d = 0; d < p->Dv; d++)
            t.in.v[d] = ldexp(1.0 + (double)(test_random(&st) % 8388608) / 8388608.0, d % 2 ? 40 : -40);
        snprintf(what, sizeof what, "random problem %d, a wide value row", c);
        check(&t, bits, what);
        /* key 1 = key 0, value 1 = -value 0 (same batch and kv head) */
        if (p->Skv >= 2) {
            for (int d = 0; d < p->Dqk; d++) t.in.k[(size_t)1 * p->Dqk + (size_t)d] = t.in.k[d];
            for (int d = 0; d < p->Dv; d++) t.in.v[(size_t)1 * p->Dv + (size_t)d] = -t.in.v[d];
            snprintf(what, sizeof what, "random problem %d, keys 0 and 1 cancel", c);
            check(&t, bits, what);
        }
        test_problem_free(&t);
    }
    const struct {
        int dqk, dv, bits;
        bool causal;
    } big[] = {{64, 64, 200, true}, {128, 128, 128, false}};
    for (int k = 0; k < 2; k++) {
        test_shape s;
        memset(&s, 0, sizeof s);
        s.B = 1, s.Hkv = 1, s.Hq = 2, s.Sq = 96, s.Skv = 80, s.Dqk = big[k].dqk, s.Dv = big[k].dv;
        s.causal = big[k].causal, s.bottom_right = true, s.left = s.right = -1, s.backward = true;
        test_problem t;
        test_problem_init(&t, &s);
        test_problem_randomize(&t, 31 + (uint64_t)k, 4.0);
        snprintf(what, sizeof what, "s 96 x 80, d %d / %d", big[k].dqk, big[k].dv);
        check(&t, big[k].bits, what);
        test_problem_free(&t);
    }
    printf("%d output tensors equal bit for bit with and without the integer paths\n", compared);
    mpfr_free_cache();
    CHECK_DONE("test_oracle_integer_sums");
}
