/* gate/gate.h — the selection gate: fuzz configurations, keep those whose backend choice
 * differs between a base and a head selector, and judge what the head newly chooses.
 *
 * Per fuzzed case (harness/fuzz decoder, deterministic in the seed):
 *   same choice under both             -> not counted further
 *   base none,  head X                 -> newly served: X is run through the full judge
 *   base X,     head none              -> no longer served: a regression (failure)
 *   base X,     head Y (or other engine) -> switched: Y is run through the full judge
 * A run whose claim fails (gate/claims.h: claim_mismatch) is minimised (harness/minimize,
 * keeping kind|backend|tensor while the head still chooses the backend) and stored in
 * DIR/findings; a regression is minimised the same way (claim_mismatch on the base's
 * backend, "no longer served", kept while the base still chooses that backend and the
 * head none). Failures are deduplicated by identity (kind|backend|tensor, what the
 * minimiser keeps): one bug is minimised once, into one bucket, and its later
 * configurations count in that bucket (verdict.json count). Minimisations run inside
 * --time (each also capped by --minimize-time); one that finds no time left stores the
 * case as found. Then DIR/report.json, report.junit.xml, report.sarif,
 * report.html (triage's writers) and DIR/gate.json (the summary and every differing
 * configuration, up to AF_GATE_MAX_LISTED, with its verdict). Passes iff nothing newly
 * chosen fails and nothing regresses. */
#ifndef ATTNFUZZ_GATE_GATE_H
#define ATTNFUZZ_GATE_GATE_H

#include <stdint.h>
#include <stdio.h>

#include "gate/claims.h"

#define AF_GATE_MAX_LISTED  400
#define AF_GATE_MAX_BUCKETS 64

typedef struct {
    const af_selector *base, *head;
    af_claims_loop_opts loop; /* time, seed, budgets, facts, probes (claims.h) */
    const char *out_dir;      /* required */
    FILE *log;                /* progress lines; NULL = quiet */
} af_gate_opts;

typedef struct {
    long long examined, differing, newly_served, no_longer_served, switched;
    long long newly_failed; /* newly chosen runs that failed their claim */
    int buckets;            /* distinct failing buckets stored */
    int minimised;          /* minimisations run (one per failure identity) */
    double elapsed_s;       /* wall time of the run, minimisations included */
} af_gate_summary;

void af_gate_opts_default(af_gate_opts *o);
/* 0 passed, 1 failed (findings or regressions), -1 error with why. */
int af_gate_run(const af_gate_opts *o, af_gate_summary *s, char *why, size_t cap);

#endif
