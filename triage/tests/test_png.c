/* test_png.c — the PNG writer produces files that libpng reads back exactly.
 *
 * Every picture is decoded with libpng's own reader (png_image_begin_read_from_memory,
 * png_image_finish_read as 8-bit RGB): the dimensions and every pixel must be the ones
 * written. The heatmap / leak pictures have the promised size and colours, and a file
 * holds the same picture as the memory encoder.
 */
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judge/evidence.h"
#include "triage/picture.h"
#include "util/check.h"

typedef struct {
    uint32_t w, h;
    unsigned char *rgb; /* h * w * 3 */
} decoded;

/* Decode PNG bytes with libpng as 8-bit RGB (the stored format: no conversion). */
static void decode(const unsigned char *png, size_t n, decoded *d) {
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    CHECK_MSG(png_image_begin_read_from_memory(&image, png, n), "libpng: %s", image.message);
    /* the file itself is 8-bit RGB without alpha or palette */
    CHECK(image.format == PNG_FORMAT_RGB);
    image.format = PNG_FORMAT_RGB;
    d->w = image.width;
    d->h = image.height;
    d->rgb = malloc(PNG_IMAGE_SIZE(image));
    CHECK(d->rgb != NULL);
    CHECK_MSG(png_image_finish_read(&image, NULL, d->rgb, 0, NULL), "libpng: %s", image.message);
    CHECK(PNG_IMAGE_SIZE(image) == (size_t)d->w * d->h * 3);
}

static void round_trip(int w, int h) {
    unsigned char *rgb = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h * 3; i++) rgb[i] = (unsigned char)(i * 7 + i / 3);
    unsigned char *png;
    size_t n;
    CHECK(af_png_encode_rgb(w, h, rgb, &png, &n) == 0);
    decoded d;
    decode(png, n, &d);
    CHECK(d.w == (uint32_t)w && d.h == (uint32_t)h);
    CHECK(memcmp(d.rgb, rgb, (size_t)w * h * 3) == 0);
    free(d.rgb);
    free(png);
    free(rgb);
}

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "%s", path);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long size = ftell(f);
    CHECK(size > 0 && fseek(f, 0, SEEK_SET) == 0);
    unsigned char *bytes = malloc((size_t)size);
    CHECK(fread(bytes, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return bytes;
}

int main(void) {
    round_trip(1, 1);
    round_trip(7, 5);
    round_trip(200, 120);
    round_trip(300, 300);
    round_trip(1000, 3); /* wide and flat */

    unsigned char *png;
    size_t n;
    unsigned char px[3] = {1, 2, 3};
    CHECK(af_png_encode_rgb(0, 5, px, &png, &n) == -1);
    CHECK(af_png_encode_rgb(5, -1, px, &png, &n) == -1);
    CHECK(af_png_encode_rgb(16385, 1, px, &png, &n) == -1 && png == NULL && n == 0);

    /* heatmap picture: 4 x 3 cells, 256 / cells px each within [4, 32] px: a small matrix
     * is drawn at a readable size (32 px cells), not blown up to one large square */
    af_heatmap m;
    CHECK(af_heatmap_alloc(&m, 4, 3) == 0);
    m.allowed = 1;
    for (int i = 0; i < 12; i++) m.cells[i] = (float)i / 4;
    m.cells[5] = -1; /* not judged */
    CHECK(af_heatmap_png_bytes(&m, &png, &n) == 0);
    decoded d;
    decode(png, n, &d);
    CHECK_MSG(d.w == 3 * 32 && d.h == 4 * 32, "%d x %d", d.w, d.h);
    /* cell (0,0) is ratio 0: dark blue; cell (1,2) = 5 is "not judged": grey; (3,2) =
     * 2.75 over 1: red darkened log2(2.75)/10 of the way to maroon; the last pixel of a
     * block is the seam, lighter than a dark cell so the grid shows */
    const unsigned char *c00 = d.rgb, *c12 = d.rgb + ((size_t)(1 * 32 + 3) * d.w + 2 * 32 + 3) * 3;
    const unsigned char *c32 = d.rgb + ((size_t)(3 * 32 + 3) * d.w + 2 * 32 + 3) * 3;
    const unsigned char *seam00 = d.rgb + ((size_t)3 * d.w + 31) * 3;
    CHECK(c00[0] == 24 && c00[1] == 28 && c00[2] == 96);
    CHECK_MSG(seam00[0] == 116 && seam00[1] == 118 && seam00[2] == 159, "%d %d %d", seam00[0], seam00[1], seam00[2]);
    CHECK(c12[0] == 170 && c12[1] == 170 && c12[2] == 170);
    CHECK_MSG(c32[0] == 212 && c32[1] == 34 && c32[2] == 29, "%d %d %d", c32[0], c32[1], c32[2]);
    /* large errors never fade to white: up to 1024x the colour darkens, at and above
     * 1024x (and +inf) it saturates to magenta, distinct from every other colour */
    unsigned char col[3], sat[3], at1[3];
    af_heatmap_colour(1e6, sat);
    CHECK(sat[0] == 255 && sat[1] == 0 && sat[2] == 230);
    af_heatmap_colour(INFINITY, col);
    CHECK(!memcmp(col, sat, 3));
    af_heatmap_colour(AF_HEATMAP_SATURATE, col);
    CHECK(!memcmp(col, sat, 3));
    af_heatmap_colour(1.0001, at1);
    for (double r = 1.01; r < AF_HEATMAP_SATURATE; r *= 1.5) {
        af_heatmap_colour(r, col);
        CHECK(memcmp(col, sat, 3) != 0);
        CHECK_MSG(col[0] + col[1] + col[2] < 3 * 200, "ratio %g is pale: %d %d %d", r, col[0], col[1], col[2]);
        CHECK(col[0] <= at1[0]); /* darker as the error grows */
    }
    unsigned char *heatmap_pixels = d.rgb; /* compared with the file below */
    free(png);

    /* 128 x 128 is the largest heatmap: 4 px a cell (the smallest), 512 px a side (the cap) */
    af_heatmap big;
    CHECK(af_heatmap_alloc(&big, 128, 128) == 0);
    CHECK(af_heatmap_png_bytes(&big, &png, &n) == 0);
    decode(png, n, &d);
    CHECK_MSG(d.w == 512 && d.h == 512, "%d x %d", d.w, d.h);
    free(d.rgb);
    free(png);
    af_heatmap_free(&big);

    /* a minimised case's 1 x 1 heatmap: one 32 px cell (it was a 384 px square), and a
     * 1 x 128 one keeps 4 px cells, every side within [AF_PICTURE_MIN_CELL, MAX_SIDE] */
    af_heatmap one;
    CHECK(af_heatmap_alloc(&one, 1, 1) == 0);
    one.allowed = 1;
    one.cells[0] = 3;
    CHECK(af_heatmap_png_bytes(&one, &png, &n) == 0);
    decode(png, n, &d);
    CHECK_MSG(d.w == AF_PICTURE_MAX_CELL && d.h == AF_PICTURE_MAX_CELL, "1x1: %d x %d", d.w, d.h);
    free(d.rgb);
    free(png);
    af_heatmap_free(&one);
    CHECK(af_heatmap_alloc(&one, 1, 128) == 0);
    CHECK(af_heatmap_png_bytes(&one, &png, &n) == 0);
    decode(png, n, &d);
    CHECK_MSG(d.w == 128 * AF_PICTURE_MIN_CELL && d.h == AF_PICTURE_MAX_CELL, "1x128: %d x %d", d.w, d.h);
    free(d.rgb);
    free(png);
    af_heatmap_free(&one);

    /* leak matrix: the four probe states get four colours */
    unsigned char states[4] = {0, AF_LEAK_CHANGED, AF_LEAK_VISIBLE, AF_LEAK_VISIBLE | AF_LEAK_CHANGED};
    af_leak_matrix lm = {1, 4, states, NULL, NULL};
    CHECK(af_leak_png_bytes(&lm, &png, &n) == 0);
    decode(png, n, &d);
    CHECK_MSG(d.w == 4 * 32 && d.h == 32, "%d x %d", d.w, d.h);
    const unsigned char *hidden = d.rgb + 3 * 3, *leak = d.rgb + (32 + 3) * 3;
    const unsigned char *vis = d.rgb + (64 + 3) * 3, *vis_changed = d.rgb + (96 + 3) * 3;
    CHECK(hidden[0] == 24 && hidden[1] == 28 && hidden[2] == 96);                   /* dark blue */
    CHECK(leak[0] == 220 && leak[1] == 30 && leak[2] == 30);                        /* red */
    CHECK(vis[0] == 150 && vis[1] == 150 && vis[2] == 150);                         /* grey */
    CHECK(vis_changed[0] == 150 && vis_changed[1] == 215 && vis_changed[2] == 170); /* pale green */
    free(d.rgb);
    free(png);

    /* a leak matrix wider than 128 folds: 2 x 1000 -> 2 x 125 cells (groups of 8), 4 px
     * wide; a folded group holding one leak among visible cells shows the leak */
    unsigned char *cells = malloc(2 * 1000);
    memset(cells, AF_LEAK_VISIBLE | AF_LEAK_CHANGED, 2 * 1000);
    cells[999] = AF_LEAK_CHANGED;
    af_leak_matrix wide = {2, 1000, cells, NULL, NULL};
    CHECK(af_leak_count(&wide) == 1);
    CHECK(af_leak_png_bytes(&wide, &png, &n) == 0);
    decode(png, n, &d);
    CHECK_MSG(d.w == 125 * 4 && d.h == 2 * 32, "%d x %d", d.w, d.h);
    const unsigned char *leaked = d.rgb + ((size_t)0 * d.w + (d.w - 1)) * 3;
    CHECK(leaked[0] == 220 && leaked[1] == 30 && leaked[2] == 30);          /* the folded cell holding (0, 999) */
    const unsigned char *clean = d.rgb + ((size_t)(d.h - 2) * d.w + 0) * 3; /* above the seam row */
    CHECK(clean[0] == 150 && clean[1] == 215 && clean[2] == 170);           /* visible and changed */
    free(d.rgb);
    free(png);
    free(cells);

    /* files: the heatmap file holds the picture the memory encoder made; the RGB writer's
     * file decodes to its pixels; a file that cannot be made is an error, not a crash */
    char dir[] = "/tmp/af_png_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/h.png", dir);
    CHECK(af_heatmap_png(&m, path) == 0);
    unsigned char *file_png = read_file(path, &n);
    decode(file_png, n, &d);
    CHECK(d.w == 3 * 32 && d.h == 4 * 32);
    CHECK(memcmp(d.rgb, heatmap_pixels, (size_t)d.w * d.h * 3) == 0);
    free(d.rgb);
    free(file_png);
    free(heatmap_pixels);
    remove(path);
    unsigned char rgb[2 * 3 * 3];
    for (int i = 0; i < (int)sizeof rgb; i++) rgb[i] = (unsigned char)(255 - 13 * i);
    snprintf(path, sizeof path, "%s/rgb.png", dir);
    CHECK(af_png_write_rgb(path, 3, 2, rgb) == 0);
    file_png = read_file(path, &n);
    decode(file_png, n, &d);
    CHECK(d.w == 3 && d.h == 2 && memcmp(d.rgb, rgb, sizeof rgb) == 0);
    free(d.rgb);
    free(file_png);
    remove(path);
    CHECK(af_png_write_rgb(path, 0, 2, rgb) == -1);
    FILE *absent = fopen(path, "rb");
    CHECK(absent == NULL); /* refused before anything was written */
    snprintf(path, sizeof path, "%s/none/h.png", dir);
    CHECK(af_heatmap_png(&m, path) == -1); /* missing directory */
    CHECK(af_png_write_rgb(path, 3, 2, rgb) == -1);
    remove(dir);
    af_heatmap_free(&m);

    CHECK_DONE("test_png");
}
