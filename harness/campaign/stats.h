/* campaign/stats.h — a campaign's counters, DIR/stats.json (stable keys) and the
 * one-line progress display. stats.c. */
#ifndef ATTNFUZZ_CAMPAIGN_STATS_H
#define ATTNFUZZ_CAMPAIGN_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/backend.h"
#include "campaign/gpus.h"
#include "fuzz/fuzz_envelope.h"
#include "model/case_fields.h"

/* log2 buckets of a sequence length: bucket k holds [2^k, 2^(k+1)), k = 0..17 */
#define AF_STATS_SEQLEN_BUCKETS 18
/* config-space cells (af_fuzz_config_cell, fuzz/fuzz.h) and timeline points kept */
#define AF_STATS_CONFIG_CELLS 4096
#define AF_STATS_TIMELINE     64

/* One point of the timeline: the counters at elapsed_s. */
typedef struct {
    double elapsed_s;
    long long cases, findings;
} af_stats_point;

typedef struct {
    double start_unix, elapsed_s;
    long long cases, declined, errors, crashes, hangs;
    long long findings;             /* findings seen (every duplicate counts) */
    int buckets;                    /* distinct buckets in DIR/findings + pending */
    int minimised;                  /* raw signatures minimised so far */
    int unminimised;                /* stored as found: --total-time or a signal ended before their turn,
                                       or left in DIR/pending by a killed campaign (triage) */
    int deduplicated;               /* raw signatures counted in a known bucket without minimising */
    bool interrupted;               /* SIGINT / SIGTERM stopped the campaign early */
    int corpus;                     /* inputs in the queue / corpus dir */
    double time_to_first_finding_s; /* < 0 none yet */
    char backend[AF_NAME_MAX], engine[AF_NAME_MAX];
    int jobs;
    const char *mode; /* "libfuzzer" | "inprocess" */
    double max_work;
    long long seqlen_q_hist[AF_STATS_SEQLEN_BUCKETS];                 /* cases counted in stats.cases, */
    long long seqlen_kv_hist[AF_STATS_SEQLEN_BUCKETS];                /* by log2 bucket of s_q / s_kv */
    long long seqlen_kv_judged_hist[AF_STATS_SEQLEN_BUCKETS];         /* of them judged: not declined, no error */
    double cudnn_graph_build_seconds;                                 /* graph + plan builds the runs waited for */
    long long plan_cache_hits, plan_cache_misses;                     /* runs served from / adding to a plan cache */
    const af_fuzz_envelope *envelope;                                 /* the learnt envelope, NULL = none */
    unsigned long long config_cells_seen[AF_STATS_CONFIG_CELLS / 64]; /* bit per cell */
    af_stats_point timeline[AF_STATS_TIMELINE];                       /* every timeline_interval_s, oldest first */
    int timeline_n;
    double timeline_interval_s; /* 0 = 1 s; doubles each time the timeline fills */
    char shard[32];             /* "I/N" of --shard, "" = not sharded */
    int resumed;                /* times this campaign was resumed (campaign --out on its DIR) */
    int shards_merged;          /* attnfuzz merge: campaign dirs summed into this one, 0 = none */
    /* cases counted in stats.cases by cp comm type (index af_cp_comm; AF_CP_NONE: cp = 1),
     * and of them those declined */
    long long cp_cases[AF_CP_A2A_P2P + 1], cp_declined[AF_CP_A2A_P2P + 1];
    /* cases counted in stats.cases whose dropout ran on the kernel's own stream
     * (dropout_rng = kernel; stats.json dropout_kernel_cases) */
    long long dropout_kernel_cases;
    /* cases counted in stats.cases that set each optional case field (model/case_fields.h:
     * printed by af_case_print, e.g. kv_dtype, page_layout, gap_h); stats.json case_fields */
    long long field_cases[AF_CF_COUNT];
    int interrupted_cases; /* DIR/interrupted/<name>.case: in flight when a run of DIR was killed */
    /* this run's failures to write in DIR (a finding, the rawmap, a report, the corpus,
     * stats): each ends the campaign with AF_CAMPAIGN_WRITE_ERROR */
    long long write_errors;
    /* of errors: cases whose judging outlived the deadline after the backend's runs had
     * returned (af_session_result.judge_timeout): no verdict on the kernel, kept in
     * DIR/errors/ with the stage that held them */
    long long judge_timeouts;
    /* of cases: prepared by their worker while the case before was judged (judge/
     * prepare_ahead.h, ATTNFUZZ_PREPARE_AHEAD) */
    long long prepared_ahead;
    /* plans the cases' runs read from / wrote to a plan folder (their verdicts' judge
     * summary; cudnn: ATTNFUZZ_CUDNN_PLAN_DIR) */
    long long plans_from_disk, plans_to_disk;
    long long findings_unstored; /* seen but not counted in DIR/findings at the end (left in
                                    DIR/pending, or lost to a failed write) */
    int seeds_skipped;           /* seed files refused (malformed, not a regular file) */
    /* the backend went away in this run (campaign/lost.c): what it said ("" = it did not),
     * the fuzzing seconds when it was seen, and the cases kept in DIR/lost/ (in flight, or
     * answered unavailable) */
    char backend_lost[512];
    double backend_lost_at_s;
    int lost_cases;
    /* campaign --gpus: the GPUs (CUDA_VISIBLE_DEVICES entries) cases ran on, and the cases
     * counted in stats.cases that each ran (n_gpus 0 = no --gpus; they sum to cases then) */
    int n_gpus;
    char gpus[AF_GPUS_MAX][AF_GPU_ID_MAX];
    long long gpu_cases[AF_GPUS_MAX];
    /* DIR/plot_data: the last line written (its time and cases: the rate column is over
     * the interval since), lines written by this run */
    double plot_last_s, plot_last_rate;
    long long plot_last_cases;
    int plot_lines;
} af_campaign_stats;

/* Add n cases to GPU device's count (listed first when new; beyond AF_GPUS_MAX GPUs
 * ignored). Resume and merge add up counts by device this way. */
void af_stats_note_gpu(af_campaign_stats *st, const char *device, long long n);

/* Count one run's plan-cache outcome and build time (af_run_info of a verdict). */
void af_stats_note_run(af_campaign_stats *st, const af_run_info *info);

/* Count one case's s_q and s_kv in the histograms. */
void af_stats_note_seqlens(af_campaign_stats *st, int seqlen_q, int seqlen_kv);
/* Count one judged case (neither declined nor an error) in seqlen_kv_judged_hist. */
void af_stats_note_judged_seqlen(af_campaign_stats *st, int seqlen_kv);
/* Count one case's cp comm type (cp_cases; cp_declined when its verdict declined) and
 * its dropout stream (dropout_kernel_cases). */
void af_stats_note_cp(af_campaign_stats *st, const af_case *c, bool declined);
/* Count the optional case fields one case sets (field_cases). */
void af_stats_note_fields(af_campaign_stats *st, const af_case *c);
/* Count the config-space cell (0 .. AF_STATS_CONFIG_CELLS - 1) of one case. */
void af_stats_note_config_cell(af_campaign_stats *st, unsigned cell);

/* Write DIR/stats.json atomically. Keys (stable): start_time, start_time_unix,
 * last_update, elapsed_s, cases, cases_per_s, findings, buckets, minimised, crashes,
 * hangs, declined, errors, corpus, backend, engine, jobs, mode, max_work,
 * time_to_first_finding_s (null when none), case_fields (field_cases by field name, every
 * optional field present), deduplicated (new raw signatures counted in a
 * known bucket without minimising: campaign/pending.c), interrupted (true after SIGINT / SIGTERM), seqlen_q_hist and seqlen_kv_hist (objects
 * keyed by log2 bucket, "1", "2-3", "4-7" ... "131072-262143", every bucket present;
 * in-process mode they sum to cases, libFuzzer mode leaves them at 0: its workers
 * count cases), seqlen_kv_judged_hist (the same bins, the cases judged: neither declined
 * nor an error; crashes and hangs count, they are verdicts on the kernel), cp_cases and cp_declined (objects keyed "1", "p2p", "all_gather", "a2a",
 * "a2a+p2p": cases by cp comm type, "1" for cp = 1, and of them declined; in-process
 * mode only, as the histograms), cudnn_graph_build_seconds, plan_cache_hits, plan_cache_misses (in-process:
 * each case's main run; libFuzzer: the workers' backend totals, probes' runs included),
 * envelope (the learnt envelope, only when set), config_cells (distinct config-space
 * cells of the cases counted) and config_cells_total, timeline ({"interval_s": X,
 * "points": [[elapsed_s, cases, findings], ...]}: a point every interval_s, at most
 * AF_STATS_TIMELINE kept (when full, every other one goes and the interval doubles), the
 * last point the state written now). Each write may add a timeline point (hence st is
 * not const), shard ("I/N" or null), resumed (times resumed), shards_merged (0 unless
 * written by attnfuzz merge), interrupted_cases (cases a killed run had in flight, kept
 * in DIR/interrupted/), write_errors (this run's failed writes in DIR), judge_timeouts (of
 * errors: cases attnfuzz's own stages held past the deadline, no backend call in flight;
 * absent from older files), plans_from_disk and plans_to_disk (plans the cases' runs read
 * from and wrote to a plan folder; in-process mode; absent from older files), findings_unstored
 * (findings seen that DIR/findings does not count), seeds_skipped, backend_lost
 * ({"why": ..., "at_s": ..., "cases_kept": n} when the backend went away in this run, else
 * null), gpus (the --gpus
 * list, ["0", "1"], null without --gpus) and gpu_cases ({"0": n, "1": m}: cases per GPU,
 * summing to cases; null without --gpus). Written through af_write_parts_atomic (util/fsutil.h);
 * beside it DIR/config_cells.bin, the cell bit set (AF_STATS_CONFIG_CELLS bits, binary)
 * that a resume or a merge reads back. Returns 0 or -1 with why (the path and the
 * system's reason; why may be NULL). */
int af_stats_write(const char *dir, af_campaign_stats *st, char *why, size_t cap);
/* Read DIR/stats.json (and DIR/config_cells.bin when present) back into st: every
 * counter, the histograms, start time, elapsed, timeline, backend, engine, jobs, mode,
 * shard, resumed, gpus and gpu_cases. st->envelope stays NULL. 0; 1 when DIR has no stats.json; -1 with
 * why (names the file and the key) when it is malformed. stats_read.c. */
int af_stats_read(const char *dir, af_campaign_stats *st, char *why, size_t cap);
/* DIR/fuzzer_stats, AFL's format ("key : value" lines, written atomically with every
 * stats.json): start_time, last_update (unix seconds), run_time, fuzzer_pid,
 * execs_done (= cases), execs_per_sec, paths_total (= corpus), unique_crashes,
 * unique_hangs, findings, buckets, declined, target_mode, afl_banner. 0 or -1. */
int af_stats_write_fuzzer_stats(const char *dir, const af_campaign_stats *st);
/* DIR/plot_data, AFL++'s plot_data for attnfuzz: a header line, then one line per
 * progress tick (at most every AF_STATS_PLOT_PERIOD_S, and the last state), appended,
 * so a resumed campaign continues the same file. Columns (comma-separated, stable):
 *   relative_time  campaign seconds (a resume goes on from the earlier runs' time)
 *   cases          cases counted (stats.json cases)
 *   cases_per_s    cases per second since the previous line (0 on a run's first line;
 *                  the previous line's rate when no time passed, as after fuzzing stopped)
 *   findings       findings seen, every duplicate counted
 *   buckets        distinct buckets
 *   corpus         corpus inputs
 *   features       coverage features the in-process engine's queue reached (0 with the
 *                  libFuzzer engine, whose workers keep their own)
 *   config_cells   distinct config cells of the cases counted (of AF_STATS_CONFIG_CELLS:
 *                  the hash of the case's configuration class, fuzz/fuzz.h)
 *   crashes, hangs
 * AF_STATS_PLOT_HEADER is the header line. force writes a line even within the period.
 * 0, or -1 with why. */
#define AF_STATS_PLOT_PERIOD_S 1.0
#define AF_STATS_PLOT_HEADER                                                                                           \
    "# relative_time, cases, cases_per_s, findings, buckets, corpus, features, config_cells, crashes, hangs"
int af_stats_plot_append(const char *dir, af_campaign_stats *st, int features, bool force, char *why, size_t cap);
/* Distinct config cells noted (af_stats_note_config_cell). */
int af_stats_config_cells(const af_campaign_stats *st);

/* One progress line on stderr: "\r..." on a tty, a plain line otherwise (callers
 * rate-limit: about once a second on a tty, every 10 s otherwise). */
void af_stats_progress(const af_campaign_stats *st, bool tty, bool final);

#endif
