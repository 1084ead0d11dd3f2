/* judge/evidence.h — what a finding shows: error heatmaps and leak matrices (data and
 * their text files; triage/picture.h draws them). */
#ifndef ATTNFUZZ_JUDGE_EVIDENCE_H
#define ATTNFUZZ_JUDGE_EVIDENCE_H

#include <stdbool.h>

#include "model/case.h"
#include "model/tensors.h"
#include "judge/probes/probes.h"

/* A matrix of per-cell errors (e.g. max |kernel - oracle| per (query block, head)),
 * row-major, rows x cols. Negative or NaN cells are drawn grey ("not judged"). */
typedef struct {
    int rows, cols;
    float *cells;  /* rows * cols, owned (af_heatmap_free) */
    float allowed; /* the colour map shows cells / allowed (1 = at tolerance);
                                0 = cells / largest cell */
    char title[128];
    char row_label[32]; /* e.g. "query block" */
    char col_label[32]; /* e.g. "head" */
} af_heatmap;

int af_heatmap_alloc(af_heatmap *m, int rows, int cols); /* cells zeroed; 0 or -1 */
void af_heatmap_free(af_heatmap *m);
/* Text format: "attnfuzz-heatmap 1 ROWS COLS", "allowed X", "title ...", "rows ...",
 * "cols ...", then ROWS lines of COLS numbers (%.9g). Saved through af_write_file_atomic
 * (util/fsutil.h). Returns 0 or -1. */
int af_heatmap_save(const af_heatmap *m, const char *path);
int af_heatmap_load(af_heatmap *m, const char *path);
/* The same from n bytes of text already read (triage reads files with util/fsutil.h's
 * af_read_file_inside and parses them here). */
int af_heatmap_parse(af_heatmap *m, const char *text, size_t n);

/* Error heatmap of one output tensor: cells = max |kernel - oracle| per (row block, head),
 * out->allowed = allowed (the tensor's tolerance; 0 when unknown).
 * O / LSE / dQ: rows are query positions, columns query heads; dK / dV: rows are key
 * positions, columns kv heads. The batch dimension folds in (max over b). Rows are
 * grouped into blocks of a power of two so the picture has at most 128 rows; heads are
 * grouped likewise when there are more than 128. Rows past a sequence's actual
 * length are not judged; cells with no judged element are -1; a NaN on either side
 * makes the cell +inf. Returns 0, or -1 when the tensor is absent. */
int af_heatmap_error(const af_case *c, const af_outputs *kernel, const af_outputs *oracle, af_tensor_id tensor,
                     double allowed, af_heatmap *out);

/* Whether a heatmap shows a failed comparison: a cell over its allowance (allowed > 0)
 * or not finite (+inf: NaN on a side). A heatmap without an allowance (allowed 0)
 * shows one when any cell is not finite. The report draws heatmaps only then. */
bool af_heatmap_shows_failure(const af_heatmap *m);

/* Leak matrix (af_leak_matrix of probes.h: rows = outputs, columns = hidden input sets,
 * cells 0..3 = AF_LEAK_CHANGED | AF_LEAK_VISIBLE bits; 1 = leak). File format: header
 * "attnfuzz-leak 1 ROWS COLS", ROWS lines of COLS digits 0..3, then (when labelled)
 * ROWS lines "row LABEL" and COLS lines "col LABEL". */
int af_leak_save(const af_leak_matrix *m, const char *path);
/* Allocates cells and labels (empty when the file has none); free with
 * af_leak_matrix_free. Returns 0 or -1. */
int af_leak_load(const char *path, af_leak_matrix *m);
int af_leak_parse(const char *text, size_t n, af_leak_matrix *m); /* from text in memory */
/* Cells that are leaks (state 1). */
long long af_leak_count(const af_leak_matrix *m);

#endif
