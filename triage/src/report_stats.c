/* report_stats.c — DIR/stats.json read back for the report's summary page. */
#include "triage/src/triage_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"
#include "util/json.h"

static long long get_count(const json_t *o, const char *key) {
    double x = 0;
    if (af_json_get_number(o, key, &x) || !(x >= 0 && x < 9.0e15)) return 0;
    return (long long)x;
}

static double get_real(const json_t *o, const char *key, double absent) {
    double x = absent;
    if (af_json_get_number(o, key, &x) || isnan(x)) return absent;
    return x;
}

/* seqlen_*_hist: objects keyed "1", "2-3", ... in log2 order (as written). */
static void read_hist(const json_t *o, const char *key, tr_campaign_stats *s, long long *out) {
    const json_t *h = json_object_get(o, key);
    if (!json_is_object(h)) return;
    int b = 0;
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)h, name, v) {
        if (b >= TR_SEQLEN_BUCKETS) break;
        /* jansson keeps insertion order: the writer's bucket order */
        snprintf(s->seqlen_keys[b], sizeof s->seqlen_keys[b], "%s", name);
        out[b] = json_is_integer(v) && json_integer_value(v) > 0 ? (long long)json_integer_value(v) : 0;
        b++;
    }
    if (b > s->seqlen_buckets) s->seqlen_buckets = b;
}

static void read_timeline(const json_t *o, tr_campaign_stats *s) {
    const json_t *points = json_object_get(json_object_get(o, "timeline"), "points");
    size_t i;
    const json_t *p;
    json_array_foreach(points, i, p) {
        if (s->timeline_n >= TR_TIMELINE_MAX) break;
        if (!json_is_array(p) || json_array_size(p) != 3) continue;
        double t = json_number_value(json_array_get(p, 0));
        double cases = json_number_value(json_array_get(p, 1)), found = json_number_value(json_array_get(p, 2));
        if (!(t >= 0) || !(cases >= 0) || !(found >= 0)) continue;
        s->timeline_s[s->timeline_n] = t;
        s->timeline_cases[s->timeline_n] = (long long)cases;
        s->timeline_findings[s->timeline_n] = (long long)found;
        s->timeline_n++;
    }
}

void tr_stats_read(const char *dir, tr_campaign_stats *s) {
    memset(s, 0, sizeof *s);
    s->time_to_first_finding_s = -1;
    char path[1200], why[1500];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    if (!af_is_regular_file(path)) return; /* not a campaign directory (or a planted link) */
    char *text = NULL;
    if (af_read_file_inside(dir, path, (size_t)16 << 20, &text, NULL, why, sizeof why)) {
        fprintf(stderr, "attnfuzz triage: %s\n", why);
        return;
    }
    json_t *o = af_json_parse_object(text, path, why, sizeof why);
    free(text);
    if (!o) {
        fprintf(stderr, "attnfuzz triage: %s (summary without campaign figures)\n", why);
        return;
    }
    s->present = true;
    af_json_get_text(o, "backend", s->backend, sizeof s->backend);
    af_json_get_text(o, "engine", s->engine, sizeof s->engine);
    af_json_get_text(o, "mode", s->mode, sizeof s->mode);
    af_json_get_text(o, "start_time", s->start_time, sizeof s->start_time);
    s->elapsed_s = get_real(o, "elapsed_s", 0);
    s->cases_per_s = get_real(o, "cases_per_s", 0);
    s->time_to_first_finding_s = get_real(o, "time_to_first_finding_s", -1);
    s->cases = get_count(o, "cases");
    s->findings = get_count(o, "findings");
    s->declined = get_count(o, "declined");
    s->errors = get_count(o, "errors");
    s->crashes = get_count(o, "crashes");
    s->hangs = get_count(o, "hangs");
    s->corpus = get_count(o, "corpus");
    s->write_errors = get_count(o, "write_errors");
    s->findings_unstored = get_count(o, "findings_unstored");
    s->jobs = get_count(o, "jobs");
    s->config_cells = get_count(o, "config_cells");
    s->config_cells_total = get_count(o, "config_cells_total");
    read_hist(o, "seqlen_q_hist", s, s->seqlen_q_hist);
    read_hist(o, "seqlen_kv_hist", s, s->seqlen_kv_hist);
    read_timeline(o, s);
    json_decref(o);
}
