/* test_cudnn_fp8_stats.c — F5 (docs/cudnn-findings.md): how far cuDNN's FP8 forward
 * Stats (LSE) are from the exact LSE, and whether the per-row criterion of compare.c
 * (allowed + AF_FP8_ACC_UNIT * A_i, A_i = max_j scale * sum_d |q_d k_jd|) covers it.
 *
 * Per case and engine config it prints, over the judged rows:
 *   max |dLSE|, max |dLSE| / A_i as a power of two (the bits the score accumulation
 *   keeps, seen through the LSE), max |dLSE| / |LSE|;
 *   for causal top-left cases, row 0 sees key 0 only, so LSE_0 = S_00 and the kernel's
 *   LSE_0 IS its score: d0 = LSE_0(kernel) - S_00 (exact) over every (b, h), its range
 *   relative to S_00 (a constant ratio would mean a rounded scale factor) and relative
 *   to A_0, and how often |kernel| < |exact| (truncation toward zero).
 * It fails when a run's verdict is not a pass (O, LSE with the per-row allowance).
 * The FP8 graph is switched on here (ATTNFUZZ_CUDNN_FP8=1). Without a GPU: SKIP.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cudnn/cudnn_backend.h"
#include "judge/runner.h"
#include "util/check.h"

static const char *const corpus[] = {
    "corpora/gpu/fp8-causal-b2h4s256d128-fwd.case",
    "corpora/gpu/fp8-nomask-s128-d64-fwd.case",
    "corpora/gpu/fp8-padding-causal-d128-fwd.case",
    "corpora/gpu/fp8-gqa-8to2-causal-d128-fwd.case",
};
/* d <= 128 only: d = 256 faults on eng2_k24=32 (F4) and would end the process's context */
static const char *const extra[] = {
    "dtype = fp8_e4m3\nbatch = 4\nheads = 8\nseqlen = 128\nhead_dim = 128\nmask = causal\nseed = 901\n",
    "dtype = fp8_e4m3\nbatch = 4\nheads = 8\nseqlen = 128\nhead_dim = 64\nmask = causal\nseed = 902\n"
    "data = uniform:4\n",
    "dtype = fp8_e4m3\nbatch = 2\nheads = 8\nseqlen = 128\nhead_dim = 128\nmask = causal\nseed = 903\n"
    "data = normal:1 outlier_channels:4:16\n",
    "dtype = fp8_e4m3\nbatch = 2\nheads = 8\nseqlen = 128\nhead_dim = 128\nmask = causal\nseed = 904\n"
    "data = normal:3\nscale = 1.0\n",
};

static int failures = 0;

static void run_case(af_backend *be, af_runner *runner, const char *label, const af_case *c) {
    char why[1024];
    af_prepared prep;
    CHECK_MSG(af_prepare(runner, c, &prep, why, sizeof why) == 0, "%s: %s", label, why);
    CHECK_MSG(prep.oracle.score_abs != NULL, "%s: the runner did not fill score_abs for fp8", label);
    static char names[64][AF_NAME_MAX];
    if (be->supports(be, c, why, sizeof why) != AF_RUN_OK) {
        printf("%s: DECLINED %s\n", label, why);
        failures++;
        af_prepared_free(&prep);
        return;
    }
    int n = be->engines(be, c, names, 64, why, sizeof why);
    if (n <= 0) {
        printf("%s: no engine: %s\n", label, n < 0 ? why : "none finalizes");
        failures++;
        af_prepared_free(&prep);
        return;
    }
    bool row0 = c->mask == AF_MASK_CAUSAL && c->align == AF_ALIGN_TOP_LEFT && c->window_left < 0;
    for (int e = 0; e < n; e++) {
        af_verdict v;
        af_tensors out;
        memset(&out, 0, sizeof out);
        af_judge(runner, &prep, be, names[e], &v, &out);
        af_outputs got;
        double emax = 0, bits = 0, rel = 0, d0min = INFINITY, d0max = -INFINITY, d0a = 0;
        long toward0 = 0, rows0 = 0;
        if (out.alloc[AF_BUF_LSE] && af_outputs_alloc(&got, c) == 0) {
            af_outputs_read(&out, c, &got);
            double worst = 0;
            for (int b = 0; b < c->batch; b++)
                for (int h = 0; h < c->heads_q; h++)
                    for (int i = 0; i < af_case_len_q(c, b); i++) {
                        size_t k = ((size_t)b * c->heads_q + h) * c->seqlen_q + i;
                        double x = got.lse[k], o = prep.oracle.out.lse[k], a = prep.oracle.score_abs[k];
                        if (!isfinite(x) || !isfinite(o) || a <= 0) continue;
                        double d = fabs(x - o);
                        if (d > emax) emax = d;
                        if (d / a > worst) worst = d / a;
                        if (fabs(o) > 0 && d / fabs(o) > rel) rel = d / fabs(o);
                        if (row0 && i == 0 && o != 0) {
                            double r = (x - o) / o;
                            if (r < d0min) d0min = r;
                            if (r > d0max) d0max = r;
                            if (fabs(x - o) / a > d0a) d0a = fabs(x - o) / a;
                            toward0 += fabs(x) < fabs(o);
                            rows0++;
                        }
                    }
            bits = worst > 0 ? log2(worst) : -INFINITY;
            af_outputs_free(&got);
        }
        bool ok = v.kind == AF_V_PASS && v.n_findings == 0;
        char line[600];
        af_verdict_line(&v, line, sizeof line);
        printf("%s engine %-16s %s O ratio %.3f LSE ratio %.3f | max|dLSE| %.3g = 2^%.2f A_i, rel %.3g", label,
               v.info.engine[0] ? v.info.engine : "(default)", ok ? "ok  " : "FAIL", v.stats[AF_T_O].ratio,
               v.stats[AF_T_LSE].ratio, emax, bits, rel);
        if (rows0)
            printf(" | row0 (%ld rows): d0/S00 in [%.3g, %.3g], max|d0|/A = 2^%.2f, |kernel|<|exact| in %ld", rows0,
                   d0min, d0max, d0a > 0 ? log2(d0a) : -INFINITY, toward0);
        printf(" | %s\n", line);
        if (!ok) failures++;
        af_tensors_free(&out);
    }
    af_prepared_free(&prep);
}

int main(void) {
    setenv("ATTNFUZZ_CUDNN_FP8", "1", 1);
    af_backend *be = af_backend_cudnn_new();
    CHECK(be != NULL);
    char why[512];
    if (be->available(be, why, sizeof why) != 0) {
        printf("SKIP test_cudnn_fp8_stats: %s\n", why);
        be->destroy(be);
        return CHECK_SKIP_CODE;
    }
    char desc[700];
    af_cudnn_describe(be, desc, sizeof desc);
    printf("test_cudnn_fp8_stats: %s; AF_FP8_ACC_UNIT = 2^%.0f\n", desc, log2(AF_FP8_ACC_UNIT));
    af_runner runner;
    memset(&runner, 0, sizeof runner);
    af_oracle_opts_default(&runner.oracle);
    runner.reference = af_backend_cpu_new();
    CHECK(runner.reference);
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        af_case c;
        af_error err;
        CHECK_MSG(af_case_load(corpus[i], &c, &err) == 0, "%s: %s", corpus[i], err.message);
        run_case(be, &runner, corpus[i], &c);
    }
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        af_case c;
        af_error err;
        CHECK_MSG(af_case_parse(extra[i], "extra", &c, &err) == 0, "%s: %s", err.field, err.message);
        char label[32];
        snprintf(label, sizeof label, "extra %zu", i);
        run_case(be, &runner, label, &c);
    }
    runner.reference->destroy(runner.reference);
    be->destroy(be);
    CHECK_MSG(failures == 0, "%d fp8 engine runs failed", failures);
    CHECK_DONE("test_cudnn_fp8_stats");
}
