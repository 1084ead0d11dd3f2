/* report_interrupted.c — DIR/interrupted/<name>.case listed for the reports: the cases a run of
 * the campaign had in flight when it stopped (killed: its write-ahead DIR/current), which
 * a resume keeps aside (campaign/resume.c). Each with the backend that ran it. */
#include "triage/src/triage_internal.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"
#include "util/fsutil.h"

static int cmp_names(const void *a, const void *b) {
    return strcmp(((const tr_interrupted_case *)a)->name, ((const tr_interrupted_case *)b)->name);
}

void tr_interrupted_read(const char *dir, const char *campaign_backend, tr_interrupted *out) {
    memset(out, 0, sizeof *out);
    char path[1200];
    snprintf(path, sizeof path, "%s/interrupted", dir);
    DIR *d = opendir(path);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".case") != 0) continue;
        char file[1500];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (!af_is_regular_file(file)) continue;
        out->total++;
        if (out->n >= TR_INTERRUPTED_MAX) continue;
        tr_interrupted_case *c = &out->cases[out->n++];
        snprintf(c->name, sizeof c->name, "interrupted/%s", e->d_name);
        /* the case names its backend when it was written from a case file; a fuzzed case
         * ran on the campaign's backend */
        af_case parsed;
        af_error err;
        bool named = af_case_load(file, &parsed, &err) == 0 && parsed.backend[0];
        snprintf(c->backend, sizeof c->backend, "%s", named ? parsed.backend : campaign_backend);
    }
    closedir(d);
    if (out->n > 1) qsort(out->cases, (size_t)out->n, sizeof *out->cases, cmp_names);
}
