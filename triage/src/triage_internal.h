/* triage_internal.h — helpers shared by the triage sources (not public API). */
#ifndef ATTNFUZZ_TRIAGE_INTERNAL_H
#define ATTNFUZZ_TRIAGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "judge/evidence.h"
#include "triage/findings.h"
#include "util/json.h"

/* The file name inside bucket_dir (a bucket of the findings directory dir) into a
 * NUL-terminated malloc'ed buffer: only a regular file inside dir, not a symlink, of at
 * most TR_READ_MAX bytes (util/fsutil.h af_read_file_inside). NULL when absent or
 * refused; a refusal (not a missing file) is said on stderr once per file. */
#define TR_READ_MAX ((size_t)64 << 20)
char *tr_read_in(const char *dir, const char *bucket_dir, const char *name, size_t *len);

/* ---- reports (report.c, report_html.c, report_stats.c) ---- */

#define TR_SEQLEN_BUCKETS 18
#define TR_TIMELINE_MAX   160

/* DIR/stats.json as the campaign wrote it (campaign/stats.h keys; triage reads the
 * file, it does not link the campaign). Absent keys stay 0 / empty. */
typedef struct {
    bool present; /* DIR/stats.json was read */
    char backend[64], engine[64], mode[32], start_time[32];
    double elapsed_s, cases_per_s, time_to_first_finding_s; /* the last < 0: none */
    long long cases, findings, declined, errors, crashes, hangs, corpus, jobs;
    long long write_errors, findings_unstored; /* the campaign failed to keep what it found */
    long long config_cells, config_cells_total;
    char seqlen_keys[TR_SEQLEN_BUCKETS][24];
    long long seqlen_q_hist[TR_SEQLEN_BUCKETS], seqlen_kv_hist[TR_SEQLEN_BUCKETS];
    int seqlen_buckets;
    int timeline_n; /* points (elapsed_s, cases, findings) */
    double timeline_s[TR_TIMELINE_MAX];
    long long timeline_cases[TR_TIMELINE_MAX], timeline_findings[TR_TIMELINE_MAX];
} tr_campaign_stats;

/* Read DIR/stats.json (a regular file inside DIR). s->present false when there is none
 * or it does not parse (said on stderr). */
void tr_stats_read(const char *dir, tr_campaign_stats *s);

/* DIR/interrupted/<name>.case: cases a run had in flight when it stopped (report_interrupted.c). */
#define TR_INTERRUPTED_MAX 256 /* listed at most; total counts them all */
typedef struct {
    char name[300];    /* "interrupted/<file>.case", relative to DIR */
    char backend[160]; /* the case's backend, else the campaign's (stats.json) */
} tr_interrupted_case;
typedef struct {
    int n, total; /* listed (sorted by name), on disk */
    tr_interrupted_case cases[TR_INTERRUPTED_MAX];
} tr_interrupted;
/* Read DIR/interrupted/ (absent: none); campaign_backend names the backend of a case
 * that names none. */
void tr_interrupted_read(const char *dir, const char *campaign_backend, tr_interrupted *out);

#define TR_LINKED_MAX 16 /* linked buckets listed per bucket */
typedef struct {
    af_finding_record rec; /* case_text and verdict_json owned here */
    int kind;              /* af_verdict_kind, or -1 when the name is unknown */
    /* linked buckets (DIR/links/<bucket>, written by the campaign: one defect seen
     * through several tensors or probes) present in the list, and the group they make:
     * the smallest bucket id of the linked buckets, transitively (its own when none) */
    int n_linked;
    char linked[TR_LINKED_MAX][AF_BUCKET_ID_LEN + 1];
    char group[AF_BUCKET_ID_LEN + 1];
} tr_item;

/* Fill every item's linked and group from DIR/links (report_links.c). Returns the number
 * of groups. */
int tr_links_read(const char *dir, tr_item *items, int n);

/* DIR/provenance.json (campaign/provenance.h), report_provenance.c. */
/* The parsed file (new reference), or NULL when absent or malformed (said on stderr). */
json_t *tr_provenance_read(const char *dir);
/* Its last run (the one that wrote the reports), or NULL. */
const json_t *tr_provenance_last(const json_t *doc);
#define TR_PROVENANCE_PAIRS 48
#define TR_PROVENANCE_NAME  96
typedef struct {
    char name[TR_PROVENANCE_NAME];
    const char *value; /* into the document, number, or "unknown" */
    char number[32];
} tr_provenance_pair;
typedef struct {
    int n;
    tr_provenance_pair pair[TR_PROVENANCE_PAIRS];
} tr_provenance_pairs;
/* The last run as name / value pairs, every shown key present ("unknown" when not
 * recorded, also when doc is NULL): attnfuzz_version, git_commit, command_line, seed,
 * host, gpu, nvidia_driver, cuda_driver, cuda_runtime, cudnn, backend, engine,
 * start_time_utc, end_time_utc, outcome, runs, target, target.device,
 * target.versions.<package>..., report_attnfuzz_version (the attnfuzz that built the
 * report). Values are valid while doc lives. */
void tr_provenance_flatten(const json_t *doc, tr_provenance_pairs *p);

/* DIR/plot_data (campaign/stats.h) read back and drawn (report_plot.c). */
#define TR_PLOT_MAX 4096 /* points kept (evenly thinned beyond) */
typedef struct {
    int n;
    double t[TR_PLOT_MAX], rate[TR_PLOT_MAX];
    double features[TR_PLOT_MAX], cells[TR_PLOT_MAX];
} tr_plot;
/* Read DIR/plot_data (absent or unreadable: n = 0; malformed lines skipped). */
void tr_plot_read(const char *dir, tr_plot *p);
/* Two PNG panels: coverage (features, config cells) and cases/s against time. 0 or -1. */
int tr_plot_png(const tr_plot *p, int panel, unsigned char **png, size_t *len);
enum { TR_PLOT_COVERAGE = 0, TR_PLOT_RATE = 1 };
/* The lines' colours: features, config cells, cases/s (the HTML legend uses them). */
extern const unsigned char tr_plot_colours[3][3];

/* What every report writer reads. */
typedef struct {
    const char *dir; /* the campaign directory */
    const tr_item *items;
    int n;
    int buckets;        /* = n */
    long long findings; /* sum of the buckets' counts */
    const int *by_kind; /* AF_V_COUNT buckets per verdict kind */
    const tr_campaign_stats *stats;
    const tr_interrupted *interrupted; /* cases in flight when a run stopped */
    const json_t *provenance;          /* DIR/provenance.json, NULL when absent */
    const tr_plot *plot;               /* DIR/plot_data (n = 0 when absent) */
} tr_report;

const char *tr_kind_description(int kind);
/* Cases judged: stats.json's cases less those that could not run (errors), or the
 * bucket count when there is no stats.json (never below it). */
long long tr_cases_judged(const tr_report *rep);
void tr_write_html(FILE *f, const tr_report *rep);

#endif
