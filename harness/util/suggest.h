/* util/suggest.h — "did you mean": the known name closest to a misspelt one.
 *
 * One distance for every place that names a likely typo: unknown commands and options
 * (cli/), backends and planted plugins (backends/registry.c), ATTNFUZZ_* environment
 * variables (util/config.c). */
#ifndef ATTNFUZZ_UTIL_SUGGEST_H
#define ATTNFUZZ_UTIL_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance of a[0..na) and b[0..nb) (insert, delete, substitute: 1 each);
 * names longer than 127 characters are compared on their first 127. */
size_t af_edit_distance(const char *a, size_t na, const char *b, size_t nb);

/* The name of names[0..n) nearest to typed, or NULL when the nearest is too far to be a
 * typo of it: more than max(2, strlen(typed) / 3) edits away (so `campain` -> `campaign`,
 * `--tme` -> `--time`, but no suggestion for a word that matches nothing). NULL names
 * are skipped; on a tie the first wins. */
const char *af_suggest(const char *typed, const char *const *names, size_t n);

#endif
