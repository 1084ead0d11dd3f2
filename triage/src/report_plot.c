/* report_plot.c — DIR/plot_data (campaign/stats.h: AFL++'s plot_data for attnfuzz)
 * drawn as PNG line charts for report.html: coverage (features, config cells) and
 * cases/s against campaign time. The numbers (axes, maxima) go in the HTML caption;
 * the picture holds the lines, a frame and quarter grid lines. */
#include "triage/src/triage_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "triage/picture.h"

#define PLOT_LINE_MAX 512

/* One data line: relative_time, cases, cases_per_s, findings, buckets, corpus, features,
 * config_cells, crashes, hangs. 0 or -1 (a comment, a short or bad line). */
static int parse_line(const char *line, double v[10]) {
    if (line[0] == '#') return -1;
    const char *p = line;
    for (int i = 0; i < 10; i++) {
        char *end;
        v[i] = strtod(p, &end);
        if (end == p || !isfinite(v[i]) || v[i] < 0) return -1;
        p = end;
        while (*p == ' ') p++;
        if (i < 9) {
            if (*p != ',') return -1;
            p++;
        }
    }
    return 0;
}

void tr_plot_read(const char *dir, tr_plot *out) {
    out->n = 0;
    size_t len = 0;
    char *text = tr_read_in(dir, dir, "plot_data", &len);
    if (!text) return;
    long lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    long stride = lines > TR_PLOT_MAX ? (lines + TR_PLOT_MAX - 1) / TR_PLOT_MAX : 1;
    long index = 0;
    for (char *line = text, *next; *line && out->n < TR_PLOT_MAX; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        else
            next = line + strlen(line);
        double v[10];
        if (parse_line(line, v)) continue;
        bool last = !*next;
        if (index++ % stride && !last) continue;
        out->t[out->n] = v[0];
        out->rate[out->n] = v[2];
        out->features[out->n] = v[6];
        out->cells[out->n] = v[7];
        out->n++;
    }
    free(text);
}

/* ---- drawing ------------------------------------------------------------------------ */

enum { PLOT_W = 640, PLOT_H = 180, PLOT_PAD = 6 };

typedef struct {
    unsigned char *rgb;
    int w, h;
} canvas;

static void dot(canvas *c, int x, int y, const unsigned char colour[3]) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    memcpy(c->rgb + ((size_t)y * c->w + x) * 3, colour, 3);
}

/* A 2-px line (Bresenham, each point with the pixel below it). */
static void line(canvas *c, int x0, int y0, int x1, int y1, const unsigned char colour[3]) {
    int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    for (;;) {
        dot(c, x0, y0, colour);
        dot(c, x0, y0 + 1, colour);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

static void series(canvas *c, const tr_plot *p, const double *v, double t_max, const unsigned char colour[3]) {
    double top = 0;
    for (int i = 0; i < p->n; i++)
        if (v[i] > top) top = v[i];
    if (!(top > 0)) top = 1;
    int inner_w = c->w - 2 * PLOT_PAD, inner_h = c->h - 2 * PLOT_PAD;
    int px = 0, py = 0;
    for (int i = 0; i < p->n; i++) {
        int x = PLOT_PAD + (int)lround(inner_w * (t_max > 0 ? p->t[i] / t_max : 0));
        int y = PLOT_PAD + inner_h - (int)lround(inner_h * v[i] / top);
        if (i == 0 || p->n == 1)
            line(c, x, y, x, y, colour);
        else
            line(c, px, py, x, y, colour);
        px = x;
        py = y;
    }
}

const unsigned char tr_plot_colours[3][3] = {{42, 111, 176}, {224, 138, 30}, {40, 140, 60}};

int tr_plot_png(const tr_plot *p, int panel, unsigned char **png, size_t *len) {
    *png = NULL;
    *len = 0;
    if (p->n < 1) return -1;
    canvas c = {malloc((size_t)PLOT_W * PLOT_H * 3), PLOT_W, PLOT_H};
    if (!c.rgb) return -1;
    memset(c.rgb, 255, (size_t)PLOT_W * PLOT_H * 3);
    static const unsigned char frame[3] = {150, 150, 150}, grid[3] = {228, 228, 228};
    for (int q = 1; q < 4; q++) {
        int y = PLOT_PAD + (PLOT_H - 2 * PLOT_PAD) * q / 4, x = PLOT_PAD + (PLOT_W - 2 * PLOT_PAD) * q / 4;
        for (int i = PLOT_PAD; i < PLOT_W - PLOT_PAD; i++) dot(&c, i, y, grid);
        for (int j = PLOT_PAD; j < PLOT_H - PLOT_PAD; j++) dot(&c, x, j, grid);
    }
    for (int i = PLOT_PAD - 1; i <= PLOT_W - PLOT_PAD; i++) {
        dot(&c, i, PLOT_PAD - 1, frame);
        dot(&c, i, PLOT_H - PLOT_PAD, frame);
    }
    for (int j = PLOT_PAD - 1; j <= PLOT_H - PLOT_PAD; j++) {
        dot(&c, PLOT_PAD - 1, j, frame);
        dot(&c, PLOT_W - PLOT_PAD, j, frame);
    }
    double t_max = p->t[p->n - 1] > 0 ? p->t[p->n - 1] : 1;
    if (panel == TR_PLOT_COVERAGE) {
        series(&c, p, p->features, t_max, tr_plot_colours[0]);
        series(&c, p, p->cells, t_max, tr_plot_colours[1]);
    } else {
        series(&c, p, p->rate, t_max, tr_plot_colours[2]);
    }
    int rc = af_png_encode_rgb(PLOT_W, PLOT_H, c.rgb, png, len);
    free(c.rgb);
    return rc;
}
