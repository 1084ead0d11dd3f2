/* campaign/campaign.h — fuzz campaigns: one case in a session, isolated runs, the
 * corpus queue, stats, and the campaign loop.
 *
 * Files (split by role, like AFL++):
 *   campaign_run.c    af_session: registry + runner + backend; run one case, store a
 *                     finding; fork-isolated runs that turn crashes and hangs into verdicts
 *   campaign_queue.c  the in-process corpus queue and the seed corpus (encoded inputs)
 *   campaign_stats.c  DIR/stats.json (stable keys) and the one-line progress display
 *   campaign_loop.c   af_campaign_run: libFuzzer children when attnfuzz_fuzz is built,
 *                     else an in-process loop with fork-per-case isolation; pending
 *                     new buckets minimised once; reports at the end
 *
 * Campaign directory DIR:
 *   DIR/stats.json            stable keys, rewritten about once a second
 *   DIR/corpus/               fuzz inputs (encoded cases; seeds first)
 *   DIR/current/<name>.case   the case a worker is running (name = pid or job<i>), written first
 *   DIR/pending/<raw>-*.case  a finding whose raw signature is new, waiting to be minimised
 *                             (<raw> = af_bucket_id of its raw signature; .verdict beside
 *                             it holds the verdict it had, binary)
 *   DIR/rawmap/<raw>          raw signature -> bucket: the minimised case and its verdict
 *                             (binary, af_rawmap_entry); a raw signature is minimised once
 *   DIR/findings/<bucket>/    minimised finding.case, original.case, verdict.json ...
 *                             (<bucket> = af_bucket_id of the MINIMISED case's signature)
 *   DIR/crashes/              libFuzzer artifacts (crash-*, timeout-*, oom-*)
 *   DIR/workers/<pid>.stats   per-process counters of libFuzzer workers
 *   DIR/fuzzer.log            libFuzzer's own output
 *   DIR/report.{json,junit.xml,sarif,html}
 */
#ifndef ATTNFUZZ_CAMPAIGN_H
#define ATTNFUZZ_CAMPAIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "fuzz/fuzz.h"
#include "judge/runner.h"
#include "judge/signature.h"
#include "judge/evidence.h"
#include "triage/findings.h"
#include "triage/report.h"
#include "util/hash.h"

/* ---- session: everything needed to run cases against one backend -----------------
 *
 * GPU safety. CUDA does not survive fork(): a process that initialised CUDA cannot use
 * it in a forked child. So for a backend flagged AF_BACKEND_NEEDS_GPU (cudnn, plugins
 * that want device buffers) a session that forks (campaign, minimize, repro) never
 * calls into the backend in its own process: available() and the limits probing
 * (af_fuzz_limits_for_backend) run in a forked child that reports back through a pipe,
 * and every case runs in a fresh forked child (af_session_run_isolated, af_child_start)
 * that initialises CUDA itself. s->isolated says so; af_session_run refuses to run
 * such a backend in an isolated session's own process. Only a caller that runs its
 * cases in this process (the libFuzzer target, AF_SESSION_INPROCESS) talks to the
 * backend directly. */

typedef struct {
    af_registry registry;
    af_runner runner;
    af_backend *backend;
    char backend_name[AF_NAME_MAX];
    char engine[AF_NAME_MAX];    /* "" = the case's engine field, else this one */
    af_fuzz_limits limits;       /* af_fuzz_limits_for_backend of the backend */
    char out_dir[1024];          /* campaign directory; "" = findings are not stored */
    double start_unix;           /* campaign start, for time_to_first_seconds */
    bool defer_new;              /* findings with a new raw signature go to DIR/pending */
    bool isolated;               /* never call the backend in this process (NEEDS_GPU) */
    bool backend_owned;          /* backend came from the registry (else the caller's) */
    int default_deadline_s;      /* per case: 60 s, 300 s for a NEEDS_GPU backend */
    int owner_pid;               /* the process that opened the session */
} af_session;

enum {
    AF_SESSION_INPROCESS = 1u << 0, /* cases run in this process: probe the backend here */
    AF_SESSION_NO_LIMITS = 1u << 1, /* skip af_fuzz_limits_for_backend (repro, minimize) */
    AF_SESSION_ISOLATE = 1u << 2,   /* isolate whatever the backend's flags say (tests) */
};

/* Per-case deadlines when none is given: CPU backends 60 s; GPU backends 300 s (with
 * --engine all, runtime compilation of cuDNN engines takes tens of seconds). */
#define AF_DEADLINE_CPU_S 60
#define AF_DEADLINE_GPU_S 300

/* Open a session; backend "" = "cpu". Probes are on. Returns 0, or -1 with why
 * (unknown or unavailable backend). Same as af_session_open_ex(..., NULL, 0, ...). */
int af_session_open(af_session *s, const char *backend, const char *engine, const char *out_dir, char *why,
                    size_t cap);
/* backend_obj (may be NULL): run this backend (not owned; its name is used) instead of
 * looking `backend` up in the registry. flags: AF_SESSION_*. */
int af_session_open_ex(af_session *s, const char *backend, af_backend *backend_obj, const char *engine,
                       const char *out_dir, unsigned flags, char *why, size_t cap);
void af_session_close(af_session *s);

/* What happened to one case. Plain data: it crosses a pipe from an isolated child. */
typedef enum {
    AF_CASE_RAN = 0,        /* verdict is valid */
    AF_CASE_NOT_RUN,        /* the case could not be prepared (why) */
    AF_CASE_CRASHED,        /* the child died of a signal; verdict = crash */
    AF_CASE_HUNG,           /* past the deadline; verdict = hang */
} af_case_status;

typedef enum {
    AF_STORE_NONE = 0,      /* run only */
    AF_STORE_ALWAYS,        /* store a finding (af_finding_store) */
    AF_STORE_FUZZ,          /* store a duplicate; a new bucket goes to DIR/pending */
} af_store_mode;

typedef struct {
    af_case_status status;
    af_verdict verdict;
    int stored;                         /* 1 new bucket, 0 duplicate, 2 pending, -1 not stored */
    char bucket[AF_BUCKET_ID_LEN + 1];
    char why[256];
    double seconds;
    uint8_t counters[AF_FUZZ_COUNTERS]; /* feedback (af_fuzz_feedback) */
} af_case_result;

/* Run one case in this process (prepare, judge with probes), set feedback counters,
 * and store per mode. original (may be NULL) becomes original.case. In an isolated
 * session this is for forked children only: called in the session's own process it
 * returns AF_CASE_NOT_RUN. */
void af_session_run(af_session *s, const af_case *c, af_store_mode mode, const af_case *original,
                    af_case_result *r);

/* The same in a forked child with a deadline (seconds, 0 = none): a crash, abort or
 * hang of the backend becomes a crash / hang verdict instead of ending the caller. */
void af_session_run_isolated(af_session *s, const af_case *c, af_store_mode mode, const af_case *original,
                             int deadline_s, af_case_result *r);

/* Verdict for a case that killed or outlived its process. */
void af_session_fatal_verdict(const af_session *s, const af_case *c, af_verdict_kind kind, const char *detail,
                              af_verdict *v);

/* Store (or defer, per mode) a verdict obtained elsewhere, e.g. a crash seen by the
 * parent. Returns like af_case_result.stored.
 * AF_STORE_FUZZ with defer_new: the raw signature is looked up in DIR/rawmap; a known
 * one bumps the count of the bucket it minimised into (bucket = that bucket, returns
 * 0); a new one goes to DIR/pending (bucket = the raw id, returns 2). */
int af_session_store(af_session *s, const af_case *c, const af_verdict *v, af_store_mode mode,
                     const af_case *original, const af_heatmap *heatmap, const af_leak_matrix *leaks,
                     char bucket[AF_BUCKET_ID_LEN + 1]);

/* Write DIR/current/<name>.case (before a case runs, so a crash loses nothing);
 * name = the worker's pid (libFuzzer) or job<i> (in-process). */
void af_session_write_current(const af_session *s, const af_case *c, const char *name);

/* ---- raw signature -> bucket (DIR/rawmap) ------------------------------------------- */

typedef struct {
    char bucket[AF_BUCKET_ID_LEN + 1]; /* where the raw signature's findings are counted */
    af_case best;                      /* the stored (minimised) case of that bucket */
    af_verdict verdict;                /* its verdict: af_finding_store(best, verdict) bumps */
} af_rawmap_entry;

/* 0 when DIR/rawmap/<raw_id> exists and is readable, else -1. */
int af_rawmap_get(const char *dir, const char *raw_id, af_rawmap_entry *e);
/* Write it atomically (rename). 0 or -1. */
int af_rawmap_put(const char *dir, const char *raw_id, const af_rawmap_entry *e);
/* The verdict a pending finding had when found (PATH.case -> PATH.verdict). 0 or -1. */
int af_pending_verdict(const char *case_path, af_verdict *v);

/* ---- asynchronous isolated runs (the in-process campaign keeps N in flight) -------- */

typedef struct {
    int pid;                /* 0 = free slot */
    int fd;                 /* read end of the result pipe */
    double started, deadline;
    af_case c;
    size_t got;
    af_case_result *result; /* the caller points this at storage before starting */
    void *user;
} af_child;

/* Start c in a child; fills slot. Returns 0 or -1 (fork failed). */
int af_child_start(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, int deadline_s);
/* Wait up to timeout_ms for any of n slots to finish; returns the index of one that
 * finished (its result complete, the child reaped), or -1 when none did. */
int af_child_wait_any(af_session *s, af_child *slots, int n, int timeout_ms);

/* ---- corpus queue ------------------------------------------------------------------- */

typedef struct {
    uint8_t *data;
    size_t size;
    int picked;             /* times chosen as a parent */
    int found;              /* features it added */
} af_queue_entry;

typedef struct {
    af_queue_entry *items;
    int count, cap;
    uint8_t seen[AF_FUZZ_COUNTERS];  /* every feature reached so far */
    int features;
} af_queue;

void af_queue_init(af_queue *q);
void af_queue_free(af_queue *q);
/* Add an input when its counters reach a feature not seen before (always when force).
 * Returns the number of new features. */
int af_queue_offer(af_queue *q, const uint8_t *data, size_t size, const uint8_t *counters, bool force);
/* Pick a parent: newer and more productive entries more often. */
const af_queue_entry *af_queue_pick(af_queue *q, uint64_t *rng);

/* Read every *.case under the corpus paths (files or directories), encode them as
 * fuzz inputs and write them to out_corpus_dir (when not NULL) as seed-<name>; add
 * them to q (when not NULL). Returns the number of seeds, or -1 with why. */
int af_seed_corpus(const char *const *paths, int n_paths, const char *out_corpus_dir, af_queue *q, char *why,
                   size_t cap);

/* ---- stats -------------------------------------------------------------------------- */

typedef struct {
    double start_unix, elapsed_s;
    long long cases, declined, errors, crashes, hangs;
    long long findings;        /* findings seen (every duplicate counts) */
    int buckets;               /* distinct buckets in DIR/findings + pending */
    int minimised;             /* raw signatures minimised so far */
    int unminimised;           /* stored as found: --total-time ended before their turn */
    int corpus;                /* inputs in the queue / corpus dir */
    double time_to_first_finding_s;   /* < 0 none yet */
    char backend[AF_NAME_MAX], engine[AF_NAME_MAX];
    int jobs;
    const char *mode;          /* "libfuzzer" | "inprocess" */
    double max_work;
} af_campaign_stats;

/* Write DIR/stats.json atomically. Keys (stable): start_time, start_time_unix,
 * last_update, elapsed_s, cases, cases_per_s, findings, buckets, minimised, crashes,
 * hangs, declined, errors, corpus, backend, engine, jobs, mode, max_work,
 * time_to_first_finding_s (null when none). Returns 0 or -1. */
int af_stats_write(const char *dir, const af_campaign_stats *st);
/* One progress line on stderr: "\r..." on a tty, a plain line otherwise (callers
 * rate-limit: about once a second on a tty, every 10 s otherwise). */
void af_stats_progress(const af_campaign_stats *st, bool tty, bool final);

/* ---- the campaign ------------------------------------------------------------------- */

typedef struct {
    double time_s;             /* fuzzing time (minimisation of the last buckets and the
                                  reports come after) */
    double total_s;            /* 0, or a hard limit on the whole run: fuzzing stops by
                                  then, minimisation stops 5 s before, findings not yet
                                  minimised are stored as found, reports are written */
    const char *backend, *engine;
    int jobs;
    const char *out_dir;
    const char *const *corpus; /* seed corpus paths */
    int n_corpus;
    int deadline_s;            /* per case; 0 = the session's default (60 s, GPU 300 s) */
    double max_work;           /* 0 = default budget */
    uint64_t seed;
    int minimize_runs;         /* run budget per minimisation (default 200) */
    bool force_inprocess;      /* ignore attnfuzz_fuzz even when it exists */
    const char *fuzzer_path;   /* NULL = attnfuzz_fuzz beside this executable */
    int rss_limit_mb;          /* libFuzzer -rss_limit_mb (default 4096) */
    af_backend *backend_obj;   /* tests / embedding: this backend instead of looking up
                                  `backend` (not owned; forces the in-process engine) */
    unsigned session_flags;    /* extra AF_SESSION_* flags (tests: AF_SESSION_ISOLATE) */
} af_campaign_opts;

void af_campaign_opts_default(af_campaign_opts *o);
/* Run a campaign. Returns 0 no findings, 1 findings, 2 bad options / setup error,
 * 3 backend unavailable. */
int af_campaign_run(const af_campaign_opts *o);

#endif
