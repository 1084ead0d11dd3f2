/* exact_wsum.c — weighted sums in wide integers (exact_wsum.h). */
#include "oracle/src/exact_wsum.h"
#include "oracle/src/exact_dot.h"

#include <gmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(GMP_NUMB_BITS == 64, "exact_wsum: 64-bit GMP limbs expected");

struct af_exact_wsum {
    size_t max_terms;
    int max_d, zl_max;  /* zl_max: limbs of a max_prec-bit weight */
    mpz_t z;            /* one weight's integer (mpfr_get_z_2exp) */
    mp_limb_t *wsh;     /* (max_terms, zl_max + 1) |Z_t| shifted left by r_t bits */
    int *len;           /* (max_terms) limbs of wsh[t]; 0: the term is inactive (zero weight or row) */
    long *e;            /* (max_terms) E_t + F_t, then the limb offset o_t */
    long *f;            /* (max_terms) F_t: the row's smallest exponent */
    unsigned char *neg; /* (max_terms) the weight's sign */
    mp_limb_t *acc;     /* (2 max_d, AF_EXACT_WSUM_MAX_LIMBS) per d: the positive and the negative products */
    mp_limb_t diff[AF_EXACT_WSUM_MAX_LIMBS];
};

af_exact_wsum *af_exact_wsum_new(size_t max_terms, int max_d, int max_prec) {
    af_exact_wsum *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    ws->max_terms = max_terms ? max_terms : 1;
    ws->max_d = max_d > 0 ? max_d : 1;
    ws->zl_max = (max_prec + 63) / 64;
    mpz_init(ws->z);
    ws->wsh = malloc(ws->max_terms * (size_t)(ws->zl_max + 1) * sizeof *ws->wsh);
    ws->len = malloc(ws->max_terms * sizeof *ws->len);
    ws->e = malloc(ws->max_terms * sizeof *ws->e);
    ws->f = malloc(ws->max_terms * sizeof *ws->f);
    ws->neg = malloc(ws->max_terms);
    ws->acc = malloc(2 * (size_t)ws->max_d * AF_EXACT_WSUM_MAX_LIMBS * sizeof *ws->acc);
    if (!ws->wsh || !ws->len || !ws->e || !ws->f || !ws->neg || !ws->acc) {
        af_exact_wsum_free(ws);
        return NULL;
    }
    return ws;
}

void af_exact_wsum_free(af_exact_wsum *ws) {
    if (!ws) return;
    mpz_clear(ws->z);
    free(ws->wsh);
    free(ws->len);
    free(ws->e);
    free(ws->f);
    free(ws->neg);
    free(ws->acc);
    free(ws);
}

/* The row's smallest exponent F (of its odd integers) when its nonzero values span at most
 * 63 bits: 1 (row nonzero), 2 (every value zero); 0 when it declines. */
static int row_base(const double *x, int D, long *f) {
    long lo = 0, hi = 0;
    int any = 0;
    for (int d = 0; d < D; d++) {
        uint64_t m;
        long e;
        int sg;
        if (!af_exact_split(x[d], &m, &e, &sg)) return 0;
        if (!m) continue;
        long top = e + 64 - __builtin_clzll(m); /* one past the highest bit */
        if (!any || e < lo) lo = e;
        if (!any || top > hi) hi = top;
        any = 1;
    }
    if (!any) return 2;
    if (hi - lo > 63) return 0;
    *f = lo;
    return 1;
}

static int decline(unsigned char *done, int D) {
    memset(done, 0, (size_t)D);
    return 0;
}

int af_exact_wsum_run(af_exact_wsum *ws, mpfr_t *dst, const mpfr_t *w, const double *x, const size_t *base, size_t n,
                      int D, unsigned char *done) {
    if (n > ws->max_terms || D > ws->max_d || D <= 0) return decline(done, D > 0 ? D : 0);
    const int stride = ws->zl_max + 1;
    long lo = 0;
    int any = 0;
    /* 1. every weight's integer and exponent, every row's base exponent */
    for (size_t t = 0; t < n; t++) {
        ws->len[t] = 0;
        if (mpfr_nan_p(w[t]) || mpfr_inf_p(w[t])) return decline(done, D);
        long f = 0;
        int r = row_base(x + base[t], D, &f);
        if (r == 0) return decline(done, D);
        if (mpfr_zero_p(w[t]) || r == 2) continue; /* every product exactly zero */
        long ez = (long)mpfr_get_z_2exp(ws->z, w[t]);
        size_t zl = mpz_size(ws->z);
        if (zl == 0) continue;
        if (zl > (size_t)ws->zl_max) return decline(done, D);
        memcpy(ws->wsh + t * (size_t)stride, mpz_limbs_read(ws->z), zl * sizeof(mp_limb_t));
        ws->len[t] = (int)zl;
        ws->neg[t] = mpz_sgn(ws->z) < 0;
        ws->e[t] = ez + f;
        ws->f[t] = f;
        if (!any || ws->e[t] < lo) lo = ws->e[t];
        any = 1;
    }
    if (!any) return decline(done, D);
    /* 2. align: term t sits at limb o_t, its integer shifted left by r_t bits (one limb more) */
    long wl = 0;
    for (size_t t = 0; t < n; t++) {
        if (!ws->len[t]) continue;
        long s = ws->e[t] - lo, o = s / 64;
        int r = (int)(s % 64), zl = ws->len[t];
        mp_limb_t *p = ws->wsh + t * (size_t)stride;
        p[zl] = r ? mpn_lshift(p, p, zl, (unsigned)r) : 0;
        ws->len[t] = zl + 1;
        ws->e[t] = o;
        /* the product with M < 2^63 has len + 1 limbs; n of them add at most one limb more */
        if (o + zl + 3 > wl) wl = o + zl + 3;
        if (wl > AF_EXACT_WSUM_MAX_LIMBS) return decline(done, D);
    }
    /* 3. the products, added exactly */
    memset(ws->acc, 0, 2 * (size_t)D * (size_t)wl * sizeof *ws->acc);
    for (size_t t = 0; t < n; t++) {
        if (!ws->len[t]) continue;
        const double *row = x + base[t];
        const long f = ws->f[t];
        const mp_limb_t *p = ws->wsh + t * (size_t)stride;
        const long o = ws->e[t];
        const int len = ws->len[t];
        for (int d = 0; d < D; d++) {
            uint64_t m = 0;
            long e = 0;
            int sg = 0;
            (void)af_exact_split(row[d], &m, &e, &sg); /* finite: row_base accepted the row */
            if (!m) continue;
            mp_limb_t big = (mp_limb_t)(m << (e - f)); /* < 2^63 (row_base) */
            mp_limb_t *a = ws->acc + (2 * (size_t)d + (size_t)(sg ^ ws->neg[t])) * (size_t)wl + (size_t)o;
            mp_limb_t c = mpn_addmul_1(a, p, len, big);
            if (c) mpn_add_1(a + len, a + len, wl - o - len, c);
        }
    }
    /* 4. per d: positive minus negative, rounded once */
    int n_done = 0;
    for (int d = 0; d < D; d++) {
        const mp_limb_t *pos = ws->acc + 2 * (size_t)d * (size_t)wl, *negp = pos + wl;
        int cmp = mpn_cmp(pos, negp, wl);
        done[d] = cmp != 0;
        if (!cmp) continue;
        if (cmp > 0)
            mpn_sub_n(ws->diff, pos, negp, wl);
        else
            mpn_sub_n(ws->diff, negp, pos, wl);
        mp_size_t size = wl;
        while (size > 0 && ws->diff[size - 1] == 0) size--;
        mpz_t v;
        mpz_roinit_n(v, ws->diff, cmp > 0 ? size : -size);
        mpfr_set_z_2exp(dst[d], v, (mpfr_exp_t)lo, MPFR_RNDN);
        n_done++;
    }
    return n_done;
}
