/* report_provenance.c — DIR/provenance.json (campaign/provenance.h) read back for the
 * reports, flattened into the name / value pairs that JUnit's <properties> and the HTML
 * table show (SARIF and report.json carry the runs as they are). */
#include "triage/src/triage_internal.h"

#include <stdlib.h>
#include <string.h>

#include "util/fsutil.h"
#include "util/version.h"

json_t *tr_provenance_read(const char *dir) {
    char path[1200], why[1500];
    snprintf(path, sizeof path, "%s/provenance.json", dir);
    if (!af_is_regular_file(path)) return NULL;
    char *text = NULL;
    if (af_read_file_inside(dir, path, (size_t)4 << 20, &text, NULL, why, sizeof why)) {
        fprintf(stderr, "attnfuzz triage: %s (reports without provenance)\n", why);
        return NULL;
    }
    json_t *doc = af_json_parse_object(text, path, why, sizeof why);
    free(text);
    if (!doc) {
        fprintf(stderr, "attnfuzz triage: %s (reports without provenance)\n", why);
        return NULL;
    }
    if (!json_is_array(json_object_get(doc, "runs"))) {
        fprintf(stderr, "attnfuzz triage: %s: no \"runs\" array (reports without provenance)\n", path);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

const json_t *tr_provenance_last(const json_t *doc) {
    const json_t *runs = json_object_get(doc, "runs");
    size_t n = json_array_size(runs);
    const json_t *last = n ? json_array_get(runs, n - 1) : NULL;
    return json_is_object(last) ? last : NULL;
}

/* The keys every report shows, in this order (campaign/provenance.h); "unknown" when
 * the campaign did not record one. */
static const char *const shown_keys[] = {
    "attnfuzz_version", "git_commit",   "command_line", "seed",  "host",    "gpu",
    "nvidia_driver",    "cuda_driver",  "cuda_runtime", "cudnn", "backend", "engine",
    "start_time_utc",   "end_time_utc", "outcome"};

static void put(tr_provenance_pairs *p, const char *name, const json_t *v) {
    if (p->n >= TR_PROVENANCE_PAIRS) return;
    tr_provenance_pair *q = &p->pair[p->n++];
    snprintf(q->name, sizeof q->name, "%s", name);
    if (json_is_string(v) && json_string_length(v) > 0)
        q->value = json_string_value(v);
    else if (json_is_integer(v) || json_is_boolean(v)) {
        snprintf(q->number, sizeof q->number, "%s", json_is_boolean(v) ? (json_is_true(v) ? "true" : "false") : "");
        if (json_is_integer(v)) snprintf(q->number, sizeof q->number, "%lld", (long long)json_integer_value(v));
        q->value = q->number;
    } else
        q->value = "unknown";
}

void tr_provenance_flatten(const json_t *doc, tr_provenance_pairs *p) {
    memset(p, 0, sizeof *p);
    const json_t *run = tr_provenance_last(doc);
    for (size_t i = 0; i < sizeof shown_keys / sizeof shown_keys[0]; i++)
        put(p, shown_keys[i], json_object_get(run, shown_keys[i]));
    put(p, "runs", NULL);
    snprintf(p->pair[p->n - 1].number, sizeof p->pair[p->n - 1].number, "%zu",
             json_array_size(json_object_get(doc, "runs")));
    p->pair[p->n - 1].value = p->pair[p->n - 1].number;
    /* a worker's target: its name, device and package versions (target.versions.torch) */
    const json_t *target = json_object_get(run, "target");
    put(p, "target", json_object_get(target, "name"));
    put(p, "target.device", json_object_get(target, "device"));
    const char *pkg;
    const json_t *ver;
    json_object_foreach((json_t *)json_object_get(target, "versions"), pkg, ver) {
        char name[TR_PROVENANCE_NAME];
        snprintf(name, sizeof name, "target.versions.%s", pkg);
        put(p, name, ver);
    }
    put(p, "report_attnfuzz_version", NULL);
    p->pair[p->n - 1].value = af_version();
}
