/* test_mxfp8_backward.c — mxfp8 backward on the cpu reference and the judge. The recipe
 * (backends/cpu.c; docs/fp8.md, MXFP8): Q, K and V are dequantised from their MXFP8 blocks
 * (E4M3 x E8M0, 32 along the contraction axis), dO and the gradients are bf16, and the
 * backward's GEMMs take P and dS rounded to bf16, as cudnn-frontend's MXFP8 SDPA backward
 * runs dS K, dS^T Q and P^T dO in BF16 (its PRs 983 and 1123):
 *   1. the cpu backend serves it; dO, dQ, dK, dV are bf16 storage;
 *   2. on causal GQA, padded and outlier cases the reference's gradients are within 2^-4 of
 *      max |exact dX| of the oracle's (bf16 P and dS, bf16 outputs) and not equal to them;
 *   3. the cpu backend passes the whole judge on them (a second instance as the kernel);
 *   4. at the edge (the exact gradients rounded to bf16, the oracle standing for the
 *      reference): one dQ element moved by 0.98 x the allowance passes, by 1.02 x it is a
 *      dQ mismatch at that element.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/tests/criterion_fixture.h"

static const char *const cases[] = {
    "dtype = mxfp8\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 37\nseqlen_kv = 53\nhead_dim = 64\n"
    "mask = causal\nbackward = yes\nseed = 1\n",
    "dtype = mxfp8\nbatch = 2\nheads = 2\nseqlen = 100\nseqlens_q = 100,60\nseqlens_kv = 80,100\nhead_dim = 48\n"
    "mask = padding\nbackward = yes\nseed = 9\ndata = normal:4\n",
    "dtype = mxfp8\nheads_q = 3\nheads_kv = 1\nseqlen_q = 20\nseqlen_kv = 70\nhead_dim_qk = 96\nhead_dim_v = 32\n"
    "mask = causal_bottom_right\nbackward = yes\nseed = 4\ndata = normal:1 outlier_channels:3:20\n",
};

static double max_abs(const double *x, size_t n) {
    double m = 0;
    for (size_t e = 0; e < n; e++)
        if (isfinite(x[e])) m = fmax(m, fabs(x[e]));
    return m;
}

static double max_diff(const double *a, const double *b, size_t n) {
    double m = 0;
    for (size_t e = 0; e < n; e++)
        if (isfinite(a[e]) && isfinite(b[e])) m = fmax(m, fabs(a[e] - b[e]));
    return m;
}

int main(void) {
    af_tensor_id grads[3] = {AF_T_DQ, AF_T_DK, AF_T_DV};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        af_prepared p;
        af_backend *cpu;
        fx_prepare_any(cases[ci], &p, &cpu); /* mxfp8: the per-tensor rule, no term budgets */
        const af_case *c = &p.c;
        /* 1. served, bf16 storage */
        char why[256] = "";
        CHECK_MSG(cpu->supports(cpu, c, why, sizeof why) == AF_RUN_OK, "case %zu declined: %s", ci, why);
        for (int id = AF_T_DO; id <= AF_T_DV; id++)
            CHECK_MSG(p.tensors.plan.view[id].storage == AF_ST_BF16, "case %zu: %s is not bf16", ci,
                      af_tensor_name((af_tensor_id)id));
        /* 2. the reference against the oracle */
        for (int g = 0; g < 3; g++) {
            size_t n;
            double *ref = fx_tensor(c, &p.ref, grads[g], &n), *ex = fx_tensor(c, &p.oracle.out, grads[g], &n);
            double top = max_abs(ex, n), d = max_diff(ref, ex, n);
            printf("case %zu %s: max |exact| %.4g, reference off by %.3g (%.2g of it)\n", ci, af_tensor_name(grads[g]),
                   top, d, d / top);
            CHECK_MSG(top > 0 && d <= 0x1p-4 * top, "case %zu %s: %g of max", ci, af_tensor_name(grads[g]), d / top);
            CHECK_MSG(d > 0, "case %zu %s: the reference equals the oracle exactly", ci, af_tensor_name(grads[g]));
        }
        /* 3. the cpu backend judged whole */
        af_backend *kernel = af_backend_cpu_new();
        af_verdict v;
        af_tensors out;
        af_outputs k;
        char who[64];
        snprintf(who, sizeof who, "case %zu, the cpu backend", ci);
        fx_judge_run_passes(&p, cpu, kernel, who, &v, &out, &k);
        af_outputs_free(&k);
        af_tensors_free(&out);
        kernel->destroy(kernel);
        /* 4. the edge on dQ (case 0 only: one is enough for the rule) */
        if (ci == 0) {
            fx_perfect(&p, &k);
            size_t n, e = ((size_t)1 * c->heads_q + 3) * c->seqlen_q * c->head_dim_qk + 30 * c->head_dim_qk + 5;
            double *dq = fx_tensor(c, &k, AF_T_DQ, &n), *ex = fx_tensor(c, &p.oracle.out, AF_T_DQ, &n);
            CHECK(e < n);
            af_verdict_init(&v, "test");
            CHECK(af_compare_outputs(c, &k, &p.oracle.out, &p.oracle, &p.terms, &v) == 0);
            double allowed = v.stats[AF_T_DQ].allowed;
            CHECK(allowed > 0);
            dq[e] = ex[e] + 0.98 * allowed;
            af_verdict_init(&v, "test");
            int n98 = af_compare_outputs(c, &k, &p.oracle.out, &p.oracle, &p.terms, &v);
            double r98 = v.stats[AF_T_DQ].ratio;
            CHECK_MSG(n98 == 0 && r98 <= 1, "0.98 x: dQ ratio %g, %d findings", r98, n98);
            dq[e] = ex[e] - 1.02 * allowed;
            af_verdict_init(&v, "test");
            int n102 = af_compare_outputs(c, &k, &p.oracle.out, &p.oracle, &p.terms, &v);
            double r102 = v.stats[AF_T_DQ].ratio;
            CHECK_MSG(n102 >= 1 && r102 > 1 && v.findings[0].tensor == AF_T_DQ && v.findings[0].row == 30 &&
                          v.findings[0].h == 3 && v.findings[0].b == 1,
                      "1.02 x: dQ ratio %g, %d findings", r102, n102);
            printf("edge: dQ b1 h3 row 30 allowance %.4g: 0.98x ratio %.3f passes, 1.02x ratio %.3f -> mismatch\n",
                   allowed, r98, r102);
            af_outputs_free(&k);
        }
        af_prepared_free(&p);
        cpu->destroy(cpu);
    }
    CHECK_DONE("test_mxfp8_backward");
}
