/* criterion.c — per-row, per-element and bias judgement of fp16/bf16 outputs (verdict.h
 * states the rule; criterion.h defines the term budgets computed here). */
#include "judge/criterion/criterion.h"
#include "judge/criterion/criterion_cp.h"
#include "judge/criterion/criterion_gpu.h"
#include "judge/problem.h"
#include "judge/tolerance.h"
#include "judge/verdict.h"
#include "model/case_measure.h"
#include "oracle/feature_spec.h"
#include "oracle/gpu/oracle_gpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *af_check_name(af_check_kind k) {
    static const char *const names[] = {"row", "element", "row bias", "tensor bias"};
    return k <= AF_CHECK_TENSOR_BIAS ? names[k] : "?";
}

void af_criterion_terms_free(af_criterion_terms *t) {
    for (int i = 0; i < AF_T_COUNT; i++) {
        free(t->mass[i]);
        free(t->kappa[i]);
        free(t->sig2[i]);
        free(t->cast_sq[i]);
    }
    free(t->fp8_score_o);
    free(t->kq);
    free(t->wq);
    free(t->prob);
    free(t->ds_abs);
    free(t->rho);
    free(t->log_f);
    free(t->row_kq);
    free(t->key_wq);
    free(t->lse_rowsum);
    af_criterion_terms_gpu_release(t->dev);
    memset(t, 0, sizeof *t);
}

static double sgn(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }

/* fp32 accumulation bias of an n-term sum, relative to its mass: tensor cores truncate
 * the fp32 accumulator once per MMA step of 16 (Fasi et al. 2021), 2^-23 each. */
static double accumulation_bias(long long n) { return ((double)n / 16.0 + 1.0) * 0x1p-23; }

/* GQA, fp16: a backward kernel may store each query head's dK and dV partials in the dtype
 * before it sums the group (measured on cuDNN, docs/criterion.md "Subnormal P in dV": 81 of
 * 82 key blocks of 60d738c3ea17 match only that model for dV; dK equal to the fp16 sum of
 * fp16 per-head partials in 18000 of 18000 elements, docs/cudnn-findings.md "The open
 * questions of 2026-12-05"). A partial's rounding is relative (the element rule's unit
 * share of the mass) or, below 2^-14, 2^-25 absolute: the latter, once per head of the
 * group, per dK and dV element. 0 without GQA or fp16. */
static double gqa_partials(const af_oracle_problem *p, bool fp16) {
    return fp16 && p->Hq > p->Hkv ? (double)(p->Hq / p->Hkv) * 0x1p-25 : 0.0;
}

typedef struct {
    const af_oracle_problem *p;
    const af_outputs *ex;
    double unit; /* dtype unit: P, dS and the outputs round to it */
    bool fp16;   /* subnormal P, dS below 2^-14 */
    af_criterion_terms *t;
    double *prob, *ds, *g, *wk; /* (Skv) per-row scratch */
    double *w;                  /* (Skv) dropout weight w_ij of the row's keys (1 without) */
    double *th2;                /* (Skv) softcap: tanh(r_ij / c)^2 of the row's keys (0 without) */
    double *gain;               /* (Skv) max(1, |dt/dr|) of the row's keys: how far |dR| may exceed
                                   |dS| (1 but for a score_mod: squared's 2 |r| above 1) */
    double keep_fp32;           /* 2^-23 with dropout (fp32 keep factor and its product), else 0 */
    double *hull;               /* (Dv) fp8: max_j |w_ij v_jd - O_id| of the row (fp8_score_o) */
    long long *seen;            /* (B, Hkv, Skv) terms summed into each dK/dV row */
} terms_ctx;

static bool alloc_all(af_criterion_terms *t, int id, size_t elems, size_t rows) {
    t->mass[id] = calloc(elems ? elems : 1, sizeof(double));
    t->kappa[id] = calloc(elems ? elems : 1, sizeof(double));
    t->sig2[id] = calloc(rows ? rows : 1, sizeof(double));
    return t->mass[id] && t->kappa[id] && t->sig2[id];
}

/* fp8: the share of one query row's O (Dv) that a score error of eps = AF_FP8_SCORE_UNIT
 * a_row on every key can move (criterion.h fp8_score_o). Each weight P_ij moves by a
 * factor within e^(+-2 eps) (its own score and the normaliser), and the weights' sum stays
 * 1, so O_d moves by sum_j (P'_ij - P_ij)(w_ij v_jd - O_d): at most (e^(2 eps) - 1) sum_j
 * P_ij |w_ij v_jd - O_d|; and O'_d stays a convex combination of the w_ij v_jd, so never
 * further than the farthest of them. A sink is a key of value 0 whose logit has no error. */
static void fp8_score_row(terms_ctx *x, int b, int h, int hk, const af_mask_keys *keys, double a_row, double lse,
                          const double *o, double *out) {
    const af_oracle_problem *p = x->p;
    const af_inputs *in = p->in;
    double f = expm1(fmin(2.0 * AF_FP8_SCORE_UNIT * a_row, 700.0));
    for (int d = 0; d < p->Dv; d++) out[d] = x->hull[d] = 0.0;
    for (int ks = 0; ks < keys->n; ks++)
        for (int j = keys->first[ks]; j <= keys->last[ks]; j++) {
            double pj = x->prob[j];
            if (!(pj > 0)) continue;
            const double *v = in->v + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dv;
            for (int d = 0; d < p->Dv; d++) {
                double dev = fabs(x->w[j] * v[d] - o[d]);
                out[d] += pj * dev;
                x->hull[d] = fmax(x->hull[d], dev);
            }
        }
    double ps = in->feat.sink && in->sink ? exp(in->sink[h] - lse) : 0.0;
    for (int d = 0; d < p->Dv; d++) {
        if (ps > 0) {
            out[d] += ps * fabs(o[d]);
            x->hull[d] = fmax(x->hull[d], fabs(o[d]));
        }
        out[d] = fmin(f * out[d], x->hull[d]);
    }
}

/* One visible query row (b, h, i) seeing the n keys of `keys` (at most two intervals;
 * the scratch is indexed by key, 0 .. Skv - 1): its O (and dQ) budgets in
 * full, its LSE budget, and its share of every dK, dV row it touches. */
static void row_terms(terms_ctx *x, int b, int h, int i, int lq, const af_mask_keys *keys_p, int n) {
    const af_oracle_problem *p = x->p;
    const af_inputs *in = p->in;
    af_criterion_terms *t = x->t;
    (void)lq;
    int hk = h / (p->Hq / p->Hkv);
    const af_mask_keys keys = *keys_p;
    size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
    const double *q = in->q + row * p->Dqk, *o = x->ex->o + row * p->Dv; /* (Dqk), (Dv) */
    double lse = x->ex->lse[row];
    double A = 0, m = -INFINITY, R = 0; /* R: max_j |r_ij|, the raw scores' magnitude */
    bool drops = af_mask_rule_drops(&p->mask);
    for (int ks = 0; ks < keys.n; ks++)
        for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
            if (drops && !af_mask_rule_kept(&p->mask, b, i, j)) {
                /* a key the drops take (block_mask, custom_mask): no term, P = 0 (keys is
                 * the row's envelope; its score is no part of the softmax) */
                x->prob[j] = x->w[j] = x->th2[j] = 0.0;
                x->gain[j] = 1.0;
                continue;
            }
            const double *k = in->k + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dqk;
            double s = 0, a = 0;
            for (int d = 0; d < p->Dqk; d++) {
                s += q[d] * k[d];
                a += fabs(q[d] * k[d]);
            }
            double r = s * p->scale, dt_dr = 1.0;
            s = af_feat_score64(p, b, h, i, j, r, &dt_dr); /* features: feature_spec.h */
            a *= fabs(p->scale);                           /* a magnitude: the scale may be negative */
            if (a > A) A = a;
            if (fabs(r) > R) R = fabs(r);
            /* dt/dr is softcap's 1 - tanh^2 in [0, 1], a score_mod's f'(r) of any size and
             * sign (feature_spec.h), else 1 */
            x->th2[j] = p->in->feat.softcap != 0.0 ? 1.0 - dt_dr : 0.0; /* softcap: tanh(r / c)^2 */
            x->gain[j] = fmax(1.0, fabs(dt_dr));
            if (s > m) m = s;
            x->prob[j] = exp(s - lse);
            x->w[j] = af_feat_dropout_weight(p, b, h, i, j); /* criterion.h: dropout */
        }
    af_score_mod mod = p->in->feat.score_mod;
    /* the fp32 score's error (verdict.h) on r, carried to t = f(r) by |f'| (score_mod) */
    double acc_r = af_score_acc_unit(p->Dqk) * A, score_gain = af_criterion_score_mod_gain(mod, R);
    double acc = acc_r * score_gain;
    /* softcap: an approximate tanh moves every score by up to tc (verdict.h), so each P by
     * up to 2 tc relative (its own score and the row's normaliser) and the LSE by tc; a
     * score_mod's fp32 f likewise by up to fe, and its tan(b) the LSE alone (one constant
     * of the row) */
    double tc = af_criterion_softcap_err(p->in->feat.softcap, R);
    double fe = af_criterion_score_mod_err(mod, R);
    double rho = 0x1p-21 * (1.0 + fabs(lse)) + acc + 2.0 * tc + 2.0 * fe;
    /* fp16: a kernel rounds the unnormalised exp(s - m*) to the dtype, below 2^-14 by 2^-25
     * absolute; m* is its running max, which starts at the sink's logit when the row has one
     * (the cpu reference's, FA3's and FlashInfer's sinks): per P term, in normalised units */
    double m_run = in->feat.sink && in->sink ? fmax(m, in->sink[h]) : m;
    double sub = x->fp16 ? 0x1p-25 * exp(m_run - lse) : 0.0;
    double gam = accumulation_bias(n);
    t->rho[row] = rho;
    t->kappa[AF_T_LSE][row] =
        af_criterion_lse_kappa(p->Dqk, A * score_gain, n) + tc + fe + af_criterion_score_mod_tan_err(mod, b);
    /* O row: mass, kappa, sig2 */
    double *om = t->mass[AF_T_O] + row * p->Dv, *ok = t->kappa[AF_T_O] + row * p->Dv;
    double *osq = t->cast_sq[AF_T_O] ? t->cast_sq[AF_T_O] + row * p->Dv : NULL;
    double sig2 = 0;
    for (int ks = 0; ks < keys.n; ks++)
        for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
            const double *v = in->v + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dv;
            double wj = x->w[j], pj = x->prob[j] * wj, c = 0; /* the term's weight P w */
            for (int d = 0; d < p->Dv; d++) {
                om[d] += pj * fabs(v[d]);
                ok[d] += wj * sub * fabs(v[d]);
                c += sgn(o[d]) * v[d];
            }
            if (osq)
                for (int d = 0; d < p->Dv; d++) osq[d] += (pj * v[d]) * (pj * v[d]);
            sig2 += pj * c * pj * c;
        }
    for (int d = 0; d < p->Dv; d++) ok[d] += (rho + gam + x->keep_fp32) * om[d];
    t->sig2[AF_T_O][row] = sig2;
    if (t->fp8_score_o) fp8_score_row(x, b, h, hk, &keys, A * score_gain, lse, o, t->fp8_score_o + row * p->Dv);
    if (!in->dout || !x->ex->dq) return;
    /* backward: dS and its budgets; the stored O's share of D_i is added when judging
     * (af_criterion_tensor), from the O the kernel wrote */
    const double *dO = in->dout + row * p->Dv;
    double D = 0, dd_abs = 0, do_max = 0, q_max = 0, k_max = 0, p_max = 0, w_max = 0;
    for (int d = 0; d < p->Dv; d++) {
        D += dO[d] * o[d];
        dd_abs += fabs(dO[d] * o[d]);
        do_max = fmax(do_max, fabs(dO[d]));
    }
    /* dlse: D_i = dO_i . O_i - g_i (feature_spec.h), so dS_ij = P_ij (dP_ij - D_i) carries
     * g_i, and its budgets (P's error times |dS|, the term mass) with it */
    double g_i = af_feat_dlse_nat(p, b, h, i);
    D -= g_i;
    dd_abs += fabs(g_i);
    for (int d = 0; d < p->Dqk; d++) q_max = fmax(q_max, fabs(q[d]));
    for (int ks = 0; ks < keys.n; ks++)
        for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
            const double *v = in->v + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dv;
            double dp = 0, dp_abs = 0;
            for (int d = 0; d < p->Dv; d++) {
                dp += dO[d] * v[d];
                dp_abs += fabs(dO[d] * v[d]);
            }
            double pj = x->prob[j], wj = x->w[j];
            dp *= wj; /* dropout: dP_ij = w_ij dO_i . v_j */
            dp_abs *= wj;
            x->ds[j] = pj * (dp - D);
            x->g[j] = pj * (dp_abs + dd_abs); /* the term mass of dS */
            /* P's relative error moves dS by as much; dP and D in fp32 (2^-22 of their terms);
         * the cancellation floor AF_GRAD_CANCEL_UNIT of the term mass (verdict.h); the
         * fp32 keep factor on dP (dropout) */
            x->wk[j] = rho * fabs(x->ds[j]) + (0x1p-22 + AF_GRAD_CANCEL_UNIT) * x->g[j] + x->keep_fp32 * pj * dp_abs;
            /* softcap: the derivative 1 - tanh^2 from an approximate tanh, off by up to 2
         * AF_SOFTCAP_TANH_REL tanh^2 (verdict.h) */
            x->wk[j] += 2.0 * AF_SOFTCAP_TANH_REL * x->th2[j] * fabs(x->ds[j]);
            /* fp16: a kernel that rounds P to the dtype inside dS (docs/targets.md: torch's
         * efficient and cudnn kernels) rounds a P below 2^-14 to a subnormal, 2^-25 absolute:
         * dS moves by up to 2^-25 |dP - D| */
            if (x->fp16 && pj < 0x1p-14) x->wk[j] += 0x1p-25 * fabs(dp - D);
            if (t->prob) t->prob[row * p->Skv + j] = (float)pj;
            if (t->ds_abs) /* dS and its budget: what the P of the term carries */
                t->ds_abs[row * p->Skv + j] = (float)fmin(fabs(x->ds[j]) + x->wk[j], 0x1.fffffep127);
            const double *k = in->k + (((size_t)b * p->Hkv + hk) * p->Skv + j) * p->Dqk;
            for (int d = 0; d < p->Dqk; d++) k_max = fmax(k_max, fabs(k[d]));
            p_max = fmax(p_max, pj);
            w_max = fmax(w_max, dp_abs + dd_abs);
        }
    /* F_i bounds every fp32 intermediate of the row's backward with exact P: P, dS = P (dP
     * - D), its products with scale k, scale q, and dO's with P, and the sums of up to n +
     * Sq Hq terms that collect them (criterion.h: the stored LSE's growth) */
    t->log_f[row] = log(fmax(p_max, 1e-300)) + log1p(w_max) + log1p(fabs(p->scale) * (k_max + q_max) + do_max) +
                    log((double)n + (double)p->Sq * p->Hq);
    double sub_s = x->fp16 ? 0x1p-25 * fmax(fabs(p->scale), 1.0) : 0.0; /* per dS term, scaled units */
    /* score_mod: dR = dS f'(r), with f' from the kernel's own r and fp32 functions, off by
     * up to df (verdict.h) */
    double df = af_criterion_score_mod_dgrad_err(mod, acc_r);
    const double *dq_ex = x->ex->dq + row * p->Dqk;
    double *qm = t->mass[AF_T_DQ] + row * p->Dqk, *qk = t->kappa[AF_T_DQ] + row * p->Dqk;
    double *kq = t->kq + row * p->Dqk;
    double sig2_q = 0;
    for (int ks = 0; ks < keys.n; ks++)
        for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
            size_t kr = ((size_t)b * p->Hkv + hk) * p->Skv + j;
            const double *k = in->k + kr * p->Dqk;
            double gj = x->gain[j]; /* |dR| <= gj |dS| */
            double wk = gj * x->wk[j] + df * fabs(x->ds[j]), ds = p->scale * x->ds[j] * gj;
            double pj = x->prob[j], pw = pj * x->w[j]; /* P, and dV's term weight P w */
            double c = 0, c_k = 0, c_v = 0;
            const double *dk_ex = x->ex->dk + kr * p->Dqk, *dv_ex = x->ex->dv + kr * p->Dv;
            double *km = t->mass[AF_T_DK] + kr * p->Dqk, *kk = t->kappa[AF_T_DK] + kr * p->Dqk;
            double *vm = t->mass[AF_T_DV] + kr * p->Dv, *vk = t->kappa[AF_T_DV] + kr * p->Dv;
            double *wq = t->wq + kr * p->Dqk;
            for (int d = 0; d < p->Dqk; d++) {
                qm[d] += fabs(ds * k[d]);
                qk[d] += fabs(p->scale) * wk * fabs(k[d]) + gj * sub_s * fabs(k[d]);
                kq[d] += fabs(p->scale) * pj * gj * fabs(k[d]);
                c += sgn(dq_ex[d]) * k[d];
                km[d] += fabs(ds * q[d]);
                kk[d] += fabs(p->scale) * wk * fabs(q[d]) + gj * sub_s * fabs(q[d]);
                wq[d] += fabs(p->scale) * pj * gj * fabs(q[d]);
                c_k += sgn(dk_ex[d]) * q[d];
            }
            /* fp16: a backward kernel rounds the normalised P to the dtype for P^T dO; below
         * 2^-14 that is 2^-25 absolute (docs/criterion.md, subnormal P in dV: measured on a
         * cuDNN kernel). Otherwise the forward-style sub, never more than 2^-25. */
            double sub_v = x->fp16 && pj < 0x1p-14 ? 0x1p-25 : sub;
            double *vsq = t->cast_sq[AF_T_DV] ? t->cast_sq[AF_T_DV] + kr * p->Dv : NULL;
            for (int d = 0; vsq && d < p->Dv; d++) vsq[d] += (pw * dO[d]) * (pw * dO[d]);
            for (int d = 0; d < p->Dv; d++) {
                vm[d] += pw * fabs(dO[d]);
                vk[d] += (rho + x->keep_fp32) * pw * fabs(dO[d]) + x->w[j] * sub_v * fabs(dO[d]);
                c_v += sgn(dv_ex[d]) * dO[d];
            }
            sig2_q += ds * c * ds * c;
            t->sig2[AF_T_DK][kr] += ds * c_k * ds * c_k;
            t->sig2[AF_T_DV][kr] += pw * c_v * pw * c_v;
            x->seen[kr]++;
        }
    for (int d = 0; d < p->Dqk; d++) qk[d] += gam * qm[d];
    t->sig2[AF_T_DQ][row] = sig2_q;
}

bool af_criterion_terms_gpu_serves(const af_oracle_problem *p, af_dtype dtype) {
    char why[256];
    return !af_dtype_is_fp8_tensor(dtype) && !af_feat_any(p) && p->mask.global_keys == 0 &&
           !af_mask_rule_drops(&p->mask) && p->Dqk <= AF_TERMS_GPU_MAX_DIM && p->Dv <= AF_TERMS_GPU_MAX_DIM &&
           p->B <= AF_MAX_BATCH && af_oracle_gpu_usable(why, sizeof why) == 0;
}

/* The GPU pass into t (allocated and zeroed as the host loop needs it); the LSE rows'
 * budgets from its A_i and n_i with the host's formula. 0, or nonzero (t to be refilled). */
static int terms_on_gpu(const af_oracle_problem *p, const af_outputs *exact, af_dtype dtype, af_criterion_terms *t,
                        double *seconds) {
    size_t nq = (size_t)p->B * p->Hq * p->Sq;
    double *row_a = malloc((nq ? nq : 1) * sizeof(double)); /* (B, Hq, Sq) A_i */
    int *row_n = malloc((nq ? nq : 1) * sizeof(int));       /* (B, Hq, Sq) n_i */
    if (!row_a || !row_n) {
        free(row_a), free(row_n);
        return -1;
    }
    af_terms_gpu_consts k = {.acc_unit = af_score_acc_unit(p->Dqk),
                             .cancel_unit = 0x1p-22 + AF_GRAD_CANCEL_UNIT,
                             .fp16 = dtype == AF_DT_FP16};
    char why[256];
    int rc = af_criterion_terms_gpu_fill(p, exact, &k, t, row_a, row_n, seconds, why, sizeof why);
    if (rc == 0)
        for (size_t r = 0; r < nq; r++) /* softcap is not served here: its share is 0 */
            if (row_n[r] > 0) t->kappa[AF_T_LSE][r] = af_criterion_lse_kappa(p->Dqk, row_a[r], row_n[r]);
    free(row_a), free(row_n);
    return rc;
}

/* Every array of t the passes fill back to 0 (after a GPU pass that failed midway). */
static void terms_zero(const af_oracle_problem *p, af_criterion_terms *t) {
    size_t nq = (size_t)p->B * p->Hq * p->Sq, nk = (size_t)p->B * p->Hkv * p->Skv;
    size_t elems[AF_T_COUNT] = {0}, rows[AF_T_COUNT] = {0};
    elems[AF_T_O] = nq * p->Dv, rows[AF_T_O] = nq;
    elems[AF_T_DQ] = nq * p->Dqk, rows[AF_T_DQ] = nq;
    elems[AF_T_DK] = nk * p->Dqk, rows[AF_T_DK] = nk;
    elems[AF_T_DV] = nk * p->Dv, rows[AF_T_DV] = nk;
    for (int id = 0; id < AF_T_COUNT; id++) {
        if (t->mass[id]) memset(t->mass[id], 0, elems[id] * sizeof(double));
        if (t->kappa[id] && id != AF_T_LSE) memset(t->kappa[id], 0, elems[id] * sizeof(double));
        if (t->sig2[id]) memset(t->sig2[id], 0, rows[id] * sizeof(double));
        if (t->cast_sq[id]) memset(t->cast_sq[id], 0, elems[id] * sizeof(double));
    }
    memset(t->kappa[AF_T_LSE], 0, nq * sizeof(double));
    memset(t->rho, 0, nq * sizeof(double));
    if (t->kq) memset(t->kq, 0, nq * p->Dqk * sizeof(double));
    if (t->wq) memset(t->wq, 0, nk * p->Dqk * sizeof(double));
    if (t->log_f) memset(t->log_f, 0, nq * sizeof(double));
    if (t->prob) memset(t->prob, 0, nq * p->Skv * sizeof(float));
    if (t->ds_abs) memset(t->ds_abs, 0, nq * p->Skv * sizeof(float));
}

int af_criterion_terms_compute(const af_oracle_problem *p, const af_outputs *exact, af_dtype dtype,
                               af_criterion_terms *t) {
    double work = af_attention_work(1.0, p->B, p->Hq, p->Sq, p->Skv, p->Dqk + p->Dv);
    af_terms_where where = work >= AF_CRITERION_TERMS_GPU_MIN_WORK && af_criterion_terms_gpu_serves(p, dtype)
                               ? AF_TERMS_GPU
                               : AF_TERMS_HOST;
    int rc = af_criterion_terms_compute_on(p, exact, dtype, where, t, NULL);
    return rc == 1 ? af_criterion_terms_compute_on(p, exact, dtype, AF_TERMS_HOST, t, NULL) : rc;
}

int af_criterion_terms_compute_on(const af_oracle_problem *p, const af_outputs *exact, af_dtype dtype,
                                  af_terms_where where, af_criterion_terms *t, double *gpu_seconds) {
    memset(t, 0, sizeof *t);
    if (gpu_seconds) *gpu_seconds = 0;
    size_t nq = (size_t)p->B * p->Hq * p->Sq, nk = (size_t)p->B * p->Hkv * p->Skv;
    bool bwd = p->in->dout && exact->dq && exact->dk && exact->dv;
    terms_ctx x = {
        .p = p, .ex = exact, .unit = dtype == AF_DT_FP16 ? 0x1p-10 : 0x1p-7, .fp16 = dtype == AF_DT_FP16, .t = t};
    size_t skv = (size_t)(p->Skv > 0 ? p->Skv : 1);
    x.prob = malloc(skv * sizeof(double));
    x.ds = malloc(skv * sizeof(double));
    x.g = malloc(skv * sizeof(double));
    x.wk = malloc(skv * sizeof(double));
    x.w = malloc(skv * sizeof(double));
    x.th2 = malloc(skv * sizeof(double));
    x.gain = malloc(skv * sizeof(double));
    x.keep_fp32 = p->in->feat.dropout_p != 0.0 ? 0x1p-23 : 0.0;
    t->keep_scale = 1.0 / (1.0 - p->in->feat.dropout_p);
    x.seen = calloc(nk ? nk : 1, sizeof(long long));
    t->kappa[AF_T_LSE] = calloc(nq ? nq : 1, sizeof(double));
    t->rho = calloc(nq ? nq : 1, sizeof(double));
    t->lse_exact = exact->lse;
    bool ok = x.prob && x.ds && x.g && x.wk && x.w && x.th2 && x.gain && x.seen && t->kappa[AF_T_LSE] && t->rho &&
              alloc_all(t, AF_T_O, nq * p->Dv, nq);
    if (af_dtype_is_fp8_tensor(dtype) && where == AF_TERMS_HOST) { /* P's cast, the scores' error: criterion_fp8.c */
        ok = ok && (t->cast_sq[AF_T_O] = calloc(nq * p->Dv + 1, sizeof(double)));
        ok = ok && (t->fp8_score_o = calloc(nq * p->Dv + 1, sizeof(double)));
        ok = ok && (x.hull = malloc((p->Dv + 1) * sizeof(double)));
    }
    if (bwd) {
        ok = ok && alloc_all(t, AF_T_DQ, nq * p->Dqk, nq) && alloc_all(t, AF_T_DK, nk * p->Dqk, nk) &&
             alloc_all(t, AF_T_DV, nk * p->Dv, nk);
        if (af_dtype_is_fp8_tensor(dtype) && where == AF_TERMS_HOST)
            ok = ok && (t->cast_sq[AF_T_DV] = calloc(nk * p->Dv + 1, sizeof(double)));
        t->kq = calloc(nq * p->Dqk + 1, sizeof(double));
        t->wq = calloc(nk * p->Dqk + 1, sizeof(double));
        t->log_f = calloc(nq + 1, sizeof(double));
        ok = ok && t->kq && t->wq && t->log_f;
        /* a score_mod's dK growth term takes the group bound (criterion_lse.c): the per
         * (i, j) one reads P and |dS| without f' */
        if (nq * (size_t)p->Skv <= AF_CRITERION_MAX_PROB && p->in->feat.score_mod == AF_SCORE_MOD_NONE) {
            t->prob = calloc(nq * p->Skv + 1, sizeof(float));
            t->ds_abs = calloc(nq * p->Skv + 1, sizeof(float));
            if (!t->prob || !t->ds_abs) { /* both or neither: the growth term of dK needs both */
                free(t->prob);
                free(t->ds_abs);
                t->prob = NULL;
                t->ds_abs = NULL;
            }
        }
        t->dout = p->in->dout;
        t->q = p->in->q;
        t->o_exact = exact->o;
    }
    bool filled = false, declined = false;
    if (ok && where == AF_TERMS_GPU) {
        int grc = terms_on_gpu(p, exact, dtype, t, gpu_seconds);
        filled = grc == 0;
        if (!filled) terms_zero(p, t);             /* a CUDA error midway: the host computes it all */
        if (grc == 1) declined = true, ok = false; /* not served: the caller chooses */
    }
    if (ok && !filled) {
        for (int b = 0; b < p->B; b++) {
            int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
            for (int h = 0; h < p->Hq; h++)
                for (int i = 0; i < lq; i++) {
                    af_mask_keys keys;
                    int n_keys = af_mask_visible_keys(&p->mask, b, lq, lkv, i, &keys);
                    if (n_keys == 0) continue;
                    if (!isfinite(exact->lse[((size_t)b * p->Hq + h) * p->Sq + i])) continue;
                    row_terms(&x, b, h, i, lq, &keys, n_keys);
                }
        }
        if (bwd) { /* the accumulation bias of each key's sum over the rows that see it */
            double part = gqa_partials(p, x.fp16);
            for (size_t kr = 0; kr < nk; kr++) {
                double gam = accumulation_bias(x.seen[kr]);
                for (int d = 0; d < p->Dqk; d++)
                    t->kappa[AF_T_DK][kr * p->Dqk + d] +=
                        gam * t->mass[AF_T_DK][kr * p->Dqk + d] + (x.seen[kr] ? part : 0.0);
                for (int d = 0; d < p->Dv; d++)
                    t->kappa[AF_T_DV][kr * p->Dv + d] +=
                        gam * t->mass[AF_T_DV][kr * p->Dv + d] + (x.seen[kr] ? part : 0.0);
            }
        }
    }
    free(x.prob);
    free(x.ds);
    free(x.g);
    free(x.wk);
    free(x.w);
    free(x.th2);
    free(x.gain);
    free(x.hull);
    free(x.seen);
    if (!ok) {
        af_criterion_terms_free(t);
        return declined ? 1 : -1;
    }
    t->ready = true;
    return 0;
}

void af_criterion_stored_o_dd(const af_case *c, const af_criterion_terms *t, const double *kernel_o, double *dd,
                              double *group_max) {
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Dv = c->head_dim_v, group = Hq / Hkv;
    size_t nq = (size_t)c->batch * Hq * Sq;
    for (size_t r = 0; r < nq; r++) {
        double s = 0;
        for (int d = 0; d < Dv; d++) {
            double ok = kernel_o[r * Dv + d], oe = t->o_exact[r * Dv + d];
            if (isfinite(ok) && isfinite(oe)) s += t->dout[r * Dv + d] * (ok - oe);
        }
        dd[r] = fabs(s) * (1.0 + (t->rho ? t->rho[r] : 0.0)); /* the kernel's P carries it */
        size_t bh = r / Sq;                                   /* b * Hq + h */
        size_t g = (bh / Hq) * Hkv + (bh % Hq) / group;
        if (dd[r] > group_max[g]) group_max[g] = dd[r];
    }
}

/* The stored O's share of the error of dQ (id DQ) or dK (DK): with the kernel's D error
 * dD_i = |dO_i . (O_kernel,i - O_exact,i)| of each row (the ABI's D is formed from the O
 * the kernel stored):  dQ_id: dD_i scale sum_j P_ij |k_jd|;  dK_jd: scale sum_i P_ij dD_i
 * |q_id| (with P stored), else max_i dD_i over the key's batch and kv group times scale
 * sum_i P_ij |q_id|. Returns a dense array like the tensor (caller frees), or NULL. */
double *af_criterion_stored_o_term(const af_case *c, af_tensor_id id, const af_criterion_terms *t,
                                   const double *kernel_o) {
    if (!t->kq || !t->wq || !t->dout || !kernel_o) return NULL;
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv, Dqk = c->head_dim_qk;
    int group = Hq / Hkv;
    size_t nq = (size_t)c->batch * Hq * Sq, nk = (size_t)c->batch * Hkv * Skv;
    double *dd = calloc(nq + 1, sizeof(double));
    double *out = calloc((id == AF_T_DQ ? nq : nk) * Dqk + 1, sizeof(double));
    double *group_max = calloc(nk + 1, sizeof(double)); /* per (b, hk): index b * Hkv + hk */
    if (!dd || !out || !group_max) {
        free(dd);
        free(out);
        free(group_max);
        return NULL;
    }
    af_criterion_stored_o_dd(c, t, kernel_o, dd, group_max);
    char why[256];
    if (id == AF_T_DQ) {
        for (size_t r = 0; r < nq; r++)
            for (int d = 0; d < Dqk; d++) out[r * Dqk + d] = dd[r] * t->kq[r * Dqk + d];
    } else if (t->prob && t->dev && af_criterion_stored_o_dk_gpu(c, t, dd, out, why, sizeof why) == 0) {
        /* the same sums on the device (criterion_gpu.h) */
    } else if (t->prob && af_criterion_terms_gpu_host_pds(t) == 0) {
        memset(out, 0, nk * Dqk * sizeof(double)); /* a device attempt may have written part */
        af_mask_rule rule = af_mask_rule_of_case(c);
        double scale = fabs(af_case_scale(c)); /* a magnitude: the scale may be negative */
        for (int b = 0; b < c->batch; b++) {
            int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b);
            for (int h = 0; h < Hq; h++)
                for (int i = 0; i < lq; i++) {
                    af_mask_keys keys;
                    if (af_mask_visible_keys(&rule, b, lq, lkv, i, &keys) == 0) continue;
                    size_t r = ((size_t)b * Hq + h) * Sq + i;
                    const double *q = t->q + r * Dqk;
                    for (int ks = 0; ks < keys.n; ks++)
                        for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                            double w = scale * (double)t->prob[r * Skv + j] * dd[r];
                            double *o = out + (((size_t)b * Hkv + h / group) * Skv + j) * Dqk;
                            for (int d = 0; d < Dqk; d++) o[d] += w * fabs(q[d]);
                        }
                }
        }
    } else {
        for (size_t kr = 0; kr < nk; kr++)
            for (int d = 0; d < Dqk; d++) out[kr * Dqk + d] = group_max[kr / Skv] * t->wq[kr * Dqk + d];
    }
    free(dd);
    free(group_max);
    return out;
}

void af_criterion_tensor(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                         const double *exact, const double *kernel_o, const double *kernel_lse,
                         const af_criterion_terms *terms, double unit, double grad_mass, af_criterion_result *out) {
    bool have = af_criterion_terms_have(terms, id);
    double *extra = af_criterion_extra_terms(c, id, terms, kernel_o, kernel_lse);
    bool kvside = id == AF_T_DK || id == AF_T_DV;
    size_t rows = (size_t)c->batch * (kvside ? c->heads_kv : c->heads_q) * (kvside ? c->seqlen_kv : c->seqlen_q);
    af_row_summary *sums = malloc((rows ? rows : 1) * sizeof *sums);
    if (!sums) { /* out of memory: the row rule from a summary of nothing is no verdict */
        memset(out, 0, sizeof *out);
        free(extra);
        return;
    }
    af_criterion_row_summaries(c, id, kernel, ref, exact, have ? terms : NULL, extra, unit, sums);
    af_criterion_decide(c, id, sums, ref != NULL, terms, unit, grad_mass, out);
    free(sums);
    free(extra);
}

/* LSE: the share of the recipe lse_rowsum_dtype_p (criterion_rowsum.c) when the backend
 * judged declares it, a copy (the caller frees it); NULL otherwise: the LSE budget is then
 * the one without the recipe, to the bit. */
static double *lse_recipe_term(const af_case *c, const af_criterion_terms *terms) {
    if (!terms->lse_rowsum_on || !terms->lse_rowsum) return NULL;
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q;
    double *x = malloc((nq ? nq : 1) * sizeof(double));
    if (x) memcpy(x, terms->lse_rowsum, nq * sizeof(double));
    return x;
}

/* The stored O's and the stored LSE's shares (af_criterion_extra_terms without CP). */
static double *stored_terms(const af_case *c, af_tensor_id id, const af_criterion_terms *terms, const double *kernel_o,
                            const double *kernel_lse) {
    double *dterm = id == AF_T_DQ || id == AF_T_DK ? af_criterion_stored_o_term(c, id, terms, kernel_o) : NULL;
    if (id == AF_T_LSE) return lse_recipe_term(c, terms);
    /* the stored LSE's growth (criterion.h): NULL unless some row left the linear regime.
     * O is computed in the forward, from the scores, not from the LSE the kernel stored:
     * only the fp32 rounding of the scores grows its budget, never the kernel's own LSE
     * error (that would excuse a wrong O by the same kernel's wrong LSE). */
    double *growth = af_criterion_lse_growth(c, terms, id == AF_T_O ? NULL : kernel_lse);
    double *gterm = growth ? af_criterion_lse_growth_term(c, id, terms, growth, dterm, kernel_o) : NULL;
    free(growth);
    if (!gterm) return dterm;
    if (dterm) {
        bool kvside = id == AF_T_DK || id == AF_T_DV;
        int D = (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
        size_t n = (size_t)c->batch * (kvside ? c->heads_kv : c->heads_q) * (kvside ? c->seqlen_kv : c->seqlen_q) * D;
        for (size_t e = 0; e < n; e++) gterm[e] += dterm[e];
        free(dterm);
    }
    return gterm;
}

double *af_criterion_extra_terms(const af_case *c, af_tensor_id id, const af_criterion_terms *terms,
                                 const double *kernel_o, const double *kernel_lse) {
    if (!af_criterion_terms_have(terms, id)) return NULL;
    double *extra = stored_terms(c, id, terms, kernel_o, kernel_lse);
    /* a cp > 1 case: the ranks' partials rounded to the dtype (criterion_cp.h) */
    double *cp = af_criterion_cp_term(c, id, terms, af_output_unit(c, id));
    if (!cp) return extra;
    if (extra) {
        bool kvside = id == AF_T_DK || id == AF_T_DV;
        int D = (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
        size_t n = (size_t)c->batch * (kvside ? c->heads_kv : c->heads_q) * (kvside ? c->seqlen_kv : c->seqlen_q) * D;
        for (size_t e = 0; e < n; e++) cp[e] += extra[e];
        free(extra);
    }
    return cp;
}
