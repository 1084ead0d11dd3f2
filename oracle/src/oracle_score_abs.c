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
#include "util/parfor.h"

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

/* One (batch, query head) of score_abs_host: its rows, each independent of the others. */
typedef struct {
    const af_oracle_problem *p;
    double *out; /* (B, Hq, Sq) */
} score_abs_pass;

static void score_abs_item(void *ctx, long item) {
    const score_abs_pass *x = ctx;
    const af_oracle_problem *p = x->p;
    const af_inputs *in = p->in;
    int b = (int)(item / p->Hq), h = (int)(item % p->Hq), hk = h / (p->Hq / p->Hkv);
    int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
    for (int i = 0; i < lq; i++) {
        af_mask_keys keys;
        if (af_mask_visible_keys(&p->mask, b, lq, lkv, i, &keys) == 0) continue;
        const double *q = in->q + (((size_t)b * p->Hq + h) * p->Sq + i) * p->Dqk; /* (Dqk) */
        double best = 0;
        for (int ks = 0; ks < keys.n; ks++)
            for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                const double *k = in->k + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dqk; /* (Dqk) */
                double sc = 0;
                for (int d = 0; d < p->Dqk; d++) sc += fabs(q[d] * k[d]);
                if (sc > best) best = sc;
            }
        x->out[((size_t)b * p->Hq + h) * p->Sq + i] =
            best * fabs(p->scale); /* a magnitude: the scale may be negative */
    }
}

/* Each row's score magnitude on the host, one (batch, query head) per item on up to
 * af_parfor_threads threads (rows are independent: the same bits on any count). */
static void score_abs_host(const af_oracle_problem *p, double *out) {
    memset(out, 0, (size_t)p->B * p->Hq * p->Sq * sizeof *out);
    score_abs_pass x = {p, out};
    af_parfor((long)p->B * p->Hq, af_parfor_threads(pair_work(p)), score_abs_item, &x);
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
/* One (batch, kv head) of grad_abs_host: its group's query heads and rows in order, so each
 * column sum of colk / colv takes its terms in the serial order and the result is the same
 * bits on any number of threads; the row maxima go to dq[item], ds[item]. */
typedef struct {
    const af_oracle_problem *p;
    const af_outputs *exact;
    double *colk, *colv; /* (B, Hkv, Skv), each item its own (b, hk) slice */
    double *dq, *ds;     /* (B, Hkv) maxima of the item */
} grad_abs_pass;

static void grad_abs_item(void *ctx, long item) {
    const grad_abs_pass *x = ctx;
    const af_oracle_problem *p = x->p;
    const af_inputs *in = p->in;
    int group = p->Hq / p->Hkv, b = (int)(item / p->Hkv), hk = (int)(item % p->Hkv);
    int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
    double dq_max = 0, ds_max = 0;
    for (int h = hk * group; h < (hk + 1) * group; h++) {
        for (int i = 0; i < lq; i++) {
            af_mask_keys keys;
            if (af_mask_visible_keys(&p->mask, b, lq, lkv, i, &keys) == 0) continue;
            size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
            const double *q = in->q + row * p->Dqk;      /* (Dqk) */
            const double *dO = in->dout + row * p->Dv;   /* (Dv) */
            const double *o = x->exact->o + row * p->Dv; /* (Dv) */
            double lse = x->exact->lse[row], dd = 0, dd_abs = 0, qmax = 0, domax = 0, rowq = 0;
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
                    double sc = 0, dp = 0, dp_abs = 0, kmax = 0;
                    for (int d = 0; d < p->Dqk; d++) {
                        sc += q[d] * k[d];
                        if (fabs(k[d]) > kmax) kmax = fabs(k[d]);
                    }
                    for (int d = 0; d < p->Dv; d++) {
                        dp += dO[d] * v[d];
                        dp_abs += fabs(dO[d] * v[d]);
                    }
                    double e = exp(af_feat_score64(p, b, h, i, j, p->scale * sc, NULL) - lse);
                    double ds = fabs(p->scale * e * (dp - dd));
                    if (ds > ds_max) ds_max = ds;
                    double pij = e <= 1.0 ? e : 1.0; /* rounding of exp near 1 */
                    double t = pij * (dp_abs + dd_abs);
                    rowq += fabs(p->scale) * t * kmax; /* magnitudes: the scale may be negative */
                    if (x->colk) x->colk[kr] += fabs(p->scale) * t * qmax;
                    if (x->colv) x->colv[kr] += pij * domax;
                }
            if (rowq > dq_max) dq_max = rowq;
        }
    }
    x->dq[item] = dq_max;
    x->ds[item] = ds_max;
}

/* The gradients' term magnitudes on the host, one (batch, kv head) per item on up to
 * af_parfor_threads threads: the same bits as one thread (grad_abs_item). */
static void grad_abs_host(const af_oracle_problem *p, const af_outputs *exact, af_grad_magnitudes *g) {
    memset(g, 0, sizeof *g);
    const af_inputs *in = p->in;
    if (!in->dout || !exact->o || !exact->lse) return;
    long items = (long)p->B * p->Hkv;
    size_t nk = (size_t)items * p->Skv;
    grad_abs_pass x = {p,
                       exact,
                       calloc(nk ? nk : 1, sizeof(double)),
                       calloc(nk ? nk : 1, sizeof(double)),
                       calloc((size_t)items + 1, sizeof(double)),
                       calloc((size_t)items + 1, sizeof(double))};
    if (!x.dq || !x.ds) {
        g->dq = g->dk = g->dv = g->ds_max = INFINITY; /* out of memory: unknown, so no floor from them is safe */
    } else {
        af_parfor(items, af_parfor_threads(pair_work(p)), grad_abs_item, &x);
        for (long it = 0; it < items; it++) {
            if (x.dq[it] > g->dq) g->dq = x.dq[it];
            if (x.ds[it] > g->ds_max) g->ds_max = x.ds[it];
        }
        for (size_t k = 0; k < nk; k++) {
            if (x.colk && x.colk[k] > g->dk) g->dk = x.colk[k];
            if (x.colv && x.colv[k] > g->dv) g->dv = x.colv[k];
        }
        if (!x.colk) g->dk = INFINITY; /* out of memory: unknown, so no floor from it is safe */
        if (!x.colv) g->dv = INFINITY;
    }
    free(x.colk);
    free(x.colv);
    free(x.dq);
    free(x.ds);
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
