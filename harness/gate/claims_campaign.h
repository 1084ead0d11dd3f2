/* gate/claims_campaign.h — `attnfuzz campaign --policy P | --selector-cmd CMD`: a fuzz
 * campaign whose every case is a claim check (gate/claims.h) instead of a run of one
 * backend.
 *
 * Per fuzzed case (harness/fuzz decoder, deterministic in the seed): the selector chooses;
 * the chosen backend runs through the full judge and its claim is judged (a decline, a
 * crash, any finding, a pinned engine that did not run, a barred one that did: a
 * claim_mismatch); every backend the policy declined is tried too, and one that serves
 * the case correctly is an unclaimed capability. A failure is minimised (keeping its
 * identity while the selector still routes it to the same backend) and stored in
 * DIR/findings like any campaign finding; failures of an identity minimised already
 * count in its bucket. Minimisations run inside --time (each capped by min_seconds).
 *
 * Cases: case i of the stream is a function of (seed, i) alone. --jobs N checks N cases
 * at once in worker processes (claims_jobs.h), results taken in case order; DIR/lock is
 * held for the whole run (campaign/dirlock.h). A DIR holding a campaign (stats.json) is
 * refused unless resume is set; resume needs a claims campaign of the same selector and
 * seed, continues the stream at its case count, adds its counters and unclaimed
 * capabilities to the earlier ones, and checks each stored finding.case again so that
 * its identity is not minimised twice.
 *
 * DIR/stats.json: the campaign keys triage reads (mode "claims", backend = the
 * selector, cases, findings, declined = cases no backend was chosen for, errors,
 * elapsed_s, cases_per_s) plus "claims": {served, none_chosen, claim_mismatches,
 * unclaimed_capabilities, minimised}; DIR/report.{json,junit.xml,sarif,html} (triage),
 * report.json with "unclaimed_capabilities": the backends and case classes, each with a
 * count and one example case. */
#ifndef ATTNFUZZ_GATE_CLAIMS_CAMPAIGN_H
#define ATTNFUZZ_GATE_CLAIMS_CAMPAIGN_H

#include "gate/claims.h"

typedef struct {
    const af_selector *sel;
    af_claims_loop_opts loop; /* time, seed, budgets, facts, probes (claims.h) */
    const char *out_dir;      /* required */
    int jobs;                 /* cases in flight, one worker process each (claims_jobs.h); <= 1: here */
    bool resume;              /* continue the claims campaign in out_dir (its counters add up) */
    int deadline_s;           /* per case; 0 = the session's default */
    FILE *log;                /* progress lines; NULL = quiet */
} af_claims_campaign_opts;

typedef struct {
    long long cases, served, none_chosen, claim_mismatches, unclaimed, errors;
    int buckets, minimised;
    double elapsed_s;
} af_claims_campaign_summary;

#define AF_CLAIMS_CAMPAIGN_BUSY 2 /* af_claims_campaign_run: DIR/lock is held by another run */

void af_claims_campaign_opts_default(af_claims_campaign_opts *o);
/* 0 clean, 1 findings, AF_CLAIMS_CAMPAIGN_BUSY (why names the holder), -1 error with
 * why. x: the claims context (run options set, no session opened yet). */
int af_claims_campaign_run(const af_claims_campaign_opts *o, af_claims_ctx *x, af_claims_campaign_summary *s, char *why,
                           size_t cap);

#endif
