/* campaign/stats.c — DIR/stats.json with stable keys, and the progress line (campaign/stats.h). */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>
#include <unistd.h>

#include "campaign/stats.h"
#include "util/fsutil.h"
#include "util/json.h"

static void iso_utc(double t, char *buf, size_t cap) {
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Times in ms and the rate in 1e-4 cases/s, as the stable keys always had them; dumped
 * at DBL_DIG significant digits, which gives back exactly those decimals. */
static json_t *rounded(double x, double scale) { return af_json_real(round(x * scale) / scale); }

/* The log2 bin of a length: floor(log2 s), the last bin taking the rest. */
static int seqlen_bin(int s) {
    int b = 0;
    while (b + 1 < AF_STATS_SEQLEN_BUCKETS && s >> (b + 1)) b++;
    return b;
}

void af_stats_note_seqlens(af_campaign_stats *st, int seqlen_q, int seqlen_kv) {
    st->seqlen_q_hist[seqlen_bin(seqlen_q)]++;
    st->seqlen_kv_hist[seqlen_bin(seqlen_kv)]++;
}

void af_stats_note_judged_seqlen(af_campaign_stats *st, int seqlen_kv) {
    st->seqlen_kv_judged_hist[seqlen_bin(seqlen_kv)]++;
}

void af_stats_note_cp(af_campaign_stats *st, const af_case *c, bool declined) {
    int k = c->cp_size > 1 && c->cp_comm >= AF_CP_NONE && c->cp_comm <= AF_CP_A2A_P2P ? (int)c->cp_comm : AF_CP_NONE;
    st->cp_cases[k]++;
    if (declined) st->cp_declined[k]++;
    if (c->dropout_rng == AF_DROPOUT_RNG_KERNEL) st->dropout_kernel_cases++;
}

/* Is field f optional: a shorthand is not, nor a field the default case prints (d: the defaults). */
static bool field_counted(const af_case *d, af_case_field f) {
    return af_case_field_row(f)->kind != AF_CFK_ALIAS && !af_case_field_printed(d, f);
}

void af_stats_note_fields(af_campaign_stats *st, const af_case *c) {
    af_case d;
    af_case_defaults(&d); /* once per case, not once per field */
    for (int f = 0; f < AF_CF_COUNT; f++)
        if (af_case_field_printed(c, (af_case_field)f) && field_counted(&d, (af_case_field)f)) st->field_cases[f]++;
}

/* {"kv_dtype": n, ...}: every optional case field, its count of cases (0 included). */
static json_t *field_counts(const long long *count) {
    json_t *o = json_object();
    af_case d;
    af_case_defaults(&d);
    for (int f = 0; f < AF_CF_COUNT; f++)
        if (field_counted(&d, (af_case_field)f))
            json_object_set_new(o, af_case_field_row((af_case_field)f)->name, json_integer((json_int_t)count[f]));
    return o;
}

/* {"1": n, "p2p": n, ...} of one cp counter array (af_campaign_stats). */
static json_t *cp_counts(const long long *count) {
    json_t *o = json_object();
    for (int k = AF_CP_NONE; k <= AF_CP_A2A_P2P; k++)
        json_object_set_new(o, k == AF_CP_NONE ? "1" : af_cp_comm_name((af_cp_comm)k),
                            json_integer((json_int_t)count[k]));
    return o;
}

void af_stats_note_run(af_campaign_stats *st, const af_run_info *info) {
    if (info->plan_cache == AF_PLAN_CACHE_NONE) return;
    st->cudnn_graph_build_seconds += info->build_seconds;
    if (info->plan_cache == AF_PLAN_CACHE_HIT)
        st->plan_cache_hits++;
    else
        st->plan_cache_misses++;
}

void af_stats_note_gpu(af_campaign_stats *st, const char *device, long long n) {
    int i = 0;
    while (i < st->n_gpus && strcmp(st->gpus[i], device) != 0) i++;
    if (i == st->n_gpus) {
        if (st->n_gpus == AF_GPUS_MAX) return;
        snprintf(st->gpus[i], sizeof st->gpus[i], "%s", device);
        st->gpu_cases[i] = 0;
        st->n_gpus++;
    }
    st->gpu_cases[i] += n;
}

/* "gpus" and "gpu_cases" of stats.json into o (null both without --gpus). */
static void gpus_json(json_t *o, const af_campaign_stats *st) {
    json_t *list = st->n_gpus ? json_array() : json_null();
    json_t *cases = st->n_gpus ? json_object() : json_null();
    for (int i = 0; i < st->n_gpus; i++) {
        json_array_append_new(list, af_json_text(st->gpus[i]));
        json_object_set_new(cases, st->gpus[i], json_integer((json_int_t)st->gpu_cases[i]));
    }
    json_object_set_new(o, "gpus", list);
    json_object_set_new(o, "gpu_cases", cases);
}

void af_stats_note_config_cell(af_campaign_stats *st, unsigned cell) {
    cell %= AF_STATS_CONFIG_CELLS;
    st->config_cells_seen[cell / 64] |= 1ull << (cell % 64);
}

int af_stats_config_cells(const af_campaign_stats *st) {
    int n = 0;
    for (int i = 0; i < AF_STATS_CONFIG_CELLS / 64; i++) n += __builtin_popcountll(st->config_cells_seen[i]);
    return n;
}

/* Keep a timeline point when an interval has passed since the last one. */
static void note_timeline(af_campaign_stats *st) {
    if (st->timeline_interval_s <= 0) st->timeline_interval_s = 1;
    if (st->timeline_n > 0 && st->elapsed_s < st->timeline[st->timeline_n - 1].elapsed_s + st->timeline_interval_s)
        return;
    if (st->timeline_n == AF_STATS_TIMELINE) {
        for (int i = 0; i < AF_STATS_TIMELINE / 2; i++) st->timeline[i] = st->timeline[2 * i + 1];
        st->timeline_n = AF_STATS_TIMELINE / 2;
        st->timeline_interval_s *= 2;
    }
    st->timeline[st->timeline_n++] = (af_stats_point){st->elapsed_s, st->cases, st->findings};
}

static json_t *timeline_json(const af_campaign_stats *st) {
    json_t *points = json_array();
    for (int i = 0; points && i <= st->timeline_n; i++) {
        af_stats_point p =
            i < st->timeline_n ? st->timeline[i] : (af_stats_point){st->elapsed_s, st->cases, st->findings};
        if (i == st->timeline_n && i > 0 && st->timeline[i - 1].elapsed_s == p.elapsed_s) break; /* just kept */
        json_array_append_new(
            points, json_pack("[o, I, I]", rounded(p.elapsed_s, 1e3), (json_int_t)p.cases, (json_int_t)p.findings));
    }
    return json_pack("{s:o, s:o}", "interval_s", af_json_real(st->timeline_interval_s), "points", points);
}

static json_t *seqlen_hist(const long long *hist) {
    json_t *o = json_object();
    for (int b = 0; o && b < AF_STATS_SEQLEN_BUCKETS; b++) {
        char key[32];
        if (b == 0)
            snprintf(key, sizeof key, "1");
        else
            snprintf(key, sizeof key, "%ld-%ld", 1L << b, (2L << b) - 1);
        json_object_set_new(o, key, json_integer((json_int_t)hist[b]));
    }
    return o;
}

int af_stats_write(const char *dir, af_campaign_stats *st, char *why, size_t cap) {
    note_timeline(st);
    char path[2048];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    char start[32], now[32];
    iso_utc(st->start_unix, start, sizeof start);
    iso_utc(st->start_unix + st->elapsed_s, now, sizeof now);
    double rate = st->elapsed_s > 0 ? st->cases / st->elapsed_s : 0;
    json_t *o = json_pack(
        "{s:s, s:o, s:s, s:o, s:I, s:o, s:I, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:i, s:o, s:o, s:i, s:o, s:I, s:o}",
        "start_time", start, "start_time_unix", rounded(st->start_unix, 1e3), "last_update", now, "elapsed_s",
        rounded(st->elapsed_s, 1e3), "cases", (json_int_t)st->cases, "cases_per_s", rounded(rate, 1e4), "findings",
        (json_int_t)st->findings, "buckets", st->buckets, "minimised", st->minimised, "unminimised", st->unminimised,
        "crashes", (json_int_t)st->crashes, "hangs", (json_int_t)st->hangs, "declined", (json_int_t)st->declined,
        "errors", (json_int_t)st->errors, "corpus", st->corpus, "backend", af_json_text(st->backend), "engine",
        af_json_text(st->engine), "jobs", st->jobs, "mode", af_json_text(st->mode ? st->mode : ""), "max_work",
        (json_int_t)llround(st->max_work), "time_to_first_finding_s",
        st->time_to_first_finding_s >= 0 ? rounded(st->time_to_first_finding_s, 1e3) : json_null());
    if (!o) return -1;
    json_object_set_new(o, "interrupted", json_boolean(st->interrupted));
    json_object_set_new(o, "seqlen_q_hist", seqlen_hist(st->seqlen_q_hist));
    json_object_set_new(o, "seqlen_kv_hist", seqlen_hist(st->seqlen_kv_hist));
    json_object_set_new(o, "seqlen_kv_judged_hist", seqlen_hist(st->seqlen_kv_judged_hist));
    json_object_set_new(o, "cp_cases", cp_counts(st->cp_cases));
    json_object_set_new(o, "cp_declined", cp_counts(st->cp_declined));
    json_object_set_new(o, "dropout_kernel_cases", json_integer((json_int_t)st->dropout_kernel_cases));
    json_object_set_new(o, "case_fields", field_counts(st->field_cases));
    json_object_set_new(o, "cudnn_graph_build_seconds", rounded(st->cudnn_graph_build_seconds, 1e3));
    json_object_set_new(o, "plan_cache_hits", json_integer((json_int_t)st->plan_cache_hits));
    json_object_set_new(o, "plan_cache_misses", json_integer((json_int_t)st->plan_cache_misses));
    if (st->envelope) json_object_set_new(o, "envelope", af_envelope_json(st->envelope));
    json_object_set_new(o, "config_cells", json_integer(af_stats_config_cells(st)));
    json_object_set_new(o, "config_cells_total", json_integer(AF_STATS_CONFIG_CELLS));
    json_object_set_new(o, "timeline", timeline_json(st));
    json_object_set_new(o, "shard", st->shard[0] ? json_string(st->shard) : json_null());
    json_object_set_new(o, "resumed", json_integer(st->resumed));
    json_object_set_new(o, "shards_merged", json_integer(st->shards_merged));
    json_object_set_new(o, "interrupted_cases", json_integer(st->interrupted_cases));
    json_object_set_new(o, "write_errors", json_integer((json_int_t)st->write_errors));
    json_object_set_new(o, "judge_timeouts", json_integer((json_int_t)st->judge_timeouts));
    json_object_set_new(o, "prepared_ahead", json_integer((json_int_t)st->prepared_ahead));
    json_object_set_new(o, "plans_from_disk", json_integer((json_int_t)st->plans_from_disk));
    json_object_set_new(o, "plans_to_disk", json_integer((json_int_t)st->plans_to_disk));
    json_object_set_new(o, "findings_unstored", json_integer((json_int_t)st->findings_unstored));
    json_object_set_new(o, "seeds_skipped", json_integer(st->seeds_skipped));
    json_object_set_new(o, "backend_lost",
                        st->backend_lost[0] ? json_pack("{s:s, s:f, s:i}", "why", st->backend_lost, "at_s",
                                                        st->backend_lost_at_s, "cases_kept", st->lost_cases)
                                            : json_null());
    json_object_set_new(o, "deduplicated", json_integer(st->deduplicated));
    gpus_json(o, st);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(DBL_DIG));
    json_decref(o);
    if (!text) {
        if (why && cap) snprintf(why, cap, "%s: out of memory", path);
        return -1;
    }
    af_file_part parts[2] = {{text, strlen(text)}, {"\n", 1}};
    int rc = af_write_parts_atomic(path, parts, 2, why, cap);
    free(text);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/config_cells.bin", dir);
    af_file_part cells = {st->config_cells_seen, sizeof st->config_cells_seen};
    if (af_write_parts_atomic(path, &cells, 1, why, cap)) return -1;
    if (af_stats_write_fuzzer_stats(dir, st)) {
        int err = errno;
        if (why && cap) snprintf(why, cap, "write %s/fuzzer_stats: %s", dir, strerror(err));
        return -1;
    }
    return 0;
}

int af_stats_write_fuzzer_stats(const char *dir, const af_campaign_stats *st) {
    char path[2048], text[2048];
    snprintf(path, sizeof path, "%s/fuzzer_stats", dir);
    double rate = st->elapsed_s > 0 ? st->cases / st->elapsed_s : 0;
    int n = snprintf(text, sizeof text,
                     "start_time        : %lld\n"
                     "last_update       : %lld\n"
                     "run_time          : %lld\n"
                     "fuzzer_pid        : %ld\n"
                     "execs_done        : %lld\n"
                     "execs_per_sec     : %.2f\n"
                     "paths_total       : %d\n"
                     "unique_crashes    : %lld\n"
                     "unique_hangs      : %lld\n"
                     "findings          : %lld\n"
                     "buckets           : %d\n"
                     "declined          : %lld\n"
                     "target_mode       : %s\n"
                     "afl_banner        : attnfuzz %s%s%s\n",
                     (long long)st->start_unix, (long long)(st->start_unix + st->elapsed_s), (long long)st->elapsed_s,
                     (long)getpid(), st->cases, rate, st->corpus, st->crashes, st->hangs, st->findings, st->buckets,
                     st->declined, st->mode ? st->mode : "", st->backend, st->engine[0] ? " " : "", st->engine);
    af_file_part part = {text, (size_t)n};
    return af_write_parts_atomic(path, &part, 1, NULL, 0);
}

int af_stats_plot_append(const char *dir, af_campaign_stats *st, int features, bool force, char *why, size_t cap) {
    if (!force && st->plot_lines > 0 && st->elapsed_s < st->plot_last_s + AF_STATS_PLOT_PERIOD_S) return 0;
    char path[2048], line[512];
    snprintf(path, sizeof path, "%s/plot_data", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int err = errno;
        if (why && cap) snprintf(why, cap, "%s: %s", path, fd < 0 ? strerror(err) : "not a regular file");
        if (fd >= 0) close(fd);
        return -1;
    }
    double dt = st->elapsed_s - st->plot_last_s;
    /* no time since the line before (the last line after fuzzing stopped): its rate again */
    double rate = st->plot_lines == 0 ? 0
                  : dt > 0            ? (double)(st->cases - st->plot_last_cases) / dt
                                      : st->plot_last_rate;
    int n = 0;
    if (sb.st_size == 0) n = snprintf(line, sizeof line, "%s\n", AF_STATS_PLOT_HEADER);
    n += snprintf(line + n, sizeof line - (size_t)n, "%.3f, %lld, %.2f, %lld, %d, %d, %d, %d, %lld, %lld\n",
                  st->elapsed_s, st->cases, rate, st->findings, st->buckets, st->corpus, features,
                  af_stats_config_cells(st), st->crashes, st->hangs);
    int rc = af_write_all(fd, line, (size_t)n);
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc) {
        if (why && cap) snprintf(why, cap, "write %s: %s", path, strerror(err));
        return -1;
    }
    st->plot_last_s = st->elapsed_s;
    st->plot_last_cases = st->cases;
    st->plot_last_rate = rate;
    st->plot_lines++;
    return 0;
}

void af_stats_progress(const af_campaign_stats *st, bool tty, bool final) {
    double rate = st->elapsed_s > 0 ? st->cases / st->elapsed_s : 0;
    char line[256];
    snprintf(line, sizeof line,
             "attnfuzz campaign [%s%s%s %s x%d]: %lld cases, %.1f cases/s, %lld findings, %d buckets, %lld crashes, "
             "%lld hangs, %lld declined, %.0fs",
             st->backend, st->engine[0] ? ":" : "", st->engine, st->mode ? st->mode : "", st->jobs, st->cases, rate,
             st->findings, st->buckets, st->crashes, st->hangs, st->declined, st->elapsed_s);
    if (tty)
        fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
    else
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
}
