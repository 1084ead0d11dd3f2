/* judge/prepare_ahead.h — the next case prepared on a thread of its own while the current
 * one is judged: a worker's pipeline of two stages.
 *
 * af_prepare (inputs, oracle, reference, the criterion's magnitudes) does not depend on the
 * backend under test, so the case a worker will judge next can be prepared while the
 * backend runs and the judge compares the current one. For a GPU backend the judge's
 * thread waits on the device much of the time and the host has cores to spare; for the
 * cpu backend both stages want every core and gain little (ATTNFUZZ_PREPARE_AHEAD).
 *
 *   af_prepare_ahead_start(a, r, next)   after the current case is prepared
 *   ... judge the current case ...
 *   p = af_prepare_ahead_take(a, c, ...) when c is next: waits, returns the preparation
 *
 * The thread prepares with a copy of the runner without its stage mark (the judging thread
 * owns the mark; take sets the prepared case's mark to the caller's runner's). A take for
 * another case than the one started drops the preparation (waits for it, frees it) and
 * returns NULL: the caller prepares as before. At most one preparation is in flight. */
#ifndef ATTNFUZZ_JUDGE_PREPARE_AHEAD_H
#define ATTNFUZZ_JUDGE_PREPARE_AHEAD_H

#include <pthread.h>
#include <stdbool.h>

#include "judge/runner.h"

typedef struct {
    bool started; /* a thread is preparing c (or has, and was not taken) */
    pthread_t thread;
    af_runner runner; /* the caller's settings, mark NULL */
    af_case c;        /* the case being prepared */
    af_prepared *p;   /* its preparation (heap; owned until taken) */
    int rc;           /* af_prepare's return */
    char why[512];    /* af_prepare's why when rc != 0 */
} af_prepare_ahead;

/* Which backends a session with cases_at_once cases in flight (--jobs) prepares ahead for
 * (ATTNFUZZ_PREPARE_AHEAD): 0 none, 1 every backend, 2 ("gpu") those that run on a GPU.
 * Unset or empty: 2 for one case at a time, 0 for several (measured on an H100: one worker
 * judged 1.21-1.47x the cases per second with it, 8 workers 0.90-1.05x; their prepare
 * threads compete for the cores; docs/benchmarks.md). */
int af_prepare_ahead_mode(int cases_at_once);

/* Start preparing c with r's settings (a must not be started; c is copied). False when no
 * thread could be started (a stays idle: the caller prepares c itself when it comes). */
bool af_prepare_ahead_start(af_prepare_ahead *a, const af_runner *r, const af_case *c);

/* True when a was started for a case equal to c (af_case_equal): waits for it; *rc is
 * af_prepare's (why its why when not 0) and *out the preparation when *rc == 0 (the
 * caller's: af_prepared_free, then free), else NULL; its mark is r's. False when a was
 * idle or prepared another case (dropped): the caller prepares c itself. a is idle after. */
bool af_prepare_ahead_take(af_prepare_ahead *a, const af_case *c, const af_runner *r, af_prepared **out, int *rc,
                           char *why, size_t cap);

/* Wait for a preparation in flight and free it; a is idle after. */
void af_prepare_ahead_drop(af_prepare_ahead *a);

#endif
