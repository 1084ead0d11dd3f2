/* test_fp8_sinks.c — sinks (softmax = off_by_one | learnable) with fp8_e4m3 / fp8_e5m2
 * (docs/fp8.md "Sinks"), through the runner:
 *   - the cpu reference (the fp8 recipe with the sink's exp(a_h - m) in Z, never cast to
 *     P8) passes the fp8 criterion against the oracle, forward and (learnable) backward
 *     with dsink;
 *   - a kernel that drops the sink's term (the same case's outputs without sinks) is a
 *     finding: the sink changes the answer by more than the fp8 allowance;
 *   - the criterion's edge on an O row: 0.98 x the row's allowance passes, 1.02 x is a
 *     mismatch at that row.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/compare.h"
#include "judge/runner.h"
#include "util/check.h"

#include "judge/tests/criterion_fixture.h"
#include "judge/tests/fp8_fixture.h"

static af_runner runner;

static void prepare(af_prepared *p, const char *text) { f8_prepare(&runner, p, text, "test_fp8_sinks", true); }

static void test_reference_and_blind_kernel(void) {
    const char *dts[] = {"fp8_e4m3", "fp8_e5m2"};
    const char *sinks[] = {"off_by_one\n", "learnable\nbackward = yes\n"};
    for (int di = 0; di < 2; di++)
        for (int si = 0; si < 2; si++) {
            char text[512], vanilla[512];
            const char *shape = "heads = 2\nseqlen = 32\nhead_dim = 64\nmask = causal\nseed = 21\n";
            snprintf(text, sizeof text, "dtype = %s\n%ssoftmax = %s", dts[di], shape, sinks[si]);
            snprintf(vanilla, sizeof vanilla, "dtype = %s\n%s%s", dts[di], shape, si ? "backward = yes\n" : "");
            af_prepared p, q;
            prepare(&p, text);
            af_verdict v;
            af_judge(&runner, &p, runner.reference, "", &v, NULL);
            CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "%s %s: the cpu fails: %s", dts[di], sinks[si],
                      af_verdict_name(v.kind));
            double worst = 0;
            for (int id = 0; id < AF_T_COUNT; id++) worst = fmax(worst, v.stats[id].ratio);
            /* the sink-blind kernel: the vanilla case's exact O (same Q, K, V: same seed); the
             * causal mask's top rows see few keys, where the sink's share is large */
            prepare(&q, vanilla);
            af_outputs k;
            CHECK(af_outputs_alloc(&k, &p.c) == 0);
            fx_copy(&p.c, &p.oracle.out, &k);
            size_t no = (size_t)p.c.batch * p.c.heads_q * p.c.seqlen_q * p.c.head_dim_v;
            memcpy(k.o, q.oracle.out.o, no * sizeof *k.o);
            af_verdict vb;
            double worst_blind;
            CHECK_MSG(fx_judge(&p, &k, &vb, &worst_blind) >= 1, "%s %s: a kernel without the sink passes", dts[di],
                      sinks[si]);
            printf("%s softmax = %.*s: cpu passes (worst ratio %.3f); without the sink's term O ratio %.1f\n", dts[di],
                   (int)strcspn(sinks[si], "\n"), sinks[si], worst, vb.stats[AF_T_O].ratio);
            af_outputs_free(&k);
            af_prepared_free(&q);
            af_prepared_free(&p);
        }
}

static void test_criterion_edge(void) {
    af_prepared p;
    prepare(&p, "dtype = fp8_e4m3\nheads = 2\nseqlen = 48\nhead_dim = 64\nmask = causal\nsoftmax = learnable\n"
                "seed = 12\n");
    fx_edge_row30(&p, "fp8_e4m3 O with learnable sinks");
    af_prepared_free(&p);
}

int main(void) {
    f8_runner_open(&runner);
    test_reference_and_blind_kernel();
    test_criterion_edge();
    f8_runner_close(&runner);
    CHECK_DONE("test_fp8_sinks");
}
