/* dropout_mask.c — judge/dropout_mask.h: Hoeffding tests of a kernel's returned keep mask. */
#include "judge/dropout_mask.h"
#include "judge/problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double af_dropout_mask_bound(long long n, long long m) {
    if (n <= 0 || m <= 0) return 0.0;
    return sqrt((double)n * log(2.0 * (double)m / AF_DROPOUT_MASK_FALSE_RATE) / 2.0);
}

/* The worst test of one kind: its excess over the bound (> 0 fails) and where. */
typedef struct {
    double excess, dev, allowed;
    long long n, kept;
    int b, h, index;
} worst_test;

static void weigh(worst_test *w, long long n, long long kept, double q, long long m, int b, int h, int index,
                  long long *failed) {
    if (n == 0) return;
    double dev = (double)kept - (double)n * q;
    double allowed = af_dropout_mask_bound(n, m) + AF_DROPOUT_RATE_SLACK * (double)n;
    double excess = fabs(dev) - allowed;
    if (excess > 0) (*failed)++;
    if (excess > w->excess) *w = (worst_test){excess, dev, allowed, n, kept, b, h, index};
}

static int report(af_verdict *v, const worst_test *w, const char *what, double p) {
    if (!v || !(w->excess > 0)) return 0;
    char detail[256], where[64] = "";
    if (w->index >= 0) snprintf(where, sizeof where, " (b %d, h %d, %d)", w->b, w->h, w->index);
    snprintf(detail, sizeof detail,
             "dropout_rng = kernel: the returned mask keeps %lld of %lld elements of %s%s: "
             "%+.1f from n(1 - p), p %g, beyond the bound %.1f (false alarm < 1e-9 per case)",
             w->kept, w->n, what, where, w->dev, p, w->allowed);
    af_finding f = af_finding_at(AF_V_FEATURE_IGNORED, AF_T_NONE, -1, -1, -1, -1, detail);
    f.error = fabs(w->dev), f.allowed = w->allowed, f.ratio = w->allowed > 0 ? fabs(w->dev) / w->allowed : 0;
    af_verdict_add(v, &f);
    return 1;
}

int af_dropout_mask_check(const af_case *c, const uint8_t *keep, af_verdict *v, af_dropout_mask_stats *st) {
    af_dropout_mask_stats s = {0, 0, 0, 0};
    int B = c->batch, Hq = c->heads_q, Sq = c->seqlen_q, Skv = c->seqlen_kv, added = 0;
    double q = 1.0 - c->dropout_p;
    af_mask_rule rule = af_mask_rule_of_case(c);
    long long *col_n = calloc((size_t)Skv, sizeof *col_n), *col_k = calloc((size_t)Skv, sizeof *col_k);
    if (!col_n || !col_k) {
        free(col_n), free(col_k);
        if (st) *st = s;
        return 0;
    }
    /* m: at most the whole tensor, every row and every column (an upper bound on the
     * tests made only widens t(n): the false alarm stays below the rate) */
    long long m = 1, bad = 0;
    int bad_b = -1, bad_h = -1, bad_i = -1, bad_j = -1, bad_val = 0;
    for (int b = 0; b < B; b++) m += (long long)Hq * (af_case_len_q(c, b) + af_case_len_kv(c, b));
    worst_test w_all = {0}, w_row = {0}, w_col = {0};
    for (int b = 0; b < B; b++) {
        int lq = af_case_len_q(c, b), lk = af_case_len_kv(c, b);
        for (int h = 0; h < Hq; h++) {
            for (int j = 0; j < Skv; j++) col_n[j] = col_k[j] = 0;
            for (int i = 0; i < lq; i++) {
                const uint8_t *row = keep + (((size_t)b * Hq + h) * Sq + i) * Skv;
                long long rn = 0, rk = 0;
                for (int j = 0; j < lk; j++) {
                    if (!af_mask_sees(&rule, b, lq, lk, i, j)) continue;
                    if (row[j] > 1) {
                        if (!bad++) bad_b = b, bad_h = h, bad_i = i, bad_j = j, bad_val = row[j];
                        continue;
                    }
                    rn++, rk += row[j];
                    col_n[j]++, col_k[j] += row[j];
                }
                s.counted += rn, s.kept += rk;
                if (rn) s.tests++;
                weigh(&w_row, rn, rk, q, m, b, h, i, &s.failed);
            }
            for (int j = 0; j < lk; j++) {
                if (col_n[j]) s.tests++;
                weigh(&w_col, col_n[j], col_k[j], q, m, b, h, j, &s.failed);
            }
        }
    }
    free(col_n), free(col_k);
    if (s.counted) s.tests++;
    weigh(&w_all, s.counted, s.kept, q, m, 0, 0, -1, &s.failed);
    if (bad && v) {
        char detail[256];
        snprintf(detail, sizeof detail,
                 "dropout_rng = kernel: the returned mask holds %lld bytes that are neither 0 nor 1 where rows "
                 "see keys (first: b %d, h %d, row %d, key %d = %d)",
                 bad, bad_b, bad_h, bad_i, bad_j, bad_val);
        af_finding f = af_finding_at(AF_V_UNWRITTEN, AF_T_NONE, -1, -1, -1, -1, detail);
        af_verdict_add(v, &f);
        added++;
    }
    added += report(v, &w_all, "the whole mask", c->dropout_p);
    added += report(v, &w_row, "a row", c->dropout_p);
    added += report(v, &w_col, "a column", c->dropout_p);
    if (st) *st = s;
    return added;
}
