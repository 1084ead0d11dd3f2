/* campaign/campaign.h — a fuzz campaign: its options and its entry point.
 *
 * Files (split by role, like AFL++), each part with its own header:
 *   campaign.c        options, af_campaign_run: set up DIR, seed, pick the engine,
 *                     minimise what is left, reports at the end
 *   session.{c,h}     af_session: registry + runner + backend; run one case
 *   session_child.c   the same in forked children (crashes and hangs become verdicts)
 *   worker_pool.{c,h} persistent workers serving those cases, many per process
 *   isolate.{c,h}     run a callback in a child with a deadline (fork/pipe/poll/waitpid)
 *   store.{c,h}       findings stored, counted via DIR/rawmap, or deferred to DIR/pending
 *   queue.{c,h}       the in-process corpus queue and the seed corpus (encoded inputs)
 *   corpus_merge.{c,h} DIR/corpus merged in libFuzzer's sense (coverage, config cells)
 *   stats.{c,h}       DIR/stats.json (stable keys) and the one-line progress display
 *   pending.c         new raw signatures minimised once, stored in their bucket
 *   inprocess.c       the in-process engine: JOBS children in flight, fork per case
 *   libfuzzer.c       the libFuzzer engine: attnfuzz_fuzz as a child, its artifacts
 *   campaign_internal.h  the campaign state those four share
 *
 * Campaign directory DIR:
 *   DIR/stats.json            stable keys, rewritten about once a second
 *   DIR/corpus/               fuzz inputs (encoded cases; seeds first), merged at the end
 *                             (corpus_merge.h: those adding coverage or a config cell)
 *   DIR/coverage/<name>       the coverage a corpus input reached (in-process engine)
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
 *   DIR/lock                  flock'ed while a campaign runs: "pid P host H" (dirlock.h)
 *   DIR/config_cells.bin      the config cells seen (stats.h), for resume and merge
 *   DIR/plot_data             a line per progress tick: coverage and rate over time (stats.h)
 *   DIR/provenance.json       version, commit, command line, seed, host, GPU and library
 *                             versions of each run (provenance.h); the reports show them
 *   DIR/interrupted/          cases in flight when an earlier run of DIR stopped
 *
 * --gpus: one worker process per GPU (or workers_per_gpu of them), each with its own
 * CUDA_VISIBLE_DEVICES set before anything else (worker_pool.h); they share DIR: the
 * parent keeps the one corpus (merged every AF_CAMP_CORPUS_MERGE_PERIOD_S, every
 * merge_every cases and at the end), the workers store findings in the
 * one DIR/findings (per-bucket locks, triage/findings.h). stats.json counts the cases
 * of each GPU (gpus, gpu_cases); each finding names the GPU that ran it ("device").
 *
 * Resume: --resume --out DIR naming a directory with a stats.json continues that campaign
 * (resume.c; without --resume such a DIR is refused, and --resume on a DIR without one
 * is an error): its counters, histograms, timeline and elapsed time go on from where they
 * were, DIR/corpus is loaded into the queue, findings left in DIR/pending are minimised,
 * buckets are kept. The same backend, engine and shard are required.
 */
#ifndef ATTNFUZZ_CAMPAIGN_H
#define ATTNFUZZ_CAMPAIGN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backends/backend.h"
#include "campaign/gpus.h"
#include "campaign/shard.h"

typedef struct {
    double time_s;  /* fuzzing time (minimisation of the last buckets and the
                                  reports come after) */
    double total_s; /* 0, or a hard limit on the whole run: fuzzing stops by
                                  then, minimisation stops 5 s before, findings not yet
                                  minimised are stored as found, reports are written */
    const char *backend, *engine;
    int jobs;
    const char *out_dir;
    const char *const *corpus; /* seed corpus paths; none: corpora/seed and corpora/seed-recent
                                  found by util/datadir.h (AF_CAMPAIGN_NO_DATA when neither is) */
    int n_corpus;
    int deadline_s;  /* per case; 0 = the session's default (60 s, GPU 300 s) */
    double max_work; /* 0 = default budget */
    uint64_t seed;
    int minimize_runs;       /* run budget per minimisation (default 200) */
    bool force_inprocess;    /* ignore attnfuzz_fuzz even when it exists */
    int stop_after_buckets;  /* --stop-after-buckets N: fuzzing ends once N buckets (distinct
                                signatures, pending ones too) are found; minimisation and the
                                reports follow as at --time's end; 0 = fuzz for --time */
    bool no_probes;          /* --no-probes: judge each case without the probes (the
                                in-process engine: attnfuzz_fuzz always runs them) */
    const char *fuzzer_path; /* NULL = attnfuzz_fuzz beside this executable */
    int rss_limit_mb;        /* libFuzzer -rss_limit_mb (default 4096) */
    af_backend *backend_obj; /* tests / embedding: this backend instead of looking up
                                  `backend` (not owned; forces the in-process engine) */
    unsigned session_flags;  /* extra AF_SESSION_* flags (tests: AF_SESSION_ISOLATE) */
    int repeats;             /* runs of a nondeterministic backend (judge/runner.h); 0 =
                                AF_REPEATS_DEFAULT; the in-process engine's (the libFuzzer
                                workers keep the default) */
    int worker_cases;        /* cases a persistent worker serves (campaign/worker_pool.h);
                                  0 = a fresh child per case, -1 = the session's default */
    af_shard shard;          /* --shard I/N (campaign/shard.h); count 0 or 1 = whole space */
    bool resume;             /* --resume: out_dir must hold an earlier campaign, which continues;
                                without it a DIR holding one is refused (AF_CAMPAIGN_SETUP_ERROR) */
    const af_gpu_list *gpus; /* --gpus (campaign/gpus.h; not owned), NULL = none: job slot i runs
                                its cases in workers with CUDA_VISIBLE_DEVICES =
                                gpus->id[i / workers_per_gpu]; jobs must be gpus->n x
                                workers_per_gpu; the in-process engine is used */
    int workers_per_gpu;     /* with gpus: workers (cases in flight) per GPU, >= 1 */
    long long merge_every;   /* in-process engine: DIR/corpus merged after every this many cases
                                (campaign_internal.h), 0 = AF_CAMP_CORPUS_MERGE_CASES */
    const char *const *argv; /* the command line as typed ("attnfuzz", "campaign", ...), for
                                DIR/provenance.json; NULL = not recorded */
    int argc;
    FILE *summary; /* the closing summary block (the CLI: stdout), NULL = none;
                                the progress lines stay on stderr */
} af_campaign_opts;

/* What af_campaign_run returns (the CLI maps each to its exit code, cli/cli.h). */
enum {
    AF_CAMPAIGN_CLEAN = 0,        /* no findings */
    AF_CAMPAIGN_FINDINGS = 1,     /* at least one bucket */
    AF_CAMPAIGN_SETUP_ERROR = 2,  /* bad options, unknown backend, unreadable seed corpus */
    AF_CAMPAIGN_UNAVAILABLE = 3,  /* the backend is not usable here */
    AF_CAMPAIGN_PLUGIN_ERROR = 4, /* plugin:PATH could not be loaded */
    AF_CAMPAIGN_INTERRUPTED = 5,  /* SIGINT / SIGTERM: stopped early, reports written */
    AF_CAMPAIGN_BUSY = 6,         /* DIR/lock is held by another running campaign */
    AF_CAMPAIGN_WRITE_ERROR = 7,  /* DIR unusable (not creatable, a symlinked subdirectory), or a
                                     finding, the rawmap, the corpus, stats or a report could not
                                     be written (each named with its reason; counted in
                                     stats.json write_errors) */
    AF_CAMPAIGN_NO_DATA = 8,      /* no corpus given and the default seed folders are found nowhere
                                     (util/datadir.h; the message names every place looked) */
    AF_CAMPAIGN_LOST = 9,         /* the backend went away mid-run (a GPU that fell off the bus):
                                     fuzzing stopped, every finding and the cases in flight kept
                                     (DIR/lost/), stats.json "backend_lost"; --resume continues */
};

void af_campaign_opts_default(af_campaign_opts *o);
/* Run a campaign: one of AF_CAMPAIGN_*. */
int af_campaign_run(const af_campaign_opts *o);

/* Findings a campaign left in DIR/pending (it was killed before it minimised them):
 * each stored as found in DIR/findings (a raw signature minimised meanwhile: counted in
 * its bucket), removed from pending, and DIR/stats.json's findings and unminimised
 * raised by their number. For `attnfuzz triage`. Returns how many, or -1 with why. */
int af_campaign_recover_pending(const char *dir, char *why, size_t cap);

/* The subdirectories a campaign (or a merge into DIR) writes or deletes in: corpus,
 * pending, findings, rawmap, coverage ... (outdir.c). Each that exists must be a real
 * directory inside DIR, not a symlink, which would take writes and the corpus merge's
 * deletions elsewhere. 0, or -1 with why naming it ("DIR/corpus is a symbolic link (to
 * T) ..."). */
int af_campaign_check_subdirs(const char *dir, char *why, size_t cap);

#endif
