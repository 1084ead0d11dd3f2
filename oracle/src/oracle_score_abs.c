/* oracle_score_abs.c — the magnitude of each row's scores, for criteria that depend on
 * how a kernel accumulates Q K^T (fp8: Hopper's FP8 tensor-core accumulator keeps
 * fewer bits than fp32; docs/cudnn-findings.md F5).
 *
 *   out[b, h, i] = max over keys j visible to row i of  scale * sum_d |q[b,h,i,d] k[b,hk,j,d]|
 *                  out: (B, Hq, Sq), 0 for rows past len_q or seeing no key
 *
 * fp64 with absolute values throughout: a magnitude, not a value to judge, so its own
 * rounding (relative 2^-53 * Dqk) does not matter. Visibility comes from the oracle's
 * mask specification (mask_spec.h), like every other oracle quantity.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/src/oracle_internal.h"
#include "oracle/feature_spec.h"
#include "oracle/gpu/oracle_gpu.h"

/* Cases with more (row, key) pairs x head dim than this run on the GPU when one is usable
 * (oracle/gpu/); smaller ones stay on the host, bit for bit as before. */
#define GPU_MAGNITUDE_WORK 1e7

/* Visible (row, key) pairs x (Dqk + Dv), an upper estimate of the pass's work. */
static double pair_work(const af_oracle_problem *p) {
    double pairs = 0.0;
    for (int b = 0; b < p->B; b++) {
        int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
        pairs += (double)lq * (double)lkv;
    }
    return pairs * (double)p->Hq * (double)(p->Dqk + p->Dv);
}

/* True when the GPU should run a magnitude pass of p (NULL lengths: the maxima). */
/* Batches up to this size go to the GPU magnitude passes (larger ones stay on the host). */
#define GPU_MAGNITUDE_MAX_BATCH 256

static bool use_gpu(const af_oracle_problem *p, af_oracle_problem *full, int *lengths, size_t n) {
    char why[160];
    if (af_feat_any(p)) return false; /* the GPU passes compute plain scores only */
    if (pair_work(p) <= GPU_MAGNITUDE_WORK || (size_t)p->B > n / 2) return false;
    if (af_oracle_gpu_usable(why, sizeof why) != 0) return false;
    *full = *p;
    for (int b = 0; b < p->B; b++) {
        lengths[b] = p->len_q ? p->len_q[b] : p->Sq;
        lengths[p->B + b] = p->len_kv ? p->len_kv[b] : p->Skv;
    }
    full->len_q = lengths;
    full->len_kv = lengths + p->B;
    return af_oracle_gpu_supports(full, why, sizeof why) == 0;
}

static void score_abs_host(const af_oracle_problem *p, double *out) {
    const af_inputs *in = p->in;
    int group = p->Hq / p->Hkv;
    memset(out, 0, (size_t)p->B * p->Hq * p->Sq * sizeof *out);
    for (int b = 0; b < p->B; b++) {
        int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
        for (int h = 0; h < p->Hq; h++) {
            int hk = h / group;
            for (int i = 0; i < lq; i++) {
                af_mask_keys keys;
                if (af_mask_visible_keys(&p->mask, b, lq, lkv, i, &keys) == 0) continue;
                const double *q = in->q + (((size_t)b * p->Hq + h) * p->Sq + i) * p->Dqk; /* (Dqk) */
                double best = 0;
                for (int ks = 0; ks < keys.n; ks++)
                    for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                        const double *k = in->k + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dqk; /* (Dqk) */
                        double s = 0;
                        for (int d = 0; d < p->Dqk; d++) s += fabs(q[d] * k[d]);
                        if (s > best) best = s;
                    }
                out[((size_t)b * p->Hq + h) * p->Sq + i] =
                    best * fabs(p->scale); /* a magnitude: the scale may be negative */
            }
        }
    }
}

/* The term magnitudes of the gradients, per tensor (max over its elements):
 *   dS_ij = scale P_ij (dP_ij - D_i),  dP_ij = dO_i . v_j,  D_i = dO_i . O_i
 *   M_dQ = max_i  scale * sum_j P_ij (|dO_i|.|v_j| + |dO_i|.|O_i|) max_d |k_jd|
 *   M_dK = max_j  scale * sum_i P_ij (|dO_i|.|v_j| + |dO_i|.|O_i|) max_d |q_id|
 *   M_dV = max_j  sum_i P_ij max_d |dO_id|
 * (|a|.|b| = sum_d |a_d b_d|; P_ij = exp(S_ij - LSE_i) from the exact LSE and O.)
 * A gradient that cancels to ~0 (one visible key: P = 1, dP = D) is computed by any
 * kernel from terms of this size, so its rounding noise scales with M, not with the
 * exact value. The same pass gives max |dS| (fp8: the scale of the kernel's E4M3 dS).
 * Zeros without backward. */
static void grad_abs_host(const af_oracle_problem *p, const af_outputs *exact, af_grad_magnitudes *g) {
    memset(g, 0, sizeof *g);
    const af_inputs *in = p->in;
    if (!in->dout || !exact->o || !exact->lse) return;
    int group = p->Hq / p->Hkv;
    size_t nk = (size_t)p->B * p->Hkv * p->Skv;
    double *colk = calloc(nk, sizeof *colk), *colv = calloc(nk, sizeof *colv); /* (B, Hkv, Skv) */
    for (int b = 0; b < p->B; b++) {
        int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
        for (int h = 0; h < p->Hq; h++) {
            int hk = h / group;
            for (int i = 0; i < lq; i++) {
                af_mask_keys keys;
                if (af_mask_visible_keys(&p->mask, b, lq, lkv, i, &keys) == 0) continue;
                size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
                const double *q = in->q + row * p->Dqk;    /* (Dqk) */
                const double *dO = in->dout + row * p->Dv; /* (Dv) */
                const double *o = exact->o + row * p->Dv;  /* (Dv) */
                double lse = exact->lse[row], dd = 0, dd_abs = 0, qmax = 0, domax = 0, rowq = 0;
                for (int d = 0; d < p->Dv; d++) {
                    dd += dO[d] * o[d]; /* D_i; its dLSE term follows the loop */
                    dd_abs += fabs(dO[d] * o[d]);
                    if (fabs(dO[d]) > domax) domax = fabs(dO[d]);
                }
                dd -= af_feat_dlse_nat(p, b, h, i);
                dd_abs += fabs(af_feat_dlse_nat(p, b, h, i));
                for (int d = 0; d < p->Dqk; d++)
                    if (fabs(q[d]) > qmax) qmax = fabs(q[d]);
                for (int ks = 0; ks < keys.n; ks++)
                    for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                        if (!af_mask_rule_kept(&p->mask, b, i, j)) continue; /* dropped: P_ij = 0 */
                        size_t kr = ((size_t)b * p->Hkv + hk) * p->Skv + j;
                        const double *k = in->k + kr * p->Dqk; /* (Dqk) */
                        const double *v = in->v + kr * p->Dv;  /* (Dv) */
                        double s = 0, dp = 0, dp_abs = 0, kmax = 0;
                        for (int d = 0; d < p->Dqk; d++) {
                            s += q[d] * k[d];
                            if (fabs(k[d]) > kmax) kmax = fabs(k[d]);
                        }
                        for (int d = 0; d < p->Dv; d++) {
                            dp += dO[d] * v[d];
                            dp_abs += fabs(dO[d] * v[d]);
                        }
                        double e = exp(af_feat_score64(p, b, h, i, j, p->scale * s, NULL) - lse);
                        double ds = fabs(p->scale * e * (dp - dd));
                        if (ds > g->ds_max) g->ds_max = ds;
                        double pij = e <= 1.0 ? e : 1.0; /* rounding of exp near 1 */
                        double t = pij * (dp_abs + dd_abs);
                        rowq += fabs(p->scale) * t * kmax; /* magnitudes: the scale may be negative */
                        if (colk) colk[kr] += fabs(p->scale) * t * qmax;
                        if (colv) colv[kr] += pij * domax;
                    }
                if (rowq > g->dq) g->dq = rowq;
            }
        }
    }
    for (size_t x = 0; x < nk; x++) {
        if (colk && colk[x] > g->dk) g->dk = colk[x];
        if (colv && colv[x] > g->dv) g->dv = colv[x];
    }
    if (!colk) g->dk = INFINITY; /* out of memory: unknown, so no floor from it is safe */
    if (!colv) g->dv = INFINITY;
    free(colk);
    free(colv);
}

void af_oracle_score_abs(const af_oracle_problem *p, double *out) {
    af_oracle_problem full;
    int lengths[2 * GPU_MAGNITUDE_MAX_BATCH];
    char why[256];
    if (use_gpu(p, &full, lengths, sizeof lengths / sizeof lengths[0]) &&
        af_oracle_gpu_score_abs(&full, out, why, sizeof why) == 0)
        return;
    score_abs_host(p, out);
}

void af_oracle_grad_abs(const af_oracle_problem *p, const af_outputs *exact, af_grad_magnitudes *g) {
    af_oracle_problem full;
    int lengths[2 * GPU_MAGNITUDE_MAX_BATCH];
    char why[256];
    if (af_oracle_split_v(p)) { /* through the shared-head problem (oracle_heads_v.c) */
        af_oracle_problem wide;
        af_inputs wide_in;
        memset(g, 0, sizeof *g);
        if (af_oracle_widen_v(p, &wide, &wide_in) != 0) {
            g->dq = g->dk = g->dv = g->ds_max = INFINITY; /* unknown: no floor from it is safe */
        } else {
            af_oracle_grad_abs(&wide, exact, g);  /* reads only exact's O and LSE: the same per query head */
            g->dk *= (double)(wide.Hkv / p->Hkv); /* a dK (dV) element sums L / Hkv (L / Hv) wide columns */
            g->dv *= (double)(wide.Hkv / p->Hv);
        }
        af_oracle_widen_release(&wide_in);
        return;
    }
    if (p->in->dout && use_gpu(p, &full, lengths, sizeof lengths / sizeof lengths[0]) &&
        af_oracle_gpu_grad_abs(&full, exact, g, why, sizeof why) == 0)
        return;
    grad_abs_host(p, exact, g);
}
