/* test_criterion_lse_rowsum.c — the recipe lse_rowsum_dtype_p (judge/criterion/criterion_rowsum.c,
 * docs/criterion.md "A row sum of rounded P"), on fp16, one head, s_q 32, s_kv 300, d 128:
 *  1. without the recipe the LSE allowance of a row is the criterion's own, to the bit: 2 x the
 *     reference's LSE error + max(unit |LSE|max + kappa_i, 2^-24) (criterion_rows.c), also with
 *     the share computed but not switched on;
 *  2. with it the row's allowance grows by the row's share exactly; 0.98 x the new allowance
 *     passes, 1.02 x is an LSE mismatch at that row;
 *  3. the measurement as a test: a kernel whose LSE is m + ln(sum of P rounded to fp16), P =
 *     exp(s - m) with a running max m per tile of 64 keys (FlashInfer's recipe, measured on
 *     the H100), is an LSE mismatch without the recipe and passes with it;
 *  4. the runner: a backend whose flags declare the recipe gets the share computed, and
 *     af_judge leaves it switched off after (no other backend sees it); one that does not
 *     leaves it uncomputed;
 *  5. the row share itself: the worst case u with two keys, 5 sigma with many distinct ones,
 *     and equal P values adding linearly (a repeated key).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/criterion/criterion.h"
#include "judge/problem.h"
#include "judge/tests/criterion_fixture.h"
#include "judge/tolerance.h"

static const char *const case_text =
    "dtype = fp16\nbatch = 1\nheads_q = 1\nheads_kv = 1\nseqlen_q = 32\nseqlen_kv = 300\nhead_dim_qk = 128\n"
    "head_dim_v = 128\nlayout = bshd\npacking = separate\nmask = none\nbackward = no\nseed = 11\ndata = normal:1\n";
enum { ROW = 5, TILE = 64 };

/* LSE's verdict on kernel k with the recipe on or off. */
static af_tensor_stats judge_lse(af_prepared *p, const af_outputs *k, bool recipe, int *findings) {
    af_verdict v;
    af_verdict_init(&v, "test");
    p->terms.lse_rowsum_on = recipe;
    *findings = af_compare_outputs(&p->c, k, &p->ref, &p->oracle, &p->terms, &v);
    p->terms.lse_rowsum_on = false;
    for (int i = 0; i < v.n_findings; i++)
        if (v.findings[i].tensor == AF_T_LSE) CHECK(v.findings[i].kind == AF_V_MISMATCH);
    return v.stats[AF_T_LSE];
}

static double fp16(double x) {
    uint8_t tmp[2];
    af_storage_store(AF_ST_F16, tmp, 0, (float)x);
    return af_storage_load(AF_ST_F16, tmp, 0);
}

static void row_share_cases(void) {
    double P[400], q[400], scratch[800];
    const double u = 0x1p-11;
    /* two keys: 5 sigma >= 5 u / sqrt(6) > u: the worst case u (sum q = 1) */
    P[0] = 1.0, P[1] = 0.5;
    q[0] = 1.0 / 1.5, q[1] = 0.5 / 1.5;
    double two = af_criterion_lse_rowsum_row(P, q, 2, 1.0 / 1.5, true, u, scratch);
    printf("row share, 2 keys: %.6g (u %.6g)\n", two, u);
    CHECK(fabs(two - u) <= 1e-18);
    /* 300 distinct keys of one size: 5 u / sqrt(3 x 300) */
    for (int j = 0; j < 300; j++) P[j] = 0.5 + j * 0x1p-8, q[j] = 1.0 / 300;
    double many = af_criterion_lse_rowsum_row(P, q, 300, 1.0 / 300, true, u, scratch);
    printf("row share, 300 distinct keys: %.6g (5 sigma %.6g)\n", many, 5.0 * u / sqrt(900.0));
    CHECK(fabs(many - 5.0 * u / sqrt(900.0)) <= 1e-12 * u);
    /* 300 keys of one P (a repeated key): they round alike, the worst case u */
    for (int j = 0; j < 300; j++) P[j] = 0.3;
    double same = af_criterion_lse_rowsum_row(P, q, 300, 1.0 / 90, true, u, scratch);
    CHECK(fabs(same - u) <= 1e-15);
    /* fp16 subnormal P: 2^-25 exp(m - lse) each, on top of u q */
    P[0] = 1.0, P[1] = 0x1p-20, q[0] = 1.0 / (1.0 + 0x1p-20), q[1] = 0x1p-20 / (1.0 + 0x1p-20);
    double sub = af_criterion_lse_rowsum_row(P, q, 2, q[0], true, u, scratch);
    CHECK(fabs(sub - (u + 0x1p-25 * q[0])) <= 1e-18);
    double bf = af_criterion_lse_rowsum_row(P, q, 2, q[0], false, 0x1p-8, scratch); /* bf16: none */
    CHECK(fabs(bf - 0x1p-8) <= 1e-18);
}

int main(void) {
    row_share_cases();
    af_prepared p;
    af_backend *cpu;
    fx_prepare(case_text, &p, &cpu);
    const af_case *c = &p.c;
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q;
    CHECK(c->dtype == AF_DT_FP16 && c->seqlen_kv == 300 && c->head_dim_qk == 128);
    CHECK(p.terms.lse_rowsum == NULL); /* nothing computed for a backend without the recipe */
    af_oracle_problem prob;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_problem_from_case(&prob, c, &p.inputs, len_q, len_kv);

    /* 1. without the recipe: the criterion's own allowance, to the bit */
    af_outputs k;
    CHECK(af_outputs_alloc(&k, c) == 0);
    fx_copy(c, &p.oracle.out, &k);
    k.lse[ROW] = p.oracle.out.lse[ROW] + 0x1p-40;
    int nf;
    af_tensor_stats s0 = judge_lse(&p, &k, false, &nf);
    double lse_max, err_ref = fx_lse_err_ref(&p, &lse_max);
    double unit = af_output_unit(c, AF_T_LSE);
    double want0 = 2.0 * err_ref + fmax(unit * lse_max + p.terms.kappa[AF_T_LSE][ROW], 0x1p-24);
    printf("without the recipe: allowance %.9g (formula %.9g) at row %d\n", s0.allowed, want0, s0.row);
    CHECK(s0.row == ROW && s0.allowed == want0);
    CHECK(af_criterion_lse_rowsum_ensure(&prob, p.oracle.out.lse, c->dtype, &p.terms) == 0);
    CHECK(judge_lse(&p, &k, false, &nf).allowed == want0); /* computed, not on: unchanged */

    /* 2. with it: + the row's share, and the edge */
    double share = p.terms.lse_rowsum[ROW];
    af_tensor_stats s1 = judge_lse(&p, &k, true, &nf);
    double want1 = 2.0 * err_ref + fmax(unit * lse_max + (p.terms.kappa[AF_T_LSE][ROW] + share), 0x1p-24);
    printf("with the recipe: share %.6g, allowance %.9g (formula %.9g, %.1f x without)\n", share, s1.allowed, want1,
           s1.allowed / s0.allowed);
    CHECK(share > 0 && share <= 0x1p-11 && s1.row == ROW && s1.allowed == want1);
    k.lse[ROW] = p.oracle.out.lse[ROW] + 0.98 * s1.allowed;
    af_tensor_stats pass = judge_lse(&p, &k, true, &nf);
    CHECK(pass.ratio <= 1 && nf == 0);
    k.lse[ROW] = p.oracle.out.lse[ROW] - 1.02 * s1.allowed;
    af_tensor_stats fail = judge_lse(&p, &k, true, &nf);
    printf("edge: 0.98 x ratio %.4f, 1.02 x ratio %.4f\n", pass.ratio, fail.ratio);
    CHECK(fail.ratio > 1 && nf >= 1 && fail.row == ROW);

    /* 3. the kernel that sums P rounded to fp16, running max per tile of 64 keys */
    double worst_err = 0;
    for (size_t r = 0; r < nq; r++) {
        const double *qv = p.inputs.q + r * c->head_dim_qk;
        double m = -INFINITY, l = 0;
        for (int t0 = 0; t0 < c->seqlen_kv; t0 += TILE) {
            int t1 = t0 + TILE < c->seqlen_kv ? t0 + TILE : c->seqlen_kv;
            double s[TILE], m_new = m;
            for (int j = t0; j < t1; j++) {
                const double *kv = p.inputs.k + (size_t)j * c->head_dim_qk;
                double dot = 0;
                for (int d = 0; d < c->head_dim_qk; d++) dot += qv[d] * kv[d];
                s[j - t0] = dot * prob.scale;
                m_new = fmax(m_new, s[j - t0]);
            }
            l *= exp(m - m_new);
            for (int j = t0; j < t1; j++) l += fp16(exp(s[j - t0] - m_new));
            m = m_new;
        }
        k.lse[r] = (float)(m + log(l));
        worst_err = fmax(worst_err, fabs(k.lse[r] - p.oracle.out.lse[r]));
    }
    af_tensor_stats off = judge_lse(&p, &k, false, &nf);
    int nf_off = nf;
    af_tensor_stats on = judge_lse(&p, &k, true, &nf);
    printf("rounded-P row sum (tiles of %d): largest |LSE error| %.3g; without the recipe ratio %.3f (row %d), "
           "with it %.3f (row %d)\n",
           TILE, worst_err, off.ratio, off.row, on.ratio, on.row);
    CHECK(off.ratio > 1 && nf_off >= 1);
    CHECK(on.ratio <= 1 && nf == 0);
    af_outputs_free(&k);

    /* 4. the runner: the flag computes the share for that backend's judgement only */
    af_backend *plain = af_backend_cpu_new(), *declared = af_backend_cpu_new();
    declared->flags |= AF_BACKEND_LSE_ROWSUM_DTYPE_P;
    af_prepared p2;
    af_backend *cpu2;
    fx_prepare(case_text, &p2, &cpu2);
    af_verdict v;
    af_tensors out;
    af_outputs k2;
    fx_judge_run_passes(&p2, cpu2, plain, "cpu backend", &v, &out, &k2);
    CHECK(p2.terms.lse_rowsum == NULL && !p2.terms.lse_rowsum_on);
    af_outputs_free(&k2);
    af_tensors_free(&out);
    fx_judge_run_passes(&p2, cpu2, declared, "cpu backend declaring lse_rowsum_dtype_p", &v, &out, &k2);
    CHECK(p2.terms.lse_rowsum != NULL && !p2.terms.lse_rowsum_on);
    for (size_t r = 0; r < nq; r++) CHECK(p2.terms.lse_rowsum[r] == p.terms.lse_rowsum[r]);
    af_outputs_free(&k2);
    af_tensors_free(&out);
    af_prepared_free(&p2);
    cpu2->destroy(cpu2);
    plain->destroy(plain);
    declared->destroy(declared);

    af_prepared_free(&p);
    cpu->destroy(cpu);
    printf("test_criterion_lse_rowsum: ok\n");
    return 0;
}
