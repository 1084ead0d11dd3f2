/* findings.c — the findings directory: one bucket per signature, deduplicated.
 *
 * DIR/findings/<bucket>/{finding.case, original.case, verdict.json, heatmap.txt,
 * heatmap.png, leak.txt, leak.png}; see attnfuzz/triage.h. Several campaign workers
 * may store into one DIR at once: each bucket is locked with flock on its .lock file
 * and every file is replaced by rename, so readers never see half a file.
 */
#include "judge/signature.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "model/case_measure.h"
#include "judge/evidence.h"
#include "triage/picture.h"
#include "triage/findings.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "judge/verdict_json.h"
#include "triage/src/triage_internal.h"

#define CASE_TEXT_MAX 8192

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void iso_time(double unix_seconds, char *buf, size_t cap) {
    time_t t = (time_t)unix_seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* What a bucket keeps across duplicates. */
typedef struct {
    long long count;
    double first_seen_unix, last_seen_unix;
    double time_to_first_seconds; /* < 0 unknown */
} bucket_history;

/* verdict.json = af_json_verdict's object with the triage keys appended. */
static char *verdict_json_text(const char *bucket, const char *signature, const af_case *c, const af_verdict *v,
                               const char *repro, const bucket_history *hist, bool has_original, bool has_heatmap,
                               bool has_leak, size_t *len_out) {
    char case_path[64], cls[256], line[1024], first_seen[32];
    snprintf(case_path, sizeof case_path, "findings/%s/finding.case", bucket);
    char *head = NULL;
    size_t head_len = 0;
    FILE *f = open_memstream(&head, &head_len);
    if (!f) return NULL;
    af_json_verdict(f, case_path, v);
    if (fclose(f) != 0 || head_len == 0 || head[head_len - 1] != '}') {
        free(head);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    f = open_memstream(&text, &len);
    if (!f) { free(head); return NULL; }
    fwrite(head, 1, head_len - 1, f); /* the object without its closing brace */
    free(head);
    af_config_class(c, cls, sizeof cls);
    af_verdict_line(v, line, sizeof line);
    iso_time(hist->first_seen_unix, first_seen, sizeof first_seen);
    fputs(",\"signature\":", f);
    af_json_string(f, signature);
    fputs(",\"bucket\":", f);
    af_json_string(f, bucket);
    fputs(",\"config_class\":", f);
    af_json_string(f, cls);
    fputs(",\"tensor\":", f);
    af_json_string(f, v->n_findings > 0 ? af_tensor_name(v->findings[0].tensor) : "-");
    fputs(",\"verdict_line\":", f);
    af_json_string(f, line);
    fprintf(f, ",\"count\":%lld,\"first_seen\":", hist->count);
    af_json_string(f, first_seen);
    fprintf(f, ",\"first_seen_unix\":%.3f,\"last_seen_unix\":%.3f,\"time_to_first_seconds\":",
            hist->first_seen_unix, hist->last_seen_unix);
    af_json_number(f, hist->time_to_first_seconds >= 0 ? hist->time_to_first_seconds : NAN);
    fputs(",\"case_cost\":", f);
    af_json_number(f, af_case_cost(c));
    fputs(",\"repro\":", f);
    af_json_string(f, repro);
    fprintf(f, ",\"original_case\":%s,\"heatmap\":%s,\"leak\":%s}\n", has_original ? "\"original.case\"" : "null",
            has_heatmap ? "\"heatmap.png\"" : "null", has_leak ? "\"leak.png\"" : "null");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    *len_out = strlen(text);
    return text;
}

/* Replace the raw value of a top-level key; returns a new malloc'ed text or NULL. */
static char *splice_value(const char *json, const char *key, const char *raw) {
    const char *v;
    size_t n;
    if (jr_top_raw(json, key, &v, &n)) return NULL;
    size_t head = (size_t)(v - json), rl = strlen(raw), tail = strlen(v + n);
    char *out = malloc(head + rl + tail + 1);
    if (!out) return NULL;
    memcpy(out, json, head);
    memcpy(out + head, raw, rl);
    memcpy(out + head + rl, v + n, tail + 1);
    return out;
}

static int splice_in_place(char **json, const char *key, const char *raw) {
    char *next = splice_value(*json, key, raw);
    if (!next) return -1;
    free(*json);
    *json = next;
    return 0;
}

/* "Smaller" reproducer: lower cost, then shorter canonical text, then text order (so
 * the choice does not depend on which worker stored first). */
static int compare_cases(const af_case *a, const af_case *b) {
    double ca = af_case_cost(a), cb = af_case_cost(b);
    if (ca != cb) return ca < cb ? -1 : 1;
    char ta[CASE_TEXT_MAX], tb[CASE_TEXT_MAX];
    size_t na = af_case_print(a, ta, sizeof ta), nb = af_case_print(b, tb, sizeof tb);
    if (na != nb) return na < nb ? -1 : 1;
    return strcmp(ta, tb);
}

static void remove_in(const char *bucket_dir, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", bucket_dir, name);
    remove(path);
}

/* Write finding.case, original.case, pictures and verdict.json for case c. */
static int write_bucket(const char *bucket_dir, const char *bucket, const char *signature, const af_case *c,
                        const af_verdict *v, const af_finding_extra *x, const char *repro, const bucket_history *hist,
                        char *why, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/finding.case", bucket_dir);
    if (af_case_save(c, path)) { snprintf(why, cap, "%s: cannot write", path); return -1; }
    bool has_original = x && x->original;
    if (has_original) {
        snprintf(path, sizeof path, "%s/original.case", bucket_dir);
        if (af_case_save(x->original, path)) { snprintf(why, cap, "%s: cannot write", path); return -1; }
    } else {
        remove_in(bucket_dir, "original.case");
    }
    bool has_heatmap = x && x->heatmap && x->heatmap->cells && x->heatmap->rows > 0 && x->heatmap->cols > 0;
    if (has_heatmap) {
        snprintf(path, sizeof path, "%s/heatmap.txt", bucket_dir);
        if (af_heatmap_save(x->heatmap, path)) { snprintf(why, cap, "%s: cannot write", path); return -1; }
        snprintf(path, sizeof path, "%s/heatmap.png", bucket_dir);
        if (af_heatmap_png(x->heatmap, path)) { snprintf(why, cap, "%s: cannot write", path); return -1; }
    } else {
        remove_in(bucket_dir, "heatmap.txt");
        remove_in(bucket_dir, "heatmap.png");
    }
    bool has_leak = x && x->leaks && x->leaks->cells && x->leaks->rows > 0 && x->leaks->cols > 0;
    if (has_leak) {
        snprintf(path, sizeof path, "%s/leak.txt", bucket_dir);
        if (af_leak_save(x->leaks, path)) { snprintf(why, cap, "%s: cannot write", path); return -1; }
        snprintf(path, sizeof path, "%s/leak.png", bucket_dir);
        if (af_leak_png(x->leaks, path)) { snprintf(why, cap, "%s: cannot write", path); return -1; }
    } else {
        remove_in(bucket_dir, "leak.txt");
        remove_in(bucket_dir, "leak.png");
    }
    size_t len = 0;
    char *json = verdict_json_text(bucket, signature, c, v, repro, hist, has_original, has_heatmap, has_leak, &len);
    snprintf(path, sizeof path, "%s/verdict.json", bucket_dir);
    int rc = json ? af_write_file_atomic(path, json, len, NULL, 0) : -1;
    free(json);
    if (rc) snprintf(why, cap, "%s: cannot write", path);
    return rc;
}

int af_finding_store(const char *dir, const af_case *c0, const af_verdict *v, const af_finding_extra *x,
                     char *bucket_out, char *why, size_t cap) {
    char signature[AF_SIGNATURE_MAX], bucket[AF_BUCKET_ID_LEN + 1];
    if (v->kind == AF_V_PASS) {
        snprintf(why, cap, "a passing verdict is not a finding");
        return -1;
    }
    af_signature(c0, v, signature, sizeof signature);
    af_bucket_id(signature, bucket);
    if (bucket_out) memcpy(bucket_out, bucket, sizeof bucket);

    /* The stored reproducer names the backend and engine that failed, so that
     * `attnfuzz repro` needs nothing else. */
    af_case c = *c0;
    if (v->backend[0]) snprintf(c.backend, sizeof c.backend, "%s", v->backend);
    if (v->info.engine[0]) snprintf(c.engine, sizeof c.engine, "%s", v->info.engine);

    char bucket_dir[1024];
    if (snprintf(bucket_dir, sizeof bucket_dir, "%s/findings/%s", dir, bucket) >= (int)sizeof bucket_dir - 32) {
        snprintf(why, cap, "%s: path too long", dir);
        return -1;
    }
    if (af_mkdirs(bucket_dir, why, cap)) return -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/.lock", bucket_dir);
    int lock = open(path, O_CREAT | O_RDWR, 0644);
    if (lock < 0) { snprintf(why, cap, "%s: %s", path, strerror(errno)); return -1; }
    while (flock(lock, LOCK_EX) != 0)
        if (errno != EINTR) { snprintf(why, cap, "flock %s: %s", path, strerror(errno)); close(lock); return -1; }

    char repro[1100];
    if (x && x->repro && x->repro[0]) snprintf(repro, sizeof repro, "%s", x->repro);
    else snprintf(repro, sizeof repro, "attnfuzz repro %s/finding.case", bucket_dir);
    double now = af_clock_unix();
    double ttf = x && x->time_to_first_seconds > 0 ? x->time_to_first_seconds : -1;

    snprintf(path, sizeof path, "%s/verdict.json", bucket_dir);
    char *old_json = tr_read_file(path, NULL);
    af_case old_case;
    af_error err;
    char case_path[1200];
    snprintf(case_path, sizeof case_path, "%s/finding.case", bucket_dir);
    double old_count = 0;
    int rc;
    if (!old_json || jr_top_number(old_json, "count", &old_count) || af_case_load(case_path, &old_case, &err)) {
        /* new bucket (or a broken one, which the new finding repairs) */
        bucket_history hist = {1, now, now, ttf};
        rc = write_bucket(bucket_dir, bucket, signature, &c, v, x, repro, &hist, why, cap) ? -1 : 1;
    } else {
        bucket_history hist = {(long long)old_count + 1, now, now, ttf};
        double t;
        if (jr_top_number(old_json, "first_seen_unix", &t) == 0 && t < hist.first_seen_unix) hist.first_seen_unix = t;
        if (jr_top_number(old_json, "time_to_first_seconds", &t) == 0 && t >= 0 && (ttf < 0 || t < ttf))
            hist.time_to_first_seconds = t;
        if (compare_cases(&c, &old_case) < 0) {
            rc = write_bucket(bucket_dir, bucket, signature, &c, v, x, repro, &hist, why, cap) ? -1 : 0;
        } else {
            /* keep the stored reproducer; update the history keys only */
            char num[64], iso[32], quoted[40];
            int bad = 0;
            snprintf(num, sizeof num, "%lld", hist.count);
            bad |= splice_in_place(&old_json, "count", num);
            snprintf(num, sizeof num, "%.3f", hist.last_seen_unix);
            bad |= splice_in_place(&old_json, "last_seen_unix", num);
            snprintf(num, sizeof num, "%.3f", hist.first_seen_unix);
            bad |= splice_in_place(&old_json, "first_seen_unix", num);
            iso_time(hist.first_seen_unix, iso, sizeof iso);
            snprintf(quoted, sizeof quoted, "\"%s\"", iso);
            bad |= splice_in_place(&old_json, "first_seen", quoted);
            if (hist.time_to_first_seconds >= 0) {
                snprintf(num, sizeof num, "%.17g", hist.time_to_first_seconds);
                bad |= splice_in_place(&old_json, "time_to_first_seconds", num);
            }
            if (bad || af_write_file_atomic(path, old_json, strlen(old_json), NULL, 0)) {
                snprintf(why, cap, "%s: cannot update", path);
                rc = -1;
            } else {
                rc = 0;
            }
        }
    }
    free(old_json);
    flock(lock, LOCK_UN);
    close(lock);
    return rc;
}

/* ---- reading back ---------------------------------------------------------------- */

static bool is_bucket_name(const char *s) {
    if (strlen(s) != AF_BUCKET_ID_LEN) return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
    return true;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp((const char *)a, (const char *)b);
}

/* Fill a record from a bucket directory. 0, or -1 with why. */
static int read_bucket(const char *bucket_dir, const char *name, af_finding_record *r, char *why, size_t cap) {
    memset(r, 0, sizeof *r);
    snprintf(r->bucket, sizeof r->bucket, "%s", name);
    snprintf(r->dir, sizeof r->dir, "%s", bucket_dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/verdict.json", bucket_dir);
    r->verdict_json = tr_read_file(path, NULL);
    if (!r->verdict_json) { snprintf(why, cap, "%s: cannot read", path); return -1; }
    const char *j = r->verdict_json;
    double count = 0;
    if (!jr_valid(j) || jr_top_string(j, "signature", r->signature, sizeof r->signature) ||
        jr_top_number(j, "count", &count)) {
        snprintf(why, cap, "%s: not a triage verdict (needs signature and count)", path);
        return -1;
    }
    r->count = (long long)count;
    /* optional keys: absent ones stay empty / unknown */
    jr_top_string(j, "config_class", r->config_class, sizeof r->config_class);
    jr_top_string(j, "verdict", r->kind, sizeof r->kind);
    jr_top_string(j, "backend", r->backend, sizeof r->backend);
    jr_top_string(j, "engine", r->engine, sizeof r->engine);
    jr_top_string(j, "tensor", r->tensor, sizeof r->tensor);
    jr_top_string(j, "verdict_line", r->verdict_line, sizeof r->verdict_line);
    jr_top_string(j, "repro", r->repro, sizeof r->repro);
    jr_top_string(j, "first_seen", r->first_seen, sizeof r->first_seen);
    r->first_seen_unix = r->last_seen_unix = NAN;
    r->time_to_first_seconds = -1;
    jr_top_number(j, "first_seen_unix", &r->first_seen_unix);
    jr_top_number(j, "last_seen_unix", &r->last_seen_unix);
    if (jr_top_number(j, "time_to_first_seconds", &r->time_to_first_seconds) || isnan(r->time_to_first_seconds))
        r->time_to_first_seconds = -1;
    r->case_cost = NAN;
    jr_top_number(j, "case_cost", &r->case_cost);
    snprintf(path, sizeof path, "%s/finding.case", bucket_dir);
    r->case_text = tr_read_file(path, NULL);
    if (!r->case_text) { snprintf(why, cap, "%s: cannot read", path); return -1; }
    snprintf(path, sizeof path, "%s/original.case", bucket_dir);
    r->has_original = file_exists(path);
    snprintf(path, sizeof path, "%s/heatmap.txt", bucket_dir);
    r->has_heatmap = file_exists(path);
    snprintf(path, sizeof path, "%s/leak.txt", bucket_dir);
    r->has_leak = file_exists(path);
    return 0;
}

int af_findings_scan(const char *dir, af_finding_visit visit, void *user, char *why, size_t cap) {
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "%s: not a directory", dir);
        return -1;
    }
    char findings[1024];
    snprintf(findings, sizeof findings, "%s/findings", dir);
    DIR *d = opendir(findings);
    if (!d) return 0; /* no findings yet */
    char (*names)[AF_BUCKET_ID_LEN + 1] = NULL;
    size_t n = 0, cap_names = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_bucket_name(e->d_name)) continue;
        if (n == cap_names) {
            cap_names = cap_names ? cap_names * 2 : 64;
            void *bigger = realloc(names, cap_names * sizeof *names);
            if (!bigger) {
                free(names);
                closedir(d);
                snprintf(why, cap, "out of memory");
                return -1;
            }
            names = bigger;
        }
        snprintf(names[n++], AF_BUCKET_ID_LEN + 1, "%s", e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    int visited = 0;
    for (size_t i = 0; i < n; i++) {
        char bucket_dir[1024], problem[1400];
        snprintf(bucket_dir, sizeof bucket_dir, "%s/%s", findings, names[i]);
        af_finding_record *r = malloc(sizeof *r);
        if (!r) break;
        int stop = 0;
        if (read_bucket(bucket_dir, names[i], r, problem, sizeof problem) == 0) {
            visited++;
            stop = visit ? visit(r, user) : 0;
        } else {
            fprintf(stderr, "attnfuzz triage: skipping %s\n", problem);
        }
        free(r->case_text);
        free(r->verdict_json);
        free(r);
        if (stop) break;
    }
    free(names);
    return visited;
}
