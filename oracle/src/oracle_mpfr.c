/* oracle_mpfr.c — one query row and one key column of attention at MPFR precision.
 *
 * Precision discipline (the error bound in oracle/README.md rests on it):
 *  - inputs are doubles, converted exactly into 53-bit variables;
 *  - every product of an input with an input or with a prec-bit value is computed
 *    into a (prec + 53)-bit term, which is exact;
 *  - every sum is one mpfr_sum (correctly rounded to prec bits, whatever the
 *    cancellation or order), or, for the dots of two inputs (exact_dot.h) and the sums
 *    of prec-bit weights times inputs (exact_wsum.h), the same exact sum formed in
 *    integers and rounded once: the same bits;
 *  - every other operation (scale multiply, sub, exp, log, div) rounds once to prec
 *    bits, round-to-nearest;
 *  - each output is rounded to double once, at the end (mpfr_get_d, RNDN).
 * Row:    s_j = scale * (q . k_j);  m = max s_j;  e_j = exp(s_j - m);  Z = sum e_j;
 *         O = (sum e_j v_j) / Z;  LSE = m + ln Z;  D = dO . O (O unrounded);
 *         dS_j = e_j (dO . v_j - D) / Z;  dQ = scale * sum dS_j k_j.
 * Features (oracle/feature_spec.h): s_j = c tanh(r_j / c) + bias + ALiBi with r_j the
 *         scaled dot (tanh, the products and the add each rounded once to prec), or
 *         f(r_j) of the score_mod (mpfr_sqr, mpfr_sin, mpfr_cos, mpfr_tan, each rounded
 *         once to prec); the sink logit is one more term of Z with no value; D includes
 *         -g'; dS_j carries the derivative 1 - tanh^2 or f'(r_j) (rounded to prec). Dropout: the kept terms' weight
 *         1 / (1 - p) is one value at prec (1 - p and the division each rounded once);
 *         e_j w_j, w_j dP_j and P_ij w_ij each round once to prec; dropped terms are 0.
 * Column: over the rows i (of every q head of kv head g) that see key j,
 *         P_ij = exp(s_ij - LSE_i);  dS_ij = P_ij (dO_i . v_j - D_i);
 *         dV_j = sum P_ij dO_i;  dK_j = scale * sum dS_ij q_i.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/feature_spec.h"
#include "oracle/src/exact_dot.h"
#include "oracle/src/exact_wsum.h"
#include "oracle/src/oracle_internal.h"

struct af_mpfr_scratch {
    int prec;          /* bits of every rounded intermediate */
    bool integer_sums; /* the integer paths (exact_dot.h, exact_wsum.h) where they apply */
    int term_prec;     /* prec + 53: products land here exactly */
    size_t n_terms;    /* capacity of terms / ptrs: max(Dqk, Dv, Skv + 1, group * Sq) */
    mpfr_t *terms;     /* (n_terms) exact products, summed by mpfr_sum */
    mpfr_ptr *ptrs;    /* (n_terms) pointers handed to mpfr_sum */
    mpfr_t *e;         /* (Skv + 1) scores, then exp(s_j - m); [n] the sink's term */
    mpfr_t *th;        /* (Skv) dt/dr of each score: 1 - tanh^2, f'(r) or 1 (feature_spec.h) */
    mpfr_t *ds;        /* (Skv) dP_j, then dS_j */
    mpfr_t *ew;        /* (Skv) e_j w_j: the exponentials with the dropout weight */
    mpfr_t *pair_pw;   /* (group * Sq) P_ij w_ij of a key column's rows */
    double *kmax;      /* (Skv) max_d |k_jd|, for masses */
    double *vmax;      /* (Skv) max_d |v_jd| */
    mpfr_t *in_a;      /* (max(Dqk, Dv)) 53-bit copy of one input vector (q row or k col) */
    mpfr_t *in_b;      /* (max(Dqk, Dv)) 53-bit copy of another (dO row or v col) */
    mpfr_t *orow;      /* (Dv) unrounded O of the row */
    mpfr_t *pair_p;    /* (group * Sq) P_ij of a key column's rows */
    mpfr_t *pair_ds;   /* (group * Sq) dS_ij */
    size_t *pair_row;  /* (group * Sq) flat row index of each pair */
    double *pair_mass; /* (group * Sq) |dS| mass of each pair */
    size_t n_pairs;
    size_t n_keys, n_dim, n_v;
    mpfr_t m, z, t, u, drow, lse;
    mpfr_t m_scores;                 /* the max of the row's scores alone (the sink's logit is not one) */
    mpfr_t keep_scale;               /* 1 / (1 - p) at prec (1 without dropout) */
    mpfr_t scale;                    /* p->scale, 53 bits (exact) */
    af_exact_vec *split_a, *split_b; /* in_a's and in_b's vectors split for the integer dots */
    af_exact_wsum *wsum;             /* the weighted sums in integers (exact_wsum.h) */
    mpfr_t *col;                     /* (n_dim) one weighted sum per d, at prec */
    size_t *wbase;                   /* (n_terms) each term's input row (its first element) */
    unsigned char *done;             /* (n_dim) d summed by wsum */
};

static mpfr_t *mpfr_array_new(size_t n, int prec) {
    mpfr_t *a = malloc((n ? n : 1) * sizeof *a);
    if (!a) return NULL;
    for (size_t k = 0; k < n; k++) mpfr_init2(a[k], prec);
    return a;
}

static void mpfr_array_free(mpfr_t *a, size_t n) {
    if (!a) return;
    for (size_t k = 0; k < n; k++) mpfr_clear(a[k]);
    free(a);
}

static size_t size_max2(size_t a, size_t b) { return a > b ? a : b; }

af_mpfr_scratch *af_mpfr_scratch_new(const af_oracle_problem *p, int prec, bool integer_sums) {
    af_mpfr_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    size_t group = (size_t)(p->Hq / p->Hkv);
    bool backward = p->in->dout != NULL;
    s->prec = prec;
    s->integer_sums = integer_sums;
    s->term_prec = prec + 53;
    s->n_dim = size_max2((size_t)p->Dqk, (size_t)p->Dv);
    s->n_keys = (size_t)p->Skv;
    s->n_pairs = backward ? group * (size_t)p->Sq : 0;
    s->n_terms = size_max2(size_max2(s->n_dim, s->n_keys + 1), s->n_pairs); /* + 1: a sink term of Z */
    s->terms = mpfr_array_new(s->n_terms, s->term_prec);
    s->ptrs = malloc(s->n_terms * sizeof *s->ptrs);
    s->e = mpfr_array_new(s->n_keys + 1, prec);
    s->th = mpfr_array_new(s->n_keys, prec);
    s->ds = mpfr_array_new(s->n_keys, prec);
    s->ew = mpfr_array_new(s->n_keys, prec);
    s->kmax = malloc(s->n_keys * sizeof *s->kmax);
    s->vmax = malloc(s->n_keys * sizeof *s->vmax);
    s->in_a = mpfr_array_new(s->n_dim, 53);
    s->in_b = mpfr_array_new(s->n_dim, 53);
    s->split_a = malloc(sizeof *s->split_a);
    s->split_b = malloc(sizeof *s->split_b);
    s->n_v = (size_t)p->Dv;
    s->orow = mpfr_array_new(s->n_v, prec);
    s->pair_p = mpfr_array_new(s->n_pairs, prec);
    s->pair_ds = mpfr_array_new(s->n_pairs, prec);
    s->pair_pw = mpfr_array_new(s->n_pairs, prec);
    s->pair_row = malloc((s->n_pairs ? s->n_pairs : 1) * sizeof *s->pair_row);
    s->pair_mass = malloc((s->n_pairs ? s->n_pairs : 1) * sizeof *s->pair_mass);
    s->wsum = af_exact_wsum_new(s->n_terms, (int)s->n_dim, prec);
    s->col = mpfr_array_new(s->n_dim, prec);
    s->wbase = malloc(s->n_terms * sizeof *s->wbase);
    s->done = malloc(s->n_dim);
    mpfr_inits2(prec, s->m, s->z, s->t, s->u, s->drow, s->lse, s->keep_scale, s->m_scores, (mpfr_ptr)0);
    mpfr_init2(s->scale, 53);
    mpfr_set_d(s->scale, p->scale, MPFR_RNDN);                   /* exact */
    mpfr_set_d(s->keep_scale, p->in->feat.dropout_p, MPFR_RNDN); /* p: exact (53 bits) */
    mpfr_ui_sub(s->keep_scale, 1, s->keep_scale, MPFR_RNDN);     /* 1 - p, rounded once to prec */
    mpfr_ui_div(s->keep_scale, 1, s->keep_scale, MPFR_RNDN);
    if (!s->terms || !s->ptrs || !s->e || !s->th || !s->ds || !s->ew || !s->pair_pw || !s->kmax || !s->vmax ||
        !s->in_a || !s->in_b || !s->split_a || !s->split_b || !s->orow || !s->pair_p || !s->pair_ds || !s->pair_row ||
        !s->pair_mass || !s->wsum || !s->col || !s->wbase || !s->done) {
        af_mpfr_scratch_free(s);
        return NULL;
    }
    return s;
}

void af_mpfr_scratch_free(af_mpfr_scratch *s) {
    if (!s) return;
    mpfr_array_free(s->terms, s->n_terms);
    free(s->ptrs);
    mpfr_array_free(s->e, s->n_keys + 1);
    mpfr_array_free(s->th, s->n_keys);
    mpfr_array_free(s->ds, s->n_keys);
    mpfr_array_free(s->ew, s->n_keys);
    free(s->kmax);
    free(s->vmax);
    mpfr_array_free(s->in_a, s->n_dim);
    free(s->split_a);
    free(s->split_b);
    mpfr_array_free(s->in_b, s->n_dim);
    mpfr_array_free(s->orow, s->n_v);
    free(s->pair_row);
    free(s->pair_mass);
    af_exact_wsum_free(s->wsum);
    mpfr_array_free(s->col, s->n_dim);
    free(s->wbase);
    free(s->done);
    mpfr_array_free(s->pair_p, s->n_pairs);
    mpfr_array_free(s->pair_ds, s->n_pairs);
    mpfr_array_free(s->pair_pw, s->n_pairs);
    mpfr_clears(s->m, s->z, s->t, s->u, s->drow, s->lse, s->keep_scale, s->m_scores, s->scale, (mpfr_ptr)0);
    free(s);
}

/* Elements of p's q, k, v and dout (0 without backward), in that order. */
static size_t input_lens(const af_oracle_problem *p, size_t len[4]) {
    size_t rows = (size_t)p->B * (size_t)p->Hq * (size_t)p->Sq, keys = (size_t)p->B * (size_t)p->Hkv * (size_t)p->Skv;
    len[0] = rows * (size_t)p->Dqk;
    len[1] = keys * (size_t)p->Dqk;
    len[2] = keys * (size_t)p->Dv;
    len[3] = p->in->dout ? rows * (size_t)p->Dv : 0;
    return len[0] + len[1] + len[2] + len[3];
}

double af_mpfr_inputs_elems(const af_oracle_problem *p) {
    size_t len[4];
    return (double)input_lens(p, len);
}

af_mpfr_inputs *af_mpfr_inputs_new(const af_oracle_problem *p) {
    const af_inputs *in = p->in;
    size_t len[4], at = 0;
    size_t n = input_lens(p, len);
    if (n == 0 || n > (size_t)AF_MPFR_INPUTS_MAX_ELEMS) return NULL;
    size_t limb = mpfr_custom_get_size(53); /* bytes of one 53-bit significand */
    af_mpfr_inputs *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->all = malloc(n * sizeof *x->all);
    x->limbs = malloc(n * limb);
    if (!x->all || !x->limbs) {
        af_mpfr_inputs_free(x);
        return NULL;
    }
    const double *src[4] = {in->q, in->k, in->v, in->dout};
    mpfr_t **dst[4] = {&x->q, &x->k, &x->v, &x->dout};
    for (int t = 0; t < 4; t++) {
        *dst[t] = len[t] ? x->all + at : NULL;
        for (size_t e = 0; e < len[t]; e++, at++) {
            void *m = (char *)x->limbs + at * limb;
            mpfr_custom_init(m, 53);
            mpfr_custom_init_set(x->all[at], MPFR_ZERO_KIND, 0, 53, m);
            mpfr_set_d(x->all[at], src[t][e], MPFR_RNDN); /* 53 bits: exact */
        }
    }
    return x;
}

void af_mpfr_inputs_free(af_mpfr_inputs *x) { /* custom variables: no mpfr_clear */
    if (!x) return;
    free(x->all);
    free(x->limbs);
    free(x);
}

/* dst = a * x[i], exact at dst's term_prec: x[i] from the run's 53-bit copy xm when there
 * is one (no conversion), else from the double itself (mul_d_exact); the same bits either
 * way. */
static inline void mul_in(mpfr_ptr dst, mpfr_srcptr a, const mpfr_t *xm, const double *x, size_t i) {
    if (xm)
        mpfr_mul(dst, a, xm[i], MPFR_RNDN);
    else
        mul_d_exact(dst, a, x[i]);
}

void af_mpfr_set_i128(mpfr_t dst, af_i128 v, int exp2) {
    unsigned __int128 mag = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v; /* |v| < 2^127 */
    mp_limb_t limbs[2] = {(mp_limb_t)mag, (mp_limb_t)(mag >> 64)};
    mp_size_t n = limbs[1] ? 2 : limbs[0] ? 1 : 0;
    mpz_t z; /* read-only view of the limbs, as exact_wsum.c rounds its integers */
    mpz_roinit_n(z, limbs, v < 0 ? -n : n);
    mpfr_set_z_2exp(dst, z, exp2, MPFR_RNDN);
}

/* dst = sum_d a[d] * x[base + d] for 53-bit a (av: the same values split, exact_dot.h) and
 * input x (its copy xm or NULL), correctly rounded to dst's precision. Where the entries have few
 * bits (exact_dot.h) the exact sum is an integer times a power of two, rounded once into
 * dst; else the products are exact at term_prec and mpfr_sum rounds their sum once. Either
 * way dst is the exact sum correctly rounded: the same bits (test_exact_dot). */
static void dot_exact(af_mpfr_scratch *s, mpfr_t dst, mpfr_t *a, const af_exact_vec *av, const mpfr_t *xm,
                      const double *x, size_t base, int n) {
    af_i128 sum;
    int e;
    if (s->integer_sums && af_exact_dot(av, x + base, n, &sum, &e)) {
        af_mpfr_set_i128(dst, sum, e); /* the one rounding */
        return;
    }
    for (int d = 0; d < n; d++) {
        mul_in(s->terms[d], a[d], xm, x, base + (size_t)d);
        s->ptrs[d] = s->terms[d];
    }
    mpfr_sum(dst, s->ptrs, (unsigned long)n, MPFR_RNDN);
}

/* The 53-bit values of input x[base .. base + n): the copy's when there is one, else
 * converted into scratch. */
static mpfr_t *load_exact(mpfr_t *scratch, const mpfr_t *xm, const double *x, size_t base, int n) {
    if (xm) return (mpfr_t *)(xm + base);
    for (int d = 0; d < n; d++) mpfr_set_d(scratch[d], x[base + (size_t)d], MPFR_RNDN); /* 53 bits: exact */
    return scratch;
}

/* s->col[d] = sum_t w[t] x[s->wbase[t] + d] for d < D, the exact sum rounded once to prec:
 * in integers where exact_wsum.h applies, else (or for a d whose sum is exactly zero) each
 * product exact at term_prec (x from its copy xm or the double) and one mpfr_sum. The same
 * bits either way. */
static void weighted_sums(af_mpfr_scratch *s, mpfr_t *w, size_t n, const mpfr_t *xm, const double *x, int D) {
    if (s->integer_sums)
        af_exact_wsum_run(s->wsum, s->col, w, x, s->wbase, n, D, s->done);
    else
        memset(s->done, 0, (size_t)D);
    for (int d = 0; d < D; d++) {
        if (s->done[d]) continue;
        for (size_t t = 0; t < n; t++) {
            mul_in(s->terms[t], w[t], xm, x, s->wbase[t] + (size_t)d);
            s->ptrs[t] = s->terms[t];
        }
        mpfr_sum(s->col[d], s->ptrs, (unsigned long)n, MPFR_RNDN);
    }
}

static double max_abs(const double *x, int n) {
    double m = 0.0;
    for (int d = 0; d < n; d++)
        if (fabs(x[d]) > m) m = fabs(x[d]);
    return m;
}

/* x holds r at prec; on return x = f(r) of the score_mod (feature_spec.h: tan(b) added)
 * and dt = f'(r), each operation rounded once to prec (2 r is exact). tmp: scratch. */
static void score_mod_mp(const af_oracle_problem *p, int b, mpfr_t x, mpfr_t dt, mpfr_t tmp) {
    switch (p->in->feat.score_mod) {
        case AF_SCORE_MOD_NONE:
            mpfr_set_ui(dt, 1, MPFR_RNDN);
            return;
        case AF_SCORE_MOD_SQUARED:
            mpfr_mul_2ui(dt, x, 1, MPFR_RNDN); /* 2 r */
            mpfr_sqr(x, x, MPFR_RNDN);
            return;
        case AF_SCORE_MOD_TRIG:
            mpfr_sin(dt, x, MPFR_RNDN);    /* sin r */
            mpfr_cos(tmp, x, MPFR_RNDN);   /* cos r */
            mpfr_sin(x, tmp, MPFR_RNDN);   /* sin(cos r) */
            mpfr_cos(tmp, tmp, MPFR_RNDN); /* cos(cos r) */
            mpfr_mul(dt, dt, tmp, MPFR_RNDN);
            mpfr_neg(dt, dt, MPFR_RNDN); /* -sin r cos(cos r) */
            break;
        case AF_SCORE_MOD_TRIG2:
            mpfr_sin(tmp, x, MPFR_RNDN); /* sin r */
            mpfr_cos(dt, x, MPFR_RNDN);  /* cos r */
            mpfr_mul(x, dt, tmp, MPFR_RNDN);
            mpfr_sqr(tmp, tmp, MPFR_RNDN);
            mpfr_fms(dt, dt, dt, tmp, MPFR_RNDN); /* cos^2 r - sin^2 r, one rounding */
            break;
    }
    mpfr_set_si(tmp, b, MPFR_RNDN); /* exact */
    mpfr_tan(tmp, tmp, MPFR_RNDN);
    mpfr_add(x, x, tmp, MPFR_RNDN);
}

/* x holds r = scale * q.k at prec; on return x = s (feature_spec.h) and dt = dt/dr:
 * 1 - tanh(r / c)^2 with softcap, f'(r) with score_mod, else 1. tmp: scratch at prec. */
static void feature_score(const af_oracle_problem *p, int b, int h, int i, int j, mpfr_t x, mpfr_t dt, mpfr_t tmp) {
    double c = p->in->feat.softcap;
    if (c != 0.0) {
        mpfr_div_d(tmp, x, c, MPFR_RNDN);
        mpfr_tanh(tmp, tmp, MPFR_RNDN);
        mpfr_mul_d(x, tmp, c, MPFR_RNDN);
        mpfr_sqr(tmp, tmp, MPFR_RNDN);
        mpfr_ui_sub(dt, 1, tmp, MPFR_RNDN);
    } else {
        score_mod_mp(p, b, x, dt, tmp);
    }
    double add = af_feat_additive(p, b, h, i, j);
    if (add != 0.0) mpfr_add_d(x, x, add, MPFR_RNDN);
}

/* The factor by which |dR| may exceed |dS| (for the masses): |dt/dr|, at least 1 (softcap's
 * and plain attention's 1; squared's 2 |r| when above it). */
static double grad_gain(const mpfr_t dt) { return fmax(1.0, fabs(mpfr_get_d(dt, MPFR_RNDN))); }

/* dst = x w_ij (feature_spec.h): x without dropout, 0 when dropped, x / (1 - p) kept. */
static void dropout_weigh(const af_oracle_problem *p, const af_mpfr_scratch *s, int b, int h, int i, int j, mpfr_t dst,
                          mpfr_t x) {
    if (p->in->feat.dropout_p == 0.0)
        mpfr_set(dst, x, MPFR_RNDN);
    else if (!af_feat_dropout_kept(p, b, h, i, j))
        mpfr_set_zero(dst, 1);
    else
        mpfr_mul(dst, x, s->keep_scale, MPFR_RNDN);
}

void af_mpfr_row(const af_oracle_ctx *c, af_mpfr_scratch *s, int b, int h, int i, double *o_row, double *lse,
                 double *dq_row, af_oracle_mass *mass) {
    const af_oracle_problem *p = c->p;
    const af_inputs *in = p->in;
    const int Dqk = p->Dqk, Dv = p->Dv;
    const int len_q = p->len_q[b], len_kv = p->len_kv[b];
    const int g = h / (p->Hq / p->Hkv);
    const size_t row = af_idx_row(p, b, h, i);
    const bool want_dq = c->backward && dq_row != NULL;
    memset(mass, 0, sizeof *mass);
    af_mask_keys keys; /* at most two intervals (global keys): key jj is af_mask_keys_at */
    int n = af_mask_visible_keys(&p->mask, b, len_q, len_kv, i, &keys); /* the envelope (mask_spec.h) */
    if (n == 0) { /* fully masked (or padding) row: O = 0, LSE = -inf, no gradient */
        memset(o_row, 0, (size_t)Dv * sizeof *o_row);
        if (want_dq) memset(dq_row, 0, (size_t)Dqk * sizeof *dq_row);
        *lse = i < len_q ? -INFINITY : 0.0;
        if (c->lse_mp) {
            mpfr_set_inf(c->lse_mp[row], -1);
            mpfr_set_zero(c->drow_mp[row], 1);
        }
        if (c->dsink_row) c->dsink_row[row] = 0.0;
        if (c->stat_max) c->stat_max[row] = -INFINITY, c->stat_sumexp[row] = 0.0;
        return;
    }
    const af_mpfr_inputs *xc = c->x;
    mpfr_t *qa = load_exact(s->in_a, xc ? xc->q : NULL, in->q, row * (size_t)Dqk, Dqk); /* (Dqk) */
    af_exact_vec_set(s->split_a, in->q + row * (size_t)Dqk, Dqk);

    /* Scores s_j, stored in e[jj] for j = af_mask_keys_at(&keys, jj). */
    for (int jj = 0; jj < n; jj++) {
        size_t key = af_idx_key(p, b, g, af_mask_keys_at(&keys, jj));
        const double *k = in->k + key * (size_t)Dqk;
        const double *v = in->v + key * (size_t)Dv;
        dot_exact(s, s->t, qa, s->split_a, xc ? xc->k : NULL, in->k, key * (size_t)Dqk, Dqk);
        mpfr_mul(s->e[jj], s->t, s->scale, MPFR_RNDN); /* = mpfr_mul_d by p->scale */
        feature_score(p, b, h, i, af_mask_keys_at(&keys, jj), s->e[jj], s->th[jj], s->u);
        if (!af_mask_rule_kept(&p->mask, b, i, af_mask_keys_at(&keys, jj)))
            mpfr_set_inf(s->e[jj], -1); /* dropped: exp(-inf - m) = 0 exactly */
        s->kmax[jj] = max_abs(k, Dqk);
        s->vmax[jj] = max_abs(v, Dv);
    }
    const double sink = af_feat_sink(p, h);
    const int n_z = sink > -INFINITY ? n + 1 : n; /* terms of Z: the keys and the sink */
    if (n_z > n) mpfr_set_d(s->e[n], sink, MPFR_RNDN);
    mpfr_set(s->m, s->e[0], MPFR_RNDN); /* same precision: exact */
    for (int jj = 1; jj < n; jj++)
        if (mpfr_greater_p(s->e[jj], s->m)) mpfr_set(s->m, s->e[jj], MPFR_RNDN);
    mpfr_set(s->m_scores, s->m, MPFR_RNDN); /* the scores' max, before the sink joins: exact */
    if (n_z > n && mpfr_greater_p(s->e[n], s->m)) mpfr_set(s->m, s->e[n], MPFR_RNDN);
    for (int jj = 0; jj < n_z; jj++) {
        mpfr_sub(s->e[jj], s->e[jj], s->m, MPFR_RNDN);
        mpfr_exp(s->e[jj], s->e[jj], MPFR_RNDN);
        s->ptrs[jj] = s->e[jj];
    }
    mpfr_sum(s->z, s->ptrs, (unsigned long)n_z, MPFR_RNDN);
    if (c->stat_max) { /* the score statistics: max_j s_j and sum_j exp(s_j - max), keys only */
        c->stat_max[row] = mpfr_get_d(s->m_scores, MPFR_RNDN);
        if (mpfr_inf_p(s->m_scores)) { /* every visible key dropped: an empty row */
            c->stat_sumexp[row] = 0.0;
        } else {
            mpfr_sum(s->t, s->ptrs, (unsigned long)n, MPFR_RNDN); /* sum_j exp(s_j - m) */
            mpfr_sub(s->u, s->m, s->m_scores, MPFR_RNDN);         /* m >= m_scores (the sink) */
            mpfr_exp(s->u, s->u, MPFR_RNDN);
            mpfr_mul(s->t, s->t, s->u, MPFR_RNDN);
            c->stat_sumexp[row] = mpfr_get_d(s->t, MPFR_RNDN);
        }
    }

    mpfr_ptr lse_mp = c->lse_mp ? c->lse_mp[row] : s->lse;
    mpfr_log(s->t, s->z, MPFR_RNDN);
    mpfr_add(lse_mp, s->m, s->t, MPFR_RNDN);
    *lse = mpfr_get_d(lse_mp, MPFR_RNDN);
    mass->lse = 1.0 + fabs(mpfr_get_d(s->m, MPFR_RNDN)) + log((double)n);

    double zd = mpfr_get_d(s->z, MPFR_RNDN);
    for (int jj = 0; jj < n; jj++)
        dropout_weigh(p, s, b, h, i, af_mask_keys_at(&keys, jj), s->ew[jj], s->e[jj]); /* e_j w_j */
    for (int jj = 0; jj < n; jj++) s->wbase[jj] = af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dv;
    weighted_sums(s, s->ew, (size_t)n, xc ? xc->v : NULL, in->v, Dv); /* sum_j e_j w_j v_jd */
    for (int d = 0; d < Dv; d++) {
        mpfr_div(s->orow[d], s->col[d], s->z, MPFR_RNDN);
        o_row[d] = mpfr_get_d(s->orow[d], MPFR_RNDN);
    }
    for (int jj = 0; jj < n; jj++) mass->o += mpfr_get_d(s->ew[jj], MPFR_RNDN) / zd * s->vmax[jj];

    if (!c->backward) return;
    mpfr_t *dob = load_exact(s->in_b, xc ? xc->dout : NULL, in->dout, row * (size_t)Dv, Dv); /* (Dv) */
    af_exact_vec_set(s->split_b, in->dout + row * (size_t)Dv, Dv);
    mpfr_ptr drow = c->drow_mp ? c->drow_mp[row] : s->drow;
    for (int d = 0; d < Dv; d++) {
        mpfr_mul(s->terms[d], dob[d], s->orow[d], MPFR_RNDN); /* exact */
        s->ptrs[d] = s->terms[d];
    }
    mpfr_sum(drow, s->ptrs, (unsigned long)Dv, MPFR_RNDN);
    double dlse_nat = af_feat_dlse_nat(p, b, h, i);
    if (dlse_nat != 0.0) mpfr_sub_d(drow, drow, dlse_nat, MPFR_RNDN);
    if (c->dsink_row && n_z == n) c->dsink_row[row] = 0.0; /* a -inf logit has no gradient */
    if (c->dsink_row && n_z > n) {                         /* -exp(a_h - L) D = -(e_sink / Z) D */
        mpfr_div(s->t, s->e[n], s->z, MPFR_RNDN);
        mpfr_mul(s->t, s->t, drow, MPFR_RNDN);
        c->dsink_row[row] = -mpfr_get_d(s->t, MPFR_RNDN);
    }
    if (!want_dq) return;
    double drow_abs = fabs(mpfr_get_d(drow, MPFR_RNDN));
    double dq_mass = 0.0;
    for (int jj = 0; jj < n; jj++) {
        size_t vbase = af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dv;
        dot_exact(s, s->ds[jj], dob, s->split_b, xc ? xc->v : NULL, in->v, vbase, Dv);  /* dO . v_j */
        dropout_weigh(p, s, b, h, i, af_mask_keys_at(&keys, jj), s->ds[jj], s->ds[jj]); /* dP_j = w_j dO . v_j */
        double pj = mpfr_get_d(s->e[jj], MPFR_RNDN) / zd;
        dq_mass += pj * (fabs(mpfr_get_d(s->ds[jj], MPFR_RNDN)) + drow_abs) * s->kmax[jj] * grad_gain(s->th[jj]);
        mpfr_sub(s->ds[jj], s->ds[jj], drow, MPFR_RNDN);
        mpfr_mul(s->ds[jj], s->ds[jj], s->e[jj], MPFR_RNDN);
        mpfr_div(s->ds[jj], s->ds[jj], s->z, MPFR_RNDN); /* dS_j */
        if (p->in->feat.softcap != 0.0 || p->in->feat.score_mod != AF_SCORE_MOD_NONE)
            mpfr_mul(s->ds[jj], s->ds[jj], s->th[jj], MPFR_RNDN); /* dR_j */
    }
    mass->dq = fabs(p->scale) * dq_mass;
    for (int jj = 0; jj < n; jj++) s->wbase[jj] = af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dqk;
    weighted_sums(s, s->ds, (size_t)n, xc ? xc->k : NULL, in->k, Dqk); /* sum_j dS_j k_jd */
    for (int d = 0; d < Dqk; d++) {
        mpfr_mul(s->t, s->col[d], s->scale, MPFR_RNDN);
        dq_row[d] = mpfr_get_d(s->t, MPFR_RNDN);
    }
}

void af_mpfr_key(const af_oracle_ctx *c, af_mpfr_scratch *s, int b, int g, int j, double *dk_col, double *dv_col,
                 af_oracle_mass *mass) {
    const af_oracle_problem *p = c->p;
    const af_inputs *in = p->in;
    const int Dqk = p->Dqk, Dv = p->Dv;
    const int group = p->Hq / p->Hkv;
    const int len_q = p->len_q[b], len_kv = p->len_kv[b];
    memset(mass, 0, sizeof *mass);
    memset(dk_col, 0, (size_t)Dqk * sizeof *dk_col);
    memset(dv_col, 0, (size_t)Dv * sizeof *dv_col);
    int r0, r1;
    if (af_mask_rows_seeing_key(&p->mask, len_q, len_kv, j, &r0, &r1) == 0) return;
    const size_t key = af_idx_key(p, b, g, j);
    const af_mpfr_inputs *xc = c->x;
    mpfr_t *ka = load_exact(s->in_a, xc ? xc->k : NULL, in->k, key * (size_t)Dqk, Dqk); /* (Dqk) */
    mpfr_t *vb = load_exact(s->in_b, xc ? xc->v : NULL, in->v, key * (size_t)Dv, Dv);   /* (Dv) */
    af_exact_vec_set(s->split_a, in->k + key * (size_t)Dqk, Dqk);
    af_exact_vec_set(s->split_b, in->v + key * (size_t)Dv, Dv);

    size_t np = 0;
    double dv_mass = 0.0, dk_mass = 0.0;
    for (int hh = 0; hh < group; hh++) {
        int h = g * group + hh;
        for (int i = r0; i <= r1; i++) {
            if (!af_mask_rule_kept(&p->mask, b, i, j)) continue; /* dropped: P_ij = 0 */
            size_t row = af_idx_row(p, b, h, i);
            const double *q = in->q + row * (size_t)Dqk;
            const double *dout = in->dout + row * (size_t)Dv;
            dot_exact(s, s->t, ka, s->split_a, xc ? xc->q : NULL, in->q, row * (size_t)Dqk, Dqk);
            mpfr_mul(s->t, s->t, s->scale, MPFR_RNDN);             /* r_ij */
            feature_score(p, b, h, i, j, s->t, s->th[0], s->drow); /* s_ij; th[0] = dt/dr */
            if (c->lse_mp)
                mpfr_sub(s->t, s->t, c->lse_mp[row], MPFR_RNDN);
            else
                mpfr_sub_d(s->t, s->t, c->lse64[row], MPFR_RNDN);
            mpfr_exp(s->pair_p[np], s->t, MPFR_RNDN);                                                 /* P_ij */
            dot_exact(s, s->u, vb, s->split_b, xc ? xc->dout : NULL, in->dout, row * (size_t)Dv, Dv); /* dO_i . v_j */
            dropout_weigh(p, s, b, h, i, j, s->u, s->u);                    /* dP_ij = w_ij dO_i . v_j */
            dropout_weigh(p, s, b, h, i, j, s->pair_pw[np], s->pair_p[np]); /* P_ij w_ij */
            double pij = mpfr_get_d(s->pair_p[np], MPFR_RNDN);
            double drow_d = c->drow_mp ? mpfr_get_d(c->drow_mp[row], MPFR_RNDN) : c->drow64[row];
            s->pair_mass[np] = pij * (fabs(mpfr_get_d(s->u, MPFR_RNDN)) + fabs(drow_d)) * grad_gain(s->th[0]);
            if (c->drow_mp)
                mpfr_sub(s->u, s->u, c->drow_mp[row], MPFR_RNDN);
            else
                mpfr_sub_d(s->u, s->u, c->drow64[row], MPFR_RNDN);
            mpfr_mul(s->pair_ds[np], s->u, s->pair_p[np], MPFR_RNDN); /* dS_ij */
            if (p->in->feat.softcap != 0.0 || p->in->feat.score_mod != AF_SCORE_MOD_NONE)
                mpfr_mul(s->pair_ds[np], s->pair_ds[np], s->th[0], MPFR_RNDN); /* dR_ij */
            s->pair_row[np] = row;
            dv_mass += mpfr_get_d(s->pair_pw[np], MPFR_RNDN) * max_abs(dout, Dv);
            dk_mass += s->pair_mass[np] * max_abs(q, Dqk);
            np++;
        }
    }
    mass->dv = dv_mass;
    mass->dk = fabs(p->scale) * dk_mass;
    for (size_t n = 0; n < np; n++) s->wbase[n] = s->pair_row[n] * (size_t)Dv;
    weighted_sums(s, s->pair_pw, np, xc ? xc->dout : NULL, in->dout, Dv); /* sum_i P_ij w_ij dO_id */
    for (int d = 0; d < Dv; d++) dv_col[d] = mpfr_get_d(s->col[d], MPFR_RNDN);
    for (size_t n = 0; n < np; n++) s->wbase[n] = s->pair_row[n] * (size_t)Dqk;
    weighted_sums(s, s->pair_ds, np, xc ? xc->q : NULL, in->q, Dqk); /* sum_i dS_ij q_id */
    for (int d = 0; d < Dqk; d++) {
        mpfr_mul(s->t, s->col[d], s->scale, MPFR_RNDN);
        dk_col[d] = mpfr_get_d(s->t, MPFR_RNDN);
    }
}
