/* test_oracle_magnitudes.c — af_oracle_score_abs and af_oracle_grad_abs, the term
 * magnitudes that the fp8 LSE criterion and the gradient floors scale with.
 *
 *  - score_abs[b,h,i] equals, to the last bit, the max over the keys that
 *    af_mask_visible says row i sees (brute force over every key, a different path
 *    from the visible range the function walks) of scale * sum_d |q_d k_jd|, and is 0
 *    for rows that see nothing or lie past len_q; every visible |S_ij| is below it.
 *    A magnitude: with a negative scale it uses |scale| (a signed one made the fp8 LSE
 *    allowance collapse and the cpu reference fail: corpora/regression/
 *    cpu-negative-scale-fp8-lse.case), as do the gradient magnitudes below.
 *  - grad_abs bounds every element of the exact dQ, dK, dV (triangle inequality), is
 *    homogeneous (dO * 2 -> M * 2 exactly, max |dS| too), and is > 0 for a row that sees
 *    one key, where the exact dQ and dK are 0 (P = 1, dP = D): the case the floor exists
 *    for; there max |dS| is exactly 0. (fp8_scales.c's use of max |dS| is checked against
 *    an independent computation in test_fp8_backward.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/case.h"
#include "model/gen.h"
#include "oracle/mask_spec.h"
#include "judge/problem.h"
#include "oracle/oracle.h"
#include "model/tensors.h"
#include "util/check.h"

typedef struct {
    af_case c;
    af_tensors t;
    af_inputs in;
    af_oracle_problem p;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_oracle_result r;
} fixture;

static void setup(fixture *f, const char *text) {
    af_error err;
    CHECK_MSG(af_case_parse(text, "magnitudes", &f->c, &err) == 0, "%s: %s", err.field, err.message);
    char why[256];
    CHECK_MSG(af_tensors_alloc(&f->t, &f->c, why, sizeof why) == 0, "%s", why);
    CHECK(af_inputs_alloc(&f->in, &f->c) == 0 && af_inputs_generate(&f->c, &f->t, &f->in) == 0);
    af_problem_from_case(&f->p, &f->c, &f->in, f->len_q, f->len_kv);
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    CHECK_MSG(af_oracle_run(&f->p, &o, &f->r, why, sizeof why) == 0, "%s", why);
}

static void teardown(fixture *f) {
    af_oracle_result_free(&f->r);
    af_inputs_free(&f->in);
    af_tensors_free(&f->t);
}

static void score_abs_exact(const char *text) {
    fixture f;
    setup(&f, text);
    const af_oracle_problem *p = &f.p;
    double *a = malloc((size_t)p->B * p->Hq * p->Sq * sizeof *a); /* (B, Hq, Sq) */
    CHECK(a);
    af_oracle_score_abs(p, a);
    int g = p->Hq / p->Hkv, seen = 0, empty = 0;
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->Sq; i++) {
                double want = 0, smax = 0;
                for (int j = 0; j < p->Skv; j++) {
                    if (i >= p->len_q[b] || !af_mask_visible(&p->mask, p->len_q[b], p->len_kv[b], i, j)) continue;
                    const double *q = f.in.q + (((size_t)b * p->Hq + h) * p->Sq + i) * p->Dqk;
                    const double *k = f.in.k + (((size_t)b * p->Hkv + h / g) * p->Skv + j) * p->Dqk;
                    double s = 0, sa = 0;
                    for (int d = 0; d < p->Dqk; d++) {
                        s += q[d] * k[d];
                        sa += fabs(q[d] * k[d]);
                    }
                    if (sa > want) want = sa;
                    if (fabs(s) > smax) smax = fabs(s);
                }
                double got = a[((size_t)b * p->Hq + h) * p->Sq + i];
                CHECK_MSG(got == want * fabs(p->scale), "score_abs b%d h%d i%d: %.17g, want %.17g", b, h, i, got,
                          want * fabs(p->scale));
                CHECK(smax * fabs(p->scale) <= got);
                if (want > 0)
                    seen++;
                else
                    empty++;
            }
    CHECK(seen > 0);
    printf("score_abs: %d rows with keys, %d without, exact\n", seen, empty);
    free(a);
    teardown(&f);
}

static double max_abs(const double *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

static void grad_abs_bounds(const char *text, bool one_key) {
    fixture f;
    setup(&f, text);
    const af_oracle_problem *p = &f.p;
    af_grad_magnitudes m;
    af_oracle_grad_abs(p, &f.r.out, &m);
    size_t nq = (size_t)p->B * p->Hq * p->Sq, nk = (size_t)p->B * p->Hkv * p->Skv;
    double gq = max_abs(f.r.out.dq, nq * p->Dqk), gk = max_abs(f.r.out.dk, nk * p->Dqk),
           gv = max_abs(f.r.out.dv, nk * p->Dv);
    CHECK_MSG(gq <= m.dq && gk <= m.dk && gv <= m.dv, "max |dQ| %g M %g, |dK| %g M %g, |dV| %g M %g", gq, m.dq, gk,
              m.dk, gv, m.dv);
    CHECK(m.dq > 0 && m.dk > 0 && m.dv > 0 && isfinite(m.dq) && isfinite(m.dk) && isfinite(m.dv));
    /* max |dS| is finite, and 0 exactly where P = 1 and dP = D (one visible key) */
    CHECK(isfinite(m.ds_max) && m.ds_max >= 0);
    if (one_key) {
        CHECK_MSG(gq == 0 && gk == 0, "one visible key: exact dQ, dK should be 0 (got %g, %g)", gq, gk);
        CHECK_MSG(m.ds_max == 0, "one visible key: max |dS| should be 0 (got %g)", m.ds_max);
    } else {
        CHECK(m.ds_max > 0);
    }
    printf("grad_abs: max|dQ| %.3g <= M %.3g, max|dK| %.3g <= M %.3g, max|dV| %.3g <= M %.3g, max|dS| %.3g\n", gq, m.dq,
           gk, m.dk, gv, m.dv, m.ds_max);
    /* homogeneous in dO */
    for (size_t i = 0; i < nq * p->Dv; i++) f.in.dout[i] *= 2;
    af_grad_magnitudes m2;
    af_oracle_grad_abs(p, &f.r.out, &m2);
    CHECK(m2.dq == 2 * m.dq && m2.dk == 2 * m.dk && m2.dv == 2 * m.dv && m2.ds_max == 2 * m.ds_max);
    /* forward only: zeros */
    double *saved = f.in.dout;
    f.in.dout = NULL;
    af_oracle_grad_abs(p, &f.r.out, &m2);
    CHECK(m2.dq == 0 && m2.dk == 0 && m2.dv == 0 && m2.ds_max == 0);
    f.in.dout = saved;
    teardown(&f);
}

int main(void) {
    score_abs_exact(
        "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 37\nseqlen_kv = 53\nseqlens_q = 37,5\n"
        "seqlens_kv = 53,0\nhead_dim = 24\nmask = padding\nseed = 3\n");
    score_abs_exact("dtype = bf16\nheads = 2\nseqlen_q = 40\nseqlen_kv = 29\nhead_dim = 16\nmask = causal\n"
                    "align = bottom_right\nwindow = 5,2\nseed = 4\ndata = normal:1 outlier_channels:2:16\n");
    score_abs_exact("dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen = 64\nhead_dim = 64\nmask = causal\nseed = 5\n");
    score_abs_exact(
        "dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 1\nseqlen_q = 3\nseqlen_kv = 2\nhead_dim = 1\n"
        "scale = -7.374204074039881e-07\nseed = 1\n");
    grad_abs_bounds(
        "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 33\nseqlen_kv = 47\nhead_dim_qk = 16\n"
        "head_dim_v = 8\nmask = causal\nbackward = yes\nseed = 6\n",
        false);
    grad_abs_bounds(
        "dtype = fp16\nheads = 2\nseqlen_q = 66\nseqlen_kv = 97\nseqlens_q = 1\nseqlens_kv = 1\nhead_dim = 8\n"
        "mask = padding\nbackward = yes\nseed = 120\n",
        true);
    grad_abs_bounds("dtype = fp16\nheads = 2\nseqlen_q = 17\nseqlen_kv = 23\nhead_dim = 8\nmask = causal\n"
                    "scale = -1.498\nbackward = yes\nseed = 7\n",
                    false);
    CHECK_DONE("test_oracle_magnitudes");
}
