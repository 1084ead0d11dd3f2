/* test_criterion_headroom.c — the measured headroom of the fp16/bf16 criterion
 * (verdict.h), quoted in docs/criterion.md; run `build/test_criterion_headroom` to measure:
 *
 *   on b1 h2 s128 d64 with backward, mask none and causal, fp16 and bf16:
 *   1. the fraction of the allowance a perfect kernel (the exact outputs rounded once
 *      to the output type) uses: its worst tensor ratio;
 *   2. the largest uniform relative error eps that still passes when every O, dQ, dK,
 *      dV element of the perfect kernel is x(1 + eps), and when only one query row of
 *      O (b 0, h 0, i 64) is (bisection to 2 %, printed in units u of the dtype).
 * It asserts what the issue measured the per-tensor rule to pass is now caught:
 * every element x(1 + 0.15 %) fp16 / x(1 + 1.0 %) bf16, one row x(1 + 0.4 %) fp16 /
 * x(1 + 2.6 %) bf16, and that a perfect kernel stays below half the allowance.
 */
#include "judge/tests/criterion_fixture.h"

/* k = perfect, then tensors in [t0, t1) x(1 + eps) (one_row: only O's row (0, 0, 64)). */
static bool passes(const af_prepared *p, const af_outputs *perfect, af_outputs *k, double eps, bool one_row) {
    const af_case *c = &p->c;
    af_tensor_id ids[4] = {AF_T_O, AF_T_DQ, AF_T_DK, AF_T_DV};
    for (int t = 0; t < 4; t++) {
        size_t n;
        double *d = fx_tensor(c, k, ids[t], &n);
        const double *s = fx_tensor(c, (af_outputs *)perfect, ids[t], &n);
        for (size_t e = 0; e < n; e++) d[e] = s[e];
        if (one_row && ids[t] == AF_T_O) {
            for (int x = 0; x < c->head_dim_v; x++) d[(size_t)64 * c->head_dim_v + x] *= 1.0 + eps;
        } else if (!one_row) {
            for (size_t e = 0; e < n; e++) d[e] *= 1.0 + eps;
        }
    }
    size_t n;
    memcpy(fx_tensor(c, k, AF_T_LSE, &n), perfect->lse, c->batch * c->heads_q * c->seqlen_q * sizeof(double));
    af_verdict v;
    double worst;
    return fx_judge(p, k, &v, &worst) == 0;
}

/* Largest eps in [0, hi] that passes, to 2 %. */
static double largest_passing(const af_prepared *p, const af_outputs *perfect, af_outputs *k, double hi, bool one_row) {
    double lo = 0;
    CHECK(passes(p, perfect, k, 0, one_row));
    while (hi - lo > 0.02 * hi) {
        double mid = 0.5 * (lo + hi);
        if (passes(p, perfect, k, mid, one_row))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int main(void) {
    const char *dts[2] = {"fp16", "bf16"}, *masks[2] = {"none", "causal"};
    for (int di = 0; di < 2; di++)
        for (int mi = 0; mi < 2; mi++) {
            char text[256];
            snprintf(text, sizeof text,
                     "dtype = %s\nheads = 2\nseqlen = 128\nhead_dim = 64\nmask = %s\nbackward = yes\n"
                     "seed = 3\n",
                     dts[di], masks[mi]);
            af_prepared p;
            af_backend *cpu;
            fx_prepare(text, &p, &cpu);
            double u = di == 0 ? 0x1p-10 : 0x1p-7;
            af_outputs perfect, k;
            fx_perfect(&p, &perfect);
            CHECK(af_outputs_alloc(&k, &p.c) == 0);
            af_verdict v;
            double perfect_ratio;
            CHECK(fx_judge(&p, &perfect, &v, &perfect_ratio) == 0);
            double all = largest_passing(&p, &perfect, &k, 8 * u, false);
            double row = largest_passing(&p, &perfect, &k, 16 * u, true);
            printf("%s %-6s perfect kernel uses %.0f %% of the allowance; passes: every element x(1 + %.3f %%) = "
                   "%.2f u, one O row x(1 + %.3f %%) = %.2f u\n",
                   dts[di], masks[mi], 100 * perfect_ratio, 100 * all, all / u, 100 * row, row / u);
            CHECK(perfect_ratio < 0.5);
            CHECK_MSG(all < (di == 0 ? 0.0015 : 0.010), "uniform %.4f passes", all);
            CHECK_MSG(row < (di == 0 ? 0.004 : 0.026), "one row %.4f passes", row);
            af_outputs_free(&perfect);
            af_outputs_free(&k);
            af_prepared_free(&p);
            cpu->destroy(cpu);
        }
    CHECK_DONE("test_criterion_headroom");
}
