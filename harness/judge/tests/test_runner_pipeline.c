/* test_runner_pipeline.c — the runner's pipelined certification (runner.h): a case
 * judged with the certification in the background (the threshold lowered so a small
 * case takes that path) gives the same verdict as the serial path, with the same rows
 * and key columns certified and the same worst gap / bound, recorded in the verdict's
 * judge summary and its JSON ("cert" seconds); af_prepared_free waits for a
 * certification that af_judge never collected; a case below the threshold is serial.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/runner.h"
#include "judge/verdict_json.h"
#include "oracle/gpu/oracle_gpu.h"
#include "util/check.h"

static const char *const text = "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 48\nseqlen_kv = 64\n"
                                "head_dim = 16\nmask = causal\nbackward = yes\nseed = 11\n";

static void judge(af_runner *r, const af_case *c, af_backend *be, af_verdict *v, bool *was_pending) {
    af_prepared p;
    char why[512];
    CHECK_MSG(af_prepare(r, c, &p, why, sizeof why) == 0, "%s", why);
    *was_pending = p.cert_pending != NULL;
    af_judge(r, &p, be, "", v, NULL);
    CHECK(p.cert_pending == NULL && p.oracle_error[0] == 0);
    af_prepared_free(&p);
}

int main(void) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(text, "test_runner_pipeline", &c, &err) == 0, "%s: %s", err.field, err.message);
    af_backend *cpu = af_backend_cpu_new();
    af_runner r;
    memset(&r, 0, sizeof r);
    r.reference = cpu;
    r.ref_choice = AF_REF_CPU;
    af_oracle_opts_default(&r.oracle);
    r.oracle.threads = 2;
    r.oracle.mpfr_budget = 1.0; /* an fp64 tier, certified by MPFR on sampled rows */
    r.oracle.gpu_mpfr_budget = 0;
    af_verdict serial, piped;
    bool pending;
    r.cert_pipeline_work = -1; /* never */
    judge(&r, &c, cpu, &serial, &pending);
    CHECK(!pending && serial.judge.cert_s == 0);
    r.cert_pipeline_work = 1; /* every case */
    judge(&r, &c, cpu, &piped, &pending);
    CHECK(pending);
    CHECK_MSG(piped.kind == serial.kind && piped.kind == AF_V_PASS, "kinds %s / %s", af_verdict_name(piped.kind),
              af_verdict_name(serial.kind));
    CHECK(piped.judge.cert_rows == serial.judge.cert_rows && piped.judge.cert_keys == serial.judge.cert_keys);
    CHECK(piped.judge.cert_rows > 0 && piped.judge.cert_keys > 0);
    CHECK(piped.judge.cert_gap_over_bound == serial.judge.cert_gap_over_bound);
    CHECK(piped.judge.cert_s > 0 && piped.judge.cert_wait_s >= 0 && piped.judge.cert_wait_s <= piped.judge.cert_s + 1);
    /* the sampled rows keep fp64 values instead of MPFR's: ratios agree to far below 1 % */
    for (int t = 0; t < AF_T_COUNT; t++) {
        if (!serial.stats[t].judged) continue;
        double a = serial.stats[t].ratio, b = piped.stats[t].ratio;
        CHECK_MSG(fabs(a - b) <= 1e-6 * fmax(a, b) + 1e-12, "%s ratio %.17g vs %.17g", af_tensor_name((af_tensor_id)t),
                  a, b);
    }
    char line[512];
    af_verdict_line(&piped, line, sizeof line);
    printf("pipelined: %s; %d rows + %d keys certified in %.3f s (waited %.3f s), gap/bound %.3g = serial's\n", line,
           piped.judge.cert_rows, piped.judge.cert_keys, piped.judge.cert_s, piped.judge.cert_wait_s,
           piped.judge.cert_gap_over_bound);
    json_t *j = af_verdict_to_json("x.case", &piped);
    CHECK(j != NULL);
    json_t *secs = json_object_get(json_object_get(j, "judge"), "seconds");
    CHECK(secs && json_real_value(json_object_get(secs, "cert")) == piped.judge.cert_s &&
          json_object_get(secs, "cert_wait") != NULL);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "judge"), "cert_rows")) == piped.judge.cert_rows);
    json_decref(j);
    /* prepared, never judged: freeing waits for the background certification */
    af_prepared p;
    char why[512];
    CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
    CHECK(p.cert_pending != NULL);
    af_prepared_free(&p);
    /* the default threshold keeps a small case serial, except with a usable GPU, where
     * every case certifies in the background */
    r.cert_pipeline_work = 0;
    judge(&r, &c, cpu, &piped, &pending);
    bool gpu = af_oracle_gpu_usable(why, sizeof why) == 0;
    CHECK_MSG(pending == gpu, "default threshold: pending %d with a usable GPU %d", (int)pending, (int)gpu);
    CHECK(piped.kind == AF_V_PASS && piped.judge.cert_rows == serial.judge.cert_rows);
    printf("default threshold: %s (a usable GPU: %s)\n", pending ? "in the background" : "serial", gpu ? "yes" : "no");
    cpu->destroy(cpu);
    CHECK_DONE("test_runner_pipeline");
}
