/* png.c — a tiny PNG writer (8-bit RGB) and the two pictures triage draws.
 *
 * No library: the image data is a zlib stream (RFC 1950) of stored deflate blocks
 * (RFC 1951 BTYPE=00, at most 65535 bytes each), so the only arithmetic needed is
 * CRC-32 over each chunk (PNG) and Adler-32 over the raw data (zlib). Pictures are
 * small (at most ~800 px a side), so the missing compression does not matter.
 */
#include "judge/evidence.h"
#include "triage/picture.h"
#include "triage/src/triage_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CRC-32 as PNG and zlib define it: reflected polynomial 0xEDB88320, init and final
 * xor 0xFFFFFFFF (folded into the call so crc = 0 starts and results chain). Bitwise:
 * pictures are a few MB at most and this keeps no table state around. */
uint32_t af_crc32(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

uint32_t af_adler32(uint32_t adler, const void *data, size_t n) {
    const unsigned char *p = data;
    uint32_t a = adler & 0xFFFFu, b = adler >> 16;
    for (size_t i = 0; i < n; i++) {
        a = (a + p[i]) % 65521u;
        b = (b + a) % 65521u;
    }
    return (b << 16) | a;
}

typedef struct {
    unsigned char *p;
    size_t len, cap;
    int failed;
} byte_buf;

static void bb_put(byte_buf *b, const void *data, size_t n) {
    if (b->failed) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) { b->failed = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void bb_u32be(byte_buf *b, uint32_t x) {
    unsigned char q[4] = {(unsigned char)(x >> 24), (unsigned char)(x >> 16), (unsigned char)(x >> 8), (unsigned char)x};
    bb_put(b, q, 4);
}

/* chunk = length (4, big endian) | type (4) | data | CRC over type and data */
static void png_chunk(byte_buf *b, const char type[4], const unsigned char *data, size_t n) {
    bb_u32be(b, (uint32_t)n);
    bb_put(b, type, 4);
    if (n) bb_put(b, data, n);
    uint32_t crc = af_crc32(0, type, 4);
    crc = af_crc32(crc, data, n);
    bb_u32be(b, crc);
}

int af_png_encode_rgb(int w, int h, const unsigned char *rgb, unsigned char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (w <= 0 || h <= 0 || w > (1 << 14) || h > (1 << 14)) return -1;
    size_t row_bytes = (size_t)w * 3 + 1; /* filter byte 0 (None) + pixels */
    size_t raw_len = row_bytes * (size_t)h;
    unsigned char *raw = malloc(raw_len);
    if (!raw) return -1;
    for (int y = 0; y < h; y++) {
        raw[(size_t)y * row_bytes] = 0;
        memcpy(raw + (size_t)y * row_bytes + 1, rgb + (size_t)y * w * 3, (size_t)w * 3);
    }

    /* zlib stream: CMF 0x78 (deflate, 32K window), FLG 0x01 (no dict, lowest level,
     * 0x7801 % 31 == 0), stored blocks, Adler-32 big endian */
    byte_buf z = {0};
    unsigned char zhdr[2] = {0x78, 0x01};
    bb_put(&z, zhdr, 2);
    size_t pos = 0;
    do {
        size_t n = raw_len - pos > 65535 ? 65535 : raw_len - pos;
        unsigned char hdr[5];
        hdr[0] = pos + n == raw_len ? 1 : 0; /* BFINAL, BTYPE = 00 */
        hdr[1] = (unsigned char)(n & 0xFF);
        hdr[2] = (unsigned char)(n >> 8);
        hdr[3] = (unsigned char)(~n & 0xFF);
        hdr[4] = (unsigned char)((~n >> 8) & 0xFF);
        bb_put(&z, hdr, 5);
        bb_put(&z, raw + pos, n);
        pos += n;
    } while (pos < raw_len);
    bb_u32be(&z, af_adler32(1, raw, raw_len));
    free(raw);

    byte_buf png = {0};
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    bb_put(&png, signature, 8);
    unsigned char ihdr[13] = {
        (unsigned char)(w >> 24), (unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w,
        (unsigned char)(h >> 24), (unsigned char)(h >> 16), (unsigned char)(h >> 8), (unsigned char)h,
        8,  /* bit depth */
        2,  /* colour type: truecolour RGB */
        0, 0, 0 /* compression deflate, filter method 0, no interlace */};
    png_chunk(&png, "IHDR", ihdr, sizeof ihdr);
    if (!z.failed) png_chunk(&png, "IDAT", z.p, z.len);
    png_chunk(&png, "IEND", NULL, 0);
    int failed = z.failed || png.failed;
    free(z.p);
    if (failed) {
        free(png.p);
        return -1;
    }
    *out = png.p;
    *len = png.len;
    return 0;
}

static int write_file(const char *path, const unsigned char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    return ok ? 0 : -1;
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

/* ratio in [0, 1]: dark blue -> teal -> yellow (within tolerance);
 * above 1: red brightening to white at 1024x (log2 scale); < 0 / NaN: grey. */
static void ratio_colour(double r, unsigned char out[3]) {
    static const unsigned char blue[3] = {24, 28, 96}, teal[3] = {32, 150, 140}, yellow[3] = {245, 225, 50};
    static const unsigned char red[3] = {215, 30, 30}, white[3] = {255, 235, 235}, grey[3] = {170, 170, 170};
    if (!(r >= 0)) { memcpy(out, grey, 3); return; }
    if (r <= 0.5) { lerp_rgb(blue, teal, r / 0.5, out); return; }
    if (r <= 1) { lerp_rgb(teal, yellow, (r - 0.5) / 0.5, out); return; }
    double t = isinf(r) ? 1 : log2(r) / 10;
    lerp_rgb(red, white, t > 1 ? 1 : t, out);
}

/* Pixels per cell on one axis: a picture of about 384 px, 2..24 px per cell. */
static int cell_pixels(int n) {
    int px = 384 / (n > 0 ? n : 1);
    return px < 2 ? 2 : px > 24 ? 24 : px;
}

/* Matrices with more than 384 cells on an axis are folded first (groups of gy x gx). */
#define PNG_MAX_CELLS 384

typedef struct {
    int rows, cols;      /* the matrix */
    int gy, gx;          /* fold factors */
    int r2, c2;          /* folded size */
    int py, px;          /* pixels per folded cell as displayed */
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

/* cell_rgb is r2 x c2 colours. native: one pixel per folded cell (for pages that
 * scale the picture themselves); otherwise px x py blocks with a darker 1-px seam
 * when blocks are large. display_w/h get the size the picture is meant for. */
static int encode_grid(const grid_plan *g, const unsigned char *cell_rgb, bool native, unsigned char **out, size_t *len,
                       int *display_w, int *display_h) {
    if (display_w) *display_w = g->c2 * g->px;
    if (display_h) *display_h = g->r2 * g->py;
    int px = native ? 1 : g->px, py = native ? 1 : g->py;
    int w = g->c2 * px, h = g->r2 * py;
    unsigned char *rgb = malloc((size_t)w * h * 3);
    if (!rgb) return -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int yy = y % py, xx = x % px;
            const unsigned char *colour = cell_rgb + ((size_t)(y / py) * g->c2 + (size_t)(x / px)) * 3;
            int seam = (px >= 6 && xx == px - 1) || (py >= 6 && yy == py - 1);
            unsigned char *p = rgb + ((size_t)y * w + x) * 3;
            for (int k = 0; k < 3; k++) p[k] = seam ? (unsigned char)(colour[k] * 3 / 4) : colour[k];
        }
    int rc = af_png_encode_rgb(w, h, rgb, out, len);
    free(rgb);
    return rc;
}

/* Heatmap: each folded cell shows the largest value / scale of its group;
 * scale <= 0 means "by the largest cell"; negative and NaN cells are not judged. */
static int heatmap_render(const af_heatmap *m, bool native, unsigned char **out, size_t *len, int *display_w,
                          int *display_h) {
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
            ratio_colour(v, cell_rgb + ((size_t)y * g.c2 + x) * 3);
        }
    int rc = encode_grid(&g, cell_rgb, native, out, len, display_w, display_h);
    free(cell_rgb);
    return rc;
}

int af_heatmap_png_bytes(const af_heatmap *m, unsigned char **out, size_t *len) {
    return heatmap_render(m, false, out, len, NULL, NULL);
}

int tr_heatmap_png_native(const af_heatmap *m, unsigned char **out, size_t *len, int *display_w, int *display_h) {
    return heatmap_render(m, true, out, len, display_w, display_h);
}

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

static int leak_render(const af_leak_matrix *m, bool native, unsigned char **out, size_t *len, int *display_w,
                       int *display_h) {
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
    int rc = encode_grid(&g, cell_rgb, native, out, len, display_w, display_h);
    free(cell_rgb);
    return rc;
}

int af_leak_png_bytes(const af_leak_matrix *m, unsigned char **out, size_t *len) {
    return leak_render(m, false, out, len, NULL, NULL);
}

int tr_leak_png_native(const af_leak_matrix *m, unsigned char **out, size_t *len, int *display_w, int *display_h) {
    return leak_render(m, true, out, len, display_w, display_h);
}

int af_leak_png(const af_leak_matrix *m, const char *path) {
    unsigned char *png;
    size_t n;
    if (af_leak_png_bytes(m, &png, &n)) return -1;
    int rc = write_file(path, png, n);
    free(png);
    return rc;
}
