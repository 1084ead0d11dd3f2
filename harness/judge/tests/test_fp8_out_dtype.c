/* test_fp8_out_dtype.c — out_dtype (docs/fp8.md) as a specification, through the runner:
 *   - storage: an fp8_e4m3 / fp8_e5m2 case with out_dtype fp16 / bf16 stores O in that
 *     type with no output scale (descale_o 1, af_output_descale 1), the inputs and the
 *     gradients in the dtype's fp8 as before; out_dtype = same keeps O in fp8 with a
 *     power-of-two descale_o below 1;
 *   - the cpu reference writes O as the fp16 / bf16 rounding of the same fp32 value it
 *     rounds to fp8 with out_dtype = same (within half an fp8 unit of each other, and
 *     different in most elements), and passes its own criterion forward and backward;
 *   - the criterion judges O at its own storage: its subnormal step is fp16's (2^-24, not
 *     E4M3's 2^-9 x descale_o), and on one O row an error at 0.98 x the row's allowance
 *     passes, at 1.02 x it is a mismatch at that row.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/compare.h"
#include "judge/runner.h"
#include "model/numeric.h"
#include "util/check.h"
#include "judge/tests/fp8_fixture.h"

#include "judge/tests/criterion_fixture.h"

static af_runner runner;

static void prepare(af_prepared *p, const char *text) { f8_prepare(&runner, p, text, "test_fp8_out_dtype", false); }

static const char *const base =
    "batch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 48\nhead_dim = 32\nmask = causal\nbackward = yes\nseed = 17\n";

static void test_storage_and_reference(void) {
    static const char *const dtypes[] = {"fp8_e4m3", "fp8_e5m2"};
    static const char *const outs[] = {"fp16", "bf16"};
    for (int di = 0; di < 2; di++)
        for (int oi = 0; oi < 2; oi++) {
            char text[512];
            snprintf(text, sizeof text, "dtype = %s\nout_dtype = %s\n%s", dtypes[di], outs[oi], base);
            af_prepared p, same;
            prepare(&p, text);
            snprintf(text, sizeof text, "dtype = %s\n%s", dtypes[di], base);
            prepare(&same, text);
            const af_tensors *t = &p.tensors;
            af_storage want = oi == 0 ? AF_ST_F16 : AF_ST_BF16, fp8 = di == 0 ? AF_ST_E4M3 : AF_ST_E5M2;
            CHECK(t->plan.view[AF_T_O].storage == want);
            CHECK(t->descale_o == 1.0f && af_output_descale(t, AF_T_O) == 1.0);
            CHECK(same.tensors.plan.view[AF_T_O].storage == fp8 && same.tensors.descale_o < 1.0f);
            for (int id = AF_T_DO; id <= AF_T_DV; id++) CHECK(t->plan.view[id].storage == fp8);
            CHECK(t->plan.view[AF_T_Q].storage == fp8 && t->descale_q == same.tensors.descale_q);
            /* the reference: O = the wide rounding of the value it casts to fp8 under `same` */
            CHECK(p.have_ref && same.have_ref);
            const af_case *c = &p.c;
            size_t n = (size_t)c->batch * c->heads_q * c->seqlen_q * c->head_dim_v;
            size_t differ = 0;
            /* the same fp32 value stored twice: within half an fp8 unit (plus the wide rounding
             * and a subnormal step of the fp8 O) of each other */
            double half = fp8 == AF_ST_E4M3 ? 0x1p-4 : 0x1p-3, wide_u = oi == 0 ? 0x1p-11 : 0x1p-8;
            double sub = (fp8 == AF_ST_E4M3 ? 0x1p-9 : 0x1p-16) * same.tensors.descale_o;
            for (size_t e = 0; e < n; e++) {
                double wide = p.ref.o[e], narrow = same.ref.o[e];
                double bound = (half + wide_u) * fabs(wide) + sub;
                CHECK_MSG(fabs(wide - narrow) <= bound, "O[%zu]: %s %g, fp8 %g: not the same value", e, outs[oi], wide,
                          narrow);
                differ += wide != narrow;
            }
            CHECK_MSG(differ > n / 4, "%s -> %s: O equals the fp8 O in %zu of %zu elements", dtypes[di], outs[oi],
                      n - differ, n);
            af_verdict v;
            af_judge(&runner, &p, runner.reference, "", &v, NULL);
            CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "%s -> %s: the cpu fails its own criterion: %s",
                      dtypes[di], outs[oi], af_verdict_name(v.kind));
            printf("%s -> %s: O stored %s, descale_o 1; %zu of %zu O elements differ from the fp8 O; cpu passes "
                   "(worst O ratio %.3f)\n",
                   dtypes[di], outs[oi], outs[oi], differ, n, v.stats[AF_T_O].ratio);
            af_prepared_free(&p);
            af_prepared_free(&same);
        }
}

static void test_criterion_edge(void) {
    af_prepared p;
    prepare(&p, "dtype = fp8_e4m3\nout_dtype = fp16\nbatch = 1\nheads = 2\nseqlen = 48\nhead_dim = 32\nmask = causal\n"
                "seed = 12\n");
    CHECK_MSG(p.terms.e4m3_step[AF_T_O] == 0x1p-24, "O's step %g, expected fp16's 2^-24", p.terms.e4m3_step[AF_T_O]);
    fx_edge_row30(&p, "fp16 O of an fp8_e4m3 case");
    af_prepared_free(&p);
}

int main(void) {
    f8_runner_open(&runner);
    test_storage_and_reference();
    test_criterion_edge();
    f8_runner_close(&runner);
    CHECK_DONE("test_fp8_out_dtype");
}
