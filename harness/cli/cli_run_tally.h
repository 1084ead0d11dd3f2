/* cli/cli_run_tally.h — what `run` found over its cases, for its summary line and its
 * exit code (one rule for `run` and `run --jobs`).
 *
 * Every case counts once: a finding (any engine's finding, a crash or a hang), else an
 * error (it could not be judged: a bad or refused case file, a case that did not run,
 * the harness side failing: an `error` verdict), else declined (its verdict is a
 * decline, or the backend is unavailable here), else passed.
 *
 * The exit code is the first that applies: usage, bad-file, plugin, error (the first
 * input problem's code, in the README's order), finding, declined, pass. With
 * allow_declined, declines do not fail the run when at least one case passed: a kernel
 * that serves part of the cases passes CI when nothing failed. */
#ifndef ATTNFUZZ_CLI_RUN_TALLY_H
#define ATTNFUZZ_CLI_RUN_TALLY_H

#include <stdbool.h>
#include <stdio.h>

#include "campaign/session.h"

typedef struct {
    int cases, passed, declined, findings, errors;
    int judged; /* cases that got a verdict (ran, or declined as unavailable): the summary's condition */
    bool usage, bad_file, plugin, error; /* input and run problems met (their exit codes) */
    bool engine_declined;                /* some engine of a case declined (exit 3 without allow_declined) */
} af_run_tally;

/* A case that ran (r->status other than AF_CASE_NOT_RUN). */
void af_run_tally_result(af_run_tally *t, const af_session_result *r);
/* A case that was not judged; code is the exit code its problem maps to (cli.h). */
void af_run_tally_not_judged(af_run_tally *t, int code);
/* A case declined without running (its backend is unavailable here). */
void af_run_tally_unavailable(af_run_tally *t);
/* "run: 12 cases: 9 passed, 3 declined, 0 findings, 0 errors" (one line), when a case got a
 * verdict: a run refused before any (a bad case file, a plugin crashing while loading)
 * keeps its one error line. */
void af_run_tally_print(const af_run_tally *t, FILE *f);
int af_run_tally_exit(const af_run_tally *t, bool allow_declined);

#endif
