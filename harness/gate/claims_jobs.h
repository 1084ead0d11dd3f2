/* gate/claims_jobs.h — claim checks in N worker processes, for `campaign --policy
 * --jobs N` (claims_campaign.h).
 *
 * Each worker is forked from the campaign's process before that process opens any
 * session (so no persistent worker, pipe or backend state is shared: a worker opens its
 * own isolated sessions, one per backend, as af_claims_check does), reads one case at a
 * time from its socket, claim-checks it (af_claims_check, declined backends tried too)
 * and writes the result back. The selector and its policy were loaded before the fork,
 * at the same addresses in every worker, so a result's af_choice.entry points at the
 * campaign's own copy of the entry. Cases go to workers round-robin and results are read
 * back in case order, so a campaign's processing order does not depend on N. */
#ifndef ATTNFUZZ_GATE_CLAIMS_JOBS_H
#define ATTNFUZZ_GATE_CLAIMS_JOBS_H

#include "gate/claims.h"
#include "util/proc.h"

#define AF_CLAIMS_MAX_JOBS 64

typedef struct {
    int n;
    int pid[AF_CLAIMS_MAX_JOBS];      /* 0 = ended */
    af_proc proc[AF_CLAIMS_MAX_JOBS]; /* each worker's process (util/proc.h) */
    int fd[AF_CLAIMS_MAX_JOBS];       /* the campaign's end of each worker's socket pair */
} af_claims_workers;

/* Fork n workers claim-checking with sel and facts under x's settings (x must have no
 * open session yet). 0, or -1 with why. */
int af_claims_workers_start(af_claims_workers *w, int n, af_claims_ctx *x, const af_selector *sel,
                            const af_select_facts *facts, char *why, size_t cap);
/* Send case c to worker k. 0, or -1 with why (the worker is gone). */
int af_claims_workers_send(af_claims_workers *w, int k, const af_case *c, char *why, size_t cap);
/* Read worker k's result of the case sent to it first among those not yet read: 0 with *r,
 * or -1 with why (the claim check failed in the worker, or the worker ended). */
int af_claims_workers_recv(af_claims_workers *w, int k, af_claim_result *r, char *why, size_t cap);
/* End every worker (end of file on its socket, then wait for it). */
void af_claims_workers_stop(af_claims_workers *w);

#endif
