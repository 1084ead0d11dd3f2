/* test_png.c — the PNG writer produces a file any decoder reads back exactly.
 *
 * The test decodes its own output: signature, chunk layout and CRCs, IHDR fields, the
 * zlib header, every stored deflate block (LEN/NLEN), the Adler-32 trailer, and the
 * pixels after the filter bytes. It also checks CRC-32 / Adler-32 against the standard
 * check values and that the heatmap / leak pictures have the promised size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judge/evidence.h"
#include "triage/picture.h"
#include "util/check.h"

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

typedef struct {
    uint32_t w, h;
    unsigned char *rgb;   /* h * w * 3 */
    int idat_chunks, stored_blocks;
} decoded;

/* A decoder for exactly what af_png_encode_rgb may write (stored blocks only). */
static void decode(const unsigned char *png, size_t n, decoded *d) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    memset(d, 0, sizeof *d);
    CHECK(n > 8 + 25 + 12);
    CHECK(memcmp(png, sig, 8) == 0);
    size_t pos = 8;
    unsigned char *z = NULL;
    size_t zlen = 0;
    int seen_ihdr = 0, seen_iend = 0;
    while (pos < n) {
        CHECK(pos + 12 <= n);
        uint32_t len = be32(png + pos);
        const unsigned char *type = png + pos + 4;
        CHECK(pos + 12 + len <= n);
        uint32_t crc = be32(png + pos + 8 + len);
        CHECK_MSG(af_crc32(0, type, 4 + len) == crc, "chunk %.4s CRC", (const char *)type);
        CHECK(!seen_iend);
        if (memcmp(type, "IHDR", 4) == 0) {
            CHECK(pos == 8 && len == 13);
            const unsigned char *h = type + 4;
            d->w = be32(h);
            d->h = be32(h + 4);
            CHECK(h[8] == 8);   /* bit depth */
            CHECK(h[9] == 2);   /* RGB */
            CHECK(h[10] == 0 && h[11] == 0 && h[12] == 0);
            seen_ihdr = 1;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            CHECK(seen_ihdr);
            z = realloc(z, zlen + len + 1);
            memcpy(z + zlen, type + 4, len);
            zlen += len;
            d->idat_chunks++;
        } else if (memcmp(type, "IEND", 4) == 0) {
            CHECK(len == 0);
            seen_iend = 1;
        } else {
            CHECK_MSG(0, "unexpected chunk %.4s", (const char *)type);
        }
        pos += 12 + len;
    }
    CHECK(pos == n && seen_iend && d->idat_chunks >= 1);

    /* zlib: CMF/FLG, stored blocks, Adler-32 */
    CHECK(zlen >= 2 + 5 + 4);
    CHECK((z[0] & 0x0F) == 8);                /* deflate */
    CHECK(((z[0] << 8) | z[1]) % 31 == 0);    /* FCHECK */
    CHECK((z[1] & 0x20) == 0);                /* no preset dictionary */
    size_t raw_cap = (size_t)d->h * (d->w * 3 + 1);
    unsigned char *raw = malloc(raw_cap + 1);
    size_t raw_len = 0, zp = 2;
    int final = 0;
    while (!final) {
        CHECK(zp + 5 <= zlen);
        final = z[zp] & 1;
        CHECK(((z[zp] >> 1) & 3) == 0);       /* BTYPE 00: stored */
        unsigned len = z[zp + 1] | (unsigned)z[zp + 2] << 8;
        unsigned nlen = z[zp + 3] | (unsigned)z[zp + 4] << 8;
        CHECK((len ^ nlen) == 0xFFFFu);
        zp += 5;
        CHECK(zp + len <= zlen);
        CHECK(raw_len + len <= raw_cap);
        memcpy(raw + raw_len, z + zp, len);
        raw_len += len;
        zp += len;
        d->stored_blocks++;
    }
    CHECK(zp + 4 == zlen);
    CHECK(be32(z + zp) == af_adler32(1, raw, raw_len));
    CHECK(raw_len == raw_cap);
    d->rgb = malloc((size_t)d->w * d->h * 3);
    for (uint32_t y = 0; y < d->h; y++) {
        const unsigned char *row = raw + (size_t)y * (d->w * 3 + 1);
        CHECK(row[0] == 0); /* filter None */
        memcpy(d->rgb + (size_t)y * d->w * 3, row + 1, (size_t)d->w * 3);
    }
    free(raw);
    free(z);
}

static void round_trip(int w, int h, int expect_blocks_at_least) {
    unsigned char *rgb = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h * 3; i++) rgb[i] = (unsigned char)(i * 7 + i / 3);
    unsigned char *png;
    size_t n;
    CHECK(af_png_encode_rgb(w, h, rgb, &png, &n) == 0);
    decoded d;
    decode(png, n, &d);
    CHECK(d.w == (uint32_t)w && d.h == (uint32_t)h);
    CHECK(memcmp(d.rgb, rgb, (size_t)w * h * 3) == 0);
    CHECK(d.stored_blocks >= expect_blocks_at_least);
    free(d.rgb);
    free(png);
    free(rgb);
}

int main(void) {
    /* standard check values */
    CHECK(af_crc32(0, "123456789", 9) == 0xCBF43926u);
    CHECK(af_crc32(af_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u); /* chains */
    CHECK(af_crc32(0, "", 0) == 0);
    CHECK(af_adler32(1, "Wikipedia", 9) == 0x11E60398u);
    CHECK(af_adler32(1, "", 0) == 1);

    round_trip(1, 1, 1);
    round_trip(7, 5, 1);
    round_trip(200, 120, 2);   /* 72120 raw bytes: two stored blocks */
    round_trip(300, 300, 5);   /* 270300 raw bytes */

    unsigned char *png;
    size_t n;
    unsigned char px[3] = {1, 2, 3};
    CHECK(af_png_encode_rgb(0, 5, px, &png, &n) == -1);
    CHECK(af_png_encode_rgb(5, -1, px, &png, &n) == -1);

    /* heatmap picture: 4 x 3 cells, 24 px each (small matrices get big cells) */
    af_heatmap m;
    CHECK(af_heatmap_alloc(&m, 4, 3) == 0);
    m.allowed = 1;
    for (int i = 0; i < 12; i++) m.cells[i] = (float)i / 4;
    m.cells[5] = -1;  /* not judged */
    CHECK(af_heatmap_png_bytes(&m, &png, &n) == 0);
    decoded d;
    decode(png, n, &d);
    CHECK(d.w == 3 * 24 && d.h == 4 * 24);
    /* cell (0,0) is ratio 0, cell (1,2) = 5 is "not judged" grey, (3,2) = 2.75 over 1: red-ish */
    const unsigned char *c00 = d.rgb, *c12 = d.rgb + ((size_t)(1 * 24 + 3) * d.w + 2 * 24 + 3) * 3;
    const unsigned char *c32 = d.rgb + ((size_t)(3 * 24 + 3) * d.w + 2 * 24 + 3) * 3;
    CHECK(c00[2] > c00[0]);                                   /* blue */
    CHECK(c12[0] == c12[1] && c12[1] == c12[2]);              /* grey */
    CHECK(c32[0] > 200 && c32[1] < c32[0] && c32[2] < c32[0]); /* red */
    free(d.rgb);
    free(png);

    /* 128 x 128 is the largest heatmap: 3 px a cell */
    af_heatmap big;
    CHECK(af_heatmap_alloc(&big, 128, 128) == 0);
    CHECK(af_heatmap_png_bytes(&big, &png, &n) == 0);
    decode(png, n, &d);
    CHECK(d.w == 384 && d.h == 384);
    free(d.rgb);
    free(png);
    af_heatmap_free(&big);

    /* leak matrix: the four probe states get four colours */
    unsigned char states[4] = {0, AF_LEAK_CHANGED, AF_LEAK_VISIBLE, AF_LEAK_VISIBLE | AF_LEAK_CHANGED};
    af_leak_matrix lm = {1, 4, states, NULL, NULL};
    CHECK(af_leak_png_bytes(&lm, &png, &n) == 0);
    decode(png, n, &d);
    CHECK(d.w == 4 * 24 && d.h == 24);
    const unsigned char *hidden = d.rgb + 3 * 3, *leak = d.rgb + (24 + 3) * 3;
    const unsigned char *vis = d.rgb + (48 + 3) * 3, *vis_changed = d.rgb + (72 + 3) * 3;
    CHECK(hidden[2] > hidden[0]);                              /* dark blue */
    CHECK(leak[0] > 200 && leak[1] < 100 && leak[2] < 100);    /* red */
    CHECK(vis[0] == vis[1] && vis[1] == vis[2]);               /* grey */
    CHECK(vis_changed[1] > vis_changed[0]);                    /* pale green */
    free(d.rgb);
    free(png);

    /* a leak matrix wider than 384 folds: 2 x 1000 -> 2 x 334 cells, 2 px each; a
     * folded group holding one leak among visible cells shows the leak */
    unsigned char *cells = malloc(2 * 1000);
    memset(cells, AF_LEAK_VISIBLE | AF_LEAK_CHANGED, 2 * 1000);
    cells[999] = AF_LEAK_CHANGED;
    af_leak_matrix wide = {2, 1000, cells, NULL, NULL};
    CHECK(af_leak_count(&wide) == 1);
    CHECK(af_leak_png_bytes(&wide, &png, &n) == 0);
    decode(png, n, &d);
    CHECK(d.w == 334 * 2 && d.h == 2 * 24);
    const unsigned char *leaked = d.rgb + ((size_t)0 * d.w + (d.w - 1)) * 3;
    CHECK(leaked[0] > 200 && leaked[2] < 100);  /* the folded cell holding (0, 999) is red */
    const unsigned char *clean = d.rgb + ((size_t)(d.h - 1) * d.w + 0) * 3;
    CHECK(clean[1] > clean[0]);                 /* visible and changed: green */
    free(d.rgb);
    free(png);
    free(cells);

    /* files: the same bytes as the memory encoder */
    char dir[] = "/tmp/af_png_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/h.png", dir);
    CHECK(af_heatmap_png(&m, path) == 0);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    unsigned char file_bytes[16];
    CHECK(fread(file_bytes, 1, 8, f) == 8);
    fclose(f);
    CHECK(memcmp(file_bytes, "\x89PNG\r\n\x1a\n", 8) == 0);
    remove(path);
    snprintf(path, sizeof path, "%s/none/h.png", dir);
    CHECK(af_heatmap_png(&m, path) == -1);   /* missing directory: an error, not a crash */
    remove(dir);
    af_heatmap_free(&m);

    CHECK_DONE("test_png");
}
