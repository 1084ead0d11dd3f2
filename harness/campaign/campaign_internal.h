/* campaign/campaign_internal.h — the state of one running campaign, shared by its
 * parts: campaign.c (entry, helpers below), pending.c, inprocess.c, libfuzzer.c. Not for
 * use outside campaign/. */
#ifndef ATTNFUZZ_CAMPAIGN_INTERNAL_H
#define ATTNFUZZ_CAMPAIGN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>

#include "campaign/campaign.h"
#include "campaign/dirlock.h"
#include "campaign/queue.h"
#include "campaign/session.h"
#include "campaign/stats.h"
#include "campaign/store.h"
#include "triage/report.h"

#define AF_CAMPAIGN_MAX_JOBS 64 /* children the in-process engine keeps in flight at most */

/* Minimisations a stored bucket takes (pending.c): a new raw finding whose bucket is
 * predicted (known.c) to be one that has had this many is counted there without
 * minimising. 1: one bug's buckets are each minimised once. Caveat: a second bug with
 * the same identity (kind | backend | tensor) whose cases can also reach a bucket's
 * class is counted in that bucket until one of its raw findings predicts no bucket, or
 * an ambiguous one (then it is minimised and gets its own bucket). */
#define AF_CAMP_MINIMISE_PER_BUCKET 1

#define AF_CAMP_KNOWN_MAX 512 /* buckets the catalogue holds at most (past it: minimised) */
#define AF_CAMP_WITNESSES 4   /* other identities kept per bucket (links) */

/* A case of a bucket's defect that failed with another identity (known.c links). */
typedef struct {
    af_case c;
    char identity[AF_SIGNATURE_MAX];
} af_camp_witness;

/* One stored bucket as its minimisation left it (known.c). */
typedef struct {
    af_rawmap_entry entry;            /* bucket, its case and verdict (what counting stores) */
    char identity[AF_SIGNATURE_MAX];  /* kind|backend[:engine]|tensor of entry */
    char signature[AF_SIGNATURE_MAX]; /* the bucket's signature */
    int minimisations;                /* raw findings minimised into it (1 when loaded) */
    af_camp_witness witness[AF_CAMP_WITNESSES];
    int n_witness;
} af_camp_known_bucket;

typedef struct {
    af_camp_known_bucket *items;
    int n, cap;
    bool loaded; /* DIR/rawmap read (on first use) */
} af_camp_known;

typedef struct {
    const af_campaign_opts *o;
    af_session s;
    af_campaign_stats st;
    char dir[1024];
    double t0; /* monotonic start */
    bool tty;
    double last_progress;
    uint64_t rng;
    af_queue queue;
    /* the deterministic sweep's inputs (sweep.c), run once each after the seeds; one joins
     * the queue, as a mutant does, only when it reaches a new feature */
    af_queue sweep;
    int sweep_cursor;
    bool libfuzzer;            /* counts come from DIR/workers, corpus from DIR/corpus */
    double fuzz_end;           /* monotonic time fuzzing stopped (0 = still running) */
    int deadline_s;            /* per case: --deadline or the session's default */
    double end_at;             /* monotonic hard end of the whole run (--total-time), 0 = none */
    af_fuzz_envelope envelope; /* the backend's envelope learnt from declines (in-process engine) */

    /* libFuzzer engine: crash-* / leak-* / oom-* artifacts seen; st.crashes adds the workers'
     * crash verdicts (AF_PLUGIN_ERROR, from DIR/workers/<pid>.stats) */
    long long artifact_crashes;
    af_dir_lock lock;       /* DIR/lock, held for the whole run */
    bool resumed;           /* DIR held an earlier campaign: its counters continue */
    double prior_elapsed_s; /* fuzzing seconds of the earlier runs of DIR (0 = fresh) */
    /* after a corpus merge st.corpus is what it kept plus the queue's later entries */
    bool corpus_merged;
    int corpus_kept, queue_at_merge;
    bool write_failed;   /* a write in DIR failed (st.write_errors): fuzzing stops, exit AF_CAMPAIGN_WRITE_ERROR */
    af_camp_known known; /* the buckets minimised so far (known.c) */
    uint64_t seed;       /* the --seed that replays this run (drawn when none was given) */
    bool write_failed_at_close; /* DIR/provenance.json closed with outcome "error" */
    /* the in-process engine's loop while it runs (NULL otherwise): a minimisation hands it
     * to the session's idle hook, so the other jobs' cases go on beside it (pending.c) */
    void (*beside)(void *loop);
    void *beside_loop;
    long long beside_cases; /* cases judged beside minimisations */
    /* lost.c: the monotonic time of the last availability probe (0 = none); the state
     * itself is st.backend_lost (kept in stats.json) */
    double last_lost_probe;
} af_campaign_state;

/* ---- campaign.c ---- */
/* The per-run deadline now: --deadline, cut to what is left before --total-time's end
 * (less a margin for the reports), never below 1 s. */
int af_camp_deadline_now(const af_campaign_state *cp);
/* A run that got a deadline cut by --total-time and ran past it did not hang: it was
 * stopped for time, and is neither a finding nor a minimisation step. */
bool af_camp_stopped_for_time(const af_campaign_state *cp, const af_session_result *r, int deadline);
/* --stop-after-buckets N: true once DIR holds N buckets (findings and pending, an earlier
 * run's too when resumed): fuzzing ends. Always false without the option. */
bool af_camp_found_enough(af_campaign_state *cp);
/* DIR/name. */
void af_camp_subdir(const af_campaign_state *cp, const char *name, char *out, size_t cap);
/* s[0..n) starts with AF_BUCKET_ID_LEN lowercase hex digits. */
bool af_camp_is_bucket_name(const char *s, size_t n);
/* Buckets on disk: stored ones, plus one per pending raw signature not minimised yet. */
int af_camp_count_buckets(af_campaign_state *cp);
/* Rewrite DIR/stats.json; the progress line about once a second (tty) or every 10 s. */
void af_camp_update_stats(af_campaign_state *cp, bool final);
/* af_camp_update_stats when the progress line is due (tty: 1 s, else 10 s): called
 * between the runs of a minimisation, so that the line keeps coming. */
void af_camp_progress_tick(af_campaign_state *cp);
/* The closing summary block on f (summary.c): directory, backend, seed, cases and rate,
 * coverage, findings by kind in severity order, where the reports are. */
void af_camp_print_summary(const af_campaign_state *cp, const af_triage_summary *sum, FILE *f);
/* One more finding seen (and the time to the first). */
void af_camp_note_finding(af_campaign_state *cp);

/* DIR/corpus merged (campaign/corpus_merge.h: inputs adding coverage or a config cell,
 * content-hash names), one line on stderr; st.corpus = what is kept. The in-process
 * engine every AF_CAMP_CORPUS_MERGE_PERIOD_S, every --merge-every cases (opts
 * merge_every, default AF_CAMP_CORPUS_MERGE_CASES), and at the end of the campaign. */
#define AF_CAMP_CORPUS_MERGE_PERIOD_S 600.0
/* ... and after every AF_CAMP_CORPUS_MERGE_CASES cases (many workers fill the corpus fast) */
#define AF_CAMP_CORPUS_MERGE_CASES 20000
void af_camp_merge_corpus(af_campaign_state *cp);
/* Corpus inputs now (in-process engine): the queue, or since a merge what it kept plus
 * the queue's later entries. */
int af_camp_corpus_count(const af_campaign_state *cp);

/* Fuzzing seconds so far, earlier runs of DIR included. */
double af_camp_elapsed(const af_campaign_state *cp);

/* ---- lost.c: the backend going away mid-run ---- */
/* The backend went away in this run: fuzzing stops, exit AF_CAMPAIGN_LOST. */
static inline bool af_camp_is_lost(const af_campaign_state *cp) { return cp->st.backend_lost[0] != 0; }
/* After result r of case c (NULL: none, only the probe): true when the backend is gone (or
 * was before). Gone: r says so (af_session_result.unavailable: a fresh child's decline
 * whose available() failed), or, after a crash or hang of a GPU backend (at most one probe
 * every AF_CAMP_LOST_PROBE_S), available() fails in a fresh child. The first time: the
 * campaign is marked lost (st.backend_lost, backend_lost_at_s), one line on stderr. c with
 * r->unavailable is written to DIR/lost/ (af_camp_keep_lost). */
#define AF_CAMP_LOST_PROBE_S 30.0
bool af_camp_backend_lost(af_campaign_state *cp, const af_case *c, const af_session_result *r);
/* Write c to DIR/lost/<n>.case with why as its first line (a case in flight, or answered
 * unavailable, when the backend went away): nothing the run was about to judge is lost. */
void af_camp_keep_lost(af_campaign_state *cp, const af_case *c, const char *why);

/* ---- outdir.c: what the campaign writes in DIR ---- */
/* A finding, the rawmap, a corpus input, stats or a report could not be written (why:
 * the path and the system's reason): counted in st.write_errors, said on stderr (the
 * first ones), and the campaign stops fuzzing and ends with AF_CAMPAIGN_WRITE_ERROR. */
void af_camp_write_failed(af_campaign_state *cp, const char *what, const char *why);
/* The deterministic sweep (fuzz.h, af_fuzz_sweep) of the default case, the default case
 * causal with a backward, and the smallest of the user's own seeds, into cp->sweep (run
 * after the seeds) and written to corpus_dir as seed-sweep-N; returns how many (sweep.c). */
int af_camp_queue_sweep(af_campaign_state *cp, const char *corpus_dir);
/* The end of the run: st.findings and st.buckets from DIR/findings (what the reports
 * count), st.findings_unstored = findings seen this run that it does not hold
 * (in-process engine; failed writes, or left in DIR/pending). */
void af_camp_count_stored(af_campaign_state *cp);
/* The run failed to keep what it found (write errors or unstored findings): one line
 * saying so. true when it did. */
bool af_camp_report_failure(const af_campaign_state *cp);

/* ---- resume.c ---- */
/* DIR's earlier campaign (prior, read from its stats.json) continues in cp: refused with
 * why when it ran another backend, engine or shard. 0 or -1. */
int af_camp_resume_check(const af_campaign_state *cp, const af_campaign_stats *prior, char *why, size_t cap);
/* Take over prior's counters, histograms, cells, timeline and start time. */
void af_camp_resume_apply(af_campaign_state *cp, const af_campaign_stats *prior);
/* Add DIR/corpus's inputs not in the queue yet (content hash) to it. Returns how many. */
int af_camp_resume_corpus(af_campaign_state *cp);
/* The cases DIR/current held when the earlier campaign stopped: moved to
 * DIR/interrupted/run<N>-<name>.case (never replacing one there), one line on stderr
 * per case naming its path and backend. Returns how many. */
int af_camp_resume_keep_inflight(af_campaign_state *cp);
/* Findings a killed run stored after its last stats.json write (bucket counts plus
 * DIR/pending cases above st.findings): added to st.findings, so that stats.json and
 * the reports agree (st.cases and its histograms stay as written: the seqlens of those
 * cases are not known). Returns how many. */
long long af_camp_resume_recount_findings(af_campaign_state *cp);
/* DIR/interrupted/<name>.case on disk (stats.json interrupted_cases). */
int af_camp_count_interrupted(const af_campaign_state *cp);
/* The run ended (not killed): DIR/current's cases all finished; removed, so that a
 * resume keeps aside only what a killed run had in flight. */
void af_camp_clear_inflight(af_campaign_state *cp);

/* ---- interrupt.c ---- */
typedef struct {
    struct sigaction sigint, sigterm;
} af_camp_saved_signals;
/* Catch SIGINT / SIGTERM for the campaign (the previous handlers kept in saved). */
void af_camp_interrupt_install(af_camp_saved_signals *saved);
void af_camp_interrupt_restore(const af_camp_saved_signals *saved);
/* 0, or the signal (SIGINT / SIGTERM) that asked the campaign to stop. */
int af_camp_interrupted(void);

/* ---- pending.c ---- */
/* Minimise and store every pending finding until stop_at (keep_rest: store the rest as
 * found). Returns the number handled. */
int af_camp_process_pending(af_campaign_state *cp, double stop_at, bool keep_rest);

/* ---- known.c ---- */
/* The stored bucket whose signature is this one, or NULL. */
const af_camp_known_bucket *af_camp_known_exact(af_campaign_state *cp, const char *signature);
/* The stored bucket a raw finding (case c, finding identity) would minimise into: the
 * most specific one of that identity whose class c could reach, when exactly one is;
 * else NULL (none, or ambiguous: only minimising tells). */
const af_camp_known_bucket *af_camp_known_predict(af_campaign_state *cp, const af_case *c, const char *identity);
/* Record a stored bucket (minimised: one more minimisation of it); a new one is linked
 * with the stored buckets whose verdicts show its identity. */
void af_camp_known_add(af_campaign_state *cp, const af_rawmap_entry *e, bool minimised);
/* Case c of bucket's defect failed as v: each finding of v whose identity is not the
 * bucket's is one defect seen through another tensor or probe. The bucket that finding
 * predicts (now, or once it is stored: kept as a witness) is linked with bucket
 * (DIR/links/<bucket>, both ways). */
void af_camp_known_link(af_campaign_state *cp, const char *bucket, const af_case *c, const af_verdict *v);
void af_camp_known_free(af_camp_known *k);

/* ---- inprocess.c ---- */
/* Fuzz until stop_at with JOBS forked children in flight. */
void af_camp_run_inprocess(af_campaign_state *cp, double stop_at);

/* ---- libfuzzer.c ---- */
/* The attnfuzz_fuzz to run (o->fuzzer_path, or beside this executable); false = none. */
bool af_camp_find_fuzzer(const af_campaign_opts *o, char *out, size_t cap);
/* Run attnfuzz_fuzz until stop_at; 0, or -1 when it could not be run. */
int af_camp_run_libfuzzer(af_campaign_state *cp, const char *fuzzer, double stop_at);

#endif
