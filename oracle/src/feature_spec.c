/* feature_spec.c — the fp64 pieces of oracle/feature_spec.h (the MPFR tier composes the
 * same formulas at its own precision in oracle_mpfr.c). */
#include "oracle/feature_spec.h"
#include "oracle/dropout_spec.h"

#include <math.h>
#include <stdlib.h>

bool af_feat_dropout_kept(const af_oracle_problem *p, int b, int h, int i, int j) {
    const af_features *f = &p->in->feat;
    if (f->dropout_p == 0.0) return true;
    if (f->dropout_keep) /* the kernel's own mask, given (dense.h) */
        return f->dropout_keep[(((size_t)b * (size_t)p->Hq + (size_t)h) * (size_t)p->Sq + (size_t)i) * (size_t)p->Skv +
                               (size_t)j] != 0;
    /* the element index uses the maximum lengths (Sq, Skv), as model/dropout.h states */
    return !af_oracle_dropout_dropped(f->dropout_seed, f->dropout_offset, f->dropout_p, p->Hq, p->Sq, p->Skv, b, h, i,
                                      j);
}

double af_feat_dropout_weight(const af_oracle_problem *p, int b, int h, int i, int j) {
    const af_features *f = &p->in->feat;
    if (f->dropout_p == 0.0) return 1.0;
    return af_feat_dropout_kept(p, b, h, i, j) ? 1.0 / (1.0 - f->dropout_p) : 0.0;
}

double af_feat_additive(const af_oracle_problem *p, int b, int h, int i, int j) {
    const af_inputs *in = p->in;
    const af_features *f = &in->feat;
    double add = 0.0;
    if (f->bias_b) {
        int bb = f->bias_b == 1 ? 0 : b, hb = f->bias_h == 1 ? 0 : h, ib = f->bias_q == 1 ? 0 : i;
        add +=
            in->bias[(((size_t)bb * (size_t)f->bias_h + (size_t)hb) * (size_t)f->bias_q + (size_t)ib) * (size_t)p->Skv +
                     (size_t)j];
    }
    if (f->alibi) {
        long dist = (long)j - ((long)i + p->len_kv[b] - p->len_q[b]);
        double slope = in->alibi_slope[(size_t)(f->alibi_b == 1 ? 0 : b) * (size_t)p->Hq + (size_t)h];
        /* fp32 slope times an integer < 2^31: exact */
        add += f->alibi_signed ? slope * (double)dist : -slope * (double)labs(dist);
    }
    return add;
}

double af_feat_score_mod64(const af_oracle_problem *p, int b, double r, double *dt_dr) {
    double t = r, d = 1.0;
    switch (p->in->feat.score_mod) {
        case AF_SCORE_MOD_NONE:
            break;
        case AF_SCORE_MOD_SQUARED:
            t = r * r;
            d = 2.0 * r;
            break;
        case AF_SCORE_MOD_TRIG: {
            double cr = cos(r);
            t = sin(cr) + tan((double)b);
            d = -sin(r) * cos(cr);
            break;
        }
        case AF_SCORE_MOD_TRIG2: {
            double cr = cos(r), sr = sin(r);
            t = cr * sr + tan((double)b);
            d = cr * cr - sr * sr;
            break;
        }
    }
    if (dt_dr) *dt_dr = d;
    return t;
}

double af_feat_score64(const af_oracle_problem *p, int b, int h, int i, int j, double r, double *dt_dr) {
    double c = p->in->feat.softcap, t = r;
    if (c != 0.0) {
        double th = tanh(r / c);
        t = c * th;
        if (dt_dr) *dt_dr = 1.0 - th * th;
    } else {
        t = af_feat_score_mod64(p, b, r, dt_dr); /* r and 1 without a score_mod */
    }
    return t + af_feat_additive(p, b, h, i, j);
}

double af_feat_score_bound(const af_oracle_problem *p, double sigma_r) {
    switch (p->in->feat.score_mod) {
        case AF_SCORE_MOD_SQUARED:
            return 3.0 * sigma_r * sigma_r;
        case AF_SCORE_MOD_TRIG:
        case AF_SCORE_MOD_TRIG2: {
            double tan_max = 0.0;
            for (int b = 0; b < p->B; b++) tan_max = fmax(tan_max, fabs(tan((double)b)));
            return 1.0 + tan_max + sigma_r;
        }
        default:
            return sigma_r;
    }
}

double af_feat_sink(const af_oracle_problem *p, int h) { return p->in->feat.sink ? p->in->sink[h] : -INFINITY; }

double af_feat_dlse_nat(const af_oracle_problem *p, int b, int h, int i) {
    if (!p->in->dlse) return 0.0;
    double g = p->in->dlse[((size_t)b * (size_t)p->Hq + (size_t)h) * (size_t)p->Sq + (size_t)i];
    return p->in->feat.lse_base2 ? g / 0.69314718055994530942 : g;
}

double af_feat_additive_bound(const af_oracle_problem *p) {
    const af_inputs *in = p->in;
    const af_features *f = &in->feat;
    double m = 0.0;
    if (f->bias_b) {
        size_t n = (size_t)f->bias_b * (size_t)f->bias_h * (size_t)f->bias_q * (size_t)p->Skv;
        for (size_t k = 0; k < n; k++) m = fmax(m, fabs(in->bias[k]));
    }
    if (f->alibi) {
        double smax = 0.0;
        for (size_t k = 0; k < (size_t)f->alibi_b * (size_t)p->Hq; k++) smax = fmax(smax, fabs(in->alibi_slope[k]));
        m += smax * (double)(p->Sq + p->Skv);
    }
    if (f->sink)
        for (int h = 0; h < p->Hq; h++) m = fmax(m, fabs(in->sink[h]));
    return m;
}
