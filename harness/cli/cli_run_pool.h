/* cli/cli_run_pool.h — `attnfuzz run --jobs N` with N > 1: the cases go through an
 * isolated session's persistent workers (campaign/worker_pool.h), N in flight, and the
 * verdict lines come out in case order, in the format of `run` (one line per case: the
 * case's verdict, af_session_run's choice among its engines). `run` without --jobs (or
 * --jobs 1) judges in its own process as before (cli_run.c). */
#ifndef ATTNFUZZ_CLI_RUN_POOL_H
#define ATTNFUZZ_CLI_RUN_POOL_H

#include <stdbool.h>

#include "judge/runner.h"

typedef struct {
    const char *backend, *engine; /* NULL = the case's */
    bool json, no_probes;
    af_ref_choice reference;
    af_oracle_opts oracle;
    bool threads_given;             /* --threads given: else the oracle gets cores / jobs threads */
    int jobs;                       /* cases in flight, 1..AF_POOL_MAX_WORKERS */
    int worker_cases;               /* --worker-cases: -1 = the session's default, 0 = fresh children */
    int repeats;                    /* --repeats (0 = the runner's default) */
    int deadline_s;                 /* --deadline (0 = the session's default) */
    unsigned long long max_memory;  /* --max-memory in bytes (0 = none) */
    const char *const *plugin_dirs; /* --plugin-dir: where a case's plugin:PATH may load from */
    int n_plugin_dirs;
    bool allow_declined; /* --allow-declined (cli/cli_run_tally.h) */
} af_run_pool_opts;

/* Judge the cases of paths[0..n); returns the exit code of `run`. */
int af_cli_run_pool(const af_run_pool_opts *o, const char *const *paths, int n);

/* One verdict line (or JSON object) of `run` on stdout (cli_run.c). */
void af_cli_run_report(bool json, const char *path, const af_verdict *v);

#endif
