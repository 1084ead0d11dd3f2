/* triage/picture.h — PNG pictures of heatmaps and leak matrices. */
#ifndef ATTNFUZZ_TRIAGE_PICTURE_H
#define ATTNFUZZ_TRIAGE_PICTURE_H

#include <stddef.h>
#include "judge/evidence.h"

/* PNG through libpng: 8-bit RGB, no interlace. rgb is h rows of w*3 bytes; sides of 1
 * to 16384 pixels. *out is malloc'ed. Returns 0 or -1 (a file that could not be
 * written whole is removed). */
int af_png_encode_rgb(int w, int h, const unsigned char *rgb, unsigned char **out, size_t *len);
int af_png_write_rgb(const char *path, int w, int h, const unsigned char *rgb);
/* Errors at or above this many times the allowance saturate to one distinct colour. */
#define AF_HEATMAP_SATURATE 1024.0
/* The colour map of a heatmap cell, ratio = cell / allowed: 0 dark blue -> 0.5 teal ->
 * 1 yellow (within tolerance); above 1 red darkening to maroon at 1024x (log2 scale);
 * >= 1024x and +inf saturated magenta; < 0 or NaN (not judged) grey. The report's
 * legend is drawn with the same function. */
void af_heatmap_colour(double ratio, unsigned char rgb[3]);
/* Render to PNG bytes (*out malloc'ed) or to a file (util/fsutil.h atomic write). Each
 * cell becomes a nearest-neighbour block of AF_PICTURE_TARGET_SIDE / cells pixels a side,
 * kept within [AF_PICTURE_MIN_CELL, AF_PICTURE_MAX_CELL] (1 cell: 32 px; 128 cells: 4 px),
 * with a 1-px seam when blocks are 6 px or more; matrices over AF_PICTURE_MAX_SIDE /
 * AF_PICTURE_MIN_CELL cells a side fold by max, so no side exceeds AF_PICTURE_MAX_SIDE.
 * Leak matrix: leak red, hidden and unchanged dark blue, visible and changed pale green,
 * visible and unchanged grey (a folded group shows a leak when it holds one). */
#define AF_PICTURE_MIN_CELL    4
#define AF_PICTURE_MAX_CELL    32
#define AF_PICTURE_TARGET_SIDE 256
#define AF_PICTURE_MAX_SIDE    512
int af_heatmap_png_bytes(const af_heatmap *m, unsigned char **out, size_t *len);
int af_heatmap_png(const af_heatmap *m, const char *path);
int af_leak_png_bytes(const af_leak_matrix *m, unsigned char **out, size_t *len);
int af_leak_png(const af_leak_matrix *m, const char *path);

#endif
