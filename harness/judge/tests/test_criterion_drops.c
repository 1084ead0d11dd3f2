/* test_criterion_drops.c — the criterion on cases whose mask drops keys (block_mask,
 * custom_mask: oracle/mask_spec.h), as a specification. The term budgets sum over a row's
 * kept keys only: a dropped key has P = 0 (criterion.c row_terms); before, the loop ran over
 * the row's envelope with P = exp(s - lse) of the dropped scores, and the budgets came out
 * inf or NaN (a kernel equal to the reference failed the tensor bias check at 2^-24).
 *  1. on two cases the CI campaigns found (corpora/regression/cpu-drops-*.case: a block mask
 *     and an element mask, backward): every tensor's allowance is finite and a correctly
 *     rounded kernel (each output the exact value rounded once) passes;
 *  2. at the edge, on an O element of a row that keeps keys: 0.98 x its allowance passes,
 *     1.02 x is a mismatch at that row (fx_edge_o).
 */
#include <math.h>
#include <stdio.h>

#include "judge/tests/criterion_fixture.h"

static const char *const cases[] = {
    "dtype = fp16\nseqlen_q = 7\nseqlen_kv = 75\nhead_dim = 8\nbackward = yes\nseed = 1\ndata = normal:16\n"
    "block_mask = 32 32 0.8625\n",
    "dtype = fp16\nseqlen_q = 4\nseqlen_kv = 3\nhead_dim = 7\nmask = causal\nalign = bottom_right\nbackward = yes\n"
    "seed = 1\ndata = normal:1 outlier_channels:4:8 sink:-3e+01\ncustom_mask = 0.9625\n",
};

int main(void) {
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        af_prepared p;
        af_backend *cpu;
        fx_prepare_any(cases[ci], &p, &cpu);
        const af_case *c = &p.c;
        /* 1. finite allowances; a correctly rounded kernel passes */
        af_outputs k;
        fx_perfect(&p, &k); /* allocates k */
        af_verdict v;
        double worst;
        int n = fx_judge(&p, &k, &v, &worst);
        for (int t = 0; t < AF_T_COUNT; t++)
            if (v.stats[t].judged)
                CHECK_MSG(isfinite(v.stats[t].allowed), "case %zu %s: allowance %g", ci,
                          af_tensor_name((af_tensor_id)t), v.stats[t].allowed);
        CHECK_MSG(n == 0, "case %zu: a correctly rounded kernel has %d finding(s) (worst ratio %g)", ci, n, worst);
        /* 2. the edge on the O row (head 0) with the largest |O| */
        int D = c->head_dim_v, row = 0;
        double best = -1;
        for (int i = 0; i < c->seqlen_q; i++)
            if (fabs(p.oracle.out.o[(size_t)i * D]) > best) best = fabs(p.oracle.out.o[(size_t)i * D]), row = i;
        CHECK(best > 0);
        fx_copy(c, &p.oracle.out, &k);
        double pass_ratio, fail_ratio;
        double allowed = fx_edge_o(&p, &k, (size_t)row * D, row, 0, &pass_ratio, &fail_ratio);
        CHECK(isfinite(allowed));
        printf("case %zu: perfect kernel worst ratio %.3f; O row %d allowance %.4g: 0.98x %.3f passes, 1.02x %.3f -> "
               "mismatch\n",
               ci, worst, row, allowed, pass_ratio, fail_ratio);
        af_outputs_free(&k);
        af_prepared_free(&p);
        cpu->destroy(cpu);
    }
    CHECK_DONE("test_criterion_drops");
}
