/* campaign/stats.c — DIR/stats.json with stable keys, and the progress line (campaign/stats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "campaign/stats.h"
#include "judge/verdict_json.h"
#include "util/fsutil.h"

static void iso_utc(double t, char *buf, size_t cap) {
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int af_stats_write(const char *dir, const af_campaign_stats *st) {
    char path[2048];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return -1;
    char start[32], now[32];
    iso_utc(st->start_unix, start, sizeof start);
    iso_utc(st->start_unix + st->elapsed_s, now, sizeof now);
    double rate = st->elapsed_s > 0 ? st->cases / st->elapsed_s : 0;
    fprintf(f, "{\n  \"start_time\": \"%s\",\n  \"start_time_unix\": %.3f,\n  \"last_update\": \"%s\",\n", start,
            st->start_unix, now);
    fprintf(f, "  \"elapsed_s\": %.3f,\n  \"cases\": %lld,\n  \"cases_per_s\": %.4f,\n", st->elapsed_s, st->cases, rate);
    fprintf(f, "  \"findings\": %lld,\n  \"buckets\": %d,\n  \"minimised\": %d,\n  \"unminimised\": %d,\n",
            st->findings, st->buckets, st->minimised, st->unminimised);
    fprintf(f, "  \"crashes\": %lld,\n  \"hangs\": %lld,\n  \"declined\": %lld,\n  \"errors\": %lld,\n", st->crashes,
            st->hangs, st->declined, st->errors);
    fprintf(f, "  \"corpus\": %d,\n  \"backend\": ", st->corpus);
    af_json_string(f, st->backend);
    fputs(",\n  \"engine\": ", f);
    af_json_string(f, st->engine);
    fprintf(f, ",\n  \"jobs\": %d,\n  \"mode\": ", st->jobs);
    af_json_string(f, st->mode ? st->mode : "");
    fprintf(f, ",\n  \"max_work\": %.0f,\n  \"time_to_first_finding_s\": ", st->max_work);
    if (st->time_to_first_finding_s >= 0) fprintf(f, "%.3f\n}\n", st->time_to_first_finding_s);
    else fputs("null\n}\n", f);
    int rc = fclose(f) == 0 ? af_write_file_atomic(path, text, len, NULL, 0) : -1;
    free(text);
    return rc;
}

void af_stats_progress(const af_campaign_stats *st, bool tty, bool final) {
    double rate = st->elapsed_s > 0 ? st->cases / st->elapsed_s : 0;
    char line[256];
    snprintf(line, sizeof line,
             "attnfuzz campaign [%s%s%s %s x%d]: %lld cases, %.1f cases/s, %lld findings, %d buckets, %lld crashes, "
             "%lld hangs, %lld declined, %.0fs",
             st->backend, st->engine[0] ? ":" : "", st->engine, st->mode ? st->mode : "", st->jobs, st->cases, rate,
             st->findings, st->buckets, st->crashes, st->hangs, st->declined, st->elapsed_s);
    if (tty) fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
    else fprintf(stderr, "%s\n", line);
    fflush(stderr);
}
