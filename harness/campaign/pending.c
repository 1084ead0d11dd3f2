/* campaign/pending.c — new raw signatures (DIR/pending) minimised once each: the
 * minimised case is stored in the bucket of its own signature and DIR/rawmap records
 * raw -> bucket; a finding the minimiser cannot reproduce is kept as found. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign/campaign_internal.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "minimize/minimize.h"
#include "triage/findings.h"

typedef struct {
    af_campaign_state *cp;
} min_ctx;

static int min_run(const af_case *c, void *user, af_verdict *v) {
    min_ctx *m = user;
    af_case_result *r = malloc(sizeof *r);
    if (!r) return -1;
    int deadline = af_cp_deadline_now(m->cp);
    af_session_run_isolated(&m->cp->s, c, AF_STORE_NONE, NULL, deadline, r);
    int rc = r->status == AF_CASE_NOT_RUN || af_cp_stopped_for_time(m->cp, r, deadline) ? -1 : 0;
    *v = r->verdict;
    free(r);
    return rc;
}

static bool bucket_stored(const af_campaign_state *cp, const char *bucket) {
    char path[1300];
    struct stat st;
    snprintf(path, sizeof path, "%s/findings/%.*s/verdict.json", cp->dir, AF_BUCKET_ID_LEN, bucket);
    return stat(path, &st) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void remove_pending(const char *case_path) {
    char vpath[1600];
    af_pending_verdict_path(case_path, vpath, sizeof vpath);
    remove(vpath);
    remove(case_path);
}

/* Store case c with verdict v in its bucket from this process (no heatmap): for a
 * crash / hang, or when the re-run in a child did not store it. */
static void store_here(af_campaign_state *cp, const af_case *c, const af_verdict *v, const af_case *original,
                       char *bucket) {
    af_session_store(&cp->s, c, v, AF_STORE_ALWAYS, original, NULL, NULL, bucket);
}

/* Minimise one new raw signature and store the result; writes DIR/rawmap/<raw_id>. */
static void minimise_raw(af_campaign_state *cp, const char *raw_id, const af_case *c, const af_verdict *found,
                         af_case_result *r) {
    min_ctx m = {cp};
    af_min_opts mo;
    af_min_opts_default(&mo);
    mo.max_runs = cp->o->minimize_runs;
    mo.max_seconds = cp->deadline_s * 2 > 120 ? cp->deadline_s * 2 : 120; /* 120 s; GPU 600 s */
    if (cp->end_at > 0) { /* leave time for the stored re-run and the reports */
        double left = cp->end_at - af_clock_mono() - 2.0 * cp->deadline_s / 10 - 5;
        if (left < mo.max_seconds) mo.max_seconds = left > 1 ? left : 1;
    }
    af_min_result *mr = malloc(sizeof *mr);
    int rc = mr ? af_minimize(c, min_run, &m, &mo, mr) : -1;
    af_rawmap_entry e;
    memset(&e, 0, sizeof e);
    char sig[AF_SIGNATURE_MAX];
    if (rc == 0) {
        e.best = mr->best;
        snprintf(e.best.backend, sizeof e.best.backend, "%s", cp->s.backend_name); /* what ran */
        e.verdict = mr->verdict;
        af_signature(&e.best, &e.verdict, sig, sizeof sig);
        af_bucket_id(sig, e.bucket);
        /* the bucket keeps the raw case of its FIRST finding as original.case */
        af_case first_original;
        const af_case *original = c;
        bool existed = bucket_stored(cp, e.bucket);
        if (existed) {
            char path[1400];
            af_error err;
            snprintf(path, sizeof path, "%s/findings/%s/original.case", cp->dir, e.bucket);
            original = af_case_load(path, &first_original, &err) == 0 ? &first_original : NULL;
        }
        /* re-run in a child that stores it with its heatmap */
        af_session_run_isolated(&cp->s, &e.best, AF_STORE_ALWAYS, original, af_cp_deadline_now(cp), r);
        if (r->stored < 0 || strcmp(r->bucket, e.bucket)) {
            /* crash / hang (the child could not store), or a different result this time */
            char b[AF_BUCKET_ID_LEN + 1];
            store_here(cp, &e.best, &e.verdict, original, b);
        }
        cp->st.minimised++;
        fprintf(stderr, "%sattnfuzz campaign: raw %s -> %s bucket %s: %s, cost %.4g -> %.4g in %d runs\n",
                cp->tty ? "\r\033[K" : "", raw_id, existed ? "existing" : "new", e.bucket, sig, mr->cost_before,
                mr->cost_after, mr->runs);
    } else {
        /* does not fail any more (flaky) or cannot run: keep it as found, with the
         * verdict it had, in the bucket of its raw signature */
        e.best = *c;
        snprintf(e.best.backend, sizeof e.best.backend, "%s", cp->s.backend_name); /* what ran */
        e.verdict = *found;
        af_signature(&e.best, &e.verdict, sig, sizeof sig);
        af_bucket_id(sig, e.bucket);
        store_here(cp, &e.best, &e.verdict, NULL, e.bucket);
        fprintf(stderr, "%sattnfuzz campaign: raw %s did not reproduce (%s); kept as found in bucket %s\n",
                cp->tty ? "\r\033[K" : "", raw_id, rc == 1 ? "passes now" : "could not run", e.bucket);
    }
    free(mr);
    if (af_rawmap_put(cp->dir, raw_id, &e))
        fprintf(stderr, "attnfuzz campaign: cannot write %s/rawmap/%s\n", cp->dir, raw_id);
}

/* Minimise and store every pending finding (or count it in the bucket its raw
 * signature already maps to) until stop_at. Past it, the rest waits for a later call,
 * or with keep_rest (--total-time's end) is stored as found, its raw case and verdict,
 * so that no finding is lost (counted in st.unminimised). Returns the number handled. */
int af_cp_process_pending(af_campaign_state *cp, double stop_at, bool keep_rest) {
    char dir[1200];
    af_cp_subdir(cp, "pending", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".case") && af_cp_is_bucket_name(e->d_name, len))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int handled = 0;
    af_case_result *r = malloc(sizeof *r);
    af_verdict *found = malloc(sizeof *found);
    for (int i = 0; i < n && r && found; i++) {
        char raw_id[AF_BUCKET_ID_LEN + 1];
        snprintf(raw_id, sizeof raw_id, "%.*s", AF_BUCKET_ID_LEN, names[i]);
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        af_rawmap_entry *me = malloc(sizeof *me);
        if (me && af_rawmap_get(cp->dir, raw_id, me) == 0) {
            /* minimised meanwhile: one more finding in its bucket, no run needed */
            char bucket[AF_BUCKET_ID_LEN + 1];
            af_finding_extra extra;
            memset(&extra, 0, sizeof extra);
            char why[512];
            if (af_finding_store(cp->dir, &me->best, &me->verdict, &extra, bucket, why, sizeof why) < 0)
                fprintf(stderr, "attnfuzz campaign: counting %s: %s\n", names[i], why);
            free(me);
            remove_pending(path);
            handled++;
            continue;
        }
        free(me);
        bool out_of_time = stop_at > 0 && af_clock_mono() > stop_at;
        if (out_of_time && !keep_rest) break;
        af_case c;
        af_error err;
        if (af_case_load(path, &c, &err)) {
            remove_pending(path);
            continue;
        }
        if (out_of_time && af_pending_verdict(path, found) == 0) {
            snprintf(c.backend, sizeof c.backend, "%s", cp->s.backend_name); /* what ran */
            char bucket[AF_BUCKET_ID_LEN + 1];
            store_here(cp, &c, found, NULL, bucket);
            fprintf(stderr, "%sattnfuzz campaign: raw %s stored as found in bucket %s (not minimised: --total-time)\n",
                    cp->tty ? "\r\033[K" : "", raw_id, bucket);
            cp->st.unminimised++;
            remove_pending(path);
            handled++;
            continue;
        }
        if (out_of_time) continue; /* no verdict to store it with: left pending */
        if (af_pending_verdict(path, found)) {
            /* no verdict beside it (another build wrote it?): what it gives now */
            min_run(&c, &(min_ctx){cp}, found);
        }
        minimise_raw(cp, raw_id, &c, found, r);
        remove_pending(path);
        handled++;
    }
    free(found);
    free(r);
    for (int i = 0; i < n; i++) free(names[i]);
    /* a full listing may have left more behind: their turn (stored ones are gone) */
    if (keep_rest && n == 512 && handled > 0) handled += af_cp_process_pending(cp, stop_at, true);
    return handled;
}
