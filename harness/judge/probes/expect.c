/* expect.c — what the inclusion and feature probes expect (expect.h): exact fp64 rows
 * from the exact stored inputs, and generous bounds on a correct kernel's error. */
#include "judge/probes/expect.h"

#include <math.h>
#include <stdlib.h>

#include "judge/problem.h"
#include "judge/tolerance.h"
#include "oracle/feature_spec.h"

/* q . k and sum |q_d k_d| over n elements, in four interleaved partial sums (the fp64
 * expectation's bounds are orders above the order's effect; one serial chain was most
 * of the probes' host time). */
static double dot_abs(const double *restrict q, const double *restrict k, int n, double *abs_sum) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, m0 = 0, m1 = 0, m2 = 0, m3 = 0;
    int d = 0;
    for (; d + 4 <= n; d += 4) {
        double p0 = q[d] * k[d], p1 = q[d + 1] * k[d + 1], p2 = q[d + 2] * k[d + 2], p3 = q[d + 3] * k[d + 3];
        a0 += p0, a1 += p1, a2 += p2, a3 += p3;
        m0 += fabs(p0), m1 += fabs(p1), m2 += fabs(p2), m3 += fabs(p3);
    }
    for (; d < n; d++) {
        double p = q[d] * k[d];
        a0 += p;
        m0 += fabs(p);
    }
    *abs_sum = (m0 + m1) + (m2 + m3);
    return (a0 + a1) + (a2 + a3);
}

int probe_row_fp64(const probe_ctx *x, const af_mask_rule *rule, const af_inputs *in, int b, int h, int i, int lo,
                   int hi, double scale, double *o, double *mass, double *p, row_stats *rs) {
    int n = hi - lo + 1, Dqk = in->Dqk, Dv = in->Dv, g = h / x->group, lq = len_q(x, b), lk = len_kv(x, b);
    int n_vis = 0;
    double *s = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)); /* [n] scores, then weights */
    unsigned char *vis = malloc((size_t)(n > 0 ? n : 1));         /* [n] row i sees key lo + j */
    if (!s || !vis) {
        free(s);
        free(vis);
        return -1;
    }
    const double *q = in->q + (((size_t)b * in->Hq + h) * in->Sq + i) * Dqk;
    /* the case's features, as in->feat declares them (oracle/feature_spec.h) */
    af_oracle_problem fp;
    int fq[AF_MAX_BATCH], fk[AF_MAX_BATCH];
    af_problem_from_case(&fp, x->c, in, fq, fk);
    double sink = af_feat_sink(&fp, h), m = sink, abs_max = 0;
    for (int j = 0; j < n; j++) { /* [lo, hi] is the hull: a global-key gap is skipped */
        vis[j] = af_mask_sees(rule, b, lq, lk, i, lo + j);
        if (!vis[j]) continue;
        n_vis++;
        const double *k = in->k + (((size_t)b * in->Hkv + g) * in->Skv + lo + j) * Dqk;
        double aacc, acc = dot_abs(q, k, Dqk, &aacc);
        double dt_dr; /* a score_mod's f' scales the score's error (squared: 2 r) */
        s[j] = af_feat_score64(&fp, b, h, i, lo + j, acc * scale, &dt_dr);
        if (s[j] > m) m = s[j];
        double a = aacc * fabs(scale) * fmax(1.0, fabs(dt_dr));
        if (a > abs_max) abs_max = a;
    }
    double l = 0;
    for (int j = 0; j < n; j++) {
        s[j] = vis[j] ? exp(s[j] - m) : 0.0;
        l += s[j];
    }
    if (sink > -INFINITY) l += exp(sink - m); /* in the denominator only */
    for (int d = 0; d < Dv; d++) o[d] = mass[d] = 0;
    double sub = 0;
    for (int j = 0; j < n; j++) {
        if (!vis[j]) {
            if (p) p[j] = 0.0;
            continue;
        }
        /* dropout: the row's O weighs key j by P_j w_j (feature_spec.h; w_j = 0 when dropped) */
        double wj = af_feat_dropout_weight(&fp, b, h, i, lo + j), pj = s[j] / l * wj, vmax = 0;
        if (p) p[j] = pj;
        const double *restrict v = in->v + (((size_t)b * in->Hkv + g) * in->Skv + lo + j) * Dv;
        double *restrict od = o, *restrict md = mass;
        for (int d = 0; d < Dv; d++) { /* independent d: vectorised */
            od[d] += pj * v[d];
            md[d] += pj * fabs(v[d]);
        }
        for (int d = 0; d < Dv; d++) { /* no call to fmax: v is finite */
            double a = fabs(v[d]);
            vmax = a > vmax ? a : vmax;
        }
        sub += wj * vmax;
    }
    rs->sub_abs = x->c->dtype == AF_DT_FP16 ? 0x1p-25 * sub : 0.0;
    rs->lse = n_vis > 0 ? m + log(l) : -INFINITY;
    rs->score_err = 0x1p-21 * (Dqk + 2) * abs_max;
    free(s);
    free(vis);
    return 0;
}

/* P rounded to the input dtype before P*V costs half its unit (fp16 2^-11, bf16 2^-8,
 * E4M3 2^-4); the bound takes 16x, 8x and 4x that. */
double probe_eps(const af_case *c, double score_err) {
    double e = c->dtype == AF_DT_FP16 ? 0x1p-7 : c->dtype == AF_DT_BF16 ? 0x1p-5 : 0x1p-2;
    return e + 4 * score_err;
}
double probe_ulp(const af_case *c) { return af_output_unit(c, AF_T_O); }
double probe_out_abs(const af_case *c, const af_tensors *t) {
    if (af_dtype_is_fp8_tensor(c->dtype)) /* one subnormal step of the fp8 O */
        return 2 * af_storage_subnormal_half_step(af_case_tensor_storage(c, AF_T_O)) * (double)t->descale_o;
    return c->dtype == AF_DT_FP16 ? 0x1p-24 : 0x1p-126;
}

bool probe_row_checkable(const row_stats *rs) { return rs->score_err < 0x1p-6 && isfinite(rs->lse); }

double probe_o_margin(const row_stats *a, const row_stats *z, double eps1, double m1, double o1, double eps2, double m2,
                      double o2, double ulp, double out_abs) {
    return eps1 * m1 + ulp * fabs(o1) + eps2 * m2 + ulp * fabs(o2) + 2 * out_abs + a->sub_abs +
           z->sub_abs; /* fp16 subnormal P (expect.h) */
}
double probe_o_threshold(double margin, double tol) { return 2 * margin + 2 * tol + 0x1p-20; }
bool probe_o_must_move(double o1, double o2, double threshold) { return fabs(o2 - o1) > threshold; }
