/* exact_dot.c — the exact dot product in a 128-bit integer (exact_dot.h). */
#include "oracle/src/exact_dot.h"

/* x = (-1)^neg * m * 2^e with m odd (or 0) and at most AF_EXACT_DOT_BITS bits: 1, else 0
 * (not finite, or more bits). */
static int split(double x, int64_t *m, int *e) {
    uint64_t mant;
    long ex;
    int neg;
    if (!af_exact_split(x, &mant, &ex, &neg) || (mant >> AF_EXACT_DOT_BITS)) return 0;
    *m = neg ? -(int64_t)mant : (int64_t)mant;
    *e = (int)ex;
    return 1;
}

void af_exact_vec_set(af_exact_vec *v, const double *a, int n) {
    v->n = n;
    v->ok = n >= 0 && n <= AF_EXACT_DOT_MAX_N;
    for (int d = 0; v->ok && d < n; d++) v->ok = split(a[d], &v->m[d], &v->e[d]);
}

int af_exact_dot(const af_exact_vec *a, const double *x, int n, af_i128 *sum, int *exp2) {
    if (!a->ok || n != a->n) return 0;
    int64_t prod[AF_EXACT_DOT_MAX_N]; /* (n) the products' integers, below 2^52 */
    int pe[AF_EXACT_DOT_MAX_N];       /* (n) their exponents */
    int lo = 0, hi = 0, any = 0;
    for (int d = 0; d < n; d++) {
        int64_t mx;
        int ex;
        if (!split(x[d], &mx, &ex)) return 0;
        prod[d] = a->m[d] * mx; /* |.| < 2^52 */
        pe[d] = a->e[d] + ex;
        if (!prod[d]) continue;
        if (!any || pe[d] < lo) lo = pe[d];
        if (!any || pe[d] > hi) hi = pe[d];
        any = 1;
    }
    if (!any || hi - lo > AF_EXACT_DOT_SPAN) return 0;
    af_i128 s = 0;
    for (int d = 0; d < n; d++)
        if (prod[d]) s += (af_i128)prod[d] * ((af_i128)1 << (pe[d] - lo)); /* < 2^116 each */
    if (!s) return 0;
    *sum = s;
    *exp2 = lo;
    return 1;
}
