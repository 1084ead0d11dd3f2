/* findings.c — the findings directory: one bucket per signature, deduplicated.
 *
 * DIR/findings/<bucket>/{finding.case, original.case, verdict.json, heatmap.txt,
 * heatmap.png, leak.txt, leak.png}; see triage/findings.h. Several campaign workers
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
#include "util/json.h"
#include "util/shquote.h"

#define CASE_TEXT_MAX 8192

/* A bucket's optional file counts only as a regular file (util/fsutil.h: a symlink
 * planted in its place is not one, and triage never reads through it). */
static bool file_exists(const char *path) { return af_is_regular_file(path); }

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

/* A bucket's count: a whole number of findings (the writer stores an integer). 0 or -1. */
static int read_count(const json_t *root, long long *out) {
    double count;
    if (af_json_get_number(root, "count", &count) || !(count >= 0 && count <= 9007199254740992.0) ||
        count != floor(count))
        return -1;
    *out = (long long)count;
    return 0;
}

/* verdict.json = af_verdict_to_json's object with the triage keys appended. New
 * reference, or NULL when out of memory. */
static json_t *verdict_json(const char *bucket, const char *signature, const af_case *c, const af_verdict *v,
                            const char *repro, const char *const *repro_words, const bucket_history *hist,
                            bool has_original, bool has_heatmap, bool has_leak) {
    char case_path[64], cls[256], line[1024], first_seen[32];
    snprintf(case_path, sizeof case_path, "findings/%s/finding.case", bucket);
    af_config_class(c, cls, sizeof cls);
    af_verdict_line(v, line, sizeof line);
    iso_time(hist->first_seen_unix, first_seen, sizeof first_seen);
    json_t *triage_keys = json_pack(
        "{s:o, s:s, s:o, s:s, s:o, s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "signature",
        af_json_text(signature), "bucket", bucket, "config_class", af_json_text(cls), "tensor",
        v->n_findings > 0 ? af_tensor_name(v->findings[0].tensor) : "-", "verdict_line", af_json_text(line), "count",
        (json_int_t)hist->count, "first_seen", first_seen, "first_seen_unix", af_json_real(hist->first_seen_unix),
        "last_seen_unix", af_json_real(hist->last_seen_unix), "time_to_first_seconds",
        af_json_real(hist->time_to_first_seconds >= 0 ? hist->time_to_first_seconds : NAN), "case_cost",
        af_json_real(af_case_cost(c)), "repro", af_json_text(repro), "original_case",
        has_original ? json_string("original.case") : json_null(), "heatmap",
        has_heatmap ? json_string("heatmap.png") : json_null(), "leak",
        has_leak ? json_string("leak.png") : json_null());
    json_t *args = json_array();
    for (int i = 0; args && repro_words[i]; i++) json_array_append_new(args, af_json_text(repro_words[i]));
    bool keys_ok = triage_keys && args && json_object_set_new(triage_keys, "repro_args", args) == 0;
    if (!triage_keys) json_decref(args); /* else the object took it, also on failure */
    json_t *root = af_verdict_to_json(case_path, v);
    if (!root || !keys_ok || json_object_update(root, triage_keys) != 0) {
        json_decref(root);
        root = NULL;
    }
    json_decref(triage_keys);
    return root;
}

/* The history keys of a stored verdict.json, updated in place. 0 or -1 (out of memory). */
static int update_history(json_t *root, const bucket_history *hist) {
    char first_seen[32];
    iso_time(hist->first_seen_unix, first_seen, sizeof first_seen);
    int bad = json_object_set_new(root, "count", json_integer((json_int_t)hist->count));
    bad |= json_object_set_new(root, "last_seen_unix", af_json_real(hist->last_seen_unix));
    bad |= json_object_set_new(root, "first_seen_unix", af_json_real(hist->first_seen_unix));
    bad |= json_object_set_new(root, "first_seen", json_string(first_seen));
    if (hist->time_to_first_seconds >= 0)
        bad |= json_object_set_new(root, "time_to_first_seconds", af_json_real(hist->time_to_first_seconds));
    return bad ? -1 : 0;
}

/* root as one compact line, written via path.tmp + rename. 0 or -1. */
static int write_json_file(const char *path, const json_t *root) {
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    if (!text) return -1;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return -1;
    }
    line[n] = '\n';
    line[n + 1] = 0;
    int rc = af_write_file_atomic(path, line, n + 1, NULL, 0);
    free(line);
    return rc;
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

int af_finding_case_order(const af_case *a, const af_case *b) { return compare_cases(a, b); }

/* why = "write PATH: <the system's reason>" (errno of the failed write). */
static void cannot_write(const char *path, char *why, size_t cap) {
    int err = errno ? errno : EIO;
    snprintf(why, cap, "write %s: %s", path, strerror(err));
}

static void remove_in(const char *bucket_dir, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", bucket_dir, name);
    remove(path);
}

#define REPRO_ARGS_MAX 24 /* --backend NAME and the caller's options */

/* The words of a Reproduce line after its case path: --backend NAME (when named), then
 * options, into args (NULL-terminated, REPRO_ARGS_MAX + 1 entries). */
static void repro_args(const char *backend, const char *const *options, const char **args) {
    int n = 0;
    if (backend && backend[0]) {
        args[n++] = "--backend";
        args[n++] = backend;
    }
    for (int i = 0; options && options[i] && n < REPRO_ARGS_MAX; i++) args[n++] = options[i];
    args[n] = NULL;
}

/* `attnfuzz repro CASE ARGS...` quoted for sh into out ("" when it does not fit). */
static size_t repro_line(const char *case_path, const char *const *args, char *out, size_t cap) {
    const char *words[3 + REPRO_ARGS_MAX + 1] = {"attnfuzz", "repro", case_path};
    int n = 3;
    for (int i = 0; args[i] && n < 3 + REPRO_ARGS_MAX; i++) words[n++] = args[i];
    words[n] = NULL;
    return af_shell_join(words, out, cap);
}

size_t af_repro_command(const char *case_path, const char *backend, const char *const *options, char *out, size_t cap) {
    const char *args[REPRO_ARGS_MAX + 1];
    repro_args(backend, options, args);
    return repro_line(case_path, args, out, cap);
}

/* Write finding.case, original.case, pictures and verdict.json for case c. */
static int write_bucket(const char *bucket_dir, const char *bucket, const char *signature, const af_case *c,
                        const af_verdict *v, const af_finding_extra *x, const bucket_history *hist, char *why,
                        size_t cap) {
    char path[1200];
    errno = 0; /* each failed write below leaves its own reason */
    snprintf(path, sizeof path, "%s/finding.case", bucket_dir);
    if (af_case_save(c, path)) {
        cannot_write(path, why, cap);
        return -1;
    }
    bool has_original = x && x->original;
    if (has_original) {
        snprintf(path, sizeof path, "%s/original.case", bucket_dir);
        if (af_case_save(x->original, path)) {
            cannot_write(path, why, cap);
            return -1;
        }
    } else {
        remove_in(bucket_dir, "original.case");
    }
    bool has_heatmap = x && x->heatmap && x->heatmap->cells && x->heatmap->rows > 0 && x->heatmap->cols > 0;
    if (has_heatmap) {
        snprintf(path, sizeof path, "%s/heatmap.txt", bucket_dir);
        if (af_heatmap_save(x->heatmap, path)) {
            cannot_write(path, why, cap);
            return -1;
        }
        snprintf(path, sizeof path, "%s/heatmap.png", bucket_dir);
        if (af_heatmap_png(x->heatmap, path)) {
            cannot_write(path, why, cap);
            return -1;
        }
    } else {
        remove_in(bucket_dir, "heatmap.txt");
        remove_in(bucket_dir, "heatmap.png");
    }
    bool has_leak = x && x->leaks && x->leaks->cells && x->leaks->rows > 0 && x->leaks->cols > 0;
    if (has_leak) {
        snprintf(path, sizeof path, "%s/leak.txt", bucket_dir);
        if (af_leak_save(x->leaks, path)) {
            cannot_write(path, why, cap);
            return -1;
        }
        snprintf(path, sizeof path, "%s/leak.png", bucket_dir);
        if (af_leak_png(x->leaks, path)) {
            cannot_write(path, why, cap);
            return -1;
        }
    } else {
        remove_in(bucket_dir, "leak.txt");
        remove_in(bucket_dir, "leak.png");
    }
    /* the Reproduce line: this case, the backend that ran it, the caller's options */
    const char *args[REPRO_ARGS_MAX + 1];
    repro_args(c->backend, x ? x->repro_options : NULL, args);
    char repro[4096];
    snprintf(path, sizeof path, "%s/finding.case", bucket_dir);
    repro_line(path, args, repro, sizeof repro);
    json_t *root = verdict_json(bucket, signature, c, v, repro, args, hist, has_original, has_heatmap, has_leak);
    snprintf(path, sizeof path, "%s/verdict.json", bucket_dir);
    int rc = write_json_file(path, root);
    json_decref(root);
    if (rc) cannot_write(path, why, cap);
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
    /* the bucket directory itself, not a symlink planted in its place: nothing is written
     * outside DIR */
    const char *bucket_name[1] = {bucket};
    char findings_dir[1100];
    snprintf(findings_dir, sizeof findings_dir, "%s/findings", dir);
    if (af_subdirs_real(findings_dir, bucket_name, 1, why, cap)) return -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/.lock", bucket_dir);
    int lock = open(path, O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (lock < 0) {
        snprintf(why, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (flock(lock, LOCK_EX) != 0)
        if (errno != EINTR) {
            snprintf(why, cap, "flock %s: %s", path, strerror(errno));
            close(lock);
            return -1;
        }

    double now = af_clock_unix();
    double ttf = x && x->time_to_first_seconds > 0 ? x->time_to_first_seconds : -1;

    snprintf(path, sizeof path, "%s/verdict.json", bucket_dir);
    char unread_why[1400]; /* not reported: a broken bucket is rewritten below */
    json_t *old = af_json_load_object(path, unread_why, sizeof unread_why);
    af_case old_case;
    af_error err;
    char case_path[1200];
    snprintf(case_path, sizeof case_path, "%s/finding.case", bucket_dir);
    long long old_count = 0;
    int rc;
    if (!old || read_count(old, &old_count) || af_case_load(case_path, &old_case, &err)) {
        /* new bucket (or a broken one, which the new finding repairs) */
        bucket_history hist = {1, now, now, ttf};
        rc = write_bucket(bucket_dir, bucket, signature, &c, v, x, &hist, why, cap) ? -1 : 1;
    } else {
        bucket_history hist = {old_count + 1, now, now, ttf};
        double t;
        if (af_json_get_number(old, "first_seen_unix", &t) == 0 && t < hist.first_seen_unix) hist.first_seen_unix = t;
        if (af_json_get_number(old, "time_to_first_seconds", &t) == 0 && t >= 0 && (ttf < 0 || t < ttf))
            hist.time_to_first_seconds = t;
        if (compare_cases(&c, &old_case) < 0) {
            rc = write_bucket(bucket_dir, bucket, signature, &c, v, x, &hist, why, cap) ? -1 : 0;
        } else if (update_history(old, &hist) || write_json_file(path, old)) {
            /* kept the stored reproducer; only its history keys change */
            cannot_write(path, why, cap);
            rc = -1;
        } else {
            rc = 0;
        }
    }
    json_decref(old);
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

static int cmp_names(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Fill a record from a bucket directory. 0, or -1 with why. */
static int read_bucket(const char *dir, const char *bucket_dir, const char *name, af_finding_record *r, char *why,
                       size_t cap) {
    memset(r, 0, sizeof *r);
    snprintf(r->bucket, sizeof r->bucket, "%s", name);
    snprintf(r->dir, sizeof r->dir, "%s", bucket_dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/verdict.json", bucket_dir);
    r->verdict_json = tr_read_in(dir, bucket_dir, "verdict.json", NULL);
    if (!r->verdict_json) {
        snprintf(why, cap, "%s: cannot read (missing, or not a regular file inside %s)", path, dir);
        return -1;
    }
    json_t *j = af_json_parse_object(r->verdict_json, path, why, cap);
    if (!j) return -1;
    if (af_json_get_text(j, "signature", r->signature, sizeof r->signature) || read_count(j, &r->count)) {
        snprintf(why, cap, "%s: not a triage verdict (needs signature and count)", path);
        json_decref(j);
        return -1;
    }
    /* optional keys: absent ones stay empty / unknown */
    af_json_get_text(j, "config_class", r->config_class, sizeof r->config_class);
    af_json_get_text(j, "verdict", r->kind, sizeof r->kind);
    af_json_get_text(j, "backend", r->backend, sizeof r->backend);
    af_json_get_text(j, "engine", r->engine, sizeof r->engine);
    af_json_get_text(j, "device", r->device, sizeof r->device);
    af_json_get_text(j, "tensor", r->tensor, sizeof r->tensor);
    af_json_get_text(j, "verdict_line", r->verdict_line, sizeof r->verdict_line);
    const char *repro = json_string_value(json_object_get(j, "repro"));
    if (repro && strlen(repro) < sizeof r->repro) snprintf(r->repro, sizeof r->repro, "%s", repro); /* never cut */
    af_json_get_text(j, "first_seen", r->first_seen, sizeof r->first_seen);
    r->first_seen_unix = r->last_seen_unix = NAN;
    r->time_to_first_seconds = -1;
    af_json_get_number(j, "first_seen_unix", &r->first_seen_unix);
    af_json_get_number(j, "last_seen_unix", &r->last_seen_unix);
    if (af_json_get_number(j, "time_to_first_seconds", &r->time_to_first_seconds) || isnan(r->time_to_first_seconds))
        r->time_to_first_seconds = -1;
    r->case_cost = NAN;
    af_json_get_number(j, "case_cost", &r->case_cost);
    json_decref(j);
    snprintf(path, sizeof path, "%s/finding.case", bucket_dir);
    r->case_text = tr_read_in(dir, bucket_dir, "finding.case", NULL);
    if (!r->case_text) {
        snprintf(why, cap, "%s: cannot read (missing, or not a regular file inside %s)", path, dir);
        return -1;
    }
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
    char(*names)[AF_BUCKET_ID_LEN + 1] = NULL;
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
        if (read_bucket(dir, bucket_dir, names[i], r, problem, sizeof problem) == 0) {
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
