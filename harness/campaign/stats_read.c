/* campaign/stats_read.c — DIR/stats.json read back into af_campaign_stats, for a resumed
 * campaign (its counters continue) and for attnfuzz merge (they are summed). The keys
 * are those af_stats_write writes (campaign/stats.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "campaign/stats.h"
#include "util/fsutil.h"
#include "util/json.h"

/* A whole, non-negative number at key (the writer stores integers). 0 or -1. */
static int get_count(const json_t *o, const char *key, long long *out) {
    double x;
    if (af_json_get_number(o, key, &x) || !(x >= 0 && x <= 9007199254740992.0) || x != floor(x)) return -1;
    *out = (long long)x;
    return 0;
}

static int read_hist(const json_t *o, const char *key, long long *hist) {
    const json_t *h = json_object_get(o, key);
    if (!json_is_object(h)) return -1;
    for (int b = 0; b < AF_STATS_SEQLEN_BUCKETS; b++) {
        char name[32];
        if (b == 0)
            snprintf(name, sizeof name, "1");
        else
            snprintf(name, sizeof name, "%ld-%ld", 1L << b, (2L << b) - 1);
        if (get_count(h, name, &hist[b])) return -1;
    }
    return 0;
}

static int read_timeline(const json_t *o, af_campaign_stats *st) {
    const json_t *t = json_object_get(o, "timeline");
    if (!json_is_object(t)) return -1;
    double interval;
    const json_t *points = json_object_get(t, "points");
    if (af_json_get_number(t, "interval_s", &interval) || !json_is_array(points)) return -1;
    st->timeline_interval_s = interval > 0 ? interval : 1;
    st->timeline_n = 0;
    size_t n = json_array_size(points);
    /* the last point is the state when written, not a kept one: it is not restored */
    for (size_t i = 0; i + 1 < n && st->timeline_n < AF_STATS_TIMELINE; i++) {
        const json_t *p = json_array_get(points, i);
        if (!json_is_array(p) || json_array_size(p) != 3) return -1;
        af_stats_point *q = &st->timeline[st->timeline_n++];
        q->elapsed_s = json_number_value(json_array_get(p, 0));
        q->cases = (long long)json_integer_value(json_array_get(p, 1));
        q->findings = (long long)json_integer_value(json_array_get(p, 2));
    }
    return 0;
}

/* The modes af_stats_write knows, as the constant strings st->mode points to. */
static const char *known_mode(const char *text) {
    if (!strcmp(text, "libfuzzer")) return "libfuzzer";
    if (!strcmp(text, "inprocess")) return "inprocess";
    return "";
}

/* "gpus" (list of names) and "gpu_cases" (name -> count), where present (campaign
 * --gpus); absent or null both: no GPU list. 0, or -1 when malformed. */
static int read_gpus(const json_t *o, af_campaign_stats *st) {
    const json_t *list = json_object_get(o, "gpus"), *cases = json_object_get(o, "gpu_cases");
    if ((!list || json_is_null(list)) && (!cases || json_is_null(cases))) return 0;
    if (!json_is_array(list) || !json_is_object(cases) || json_array_size(list) > AF_GPUS_MAX) return -1;
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *name = json_string_value(json_array_get(list, i));
        long long n;
        if (!name || !name[0] || strlen(name) >= AF_GPU_ID_MAX || get_count(cases, name, &n)) return -1;
        af_stats_note_gpu(st, name, n);
    }
    return 0;
}

static void read_config_cells(const char *dir, af_campaign_stats *st) {
    char path[2048];
    snprintf(path, sizeof path, "%s/config_cells.bin", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return;
    unsigned long long bits[AF_STATS_CONFIG_CELLS / 64];
    if (fread(bits, 1, sizeof bits, f) == sizeof bits) memcpy(st->config_cells_seen, bits, sizeof bits);
    fclose(f);
}

int af_stats_read(const char *dir, af_campaign_stats *st, char *why, size_t cap) {
    char path[2048];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return 1;
    json_t *o = af_json_load_object(path, why, cap);
    if (!o) return -1;
    memset(st, 0, sizeof *st);
    struct {
        const char *key;
        long long *out;
    } counts[] = {
        {"cases", &st->cases},
        {"findings", &st->findings},
        {"crashes", &st->crashes},
        {"hangs", &st->hangs},
        {"declined", &st->declined},
        {"errors", &st->errors},
        {"plan_cache_hits", &st->plan_cache_hits},
        {"plan_cache_misses", &st->plan_cache_misses},
    };
    const char *bad = NULL;
    for (size_t i = 0; !bad && i < sizeof counts / sizeof counts[0]; i++)
        if (get_count(o, counts[i].key, counts[i].out)) bad = counts[i].key;
    struct {
        const char *key;
        int *out;
    } ints[] = {
        {"buckets", &st->buckets}, {"minimised", &st->minimised}, {"unminimised", &st->unminimised},
        {"corpus", &st->corpus},   {"jobs", &st->jobs},
    };
    for (size_t i = 0; !bad && i < sizeof ints / sizeof ints[0]; i++) {
        long long v;
        if (get_count(o, ints[i].key, &v) || v > 2147483647LL)
            bad = ints[i].key;
        else
            *ints[i].out = (int)v;
    }
    double x;
    if (!bad && (af_json_get_number(o, "start_time_unix", &st->start_unix) || !isfinite(st->start_unix)))
        bad = "start_time_unix";
    if (!bad && (af_json_get_number(o, "elapsed_s", &st->elapsed_s) || !(st->elapsed_s >= 0))) bad = "elapsed_s";
    if (!bad && af_json_get_number(o, "max_work", &st->max_work)) bad = "max_work";
    if (!bad && af_json_get_number(o, "cudnn_graph_build_seconds", &st->cudnn_graph_build_seconds))
        bad = "cudnn_graph_build_seconds";
    st->time_to_first_finding_s = -1;
    if (!bad && af_json_get_number(o, "time_to_first_finding_s", &x) == 0 && x >= 0) st->time_to_first_finding_s = x;
    if (!bad && read_hist(o, "seqlen_q_hist", st->seqlen_q_hist)) bad = "seqlen_q_hist";
    if (!bad && read_hist(o, "seqlen_kv_hist", st->seqlen_kv_hist)) bad = "seqlen_kv_hist";
    /* campaigns from before it have none: their judged cases start from zero */
    if (!bad && json_object_get(o, "seqlen_kv_judged_hist") &&
        read_hist(o, "seqlen_kv_judged_hist", st->seqlen_kv_judged_hist))
        bad = "seqlen_kv_judged_hist";
    if (!bad && read_timeline(o, st)) bad = "timeline";
    char mode[32] = "";
    if (!bad && (af_json_get_text(o, "backend", st->backend, sizeof st->backend) ||
                 af_json_get_text(o, "engine", st->engine, sizeof st->engine) ||
                 af_json_get_text(o, "mode", mode, sizeof mode)))
        bad = "backend/engine/mode";
    if (bad) {
        snprintf(why, cap, "%s: key '%s' missing or malformed", path, bad);
        json_decref(o);
        return -1;
    }
    st->mode = known_mode(mode);
    /* keys newer campaigns write; an older stats.json has none of them */
    st->interrupted = json_is_true(json_object_get(o, "interrupted"));
    af_json_get_text(o, "shard", st->shard, sizeof st->shard);
    long long v;
    if (get_count(o, "resumed", &v) == 0 && v < 1000000) st->resumed = (int)v;
    if (get_count(o, "shards_merged", &v) == 0 && v < 1000000) st->shards_merged = (int)v;
    if (get_count(o, "judge_timeouts", &v) == 0) st->judge_timeouts = v;
    if (get_count(o, "prepared_ahead", &v) == 0) st->prepared_ahead = v;
    if (get_count(o, "plans_from_disk", &v) == 0) st->plans_from_disk = v;
    if (get_count(o, "plans_to_disk", &v) == 0) st->plans_to_disk = v;
    /* the cp comm types' counts (stats.c cp_counts), where present */
    json_t *cpc = json_object_get(o, "cp_cases"), *cpd = json_object_get(o, "cp_declined");
    for (int k = AF_CP_NONE; k <= AF_CP_A2A_P2P; k++) {
        const char *name = k == AF_CP_NONE ? "1" : af_cp_comm_name((af_cp_comm)k);
        json_t *a = json_object_get(cpc, name), *d = json_object_get(cpd, name);
        if (json_is_integer(a) && json_integer_value(a) >= 0) st->cp_cases[k] = json_integer_value(a);
        if (json_is_integer(d) && json_integer_value(d) >= 0) st->cp_declined[k] = json_integer_value(d);
    }
    if (get_count(o, "interrupted_cases", &v) == 0 && v < 1000000) st->interrupted_cases = (int)v;
    if (get_count(o, "dropout_kernel_cases", &v) == 0) st->dropout_kernel_cases = v; /* optional: newer */
    json_t *fields = json_object_get(o, "case_fields");                              /* optional: newer */
    for (int f = 0; f < AF_CF_COUNT; f++) {
        json_t *n = json_object_get(fields, af_case_field_row((af_case_field)f)->name);
        if (json_is_integer(n) && json_integer_value(n) >= 0) st->field_cases[f] = json_integer_value(n);
    }
    if (get_count(o, "deduplicated", &v) == 0 && v < 2147483647LL) st->deduplicated = (int)v; /* optional: newer */
    if (read_gpus(o, st)) {
        snprintf(why, cap, "%s: key 'gpus' / 'gpu_cases' malformed", path);
        json_decref(o);
        return -1;
    }
    json_decref(o);
    read_config_cells(dir, st);
    return 0;
}
