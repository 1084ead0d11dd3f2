/* campaign/worker_pool.h — persistent isolated workers: a session's forked children that
 * each serve many cases, so that CUDA init, the backend's handle and its plan cache are
 * paid once per worker instead of once per case (campaign/session.h).
 *
 * A worker is forked, like a per-case child, from the session's own process (which never
 * touched the GPU: the GPU-safety rule of session.h holds), and then loops: read one
 * request (the case, the original, store mode, deadline) from its socket, alarm(deadline),
 * af_session_run, write the af_session_result back (the same bytes a per-case child
 * writes), wait for the next. The parent:
 *   - enforces each case's deadline: the worker's own alarm, else SIGKILL at deadline +
 *     grace; the case becomes a hang, the worker is gone and a fresh one serves the next
 *   - turns a worker that dies inside a case (signal, exit) into the same outcome a
 *     per-case child gives (af_isolate_outcome: crash with signal, exit status)
 *   - retires a worker after cases_per_worker cases (bounds leaks), after a case whose
 *     verdict is a crash or resource finding (a sticky CUDA error poisons the process,
 *     as judge/runner.h's af_context_* says), and before a case when the session's
 *     settings (engine, limits, runner options, store mode flags) differ from the ones it
 *     was forked with, so a worker never runs a case with stale settings.
 * Workers are started on demand, one per case in flight at most, and kept idle between
 * cases. With campaign --gpus (session gpus) each worker belongs to one GPU: a case sent
 * for GPU d (af_child.device) goes to an idle worker of d, or a fresh one forked for d,
 * which sets CUDA_VISIBLE_DEVICES before anything else; a worker that is replaced is
 * replaced on its GPU (the campaign's job slot asks for the same d again). A case for
 * any GPU (-1: minimisation) takes any idle worker, else a fresh one on GPU 0. ATTNFUZZ_POOL=0 (or cases_per_worker 0 in the session) keeps the fresh child
 * per case of session_child.c. */
#ifndef ATTNFUZZ_CAMPAIGN_WORKER_POOL_H
#define ATTNFUZZ_CAMPAIGN_WORKER_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "campaign/session.h"
#include "util/proc.h"

#define AF_POOL_MAX_WORKERS              64 /* the most cases one session has in flight */
#define AF_POOL_DEFAULT_CASES_PER_WORKER 1000

typedef struct af_pool_worker {
    af_proc proc;      /* the worker's process (util/proc.h) */
    int pid;           /* 0 = no process in this slot; else proc.pid */
    int fd;            /* the parent's end of the worker's socket pair (blocking) */
    bool busy;         /* a case is in flight on it */
    int served;        /* cases it finished */
    uint64_t settings; /* fingerprint of the session settings it was forked with */
    int device;        /* campaign --gpus: index of its GPU in s->gpus (CUDA_VISIBLE_DEVICES set
                          first thing in the worker), -1 = none */
    bool hinted;       /* it was told its next case with its last one (af_session.next_hint) */
    af_case hint;      /* ... this one, which it may be preparing ahead (judge/prepare_ahead.h):
                          a start of an equal case prefers this worker */
} af_pool_worker;

typedef struct af_worker_pool {
    af_pool_worker workers[AF_POOL_MAX_WORKERS];
    int cases_per_worker; /* > 0 */
    long long started;    /* workers forked so far */
    long long retired;    /* workers ended by the parent (recycled, stale, poisoned) */
} af_worker_pool;

/* A pool for cases_per_worker (> 0) cases per worker; NULL when out of memory. */
af_worker_pool *af_pool_new(int cases_per_worker);
/* End every worker (idle ones exit on end of file; any left after 2 s are killed). */
void af_pool_free(af_worker_pool *p);

/* Send c to an idle worker of s->pool for GPU slot->device (a fresh one when none is
 * idle or the idle ones are stale) and fill slot->proc (pid, fd, deadline, out =
 * slot->result), slot->worker and slot->device (the GPU that serves it). Returns 0, or -1 with errno set (fork failed, or EAGAIN: every one of
 * AF_POOL_MAX_WORKERS workers is busy). */
int af_pool_start(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, const af_case *original,
                  int deadline_s, double grace_s);

/* Wait up to timeout_ms for one of n in-flight slots (at most 64) to finish: returns its
 * index with *o filled (complete, or how its worker ended) and the slot freed (proc.pid
 * 0), or -1 when none finished in time. A worker that ended is reaped here. */
int af_pool_wait_any(af_session *s, af_child *slots, int n, int timeout_ms, af_isolate_outcome *o);

#endif
