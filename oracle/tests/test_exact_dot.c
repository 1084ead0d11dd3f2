/* test_exact_dot.c — the MPFR tier's integer fast path for dots (oracle/src/exact_dot.h)
 * gives the same bits as MPFR's own exact sum, and steps aside where it cannot.
 *
 * Reference: every product a_d x_d exact at 106 bits, their sum rounded once by mpfr_sum
 * (what dot_exact of oracle_mpfr.c did before the fast path). Fast path: one vector split
 * (af_exact_vec_set), then af_exact_dot's
 * integer, rounded once into the MPFR value (af_mpfr_set_i128). Both
 * rounded to 53, 64, 100, 128 and 200 bits must be equal, sign of zero included, for:
 *  - random vectors of fp16, bf16, fp32 and fp8 (e4m3, e5m2) values, n from 1 to 1024,
 *    with scales apart by up to 2^40, cancellations (x and -x), zeros and subnormal doubles;
 *  - the limits: every entry 26 bits at the largest n with the widest span (the integer's
 *    largest sum), and a span of exactly AF_EXACT_DOT_SPAN.
 * The fast path must decline (return 0) for: an entry of 27 significant bits (either vector), inf, NaN, n
 * above AF_EXACT_DOT_MAX_N, a span of AF_EXACT_DOT_SPAN + 1, all products zero, and an
 * exact sum of zero. At least 75 % of the random vectors must take the fast path (else
 * this test would check little; the wide bf16 exponents mostly decline: products 2^240 apart).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "oracle/src/oracle_internal.h"
#include "oracle/tests/oracle_testlib.h"
#include "util/check.h"

#define MAXN AF_EXACT_DOT_MAX_N

static const int precs[] = {53, 64, 100, 128, 200};
#define N_PREC ((int)(sizeof precs / sizeof precs[0]))

static mpfr_t terms[MAXN + 8];
static mpfr_ptr ptrs[MAXN + 8];

/* The reference: exact products at 106 bits (enough for two 53-bit inputs), mpfr_sum. */
static void reference(mpfr_t dst, const double *a, const double *x, int n) {
    for (int d = 0; d < n; d++) {
        mpfr_set_d(terms[d], a[d], MPFR_RNDN);
        mpfr_mul_d(terms[d], terms[d], x[d], MPFR_RNDN); /* exact: 106 bits */
        ptrs[d] = terms[d];
    }
    mpfr_sum(dst, ptrs, (unsigned long)n, MPFR_RNDN);
}

/* The fast path as oracle_mpfr.c takes it: a split once (af_exact_vec_set), then the dot. */
static int fast_dot(const double *a, const double *x, int n, af_i128 *sum, int *exp2) {
    static af_exact_vec v;
    af_exact_vec_set(&v, a, n);
    return af_exact_dot(&v, x, n, sum, exp2);
}

/* Compare the fast path with the reference at every precision; returns whether it applied. */
static int compare(const double *a, const double *x, int n, const char *what) {
    af_i128 sum;
    int e;
    int fast = fast_dot(a, x, n, &sum, &e);
    if (!fast) return 0;
    mpfr_t got, want;
    for (int k = 0; k < N_PREC; k++) {
        mpfr_init2(got, precs[k]);
        mpfr_init2(want, precs[k]);
        af_mpfr_set_i128(got, sum, e);
        reference(want, a, x, n);
        int same = mpfr_equal_p(got, want) && mpfr_signbit(got) == mpfr_signbit(want);
        if (!same) mpfr_printf("%s, n %d, %d bits: fast %.40Rg, mpfr_sum %.40Rg\n", what, n, precs[k], got, want);
        CHECK_MSG(same, "%s: n %d, %d bits differ", what, n, precs[k]);
        mpfr_clear(got);
        mpfr_clear(want);
    }
    return 1;
}

int main(void) {
    for (int k = 0; k < MAXN + 8; k++) mpfr_init2(terms[k], 106);
    static double a[MAXN + 8], x[MAXN + 8];
    uint64_t r = 20261207;
    /* formats: significant bits and the exponent range of the values drawn */
    const struct {
        const char *name;
        int bits, lo, hi;
    } fmt[] = {{"fp16", 11, -14, 15},
               {"bf16", 8, -12, 12},
               {"fp32", 24, -12, 12},
               {"e4m3", 4, -6, 8},
               {"e5m2", 3, -14, 15},
               {"fp16 subnormal", 10, -24, -15},
               {"bf16, wide exponents", 8, -60, 60}};
    const int nf = (int)(sizeof fmt / sizeof fmt[0]);
    const int ns[] = {1, 2, 3, 7, 16, 64, 128, 256, 512, 1024};
    int tried = 0, fast = 0;
    for (int it = 0; it < 490; it++) {
        int f = it % nf, n = ns[(it / nf) % 10];
        int shift = (int)(test_random(&r) % 41) - 20; /* the two vectors' scales apart */
        for (int d = 0; d < n; d++) {
            a[d] = test_format_value(&r, fmt[f].bits, fmt[f].lo, fmt[f].hi);
            x[d] = ldexp(test_format_value(&r, fmt[f].bits, fmt[f].lo, fmt[f].hi), shift);
        }
        if (it % 7 == 3 && n > 1) { /* cancellation: the second half mirrors the first */
            for (int d = n / 2; d < n; d++) a[d] = -a[d - n / 2], x[d] = x[d - n / 2];
            a[n - 1] = ldexp(1.0, -3); /* an odd n keeps one term apart; this one stays */
        }
        char what[64];
        snprintf(what, sizeof what, "%s #%d", fmt[f].name, it);
        tried++;
        fast += compare(a, x, n, what);
    }
    printf("random vectors: %d of %d on the fast path, each equal to mpfr_sum at %d precisions\n", fast, tried, N_PREC);
    CHECK_MSG(fast * 4 >= tried * 3, "only %d of %d random vectors took the fast path", fast, tried);

    /* subnormal doubles: the smallest ones multiply to 2^-2148 */
    a[0] = ldexp(1.0, -1074), x[0] = ldexp(3.0, -1074), a[1] = ldexp(5.0, -1060), x[1] = ldexp(1.0, -1070);
    CHECK(compare(a, x, 2, "subnormal doubles") == 1);

    /* the largest sum the integer holds: every entry 2^26 - 1, span AF_EXACT_DOT_SPAN */
    const double top = (double)((1 << 26) - 1);
    for (int d = 0; d < MAXN; d++) a[d] = top, x[d] = ldexp(top, d == 0 ? -AF_EXACT_DOT_SPAN : 0);
    CHECK(compare(a, x, MAXN, "largest sum") == 1);
    for (int d = 0; d < MAXN; d++) a[d] = -top, x[d] = ldexp(top, d == 5 ? -AF_EXACT_DOT_SPAN : 0);
    CHECK(compare(a, x, MAXN, "largest negative sum") == 1);

    af_i128 s;
    int e;
    /* declines */
    a[0] = 1.0, x[0] = 1.0, a[1] = ldexp(1.0, -AF_EXACT_DOT_SPAN - 1), x[1] = 1.0;
    CHECK_MSG(fast_dot(a, x, 2, &s, &e) == 0, "a span of AF_EXACT_DOT_SPAN + 1 took the fast path");
    a[1] = ldexp(1.0, -AF_EXACT_DOT_SPAN);
    CHECK(compare(a, x, 2, "span AF_EXACT_DOT_SPAN") == 1);
    a[0] = (double)((1 << 26) + 1), x[0] = 1.0; /* 27 significant bits */
    CHECK_MSG(fast_dot(a, x, 1, &s, &e) == 0, "27 bits took the fast path");
    CHECK_MSG(fast_dot(x, a, 1, &s, &e) == 0, "27 bits on the other side took the fast path");
    a[0] = (double)((1 << 26) - 1) * 4.0; /* 26 bits, shifted */
    CHECK(compare(a, x, 1, "26 bits") == 1);
    a[0] = INFINITY;
    CHECK(fast_dot(a, x, 1, &s, &e) == 0);
    a[0] = NAN;
    CHECK(fast_dot(a, x, 1, &s, &e) == 0);
    a[0] = 1.0, x[0] = -INFINITY;
    CHECK(fast_dot(a, x, 1, &s, &e) == 0);
    for (int d = 0; d < MAXN + 1; d++) a[d] = 1.0, x[d] = 1.0;
    CHECK_MSG(fast_dot(a, x, MAXN + 1, &s, &e) == 0, "n above AF_EXACT_DOT_MAX_N took the fast path");
    a[0] = 0.0, x[0] = 2.0, a[1] = -0.0, x[1] = 3.0;
    CHECK_MSG(fast_dot(a, x, 2, &s, &e) == 0, "all products zero took the fast path");
    a[0] = 1.5, x[0] = 2.0, a[1] = -3.0, x[1] = 1.0;
    CHECK_MSG(fast_dot(a, x, 2, &s, &e) == 0, "an exact zero sum took the fast path");
    /* and the reference's own view of that zero: +0 (MPFR's rule), which the caller keeps */
    mpfr_t z;
    mpfr_init2(z, 128);
    reference(z, a, x, 2);
    CHECK(mpfr_zero_p(z) && !mpfr_signbit(z));
    mpfr_clear(z);
    for (int k = 0; k < MAXN + 8; k++) mpfr_clear(terms[k]);
    mpfr_free_cache();
    CHECK_DONE("test_exact_dot");
}
