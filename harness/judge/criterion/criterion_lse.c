/* criterion_lse.c — the stored LSE's growth: what recomputing P = exp(s - LSE) from
 * fp32 scores and the kernel's stored fp32 LSE legitimately does to a row whose
 * |LSE| or score magnitude is large (criterion.h states the derivation; verdict.h the
 * rule). Per row, from that row's own rho_i and stored LSE: rows in the linear regime
 * get nothing here. */
#include "judge/criterion/criterion.h"
#include "judge/criterion/criterion_gpu.h"
#include "judge/problem.h"
#include "judge/verdict.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* delta_i = sigma_i + |LSE_kernel,i - LSE_exact,i| (sigma_i = rho_i / 4), or -1 for a
 * row that is not judged (masked, non-finite exact LSE) or whose stored LSE is not
 * finite. */
static double row_delta(const af_criterion_terms *t, const double *kernel_lse, size_t r) {
    double rho = t->rho[r];
    if (!(rho > 0) || !t->lse_exact || !isfinite(t->lse_exact[r])) return -1;
    double e = 0;
    if (kernel_lse) {
        if (!isfinite(kernel_lse[r])) return -1;
        e = fabs(kernel_lse[r] - t->lse_exact[r]);
    }
    return 0.25 * rho + e;
}

double *af_criterion_lse_growth(const af_case *c, const af_criterion_terms *t, const double *kernel_lse) {
    if (!t || !t->ready || !t->rho) return NULL;
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q;
    double *x = NULL;
    for (size_t r = 0; r < nq; r++) {
        double delta = row_delta(t, kernel_lse, r);
        if (!(delta >= 0)) continue;
        double grow = expm1(fmin(delta, AF_LSE_DELTA_CAP)) - t->rho[r];
        if (!(grow > 0)) continue; /* the first-order budget rho_i covers the row */
        if (!x && !(x = calloc(nq, sizeof(double)))) return NULL;
        x[r] = grow;
    }
    return x;
}

/* The largest x_i over the query rows of each (b, hk): index b * Hkv + hk. */
static double *group_max(const af_case *c, const double *x) {
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, group = Hq / Hkv;
    double *m = calloc((size_t)c->batch * Hkv + 1, sizeof(double));
    if (!m) return NULL;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < Sq; i++) {
                double xi = x[((size_t)b * Hq + h) * Sq + i];
                size_t g = (size_t)b * Hkv + h / group;
                if (xi > m[g]) m[g] = xi;
            }
    return m;
}

/* dD_i = |dO_i . (O_kernel,i - O_exact,i)| of row r (the stored O's error inside D). */
static double row_dd(const af_criterion_terms *t, const double *kernel_o, size_t r, int Dv) {
    if (!kernel_o || !t->o_exact || !t->dout) return 0;
    double s = 0;
    for (int d = 0; d < Dv; d++) {
        double ok = kernel_o[r * Dv + d], oe = t->o_exact[r * Dv + d];
        if (isfinite(ok) && isfinite(oe)) s += t->dout[r * Dv + d] * (ok - oe);
    }
    return fabs(s);
}

double *af_criterion_lse_growth_term(const af_case *c, af_tensor_id id, const af_criterion_terms *t, const double *x,
                                     const double *stored_o, const double *kernel_o) {
    if (!x || !t || !t->ready || id == AF_T_LSE || !t->mass[id]) return NULL;
    if (af_criterion_terms_gpu_host_budgets(t) != 0) return NULL; /* left on the device, unreadable */
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv, group = Hq / Hkv;
    int Dqk = c->head_dim_qk, Dv = c->head_dim_v;
    size_t nq = (size_t)c->batch * Hq * Sq, nk = (size_t)c->batch * Hkv * Skv;
    bool kvside = id == AF_T_DK || id == AF_T_DV;
    int D = (id == AF_T_O || id == AF_T_DV) ? Dv : Dqk;
    size_t n = (kvside ? nk : nq) * D;
    double *out = calloc(n + 1, sizeof(double)); /* dense like tensor id */
    if (!out) return NULL;
    const double *mass = t->mass[id], *kappa = t->kappa[id];
    if (!kvside) { /* O_id, dQ_id: every term of the row carries the row's P */
        for (size_t r = 0; r < nq; r++)
            if (x[r] > 0)
                for (int d = 0; d < D; d++) {
                    size_t e = r * D + d;
                    out[e] = x[r] * (mass[e] + kappa[e] + (stored_o ? stored_o[e] : 0));
                }
        return out;
    }
    if (t->prob && t->ds_abs && t->q && t->dout && af_criterion_terms_gpu_host_pds(t) == 0) { /* per (i, j): x_i */
        af_mask_rule rule = af_mask_rule_of_case(c);
        double scale = fabs(af_case_scale(c)); /* a magnitude: the scale may be negative */
        for (int b = 0; b < c->batch; b++) {
            int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b);
            for (int h = 0; h < Hq; h++)
                for (int i = 0; i < lq; i++) {
                    size_t r = ((size_t)b * Hq + h) * Sq + i;
                    af_mask_keys keys;
                    if (!(x[r] > 0) || af_mask_visible_keys(&rule, b, lq, lkv, i, &keys) == 0) continue;
                    const double *q = t->q + r * Dqk, *dO = t->dout + r * Dv; /* (Dqk), (Dv) */
                    double dd = id == AF_T_DK ? row_dd(t, kernel_o, r, Dv) : 0;
                    for (int ks = 0; ks < keys.n; ks++)
                        for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                            double *o = out + (((size_t)b * Hkv + h / group) * Skv + j) * D;
                            double pj = t->prob[r * Skv + j];
                            if (id == AF_T_DV) {
                                double w = x[r] * (1.0 + t->rho[r]) * pj * t->keep_scale; /* w <= 1 / (1 - p) */
                                for (int d = 0; d < Dv; d++) o[d] += w * fabs(dO[d]);
                            } else {
                                double w = x[r] * scale * ((double)t->ds_abs[r * Skv + j] + pj * dd);
                                for (int d = 0; d < Dqk; d++) o[d] += w * fabs(q[d]);
                            }
                        }
                }
        }
        return out;
    }
    /* P not kept (above AF_CRITERION_MAX_PROB): each key takes the largest x_i of its
     * batch and kv group on its whole budget (an upper bound of the per-row sum) */
    double *gm = group_max(c, x);
    if (!gm) {
        free(out);
        return NULL;
    }
    for (size_t kr = 0; kr < nk; kr++)
        for (int d = 0; d < D; d++)
            out[kr * D + d] =
                gm[kr / Skv] * (mass[kr * D + d] + kappa[kr * D + d] + (stored_o ? stored_o[kr * D + d] : 0));
    free(gm);
    return out;
}

int af_criterion_unresolved(const af_case *c, const af_criterion_terms *t, const double *kernel_lse,
                            unsigned char *rows, unsigned char *keys) {
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv, group = Hq / Hkv;
    size_t nq = (size_t)c->batch * Hq * Sq, nk = (size_t)c->batch * Hkv * Skv;
    memset(rows, 0, nq);
    memset(keys, 0, nk);
    if (!t || !t->ready || !t->rho || !t->log_f || !c->backward) return 0;
    af_mask_rule rule = af_mask_rule_of_case(c);
    const double ln_max = log((double)FLT_MAX);
    int count = 0;
    for (int b = 0; b < c->batch; b++) {
        int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b);
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < lq; i++) {
                size_t r = ((size_t)b * Hq + h) * Sq + i;
                double delta = row_delta(t, kernel_lse, r);
                af_mask_keys vis;
                if (!(delta >= 0) || !(delta + t->log_f[r] >= ln_max)) continue;
                if (af_mask_visible_keys(&rule, b, lq, lkv, i, &vis) == 0) continue;
                rows[r] = 1;
                count++;
                for (int ks = 0; ks < vis.n; ks++)
                    for (int j = vis.first[ks]; j <= vis.last[ks]; j++)
                        keys[((size_t)b * Hkv + h / group) * Skv + j] = 1;
            }
    }
    return count;
}

double af_criterion_softcap_err(double softcap, double r_abs) {
    return softcap > 0 ? AF_SOFTCAP_TANH_REL * softcap * tanh(r_abs / softcap) : 0.0;
}

double af_criterion_score_mod_gain(af_score_mod mod, double r_abs) {
    return mod == AF_SCORE_MOD_SQUARED ? fmax(1.0, 2.0 * r_abs) : 1.0;
}

double af_criterion_score_mod_err(af_score_mod mod, double r_abs) {
    switch (mod) {
        case AF_SCORE_MOD_SQUARED:
            return AF_SCORE_MOD_SQR_REL * r_abs * r_abs;
        case AF_SCORE_MOD_TRIG:
            return 2.0 * AF_SCORE_MOD_TRIG_ABS;
        case AF_SCORE_MOD_TRIG2:
            return 2.0 * AF_SCORE_MOD_TRIG_ABS + 0x1p-24;
        default:
            return 0.0;
    }
}

double af_criterion_score_mod_tan_err(af_score_mod mod, int b) {
    if (mod != AF_SCORE_MOD_TRIG && mod != AF_SCORE_MOD_TRIG2) return 0.0;
    double t = tan((double)b);
    return AF_SCORE_MOD_TRIG_ABS * (1.0 + t * t);
}

double af_criterion_score_mod_dgrad_err(af_score_mod mod, double acc_r) {
    if (mod == AF_SCORE_MOD_NONE) return 0.0;
    return 2.0 * acc_r + (mod == AF_SCORE_MOD_SQUARED ? 0.0 : 3.0 * AF_SCORE_MOD_TRIG_ABS + 0x1p-24);
}

double af_criterion_lse_kappa(int head_dim_qk, double score_abs, int n_keys) {
    return 0x1p-21 + af_score_acc_unit(head_dim_qk) * score_abs + 0x1p-24 * sqrt((double)n_keys);
}

int af_criterion_lse_rows_only(const af_case *c, const double *score_abs, af_criterion_terms *t) {
    memset(t, 0, sizeof *t);
    int Hq = c->heads_q, Sq = c->seqlen_q;
    size_t nq = (size_t)c->batch * Hq * Sq;
    double *kappa = calloc(nq ? nq : 1, sizeof(double)); /* (B, Hq, Sq), 0 where no row is judged */
    if (!kappa) return -1;
    af_mask_rule rule = af_mask_rule_of_case(c);
    for (int b = 0; b < c->batch; b++) {
        int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b);
        for (int i = 0; i < lq; i++) {
            af_mask_keys keys;
            int n_keys = af_mask_visible_keys(&rule, b, lq, lkv, i, &keys);
            if (n_keys == 0) continue;
            for (int h = 0; h < Hq; h++) {
                size_t r = ((size_t)b * Hq + h) * Sq + i;
                /* softcap, score_mod: A_i bounds every |r_ij| of the row */
                double gain = af_criterion_score_mod_gain(c->score_mod, score_abs[r]);
                kappa[r] = af_criterion_lse_kappa(c->head_dim_qk, score_abs[r] * gain, n_keys) +
                           af_criterion_softcap_err(c->softcap, score_abs[r]) +
                           af_criterion_score_mod_err(c->score_mod, score_abs[r]) +
                           af_criterion_score_mod_tan_err(c->score_mod, b);
            }
        }
    }
    t->kappa[AF_T_LSE] = kappa;
    t->lse_only = true;
    return 0;
}
