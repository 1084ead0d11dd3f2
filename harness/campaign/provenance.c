/* provenance.c — DIR/provenance.json (campaign/provenance.h). */
#include "campaign/provenance.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/fsutil.h"
#include "util/hostinfo.h"
#include "util/json.h"
#include "util/shquote.h"
#include "util/version.h"

#define PROVENANCE_MAX ((size_t)4 << 20)

static void iso_utc(double t, char *buf, size_t cap) {
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A string, or null when s is empty. */
static json_t *text_or_null(const char *s) { return s && s[0] ? af_json_text(s) : json_null(); }

/* {name, device, versions} of a worker's hello, or null. */
static json_t *target_json(const json_t *hello) {
    if (!json_is_object(hello)) return json_null();
    json_t *t = json_object();
    const char *keys[3] = {"name", "device", "versions"};
    for (int i = 0; t && i < 3; i++) {
        json_t *v = json_object_get(hello, keys[i]);
        json_object_set_new(t, keys[i], v ? json_deep_copy(v) : json_null());
    }
    return t;
}

/* DIR/provenance.json read back: new reference, or a fresh document when absent or
 * unreadable. */
static json_t *load(const char *dir, const char *path) {
    char *text = NULL, why[1400];
    json_t *doc = NULL;
    if (af_is_regular_file(path) && af_read_file_inside(dir, path, PROVENANCE_MAX, &text, NULL, why, sizeof why) == 0)
        doc = af_json_parse_object(text, path, why, sizeof why);
    free(text);
    if (!doc || !json_is_array(json_object_get(doc, "runs"))) {
        json_decref(doc);
        doc = json_pack("{s:i, s:[]}", "format_version", 1, "runs");
    }
    return doc;
}

static int save(const char *path, json_t *doc, char *why, size_t cap) {
    char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
    if (!text) {
        snprintf(why, cap, "%s: out of memory", path);
        return -1;
    }
    af_file_part parts[2] = {{text, strlen(text)}, {"\n", 1}};
    int rc = af_write_parts_atomic(path, parts, 2, why, cap);
    free(text);
    return rc;
}

static json_t *run_json(const af_provenance_run *r) {
    af_host_info h;
    af_host_info_read(&h);
    char start[32], seed[32], line[8192];
    iso_utc(r->start_unix, start, sizeof start);
    snprintf(seed, sizeof seed, "%" PRIu64, r->seed);
    json_t *args = json_array();
    for (int i = 0; r->argv && i < r->argc && args; i++) json_array_append_new(args, af_json_text(r->argv[i]));
    line[0] = 0;
    if (r->argv && r->argc > 0) {
        const char **words = calloc((size_t)r->argc + 1, sizeof *words);
        for (int i = 0; words && i < r->argc; i++) words[i] = r->argv[i];
        if (words) af_shell_join(words, line, sizeof line); /* "" when it does not fit */
        free(words);
    }
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "attnfuzz_version", json_string(af_version()));
    json_object_set_new(o, "git_commit", json_string(af_git_commit()));
    json_object_set_new(o, "command_line", text_or_null(line));
    json_object_set_new(o, "arguments", r->argv ? args : json_null());
    if (!r->argv) json_decref(args);
    json_object_set_new(o, "seed", json_string(seed));
    json_object_set_new(o, "seed_given", json_boolean(r->seed_given));
    json_object_set_new(o, "host", text_or_null(h.host));
    json_object_set_new(o, "gpu", text_or_null(h.gpu));
    json_object_set_new(o, "nvidia_driver", text_or_null(h.nvidia_driver));
    json_object_set_new(o, "cuda_driver", text_or_null(h.cuda_driver));
    json_object_set_new(o, "cuda_runtime", text_or_null(h.cuda_runtime));
    json_object_set_new(o, "cudnn", text_or_null(h.cudnn));
    json_object_set_new(o, "backend", text_or_null(r->backend));
    json_object_set_new(o, "engine", text_or_null(r->engine));
    json_object_set_new(o, "mode", text_or_null(r->mode));
    json_object_set_new(o, "jobs", json_integer(r->jobs));
    json_object_set_new(o, "target", target_json(r->target_hello));
    json_object_set_new(o, "start_time_utc", json_string(start));
    json_object_set_new(o, "end_time_utc", json_null());
    json_object_set_new(o, "outcome", json_null());
    json_object_set_new(o, "successful", json_null());
    return o;
}

int af_provenance_begin(const char *dir, const af_provenance_run *run, char *why, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/provenance.json", dir);
    json_t *doc = load(dir, path);
    json_t *r = run_json(run);
    if (!doc || !r || json_array_append_new(json_object_get(doc, "runs"), r)) {
        json_decref(doc);
        snprintf(why, cap, "%s: out of memory", path);
        return -1;
    }
    int rc = save(path, doc, why, cap);
    json_decref(doc);
    return rc;
}

int af_provenance_end(const char *dir, double end_unix, const char *outcome, bool successful,
                      const json_t *target_hello, char *why, size_t cap) {
    char path[1200], end[32];
    snprintf(path, sizeof path, "%s/provenance.json", dir);
    json_t *doc = load(dir, path);
    json_t *runs = json_object_get(doc, "runs");
    size_t n = json_array_size(runs);
    json_t *last = n ? json_array_get(runs, n - 1) : NULL;
    if (!json_is_object(last)) {
        json_decref(doc);
        snprintf(why, cap, "%s: no run recorded to close", path);
        return -1;
    }
    iso_utc(end_unix, end, sizeof end);
    json_object_set_new(last, "end_time_utc", json_string(end));
    json_object_set_new(last, "outcome", json_string(outcome));
    json_object_set_new(last, "successful", json_boolean(successful));
    if (target_hello) json_object_set_new(last, "target", target_json(target_hello));
    int rc = save(path, doc, why, cap);
    json_decref(doc);
    return rc;
}

int af_provenance_merge(const char *out, const char *const *dirs, int n, char *why, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/provenance.json", out);
    json_t *doc = load(out, path);
    json_t *runs = json_object_get(doc, "runs");
    for (int i = 0; runs && i < n; i++) {
        char src_path[1200];
        snprintf(src_path, sizeof src_path, "%s/provenance.json", dirs[i]);
        json_t *src = load(dirs[i], src_path);
        size_t j, k;
        json_t *run, *have;
        json_array_foreach(json_object_get(src, "runs"), j, run) {
            bool dup = false;
            json_array_foreach(runs, k, have) dup |= json_equal(have, run) != 0;
            if (!dup) json_array_append(runs, run);
        }
        json_decref(src);
    }
    if (!runs) {
        json_decref(doc);
        snprintf(why, cap, "%s: out of memory", path);
        return -1;
    }
    int rc = save(path, doc, why, cap);
    json_decref(doc);
    return rc;
}
