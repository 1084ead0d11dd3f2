/* test_exact_wsum.c — the MPFR tier's weighted sums in integers (oracle/src/exact_wsum.h)
 * give the same bits as MPFR's own exact products and mpfr_sum, and step aside where they
 * cannot.
 *
 * Reference (what oracle_mpfr.c computed before): for every d, each product w[t] x[base[t] + d]
 * exact at prec + 53 bits, their sum rounded once to prec by mpfr_sum. Fast path:
 * af_exact_wsum_run into variables of prec bits. Where it says done[d], the two must be equal,
 * sign included, for:
 *  - random problems at 53, 64, 100, 128 and 200 bits: weights like a softmax's (exp(-u),
 *    u up to 300: 2^-433 apart), signed weights like dS (exponents spread over 2^+-300),
 *    some zero; inputs of fp16, bf16, fp32 (narrow), e4m3, e5m2, subnormal fp16 and
 *    subnormal doubles; n from 1 to 1024 terms, D from 1 to 200, rows shared by several terms
 *    (the rows of a GQA group see one key), cancellations (a term and its negation);
 *  - the carries: 1024 weights of all-ones mantissas times rows of 63-bit span.
 * It must decline (every done[d] = 0) for: a weight inf or NaN, an input inf or NaN, a row
 * spanning 64 bits (63 taken), weights 2^5000 apart, no nonzero product, n above the
 * scratch's terms; and leave a d whose exact sum is zero (done[d] = 0) while doing the
 * others. At least 90 % of the random problems' d must take the fast path.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle/src/exact_wsum.h"
#include "oracle/tests/oracle_testlib.h"
#include "util/check.h"

#define MAXT    1024
#define MAXD    200
#define MAXROWS 1100

static const int precs[] = {53, 64, 100, 128, 200};
#define N_PREC ((int)(sizeof precs / sizeof precs[0]))

static double x[MAXROWS * MAXD]; /* (rows, D) the inputs */
static size_t base[MAXT];        /* (n) each term's row start */
static mpfr_t w[MAXT];           /* (n) weights at prec */
static mpfr_t got[MAXD], want[MAXD];
static mpfr_t terms[MAXT];
static mpfr_ptr ptrs[MAXT];
static unsigned char done[MAXD];

/* The reference: exact products at prec + 53 bits, one mpfr_sum per d, rounded to prec. */
static void reference(int prec, size_t n, int D) {
    for (size_t t = 0; t < n; t++) mpfr_set_prec(terms[t], prec + 53);
    for (int d = 0; d < D; d++) {
        mpfr_set_prec(want[d], prec);
        for (size_t t = 0; t < n; t++) {
            mpfr_mul_d(terms[t], w[t], x[base[t] + (size_t)d], MPFR_RNDN); /* exact */
            ptrs[t] = terms[t];
        }
        mpfr_sum(want[d], ptrs, (unsigned long)n, MPFR_RNDN);
    }
}

/* Runs the fast path at prec and compares every done d with the reference; returns the
 * number done (checked). */
static int compare(af_exact_wsum *ws, int prec, size_t n, int D, const char *what) {
    for (int d = 0; d < D; d++) mpfr_set_prec(got[d], prec);
    int k = af_exact_wsum_run(ws, got, w, x, base, n, D, done);
    reference(prec, n, D);
    int counted = 0;
    for (int d = 0; d < D; d++) {
        if (!done[d]) continue;
        counted++;
        int same = mpfr_equal_p(got[d], want[d]) && mpfr_signbit(got[d]) == mpfr_signbit(want[d]);
        if (!same) mpfr_printf("%s, d %d, %d bits: fast %.70Rg, mpfr_sum %.70Rg\n", what, d, prec, got[d], want[d]);
        CHECK_MSG(same, "%s: d %d at %d bits differs", what, d, prec);
    }
    CHECK_MSG(counted == k, "%s: %d done flags, %d reported", what, counted, k);
    return k;
}

/* A random weight at prec bits: softmax-like exp(-u) (kind 0) or signed with a spread
 * exponent (kind 1); zero with probability 1/32. */
static void weight(mpfr_t dst, uint64_t *r, int prec, int kind) {
    mpfr_set_prec(dst, prec);
    if (test_random(r) % 32 == 0) {
        mpfr_set_zero(dst, test_random(r) & 1 ? -1 : 1);
        return;
    }
    double u = (double)(test_random(r) % 1000000) * 3e-4; /* [0, 300) */
    mpfr_set_d(dst, -u, MPFR_RNDN);
    mpfr_exp(dst, dst, MPFR_RNDN);
    if (kind == 1) {
        mpfr_mul_2si(dst, dst, (long)(test_random(r) % 601) - 300 + (long)u, MPFR_RNDN);
        if (test_random(r) & 1) mpfr_neg(dst, dst, MPFR_RNDN);
    }
}

int main(void) {
    for (int t = 0; t < MAXT; t++) mpfr_inits2(64, w[t], terms[t], (mpfr_ptr)0);
    for (int d = 0; d < MAXD; d++) mpfr_inits2(64, got[d], want[d], (mpfr_ptr)0);
    af_exact_wsum *ws = af_exact_wsum_new(MAXT, MAXD, 200);
    CHECK(ws != NULL);
    uint64_t r = 20261207;
    const struct {
        const char *name;
        int bits, lo, hi;
    } fmt[] = {{"fp16", 11, -14, 15},
               {"bf16", 8, -20, 20},
               {"fp32", 24, -12, 12},
               {"e4m3", 4, -6, 8},
               {"e5m2", 3, -14, 15},
               {"fp16 subnormal", 10, -24, -15},
               {"double subnormal", 20, -1074, -1040}};
    const int nf = (int)(sizeof fmt / sizeof fmt[0]);
    const int ns[] = {1, 2, 3, 7, 16, 64, 256, 1024};
    const int ds[] = {1, 8, 64, 128, 200};
    long tried = 0, fast = 0;
    for (int it = 0; it < 280; it++) {
        int f = it % nf, prec = precs[(it / nf) % N_PREC];
        size_t n = (size_t)ns[(it / 3) % 8];
        int D = ds[(it / 5) % 5], kind = it % 2;
        if (n * (size_t)D > 64 * 1024) D = 64; /* keep the reference's time down */
        size_t rows = n < MAXROWS ? n : MAXROWS;
        for (size_t i = 0; i < rows * (size_t)D; i++) x[i] = test_format_value(&r, fmt[f].bits, fmt[f].lo, fmt[f].hi);
        for (size_t t = 0; t < n; t++) {
            base[t] = (size_t)(it % 3 == 0 ? test_random(&r) % rows : t) * (size_t)D; /* shared rows on every third */
            weight(w[t], &r, prec, kind);
        }
        if (it % 5 == 2 && n > 1) /* cancellation: the second half negates the first (same rows) */
            for (size_t t = n / 2; t < n; t++) {
                base[t] = base[t - n / 2];
                mpfr_neg(w[t], w[t - n / 2], MPFR_RNDN);
            }
        char what[80];
        snprintf(what, sizeof what, "%s, n %zu, D %d, kind %d, #%d", fmt[f].name, n, D, kind, it);
        int k = compare(ws, prec, n, D, what);
        int zeros = 0; /* the d the fast path must leave: an exact zero sum */
        for (int d = 0; d < D; d++) zeros += mpfr_zero_p(want[d]) != 0;
        tried += D - zeros;
        fast += k;
    }
    printf("random problems: %ld of %ld nonzero sums on the fast path, each equal to mpfr_sum\n", fast, tried);
    CHECK_MSG(fast * 10 >= tried * 9, "only %ld of %ld sums took the fast path", fast, tried);

    /* the carries: weights of all-ones mantissas, rows spanning exactly 63 bits */
    const int D = 8;
    for (int t = 0; t < MAXT; t++) {
        mpfr_set_prec(w[t], 200);
        mpfr_set_ui_2exp(w[t], 1, 200, MPFR_RNDN);
        mpfr_sub_ui(w[t], w[t], 1, MPFR_RNDN); /* 2^200 - 1: 200 ones */
        base[t] = 0;
    }
    for (int d = 0; d < D; d++) x[d] = ldexp(9007199254740991.0, 10); /* (2^53 - 1) 2^10: bits 10 .. 62 */
    x[D - 1] = 1.0;                                                   /* bit 0: the row spans 63 bits */
    CHECK_MSG(compare(ws, 200, MAXT, D, "carries") == D, "the 63-bit row with 1024 carries declined");

    /* zero sums: left to the caller, the other d done */
    mpfr_set_prec(w[0], 128), mpfr_set_prec(w[1], 128);
    mpfr_set_d(w[0], 0.75, MPFR_RNDN), mpfr_set_d(w[1], -0.75, MPFR_RNDN);
    x[0] = 1.0, x[1] = 2.0, x[2] = 1.0, x[3] = 3.0; /* rows (1, 2) and (1, 3) */
    base[0] = 0, base[1] = 2;
    CHECK(compare(ws, 128, 2, 2, "a zero sum") == 1);
    CHECK_MSG(!done[0] && done[1], "the exact zero at d 0 was not left to the caller");

    /* declines */
    mpfr_set_d(w[0], 1.0, MPFR_RNDN), mpfr_set_d(w[1], 1.0, MPFR_RNDN);
    x[0] = 1.0, x[1] = ldexp(1.0, -63); /* bits 0 and -63: 64 bits */
    base[0] = base[1] = 0;
    CHECK_MSG(af_exact_wsum_run(ws, got, w, x, base, 1, 2, done) == 0 && !done[0] && !done[1],
              "a row spanning 64 bits took the fast path");
    x[1] = ldexp(1.0, -62);
    CHECK_MSG(compare(ws, 128, 1, 2, "63 bits") == 2, "a row spanning 63 bits declined");
    x[1] = INFINITY;
    CHECK(af_exact_wsum_run(ws, got, w, x, base, 1, 2, done) == 0 && !done[0]);
    x[1] = NAN;
    CHECK(af_exact_wsum_run(ws, got, w, x, base, 1, 2, done) == 0 && !done[0]);
    x[1] = 0.5;
    mpfr_set_inf(w[1], 1);
    CHECK(af_exact_wsum_run(ws, got, w, x, base, 2, 2, done) == 0 && !done[0]);
    mpfr_set_nan(w[1]);
    CHECK(af_exact_wsum_run(ws, got, w, x, base, 2, 2, done) == 0 && !done[0]);
    mpfr_set_ui_2exp(w[1], 1, -5000, MPFR_RNDN); /* 2^5000 below w[0]: more limbs than the bound */
    CHECK_MSG(af_exact_wsum_run(ws, got, w, x, base, 2, 2, done) == 0 && !done[0],
              "weights 2^5000 apart took the fast path");
    mpfr_set_ui_2exp(w[1], 1, -3000, MPFR_RNDN); /* 3000 bits: within the bound */
    CHECK_MSG(compare(ws, 128, 2, 2, "weights 2^3000 apart") == 2, "weights 2^3000 apart declined");
    mpfr_set_zero(w[0], 1), mpfr_set_zero(w[1], -1);
    CHECK_MSG(af_exact_wsum_run(ws, got, w, x, base, 2, 2, done) == 0 && !done[0], "zero weights took the fast path");
    CHECK_MSG(af_exact_wsum_run(ws, got, w, x, base, MAXT + 1, 2, done) == 0, "n above the scratch took the fast path");

    af_exact_wsum_free(ws);
    for (int t = 0; t < MAXT; t++) mpfr_clears(w[t], terms[t], (mpfr_ptr)0);
    for (int d = 0; d < MAXD; d++) mpfr_clears(got[d], want[d], (mpfr_ptr)0);
    mpfr_free_cache();
    CHECK_DONE("test_exact_wsum");
}
