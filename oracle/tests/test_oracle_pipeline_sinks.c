/* test_oracle_pipeline_sinks.c — the background certification of a case with learnable
 * sinks and backward (af_oracle_run_pipelined + af_oracle_cert_finish) writes nothing
 * that af_oracle_run_pipelined has freed:
 *  - the per-row dsink shares (B, Hq, Sq) are summed into dsink and freed before
 *    af_oracle_run_pipelined returns, so the certification thread must not write its MPFR
 *    shares there (it did: a heap-use-after-free write per sampled row, which corrupted
 *    the heap of `attnfuzz run` on a bf16 s2048 GQA case on the H200; ASan reports it, and
 *    a buffer of the same size allocated right after the return gets overwritten);
 *  - dsink and every other output are the CPU fp64 tier's, bit for bit (the certification
 *    measures only).
 * One MPFR row sees 2048 keys (milliseconds), so the old code's first write lands well
 * after the return and the allocation below; glibc hands that allocation the freed
 * chunk (same size, same thread).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/tests/oracle_testlib.h"

#define SENTINEL 1234.5

int main(void) {
    test_shape s = {1, 2, 1, 64, 2048, 16, 16, false, false, -1, -1, true, 0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 11, 1.0);
    t.in.feat.sink = 2; /* learnable: random logits, a dsink gradient */
    t.in.sink = calloc((size_t)t.p.Hq, sizeof(double));
    CHECK(t.in.sink);
    uint64_t st = 5;
    for (int h = 0; h < t.p.Hq; h++) t.in.sink[h] = test_fp16(&st, 2.0);
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = AF_ORACLE_AUTO;
    o.threads = 2;
    o.mpfr_budget = 1.0;     /* over budget: an fp64 tier, certified */
    o.gpu_mpfr_budget = 0.0; /* the same tiering with or without a GPU */
    char why[512] = "";
    size_t rows = test_rows(&t);

    af_oracle_result piped;
    af_oracle_cert *pending = NULL;
    CHECK_MSG(af_oracle_run_pipelined(&t.p, &o, &piped, &pending, why, sizeof why) == 0, "%s", why);
    /* the size of the per-row dsink buffer the run just freed (B, Hq, Sq) */
    double *probe = malloc(rows * sizeof *probe);
    CHECK(probe);
    for (size_t x = 0; x < rows; x++) probe[x] = SENTINEL;
    CHECK(pending != NULL && piped.out.dsink != NULL);
    double cert_s = -1;
    CHECK_MSG(af_oracle_cert_finish(pending, &piped, &cert_s, why, sizeof why) == 0, "%s", why);
    CHECK(piped.cert_rows > 0 && piped.cert_gap_over_bound <= 1.0);
    size_t overwritten = 0;
    for (size_t x = 0; x < rows; x++) overwritten += probe[x] != SENTINEL;
    CHECK_MSG(overwritten == 0, "%zu of %zu doubles of a fresh allocation changed during the certification",
              overwritten, rows);
    printf("pipelined with learnable sinks: %d rows + %d keys certified in %.3f s, a fresh allocation untouched\n",
           piped.cert_rows, piped.cert_keys, cert_s);

    /* the certification measures only: dsink is the fp64 tier's, bit for bit */
    if (piped.tier_used == AF_ORACLE_FP64) {
        af_oracle_opts alone = o;
        alone.tier = AF_ORACLE_FP64;
        af_oracle_result fp64;
        CHECK_MSG(af_oracle_run(&t.p, &alone, &fp64, why, sizeof why) == 0, "%s", why);
        CHECK(fp64.out.dsink != NULL);
        for (int h = 0; h < t.p.Hq; h++)
            CHECK_MSG(memcmp(&piped.out.dsink[h], &fp64.out.dsink[h], sizeof(double)) == 0 && piped.out.dsink[h] != 0.0,
                      "dsink[%d] %.17g vs the fp64 tier's %.17g", h, piped.out.dsink[h], fp64.out.dsink[h]);
        af_oracle_result_free(&fp64);
    }
    free(probe);
    af_oracle_result_free(&piped);
    free(t.in.sink);
    t.in.sink = NULL;
    test_problem_free(&t);
    CHECK_DONE("test_oracle_pipeline_sinks");
}
