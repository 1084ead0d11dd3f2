/* oracle_cert.c — what the certification of an fp64 tier by MPFR measures: per-element
 * masses M (oracle/README.md, "The error bound") and the gap relative to the stated bound.
 *
 * Row (b, h, i), with P_j = exp(scale q.k_j - LSE_i) over the visible keys j:
 *   M_O[d]  = sum_j P_j |v_jd|            Abar = sum_d |dO_d| M_O[d]
 *   A_j     = sum_d |dO_d v_jd| + Abar    M_dQ[d] = |scale| sum_j P_j A_j |k_jd|
 * Key column (b, g, j), over the rows i of the group's q heads that see key j:
 *   M_dV[d] = sum_i P_ij |dO_id|          M_dK[d] = |scale| sum_i P_ij A_ij |q_id|
 *   with A_ij's Abar_i bounded by sum_d |dO_id| max_j' |v_j'd| (no O row needed).
 * Masses are magnitudes: plain fp64, then widened by 1 % to cover their own rounding.
 *
 * Underflow allowance U of an element (README.md, "Underflow"): each term of its sum
 * carries, from every rounding below the normal range (the weight's exp, the products and
 * quotients after it), at most 2^-1075 times the magnitudes of the factors that follow:
 *   O: (1 + w_j)(1 + max_d |v_jd|)            dQ: (1 + |scale|)(1 + A_j)(1 + max_d |k_jd|)
 *   dV: (1 + w_ij)(1 + max_d |dO_id|)         dK: (1 + |scale|)(1 + A_ij)(1 + max_d |q_id|)
 * with w the dropout weight; U = AF_ORACLE_UNDERFLOW_UNIT (16 such roundings a term) times
 * their sum, one figure for the row's (key column's) elements of a tensor.
 */
#include <math.h>
#include <string.h>
#include "oracle/feature_spec.h"
#include "oracle/src/oracle_internal.h"

#define MASS_WIDEN 1.01

void af_cert_row_mass(const af_oracle_problem *p, int b, int h, int i, double lse, double *m_o, double *m_dq,
                      double uf[2], double *scratch) {
    const af_inputs *in = p->in;
    const int Dqk = p->Dqk, Dv = p->Dv, g = h / (p->Hq / p->Hkv);
    memset(m_o, 0, (size_t)Dv * sizeof *m_o);
    if (m_dq) memset(m_dq, 0, (size_t)Dqk * sizeof *m_dq);
    uf[0] = uf[1] = 0.0;
    af_mask_keys keys; /* at most two intervals (global keys): key jj is af_mask_keys_at */
    int n = af_mask_visible_keys(&p->mask, b, p->len_q[b], p->len_kv[b], i, &keys);
    if (n == 0 || !isfinite(lse)) return;
    const size_t row = af_idx_row(p, b, h, i);
    const double *q = in->q + row * (size_t)Dqk; /* (Dqk) */
    double *pj = scratch;                        /* (n) P_j */
    for (int jj = 0; jj < n; jj++) {
        const double *k = in->k + af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dqk;
        double s = 0.0;
        for (int d = 0; d < Dqk; d++) s += q[d] * k[d];
        pj[jj] = exp(af_feat_score64(p, b, h, i, af_mask_keys_at(&keys, jj), p->scale * s, NULL) - lse);
        if (!af_mask_rule_kept(&p->mask, b, i, af_mask_keys_at(&keys, jj))) pj[jj] = 0.0; /* dropped (mask_spec.h) */
        /* dropout: O's terms are P_j w_j v_j (feature_spec.h) */
        double w = af_feat_dropout_weight(p, b, h, i, af_mask_keys_at(&keys, jj)), pw = pj[jj] * w, vmax = 0.0;
        const double *v = in->v + af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dv;
        for (int d = 0; d < Dv; d++) m_o[d] += pw * fabs(v[d]), vmax = fmax(vmax, fabs(v[d]));
        uf[0] += (1.0 + w) * (1.0 + vmax);
    }
    if (m_dq && in->dout) {
        const double *dout = in->dout + row * (size_t)Dv; /* (Dv) */
        double abar = 0.0;
        for (int d = 0; d < Dv; d++) abar += fabs(dout[d]) * m_o[d];
        for (int jj = 0; jj < n; jj++) {
            const double *v = in->v + af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dv;
            const double *k = in->k + af_idx_key(p, b, g, af_mask_keys_at(&keys, jj)) * (size_t)Dqk;
            double a = 0.0, wj = af_feat_dropout_weight(p, b, h, i,
                                                        af_mask_keys_at(&keys, jj)); /* dS_j = P_j (w_j dO.v_j - D) */
            for (int d = 0; d < Dv; d++) a += fabs(dout[d] * v[d]);
            a = wj * a + abar;
            double w = fabs(p->scale) * pj[jj] * a, kmax = 0.0;
            for (int d = 0; d < Dqk; d++) m_dq[d] += w * fabs(k[d]), kmax = fmax(kmax, fabs(k[d]));
            uf[1] += (1.0 + fabs(p->scale)) * (1.0 + a) * (1.0 + kmax);
        }
        for (int d = 0; d < Dqk; d++) m_dq[d] *= MASS_WIDEN;
    }
    for (int d = 0; d < Dv; d++) m_o[d] *= MASS_WIDEN;
    uf[0] *= MASS_WIDEN * AF_ORACLE_UNDERFLOW_UNIT;
    uf[1] *= MASS_WIDEN * AF_ORACLE_UNDERFLOW_UNIT;
}

void af_cert_key_mass(const af_oracle_problem *p, const double *lse64, int b, int g, int j, double *m_dk, double *m_dv,
                      double uf[2], double *scratch) {
    const af_inputs *in = p->in;
    const int Dqk = p->Dqk, Dv = p->Dv, group = p->Hq / p->Hkv;
    memset(m_dk, 0, (size_t)Dqk * sizeof *m_dk);
    memset(m_dv, 0, (size_t)Dv * sizeof *m_dv);
    uf[0] = uf[1] = 0.0;
    int r0, r1;
    if (!in->dout || af_mask_rows_seeing_key(&p->mask, p->len_q[b], p->len_kv[b], j, &r0, &r1) == 0) return;
    double *vmax = scratch; /* (Dv) max over the sequence's keys of |v_d| */
    memset(vmax, 0, (size_t)Dv * sizeof *vmax);
    for (int jj = 0; jj < p->len_kv[b]; jj++) {
        const double *v = in->v + af_idx_key(p, b, g, jj) * (size_t)Dv;
        for (int d = 0; d < Dv; d++) vmax[d] = fmax(vmax[d], fabs(v[d]));
    }
    const size_t key = af_idx_key(p, b, g, j);
    const double *k = in->k + key * (size_t)Dqk; /* (Dqk) */
    const double *v = in->v + key * (size_t)Dv;  /* (Dv) */
    for (int hh = 0; hh < group; hh++) {
        int h = g * group + hh;
        for (int i = r0; i <= r1; i++) {
            if (!af_mask_rule_kept(&p->mask, b, i, j)) continue; /* dropped: P_ij = 0 */
            size_t row = af_idx_row(p, b, h, i);
            if (!isfinite(lse64[row])) continue;
            const double *q = in->q + row * (size_t)Dqk;
            const double *dout = in->dout + row * (size_t)Dv;
            double s = 0.0, a = 0.0, qmax = 0.0, domax = 0.0;
            for (int d = 0; d < Dqk; d++) s += q[d] * k[d], qmax = fmax(qmax, fabs(q[d]));
            double pij = exp(af_feat_score64(p, b, h, i, j, p->scale * s, NULL) - lse64[row]);
            /* dropout: dV's and dP's terms carry w_ij; O (inside Abar) carries at most 1 / (1 - p) */
            double keep_scale = 1.0 / (1.0 - in->feat.dropout_p), w = af_feat_dropout_weight(p, b, h, i, j);
            for (int d = 0; d < Dv; d++) a += w * fabs(dout[d] * v[d]) + keep_scale * fabs(dout[d]) * vmax[d];
            double wk = fabs(p->scale) * pij * a;
            for (int d = 0; d < Dqk; d++) m_dk[d] += wk * fabs(q[d]);
            for (int d = 0; d < Dv; d++) m_dv[d] += pij * w * fabs(dout[d]), domax = fmax(domax, fabs(dout[d]));
            uf[0] += (1.0 + fabs(p->scale)) * (1.0 + a) * (1.0 + qmax);
            uf[1] += (1.0 + w) * (1.0 + domax);
        }
    }
    for (int d = 0; d < Dqk; d++) m_dk[d] *= MASS_WIDEN;
    for (int d = 0; d < Dv; d++) m_dv[d] *= MASS_WIDEN;
    uf[0] *= MASS_WIDEN * AF_ORACLE_UNDERFLOW_UNIT;
    uf[1] *= MASS_WIDEN * AF_ORACLE_UNDERFLOW_UNIT;
}

double af_cert_ratio(const double *x, const double *ref, int n, const double *mass, double rel, double abs_scale,
                     double uf) {
    double worst = 0.0;
    for (int d = 0; d < n; d++) {
        if (x[d] == ref[d]) continue;
        double den = rel * fabs(x[d]) + 0x1p-53 * fabs(ref[d]) + abs_scale * mass[d] + uf + 0x1p-1074;
        double ratio = fabs(x[d] - ref[d]) / den; /* NaN when one side is NaN or inf */
        if (!(ratio <= worst)) worst = isnan(ratio) ? INFINITY : ratio;
    }
    return worst;
}

double af_cert_gap(const double *x, const double *ref, int n, double mass, double uf) {
    double diff = 0.0, mag = mass;
    for (int d = 0; d < n; d++) {
        if (fabs(ref[d]) > mag) mag = fabs(ref[d]);
        if (x[d] == ref[d]) continue;
        double e = fabs(x[d] - ref[d]);
        if (!(e <= uf + 0x1p-1074) && !(e <= diff)) diff = isnan(e) ? INFINITY : e;
    }
    if (diff == 0.0) return 0.0;
    return mag > 0.0 ? diff / mag : INFINITY;
}
