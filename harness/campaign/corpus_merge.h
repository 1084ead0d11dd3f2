/* campaign/corpus_merge.h — a campaign's corpus directory merged in libFuzzer's sense
 * (-merge=1): only the inputs that add a coverage feature or a config cell are kept,
 * each named by its content hash (%016llx of af_fnv1a64, as the in-process engine names
 * them). corpus_merge.c.
 *
 * Coverage: DIR/coverage/<name> holds the feedback counters an input reached when the
 * in-process engine ran it (AF_CORPUS_COVERAGE_BYTES, a bit per counter of
 * fuzz/fuzz.h); an input without one (seeds, libFuzzer's own inputs) is judged by its
 * config cell only (af_fuzz_config_cell of the decoded case). Inputs are taken smallest
 * first (then by name), as libFuzzer's merge does, and kept when they add something to
 * what the kept ones reach; the others, and inputs whose content is already kept, are
 * removed with their coverage files.
 *
 * Only what the campaign made is touched: inputs named as the campaign and libFuzzer name
 * them (af_corpus_is_input_name) that are regular files; any other file in DIR/corpus is
 * neither read nor renamed nor removed. DIR/corpus and DIR/coverage are opened without
 * following a symlink and every removal and rename is relative to them: a symlinked
 * corpus directory is refused, never merged. */
#ifndef ATTNFUZZ_CAMPAIGN_CORPUS_MERGE_H
#define ATTNFUZZ_CAMPAIGN_CORPUS_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz/fuzz.h"

#define AF_CORPUS_COVERAGE_BYTES ((AF_FUZZ_COUNTERS + 7) / 8)

typedef struct {
    int before;     /* inputs in DIR/corpus before */
    int kept;       /* inputs after */
    int duplicates; /* removed: same content as a kept one */
    int features;   /* coverage features the kept inputs reach */
    int cells;      /* config cells the kept inputs decode to */
} af_corpus_merge_summary;

/* Write DIR/coverage/<name>: the counters (AF_FUZZ_COUNTERS bytes, nonzero = reached)
 * as a bit set. 0 or -1 with why (path and reason). */
int af_corpus_save_coverage(const char *dir, const char *name, const uint8_t *counters, char *why, size_t cap);

/* seed-<name> (a seed written by the campaign), 16 lower-case hex digits (a content
 * hash), 40 (libFuzzer's SHA-1 names); never a temporary file (".tmp") or a dot file. */
bool af_corpus_is_input_name(const char *name);

/* Merge DIR/corpus in place (see above); limits decode the inputs (their config cell).
 * 0 with sum filled, -1 with why (names the file) when the corpus cannot be read or
 * rewritten; a failure part-way leaves every input kept so far in place. */
int af_corpus_merge(const char *dir, const af_fuzz_limits *limits, af_corpus_merge_summary *sum, char *why, size_t cap);

/* The inputs of from_dir whose config cell none of kept_dir's reaches, copied into
 * kept_dir under their content hash: after libFuzzer's -merge=1 (coverage only) put its
 * keepers in kept_dir, the config cells of the old corpus are not lost. Returns how many
 * were added, or -1. */
int af_corpus_add_cells(const char *kept_dir, const char *from_dir, const af_fuzz_limits *limits);

#endif
