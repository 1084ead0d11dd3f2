/* campaign/stats.h — a campaign's counters, DIR/stats.json (stable keys) and the
 * one-line progress display. stats.c. */
#ifndef ATTNFUZZ_CAMPAIGN_STATS_H
#define ATTNFUZZ_CAMPAIGN_STATS_H

#include <stdbool.h>

#include "backends/backend.h"

/* log2 buckets of a sequence length: bucket k holds [2^k, 2^(k+1)), k = 0..17 */
#define AF_STATS_SEQLEN_BUCKETS 18

typedef struct {
    double start_unix, elapsed_s;
    long long cases, declined, errors, crashes, hangs;
    long long findings;             /* findings seen (every duplicate counts) */
    int buckets;                    /* distinct buckets in DIR/findings + pending */
    int minimised;                  /* raw signatures minimised so far */
    int unminimised;                /* stored as found: --total-time ended before their turn */
    int corpus;                     /* inputs in the queue / corpus dir */
    double time_to_first_finding_s; /* < 0 none yet */
    char backend[AF_NAME_MAX], engine[AF_NAME_MAX];
    int jobs;
    const char *mode; /* "libfuzzer" | "inprocess" */
    double max_work;
    long long seqlen_q_hist[AF_STATS_SEQLEN_BUCKETS];  /* cases counted in stats.cases, */
    long long seqlen_kv_hist[AF_STATS_SEQLEN_BUCKETS]; /* by log2 bucket of s_q / s_kv */
} af_campaign_stats;

/* Count one case's s_q and s_kv in the histograms. */
void af_stats_note_seqlens(af_campaign_stats *st, int seqlen_q, int seqlen_kv);

/* Write DIR/stats.json atomically. Keys (stable): start_time, start_time_unix,
 * last_update, elapsed_s, cases, cases_per_s, findings, buckets, minimised, crashes,
 * hangs, declined, errors, corpus, backend, engine, jobs, mode, max_work,
 * time_to_first_finding_s (null when none), seqlen_q_hist and seqlen_kv_hist (objects
 * keyed by log2 bucket, "1", "2-3", "4-7" ... "131072-262143", every bucket present;
 * in-process mode they sum to cases, libFuzzer mode leaves them at 0: its workers
 * count cases). Returns 0 or -1. */
int af_stats_write(const char *dir, const af_campaign_stats *st);
/* DIR/fuzzer_stats, AFL's format ("key : value" lines, written atomically with every
 * stats.json): start_time, last_update (unix seconds), run_time, fuzzer_pid,
 * execs_done (= cases), execs_per_sec, paths_total (= corpus), unique_crashes,
 * unique_hangs, findings, buckets, declined, target_mode, afl_banner. 0 or -1. */
int af_stats_write_fuzzer_stats(const char *dir, const af_campaign_stats *st);
/* One progress line on stderr: "\r..." on a tty, a plain line otherwise (callers
 * rate-limit: about once a second on a tty, every 10 s otherwise). */
void af_stats_progress(const af_campaign_stats *st, bool tty, bool final);

#endif
