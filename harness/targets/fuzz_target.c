/* fuzz_target.c — the libFuzzer target: bytes -> case -> run -> feedback.
 *
 *   ATTNFUZZ_BACKEND  backend under test (default cpu)
 *   ATTNFUZZ_ENGINE   engine ("" = default, "all" = every engine)
 *   ATTNFUZZ_OUT      campaign directory: current/<pid>.case, findings/, pending/,
 *                     workers/<pid>.stats (default: no files written; its "crashes"
 *                     are the cases whose verdict is a crash: AF_PLUGIN_ERROR and the
 *                     like, which libFuzzer never sees as crashes)
 *   ATTNFUZZ_DEFER_NEW=1  new buckets go to ATTNFUZZ_OUT/pending for the campaign to
 *                     minimise (set by `attnfuzz campaign`)
 *   ATTNFUZZ_MAX_WORK work budget of a decoded case (fuzz.h)
 *
 * Findings are not crashes: the target returns 0 and stores them. Backend set-up is
 * lazy (first input): LLVMFuzzerInitialize also runs in -fork / -merge controllers,
 * which must not touch a GPU, so it only sets the mutator's default limits (no
 * registry, no backend call). The workers libFuzzer -fork starts are new processes
 * (exec), so each initialises CUDA itself on its first input. With
 * ATTNFUZZ_DEFER_NEW=1 a finding whose raw signature is known (DIR/rawmap) only bumps
 * its bucket's count; a new one goes to DIR/pending (campaign.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "campaign/session.h"
#include "util/config.h"
#include "util/clock.h"
#include "util/fsutil.h"

/* Semantic feedback: config-space cells and error-ratio buckets (fuzz.h). */
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t extra_counters[AF_FUZZ_COUNTERS];

/* Provided by libFuzzer; absent (NULL) in the plain replay binary. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size) __attribute__((weak));

/* libFuzzer's API is a set of free functions: the target's state has to be global. */
typedef struct {
    bool ready, failed;
    af_session session;
    af_fuzz_limits limits; /* usable before the backend is set up (mutator) */
    bool limits_from_backend;
    long long cases, findings, declined, errors, crashes;
    double first_finding_unix;
    char pid_name[32];
} target_state;

static target_state g_target;

static const char *env_or(af_config_var var, const char *fallback) {
    const char *v = af_config_get(var);
    return v ? v : fallback;
}

static void write_worker_stats(void) {
    const char *out = g_target.session.out_dir;
    if (!out[0]) return;
    char path[1400], text[512];
    af_backend_counters bc;
    memset(&bc, 0, sizeof bc); /* the backend's plan-cache totals, probes' runs included */
    af_backend *be = g_target.session.backend;
    if (be && be->counters) be->counters(be, &bc);
    snprintf(path, sizeof path, "%s/workers", out);
    if (af_mkdirs(path, NULL, 0)) return;
    snprintf(path, sizeof path, "%s/workers/%s.stats", out, g_target.pid_name);
    int n = snprintf(text, sizeof text,
                     "cases %lld\nfindings %lld\ndeclined %lld\nerrors %lld\ncrashes %lld\nfirst_finding_unix %.3f\n"
                     "plan_cache_hits %lld\nplan_cache_misses %lld\ngraph_build_seconds %.3f\n",
                     g_target.cases, g_target.findings, g_target.declined, g_target.errors, g_target.crashes,
                     g_target.first_finding_unix, bc.plan_cache_hits, bc.plan_cache_misses, bc.build_seconds);
    if (n > 0 && (size_t)n < sizeof text) af_write_file_atomic(path, text, (size_t)n, NULL, 0); /* util/fsutil.h */
}

static void setup(void) {
    char why[512];
    const char *backend = env_or(AF_CFG_BACKEND, "cpu");
    /* this process runs the cases itself (a libFuzzer worker, started by exec, not by
     * fork from a process that touched the GPU): the backend is probed here */
    if (af_session_open_ex(&g_target.session, backend, NULL, env_or(AF_CFG_ENGINE, ""), env_or(AF_CFG_OUT, ""),
                           AF_SESSION_INPROCESS, why, sizeof why)) {
        fprintf(stderr, "attnfuzz_fuzz: backend %s: %s\n", backend, why);
        g_target.failed = true;
        exit(2); /* a mis-configured target cannot fuzz anything */
    }
    g_target.session.defer_new = af_config_get(AF_CFG_DEFER_NEW) != NULL;
    g_target.limits = g_target.session.limits;
    g_target.limits_from_backend = true;
    snprintf(g_target.pid_name, sizeof g_target.pid_name, "%d", (int)getpid());
    g_target.ready = true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* no backend work here (controllers run this too); the mutator's limits start
     * from the defaults and follow the backend once it is set up */
    af_fuzz_limits_default(&g_target.limits);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_target.ready) setup();
    af_case c;
    af_fuzz_decode(data, size, &g_target.session.limits, &c);
    af_session_write_current(&g_target.session, &c, g_target.pid_name);
    af_session_result *r = malloc(sizeof *r);
    if (!r) return 0;
    af_session_run(&g_target.session, &c, g_target.session.out_dir[0] ? AF_STORE_FUZZ : AF_STORE_NONE, NULL, r);
    for (size_t i = 0; i < AF_FUZZ_COUNTERS; i++)
        if (r->counters[i]) extra_counters[i] = 1;
    g_target.cases++;
    if (r->status == AF_CASE_NOT_RUN)
        g_target.errors++;
    else if (r->verdict.kind == AF_V_DECLINED)
        g_target.declined++;
    if (af_session_result_is_crash(r)) g_target.crashes++;
    if (r->verdict.n_findings > 0) {
        g_target.findings++;
        if (g_target.first_finding_unix <= 0) g_target.first_finding_unix = af_clock_unix();
    }
    free(r);
    write_worker_stats();
    return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    /* one time in eight, libFuzzer's byte-level mutations (they reach values that no
     * table holds); otherwise one meaningful field change */
    if (LLVMFuzzerMutate && seed % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
    const af_fuzz_limits *lim = g_target.limits_from_backend ? &g_target.session.limits : &g_target.limits;
    return af_fuzz_mutate(data, size, max_size, seed, lim);
}
