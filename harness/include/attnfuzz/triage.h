/* attnfuzz/triage.h — signatures, dedup buckets, findings directory, reports, pictures.
 *
 * Signature = verdict kind | backend[:engine] | tensor | config class. It never holds a
 * measured number (error, ratio, seed, exact lengths), so two runs of the same bug land
 * in the same bucket whatever their data. Example:
 *   leak|planted:window_off_by_one|O|fp16,causal-tl,win(L),pad:none,mha,d<=64,bshd,fwd,sq=skv
 *
 * Findings directory (written by af_finding_store, read by af_findings_scan):
 *   DIR/findings/<bucket>/finding.case     minimised reproducer, canonical case text
 *   DIR/findings/<bucket>/original.case    optional: the case before minimisation
 *   DIR/findings/<bucket>/verdict.json     af_json_verdict object plus the keys
 *        signature, bucket, config_class, tensor, verdict_line, count, first_seen (ISO
 *        8601 UTC), first_seen_unix, last_seen_unix, time_to_first_seconds (null when
 *        unknown), case_cost, repro, original_case, heatmap, leak (file names or null)
 *   DIR/findings/<bucket>/heatmap.txt      optional error matrix (af_heatmap_save format)
 *   DIR/findings/<bucket>/leak.txt         optional leak matrix (af_leak_save format)
 *   DIR/findings/<bucket>/heatmap.png, leak.png   pictures drawn from the two above
 * <bucket> = af_bucket_id(signature): 12 lower-case hex digits of FNV-1a 64.
 *
 * Reports (af_triage_build, `attnfuzz triage DIR`):
 *   DIR/report.json  DIR/report.junit.xml  DIR/report.sarif (SARIF 2.1.0)  DIR/report.html
 */
#ifndef ATTNFUZZ_TRIAGE_H
#define ATTNFUZZ_TRIAGE_H

#include <stddef.h>
#include <stdint.h>
#include "attnfuzz/case.h"
#include "attnfuzz/probes.h"
#include "attnfuzz/tensors.h"
#include "attnfuzz/verdict.h"

#define AF_BUCKET_ID_LEN 12
#define AF_SIGNATURE_MAX 512

/* ---- signatures -------------------------------------------------------------- */

/* Coarse, number-free description of the case: dtype, mask kind + alignment, window
 * sides bounded, padding (none|padding|thd), GQA class, d_qk vs d_v, head-dim class and
 * alignment, layout + packing/gaps/paging, cp, fwd|bwd, sq vs skv. Returns the length
 * the full text needs (like snprintf). */
size_t af_config_class(const af_case *c, char *buf, size_t cap);
/* The full signature (see top of file). Tensor is "-" when the verdict has no finding
 * (crash, hang, declined...). Returns the length the full text needs. */
size_t af_signature(const af_case *c, const af_verdict *v, char *buf, size_t cap);
/* The finding's identity: the signature without the config class,
 * "kind|backend[:engine]|tensor". The minimiser keeps it while it simplifies the case
 * (layout, mask, dtype ... may change); the bucket is the signature of the minimised
 * case. Returns the length the full text needs. */
size_t af_finding_identity(const af_case *c, const af_verdict *v, char *buf, size_t cap);
/* 12 hex digits of FNV-1a 64 of the signature, NUL-terminated (out holds 13 bytes). */
void af_bucket_id(const char *signature, char out[AF_BUCKET_ID_LEN + 1]);
uint64_t af_fnv1a64(const void *data, size_t n);
/* Work a case costs, for "keep the smaller reproducer": batch*heads*sq*skv*(dqk+dv)
 * plus small terms for every non-default feature. Smaller is simpler. */
double af_case_cost(const af_case *c);

/* ---- pictures ----------------------------------------------------------------- */

/* A matrix of per-cell errors (e.g. max |kernel - oracle| per (query block, head)),
 * row-major, rows x cols. Negative or NaN cells are drawn grey ("not judged"). */
typedef struct {
    int rows, cols;
    float *cells;            /* rows * cols, owned (af_heatmap_free) */
    float allowed;           /* the colour map shows cells / allowed (1 = at tolerance);
                                0 = cells / largest cell */
    char title[128];
    char row_label[32];      /* e.g. "query block" */
    char col_label[32];      /* e.g. "head" */
} af_heatmap;

int af_heatmap_alloc(af_heatmap *m, int rows, int cols);   /* cells zeroed; 0 or -1 */
void af_heatmap_free(af_heatmap *m);
/* Text format: "attnfuzz-heatmap 1 ROWS COLS", "allowed X", "title ...", "rows ...",
 * "cols ...", then ROWS lines of COLS numbers (%.9g). Returns 0 or -1. */
int af_heatmap_save(const af_heatmap *m, const char *path);
int af_heatmap_load(af_heatmap *m, const char *path);

/* Error heatmap of one output tensor: cells = max |kernel - oracle| per (row block, head),
 * out->allowed = allowed (the tensor's tolerance; 0 when unknown).
 * O / LSE / dQ: rows are query positions, columns query heads; dK / dV: rows are key
 * positions, columns kv heads. The batch dimension folds in (max over b). Rows are
 * grouped into blocks of a power of two so the picture has at most 128 rows; heads are
 * grouped likewise when there are more than 128. Rows past a sequence's actual
 * length are not judged; cells with no judged element are -1; a NaN on either side
 * makes the cell +inf. Returns 0, or -1 when the tensor is absent. */
int af_heatmap_error(const af_case *c, const af_outputs *kernel, const af_outputs *oracle,
                     af_tensor_id tensor, double allowed, af_heatmap *out);

/* Leak matrix (af_leak_matrix of probes.h: rows = outputs, columns = hidden input sets,
 * cells 0..3 = AF_LEAK_CHANGED | AF_LEAK_VISIBLE bits; 1 = leak). File format: header
 * "attnfuzz-leak 1 ROWS COLS", ROWS lines of COLS digits 0..3, then (when labelled)
 * ROWS lines "row LABEL" and COLS lines "col LABEL". */
int af_leak_save(const af_leak_matrix *m, const char *path);
/* Allocates cells and labels (empty when the file has none); free with
 * af_leak_matrix_free. Returns 0 or -1. */
int af_leak_load(const char *path, af_leak_matrix *m);
/* Cells that are leaks (state 1). */
long long af_leak_count(const af_leak_matrix *m);

/* PNG (8-bit RGB, no interlace, zlib stream of stored deflate blocks; no library). */
uint32_t af_crc32(uint32_t crc, const void *data, size_t n);    /* start with crc = 0 */
uint32_t af_adler32(uint32_t adler, const void *data, size_t n); /* start with adler = 1 */
/* rgb is h rows of w*3 bytes. *out is malloc'ed. Returns 0 or -1. */
int af_png_encode_rgb(int w, int h, const unsigned char *rgb, unsigned char **out, size_t *len);
int af_png_write_rgb(const char *path, int w, int h, const unsigned char *rgb);
/* Render to PNG bytes (*out malloc'ed) or to a file. Each cell becomes a block of
 * 2..24 pixels (about 384 px a side; matrices over 384 cells a side fold by max);
 * colour map of cell / allowed: 0 dark blue -> 0.5 teal -> 1 yellow, above 1 red to
 * white at 1024 (log2); not judged = grey. Leak matrix: leak red, hidden and unchanged
 * dark blue, visible and changed pale green, visible and unchanged grey (a folded
 * group shows a leak when it holds one). */
int af_heatmap_png_bytes(const af_heatmap *m, unsigned char **out, size_t *len);
int af_heatmap_png(const af_heatmap *m, const char *path);
int af_leak_png_bytes(const af_leak_matrix *m, unsigned char **out, size_t *len);
int af_leak_png(const af_leak_matrix *m, const char *path);

/* ---- findings directory ------------------------------------------------------------ */

/* Optional extras of one stored finding; every field may be 0 / NULL. */
typedef struct {
    const af_case *original;        /* before minimisation -> original.case */
    const char *repro;              /* repro command; default "attnfuzz repro <case path>" */
    double time_to_first_seconds;   /* campaign time until found; < 0 or 0 = unknown */
    const af_heatmap *heatmap;      /* -> heatmap.txt + heatmap.png */
    const af_leak_matrix *leaks;    /* -> leak.txt + leak.png (labels optional) */
} af_finding_extra;

/* One bucket as read back from disk. */
typedef struct {
    char bucket[AF_BUCKET_ID_LEN + 1];
    char dir[1024];                 /* DIR/findings/<bucket> */
    char signature[AF_SIGNATURE_MAX];
    char config_class[256];
    char kind[32];                  /* verdict kind name */
    char backend[AF_NAME_MAX];
    char engine[AF_NAME_MAX];
    char tensor[8];
    char verdict_line[1024];
    char repro[1024];
    char first_seen[32];            /* ISO 8601 UTC */
    long long count;                /* findings that fell in this bucket */
    double first_seen_unix, last_seen_unix;
    double time_to_first_seconds;   /* < 0 unknown */
    double case_cost;
    bool has_original, has_heatmap, has_leak;
    char *case_text;                /* finding.case bytes (malloc'ed; freed after the callback) */
    char *verdict_json;             /* verdict.json bytes (likewise) */
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

/* Visit every bucket under DIR/findings in bucket-id order. The record's strings are
 * valid during the call only. A callback returning nonzero stops the scan. Returns
 * the number of buckets visited, or -1 with why (unreadable directory; a bucket with
 * a missing or malformed verdict.json is reported on stderr and skipped). */
typedef int (*af_finding_visit)(const af_finding_record *r, void *user);
int af_findings_scan(const char *dir, af_finding_visit visit, void *user, char *why, size_t cap);

/* ---- reports ------------------------------------------------------------------------ */

typedef struct {
    int buckets;          /* distinct signatures */
    long long findings;   /* sum of counts */
    int by_kind[AF_V_COUNT];
} af_triage_summary;

/* Write DIR/report.json, report.junit.xml, report.sarif, report.html from DIR/findings.
 * A DIR without findings gives empty (passing) reports. summary may be NULL.
 * Returns 0 or -1 with why. */
int af_triage_build(const char *dir, af_triage_summary *summary, char *why, size_t cap);

/* Base64 of n bytes into a malloc'ed NUL-terminated string (NULL on failure). */
char *af_base64(const unsigned char *data, size_t n);

#endif
