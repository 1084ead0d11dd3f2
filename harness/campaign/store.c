/* campaign/store.c — findings stored, counted in their mapped bucket, or deferred to
 * DIR/pending; the rawmap and pending-verdict files (campaign/store.h). */
#include "campaign/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "triage/findings.h"
#include "util/clock.h"
#include "util/fsutil.h"

/* ---- small binary files (rawmap entries, pending verdicts) --------------------------
 * Header: magic, then the sizes of the two parts, so a file written by another build
 * (other struct sizes) reads as absent. */

#define BLOB_MAGIC 0x4146524du /* "AFRM" */

static int blob_write(const char *path, const void *a, size_t na, const void *b, size_t nb, char *why, size_t cap) {
    uint32_t hdr[3] = {BLOB_MAGIC, (uint32_t)na, (uint32_t)nb};
    af_file_part parts[3] = {{hdr, sizeof hdr}, {a, na}, {b, nb}};
    return af_write_parts_atomic(path, parts, 3, why, cap);
}

static int blob_read(const char *path, void *a, size_t na, void *b, size_t nb) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    uint32_t hdr[3];
    int rc = -1;
    if (fread(hdr, sizeof hdr, 1, f) == 1 && hdr[0] == BLOB_MAGIC && hdr[1] == na && hdr[2] == nb &&
        fread(a, na, 1, f) == 1 && (!nb || fread(b, nb, 1, f) == 1))
        rc = 0;
    fclose(f);
    return rc;
}

int af_rawmap_get(const char *dir, const char *raw_id, af_rawmap_entry *e) {
    char path[1300];
    snprintf(path, sizeof path, "%s/rawmap/%.*s", dir, AF_BUCKET_ID_LEN, raw_id);
    if (blob_read(path, e, sizeof *e, NULL, 0)) return -1;
    e->bucket[AF_BUCKET_ID_LEN] = 0;
    return 0;
}

int af_rawmap_put(const char *dir, const char *raw_id, const af_rawmap_entry *e, char *why, size_t cap) {
    char path[1300];
    snprintf(path, sizeof path, "%s/rawmap", dir);
    if (af_mkdirs(path, why, cap)) return -1;
    snprintf(path, sizeof path, "%s/rawmap/%.*s", dir, AF_BUCKET_ID_LEN, raw_id);
    return blob_write(path, e, sizeof *e, NULL, 0, why, cap);
}

void af_pending_verdict_path(const char *case_path, char *out, size_t cap) {
    size_t n = strlen(case_path);
    if (n > 5 && !strcmp(case_path + n - 5, ".case")) n -= 5;
    snprintf(out, cap, "%.*s.verdict", (int)n, case_path);
}

int af_pending_verdict(const char *case_path, af_verdict *v) {
    char path[1400];
    af_pending_verdict_path(case_path, path, sizeof path);
    return blob_read(path, v, sizeof *v, NULL, 0);
}

/* ---- storing -------------------------------------------------------------------------- */

static int store_verdict(af_session *s, const af_case *c, const af_verdict *v, af_store_mode mode,
                         const af_case *original, const af_heatmap *heatmap, const af_leak_matrix *leaks,
                         char bucket[AF_BUCKET_ID_LEN + 1]);

static double time_to_first(const af_session *s) { return af_clock_unix() - s->start_unix; }

/* Count one more raw finding in the bucket its raw signature minimised into: the
 * bucket's own case and verdict go to af_finding_store, which finds the bucket, keeps
 * its reproducer and bumps count / last_seen. */
static int bump_mapped(af_session *s, const af_rawmap_entry *e, char bucket[AF_BUCKET_ID_LEN + 1]) {
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.time_to_first_seconds = time_to_first(s);
    int rc = af_finding_store(s->out_dir, &e->best, &e->verdict, &extra, bucket, s->store_error, sizeof s->store_error);
    return rc < 0 ? AF_SESSION_STORE_FAILED : 0;
}

int af_session_store(af_session *s, const af_case *c, const af_verdict *given, af_store_mode mode,
                     const af_case *original, const af_heatmap *heatmap, const af_leak_matrix *leaks,
                     char bucket[AF_BUCKET_ID_LEN + 1]) {
    if (mode == AF_STORE_NONE || !s->out_dir[0] || given->n_findings == 0) return -1;
    /* campaign --gpus: the finding names the GPU this process runs on (verdict.json
     * "device", the report's GPU row) unless the verdict already says one */
    const af_verdict *v = given;
    af_verdict *tagged = NULL;
    if (s->device[0] && !given->info.device[0] && (tagged = malloc(sizeof *tagged))) {
        *tagged = *given;
        snprintf(tagged->info.device, sizeof tagged->info.device, "%s", s->device);
        v = tagged;
    }
    int rc = store_verdict(s, c, v, mode, original, heatmap, leaks, bucket);
    free(tagged);
    return rc;
}

/* af_session_store with the verdict as it is stored. */
static int store_verdict(af_session *s, const af_case *c, const af_verdict *v, af_store_mode mode,
                         const af_case *original, const af_heatmap *heatmap, const af_leak_matrix *leaks,
                         char bucket[AF_BUCKET_ID_LEN + 1]) {
    char sig[AF_SIGNATURE_MAX];
    af_signature(c, v, sig, sizeof sig);
    af_bucket_id(sig, bucket);
    af_case stored = *c;
    snprintf(stored.backend, sizeof stored.backend, "%s", s->backend_name); /* what ran, whatever the case named */
    if (mode == AF_STORE_FUZZ && s->defer_new) {
        /* bucket = the raw id here; a raw signature seen before counts in its bucket */
        af_rawmap_entry e;
        if (af_rawmap_get(s->out_dir, bucket, &e) == 0) {
            snprintf(bucket, AF_BUCKET_ID_LEN + 1, "%s", e.bucket);
            return bump_mapped(s, &e, bucket);
        }
        /* a new raw signature: the campaign minimises it once, then stores it */
        char path[1300], vpath[1400];
        snprintf(path, sizeof path, "%s/pending", s->out_dir);
        if (af_mkdirs(path, s->store_error, sizeof s->store_error)) return AF_SESSION_STORE_FAILED;
        snprintf(path, sizeof path, "%s/pending/%s-%d-%lld.case", s->out_dir, bucket, (int)getpid(),
                 (long long)(af_clock_unix() * 1000));
        af_pending_verdict_path(path, vpath, sizeof vpath);
        /* first: the .case file is the signal */
        if (blob_write(vpath, v, sizeof *v, NULL, 0, s->store_error, sizeof s->store_error))
            return AF_SESSION_STORE_FAILED;
        if (af_case_save(&stored, path)) {
            snprintf(s->store_error, sizeof s->store_error, "write %s: %s", path, strerror(errno));
            remove(vpath);
            return AF_SESSION_STORE_FAILED;
        }
        return 2;
    }
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.original = original;
    extra.heatmap = heatmap;
    extra.leaks = leaks;
    extra.time_to_first_seconds = time_to_first(s);
    extra.repro_options = s->repro_options; /* a worker's command: the Reproduce line runs it */
    int rc = af_finding_store(s->out_dir, &stored, v, &extra, bucket, s->store_error, sizeof s->store_error);
    return rc < 0 ? AF_SESSION_STORE_FAILED : rc;
}
