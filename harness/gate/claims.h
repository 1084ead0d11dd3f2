/* gate/claims.h — claims against behaviour: the backend a selector chooses must serve
 * the case correctly.
 *
 * af_claim_judge turns the chosen backend's verdict into the claim's: a decline, a
 * crash, a hang or any finding of a claimed case is a claim_mismatch finding (placed
 * first, so the verdict's kind and signature are claim_mismatch; the backend's own
 * findings stay behind it as evidence); an engine other than the pinned one, or a barred
 * one, is a claim_mismatch too (the silent-fallback class: af_run_info.engine says which
 * engine ran). A backend the selector declined may be tried as well: serving the case
 * correctly is an unclaimed capability, a note, never a failure. */
#ifndef ATTNFUZZ_GATE_CLAIMS_H
#define ATTNFUZZ_GATE_CLAIMS_H

#include <stdio.h>

#include "campaign/session.h"
#include "select/selector.h"

#define AF_CLAIMS_MAX_SESSIONS 16
#define AF_CLAIMS_MAX_NOTES    8

typedef struct {
    char name[AF_NAME_MAX];
    af_session s;
    int open_rc; /* 0 open; -1 failed (why) */
    af_open_error open_error;
    char why[512];
} af_claims_session;

/* One context per command: the sessions it opened (one per backend name, isolated:
 * every case runs in a child with a deadline, so a crashing backend is a verdict). */
typedef struct {
    char name[AF_NAME_MAX];
    af_backend *be; /* not owned */
} af_claims_given;

typedef struct {
    bool probes;    /* run the probes (default yes) */
    int deadline_s; /* per case (default 60) */
    int n;
    af_claims_session sessions[AF_CLAIMS_MAX_SESSIONS];
    bool in_process; /* run cases in this process (run --in-process), not in a child */
    /* the judge's settings of `run` (--oracle, --threads, --reference, --repeats,
     * --max-memory), applied to every session when runner_set */
    bool runner_set;
    af_oracle_opts oracle;
    af_ref_choice ref_choice;
    int repeats;
    unsigned long long max_memory;
    int n_given; /* backends served by the caller's objects (af_claims_add_backend) */
    af_claims_given given[AF_CLAIMS_MAX_SESSIONS];
} af_claims_ctx;

typedef struct {
    af_choice choice;
    af_verdict verdict; /* the chosen backend's, claim-judged; kind PASS when nothing was chosen */
    bool ran;           /* the chosen backend was run */
    int n_notes;
    char notes[AF_CLAIMS_MAX_NOTES][384]; /* "unclaimed capability: NAME serves it (declined: ...)" */
} af_claim_result;

/* The settings of a loop that fuzzes configurations and claim-checks them, shared by the
 * selection gate (gate.h) and the claims campaign (claims_campaign.h): one set of
 * defaults for both (af_claims_loop_default). */
typedef struct {
    af_select_facts facts;
    double time_s;      /* the whole run, minimisations included (default 60) */
    uint64_t seed;      /* of the fuzzed case stream (default 1) */
    double max_work;    /* fuzz budget of a case (default 2^18: small, fast cases) */
    int min_runs;       /* run budget of one minimisation (default 120) */
    double min_seconds; /* wall budget of one minimisation (default 60), cut to what is left of time_s */
    bool probes;        /* run the probes (default yes) */
} af_claims_loop_opts;

void af_claims_loop_default(af_claims_loop_opts *o);

void af_claims_init(af_claims_ctx *x);
void af_claims_close(af_claims_ctx *x);
/* Serve backend `name` with be (not owned; tests and embedding) instead of looking the
 * name up in the registry. Before the first run of that name. 0, or -1 when full. */
int af_claims_add_backend(af_claims_ctx *x, const char *name, af_backend *be);

/* Run backend (engine "" = its default) on c, isolated; a backend unavailable here gives
 * a declined verdict with the reason. 0, or -1 with why (unknown backend, a plugin that
 * does not load, a case that cannot be prepared). */
int af_claims_run(af_claims_ctx *x, const char *backend, const char *engine, const af_case *c, af_verdict *v, char *why,
                  size_t cap);

/* The claim's verdict from the chosen backend's verdict (pure; nothing when !ch->served). */
void af_claim_judge(const af_choice *ch, const char *selector_label, af_verdict *v);

/* Choose with sel, run the chosen backend, judge the claim; with try_declined also run
 * every policy backend that was not chosen (each name once) and note those that pass.
 * 0, or -1 with why (the selector failed, or a run could not happen). */
int af_claims_check(af_claims_ctx *x, const af_selector *sel, const af_select_facts *f, const af_case *c,
                    bool try_declined, af_claim_result *out, char *why, size_t cap);

#endif
