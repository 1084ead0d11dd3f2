/* compare_stats.c — the score statistics (max, sum_exp, max_logit) against the oracle
 * (the rule: compare_stats.h). */
#include "judge/compare_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case_mask.h"
#include "model/mask_rule.h"

double af_compare_stats_eps(int head_dim_qk, double score_abs, double exact_max) {
    double m = isfinite(exact_max) ? fabs(exact_max) : 0.0;
    return af_score_acc_unit(head_dim_qk) * score_abs + 0x1p-21 * (1.0 + m + score_abs);
}

/* A_i and n_i of row (b, h, i): max over the visible keys of scale sum_d |q_d k_jd|. */
static double row_score_abs(const af_case *c, const af_inputs *in, const af_mask_rule *rule, int b, int h, int i,
                            int *n_keys) {
    int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b), D = c->head_dim_qk;
    int g = h / (c->heads_q / c->heads_kv);
    af_mask_keys keys;
    int n = af_mask_rule_keys(*rule, lq, lkv, i, &keys);
    const double *q = in->q + (((size_t)b * c->heads_q + h) * c->seqlen_q + i) * D;
    double a = 0.0, scale = fabs((double)af_case_scale(c));
    *n_keys = 0;
    for (int jj = 0; jj < n; jj++) {
        int j = af_mask_keys_at(&keys, jj);
        if (!af_mask_rule_kept(rule, b, i, j)) continue;
        ++*n_keys;
        const double *k = in->k + (((size_t)b * c->heads_kv + g) * c->seqlen_kv + j) * D;
        double s = 0.0;
        for (int d = 0; d < D; d++) s += fabs(q[d] * k[d]);
        if (scale * s > a) a = scale * s;
    }
    return a;
}

/* The worst finding of one kind on one tensor. */
typedef struct {
    bool set;
    int b, h, row;
    double kernel, exact, err, allowed;
} worst;

static void note(worst *w, int b, int h, int row, double kernel, double exact, double err, double allowed) {
    double ratio = allowed > 0 ? err / allowed : INFINITY;
    if (w->set && ratio <= (w->allowed > 0 ? w->err / w->allowed : INFINITY)) return;
    *w = (worst){true, b, h, row, kernel, exact, err, allowed};
}

static bool poisoned(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits == AF_POISON_F32;
}

/* One value: unwritten, non-finite, the empty-row convention, or within allowed. */
static void judge_value(float stored, double k, double e, double allowed, int b, int h, int row, worst *unwritten,
                        worst *nan_inf, worst *mismatch) {
    if (poisoned(stored)) {
        if (!unwritten->set) *unwritten = (worst){true, b, h, row, NAN, e, 0, 0};
        return;
    }
    if (k == e) return; /* -inf == -inf, 0 == 0 included */
    if (!isfinite(k) && isfinite(e)) {
        if (!nan_inf->set) *nan_inf = (worst){true, b, h, row, k, e, INFINITY, 0};
        return;
    }
    double err = isfinite(e) ? fabs(k - e) : INFINITY; /* an empty row's -inf: only itself */
    if (err > allowed) note(mismatch, b, h, row, k, e, err, allowed);
}

static void add(af_verdict *v, af_verdict_kind kind, af_tensor_id id, const worst *w) {
    if (!w->set) return;
    char detail[256];
    const char *name = af_tensor_name(id);
    if (kind == AF_V_UNWRITTEN)
        snprintf(detail, sizeof detail, "%s[%d, %d, %d] still holds the poison: the run did not write it", name, w->b,
                 w->h, w->row);
    else if (kind == AF_V_NAN_INF)
        snprintf(detail, sizeof detail, "%s[%d, %d, %d] = %g where the oracle's is %.9g", name, w->b, w->h, w->row,
                 w->kernel, w->exact);
    else
        snprintf(detail, sizeof detail, "%s[%d, %d, %d] = %.9g, oracle %.9g: err %.3g > allowed %.3g", name, w->b, w->h,
                 w->row, w->kernel, w->exact, w->err, w->allowed);
    af_finding f = af_finding_at(kind, id, w->b, w->h, w->row, -1, detail);
    f.kernel_value = w->kernel;
    f.baseline_value = w->exact;
    f.error = w->err;
    f.allowed = w->allowed;
    f.ratio = w->allowed > 0 ? w->err / w->allowed : 0;
    af_verdict_add(v, &f);
}

int af_compare_stats(const af_case *c, const af_tensors *t, const af_inputs *in, const af_outputs *kernel,
                     const af_outputs *ref, const af_outputs *exact, af_verdict *v) {
    bool rows = t->row_max && kernel->row_max && exact->row_max;
    bool logit = t->max_logit && kernel->max_logit && exact->max_logit;
    if (!rows && !logit) return 0;
    int before = v->n_findings;
    af_mask_rule rule = af_mask_rule_of_case(c);
    enum { W_MAX, W_SUM, W_LOGIT, W_N };
    worst unwritten[W_N], nan_inf[W_N], mismatch[W_N];
    memset(unwritten, 0, sizeof unwritten), memset(nan_inf, 0, sizeof nan_inf), memset(mismatch, 0, sizeof mismatch);
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++) {
            double a_head = 0.0;
            for (int i = 0; i < af_case_len_q(c, b); i++) {
                int n = 0;
                double a = row_score_abs(c, in, &rule, b, h, i, &n);
                a_head = fmax(a_head, a);
                if (!rows) continue;
                size_t r = ((size_t)b * c->heads_q + h) * c->seqlen_q + i;
                double em = exact->row_max[r], es = exact->row_sumexp[r];
                double eps = af_compare_stats_eps(c->head_dim_qk, a, em);
                double ref_m =
                    ref && ref->row_max && isfinite(ref->row_max[r]) && isfinite(em) ? fabs(ref->row_max[r] - em) : 0.0;
                double ref_s =
                    ref && ref->row_sumexp && isfinite(ref->row_sumexp[r]) ? fabs(ref->row_sumexp[r] - es) : 0.0;
                judge_value(t->row_max[r], kernel->row_max[r], em, 2.0 * ref_m + eps, b, h, i, &unwritten[W_MAX],
                            &nan_inf[W_MAX], &mismatch[W_MAX]);
                double rel = expm1(2.0 * eps) + 0x1p-21 + ((double)n / 16.0 + 1.0) * 0x1p-23;
                judge_value(t->row_sumexp[r], kernel->row_sumexp[r], es, 2.0 * ref_s + rel * es, b, h, i,
                            &unwritten[W_SUM], &nan_inf[W_SUM], &mismatch[W_SUM]);
            }
            if (!logit) continue;
            size_t k = (size_t)b * c->heads_q + h;
            double e = exact->max_logit[k];
            double ref_l =
                ref && ref->max_logit && isfinite(ref->max_logit[k]) && isfinite(e) ? fabs(ref->max_logit[k] - e) : 0.0;
            judge_value(t->max_logit[k], kernel->max_logit[k], e,
                        2.0 * ref_l + af_compare_stats_eps(c->head_dim_qk, a_head, e), b, h, -1, &unwritten[W_LOGIT],
                        &nan_inf[W_LOGIT], &mismatch[W_LOGIT]);
        }
    const af_tensor_id ids[W_N] = {AF_T_ROW_MAX, AF_T_ROW_SUMEXP, AF_T_MAX_LOGIT};
    for (int w = 0; w < W_N; w++) {
        add(v, AF_V_UNWRITTEN, ids[w], &unwritten[w]);
        add(v, AF_V_NAN_INF, ids[w], &nan_inf[w]);
        add(v, AF_V_MISMATCH, ids[w], &mismatch[w]);
    }
    return v->n_findings - before;
}
