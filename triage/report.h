/* triage/report.h — reports built from a findings directory.
 *
 * Reports (af_triage_build, `attnfuzz triage DIR`):
 *   DIR/report.json  DIR/report.junit.xml  DIR/report.sarif (SARIF 2.1.0)  DIR/report.html
 * Buckets in severity order (af_triage_severity_order), then count. Every path in them is
 * relative to DIR, the Reproduce lines too (run them from DIR). Provenance, from
 * DIR/provenance.json (campaign/provenance.h; absent keys are "unknown"): report.json
 * "provenance" (the file's runs), SARIF runs[0].tool.driver.version and
 * runs[0].invocations (one per run: commandLine, arguments, startTimeUtc, endTimeUtc,
 * executionSuccessful, machine, properties with seed, GPU and library versions), JUnit
 * <properties>, an HTML table. DIR/plot_data (campaign/stats.h) becomes the HTML's
 * coverage and rate plot (PNG).
 * The cases a killed run had in flight (DIR/interrupted/<name>.case, kept by a resume) are
 * listed with their backend: report.json "interrupted" ([{case, backend}]) and
 * summary.interrupted_cases, the junit suite's system-out, an HTML section.
 * Linked buckets (DIR/links/<bucket>, one bucket id a line: the campaign saw one raw case
 * fail in both, e.g. a mismatch on O and on LSE, or a mismatch and the feature probe)
 * are one defect group: report.json gives each bucket "linked" (ids) and "group" (the
 * smallest id of its linked buckets, transitively), and summary.groups.
 */
#ifndef ATTNFUZZ_TRIAGE_REPORT_H
#define ATTNFUZZ_TRIAGE_REPORT_H

#include <stddef.h>
#include "judge/verdict.h"

typedef struct {
    int buckets;        /* distinct signatures */
    long long findings; /* sum of counts */
    int by_kind[AF_V_COUNT];
    int interrupted_cases; /* DIR/interrupted/<name>.case: in flight when a run stopped */
    /* from DIR/stats.json: the campaign's failed writes, and the findings it saw but could
     * not store (0 when none, or no stats.json) */
    long long write_errors, findings_unstored;
    int groups;             /* defect groups: buckets linked by the campaign (DIR/links) count once */
    char largest_group[16]; /* id of the group with the most buckets ("" = none) */
    int largest_group_size;
} af_triage_summary;

/* Does DIR hold something to triage: a directory with stats.json (a campaign, a merge,
 * a claims campaign), findings/ or gate.json? 0, or -1 with why ("DIR: no such
 * directory", "DIR holds no campaign ..."): nothing is to be written there then. */
int af_triage_check_dir(const char *dir, char *why, size_t cap);

/* Write DIR/report.json, report.junit.xml, report.sarif, report.html from DIR/findings.
 * A DIR without findings gives empty (passing) reports. summary may be NULL.
 * Returns 0 or -1 with why. */
int af_triage_build(const char *dir, af_triage_summary *summary, char *why, size_t cap);

/* The one severity order of verdict kinds (triage/src/severity.c): every report, the
 * campaign's closing summary and `attnfuzz triage` list buckets by it, then by count
 * (most first), then signature. Most severe first: crash, hang, out_of_bounds,
 * input_mutation, nan_inf, unwritten, leak, mismatch, nondeterministic,
 * feature_ignored, inert, convention, resource, claim_mismatch, declined, error; a
 * kind this build does not know comes last. */
extern const af_verdict_kind af_triage_severity_order[AF_V_COUNT - 1];
/* Position of kind in that order (0 = most severe); AF_V_COUNT - 1 for an unknown kind. */
int af_triage_severity_rank(int kind);

/* Base64 of n bytes into a malloc'ed NUL-terminated string (NULL on failure). */
char *af_base64(const unsigned char *data, size_t n);

#endif
