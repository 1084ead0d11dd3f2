/* campaign/merge.c — campaign directories merged into one (campaign/merge.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "campaign/campaign.h"
#include "campaign/corpus_merge.h"
#include "campaign/dirlock.h"
#include "campaign/merge.h"
#include "campaign/provenance.h"
#include "campaign/stats.h"
#include "triage/findings.h"
#include "triage/report.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/json.h"

#define MERGE_FILE_MAX  (256u << 20) /* a bucket's largest file (heatmap.png) copied at most */
#define REPRO_WORDS_MAX 32           /* words of a Reproduce line after its case path */

typedef struct {
    const char *out;
    char *why;
    size_t cap;
    af_merge_summary *sum;
} merge_ctx;

/* path's bytes, malloc'ed (*n bytes). NULL with why. */
static char *read_all(const char *path, size_t *n, char *why, size_t cap) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > MERGE_FILE_MAX) {
        snprintf(why, cap, "%s: cannot read (%s)", path, f ? "not a regular file below 256 MiB" : strerror(errno));
        if (f) fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    *n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf || *n != (size_t)st.st_size) {
        snprintf(why, cap, "%s: short read", path);
        free(buf);
        return NULL;
    }
    buf[*n] = 0;
    return buf;
}

static int copy_file(const char *from, const char *to, char *why, size_t cap) {
    size_t n;
    char *data = read_all(from, &n, why, cap);
    if (!data) return -1;
    int rc = af_write_file_atomic(to, data, n, why, cap);
    free(data);
    return rc;
}

/* Every regular file of from_dir into to_dir (created), except skip (NULL = none). */
static int copy_dir_files(const char *from_dir, const char *to_dir, const char *skip, char *why, size_t cap) {
    if (af_mkdirs(to_dir, why, cap)) return -1;
    DIR *d = opendir(from_dir);
    if (!d) {
        snprintf(why, cap, "%s: cannot open: %s", from_dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (e->d_name[0] == '.' || (skip && !strcmp(e->d_name, skip))) continue;
        char from[PATH_MAX], to[PATH_MAX];
        snprintf(from, sizeof from, "%s/%s", from_dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s", to_dir, e->d_name);
        if (af_is_regular_file(from)) rc = copy_file(from, to, why, cap);
    }
    closedir(d);
    return rc;
}

/* Remove the regular files of dir (a bucket about to take another DIR's reproducer). */
static void clear_dir_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && af_is_regular_file(path)) remove(path);
    }
    closedir(d);
}

static void iso_utc(double t, char *buf, size_t cap) {
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static double get_or(const json_t *o, const char *key, double fallback) {
    double x;
    return af_json_get_number(o, key, &x) == 0 && isfinite(x) ? x : fallback;
}

/* verdict.json of the merged bucket: base's keys, the history of both, repro pointing
 * into OUT. 0 or -1 with why. */
static int write_merged_verdict(const char *dst_dir, json_t *base, const json_t *other, const char *why_name, char *why,
                                size_t cap) {
    double count = get_or(base, "count", 0) + (other ? get_or(other, "count", 0) : 0);
    double first = get_or(base, "first_seen_unix", NAN), last = get_or(base, "last_seen_unix", NAN);
    double ttf = get_or(base, "time_to_first_seconds", -1);
    if (other) {
        double f = get_or(other, "first_seen_unix", NAN), l = get_or(other, "last_seen_unix", NAN);
        double t = get_or(other, "time_to_first_seconds", -1);
        if (isfinite(f) && !(f >= first)) first = f;
        if (isfinite(l) && !(l <= last)) last = l;
        if (t >= 0 && (ttf < 0 || t < ttf)) ttf = t;
    }
    char path[PATH_MAX], first_iso[32], repro[2 * PATH_MAX];
    int bad = json_object_set_new(base, "count", json_integer((json_int_t)count));
    if (isfinite(first)) {
        iso_utc(first, first_iso, sizeof first_iso);
        bad |= json_object_set_new(base, "first_seen_unix", af_json_real(first));
        bad |= json_object_set_new(base, "first_seen", json_string(first_iso));
    }
    if (isfinite(last)) bad |= json_object_set_new(base, "last_seen_unix", af_json_real(last));
    if (ttf >= 0) bad |= json_object_set_new(base, "time_to_first_seconds", af_json_real(ttf));
    /* the Reproduce line names the bucket's own path: now the one in OUT, its other
     * words (repro_args) kept, quoted again as af_finding_store quotes them */
    json_t *args = json_object_get(base, "repro_args");
    const char *words[REPRO_WORDS_MAX + 1];
    size_t n_words = 0, i;
    json_t *word;
    json_array_foreach(args, i, word) {
        if (json_is_string(word) && n_words < REPRO_WORDS_MAX) words[n_words++] = json_string_value(word);
    }
    words[n_words] = NULL;
    char case_path[PATH_MAX];
    snprintf(case_path, sizeof case_path, "%s/finding.case", dst_dir);
    if (json_is_array(args) && af_repro_command(case_path, NULL, words, repro, sizeof repro) < sizeof repro)
        bad |= json_object_set_new(base, "repro", json_string(repro));
    char *text = bad ? NULL : json_dumps(base, JSON_COMPACT);
    snprintf(path, sizeof path, "%s/verdict.json", dst_dir);
    if (!text) {
        snprintf(why, cap, "%s: cannot build the merged verdict (%s)", path, why_name);
        return -1;
    }
    af_file_part parts[2] = {{text, strlen(text)}, {"\n", 1}};
    int rc = af_write_parts_atomic(path, parts, 2, why, cap);
    free(text);
    return rc;
}

/* One bucket of a DIR into OUT (af_findings_scan visitor). */
static int merge_bucket(const af_finding_record *r, void *user) {
    merge_ctx *m = user;
    m->sum->buckets_in++;
    char dst[PATH_MAX], dst_json[PATH_MAX], dst_case[PATH_MAX], src_case[PATH_MAX];
    snprintf(dst, sizeof dst, "%s/findings/%s", m->out, r->bucket);
    snprintf(dst_json, sizeof dst_json, "%s/verdict.json", dst);
    snprintf(dst_case, sizeof dst_case, "%s/finding.case", dst);
    snprintf(src_case, sizeof src_case, "%s/finding.case", r->dir);
    json_t *src_verdict = af_json_parse_object(r->verdict_json, r->dir, m->why, m->cap);
    if (!src_verdict) return -1;
    int rc = 0;
    char unread[256];
    json_t *dst_verdict = af_is_regular_file(dst_json) ? af_json_load_object(dst_json, unread, sizeof unread) : NULL;
    af_case a, b;
    af_error err;
    if (!dst_verdict || af_case_load(dst_case, &b, &err)) {
        /* new in OUT */
        rc = copy_dir_files(r->dir, dst, "verdict.json", m->why, m->cap) ||
             write_merged_verdict(dst, src_verdict, NULL, r->bucket, m->why, m->cap);
    } else if (af_case_load(src_case, &a, &err)) {
        af_error_format(&err, m->why, m->cap);
        rc = -1;
    } else if (af_finding_case_order(&a, &b) < 0) {
        /* this DIR's reproducer is the smaller one: its files replace OUT's */
        clear_dir_files(dst);
        rc = copy_dir_files(r->dir, dst, "verdict.json", m->why, m->cap) ||
             write_merged_verdict(dst, src_verdict, dst_verdict, r->bucket, m->why, m->cap);
    } else {
        rc = write_merged_verdict(dst, dst_verdict, src_verdict, r->bucket, m->why, m->cap);
    }
    json_decref(src_verdict);
    json_decref(dst_verdict);
    return rc ? -1 : 0;
}

/* DIR/<sub>'s files into OUT/<sub>; by_content: named by content hash (corpus inputs),
 * else by name, a name already in OUT kept (rawmap). 0 or -1 with why. */
static int merge_flat_dir(const char *dir, const char *out, const char *sub, bool by_content, char *why, size_t cap) {
    char from_dir[PATH_MAX], to_dir[PATH_MAX];
    snprintf(from_dir, sizeof from_dir, "%s/%s", dir, sub);
    snprintf(to_dir, sizeof to_dir, "%s/%s", out, sub);
    if (af_mkdirs(to_dir, why, cap)) return -1;
    DIR *d = opendir(from_dir);
    if (!d) return 0; /* none there */
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        if (e->d_name[0] == '.' || strstr(e->d_name, ".tmp")) continue;
        char from[PATH_MAX], to[PATH_MAX];
        snprintf(from, sizeof from, "%s/%s", from_dir, e->d_name);
        if (!af_is_regular_file(from)) continue;
        size_t n;
        char *data = read_all(from, &n, why, cap);
        if (!data) {
            rc = -1;
            break;
        }
        if (by_content)
            snprintf(to, sizeof to, "%s/%016llx", to_dir, (unsigned long long)af_fnv1a64(data, n));
        else
            snprintf(to, sizeof to, "%s/%s", to_dir, e->d_name);
        if (!af_is_regular_file(to)) rc = af_write_file_atomic(to, data, n, why, cap);
        free(data);
    }
    closedir(d);
    return rc;
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The summed counters of one more DIR's stats. */
static void add_stats(af_campaign_stats *m, const af_campaign_stats *s, bool first) {
    if (first) {
        snprintf(m->backend, sizeof m->backend, "%s", s->backend);
        snprintf(m->engine, sizeof m->engine, "%s", s->engine);
        m->mode = s->mode;
        m->max_work = s->max_work;
        m->start_unix = s->start_unix;
        m->time_to_first_finding_s = s->time_to_first_finding_s;
    }
    if (strcmp(m->backend, s->backend) != 0) snprintf(m->backend, sizeof m->backend, "mixed");
    if (strcmp(m->engine, s->engine) != 0) snprintf(m->engine, sizeof m->engine, "mixed");
    if (s->start_unix < m->start_unix) m->start_unix = s->start_unix;
    if (s->time_to_first_finding_s >= 0 &&
        (m->time_to_first_finding_s < 0 || s->time_to_first_finding_s < m->time_to_first_finding_s))
        m->time_to_first_finding_s = s->time_to_first_finding_s;
    m->elapsed_s += s->elapsed_s;
    m->cases += s->cases;
    m->declined += s->declined;
    m->errors += s->errors;
    m->crashes += s->crashes;
    m->hangs += s->hangs;
    m->judge_timeouts += s->judge_timeouts;
    m->prepared_ahead += s->prepared_ahead;
    m->plans_from_disk += s->plans_from_disk;
    m->plans_to_disk += s->plans_to_disk;
    m->findings += s->findings;
    m->minimised += s->minimised;
    m->unminimised += s->unminimised;
    m->jobs += s->jobs;
    m->interrupted |= s->interrupted;
    m->cudnn_graph_build_seconds += s->cudnn_graph_build_seconds;
    m->plan_cache_hits += s->plan_cache_hits;
    m->plan_cache_misses += s->plan_cache_misses;
    for (int b = 0; b < AF_STATS_SEQLEN_BUCKETS; b++) {
        m->seqlen_q_hist[b] += s->seqlen_q_hist[b];
        m->seqlen_kv_hist[b] += s->seqlen_kv_hist[b];
        m->seqlen_kv_judged_hist[b] += s->seqlen_kv_judged_hist[b];
    }
    for (int i = 0; i < AF_STATS_CONFIG_CELLS / 64; i++) m->config_cells_seen[i] |= s->config_cells_seen[i];
    for (int k = AF_CP_NONE; k <= AF_CP_A2A_P2P; k++) {
        m->cp_cases[k] += s->cp_cases[k];
        m->cp_declined[k] += s->cp_declined[k];
    }
    m->dropout_kernel_cases += s->dropout_kernel_cases;
    for (int f = 0; f < AF_CF_COUNT; f++) m->field_cases[f] += s->field_cases[f];
    /* cases per GPU, summed by CUDA_VISIBLE_DEVICES entry (shards of one node share them) */
    for (int i = 0; i < s->n_gpus; i++) af_stats_note_gpu(m, s->gpus[i], s->gpu_cases[i]);
}

/* DIR/interrupted's cases into OUT/interrupted as d<index>-<name> (each DIR's kept). */
static int merge_interrupted(const char *dir, const char *out, int index, char *why, size_t cap) {
    char from_dir[PATH_MAX], to_dir[PATH_MAX];
    snprintf(from_dir, sizeof from_dir, "%s/interrupted", dir);
    snprintf(to_dir, sizeof to_dir, "%s/interrupted", out);
    DIR *d = opendir(from_dir);
    if (!d) return 0; /* none there */
    int rc = af_mkdirs(to_dir, why, cap);
    for (struct dirent *e; rc == 0 && (e = readdir(d));) {
        char from[PATH_MAX], to[PATH_MAX];
        snprintf(from, sizeof from, "%s/%s", from_dir, e->d_name);
        snprintf(to, sizeof to, "%s/d%d-%s", to_dir, index, e->d_name);
        if (e->d_name[0] != '.' && af_is_regular_file(from)) rc = copy_file(from, to, why, cap);
    }
    closedir(d);
    return rc;
}

/* One DIR into OUT: its pending findings stored, its buckets, corpus, rawmap, stats. */
static int merge_one(merge_ctx *m, const char *dir, af_campaign_stats *merged, af_campaign_stats *scratch) {
    int recovered = af_campaign_recover_pending(dir, m->why, m->cap);
    if (recovered < 0) return -1;
    if (recovered > 0)
        fprintf(stderr, "attnfuzz merge: %d finding(s) left in %s/pending by a killed campaign: stored unminimised\n",
                recovered, dir);
    int rc = af_stats_read(dir, scratch, m->why, m->cap);
    if (rc == 1) snprintf(m->why, m->cap, "%s: not a campaign directory (no stats.json)", dir);
    if (rc) return -1;
    add_stats(merged, scratch, m->sum->dirs == 0);
    if (af_findings_scan(dir, merge_bucket, m, m->why, m->cap) < 0) return -1;
    if (merge_flat_dir(dir, m->out, "corpus", true, m->why, m->cap)) return -1;
    if (merge_flat_dir(dir, m->out, "rawmap", false, m->why, m->cap)) return -1;
    if (merge_flat_dir(dir, m->out, "coverage", false, m->why, m->cap)) return -1;
    if (merge_interrupted(dir, m->out, m->sum->dirs, m->why, m->cap)) return -1;
    m->sum->dirs++;
    m->sum->cases += scratch->cases;
    return 0;
}

/* OUT may not hold a campaign or an earlier merge (their counts would add up twice). */
static int check_out(const char *out, const char *const *dirs, int n, char *why, size_t cap) {
    char path[PATH_MAX], real_out[PATH_MAX], real_dir[PATH_MAX];
    snprintf(path, sizeof path, "%s/stats.json", out);
    struct stat st;
    if (stat(path, &st) == 0) {
        snprintf(why, cap, "%s already holds a campaign or a merge (stats.json): merge into a new directory", out);
        return -1;
    }
    snprintf(path, sizeof path, "%s/findings", out);
    if (count_entries(path) > 0) {
        snprintf(why, cap, "%s already holds findings: merge into a new directory", out);
        return -1;
    }
    if (af_campaign_check_subdirs(out, why, cap)) return -1; /* nothing written through a symlink */
    if (!realpath(out, real_out)) {
        snprintf(why, cap, "%s: %s", out, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (realpath(dirs[i], real_dir) && !strcmp(real_dir, real_out)) {
            snprintf(why, cap, "%s is both OUT and a DIR to merge", dirs[i]);
            return -1;
        }
    return 0;
}

int af_campaign_merge(const char *out, const char *const *dirs, int n, af_merge_summary *sum, char *why, size_t cap) {
    memset(sum, 0, sizeof *sum);
    if (af_mkdirs(out, why, cap)) return AF_MERGE_ERROR;
    af_dir_lock out_lock;
    int lrc = af_dir_lock_acquire(&out_lock, out, why, cap);
    if (lrc != AF_DIR_LOCK_OK) return lrc == AF_DIR_LOCK_BUSY ? AF_MERGE_BUSY : AF_MERGE_ERROR;
    af_campaign_stats *merged = calloc(1, sizeof *merged), *scratch = calloc(1, sizeof *scratch);
    int rc = merged && scratch ? check_out(out, dirs, n, why, cap) : -1;
    if (!merged || !scratch) snprintf(why, cap, "out of memory");
    if (rc == 0) {
        char findings[PATH_MAX];
        snprintf(findings, sizeof findings, "%s/findings", out);
        rc = af_mkdirs(findings, why, cap);
    }
    if (merged) merged->time_to_first_finding_s = -1;
    merge_ctx m = {out, why, cap, sum};
    for (int i = 0; rc == 0 && i < n; i++) {
        af_dir_lock lock;
        lrc = af_dir_lock_acquire(&lock, dirs[i], why, cap);
        if (lrc != AF_DIR_LOCK_OK) {
            rc = lrc == AF_DIR_LOCK_BUSY ? AF_MERGE_BUSY : AF_MERGE_ERROR;
            break;
        }
        if (merge_one(&m, dirs[i], merged, scratch)) rc = AF_MERGE_ERROR;
        af_dir_lock_release(&lock);
    }
    if (rc == 0) {
        char path[PATH_MAX];
        af_triage_summary ts;
        merged->shards_merged = n;
        /* the united corpus minimised: inputs adding coverage or a config cell */
        af_fuzz_limits limits;
        af_fuzz_limits_default(&limits);
        if (merged->max_work >= 1024) af_fuzz_limits_set_work(&limits, merged->max_work);
        af_corpus_merge_summary cm;
        if (af_corpus_merge(out, &limits, &cm, why, cap)) rc = AF_MERGE_ERROR;
        sum->corpus_united = cm.before;
        snprintf(path, sizeof path, "%s/corpus", out);
        merged->corpus = sum->corpus = count_entries(path);
        snprintf(path, sizeof path, "%s/interrupted", out);
        merged->interrupted_cases = count_entries(path);
        /* the shards' provenance (their runs) for the reports */
        if (!rc && af_provenance_merge(out, dirs, n, why, cap)) rc = AF_MERGE_ERROR;
        /* the timeline of the reports: the dirs' plot_data summed over time */
        if (!rc && af_plot_merge(out, dirs, n, why, cap)) rc = AF_MERGE_ERROR;
        /* the reports first: they read stats.json; then the bucket count they found */
        if (rc || af_stats_write(out, merged, why, cap) || af_triage_build(out, &ts, why, cap)) {
            rc = AF_MERGE_ERROR;
        } else {
            merged->buckets = sum->buckets = ts.buckets;
            sum->findings = ts.findings;
            if (af_stats_write(out, merged, why, cap) || af_triage_build(out, &ts, why, cap)) rc = AF_MERGE_ERROR;
        }
    }
    free(merged);
    free(scratch);
    af_dir_lock_release(&out_lock);
    return rc;
}
