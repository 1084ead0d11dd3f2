/* test_oracle_pipeline.c — the certification run in the background
 * (af_oracle_run_pipelined + af_oracle_cert_finish) measures what the serial one does:
 *  - the same sampled rows and key columns, the same worst gap / bound and fp64 gap;
 *  - every output element is the fp64 tier's, bit for bit (the sampled rows keep their
 *    fp64 values; the serial run replaces them by MPFR's), so a reader of the outputs
 *    while the certification runs sees values that do not change;
 *  - the outputs are final at return: read them all while the certification runs;
 *  - nothing pending for the MPFR tier (finish(NULL) is 0);
 *  - the certification started before the tier (cert_early 1) or after it (-1) gives the
 *    same figures and outputs; one begun and abandoned frees what it held.
 * Runs on the CPU fp64 tier here and on the GPU tier where one is usable.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "oracle/src/oracle_internal.h"
#include "oracle/tests/oracle_testlib.h"

int main(void) {
    test_shape s = {2, 4, 2, 40, 50, 16, 12, true, true, 3, -1, true, 0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 7, 1.0);
    t.len_q[1] = 30;
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = AF_ORACLE_AUTO;
    o.threads = 2;
    o.mpfr_budget = 1.0; /* over budget: an fp64 tier, certified */
    char why[512] = "";
    af_oracle_result serial, piped, fp64;
    CHECK_MSG(af_oracle_run(&t.p, &o, &serial, why, sizeof why) == 0, "%s", why);
    af_oracle_cert *pending = NULL;
    CHECK_MSG(af_oracle_run_pipelined(&t.p, &o, &piped, &pending, why, sizeof why) == 0, "%s", why);
    CHECK(pending != NULL && piped.cert_rows == 0); /* not yet */
    /* read every output while the certification runs */
    size_t rows = test_rows(&t), keys = test_keys(&t);
    double sum = 0;
    for (size_t x = 0; x < rows * t.p.Dv; x++) sum += piped.out.o[x];
    for (size_t x = 0; x < keys * t.p.Dqk; x++) sum += piped.out.dk[x];
    double cert_s = -1;
    CHECK_MSG(af_oracle_cert_finish(pending, &piped, &cert_s, why, sizeof why) == 0, "%s", why);
    CHECK(isfinite(sum) && cert_s >= 0);
    CHECK_MSG(piped.cert_rows == serial.cert_rows && piped.cert_keys == serial.cert_keys &&
                  piped.mpfr_rows == serial.mpfr_rows,
              "rows %d/%d keys %d/%d", piped.cert_rows, serial.cert_rows, piped.cert_keys, serial.cert_keys);
    CHECK_MSG(piped.cert_gap_over_bound == serial.cert_gap_over_bound &&
                  piped.fp64_vs_mpfr_rel == serial.fp64_vs_mpfr_rel,
              "gap/bound %.17g vs %.17g", piped.cert_gap_over_bound, serial.cert_gap_over_bound);
    CHECK(piped.cert_rows > 0 && piped.cert_keys > 0 && piped.cert_gap_over_bound <= 1.0);
    printf("pipelined: %d rows + %d keys certified in %.3f s, gap/bound %.3g (serial: %d + %d, %.3g)\n",
           piped.cert_rows, piped.cert_keys, cert_s, piped.cert_gap_over_bound, serial.cert_rows, serial.cert_keys,
           serial.cert_gap_over_bound);
    /* the certification started before the tier (beside the CPU tier here), and after it
     * in every case: the same rows, keys and figures */
    for (int early = -1; early <= 1; early += 2) {
        af_oracle_opts oe = o;
        oe.cert_early = early;
        af_oracle_result er;
        CHECK_MSG(af_oracle_run_pipelined(&t.p, &oe, &er, &pending, why, sizeof why) == 0, "%s", why);
        CHECK(pending != NULL);
        CHECK_MSG(af_oracle_cert_finish(pending, &er, NULL, why, sizeof why) == 0, "%s", why);
        CHECK_MSG(er.cert_rows == serial.cert_rows && er.cert_keys == serial.cert_keys &&
                      er.cert_gap_over_bound == serial.cert_gap_over_bound &&
                      er.fp64_vs_mpfr_rel == serial.fp64_vs_mpfr_rel,
                  "cert_early %d: rows %d/%d keys %d/%d gap/bound %.17g/%.17g", early, er.cert_rows, serial.cert_rows,
                  er.cert_keys, serial.cert_keys, er.cert_gap_over_bound, serial.cert_gap_over_bound);
        CHECK_MSG(memcmp(er.out.o, piped.out.o, rows * t.p.Dv * sizeof(double)) == 0 &&
                      memcmp(er.out.dk, piped.out.dk, keys * t.p.Dqk * sizeof(double)) == 0,
                  "cert_early %d: the outputs differ from the default pipelined run's", early);
        af_oracle_result_free(&er);
    }
    /* a certification begun and abandoned (the tier failed): its thread ends after the
     * rows' half and everything it held is freed (the sanitizer build checks the leaks) */
    {
        af_oracle_ctx c; /* its rows' half reads the inputs only: piped's outputs stand for the tier's */
        memset(&c, 0, sizeof c);
        c.p = &t.p;
        c.prec = 128;
        c.backward = true;
        c.out = &piped.out;
        af_oracle_cert *h = NULL;
        CHECK_MSG(af_oracle_cert_begin(&c, &o, 2, why, sizeof why, &h) == 0 && h != NULL, "%s", why);
        af_oracle_cert_abandon(h);
        af_oracle_cert_abandon(NULL); /* nothing begun: nothing to do */
    }
    /* the outputs are the tier's own: run that tier alone (the tier used, uncertified) */
    af_oracle_opts alone = o;
    alone.tier = piped.tier_used == AF_ORACLE_GPU ? AF_ORACLE_GPU : AF_ORACLE_FP64;
    if (alone.tier == AF_ORACLE_FP64) {
        CHECK_MSG(af_oracle_run(&t.p, &alone, &fp64, why, sizeof why) == 0, "%s", why);
        size_t same = 0, n = rows * t.p.Dv;
        for (size_t x = 0; x < n; x++) same += memcmp(&piped.out.o[x], &fp64.out.o[x], sizeof(double)) == 0;
        for (size_t x = 0; x < rows; x++) same += memcmp(&piped.out.lse[x], &fp64.out.lse[x], sizeof(double)) == 0;
        CHECK_MSG(same == n + rows, "%zu of %zu O and LSE elements differ from the fp64 tier's", n + rows - same,
                  n + rows);
        size_t differ = 0; /* the serial run's sampled rows took MPFR's values */
        for (size_t x = 0; x < n; x++) differ += serial.out.o[x] != fp64.out.o[x];
        printf("pipelined outputs = the CPU fp64 tier's bit for bit; the serial run replaced %zu O elements by "
               "MPFR's\n",
               differ);
        af_oracle_result_free(&fp64);
    }
    /* the MPFR tier certifies nothing in the background */
    af_oracle_opts mp = o;
    mp.tier = AF_ORACLE_MPFR;
    af_oracle_result all;
    CHECK_MSG(af_oracle_run_pipelined(&t.p, &mp, &all, &pending, why, sizeof why) == 0, "%s", why);
    CHECK(pending == NULL && all.all_mpfr);
    CHECK(af_oracle_cert_finish(NULL, &all, NULL, why, sizeof why) == 0);
    af_oracle_result_free(&all);
    af_oracle_result_free(&serial);
    af_oracle_result_free(&piped);
    test_problem_free(&t);
    CHECK_DONE("test_oracle_pipeline");
}
