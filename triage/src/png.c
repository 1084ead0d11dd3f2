/* png.c — PNG output through libpng (8-bit RGB) and the two pictures triage draws. */
#include "judge/evidence.h"
#include "triage/picture.h"
#include "triage/src/triage_internal.h"
#include "util/fsutil.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sizes af_png_encode_rgb accepts (pictures are at most ~800 px a side). */
#define PNG_MAX_SIDE (1 << 14)

static bool png_size_ok(int w, int h) { return w > 0 && h > 0 && w <= PNG_MAX_SIDE && h <= PNG_MAX_SIDE; }

/* Growing byte buffer: the destination of the in-memory encoder. */
typedef struct {
    unsigned char *p;
    size_t len, cap;
} byte_buf;

/* libpng write callback (png_set_write_fn): append to the byte_buf. */
static void append_to_buf(png_structp png, png_bytep data, size_t n) {
    byte_buf *b = png_get_io_ptr(png);
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) png_error(png, "out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void flush_nothing(png_structp png) { (void)png; }

/* Encode h rows of w*3 bytes to file (when not NULL) or into buf. libpng reports an
 * error (out of memory, a failed write) on stderr and jumps back here. 0 or -1. */
static int png_encode(int w, int h, const unsigned char *rgb, FILE *file, byte_buf *buf) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (!png) return -1;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    if (file)
        png_init_io(png, file);
    else
        png_set_write_fn(png, buf, append_to_buf, flush_nothing);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, rgb + (size_t)y * w * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int af_png_encode_rgb(int w, int h, const unsigned char *rgb, unsigned char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (!png_size_ok(w, h)) return -1;
    byte_buf buf = {0};
    if (png_encode(w, h, rgb, NULL, &buf)) {
        free(buf.p);
        return -1;
    }
    *out = buf.p;
    *len = buf.len;
    return 0;
}

/* Files go through af_write_file_atomic (util/fsutil.h): unique temp name, fsync,
 * rename, so a picture is never half written nor written through a planted symlink. */
static int write_file(const char *path, const unsigned char *data, size_t n) {
    return af_write_file_atomic(path, data, n, NULL, 0);
}

int af_png_write_rgb(const char *path, int w, int h, const unsigned char *rgb) {
    unsigned char *png;
    size_t n;
    if (af_png_encode_rgb(w, h, rgb, &png, &n)) return -1;
    int rc = write_file(path, png, n);
    free(png);
    return rc;
}

/* ---- colour maps ---------------------------------------------------------------- */

static void lerp_rgb(const unsigned char a[3], const unsigned char b[3], double t, unsigned char out[3]) {
    for (int i = 0; i < 3; i++) out[i] = (unsigned char)lround(a[i] + (b[i] - a[i]) * t);
}

/* ratio in [0, 1]: dark blue -> teal -> yellow (within tolerance); above 1: red
 * darkening to maroon at 1024x on a log2 scale; >= 1024x (and +inf): saturated
 * magenta, so the largest errors stand out instead of fading; < 0 / NaN: grey. */
void af_heatmap_colour(double r, unsigned char out[3]) {
    static const unsigned char blue[3] = {24, 28, 96}, teal[3] = {32, 150, 140}, yellow[3] = {245, 225, 50};
    static const unsigned char red[3] = {230, 40, 30}, maroon[3] = {110, 0, 20}, magenta[3] = {255, 0, 230};
    static const unsigned char grey[3] = {170, 170, 170};
    if (!(r >= 0)) {
        memcpy(out, grey, 3);
        return;
    }
    if (r <= 0.5) {
        lerp_rgb(blue, teal, r / 0.5, out);
        return;
    }
    if (r <= 1) {
        lerp_rgb(teal, yellow, (r - 0.5) / 0.5, out);
        return;
    }
    if (r >= AF_HEATMAP_SATURATE) {
        memcpy(out, magenta, 3);
        return;
    }
    lerp_rgb(red, maroon, log2(r) / log2(AF_HEATMAP_SATURATE), out);
}

/* Pixels per cell on one axis: AF_PICTURE_TARGET_SIDE / cells, kept within
 * [AF_PICTURE_MIN_CELL, AF_PICTURE_MAX_CELL], so a 1x1 heatmap of a minimised case is
 * a 32 px block beside its caption, not one large square, and 128 cells get 4 px each;
 * each cell stays a nearest-neighbour block with its grid seam. */
static int cell_pixels(int n) {
    int px = AF_PICTURE_TARGET_SIDE / (n > 0 ? n : 1);
    return px < AF_PICTURE_MIN_CELL ? AF_PICTURE_MIN_CELL : px > AF_PICTURE_MAX_CELL ? AF_PICTURE_MAX_CELL : px;
}

/* Matrices with more cells on an axis than fit AF_PICTURE_MAX_SIDE at the smallest cell
 * size are folded first (groups of gy x gx). */
#define PNG_MAX_CELLS (AF_PICTURE_MAX_SIDE / AF_PICTURE_MIN_CELL)

typedef struct {
    int rows, cols; /* the matrix */
    int gy, gx;     /* fold factors */
    int r2, c2;     /* folded size */
    int py, px;     /* pixels per folded cell as displayed */
} grid_plan;

static grid_plan plan_grid(int rows, int cols) {
    grid_plan g;
    g.rows = rows;
    g.cols = cols;
    g.gy = (rows + PNG_MAX_CELLS - 1) / PNG_MAX_CELLS;
    g.gx = (cols + PNG_MAX_CELLS - 1) / PNG_MAX_CELLS;
    g.r2 = (rows + g.gy - 1) / g.gy;
    g.c2 = (cols + g.gx - 1) / g.gx;
    g.py = cell_pixels(g.r2);
    g.px = cell_pixels(g.c2);
    return g;
}

/* The colour of the 1-px seam between cells: darker than a bright cell, lighter than a
 * dark one, so the grid shows on every colour of the map. */
static void seam_colour(const unsigned char cell[3], unsigned char out[3]) {
    int luma = (cell[0] * 3 + cell[1] * 6 + cell[2]) / 10;
    for (int k = 0; k < 3; k++)
        out[k] = luma > 110 ? (unsigned char)(cell[k] / 2) : (unsigned char)(cell[k] + (255 - cell[k]) * 2 / 5);
}

/* cell_rgb is r2 x c2 colours, drawn as px x py blocks with a 1-px seam
 * when blocks are large. */
static int encode_grid(const grid_plan *g, const unsigned char *cell_rgb, unsigned char **out, size_t *len) {
    int px = g->px, py = g->py;
    int w = g->c2 * px, h = g->r2 * py;
    unsigned char *rgb = malloc((size_t)w * h * 3);
    if (!rgb) return -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int yy = y % py, xx = x % px;
            const unsigned char *colour = cell_rgb + ((size_t)(y / py) * g->c2 + (size_t)(x / px)) * 3;
            int seam = (px >= 6 && xx == px - 1) || (py >= 6 && yy == py - 1);
            unsigned char *p = rgb + ((size_t)y * w + x) * 3;
            if (seam)
                seam_colour(colour, p);
            else
                memcpy(p, colour, 3);
        }
    int rc = af_png_encode_rgb(w, h, rgb, out, len);
    free(rgb);
    return rc;
}

/* Heatmap: each folded cell shows the largest value / scale of its group;
 * scale <= 0 means "by the largest cell"; negative and NaN cells are not judged. */
static int heatmap_render(const af_heatmap *m, unsigned char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (!m || m->rows <= 0 || m->cols <= 0 || !m->cells) return -1;
    size_t n = (size_t)m->rows * m->cols;
    double scale = m->allowed;
    if (!(scale > 0)) {
        scale = 0;
        for (size_t i = 0; i < n; i++)
            if (isfinite(m->cells[i]) && m->cells[i] > scale) scale = m->cells[i];
        if (scale == 0) scale = 1;
    }
    grid_plan g = plan_grid(m->rows, m->cols);
    unsigned char *cell_rgb = malloc((size_t)g.r2 * g.c2 * 3);
    if (!cell_rgb) return -1;
    for (int y = 0; y < g.r2; y++)
        for (int x = 0; x < g.c2; x++) {
            double v = -1;
            for (int i = y * g.gy; i < m->rows && i < (y + 1) * g.gy; i++)
                for (int j = x * g.gx; j < m->cols && j < (x + 1) * g.gx; j++) {
                    double c = m->cells[(size_t)i * m->cols + j];
                    if (isnan(c) || c < 0) continue;
                    if (c / scale > v) v = c / scale;
                }
            af_heatmap_colour(v, cell_rgb + ((size_t)y * g.c2 + x) * 3);
        }
    int rc = encode_grid(&g, cell_rgb, out, len);
    free(cell_rgb);
    return rc;
}

int af_heatmap_png_bytes(const af_heatmap *m, unsigned char **out, size_t *len) { return heatmap_render(m, out, len); }

int af_heatmap_png(const af_heatmap *m, const char *path) {
    unsigned char *png;
    size_t n;
    if (af_heatmap_png_bytes(m, &png, &n)) return -1;
    int rc = write_file(path, png, n);
    free(png);
    return rc;
}

/* Leak cells (probes.h): bit 0 changed, bit 1 visible. A folded group shows its most
 * telling state: leak > visible and changed > visible and unchanged > hidden. */
static int leak_rank(unsigned char state) {
    static const int rank[4] = {0, 3, 1, 2};
    return rank[state & 3];
}

static int leak_render(const af_leak_matrix *m, unsigned char **out, size_t *len) {
    static const unsigned char colours[4][3] = {
        {24, 28, 96},    /* 0 hidden, unchanged: as it should be */
        {220, 30, 30},   /* 1 hidden, changed: leak */
        {150, 150, 150}, /* 2 visible, unchanged */
        {150, 215, 170}, /* 3 visible, changed: as it should be */
    };
    *out = NULL;
    *len = 0;
    if (!m || m->rows <= 0 || m->cols <= 0 || !m->cells) return -1;
    grid_plan g = plan_grid(m->rows, m->cols);
    unsigned char *cell_rgb = malloc((size_t)g.r2 * g.c2 * 3);
    if (!cell_rgb) return -1;
    for (int y = 0; y < g.r2; y++)
        for (int x = 0; x < g.c2; x++) {
            unsigned char best = 0;
            for (int i = y * g.gy; i < m->rows && i < (y + 1) * g.gy; i++)
                for (int j = x * g.gx; j < m->cols && j < (x + 1) * g.gx; j++) {
                    unsigned char st = m->cells[(size_t)i * m->cols + j] & 3;
                    if (leak_rank(st) > leak_rank(best)) best = st;
                }
            memcpy(cell_rgb + ((size_t)y * g.c2 + x) * 3, colours[best], 3);
        }
    int rc = encode_grid(&g, cell_rgb, out, len);
    free(cell_rgb);
    return rc;
}

int af_leak_png_bytes(const af_leak_matrix *m, unsigned char **out, size_t *len) { return leak_render(m, out, len); }

int af_leak_png(const af_leak_matrix *m, const char *path) {
    unsigned char *png;
    size_t n;
    if (af_leak_png_bytes(m, &png, &n)) return -1;
    int rc = write_file(path, png, n);
    free(png);
    return rc;
}
