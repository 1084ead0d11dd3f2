/* campaign/merge.h — `attnfuzz merge OUT DIR...`: several campaign directories (the
 * shards of a Slurm job array, or campaigns of several nights) made into one:
 *   findings/  the union of the buckets; a bucket found by several (same signature, so
 *              the same bucket id) keeps the smaller reproducer (af_finding_case_order,
 *              the rule af_finding_store uses) with its files, and its count is the sum,
 *              first_seen the earliest, last_seen the latest, time_to_first the least;
 *   corpus/    the union of the inputs, named by content hash, then merged in libFuzzer's
 *              sense (campaign/corpus_merge.h: only inputs adding coverage or a config
 *              cell stay; coverage/ is united for it);
 *   rawmap/    the union (a later resume of OUT minimises nothing twice);
 *   stats.json counters, histograms and elapsed_s summed (elapsed_s is fuzzing seconds
 *              over all shards), config cells united, start time the earliest, buckets
 *              and corpus recounted in OUT, shards_merged = the number of DIRs;
 *   report.*   rebuilt from the merged findings (triage/report.h).
 * Each DIR is locked while it is read (a running campaign's DIR is refused); findings a
 * killed campaign left in DIR/pending are first stored there as `triage` would. OUT is
 * locked too and must not hold a campaign or a merge already. merge.c. */
#ifndef ATTNFUZZ_CAMPAIGN_MERGE_H
#define ATTNFUZZ_CAMPAIGN_MERGE_H

#include <stddef.h>

typedef struct {
    int dirs;           /* DIRs merged */
    int buckets_in;     /* buckets over all DIRs (a bucket of two DIRs counted twice) */
    int buckets;        /* distinct buckets in OUT */
    long long findings; /* sum of the bucket counts */
    long long cases;    /* summed stats.json cases */
    int corpus_united;  /* distinct corpus inputs over the DIRs (content hash) */
    int corpus;         /* corpus inputs in OUT after the corpus merge */
} af_merge_summary;

enum { AF_MERGE_OK = 0, AF_MERGE_BUSY = 1, AF_MERGE_ERROR = -1 };

/* Merge dirs[0..n) into out. AF_MERGE_OK with sum filled, AF_MERGE_BUSY (a DIR or OUT
 * is locked by a running campaign; why names it) or AF_MERGE_ERROR with why (names the
 * directory or file). */
int af_campaign_merge(const char *out, const char *const *dirs, int n, af_merge_summary *sum, char *why, size_t cap);

/* OUT/plot_data from the dirs' plot_data, as if they ran side by side (plot_merge.c): each
 * line sums every dir's last line at or before its time. 0, or -1 with why. */
int af_plot_merge(const char *out, const char *const *dirs, int n, char *why, size_t cap);

#endif
