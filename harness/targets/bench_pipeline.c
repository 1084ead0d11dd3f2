/* bench_pipeline.c — figures that matter, measured (never asserted in tests):
 *   1. cpu backend time, b1 h8 s1024 d128 fp16 forward + backward (no mask, causal)
 *   2. the whole per-case pipeline (inputs, oracle, reference, judged run, probes) on the
 *      seed corpus with the cpu backend: cases per second.
 * Usage: bench_pipeline [corpus files...]   (default: the seed corpus is passed by CMake)
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "judge/runner.h"
#include "util/clock.h"

static void bench_cpu_backend(af_backend *cpu) {
    const char *masks[] = {"none", "causal"};
    for (int m = 0; m < 2; m++) {
        char text[256];
        snprintf(text, sizeof text, "heads = 8\nseqlen = 1024\nhead_dim = 128\nbackward = yes\nmask = %s\n", masks[m]);
        af_case c;
        af_error e;
        if (af_case_parse(text, "bench", &c, &e)) return;
        af_runner r;
        memset(&r, 0, sizeof r);
        r.skip_oracle = true;
        af_prepared p;
        char why[256];
        if (af_prepare(&r, &c, &p, why, sizeof why)) {
            fprintf(stderr, "%s\n", why);
            return;
        }
        af_verdict v;
        double t0 = af_clock_mono();
        af_judge(&r, &p, cpu, "", &v, NULL);
        printf("cpu backend b1 h8 s1024 d128 fp16 fwd+bwd mask=%-6s : %.3f s (run %.3f s)\n", masks[m],
               af_clock_mono() - t0, v.info.seconds);
        af_prepared_free(&p);
    }
}

int main(int argc, char **argv) {
    af_registry reg;
    af_registry_init(&reg);
    char why[256];
    af_backend *cpu = af_registry_find(&reg, "cpu", why, sizeof why);
    bench_cpu_backend(cpu);
    af_runner r;
    memset(&r, 0, sizeof r);
    r.reference = cpu;
    af_oracle_opts_default(&r.oracle);
    r.probes = true; /* as `attnfuzz run` does by default */
    af_probe_opts_default(&r.probe_opts);
    double t0 = af_clock_mono(), oracle_s = 0;
    int cases = 0;
    for (int i = 1; i < argc; i++) {
        af_case c;
        af_error e;
        if (af_case_load(argv[i], &c, &e)) continue;
        af_prepared p;
        if (af_prepare(&r, &c, &p, why, sizeof why)) continue;
        af_verdict v;
        af_judge(&r, &p, cpu, "", &v, NULL);
        oracle_s += p.oracle.seconds;
        af_prepared_free(&p);
        cases++;
    }
    double dt = af_clock_mono() - t0;
    if (cases)
        printf("pipeline on %d corpus cases (cpu backend, MPFR oracle, probes on): %.2f s, %.2f cases/s, oracle share "
               "%.0f%%\n",
               cases, dt, cases / dt, 100.0 * oracle_s / dt);
    af_registry_free(&reg);
    return 0;
}
