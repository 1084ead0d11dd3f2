/* campaign/plot_merge.c — the merged directory's plot_data (stats.h: one line per period,
 * AFL++'s plot_data columns): the shards ran side by side, so at every time one of them
 * wrote a line, the merged line sums each shard's last line at or before that time (a
 * shard that had not written one yet adds nothing). Cases, their rate, findings, crashes
 * and hangs add up exactly; buckets, corpus inputs, features and config cells are sums
 * over the shards, an upper bound of the merged distinct count (the header says so). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign/merge.h"
#include "util/fsutil.h"

#define PLOT_COLS                                                                                                      \
    10 /* relative_time, cases, cases_per_s, findings, buckets, corpus, features,
                        config_cells, crashes, hangs */

typedef struct {
    double (*rows)[PLOT_COLS]; /* (n, PLOT_COLS), time ascending */
    int n;
} plot_rows;

/* dir/plot_data's lines (comments skipped; a line with another column count too); none when
 * the file is missing. 0, or -1 when out of memory. */
static int read_plot(const char *dir, plot_rows *p) {
    char path[4200], line[1024];
    snprintf(path, sizeof path, "%s/plot_data", dir);
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        double r[PLOT_COLS];
        if (line[0] == '#' || sscanf(line, "%lf, %lf, %lf, %lf, %lf, %lf, %lf, %lf, %lf, %lf", &r[0], &r[1], &r[2],
                                     &r[3], &r[4], &r[5], &r[6], &r[7], &r[8], &r[9]) != PLOT_COLS)
            continue;
        if (p->n > 0 && r[0] < p->rows[p->n - 1][0]) continue; /* time goes forward */
        if (p->n == cap) {
            cap = cap ? 2 * cap : 64;
            void *grown = realloc(p->rows, (size_t)cap * sizeof *p->rows);
            if (!grown) {
                fclose(f);
                return -1;
            }
            p->rows = grown;
        }
        memcpy(p->rows[p->n++], r, sizeof r);
    }
    fclose(f);
    return 0;
}

static int by_time(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int af_plot_merge(const char *out, const char *const *dirs, int n, char *why, size_t cap) {
    plot_rows *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    int total = 0, rc = p ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = read_plot(dirs[i], &p[i]);
        total += p[i].n;
    }
    double *times = rc == 0 ? malloc((size_t)(total ? total : 1) * sizeof *times) : NULL;
    char *text = times ? malloc((size_t)total * 200 + 512) : NULL;
    if (!text) {
        snprintf(why, cap, "plot_data: out of memory");
        rc = -1;
    } else {
        int k = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < p[i].n; j++) times[k++] = p[i].rows[j][0];
        qsort(times, (size_t)total, sizeof *times, by_time);
        size_t len = (size_t)snprintf(text, 512,
                                      "# relative_time, cases, cases_per_s, findings, buckets, corpus, features, "
                                      "config_cells, crashes, hangs\n"
                                      "# merged from %d dir(s) run side by side: each line sums every dir's last line "
                                      "at or before its time (buckets, corpus, features, config_cells: sums over the "
                                      "dirs, at most their distinct union)\n",
                                      n);
        int *at = calloc((size_t)(n > 0 ? n : 1), sizeof *at); /* each dir's next line */
        for (int t = 0; at && t < total; t++) {
            if (t + 1 < total && times[t + 1] == times[t]) continue; /* one line per distinct time */
            double sum[PLOT_COLS] = {times[t]};
            for (int i = 0; i < n; i++) {
                while (at[i] < p[i].n && p[i].rows[at[i]][0] <= times[t]) at[i]++;
                if (at[i] == 0) continue;
                for (int c = 1; c < PLOT_COLS; c++) sum[c] += p[i].rows[at[i] - 1][c];
            }
            len += (size_t)sprintf(text + len, "%.3f, %.0f, %.2f, %.0f, %.0f, %.0f, %.0f, %.0f, %.0f, %.0f\n", sum[0],
                                   sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7], sum[8], sum[9]);
        }
        if (!at) {
            snprintf(why, cap, "plot_data: out of memory");
            rc = -1;
        } else {
            char path[4200];
            snprintf(path, sizeof path, "%s/plot_data", out);
            af_file_part part = {text, len};
            if (af_write_parts_atomic(path, &part, 1, why, cap)) rc = -1;
        }
        free(at);
    }
    free(text);
    free(times);
    for (int i = 0; p && i < n; i++) free(p[i].rows);
    free(p);
    return rc;
}
