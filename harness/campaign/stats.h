/* campaign/stats.h — a campaign's counters, DIR/stats.json (stable keys) and the
 * one-line progress display. stats.c. */
#ifndef ATTNFUZZ_CAMPAIGN_STATS_H
#define ATTNFUZZ_CAMPAIGN_STATS_H

#include <stdbool.h>

#include "backends/backend.h"

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

#endif
