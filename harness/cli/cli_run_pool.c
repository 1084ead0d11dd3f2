/* cli/cli_run_pool.c — `attnfuzz run --jobs N` through persistent workers, verdict lines
 * in case order (cli/cli_run_pool.h). */
#include "cli/cli_run_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "campaign/session.h"
#include "campaign/worker_pool.h"
#include "cli/cli.h"
#include "cli/cli_run_tally.h"

#define MAX_BACKENDS 16 /* distinct backends one `run` keeps sessions open for */

/* One backend's session, opened on its first case and kept (its workers persist). */
typedef struct {
    char name[AF_NAME_MAX];
    af_session s;
    bool open;
    bool unknown;  /* no such backend: its cases are bad input */
    char why[512]; /* why it did not open */
} run_backend;

/* Everything one `run --jobs` works on. */
typedef struct {
    const af_run_pool_opts *o;
    const char *const *paths;
    int n;
    af_case *cases;             /* [n] */
    bool *loaded;               /* [n] false: the case file did not parse (said on stderr) */
    const char **bname;         /* [n] the backend each case runs on (af_cli_choose_backend) */
    af_session_result *results; /* [n] */
    bool *finished;             /* [n] */
    int printed;                /* cases [0, printed) are reported */
    run_backend backends[MAX_BACKENDS];
    int n_backends;
    af_run_tally tally; /* the summary line and the exit code */
} run_pool;

static const char *backend_of(const run_pool *rp, int i) { return rp->bname[i]; }

/* The session of backend `name`, opened with run's options; NULL when there is no room
 * for another (said on stderr). */
static run_backend *backend_session(run_pool *rp, const char *name) {
    for (int i = 0; i < rp->n_backends; i++)
        if (!strcmp(rp->backends[i].name, name)) return &rp->backends[i];
    if (rp->n_backends == MAX_BACKENDS) {
        fprintf(stderr, "attnfuzz run: --jobs: more than %d backends in one run\n", MAX_BACKENDS);
        return NULL;
    }
    run_backend *b = &rp->backends[rp->n_backends++];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    const af_run_pool_opts *o = rp->o;
    if (!strncmp(name, "worker:", 7)) { /* a worker is its own isolation: run without --jobs */
        snprintf(b->why, sizeof b->why, "backend '%s': --jobs does not serve worker backends (run without --jobs)",
                 name);
        b->unknown = true;
        return b;
    }
    if (af_session_open_ex(&b->s, name, NULL, o->engine ? o->engine : "", "", AF_SESSION_NO_LIMITS, b->why,
                           sizeof b->why)) {
        b->unknown = strstr(b->why, "unknown backend") != NULL;
        return b;
    }
    b->open = true;
    b->s.runner.oracle = o->oracle;
    if (!o->threads_given) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        int per_job = cores > 0 ? (int)(cores / o->jobs) : 1;
        b->s.runner.oracle.threads = per_job > 0 ? per_job : 1;
    }
    b->s.runner.probes = !o->no_probes;
    b->s.runner.ref_choice = o->reference;
    b->s.runner.repeats = o->repeats;
    b->s.max_memory = o->max_memory;
    if (o->deadline_s > 0) b->s.default_deadline_s = o->deadline_s;
    if (o->worker_cases >= 0) b->s.worker_cases = o->worker_cases;
    b->s.cases_at_once = o->jobs;
    return b;
}

/* Print every finished case at the front, in case order. */
static void report_ready(run_pool *rp) {
    while (rp->printed < rp->n && rp->finished[rp->printed]) {
        int i = rp->printed++;
        if (!rp->loaded[i]) continue;
        const af_session_result *r = &rp->results[i];
        if (r->status == AF_CASE_NOT_RUN)
            fprintf(stderr, "attnfuzz: %s: %s\n", rp->paths[i], r->why);
        else
            af_cli_run_report(rp->o->json, rp->paths[i], &r->verdict);
        af_run_tally_result(&rp->tally, r);
    }
}

/* A case that cannot go to a worker: its backend is unknown (bad) or unavailable. */
static void settle_without_run(run_pool *rp, int i, const run_backend *b) {
    rp->finished[i] = true;
    if (!b || b->unknown) {
        if (b) fprintf(stderr, "attnfuzz: %s: %s\n", rp->paths[i], b->why);
        rp->loaded[i] = false; /* nothing to print */
        af_run_tally_not_judged(&rp->tally, AF_EXIT_USAGE);
        return;
    }
    af_session_result *r = &rp->results[i];
    memset(r, 0, sizeof *r);
    r->status = AF_CASE_RAN;
    af_verdict_init(&r->verdict, b->name);
    r->verdict.kind = AF_V_DECLINED;
    snprintf(r->verdict.reason, sizeof r->verdict.reason, "%s", b->why);
}

/* The next loaded case of [*next, end) (the unloaded ones on the way finished, nothing to
 * judge), or -1. */
static int take_loaded(run_pool *rp, int *next, int end) {
    while (*next < end) {
        int i = (*next)++;
        if (rp->loaded[i]) return i;
        rp->finished[i] = true;
    }
    return -1;
}

/* Cases [first, end) share one backend's session: run them jobs at a time. When the session
 * prepares ahead (ATTNFUZZ_PREPARE_AHEAD), each slot's next case is chosen with its current
 * one and hinted to its worker, which prepares it meanwhile (the pool gives that case to
 * that worker: worker_pool.h). */
static void run_stretch(run_pool *rp, run_backend *b, int first, int end) {
    int jobs = rp->o->jobs;
    af_child slots[AF_POOL_MAX_WORKERS];
    int slot_case[AF_POOL_MAX_WORKERS], reserved[AF_POOL_MAX_WORKERS];
    memset(slots, 0, sizeof slots);
    for (int k = 0; k < AF_POOL_MAX_WORKERS; k++) reserved[k] = -1;
    bool hint = b->s.worker_cases > 0 && af_session_wants_ahead(&b->s);
    int next = first, busy = 0, held = 0; /* held: slots with a reserved case */
    while (next < end || busy || held) {
        for (int k = 0; k < jobs; k++) {
            if (slots[k].proc.pid) continue;
            int i = reserved[k];
            if (i >= 0) {
                reserved[k] = -1;
                held--;
            } else if ((i = take_loaded(rp, &next, end)) < 0) {
                continue;
            }
            slots[k].result = &rp->results[i];
            slot_case[k] = i;
            if (hint && (reserved[k] = take_loaded(rp, &next, end)) >= 0) {
                held++;
                b->s.next_hint = &rp->cases[reserved[k]];
            }
            int failed = af_child_start(&b->s, &slots[k], &rp->cases[i], AF_STORE_NONE, b->s.default_deadline_s);
            b->s.next_hint = NULL;
            if (failed) {
                /* no process for it: judged here, as af_session_run_isolated does */
                af_session_run_isolated(&b->s, &rp->cases[i], AF_STORE_NONE, NULL, b->s.default_deadline_s,
                                        &rp->results[i]);
                rp->finished[i] = true;
                continue;
            }
            busy++;
        }
        report_ready(rp);
        if (!busy) continue;
        int done = af_child_wait_any(&b->s, slots, jobs, 200);
        if (done < 0) continue;
        busy--;
        rp->finished[slot_case[done]] = true;
        report_ready(rp);
    }
}

int af_cli_run_pool(const af_run_pool_opts *o, const char *const *paths, int n) {
    run_pool *rp = calloc(1, sizeof *rp);
    if (!rp) return AF_EXIT_USAGE;
    rp->o = o;
    rp->paths = paths;
    rp->n = n;
    rp->cases = calloc((size_t)n, sizeof *rp->cases);
    rp->loaded = calloc((size_t)n, sizeof *rp->loaded);
    rp->results = calloc((size_t)n, sizeof *rp->results);
    rp->finished = calloc((size_t)n, sizeof *rp->finished);
    rp->bname = calloc((size_t)n, sizeof *rp->bname);
    if (!rp->cases || !rp->loaded || !rp->results || !rp->finished || !rp->bname) {
        fprintf(stderr, "attnfuzz run: out of memory for %d cases\n", n);
        rp->tally.error = true;
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        /* the same loading and backend rule as `run` (a case's plugin:PATH is a hint only) */
        int rc = af_cli_load_case("attnfuzz run", paths[i], &rp->cases[i]);
        if (rc == 0)
            rc = af_cli_choose_backend("run", paths[i], &rp->cases[i], o->backend, o->plugin_dirs, o->n_plugin_dirs,
                                       &rp->bname[i]);
        if (rc) {
            af_run_tally_not_judged(&rp->tally, rc);
            continue;
        }
        rp->loaded[i] = true;
    }
    /* stretches of consecutive cases on one backend; sessions stay open across them */
    for (int first = 0; first < n;) {
        while (first < n && !rp->loaded[first]) rp->finished[first++] = true;
        if (first == n) break;
        const char *name = backend_of(rp, first);
        int end = first + 1;
        while (end < n && (!rp->loaded[end] || !strcmp(backend_of(rp, end), name))) end++;
        run_backend *b = backend_session(rp, name);
        if (b && b->open)
            run_stretch(rp, b, first, end);
        else
            for (int i = first; i < end; i++)
                if (rp->loaded[i])
                    settle_without_run(rp, i, b);
                else
                    rp->finished[i] = true;
        report_ready(rp);
        first = end;
    }
    report_ready(rp);
    for (int i = 0; i < rp->n_backends; i++)
        if (rp->backends[i].open) af_session_close(&rp->backends[i].s);
    if (n > 0) af_run_tally_print(&rp->tally, stderr);
    int rc = af_run_tally_exit(&rp->tally, o->allow_declined);
    free(rp->cases);
    free(rp->loaded);
    free(rp->results);
    free(rp->finished);
    free(rp->bname);
    free(rp);
    return rc;
}
