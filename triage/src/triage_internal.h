/* triage_internal.h — helpers shared by the triage sources (not public API). */
#ifndef ATTNFUZZ_TRIAGE_INTERNAL_H
#define ATTNFUZZ_TRIAGE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "judge/evidence.h"

/* Whole file into a NUL-terminated malloc'ed buffer (NULL when unreadable). */
char *tr_read_file(const char *path, size_t *len);

/* Pictures at one pixel per cell (small enough to inline in HTML many times), with
 * the size af_heatmap_png / af_leak_png would draw them at, for <img width height>. */
int tr_heatmap_png_native(const af_heatmap *m, unsigned char **out, size_t *len, int *display_w, int *display_h);
int tr_leak_png_native(const af_leak_matrix *m, unsigned char **out, size_t *len, int *display_w, int *display_h);

#endif
