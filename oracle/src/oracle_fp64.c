/* oracle_fp64.c — the fast tier: one query row / one key column in fp64 with
 * compensated arithmetic. Same formulas as oracle_mpfr.c:
 *  - every product a*b is split exactly into hi + lo (TwoProduct with fma);
 *  - every sum is a Neumaier (improved Kahan-Babuska) sum of those parts, so a dot
 *    product or a contraction is as accurate as if computed in ~106 bits and then
 *    rounded, up to a second-order term n * u^2 * sum |terms|;
 *  - exp and log come from libm (glibc: < 1 ulp).
 * It covers every element of every case that is too large for MPFR and is checked
 * against MPFR on sampled rows and key columns (oracle.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/feature_spec.h"
#include "oracle/src/oracle_internal.h"
#include "util/hot.h"

/* Neumaier accumulator: the value is sum + comp. */
typedef struct {
    double sum, comp;
} neumaier;

static inline void neumaier_add(neumaier *a, double x) {
    double t = a->sum + x;
    if (fabs(a->sum) >= fabs(x))
        a->comp += (a->sum - t) + x;
    else
        a->comp += (x - t) + a->sum;
    a->sum = t;
}

/* a += x * y, with the product's rounding error kept (fma gives it exactly). */
static inline void neumaier_add_product(neumaier *a, double x, double y) {
    double hi = x * y;
    double lo = fma(x, y, -hi);
    neumaier_add(a, hi);
    a->comp += lo;
}

static inline double neumaier_value(const neumaier *a) { return a->sum + a->comp; }

/* x . y over n elements, compensated. */
AF_HOT static double dot_compensated(const double *x, const double *y, int n) {
    neumaier a = {0.0, 0.0};
    for (int d = 0; d < n; d++) neumaier_add_product(&a, x[d], y[d]);
    return neumaier_value(&a);
}

struct af_fp64_scratch {
    double *score;   /* (Skv) s_j, then e_j = exp(s_j - m) */
    double *dscore;  /* (Skv) dS_j */
    double *dt_dr;   /* (Skv) softcap derivative of each score (1 without softcap) */
    double *weight;  /* (Skv) dropout weight w_j of each key (feature_spec.h; 1 without) */
    neumaier *acc_a; /* (max(Dqk, Dv)) one accumulator per output element */
    neumaier *acc_b; /* (max(Dqk, Dv)) */
};

af_fp64_scratch *af_fp64_scratch_new(const af_oracle_problem *p) {
    af_fp64_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    size_t dim = (size_t)(p->Dqk > p->Dv ? p->Dqk : p->Dv);
    s->score = malloc((size_t)p->Skv * sizeof *s->score);
    s->dscore = malloc((size_t)p->Skv * sizeof *s->dscore);
    s->dt_dr = malloc((size_t)p->Skv * sizeof *s->dt_dr);
    s->weight = malloc((size_t)p->Skv * sizeof *s->weight);
    s->acc_a = malloc(dim * sizeof *s->acc_a);
    s->acc_b = malloc(dim * sizeof *s->acc_b);
    if (!s->score || !s->dscore || !s->dt_dr || !s->weight || !s->acc_a || !s->acc_b) {
        af_fp64_scratch_free(s);
        return NULL;
    }
    return s;
}

void af_fp64_scratch_free(af_fp64_scratch *s) {
    if (!s) return;
    free(s->score);
    free(s->dscore);
    free(s->dt_dr);
    free(s->weight);
    free(s->acc_a);
    free(s->acc_b);
    free(s);
}

AF_HOT void af_fp64_row(const af_oracle_ctx *c, af_fp64_scratch *s, int b, int h, int i, double *o_row, double *lse,
                        double *dq_row) {
    const af_oracle_problem *p = c->p;
    const af_inputs *in = p->in;
    const int Dqk = p->Dqk, Dv = p->Dv;
    const int len_q = p->len_q[b], len_kv = p->len_kv[b];
    const int g = h / (p->Hq / p->Hkv);
    const size_t row = af_idx_row(p, b, h, i);
    const bool want_dq = c->backward && dq_row != NULL;
    af_mask_keys keys; /* at most two intervals (global keys): key jj is af_mask_keys_at */
    int n = af_mask_visible_keys(&p->mask, b, len_q, len_kv, i, &keys); /* the envelope (mask_spec.h) */
    if (n == 0) {
        memset(o_row, 0, (size_t)Dv * sizeof *o_row);
        if (want_dq) memset(dq_row, 0, (size_t)Dqk * sizeof *dq_row);
        *lse = i < len_q ? -INFINITY : 0.0;
        c->lse64[row] = *lse;
        c->drow64[row] = 0.0;
        if (c->dsink_row) c->dsink_row[row] = 0.0;
        if (c->stat_max) c->stat_max[row] = -INFINITY, c->stat_sumexp[row] = 0.0;
        return;
    }
    const double *q = in->q + row * (size_t)Dqk;                                          /* (Dqk) */
#define KEY_K(jj) (in->k + af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dqk) /* (Dqk) */
#define KEY_V(jj) (in->v + af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dv)  /* (Dv) */

    const double sink = af_feat_sink(p, h); /* -inf without sinks */
    double m_scores = -INFINITY;            /* the scores' max: the sink's logit is not a score */
    for (int jj = 0; jj < n; jj++) {
        int j = af_mask_keys_at(&keys, jj);
        double r = p->scale * dot_compensated(q, KEY_K(jj), Dqk);
        s->score[jj] = af_feat_score64(p, b, h, i, j, r, &s->dt_dr[jj]);
        if (!af_mask_rule_kept(&p->mask, b, i, j)) s->score[jj] = -INFINITY; /* dropped: weight exactly 0 */
        s->weight[jj] = af_feat_dropout_weight(p, b, h, i, j);
        if (s->score[jj] > m_scores) m_scores = s->score[jj];
    }
    double m = sink > m_scores ? sink : m_scores;
    neumaier z = {0.0, 0.0};
    for (int jj = 0; jj < n; jj++) {
        s->score[jj] = exp(s->score[jj] - m);
        neumaier_add(&z, s->score[jj]);
    }
    if (c->stat_max) { /* the score statistics (keys only): sum_j exp(s_j - m_scores) */
        c->stat_max[row] = m_scores;
        c->stat_sumexp[row] = m_scores == -INFINITY ? 0.0 : neumaier_value(&z) * exp(m - m_scores);
    }
    if (sink > -INFINITY) neumaier_add(&z, exp(sink - m)); /* the sink: in Z, no value */
    double zv = neumaier_value(&z);
    *lse = m + log(zv);
    c->lse64[row] = *lse;

    for (int d = 0; d < Dv; d++) s->acc_a[d] = (neumaier){0.0, 0.0};
    for (int jj = 0; jj < n; jj++) {
        const double *v = KEY_V(jj);
        double ew = s->score[jj] * s->weight[jj]; /* e_j w_j: P_j w_j Z (w is 0, 1 or 1 / (1 - p)) */
        for (int d = 0; d < Dv; d++) neumaier_add_product(&s->acc_a[d], ew, v[d]);
    }
    for (int d = 0; d < Dv; d++) o_row[d] = neumaier_value(&s->acc_a[d]) / zv;

    if (!c->backward) return;
    const double *dout = in->dout + row * (size_t)Dv; /* (Dv) */
    double drow = dot_compensated(dout, o_row, Dv) - af_feat_dlse_nat(p, b, h, i);
    c->drow64[row] = drow;
    if (c->dsink_row) c->dsink_row[row] = -exp(sink - *lse) * drow;
    if (!want_dq) return;
    for (int d = 0; d < Dqk; d++) s->acc_b[d] = (neumaier){0.0, 0.0};
    for (int jj = 0; jj < n; jj++) {
        double dp = s->weight[jj] * dot_compensated(dout, KEY_V(jj), Dv);
        double ds = (s->score[jj] / zv) * (dp - drow) * s->dt_dr[jj];
        const double *k = KEY_K(jj);
        for (int d = 0; d < Dqk; d++) neumaier_add_product(&s->acc_b[d], ds, k[d]);
    }
    for (int d = 0; d < Dqk; d++) dq_row[d] = p->scale * neumaier_value(&s->acc_b[d]);
#undef KEY_K
#undef KEY_V
}

AF_HOT void af_fp64_key(const af_oracle_ctx *c, af_fp64_scratch *s, int b, int g, int j, double *dk_col,
                        double *dv_col) {
    const af_oracle_problem *p = c->p;
    const af_inputs *in = p->in;
    const int Dqk = p->Dqk, Dv = p->Dv;
    const int group = p->Hq / p->Hkv;
    memset(dk_col, 0, (size_t)Dqk * sizeof *dk_col);
    memset(dv_col, 0, (size_t)Dv * sizeof *dv_col);
    int r0, r1;
    if (af_mask_rows_seeing_key(&p->mask, p->len_q[b], p->len_kv[b], j, &r0, &r1) == 0) return;
    const size_t key = af_idx_key(p, b, g, j);
    const double *k = in->k + key * (size_t)Dqk; /* (Dqk) */
    const double *v = in->v + key * (size_t)Dv;  /* (Dv) */
    for (int d = 0; d < Dqk; d++) s->acc_a[d] = (neumaier){0.0, 0.0};
    for (int d = 0; d < Dv; d++) s->acc_b[d] = (neumaier){0.0, 0.0};
    for (int hh = 0; hh < group; hh++) {
        int h = g * group + hh;
        for (int i = r0; i <= r1; i++) {
            if (!af_mask_rule_kept(&p->mask, b, i, j)) continue; /* dropped: P_ij = 0 */
            size_t row = af_idx_row(p, b, h, i);
            const double *q = in->q + row * (size_t)Dqk;
            const double *dout = in->dout + row * (size_t)Dv;
            double dt_dr;
            double sij = af_feat_score64(p, b, h, i, j, p->scale * dot_compensated(q, k, Dqk), &dt_dr);
            double pij = exp(sij - c->lse64[row]);
            double w = af_feat_dropout_weight(p, b, h, i, j);
            double ds = pij * (w * dot_compensated(dout, v, Dv) - c->drow64[row]) * dt_dr;
            for (int d = 0; d < Dqk; d++) neumaier_add_product(&s->acc_a[d], ds, q[d]);
            for (int d = 0; d < Dv; d++) neumaier_add_product(&s->acc_b[d], pij * w, dout[d]);
        }
    }
    for (int d = 0; d < Dqk; d++) dk_col[d] = p->scale * neumaier_value(&s->acc_a[d]);
    for (int d = 0; d < Dv; d++) dv_col[d] = neumaier_value(&s->acc_b[d]);
}
