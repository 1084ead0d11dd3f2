/* bench_host_passes.c — the host passes every judged run of a case pays, at the sizes of
 * long cases, measured on the CPU without an oracle or a backend (never asserted in tests):
 * for each case file, its inputs generated on the host, its outputs filled with finite
 * values (a stand-in for a kernel's: the passes' cost does not depend on them) and the
 * oracle's outputs taken as those values; then, each timed over REPS repetitions (median,
 * milliseconds): the copy of the template a run starts from (af_clone_tensors: clone_fresh
 * allocated afresh, clone with its buffers from the case's pool, as the judge makes it), the input
 * snapshot and the input-mutation check around a run, the buffer checks
 * (af_check_buffers: guards, gaps, poison, NaN / Inf, fully masked rows) and the read of the
 * outputs (af_outputs_read, storage -> double). On a GPU machine these are host work of every
 * run (repeats included) beside the GPU passes; at s = 32k they are seconds
 * (docs/benchmarks.md).
 * The allocator is set as attnfuzz sets it (util/heap.h, ATTNFUZZ_HEAP_KEEP): run it with
 * ATTNFUZZ_HEAP_KEEP=0 beside to see what keeping freed memory saves.
 * Usage: bench_host_passes REPS CASE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/clone.h"
#include "judge/compare.h"
#include "judge/mutation.h"
#include "model/case_measure.h"
#include "model/gen.h"
#include "util/clock.h"
#include "util/heap.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Every judged output element of t (O, LSE; dQ, dK, dV with backward) set to a finite
 * value that depends on its place. */
static void fill_outputs(const af_case *c, af_tensors *t) {
    af_tensor_id outs[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    for (int i = 0; i < (c->backward ? 5 : 2); i++) {
        const af_tensor_view *w = &t->plan.view[outs[i]];
        bool kv = outs[i] == AF_T_DK || outs[i] == AF_T_DV;
        for (int b = 0; b < w->B; b++) {
            int rows = kv ? af_case_len_kv(c, b) : af_case_len_q(c, b);
            for (int h = 0; h < w->H; h++)
                for (int s = 0; s < rows; s++) {
                    int64_t off = af_layout_offset(&t->plan, outs[i], b, h, s, 0);
                    for (int d = 0; d < w->D; d++)
                        af_storage_store(w->storage, t->buf[w->buffer], off + d, (float)((s + d) % 17) * 0.125f);
                }
        }
    }
}

enum { P_CLONE_FRESH, P_CLONE, P_SNAPSHOT, P_MUTATION, P_BUFFERS, P_READ, P_COUNT };
static const char *pass_name[P_COUNT] = {"clone_fresh", "clone", "snapshot", "mutation", "buffers", "read"};

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_host_passes REPS CASE...\n");
        return 2;
    }
    char hwhy[160];
    bool kept = false;
    long long keep = af_heap_keep_from_config(&kept, hwhy, sizeof hwhy);
    if (keep < 0) {
        fprintf(stderr, "bench_host_passes: %s\n", hwhy);
        return 2;
    }
    printf("freed memory kept: %s (ATTNFUZZ_HEAP_KEEP %lld)\n", kept ? "yes" : "no", keep);
    int reps = atoi(argv[1]);
    if (reps < 1 || reps > 100) reps = 3;
    printf("%-34s %14s %9s", "case", "output elems", "gen_ms");
    for (int k = 0; k < P_COUNT; k++) printf(" %11s", pass_name[k]);
    printf("   (ms, median of %d)\n", reps);
    for (int a = 2; a < argc; a++) {
        af_case c;
        af_error err;
        char why[256];
        if (af_case_load(argv[a], &c, &err) != 0) {
            fprintf(stderr, "%s: %s\n", argv[a], err.message);
            continue;
        }
        af_tensors tmpl;
        af_inputs in;
        if (af_tensors_alloc(&tmpl, &c, why, sizeof why)) {
            fprintf(stderr, "%s: %s\n", argv[a], why);
            continue;
        }
        if (af_inputs_alloc(&in, &c)) {
            fprintf(stderr, "%s: out of host memory for the inputs\n", argv[a]);
            af_tensors_free(&tmpl);
            continue;
        }
        double t0 = af_clock_mono();
        int grc = af_inputs_generate(&c, &tmpl, &in);
        double gen_ms = 1e3 * (af_clock_mono() - t0);
        af_outputs exact;
        af_tensors run;
        bool ok = grc == 0 && af_outputs_alloc(&exact, &c) == 0;
        if (ok && af_clone_tensors(&run, &c, &tmpl, NULL, why, sizeof why)) {
            af_outputs_free(&exact);
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "%s: could not set the case up\n", argv[a]);
            af_inputs_free(&in);
            af_tensors_free(&tmpl);
            continue;
        }
        fill_outputs(&c, &run);
        af_outputs_read(&run, &c, &exact);
        af_criterion_terms terms;
        memset(&terms, 0, sizeof terms);
        af_run_info info;
        memset(&info, 0, sizeof info);
        double *ms = calloc((size_t)reps * P_COUNT, sizeof *ms);
        af_clone_pool *pool = af_clone_pool_new(); /* as a prepared case holds one */
        af_verdict *v = malloc(sizeof *v);
        for (int k = 0; ms && v && k < reps; k++) {
            double t1 = af_clock_mono();
            af_tensors w;
            if (af_clone_tensors(&w, &c, &tmpl, NULL, why, sizeof why) == 0) af_clone_release(&w, NULL);
            ms[P_CLONE_FRESH * reps + k] = 1e3 * (af_clock_mono() - t1);
            if (k == 0 && af_clone_tensors(&w, &c, &tmpl, pool, why, sizeof why) == 0) /* the pool's first fill */
                af_clone_release(&w, pool);
            t1 = af_clock_mono();
            if (af_clone_tensors(&w, &c, &tmpl, pool, why, sizeof why) == 0) af_clone_release(&w, pool);
            ms[P_CLONE * reps + k] = 1e3 * (af_clock_mono() - t1);
            t1 = af_clock_mono();
            af_input_snapshot snap;
            bool have_snap = af_input_snapshot_take(&snap, &c, &run) == 0;
            ms[P_SNAPSHOT * reps + k] = 1e3 * (af_clock_mono() - t1);
            af_verdict_init(v, "bench");
            t1 = af_clock_mono();
            af_check_input_mutation(&c, &tmpl, have_snap ? &snap : NULL, &run, &info, 0, v);
            if (have_snap) {
                af_input_snapshot_restore(&snap, &run);
                af_input_snapshot_free(&snap);
            }
            ms[P_MUTATION * reps + k] = 1e3 * (af_clock_mono() - t1);
            af_verdict_init(v, "bench");
            t1 = af_clock_mono();
            af_check_buffers(&c, &run, &exact, NULL, &terms, v);
            ms[P_BUFFERS * reps + k] = 1e3 * (af_clock_mono() - t1);
            if (k == 0 && v->n_findings)
                fprintf(stderr, "%s: the stand-in outputs gave %d buffer finding(s): %s\n", argv[a], v->n_findings,
                        v->findings[0].detail);
            t1 = af_clock_mono();
            af_outputs_read(&run, &c, &exact);
            ms[P_READ * reps + k] = 1e3 * (af_clock_mono() - t1);
        }
        const char *base = strrchr(argv[a], '/');
        double elems = 0;
        af_tensor_id outs[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
        for (int i = 0; i < (c.backward ? 5 : 2); i++) {
            const af_tensor_view *w = &run.plan.view[outs[i]];
            elems += (double)w->B * w->H * w->S * w->D;
        }
        printf("%-34s %14.4g %9.1f", base ? base + 1 : argv[a], elems, gen_ms);
        for (int p = 0; ms && p < P_COUNT; p++) {
            qsort(ms + p * reps, (size_t)reps, sizeof *ms, cmp_double);
            printf(" %11.1f", ms[p * reps + reps / 2]);
        }
        printf("\n");
        fflush(stdout);
        free(ms);
        free(v);
        af_clone_release(&run, NULL);
        af_clone_pool_free(pool);
        af_outputs_free(&exact);
        af_inputs_free(&in);
        af_tensors_free(&tmpl);
    }
    return 0;
}
