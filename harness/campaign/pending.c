/* campaign/pending.c — new raw signatures (DIR/pending): counted in the stored bucket
 * they belong to when that is known without minimising (known.c: the raw case's own
 * signature is a bucket's, or the bucket it would minimise into is predicted and has
 * had its AF_CP_MINIMISE_PER_BUCKET minimisations), else minimised once: the minimised
 * case is stored in the bucket of its own signature. Either way DIR/rawmap records
 * raw -> bucket. A finding the minimiser cannot reproduce is kept as found. */
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
#include "util/json.h"
#include "minimize/minimize.h"
#include "triage/findings.h"

#define MIN_OTHERS 4 /* candidates kept that failed with another identity (links) */

typedef struct {
    af_campaign_state *cp;
    /* candidates of this minimisation that failed with another identity, one per
     * identity: after it, the minimised bucket is linked with theirs (known.c) */
    int n_other;
    af_case other_case[MIN_OTHERS];
    af_verdict other_verdict[MIN_OTHERS];
} min_ctx;

static void min_other(void *user, const af_case *c, const af_verdict *v) {
    min_ctx *m = user;
    char id[AF_SIGNATURE_MAX], have[AF_SIGNATURE_MAX];
    af_finding_identity(c, v, id, sizeof id);
    for (int i = 0; i < m->n_other; i++) {
        af_finding_identity(&m->other_case[i], &m->other_verdict[i], have, sizeof have);
        if (!strcmp(id, have)) return;
    }
    if (m->n_other == MIN_OTHERS) return;
    m->other_case[m->n_other] = *c;
    m->other_verdict[m->n_other++] = *v;
}

static int min_run(const af_case *c, void *user, af_verdict *v) {
    min_ctx *m = user;
    af_case_result *r = malloc(sizeof *r);
    if (!r) return -1;
    if (af_cp_interrupted()) return -1; /* a signal: nothing more is run */
    af_cp_progress_tick(m->cp);         /* the progress line keeps coming while minimising */
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
    min_ctx *m = calloc(1, sizeof *m);
    if (!m) return;
    m->cp = cp;
    /* --gpus: minimised and stored on the GPU that found it (a bug of one GPU stays there) */
    cp->s.isolated_device = af_gpus_find(cp->o->gpus, found->info.device);
    af_min_opts mo;
    af_min_opts_default(&mo);
    mo.max_runs = cp->o->minimize_runs;
    mo.on_other = min_other;
    mo.max_seconds = cp->deadline_s * 2 > 120 ? cp->deadline_s * 2 : 120; /* 120 s; GPU 600 s */
    if (cp->end_at > 0) { /* leave time for the stored re-run and the reports */
        double left = cp->end_at - af_clock_mono() - 2.0 * cp->deadline_s / 10 - 5;
        if (left < mo.max_seconds) mo.max_seconds = left > 1 ? left : 1;
    }
    fprintf(stderr, "%sattnfuzz campaign: minimising raw %s (at most %d runs, %.0f s)\n", cp->tty ? "\r\033[K" : "",
            raw_id, mo.max_runs, mo.max_seconds);
    af_min_result *mr = malloc(sizeof *mr);
    int rc = mr ? af_minimize(c, min_run, m, &mo, mr) : -1;
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
        /* re-run in a child that stores it with its heatmap (not after a signal) */
        if (af_cp_interrupted())
            r->stored = -1;
        else
            af_session_run_isolated(&cp->s, &e.best, AF_STORE_ALWAYS, original, af_cp_deadline_now(cp), r);
        if (r->stored < 0 || strcmp(r->bucket, e.bucket)) {
            /* crash / hang (the child could not store), or a different result this time */
            char b[AF_BUCKET_ID_LEN + 1];
            store_here(cp, &e.best, &e.verdict, original, b);
        }
        cp->st.minimised++;
        af_cp_known_add(cp, &e, true);
        af_cp_known_link(cp, e.bucket, &e.best, &e.verdict);
        af_cp_known_link(cp, e.bucket, c, found);
        for (int i = 0; i < m->n_other; i++) af_cp_known_link(cp, e.bucket, &m->other_case[i], &m->other_verdict[i]);
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
        af_cp_known_add(cp, &e, true); /* tried: its bucket has had its minimisation */
        if (af_cp_interrupted()) cp->st.unminimised++;
        fprintf(stderr, "%sattnfuzz campaign: raw %s did not reproduce (%s); kept as found in bucket %s\n",
                cp->tty ? "\r\033[K" : "", raw_id,
                af_cp_interrupted() ? "interrupted"
                : rc == 1           ? "passes now"
                                    : "could not run",
                e.bucket);
    }
    free(mr);
    free(m);
    cp->s.isolated_device = -1;
    if (af_rawmap_put(cp->dir, raw_id, &e))
        fprintf(stderr, "attnfuzz campaign: cannot write %s/rawmap/%s\n", cp->dir, raw_id);
}

/* One more raw finding (pending file `name`) in the stored bucket of e, without
 * minimising it; DIR/rawmap/<raw_id> -> that bucket, so that the workers count later
 * findings of this raw signature there themselves. */
static void count_in(af_campaign_state *cp, const char *raw_id, const char *name, const af_rawmap_entry *e) {
    char bucket[AF_BUCKET_ID_LEN + 1];
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    char why[512];
    if (af_finding_store(cp->dir, &e->best, &e->verdict, &extra, bucket, why, sizeof why) < 0)
        fprintf(stderr, "attnfuzz campaign: counting %s: %s\n", name, why);
    if (af_rawmap_put(cp->dir, raw_id, e))
        fprintf(stderr, "attnfuzz campaign: cannot write %s/rawmap/%s\n", cp->dir, raw_id);
}

/* Crash and hang verdicts carry no numbers and no tensor: the minimised case of one
 * such bug lands in the same bucket whatever raw case it started from, so a second raw
 * signature of the same kind (hang), or kind and detail (crash: the signal), is not
 * minimised again: it is counted in the bucket the first one minimised into. Returns
 * true with *e = that rawmap entry. */
static bool same_fatal_bucket(const af_campaign_state *cp, const af_verdict *found, af_rawmap_entry *e) {
    if (found->n_findings == 0 || found->findings[0].tensor != AF_T_NONE) return false;
    if (found->kind != AF_V_HANG && found->kind != AF_V_CRASH) return false;
    char dir[1200];
    af_cp_subdir(cp, "rawmap", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return false;
    char want[AF_SIGNATURE_MAX], have[AF_SIGNATURE_MAX];
    af_finding_identity(&(af_case){0}, found, want, sizeof want);
    bool match = false;
    for (struct dirent *de; !match && (de = readdir(d));) {
        if (!af_cp_is_bucket_name(de->d_name, strlen(de->d_name))) continue;
        if (af_rawmap_get(cp->dir, de->d_name, e)) continue;
        const af_verdict *v = &e->verdict;
        if (v->n_findings == 0 || v->findings[0].tensor != AF_T_NONE || v->kind != found->kind) continue;
        af_finding_identity(&(af_case){0}, v, have, sizeof have);
        match = !strcmp(want, have) &&
                (found->kind == AF_V_HANG || !strcmp(v->findings[0].detail, found->findings[0].detail));
    }
    closedir(d);
    return match;
}

/* The stored bucket a raw finding (case c, verdict found) is counted in without
 * minimising it, or NULL: the bucket of its own signature, else the bucket predicted
 * for it once that bucket has had its minimisations. *how says which. */
static const af_cp_known_bucket *known_bucket_of(af_campaign_state *cp, const af_case *c, const af_verdict *found,
                                                 const char **how) {
    char sig[AF_SIGNATURE_MAX], identity[AF_SIGNATURE_MAX];
    af_signature(c, found, sig, sizeof sig);
    const af_cp_known_bucket *k = af_cp_known_exact(cp, sig);
    if (k) {
        *how = "its own signature";
        return k;
    }
    af_finding_identity(c, found, identity, sizeof identity);
    k = af_cp_known_predict(cp, c, identity);
    if (k && k->minimisations >= AF_CP_MINIMISE_PER_BUCKET) {
        *how = "the bucket its identity minimises into from this case";
        return k;
    }
    return NULL;
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
        bool out_of_time = (stop_at > 0 && af_clock_mono() > stop_at) || af_cp_interrupted();
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
            fprintf(stderr, "%sattnfuzz campaign: raw %s stored as found in bucket %s (not minimised: %s)\n",
                    cp->tty ? "\r\033[K" : "", raw_id, bucket, af_cp_interrupted() ? "interrupted" : "--total-time");
            cp->st.unminimised++;
            remove_pending(path);
            handled++;
            continue;
        }
        if (out_of_time) continue; /* no verdict to store it with: left pending */
        if (af_pending_verdict(path, found)) {
            /* no verdict beside it (another build wrote it?): what it gives now */
            min_ctx *one = calloc(1, sizeof *one);
            if (one) {
                one->cp = cp;
                min_run(&c, one, found);
            }
            free(one);
        }
        af_rawmap_entry *same = malloc(sizeof *same);
        if (same && same_fatal_bucket(cp, found, same)) {
            count_in(cp, raw_id, names[i], same);
            fprintf(stderr, "%sattnfuzz campaign: raw %s: the same %s as bucket %s (not minimised again)\n",
                    cp->tty ? "\r\033[K" : "", raw_id, af_verdict_name(found->kind), same->bucket);
            free(same);
            remove_pending(path);
            handled++;
            continue;
        }
        free(same);
        const char *how = NULL;
        const af_cp_known_bucket *known = known_bucket_of(cp, &c, found, &how);
        if (known) {
            af_rawmap_entry *e = malloc(sizeof *e);
            if (e) {
                *e = known->entry; /* a copy: linking may grow the catalogue */
                count_in(cp, raw_id, names[i], e);
                cp->st.deduplicated++;
                af_cp_known_link(cp, e->bucket, &c, found);
                fprintf(stderr, "%sattnfuzz campaign: raw %s counted in bucket %s (%s; not minimised again)\n",
                        cp->tty ? "\r\033[K" : "", raw_id, e->bucket, how);
                free(e);
                remove_pending(path);
                handled++;
                continue;
            }
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

/* ---- after a killed campaign: what it left in DIR/pending (triage) --------------------- */

/* DIR/stats.json: findings and unminimised raised, buckets recounted; absent = no-op. */
static int bump_stats(const char *dir, int found, int unminimised, char *why, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return 0; /* not a campaign directory: nothing to update */
    json_t *o = af_json_load_object(path, why, cap);
    if (!o) return -1;
    json_int_t findings = json_integer_value(json_object_get(o, "findings"));
    json_int_t unmin = json_integer_value(json_object_get(o, "unminimised"));
    json_object_set_new(o, "findings", json_integer(findings + found));
    json_object_set_new(o, "unminimised", json_integer(unmin + unminimised));
    int buckets = 0;
    char fdir[1300];
    snprintf(fdir, sizeof fdir, "%s/findings", dir);
    DIR *d = opendir(fdir);
    for (struct dirent *e; d && (e = readdir(d));) buckets += af_cp_is_bucket_name(e->d_name, strlen(e->d_name));
    if (d) closedir(d);
    json_object_set_new(o, "buckets", json_integer(buckets));
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    if (!text) {
        snprintf(why, cap, "%s: out of memory", path);
        return -1;
    }
    size_t n = strlen(text);
    af_file_part parts[2] = {{text, n}, {"\n", 1}};
    int rc = af_write_parts_atomic(path, parts, 2, why, cap);
    free(text);
    return rc;
}

int af_campaign_recover_pending(const char *dir, char *why, size_t cap) {
    char pdir[1200];
    snprintf(pdir, sizeof pdir, "%s/pending", dir);
    DIR *d = opendir(pdir);
    if (!d) return 0; /* no pending directory: nothing was left */
    char *names[512];
    int n = 0;
    for (struct dirent *e; n < 512 && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".case") && af_cp_is_bucket_name(e->d_name, len))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int found = 0, unminimised = 0, rc = 0;
    af_rawmap_entry *me = malloc(sizeof *me);
    af_verdict *v = malloc(sizeof *v);
    for (int i = 0; i < n && me && v && rc == 0; i++) {
        if (!names[i]) continue;
        char path[1500], raw_id[AF_BUCKET_ID_LEN + 1], bucket[AF_BUCKET_ID_LEN + 1];
        snprintf(path, sizeof path, "%s/%s", pdir, names[i]);
        snprintf(raw_id, sizeof raw_id, "%.*s", AF_BUCKET_ID_LEN, names[i]);
        af_finding_extra extra;
        memset(&extra, 0, sizeof extra);
        af_case c;
        af_error err;
        int stored;
        bool minimised = af_rawmap_get(dir, raw_id, me) == 0;
        if (minimised) /* its raw signature was minimised meanwhile: one more in that bucket */
            stored = af_finding_store(dir, &me->best, &me->verdict, &extra, bucket, why, cap);
        else if (af_case_load(path, &c, &err) == 0 && af_pending_verdict(path, v) == 0)
            stored = af_finding_store(dir, &c, v, &extra, bucket, why, cap);
        else {
            fprintf(stderr, "attnfuzz triage: %s: unreadable pending finding (case or verdict), left there\n", path);
            continue;
        }
        if (stored < 0) {
            rc = -1;
            break;
        }
        remove_pending(path);
        found++;
        unminimised += !minimised;
    }
    free(me);
    free(v);
    for (int i = 0; i < n; i++) free(names[i]);
    if (rc) return -1;
    if (found && bump_stats(dir, found, unminimised, why, cap)) return -1;
    return found;
}
