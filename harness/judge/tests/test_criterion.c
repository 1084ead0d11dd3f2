/* test_criterion.c — where the criterion's floor grew it still catches (verdict.h):
 * the D term. On the dQ false alarm of the per-tensor rule (fp16 h4/1 s14x5
 * d24/104 causal normal:16, where a correct flash-style kernel's dQ was judged 1.6x
 * over and the floor now has the stored O's share of D), a perfect kernel (exact
 * outputs rounded once: its D error is its own O rounding) gets an error on the dQ
 * element with the largest term budget kappa: the largest error that passes is found by
 * bisection, and 1.02 times it is a dQ mismatch at that row. Then the same for the
 * element with the smallest budget, so the test shows both ends of the allowance.
 * LSE (its row check takes the tensor's reference error, criterion.c): the largest
 * passing error on one LSE row is at most the stated allowance 2 max|ref - exact| +
 * unit max|LSE| + the row's budget, and 1.02 times it is an LSE mismatch at that row.
 * Row bias (its allowance has an absolute floor of 2^-24, criterion.c): every element of
 * one row moved by delta in the direction of its exact value's sign; the largest passing
 * delta is found by bisection and 1.02 times it is a mismatch at that row, on an O row of
 * ordinary magnitude and on dQ row 0 (causal: it sees one key, so its exact dQ is ~0 and
 * the 2^-24 floor is what bounds it).
 */
#include "judge/tests/criterion_fixture.h"

static bool passes_with(const af_prepared *p, const af_outputs *perfect, af_outputs *k, size_t e, double err,
                        af_verdict *v) {
    size_t n;
    double *dq = fx_tensor(&p->c, k, AF_T_DQ, &n);
    memcpy(dq, perfect->dq, n * sizeof(double));
    dq[e] += err;
    double worst;
    return fx_judge(p, k, v, &worst) == 0;
}

static void limit_at(const af_prepared *p, const af_outputs *perfect, af_outputs *k, size_t e, const char *what) {
    const af_case *c = &p->c;
    af_verdict v;
    double lo = 0, hi = 1;
    CHECK(passes_with(p, perfect, k, e, 0, &v));
    while (passes_with(p, perfect, k, e, hi, &v) && hi < 1e6) hi *= 2;
    CHECK(!passes_with(p, perfect, k, e, hi, &v));
    while (hi - lo > 1e-4 * hi) {
        double mid = 0.5 * (lo + hi);
        if (passes_with(p, perfect, k, e, mid, &v))
            lo = mid;
        else
            hi = mid;
    }
    CHECK(passes_with(p, perfect, k, e, lo, &v));
    CHECK(!passes_with(p, perfect, k, e, 1.02 * lo, &v));
    int row = (int)(e / c->head_dim_qk % c->seqlen_q), h = (int)(e / c->head_dim_qk / c->seqlen_q % c->heads_q);
    CHECK(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_DQ);
    CHECK_MSG(v.findings[0].h == h && v.findings[0].row == row, "found at h%d r%d, planted at h%d r%d", v.findings[0].h,
              v.findings[0].row, h, row);
    printf("%s: dQ h%d r%d d%d: |exact| %.3g, kappa %.3g, largest passing error %.4g; x1.02 -> mismatch (%s, ratio "
           "%.3f)\n",
           what, h, row, (int)(e % c->head_dim_qk), fabs(p->oracle.out.dq[e]), p->terms.kappa[AF_T_DQ][e], lo,
           v.findings[0].detail, v.findings[0].ratio);
}

/* One LSE row's error limit (see the top of the file). */
static void lse_limit(const af_prepared *p, const af_outputs *perfect, af_outputs *k, size_t e) {
    const af_case *c = &p->c;
    size_t n = (size_t)c->batch * c->heads_q * c->seqlen_q;
    double lo = 0, hi = 1e-3, worst;
    af_verdict v;
    for (;;) { /* bisect the largest error on LSE element e that passes */
        memcpy(k->lse, perfect->lse, n * sizeof(double));
        k->lse[e] += hi;
        if (fx_judge(p, k, &v, &worst) != 0 || hi > 1e3) break;
        hi *= 2;
    }
    while (hi - lo > 1e-4 * hi) {
        double mid = 0.5 * (lo + hi);
        memcpy(k->lse, perfect->lse, n * sizeof(double));
        k->lse[e] += mid;
        if (fx_judge(p, k, &v, &worst) == 0)
            lo = mid;
        else
            hi = mid;
    }
    double lse_max, err_ref = fx_lse_err_ref(p, &lse_max);
    double stated = 2.0 * err_ref + 0x1p-23 * lse_max + p->terms.kappa[AF_T_LSE][e];
    CHECK_MSG(lo <= 1.001 * stated + 1e-12, "LSE passes an error %.4g above the stated allowance %.4g", lo, stated);
    memcpy(k->lse, perfect->lse, n * sizeof(double));
    k->lse[e] += 1.02 * lo;
    CHECK(fx_judge(p, k, &v, &worst) != 0);
    CHECK(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_LSE);
    CHECK(v.findings[0].row == (int)(e % c->seqlen_q));
    memcpy(k->lse, perfect->lse, n * sizeof(double));
    printf("LSE row %d: largest passing error %.4g (stated allowance %.4g); x1.02 -> mismatch (ratio %.3f)\n",
           (int)(e % c->seqlen_q), lo, stated, v.findings[0].ratio);
}

/* Row r of head h of tensor id moved by delta * sign(exact) in every element. */
static void shift_row(const af_prepared *p, const af_outputs *perfect, af_outputs *k, af_tensor_id id, int h, int r,
                      double delta) {
    const af_case *c = &p->c;
    size_t n;
    double *x = fx_tensor(c, k, id, &n);
    const double *base = fx_tensor(c, (af_outputs *)perfect, id, &n);
    const double *exact = fx_tensor(c, (af_outputs *)&p->oracle.out, id, &n);
    memcpy(x, base, n * sizeof(double));
    int D = id == AF_T_O ? c->head_dim_v : c->head_dim_qk;
    size_t row = ((size_t)h * c->seqlen_q + r) * D; /* batch 1 */
    for (int d = 0; d < D; d++) x[row + d] += exact[row + d] < 0 ? -delta : delta;
}

static void bias_limit(const af_prepared *p, const af_outputs *perfect, af_outputs *k, af_tensor_id id, int h, int r) {
    double lo = 0, hi = 1e-12, worst;
    af_verdict v;
    for (;;) {
        shift_row(p, perfect, k, id, h, r, hi);
        if (fx_judge(p, k, &v, &worst) != 0 || hi > 1e3) break;
        hi *= 2;
    }
    while (hi - lo > 1e-4 * hi) {
        double mid = 0.5 * (lo + hi);
        shift_row(p, perfect, k, id, h, r, mid);
        if (fx_judge(p, k, &v, &worst) == 0)
            lo = mid;
        else
            hi = mid;
    }
    shift_row(p, perfect, k, id, h, r, lo);
    CHECK(fx_judge(p, k, &v, &worst) == 0);
    shift_row(p, perfect, k, id, h, r, 1.02 * lo);
    CHECK(fx_judge(p, k, &v, &worst) != 0);
    CHECK(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == id);
    CHECK_MSG(v.findings[0].h == h && v.findings[0].row == r, "found at h%d r%d, planted at h%d r%d", v.findings[0].h,
              v.findings[0].row, h, r);
    printf("%s h%d r%d shifted along its signs: largest passing shift %.4g; x1.02 -> mismatch (%s, ratio %.3f)\n",
           af_tensor_name(id), h, r, lo, v.findings[0].detail, v.findings[0].ratio);
    shift_row(p, perfect, k, id, h, r, 0);
}

/* A negative scale (the case model allows any finite one): the budgets are magnitudes,
 * so they use |scale|. A campaign found the cpu reference failing dQ and dK of a case at
 * scale -1.498 by 1.4e4x, its element allowance NaN-ed down to 2^-24 by
 * log1p(scale * ...) and negative kappas. Every budget is finite and non-negative, the
 * cpu reference passes, and an error 2 % above the largest passing one is caught. */
static void negative_scale(void) {
    af_prepared p;
    af_backend *cpu;
    fx_prepare("dtype = fp16\nbatch = 1\nheads_q = 1\nheads_kv = 1\nseqlen_q = 1\nseqlen_kv = 2\nhead_dim_qk = 2\n"
               "head_dim_v = 2\nmask = none\nscale = -1.4980391263961792\nbackward = yes\nseed = 1\n"
               "data = normal:1\n",
               &p, &cpu);
    const af_case *c = &p.c;
    af_tensor_id ids[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    for (int t = 0; t < 5; t++) {
        af_outputs *ex = (af_outputs *)&p.oracle.out;
        size_t n;
        fx_tensor(c, ex, ids[t], &n);
        for (size_t e = 0; e < n; e++) {
            double ka = p.terms.kappa[ids[t]] ? p.terms.kappa[ids[t]][e] : 0;
            double ma = p.terms.mass[ids[t]] ? p.terms.mass[ids[t]][e] : 0;
            CHECK_MSG(isfinite(ka) && ka >= 0 && isfinite(ma) && ma >= 0, "tensor %d element %zu: kappa %g mass %g", t,
                      e, ka, ma);
        }
    }
    af_verdict v;
    double worst;
    CHECK_MSG(fx_judge(&p, &p.ref, &v, &worst) == 0, "the cpu reference at scale < 0: %d finding(s), %s", v.n_findings,
              v.n_findings ? v.findings[0].detail : "");
    af_outputs perfect, k;
    fx_perfect(&p, &perfect);
    CHECK(af_outputs_alloc(&k, c) == 0);
    fx_copy(c, &perfect, &k);
    limit_at(&p, &perfect, &k, 0, "negative scale");
    af_outputs_free(&perfect);
    af_outputs_free(&k);
    af_prepared_free(&p);
    cpu->destroy(cpu);
}

int main(void) {
    negative_scale();
    af_prepared p;
    af_backend *cpu;
    fx_prepare("dtype = fp16\nbatch = 1\nheads_q = 4\nheads_kv = 1\nseqlen_q = 14\nseqlen_kv = 5\nhead_dim_qk = 24\n"
               "head_dim_v = 104\nmask = causal\nbackward = yes\nseed = 1\ndata = normal:16\n",
               &p, &cpu);
    const af_case *c = &p.c;
    af_outputs perfect, k;
    fx_perfect(&p, &perfect);
    CHECK(af_outputs_alloc(&k, c) == 0);
    fx_copy(c, &perfect, &k);
    size_t n, emax = 0, emin = 0;
    fx_tensor(c, &k, AF_T_DQ, &n);
    const double *kappa = p.terms.kappa[AF_T_DQ];
    for (size_t e = 0; e < n; e++) {
        if (kappa[e] > kappa[emax]) emax = e;
        if (kappa[e] > 0 && (kappa[emin] == 0 || kappa[e] < kappa[emin])) emin = e;
    }
    CHECK(kappa[emax] > 0 && kappa[emin] > 0 && kappa[emin] < kappa[emax]);
    limit_at(&p, &perfect, &k, emax, "largest budget");
    limit_at(&p, &perfect, &k, emin, "smallest budget");
    fx_copy(c, &perfect, &k);
    lse_limit(&p, &perfect, &k, 5);
    bias_limit(&p, &perfect, &k, AF_T_O, 1, 9);
    bias_limit(&p, &perfect, &k, AF_T_DQ, 0, 0);
    af_outputs_free(&perfect);
    af_outputs_free(&k);
    af_prepared_free(&p);
    cpu->destroy(cpu);
    CHECK_DONE("test_criterion");
}
