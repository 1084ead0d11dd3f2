/* exact_dot.h — the exact dot product of two short double vectors whose entries have few
 * significant bits, in integer arithmetic: the MPFR tier's fast path for q . k and dO . v.
 *
 * Every input of an attention case (fp32, bf16, fp16, fp8 values, and their products by a
 * power-of-two scale) is an integer M of at most AF_EXACT_DOT_BITS bits times a power of
 * two. The product of two such numbers is an integer below 2^(2 AF_EXACT_DOT_BITS) times a
 * power of two, and when the products' exponents lie within AF_EXACT_DOT_SPAN of each
 * other, all n of them, aligned to the smallest exponent, add up in a signed 128-bit
 * integer without overflow: 2^(2 * 26 + 64) * 1024 < 2^127. The sum is then exact, so
 * rounding it once to the MPFR variable gives the same bits as mpfr_sum of the exact
 * products (a correctly rounded sum of an exact value is unique).
 *
 * One vector of a dot is split into its entries' integers and exponents once
 * (af_exact_vec_set: a query row is dotted with every key it sees, a key with every row),
 * the other as it is read. af_exact_dot returns 1 with sum * 2^exp2 = sum_d a[d] x[d]
 * exactly, or 0 where the fast path does not apply and the caller sums in MPFR: an entry
 * that is not finite or has more than AF_EXACT_DOT_BITS significant bits, n above
 * AF_EXACT_DOT_MAX_N, a span of exponents above AF_EXACT_DOT_SPAN, or an exact sum of 0
 * (whose sign MPFR decides by its own rules). No MPFR, no allocation: oracle_mpfr.c turns
 * the integer into the MPFR value.
 */
#ifndef ATTNFUZZ_ORACLE_EXACT_DOT_H
#define ATTNFUZZ_ORACLE_EXACT_DOT_H

#include <stdint.h>

#define AF_EXACT_DOT_BITS  26   /* significant bits of an entry on the fast path */
#define AF_EXACT_DOT_SPAN  64   /* largest difference of two products' exponents */
#define AF_EXACT_DOT_MAX_N 1024 /* entries (head dims up to 1024) */

__extension__ typedef __int128 af_i128;

/* |x| = mant 2^ex with mant odd (0 and ex 0 for a zero), neg its sign bit: 1, or 0 when x is
 * not finite. The integer paths' one reading of a double (here and exact_wsum.h). */
static inline int af_exact_split(double x, uint64_t *mant, long *ex, int *neg) {
    uint64_t bits;
    __builtin_memcpy(&bits, &x, sizeof bits);
    int field = (int)((bits >> 52) & 0x7ff);
    uint64_t m = bits & ((UINT64_C(1) << 52) - 1);
    if (field == 0x7ff) return 0; /* inf, nan */
    long e = field ? field - 1075 : -1074;
    if (field) m |= UINT64_C(1) << 52;
    *neg = (int)(bits >> 63);
    if (!m) {
        *mant = 0;
        *ex = 0;
        return 1;
    }
    int tz = __builtin_ctzll(m);
    *mant = m >> tz;
    *ex = e + tz;
    return 1;
}

/* One vector split: a[d] = m[d] 2^e[d], |m[d]| < 2^AF_EXACT_DOT_BITS (0 for a zero). */
typedef struct {
    int n;                         /* entries */
    int ok;                        /* 0: some entry is not on the fast path (every dot declines) */
    int64_t m[AF_EXACT_DOT_MAX_N]; /* (n) */
    int e[AF_EXACT_DOT_MAX_N];     /* (n) */
} af_exact_vec;

void af_exact_vec_set(af_exact_vec *v, const double *a, int n);
int af_exact_dot(const af_exact_vec *a, const double *x, int n, af_i128 *sum, int *exp2);

#endif
