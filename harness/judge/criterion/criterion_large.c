/* criterion_large.c — the stored O's share of the gradients' row floors in fp16/bf16
 * cases too large for the element budgets (runner.h: AF_CRITERION_TERMS_MAX_WORK).
 *
 * A backward that forms D_i = dO_i . O_i from the O the kernel stored (the ABI's
 * backward_given, cuDNN's backward, every CP rank's backward) moves dQ and dK by the
 * kernel's own D error dD_i = |dO_i . (O_kernel,i - O_exact,i)| exactly as the small-case
 * term of criterion.c does:
 *   dQ_id: dD_i scale sum_j P_ij |k_jd|      dK_jd: scale sum_(h, i) P_ij dD_i |q_id|
 * Without element budgets the judge has only each row's floor; it gets the row's largest
 * share (criterion.h's stored-O term, maximised over the row's elements):
 *   dQ row (b, h, i):  dD_i kq_i,  kq_i = max_d scale sum_j P_ij |k_jd|
 *   dK key (b, hk, j): max_i dD_i over the rows of (b, hk) times wq_j,
 *                      wq_j = max_d scale sum_(h in hk's group, i) P_ij |q_id|
 * (the bound criterion.c uses when it keeps no P). P_ij = exp(s_ij - LSE_i) from the
 * exact inputs and the oracle's exact LSE, the scores through the oracle's feature
 * specification, visibility from the problem's mask rule (never a kernel's).
 * Host fp64, O(pairs x 3 Dqk); above AF_STORED_O_ROWS_MAX_WORK (visible pairs x Dqk) nothing is computed and
 * those rows keep the floor without the share (docs/cp.md: a limit). */
#include "judge/criterion/criterion.h"
#include "judge/problem.h"
#include "oracle/feature_spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int af_criterion_stored_o_rows(const af_oracle_problem *p, const af_outputs *exact, af_criterion_terms *t) {
    if (!p->in->dout || !exact->o || !exact->lse) return 1;
    if (af_problem_visible_pairs(p) * p->Dqk > AF_STORED_O_ROWS_MAX_WORK) return 1; /* the loops walk those */
    size_t nq = (size_t)p->B * p->Hq * p->Sq, nk = (size_t)p->B * p->Hkv * p->Skv;
    int group = p->Hq / p->Hkv, D = p->Dqk;
    double *kq = calloc(nq + 1, sizeof(double));             /* (B, Hq, Sq) */
    double *wq = calloc(nk + 1, sizeof(double));             /* (B, Hkv, Skv) */
    double *col = calloc(nk * D + 1, sizeof(double));        /* (B, Hkv, Skv, Dqk) sum P |q| */
    double *acc = calloc((size_t)D + 1, sizeof(double));     /* (Dqk) one row's sum P |k| */
    double *pr = calloc((size_t)p->Skv + 1, sizeof(double)); /* (Skv) one row's P */
    if (!kq || !wq || !col || !acc || !pr) {
        free(kq), free(wq), free(col), free(acc), free(pr);
        return -1;
    }
    const af_inputs *in = p->in;
    double scale = fabs(p->scale); /* a magnitude: the scale may be negative */
    for (int b = 0; b < p->B; b++) {
        int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
        for (int h = 0; h < p->Hq; h++) {
            int hk = h / group;
            for (int i = 0; i < lq; i++) {
                af_mask_keys keys;
                size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
                if (af_mask_visible_keys(&p->mask, b, lq, lkv, i, &keys) == 0) continue;
                if (!isfinite(exact->lse[row])) continue;
                const double *q = in->q + row * D; /* (Dqk) */
                memset(acc, 0, (size_t)D * sizeof *acc);
                for (int ks = 0; ks < keys.n; ks++)
                    for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                        size_t kr = ((size_t)b * p->Hkv + hk) * p->Skv + j;
                        const double *k = in->k + kr * D; /* (Dqk) */
                        double s = 0;
                        for (int d = 0; d < D; d++) s += q[d] * k[d];
                        double e = exp(af_feat_score64(p, b, h, i, j, p->scale * s, NULL) - exact->lse[row]);
                        pr[j] = e <= 1.0 ? e : 1.0; /* rounding of exp near 1 */
                        for (int d = 0; d < D; d++) acc[d] += pr[j] * fabs(k[d]);
                        double *cq = col + kr * D;
                        for (int d = 0; d < D; d++) cq[d] += pr[j] * fabs(q[d]);
                    }
                double m = 0;
                for (int d = 0; d < D; d++) m = fmax(m, acc[d]);
                kq[row] = scale * m;
            }
        }
    }
    for (size_t kr = 0; kr < nk; kr++) {
        double m = 0;
        for (int d = 0; d < D; d++) m = fmax(m, col[kr * D + d]);
        wq[kr] = scale * m;
    }
    free(col), free(acc), free(pr);
    free(t->row_kq), free(t->key_wq);
    t->row_kq = kq;
    t->key_wq = wq;
    t->dout = in->dout;
    t->q = in->q;
    t->o_exact = exact->o;
    return 0;
}

double *af_criterion_stored_o_row_floor(const af_case *c, af_tensor_id id, const af_criterion_terms *t,
                                        const double *kernel_o) {
    if (!t || !t->row_kq || !t->key_wq || !t->dout || !t->o_exact || !kernel_o) return NULL;
    if (id != AF_T_DQ && id != AF_T_DK) return NULL;
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    double *dd = calloc(nq + 1, sizeof(double));                               /* (B, Hq, Sq) */
    double *gmax = calloc((size_t)c->batch * c->heads_kv + 1, sizeof(double)); /* (B, Hkv) max dD_i */
    double *out = calloc((id == AF_T_DQ ? nq : nk) + 1, sizeof(double));
    if (!dd || !gmax || !out) {
        free(dd), free(gmax), free(out);
        return NULL;
    }
    af_criterion_stored_o_dd(c, t, kernel_o, dd, gmax);
    if (id == AF_T_DQ)
        for (size_t r = 0; r < nq; r++) out[r] = dd[r] * t->row_kq[r];
    else
        for (size_t kr = 0; kr < nk; kr++) out[kr] = gmax[kr / c->seqlen_kv] * t->key_wq[kr];
    free(dd), free(gmax);
    return out;
}
