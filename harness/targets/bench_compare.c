/* bench_compare.c — the judge's host share of one case, measured on the CPU (never
 * asserted in tests): for each case file, the comparison (af_compare_outputs: buffer
 * summaries, the criterion's row / element / bias checks with the element budgets, the
 * stored O's and LSE's shares) of a kernel equal to the cpu reference, timed over
 * `reps` runs (median), after the budgets are computed on the host; and over the cpu
 * backend's run of the case, the buffer checks (af_check_buffers) and the read of the outputs
 * (af_outputs_read), the two host passes every judged run also pays.
 * Usage: bench_compare REPS CASE...   (e.g. the mix of ci/bench/gen_mix.py)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/compare.h"
#include "judge/problem.h"
#include "judge/clone.h"
#include "judge/runner.h"
#include "model/case_measure.h"
#include "util/clock.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_compare REPS CASE...\n");
        return 2;
    }
    int reps = atoi(argv[1]);
    if (reps < 1 || reps > 100) reps = 3;
    af_backend *cpu = af_backend_cpu_new();
    printf("%-28s %12s %10s %12s %12s %12s\n", "case", "work", "terms_s", "compare_ms", "buffers_ms", "read_ms");
    for (int a = 2; a < argc; a++) {
        af_case c;
        af_error err;
        if (af_case_load(argv[a], &c, &err) != 0) {
            fprintf(stderr, "%s: %s\n", argv[a], err.message);
            continue;
        }
        af_runner r;
        memset(&r, 0, sizeof r);
        af_oracle_opts_default(&r.oracle);
        r.reference = cpu;
        r.ref_choice = AF_REF_CPU;
        af_prepared p;
        char why[256];
        if (af_prepare(&r, &c, &p, why, sizeof why) != 0 || !p.have_ref) {
            fprintf(stderr, "%s: %s\n", argv[a], why);
            continue;
        }
        double t0 = af_clock_mono();
        if (!p.terms.ready) { /* the budgets the GPU pass gives a GPU machine, here on the host */
            af_oracle_problem prob;
            int lq[AF_MAX_BATCH], lkv[AF_MAX_BATCH];
            af_problem_from_case(&prob, &p.c, &p.inputs, lq, lkv);
            af_criterion_terms_free(&p.terms);
            af_criterion_terms_compute_on(&prob, &p.oracle.out, c.dtype, AF_TERMS_HOST, &p.terms, NULL);
        }
        double terms_s = af_clock_mono() - t0;
        /* ms[k], bms[k], rms[k]: the comparison, the buffer checks and the read of the
         * outputs (storage -> double) of repetition k, over the cpu backend's run */
        double *ms = calloc((size_t)reps, sizeof *ms), *bms = calloc((size_t)reps, sizeof *bms),
               *rms = calloc((size_t)reps, sizeof *rms);
        af_verdict *v = malloc(sizeof *v);
        af_tensors t;
        af_run_info info;
        memset(&info, 0, sizeof info);
        bool ran = af_clone_tensors(&t, &p.c, &p.tensors, p.clones, why, sizeof why) == 0;
        if (ran && cpu->run(cpu, &p.c, "", &t, &info, why, sizeof why) != AF_RUN_OK) {
            af_clone_release(&t, p.clones);
            ran = false;
        }
        af_outputs out;
        bool have_out = ran && af_outputs_alloc(&out, &p.c) == 0;
        for (int k = 0; ms && bms && rms && v && k < reps; k++) {
            af_verdict_init(v, "bench");
            double t1 = af_clock_mono();
            af_compare_outputs(&p.c, &p.ref, &p.ref, &p.oracle, &p.terms, v);
            ms[k] = 1e3 * (af_clock_mono() - t1);
            if (!have_out) continue;
            af_verdict_init(v, "bench");
            t1 = af_clock_mono();
            af_check_buffers(&p.c, &t, &p.oracle.out, p.have_ref ? &p.ref : NULL, &p.terms, v);
            bms[k] = 1e3 * (af_clock_mono() - t1);
            t1 = af_clock_mono();
            af_outputs_read(&t, &p.c, &out);
            rms[k] = 1e3 * (af_clock_mono() - t1);
        }
        if (have_out) af_outputs_free(&out);
        if (ran) af_clone_release(&t, p.clones);
        if (ms) qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
        if (bms) qsort(bms, (size_t)reps, sizeof *bms, cmp_double);
        if (rms) qsort(rms, (size_t)reps, sizeof *rms, cmp_double);
        const char *base = strrchr(argv[a], '/');
        printf("%-28s %12.3g %10.3f %12.2f %12.2f %12.2f\n", base ? base + 1 : argv[a], af_case_work(&c), terms_s,
               ms ? ms[reps / 2] : -1.0, have_out && bms ? bms[reps / 2] : -1.0,
               have_out && rms ? rms[reps / 2] : -1.0);
        fflush(stdout);
        free(ms);
        free(bms);
        free(rms);
        free(v);
        af_prepared_free(&p);
    }
    cpu->destroy(cpu);
    return 0;
}
