/* test_criterion_lse.c — the stored LSE's growth (criterion.h, criterion_lse.c):
 *  1. ordinary rows: on the case of test_criterion (|LSE| < 1e3) a perfect kernel's
 *     rows all have expm1(delta_i) <= rho_i, so af_criterion_lse_growth returns NULL and
 *     every budget is today's (the criterion adds nothing: same bits); no row is
 *     unresolved, so a NaN there stays nan_inf;
 *  2. a bf16 case with scale 5.3e4 (A_i + |LSE_i| ~ 1e7..3e7, around where expm1(delta_i)
 *     overtakes rho_i; finite range kept): some rows grow and some do not; those that do not get a
 *     growth term of exactly 0 on every O and dQ element (their budgets keep their bits),
 *     keys no growing row sees likewise on dK and dV; the largest dQ error that passes
 *     on the element with the largest growth is found by bisection, is larger than the
 *     first-order budget alone allowed, and 1.02 times it is a dQ mismatch at that row;
 *     no row is unresolved (a NaN stays a finding);
 *  3. the nan_inf false alarm (corpora/regression/flash-ref-huge-lse-3.case, |LSE| ~
 *     1e9): every row is unresolved with its keys, so an ABI kernel's overflowed
 *     gradients are not findings there; the LSE of those rows is still judged: a finite
 *     error 1.02 times the largest that passes (bisection) on row 0's LSE is a mismatch
 *     at that row (the exemption covers non-finite gradients only).
 */
#include "judge/tests/criterion_fixture.h"

#include <stdlib.h>

static bool dq_passes(const af_prepared *p, const af_outputs *perfect, af_outputs *k, size_t e, double err,
                      af_verdict *v) {
    size_t n;
    double *dq = fx_tensor(&p->c, k, AF_T_DQ, &n);
    memcpy(dq, perfect->dq, n * sizeof(double));
    dq[e] += err;
    double worst;
    return fx_judge(p, k, v, &worst) == 0;
}

/* k = perfect with element 0 of tensor id (O or LSE) off by err; passes? */
static bool exempt_passes(const af_prepared *p, const af_outputs *perfect, af_outputs *k, af_tensor_id id, double err,
                          af_verdict *v) {
    fx_copy(&p->c, perfect, k);
    size_t n;
    fx_tensor(&p->c, k, id, &n)[0] += err;
    double worst;
    return fx_judge(p, k, v, &worst) == 0;
}

static void ordinary_rows(void) {
    af_prepared p;
    af_backend *cpu;
    fx_prepare("dtype = fp16\nbatch = 1\nheads_q = 4\nheads_kv = 1\nseqlen_q = 14\nseqlen_kv = 5\nhead_dim_qk = 24\n"
               "head_dim_v = 104\nmask = causal\nbackward = yes\nseed = 1\ndata = normal:16\n",
               &p, &cpu);
    const af_case *c = &p.c;
    af_outputs perfect;
    fx_perfect(&p, &perfect);
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q;
    double lse_max = 0;
    for (size_t r = 0; r < nq; r++) lse_max = fmax(lse_max, fabs(p.oracle.out.lse[r]));
    CHECK(lse_max < 1e3);
    double *x = af_criterion_lse_growth(c, &p.terms, perfect.lse);
    CHECK_MSG(x == NULL, "an ordinary case (max |LSE| %.3g) left the linear regime", lse_max);
    unsigned char rows[64], keys[64];
    CHECK(nq <= sizeof rows && (size_t)c->seqlen_kv <= sizeof keys);
    CHECK(af_criterion_unresolved(c, &p.terms, perfect.lse, rows, keys) == 0);
    double worst;
    af_verdict v;
    CHECK(fx_judge(&p, &perfect, &v, &worst) == 0);
    printf("ordinary: max |LSE| %.3g, no growing row, perfect kernel worst ratio %.3f\n", lse_max, worst);
    af_outputs_free(&perfect);
    af_prepared_free(&p);
    cpu->destroy(cpu);
}

static void growing_rows(void) {
    af_prepared p;
    af_backend *cpu;
    fx_prepare("dtype = bf16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 12\nseqlen_kv = 16\nhead_dim_qk = 16\n"
               "head_dim_v = 16\nmask = causal\nscale = 5.3e+04\nbackward = yes\nseed = 3\ndata = normal:4\n",
               &p, &cpu);
    const af_case *c = &p.c;
    af_outputs perfect, k;
    fx_perfect(&p, &perfect);
    CHECK(af_outputs_alloc(&k, c) == 0);
    fx_copy(c, &perfect, &k);
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    int Dqk = c->head_dim_qk, Dv = c->head_dim_v;
    double *x = af_criterion_lse_growth(c, &p.terms, perfect.lse);
    CHECK_MSG(x != NULL, "no row left the linear regime");
    size_t grow = 0, flat = 0, rmax = 0;
    for (size_t r = 0; r < nq; r++) {
        if (x[r] > 0) grow++;
        if (x[r] == 0 && p.terms.rho[r] > 0) flat++;
        if (x[r] > x[rmax]) rmax = r;
    }
    CHECK_MSG(grow > 0 && flat > 0, "%zu growing and %zu linear rows: the case must have both", grow, flat);
    af_tensor_id ids[4] = {AF_T_O, AF_T_DQ, AF_T_DK, AF_T_DV};
    size_t zero_checked = 0;
    double *dq_growth = NULL;
    for (int t = 0; t < 4; t++) {
        double *g = af_criterion_lse_growth_term(c, ids[t], &p.terms, x, NULL, perfect.o);
        CHECK(g != NULL);
        bool kv = ids[t] == AF_T_DK || ids[t] == AF_T_DV;
        int D = ids[t] == AF_T_O || ids[t] == AF_T_DV ? Dv : Dqk;
        for (size_t r = 0; r < (kv ? nk : nq); r++) {
            bool touched = kv ? false : x[r] > 0;
            if (kv) /* does a growing row see key r? (causal, top left: row i sees j <= i) */
                for (int h = 0; h < c->heads_q; h++)
                    for (int i = 0; i < c->seqlen_q; i++) touched |= x[(size_t)h * c->seqlen_q + i] > 0 && (int)r <= i;
            if (touched) continue;
            for (int d = 0; d < D; d++) {
                CHECK_MSG(g[r * D + d] == 0.0, "%s row %zu: growth %g on a row that does not grow",
                          af_tensor_name(ids[t]), r, g[r * D + d]);
                zero_checked++;
            }
        }
        if (ids[t] == AF_T_DQ)
            dq_growth = g;
        else
            free(g);
    }
    CHECK(zero_checked > 0);
    /* the dQ element with the largest growth: its limit by bisection */
    size_t e = rmax * Dqk;
    for (int d = 0; d < Dqk; d++)
        if (dq_growth[rmax * Dqk + d] > dq_growth[e]) e = rmax * Dqk + d;
    CHECK(dq_growth[e] > 0);
    unsigned char rows[64], keys[64];
    CHECK(nq <= sizeof rows && nk <= sizeof keys);
    CHECK_MSG(af_criterion_unresolved(c, &p.terms, perfect.lse, rows, keys) == 0, "finite range lost at |LSE| ~1e7");
    af_verdict v;
    double worst;
    CHECK_MSG(fx_judge(&p, &perfect, &v, &worst) == 0, "perfect kernel: %d findings", v.n_findings);
    double lo = 0, hi = 1e-3;
    while (dq_passes(&p, &perfect, &k, e, hi, &v) && hi < 1e12) hi *= 2;
    CHECK(!dq_passes(&p, &perfect, &k, e, hi, &v));
    while (hi - lo > 1e-4 * hi) {
        double mid = 0.5 * (lo + hi);
        if (dq_passes(&p, &perfect, &k, e, mid, &v))
            lo = mid;
        else
            hi = mid;
    }
    CHECK(dq_passes(&p, &perfect, &k, e, lo, &v));
    CHECK(!dq_passes(&p, &perfect, &k, e, 1.02 * lo, &v));
    int row = (int)(rmax % c->seqlen_q), h = (int)(rmax / c->seqlen_q);
    CHECK(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_DQ);
    CHECK_MSG(v.findings[0].h == h && v.findings[0].row == row, "found at h%d r%d, planted at h%d r%d", v.findings[0].h,
              v.findings[0].row, h, row);
    /* the first-order element allowance (growth 0) the row had before: 2 err_ref + 2 eps */
    double unit = 0x1p-7, ex = p.oracle.out.dq[e], er = fabs(p.ref.dq[e] - ex);
    double eps1 = 0.5 * unit * p.terms.mass[AF_T_DQ][e] + p.terms.kappa[AF_T_DQ][e] + 0.5 * unit * fabs(ex);
    CHECK_MSG(lo > 2.0 * er + 2.0 * eps1, "largest passing %g is not above the first-order element allowance %g", lo,
              2.0 * er + 2.0 * eps1);
    printf("growing: %zu growing, %zu linear rows, %zu budgets of linear rows/keys exactly unchanged; dQ h%d r%d: "
           "rho %.3g, x %.3g, |LSE| %.3g; largest passing error %.4g (first-order element allowance %.4g); x1.02 "
           "-> mismatch (%s, ratio %.3f)\n",
           grow, flat, zero_checked, h, row, p.terms.rho[rmax], x[rmax], fabs(p.oracle.out.lse[rmax]), lo,
           2.0 * er + 2.0 * eps1, v.findings[0].detail, v.findings[0].ratio);
    free(dq_growth);
    free(x);
    af_outputs_free(&perfect);
    af_outputs_free(&k);
    af_prepared_free(&p);
    cpu->destroy(cpu);
}

static void lost_range(void) {
    FILE *f = fopen("corpora/regression/flash-ref-huge-lse-3.case", "r");
    CHECK_MSG(f != NULL, "corpora/regression/flash-ref-huge-lse-3.case (run from the repository root)");
    char text[4096];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    af_prepared p;
    af_backend *cpu;
    fx_prepare(text, &p, &cpu);
    const af_case *c = &p.c;
    af_outputs perfect;
    fx_perfect(&p, &perfect);
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    unsigned char rows[64], keys[64];
    CHECK(nq <= sizeof rows && nk <= sizeof keys);
    int n = af_criterion_unresolved(c, &p.terms, perfect.lse, rows, keys);
    CHECK_MSG(n == (int)nq, "%d of %zu rows unresolved", n, nq);
    for (size_t j = 0; j < nk; j++) CHECK(keys[j] == 1);
    printf("lost range: %d of %zu rows (|LSE| %.3g) and all %zu keys: non-finite gradients are not findings\n", n, nq,
           fabs(p.oracle.out.lse[0]), nk);
    /* just above the exemption: O and LSE of those rows are still judged; the largest
     * finite error that passes on row 0 (bisection) times 1.02 is a mismatch there */
    af_outputs k;
    CHECK(af_outputs_alloc(&k, c) == 0);
    /* (O is not in this loop: at |LSE| ~5e9 its growth budget is expm1(AF_LSE_DELTA_CAP)
     * times its mass, so no finite O error fails there; only finiteness is checked) */
    af_tensor_id judged[1] = {AF_T_LSE};
    for (int t = 0; t < 1; t++) {
        af_verdict v;
        double lo = 0, hi = 1e12;
        for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
            double mid = 0.5 * (lo + hi);
            if (exempt_passes(&p, &perfect, &k, judged[t], mid, &v))
                lo = mid;
            else
                hi = mid;
        }
        CHECK_MSG(lo > 0, "%s: no finite error passes", af_tensor_name(judged[t]));
        CHECK(!exempt_passes(&p, &perfect, &k, judged[t], 1.02 * lo, &v));
        CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == judged[t] &&
                      v.findings[0].row == 0,
                  "%s error %g in a lost-range row: %d findings, first kind %d", af_tensor_name(judged[t]), 1.02 * lo,
                  v.n_findings, v.n_findings ? (int)v.findings[0].kind : -1);
        printf("lost range: %s of row 0 passes up to error %.6g, 1.02 x that is a mismatch\n",
               af_tensor_name(judged[t]), lo);
    }
    af_outputs_free(&k);
    af_outputs_free(&perfect);
    af_prepared_free(&p);
    cpu->destroy(cpu);
}

int main(void) {
    ordinary_rows();
    growing_rows();
    lost_range();
    CHECK_DONE("test_criterion_lse");
}
