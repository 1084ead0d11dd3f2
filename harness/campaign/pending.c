/* campaign/pending.c — new raw signatures (DIR/pending): counted in the stored bucket
 * they belong to when that is known without minimising (known.c: the raw case's own
 * signature is a bucket's, or the bucket it would minimise into is predicted and has
 * had its AF_CAMP_MINIMISE_PER_BUCKET minimisations), else minimised once: the minimised
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
/* A candidate of a minimisation runs at most max(CANDIDATE_FLOOR_S, CANDIDATE_FACTOR x the
 * found case's judged seconds), within the campaign's deadline: the minimiser shrinks the
 * case, so a candidate that outlasts that is another behaviour, not waited out to the
 * campaign's deadline while every worker stands idle. A hang is minimised with the
 * campaign's deadline. */
#define CANDIDATE_FLOOR_S 60.0
#define CANDIDATE_FACTOR  8.0

typedef struct {
    af_campaign_state *cp;
    int deadline_s; /* a candidate's (candidate_deadline) */
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
    if (af_camp_interrupted() || af_camp_is_lost(m->cp)) return -1; /* a signal, no backend: nothing more is run */
    af_session_result *r = malloc(sizeof *r);
    if (!r) return -1;
    af_camp_progress_tick(m->cp); /* the progress line keeps coming while minimising */
    int deadline = af_camp_deadline_now(m->cp);
    if (m->deadline_s < deadline) deadline = m->deadline_s;
    af_session_run_isolated(&m->cp->s, c, AF_STORE_NONE, NULL, deadline, r);
    int rc = r->status == AF_CASE_NOT_RUN || af_camp_stopped_for_time(m->cp, r, deadline) ? -1 : 0;
    if (af_camp_backend_lost(m->cp, c, r)) rc = -1; /* the device went away: no verdict */
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
 * crash / hang, or when the re-run in a child did not store it. 0, or -1 after
 * af_camp_write_failed. */
static int store_here(af_campaign_state *cp, const af_case *c, const af_verdict *v, const af_case *original,
                      char *bucket) {
    if (af_session_store(&cp->s, c, v, AF_STORE_ALWAYS, original, NULL, NULL, bucket) != AF_SESSION_STORE_FAILED)
        return 0;
    af_camp_write_failed(cp, "a finding", cp->s.store_error);
    return -1;
}

/* DIR/rawmap/<raw_id> = e; a failure is counted (the finding itself is stored). */
static void put_rawmap(af_campaign_state *cp, const char *raw_id, const af_rawmap_entry *e) {
    char why[1500];
    if (af_rawmap_put(cp->dir, raw_id, e, why, sizeof why)) af_camp_write_failed(cp, "the rawmap", why);
}

/* The seconds a candidate of the found case may run (CANDIDATE_FLOOR_S above). */
static int candidate_deadline(const af_campaign_state *cp, const af_verdict *found) {
    if (found->kind == AF_V_HANG) return cp->deadline_s;
    const af_judge_summary *j = &found->judge;
    double took = j->gen_s + j->oracle_s + j->magnitudes_s + j->reference_s + j->run_s + j->compare_s + j->probes_s +
                  j->cert_wait_s;
    double want = CANDIDATE_FACTOR * took;
    if (want < CANDIDATE_FLOOR_S) want = CANDIDATE_FLOOR_S;
    return want < cp->deadline_s ? (int)want + 1 : cp->deadline_s;
}

/* Minimise one new raw signature and store the result; writes DIR/rawmap/<raw_id>.
 * 0 when the finding is stored (its pending file may go), -1 when not (it stays). */
static int minimise_raw(af_campaign_state *cp, const char *raw_id, const af_case *c, const af_verdict *found,
                        af_session_result *r) {
    min_ctx *m = calloc(1, sizeof *m);
    if (!m) return -1;
    m->cp = cp;
    m->deadline_s = candidate_deadline(cp, found);
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
    fprintf(stderr, "%sattnfuzz campaign: minimising raw %s (at most %d runs, %.0f s, %d s a run)\n",
            cp->tty ? "\r\033[K" : "", raw_id, mo.max_runs, mo.max_seconds, m->deadline_s);
    af_min_result *mr = malloc(sizeof *mr);
    /* the other jobs' cases go on while the candidates run (inprocess.c) */
    cp->s.idle = cp->beside;
    cp->s.idle_user = cp->beside_loop;
    long long beside0 = cp->beside_cases;
    int rc = mr ? af_minimize(c, min_run, m, &mo, mr) : -1;
    cp->s.idle = NULL;
    cp->s.idle_user = NULL;
    long long beside = cp->beside_cases - beside0;
    af_rawmap_entry e;
    memset(&e, 0, sizeof e);
    char sig[AF_SIGNATURE_MAX];
    int stored = 0;
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
        if (af_camp_interrupted())
            r->stored = -1;
        else
            af_session_run_isolated(&cp->s, &e.best, AF_STORE_ALWAYS, original, af_camp_deadline_now(cp), r);
        if (r->stored < 0 || strcmp(r->bucket, e.bucket)) {
            /* crash / hang (the child could not store), or a different result this time */
            char b[AF_BUCKET_ID_LEN + 1];
            stored = store_here(cp, &e.best, &e.verdict, original, b);
        }
        cp->st.minimised++;
        af_camp_known_add(cp, &e, true);
        af_camp_known_link(cp, e.bucket, &e.best, &e.verdict);
        af_camp_known_link(cp, e.bucket, c, found);
        for (int i = 0; i < m->n_other; i++) af_camp_known_link(cp, e.bucket, &m->other_case[i], &m->other_verdict[i]);
        fprintf(stderr,
                "%sattnfuzz campaign: raw %s -> %s bucket %s: %s, cost %.4g -> %.4g in %d runs; %lld cases beside it\n",
                cp->tty ? "\r\033[K" : "", raw_id, existed ? "existing" : "new", e.bucket, sig, mr->cost_before,
                mr->cost_after, mr->runs, beside);
    } else {
        /* does not fail any more (flaky) or cannot run: keep it as found, with the
         * verdict it had, in the bucket of its raw signature */
        e.best = *c;
        snprintf(e.best.backend, sizeof e.best.backend, "%s", cp->s.backend_name); /* what ran */
        e.verdict = *found;
        af_signature(&e.best, &e.verdict, sig, sizeof sig);
        af_bucket_id(sig, e.bucket);
        stored = store_here(cp, &e.best, &e.verdict, NULL, e.bucket);
        af_camp_known_add(cp, &e, true); /* tried: its bucket has had its minimisation */
        if ((af_camp_interrupted() || af_camp_is_lost(cp)) && stored == 0) cp->st.unminimised++;
        fprintf(stderr, "%sattnfuzz campaign: raw %s did not reproduce (%s); kept as found in bucket %s\n",
                cp->tty ? "\r\033[K" : "", raw_id,
                af_camp_interrupted() ? "interrupted"
                : af_camp_is_lost(cp) ? "the backend went away"
                : rc == 1             ? "passes now"
                                      : "could not run",
                e.bucket);
    }
    free(mr);
    free(m);
    cp->s.isolated_device = -1;
    if (stored == 0) put_rawmap(cp, raw_id, &e); /* a raw signature maps only to a stored bucket */
    return stored;
}

/* One more finding counted in the bucket of rawmap entry e. 0, or -1 after
 * af_camp_write_failed. */
static int count_in_bucket(af_campaign_state *cp, const af_rawmap_entry *e) {
    char bucket[AF_BUCKET_ID_LEN + 1], why[1500];
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.repro_options = cp->s.repro_options; /* a worker's command: the Reproduce line runs it */
    if (af_finding_store(cp->dir, &e->best, &e->verdict, &extra, bucket, why, sizeof why) >= 0) return 0;
    af_camp_write_failed(cp, "a finding", why);
    return -1;
}

/* One more raw finding in the stored bucket of e, without minimising it; DIR/rawmap/<raw_id>
 * -> that bucket, so that the workers count later findings of this raw signature there
 * themselves. 0, or -1 after af_camp_write_failed (the finding stays pending). */
static int count_in(af_campaign_state *cp, const char *raw_id, const af_rawmap_entry *e) {
    if (count_in_bucket(cp, e)) return -1;
    put_rawmap(cp, raw_id, e);
    return 0;
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
    af_camp_subdir(cp, "rawmap", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return false;
    char want[AF_SIGNATURE_MAX], have[AF_SIGNATURE_MAX];
    af_finding_identity(&(af_case){0}, found, want, sizeof want);
    bool match = false;
    for (struct dirent *de; !match && (de = readdir(d));) {
        if (!af_camp_is_bucket_name(de->d_name, strlen(de->d_name))) continue;
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
static const af_camp_known_bucket *known_bucket_of(af_campaign_state *cp, const af_case *c, const af_verdict *found,
                                                   const char **how) {
    char sig[AF_SIGNATURE_MAX], identity[AF_SIGNATURE_MAX];
    af_signature(c, found, sig, sizeof sig);
    const af_camp_known_bucket *k = af_camp_known_exact(cp, sig);
    if (k) {
        *how = "its own signature";
        return k;
    }
    af_finding_identity(c, found, identity, sizeof identity);
    k = af_camp_known_predict(cp, c, identity);
    if (k && k->minimisations >= AF_CAMP_MINIMISE_PER_BUCKET) {
        *how = "the bucket its identity minimises into from this case";
        return k;
    }
    return NULL;
}

/* Minimise and store every pending finding (or count it in the bucket its raw
 * signature already maps to) until stop_at. Past it, the rest waits for a later call,
 * or with keep_rest (--total-time's end) is stored as found, its raw case and verdict,
 * so that no finding is lost (counted in st.unminimised). Returns the number handled. */
int af_camp_process_pending(af_campaign_state *cp, double stop_at, bool keep_rest) {
    /* after a failed write nothing more is minimised: each is stored as found, or stays */
    if (cp->write_failed) keep_rest = true;
    char dir[1200];
    af_camp_subdir(cp, "pending", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return 0;
    char *names[512];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".case") && af_camp_is_bucket_name(e->d_name, len))
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    int handled = 0;
    af_session_result *r = malloc(sizeof *r);
    af_verdict *found = malloc(sizeof *found);
    char said_raw[AF_BUCKET_ID_LEN + 1] = ""; /* the raw id last said stored as found: one line per raw id */
    for (int i = 0; i < n && r && found; i++) {
        char raw_id[AF_BUCKET_ID_LEN + 1];
        snprintf(raw_id, sizeof raw_id, "%.*s", AF_BUCKET_ID_LEN, names[i]);
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        af_rawmap_entry *me = malloc(sizeof *me);
        if (me && af_rawmap_get(cp->dir, raw_id, me) == 0) {
            /* minimised meanwhile: one more finding in its bucket, no run needed */
            if (count_in_bucket(cp, me) == 0) {
                remove_pending(path);
                handled++;
            }
            free(me);
            continue;
        }
        free(me);
        bool out_of_time = (stop_at > 0 && af_clock_mono() > stop_at) || af_camp_interrupted() || cp->write_failed;
        if (out_of_time && !keep_rest) break;
        af_case c;
        af_error err;
        if (af_case_load(path, &c, &err)) {
            /* not ours to delete: it stays, and the run says it kept no finding from it */
            char why[1200];
            af_error_format(&err, why, sizeof why);
            af_camp_write_failed(cp, "a pending finding", why);
            continue;
        }
        if (out_of_time && af_pending_verdict(path, found) == 0) {
            snprintf(c.backend, sizeof c.backend, "%s", cp->s.backend_name); /* what ran */
            char bucket[AF_BUCKET_ID_LEN + 1];
            if (store_here(cp, &c, found, NULL, bucket)) continue; /* stays in pending */
            if (strcmp(said_raw, raw_id)) /* the names are sorted: a raw id's findings come together */
                fprintf(stderr, "%sattnfuzz campaign: raw %s stored as found in bucket %s (not minimised: %s)\n",
                        cp->tty ? "\r\033[K" : "", raw_id, bucket,
                        af_camp_interrupted() ? "interrupted" : "--total-time");
            snprintf(said_raw, sizeof said_raw, "%s", raw_id);
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
            if (count_in(cp, raw_id, same)) {
                free(same);
                continue; /* stays in pending */
            }
            fprintf(stderr, "%sattnfuzz campaign: raw %s: the same %s as bucket %s (not minimised again)\n",
                    cp->tty ? "\r\033[K" : "", raw_id, af_verdict_name(found->kind), same->bucket);
            free(same);
            remove_pending(path);
            handled++;
            continue;
        }
        free(same);
        const char *how = NULL;
        const af_camp_known_bucket *known = known_bucket_of(cp, &c, found, &how);
        if (known) {
            af_rawmap_entry *e = malloc(sizeof *e);
            if (e) {
                *e = known->entry; /* a copy: linking may grow the catalogue */
                if (count_in(cp, raw_id, e)) {
                    free(e);
                    continue; /* not stored: stays in pending */
                }
                cp->st.deduplicated++;
                af_camp_known_link(cp, e->bucket, &c, found);
                fprintf(stderr, "%sattnfuzz campaign: raw %s counted in bucket %s (%s; not minimised again)\n",
                        cp->tty ? "\r\033[K" : "", raw_id, e->bucket, how);
                free(e);
                remove_pending(path);
                handled++;
                continue;
            }
        }
        if (minimise_raw(cp, raw_id, &c, found, r)) continue; /* not stored: stays in pending */
        remove_pending(path);
        handled++;
    }
    free(found);
    free(r);
    for (int i = 0; i < n; i++) free(names[i]);
    /* a full listing may have left more behind: their turn (stored ones are gone) */
    if (keep_rest && n == 512 && handled > 0) handled += af_camp_process_pending(cp, stop_at, true);
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
    /* those a failed campaign could not store are stored now */
    json_int_t unstored = json_integer_value(json_object_get(o, "findings_unstored"));
    if (json_object_get(o, "findings_unstored"))
        json_object_set_new(o, "findings_unstored", json_integer(unstored > found ? unstored - found : 0));
    /* the buckets the reports count: readable ones (a bucket a failed write left
     * without its verdict.json is not one) */
    char scan_why[512];
    int buckets = af_findings_scan(dir, NULL, NULL, scan_why, sizeof scan_why);
    if (buckets >= 0) json_object_set_new(o, "buckets", json_integer(buckets));
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
        if (len > 5 && !strcmp(e->d_name + len - 5, ".case") && af_camp_is_bucket_name(e->d_name, len))
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
