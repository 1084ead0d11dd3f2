/* triage/findings.h — the findings directory, one bucket per signature.
 *
 * Findings directory (written by af_finding_store, read by af_findings_scan):
 *   DIR/findings/<bucket>/finding.case     minimised reproducer, canonical case text
 *   DIR/findings/<bucket>/original.case    optional: the case before minimisation
 *   DIR/findings/<bucket>/verdict.json     one line: af_verdict_to_json's object plus the keys
 *        signature, bucket, config_class, tensor, verdict_line, count, first_seen (ISO
 *        8601 UTC), first_seen_unix, last_seen_unix, time_to_first_seconds (null when
 *        unknown), case_cost, repro (the Reproduce command, quoted for sh: af_repro_command),
 *        repro_args (its words after the case path), original_case, heatmap, leak (file
 *        names or null)
 *   DIR/findings/<bucket>/heatmap.txt      optional error matrix (af_heatmap_save format)
 *   DIR/findings/<bucket>/leak.txt         optional leak matrix (af_leak_save format)
 *   DIR/findings/<bucket>/heatmap.png, leak.png   pictures drawn from the two above
 * <bucket> = af_bucket_id(signature): 12 lower-case hex digits of FNV-1a 64.
 *
 */
#ifndef ATTNFUZZ_TRIAGE_FINDINGS_H
#define ATTNFUZZ_TRIAGE_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include "model/case.h"
#include "judge/evidence.h"
#include "judge/signature.h"
#include "judge/verdict.h"

/* Optional extras of one stored finding; every field may be 0 / NULL. */
typedef struct {
    const af_case *original;          /* before minimisation -> original.case */
    const char *const *repro_options; /* NULL-terminated words the Reproduce line adds after
                                         --backend NAME (a worker's --worker-cmd TEXT), or NULL */
    double time_to_first_seconds;     /* campaign time until found; < 0 or 0 = unknown */
    const af_heatmap *heatmap;        /* -> heatmap.txt + heatmap.png */
    const af_leak_matrix *leaks;      /* -> leak.txt + leak.png (labels optional) */
} af_finding_extra;

/* One bucket as read back from disk. */
typedef struct {
    char bucket[AF_BUCKET_ID_LEN + 1];
    char dir[1024]; /* DIR/findings/<bucket> */
    char signature[AF_SIGNATURE_MAX];
    char config_class[256];
    char kind[32]; /* verdict kind name */
    char backend[AF_NAME_MAX];
    char engine[AF_NAME_MAX];
    char device[96]; /* the GPU that ran it (verdict.json "device", campaign --gpus), "" = not recorded */
    char tensor[8];
    char verdict_line[1024];
    char repro[4096];    /* "" when verdict.json's does not fit (a cut command is never shown) */
    char first_seen[32]; /* ISO 8601 UTC */
    long long count;     /* findings that fell in this bucket */
    double first_seen_unix, last_seen_unix;
    double time_to_first_seconds; /* < 0 unknown */
    double case_cost;
    bool has_original, has_heatmap, has_leak;
    char *case_text;    /* finding.case bytes (malloc'ed; freed after the callback) */
    char *verdict_json; /* verdict.json bytes (likewise) */
} af_finding_record;

/* Store a finding under DIR/findings/<bucket>/, creating directories. When the bucket
 * exists: count += 1, last_seen updated, and the case (with its verdict and extras)
 * replaced only when strictly cheaper (af_case_cost, then shorter canonical text).
 * The stored finding.case names the backend and engine that ran (from the verdict), so
 * it reproduces on its own. Concurrent writers (campaign workers) are serialised per
 * bucket with flock; files are replaced by rename. bucket_out (13 bytes) may be NULL.
 * Returns 1 new bucket, 0 duplicate, -1 error with why (also for a passing verdict). */
int af_finding_store(const char *dir, const af_case *c, const af_verdict *v, const af_finding_extra *extra,
                     char *bucket_out, char *why, size_t cap);

/* The Reproduce line of a stored finding, `attnfuzz repro CASE [--backend NAME] [OPTIONS...]`,
 * every word quoted for sh by af_shell_quote (util/shquote.h): pasted, it runs exactly
 * that. backend NULL or "" = no --backend; options NULL-terminated or NULL. Returns the
 * length needed; when it is >= cap, out = "" (af_shell_join). */
size_t af_repro_command(const char *case_path, const char *backend, const char *const *options, char *out, size_t cap);

/* Which of two reproducers of one bucket af_finding_store keeps: < 0 when a is the
 * smaller (lower af_case_cost, then shorter canonical text, then text order), > 0 when
 * b is, 0 when they print the same. attnfuzz merge keeps the same one. */
int af_finding_case_order(const af_case *a, const af_case *b);

/* Visit every bucket under DIR/findings in bucket-id order. The record's strings are
 * valid during the call only. A callback returning nonzero stops the scan. Returns
 * the number of buckets visited, or -1 with why (unreadable directory; a bucket with
 * a missing or malformed verdict.json is reported on stderr and skipped). */
typedef int (*af_finding_visit)(const af_finding_record *r, void *user);
int af_findings_scan(const char *dir, af_finding_visit visit, void *user, char *why, size_t cap);

#endif
