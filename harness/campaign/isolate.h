/* campaign/isolate.h — run a callback in a forked child with a deadline: the campaign's
 * one copy of pipe / poll around util/proc.h (which starts, kills and reaps the child: its
 * own process group, dead with its parent).
 *
 * The child runs fn(user, out, out_size) on a zeroed buffer of out_size bytes, writes the
 * buffer to a pipe and exits 0; an alarm(deadline_s) in the child ends a run that hangs
 * (SIGALRM; off once the run is over), and the parent kills (SIGKILL) a child still there
 * deadline_s + grace_s after the start unless its result has begun to arrive: a parent
 * that was busy past the deadline (minimising) reads what was sent meanwhile first. The parent gets the child's bytes and how it ended: complete (every
 * byte, exit status 0), timed out (its alarm or the parent's kill), killed by a signal,
 * or exited with another status before reporting. Several children can be in flight
 * (af_isolate_wait_any); af_isolate_run is the same for one child, waited for. */
#ifndef ATTNFUZZ_CAMPAIGN_ISOLATE_H
#define ATTNFUZZ_CAMPAIGN_ISOLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/proc.h"

/* A child past its deadline whose result has begun to arrive (its run ended; the parent
 * was slow to read) gets this many more seconds to finish sending it. */
#define AF_RESULT_ARRIVING_S 30.0

typedef void (*af_isolate_fn)(void *user, void *out, size_t out_size);

typedef struct {
    bool complete;   /* out holds all out_size bytes and the child exited 0 */
    bool timed_out;  /* past its deadline: its own alarm (SIGALRM) or the parent's kill */
    int term_signal; /* the signal that ended the child; 0 when it exited */
    int exit_status; /* its exit status when it exited; -1 when a signal ended it */
    double seconds;  /* from start to reaped */
} af_isolate_outcome;

typedef struct {
    int pid;         /* 0 = not running (a free slot) */
    int fd;          /* read end of the pipe (non-blocking) */
    double started;  /* af_clock_mono at the start */
    double deadline; /* when the parent kills it; 0 = never */
    void *out;       /* the caller's buffer for the child's bytes */
    size_t out_size, got;
    unsigned long long max_memory; /* set by the caller before af_isolate_start: the child's
                                      address-space limit in bytes (RLIMIT_AS); 0 = none */
    af_proc run;                   /* the process (util/proc.h); pid above mirrors run.pid */
} af_isolate_child;

/* Fork a child that runs fn into a buffer of out_size bytes, copied into out as they
 * arrive. deadline_s 0 = none; ch->max_memory (kept) limits the child's memory. Returns 0, or -1 (errno set) when pipe or fork fails. */
int af_isolate_start(af_isolate_child *ch, af_isolate_fn fn, void *user, void *out, size_t out_size, int deadline_s,
                     double grace_s);

/* Wait up to timeout_ms for one of the n children (free slots skipped) to end; returns
 * its index, reaped and its slot freed (pid 0), with *o filled, or -1 when none ended
 * in time (or none is running). At most 64 children are looked at. */
int af_isolate_wait_any(af_isolate_child *const *children, int n, int timeout_ms, af_isolate_outcome *o);

/* The wait of af_isolate_wait_any with the caller's reading and ending of a child: the
 * one loop (deadlines, the result that arrives late, poll) behind the per-case children
 * here and the persistent workers of worker_pool.c.
 *   drain(ctx, i)  read what child i sent: 1 its result is whole (or, for a per-case
 *                  child, its pipe ended), -1 it ended without a whole result, 0 more
 *                  may come
 *   settle(ctx, i, st, for_time, o)  child i is done: st is drain's last answer, for_time
 *                  says the parent ends it for time (st 0); fill *o and free the slot
 * A child past its deadline is settled for time unless its result has begun to arrive
 * (then it gets AF_RESULT_ARRIVING_S more). Returns the index settled, or -1 as
 * af_isolate_wait_any. */
typedef struct {
    int (*drain)(void *ctx, int i);
    void (*settle)(void *ctx, int i, int st, bool for_time, af_isolate_outcome *o);
} af_isolate_ops;
int af_isolate_wait_with(af_isolate_child *const *children, int n, int timeout_ms, const af_isolate_ops *ops, void *ctx,
                         af_isolate_outcome *o);

/* Start one child and wait for it. Returns 0 with *o filled, or -1 (errno set) when it
 * could not be started. */
int af_isolate_run(af_isolate_fn fn, void *user, void *out, size_t out_size, int deadline_s, double grace_s,
                   af_isolate_outcome *o);

/* One line for an outcome that is not complete: "no result after 61 s", "killed by
 * signal 11 (Segmentation fault)", "exited with status 3 before reporting", and for a
 * run that called exit(0) itself "exited 0 inside run (before reporting a result)". */
void af_isolate_describe(const af_isolate_outcome *o, char *buf, size_t cap);

#endif
