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

#endif
