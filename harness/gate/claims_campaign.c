/* gate/claims_campaign.c — a campaign of claim checks (claims_campaign.h). */
#include "gate/claims_campaign.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "campaign/dirlock.h"
#include "fuzz/fuzz.h"
#include "gate/claims_jobs.h"
#include "judge/signature.h"
#include "minimize/minimize.h"
#include "triage/findings.h"
#include "triage/report.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/json.h"

#define CC_MAX_BUCKETS   64
#define CC_MAX_UNCLAIMED 64

void af_claims_campaign_opts_default(af_claims_campaign_opts *o) {
    memset(o, 0, sizeof *o);
    af_claims_loop_default(&o->loop);
}

typedef struct {
    char identity[AF_SIGNATURE_MAX];
    af_case best;
    af_verdict verdict;
} cc_bucket;

/* An unclaimed capability class: backend + config class, counted, with one example. */
typedef struct {
    char backend[AF_NAME_MAX];
    char config_class[256];
    long long count;
    af_case example;
} cc_unclaimed;

typedef struct {
    const af_claims_campaign_opts *o;
    af_claims_ctx *x;
    const char *backend; /* the minimiser keeps the case on this backend */
    af_claim_result *scratch;
} cc_min_ctx;

static int cc_min_run(const af_case *c, void *user, af_verdict *v) {
    cc_min_ctx *m = user;
    char why[512];
    if (af_claims_check(m->x, m->o->sel, &m->o->loop.facts, c, false, m->scratch, why, sizeof why)) return -1;
    if (!m->scratch->choice.served || strcmp(m->scratch->choice.backend, m->backend)) return -1;
    *v = m->scratch->verdict;
    return 0;
}

static void cc_store(const af_claims_campaign_opts *o, const af_case *c, const af_verdict *v, const af_case *original) {
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.original = original;
    char bucket[AF_BUCKET_ID_LEN + 1], why[512];
    if (af_finding_store(o->out_dir, c, v, &extra, bucket, why, sizeof why) < 0 && o->log)
        fprintf(o->log, "campaign: storing a finding: %s\n", why);
}

/* Note the unclaimed capabilities of one checked case (notes name the backend first). */
static void note_unclaimed(const af_claim_result *r, const af_case *c, cc_unclaimed *u, int *n) {
    char cls[256];
    af_config_class(c, cls, sizeof cls);
    for (int k = 0; k < r->n_notes; k++) {
        const char *name = r->notes[k] + strlen("unclaimed capability: ");
        size_t len = strcspn(name, " ");
        int i = 0;
        while (i < *n &&
               !(strlen(u[i].backend) == len && !strncmp(u[i].backend, name, len) && !strcmp(u[i].config_class, cls)))
            i++;
        if (i == *n) {
            if (*n == CC_MAX_UNCLAIMED) continue;
            memset(&u[i], 0, sizeof u[i]);
            snprintf(u[i].backend, sizeof u[i].backend, "%.*s", (int)len, name);
            snprintf(u[i].config_class, sizeof u[i].config_class, "%s", cls);
            u[i].example = *c;
            (*n)++;
        }
        u[i].count++;
    }
}

static int write_json(const char *dir, const char *name, json_t *j, char *why, size_t cap) {
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = text ? af_write_file_atomic(path, text, strlen(text), why, cap) : -1;
    if (!text) snprintf(why, cap, "%s: out of memory", path);
    free(text);
    return rc;
}

static json_t *unclaimed_json(const cc_unclaimed *u, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char text[16384];
        af_case_print(&u[i].example, text, sizeof text);
        json_array_append_new(a, json_pack("{s:o,s:o,s:I,s:o}", "backend", af_json_text(u[i].backend), "config_class",
                                           af_json_text(u[i].config_class), "count", (json_int_t)u[i].count, "example",
                                           af_json_text(text)));
    }
    return a;
}

/* DIR/stats.json (triage's campaign keys plus "claims"). */
static int write_stats(const af_claims_campaign_opts *o, const af_claims_campaign_summary *s, const cc_unclaimed *u,
                       int n_u, int resumed, char *why, size_t cap) {
    json_t *claims = json_pack("{s:I,s:I,s:I,s:I,s:i}", "served", (json_int_t)s->served, "none_chosen",
                               (json_int_t)s->none_chosen, "claim_mismatches", (json_int_t)s->claim_mismatches,
                               "unclaimed_capabilities", (json_int_t)s->unclaimed, "minimised", s->minimised);
    json_object_set_new(claims, "unclaimed", unclaimed_json(u, n_u));
    json_t *j = json_object();
    json_object_set_new(j, "mode", json_string("claims"));
    json_object_set_new(j, "backend", af_json_text(o->sel->label));
    json_object_set_new(j, "engine", json_string(""));
    json_object_set_new(j, "elapsed_s", af_json_real(s->elapsed_s));
    json_object_set_new(j, "cases_per_s", af_json_real(s->elapsed_s > 0 ? (double)s->cases / s->elapsed_s : 0));
    json_object_set_new(j, "cases", json_integer(s->cases));
    json_object_set_new(j, "findings", json_integer(s->claim_mismatches));
    json_object_set_new(j, "declined", json_integer(s->none_chosen));
    json_object_set_new(j, "errors", json_integer(s->errors));
    json_object_set_new(j, "buckets", json_integer(s->buckets));
    json_object_set_new(j, "seed", json_integer((json_int_t)o->loop.seed));
    json_object_set_new(j, "jobs", json_integer(o->jobs > 1 ? o->jobs : 1));
    json_object_set_new(j, "resumed", json_integer(resumed));
    json_object_set_new(j, "claims", claims);
    int rc = write_json(o->out_dir, "stats.json", j, why, cap);
    json_decref(j);
    return rc;
}

/* report.json gets the unclaimed capabilities beside triage's keys. */
static int add_to_report(const char *dir, const cc_unclaimed *u, int n_u, char *why, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/report.json", dir);
    json_t *rep = af_json_load_object(path, why, cap);
    if (!rep) return -1;
    json_object_set_new(rep, "unclaimed_capabilities", unclaimed_json(u, n_u));
    int rc = write_json(dir, "report.json", rep, why, cap);
    json_decref(rep);
    return rc;
}

/* Case `index` of the campaign's stream: a function of (seed, index) only, so that a
 * resumed campaign continues the stream and --jobs N checks the same cases as one job. */
static void cc_case(uint64_t seed, long long index, const af_fuzz_limits *lim, af_case *c) {
    uint64_t rng = (seed ? seed : 1) ^ (0x9E3779B97F4A7C15ull * (uint64_t)(index + 1));
    for (int warm = 0; warm < 2; warm++) (void)af_fuzz_rand(&rng);
    uint8_t bytes[160];
    size_t len = 8 + af_fuzz_rand(&rng) % (sizeof bytes - 8);
    for (size_t i = 0; i < len; i++) bytes[i] = (uint8_t)af_fuzz_rand(&rng);
    af_fuzz_decode(bytes, len, lim, c);
    c->backend[0] = c->engine[0] = 0;
}

/* An earlier run of this campaign (DIR/stats.json), read back for --resume. */
typedef struct {
    af_claims_campaign_summary s;
    int resumed;
} cc_prior;

static long long get_count(const json_t *obj, const char *key) {
    double v = 0;
    return af_json_get_number(obj, key, &v) == 0 && isfinite(v) && v > 0 ? (long long)v : 0;
}

/* 0 read, 1 DIR has no stats.json, -1 with why (unreadable, or another campaign's). */
static int read_prior(const af_claims_campaign_opts *o, cc_prior *p, cc_unclaimed *u, int *n_u, char *why, size_t cap) {
    memset(p, 0, sizeof *p);
    char path[1200];
    snprintf(path, sizeof path, "%s/stats.json", o->out_dir);
    struct stat sb;
    if (stat(path, &sb)) return 1;
    json_t *j = af_json_load_object(path, why, cap);
    if (!j) return -1;
    char mode[32] = "", label[sizeof o->sel->label] = "";
    double seed = -1;
    af_json_get_text(j, "mode", mode, sizeof mode);
    af_json_get_text(j, "backend", label, sizeof label);
    af_json_get_number(j, "seed", &seed);
    const json_t *cl = json_object_get(j, "claims");
    int rc = 0;
    if (strcmp(mode, "claims") || !json_is_object(cl)) {
        snprintf(why, cap, "%s: not a claims campaign (mode '%s'): resume it without --policy / --selector-cmd", path,
                 mode);
        rc = -1;
    } else if (strcmp(label, o->sel->label)) {
        snprintf(why, cap, "%s: a campaign of selector '%s', not '%s'", path, label, o->sel->label);
        rc = -1;
    } else if (seed != (double)o->loop.seed) {
        snprintf(why, cap, "%s: run with --seed %.0f (this run: %llu); a resume continues the same case stream", path,
                 seed, (unsigned long long)o->loop.seed);
        rc = -1;
    }
    if (rc == 0) {
        p->s.cases = get_count(j, "cases");
        p->s.errors = get_count(j, "errors");
        p->s.none_chosen = get_count(cl, "none_chosen");
        p->s.served = get_count(cl, "served");
        p->s.claim_mismatches = get_count(cl, "claim_mismatches");
        p->s.unclaimed = get_count(cl, "unclaimed_capabilities");
        p->s.minimised = (int)get_count(cl, "minimised");
        af_json_get_number(j, "elapsed_s", &p->s.elapsed_s);
        p->resumed = (int)get_count(j, "resumed");
        const json_t *list = json_object_get(cl, "unclaimed");
        size_t k;
        const json_t *e;
        json_array_foreach(list, k, e) {
            if (*n_u == CC_MAX_UNCLAIMED) break;
            cc_unclaimed *x = &u[*n_u];
            char text[16384] = "";
            af_error err;
            memset(x, 0, sizeof *x);
            if (af_json_get_text(e, "backend", x->backend, sizeof x->backend) ||
                af_json_get_text(e, "config_class", x->config_class, sizeof x->config_class) ||
                af_json_get_text(e, "example", text, sizeof text) ||
                af_case_parse(text, "stats.json unclaimed example", &x->example, &err))
                continue;
            x->count = get_count(e, "count");
            (*n_u)++;
        }
    }
    json_decref(j);
    return rc;
}

/* The buckets of an earlier run: each DIR/findings/<id>/finding.case checked again, so
 * that later failures of its identity count in it instead of being minimised again. */
static void reload_buckets(const af_claims_campaign_opts *o, af_claims_ctx *x, af_claim_result *r, cc_bucket *b,
                           int *n_b) {
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/findings", o->out_dir);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) && *n_b < CC_MAX_BUCKETS) {
        if (de->d_name[0] == '.') continue;
        char path[1500], why[512];
        snprintf(path, sizeof path, "%s/%s/finding.case", dir, de->d_name);
        af_case c;
        af_error err;
        if (af_case_load(path, &c, &err)) continue;
        if (af_claims_check(x, o->sel, &o->loop.facts, &c, false, r, why, sizeof why) || !r->verdict.n_findings) {
            if (o->log) fprintf(o->log, "campaign: --resume: %s no longer fails; its bucket stays as it is\n", path);
            continue;
        }
        cc_bucket *k = &b[(*n_b)++];
        af_finding_identity(&c, &r->verdict, k->identity, sizeof k->identity);
        k->best = c;
        k->verdict = r->verdict;
    }
    closedir(d);
}

/* Where results come from: this process (one job), or the workers in case order. */
typedef struct {
    const af_claims_campaign_opts *o;
    af_claims_ctx *x;
    af_fuzz_limits lim;
    af_claims_workers w;
    int jobs;
    long long first, sent, received; /* case indices */
    double end_at;
} cc_feed;

/* The next case's result: 1 with *c and *r, 0 when time is up and nothing is in flight,
 * -1 with why. */
static int feed_next(cc_feed *f, af_case *c, af_claim_result *r, char *why, size_t cap) {
    if (f->jobs <= 1) {
        if (af_clock_mono() >= f->end_at) return 0;
        cc_case(f->o->loop.seed, f->received++, &f->lim, c);
        return af_claims_check(f->x, f->o->sel, &f->o->loop.facts, c, true, r, why, cap) ? -1 : 1;
    }
    while (f->sent < f->received + f->jobs && af_clock_mono() < f->end_at) { /* keep every worker busy */
        af_case next;
        cc_case(f->o->loop.seed, f->sent, &f->lim, &next);
        if (af_claims_workers_send(&f->w, (int)((f->sent - f->first) % f->jobs), &next, why, cap)) return -1;
        f->sent++;
    }
    if (f->received == f->sent) return 0;
    cc_case(f->o->loop.seed, f->received, &f->lim, c);
    int k = (int)((f->received - f->first) % f->jobs);
    f->received++;
    return af_claims_workers_recv(&f->w, k, r, why, cap) ? -1 : 1;
}

int af_claims_campaign_run(const af_claims_campaign_opts *o, af_claims_ctx *x, af_claims_campaign_summary *s, char *why,
                           size_t cap) {
    memset(s, 0, sizeof *s);
    if (!o->out_dir || !o->sel) {
        snprintf(why, cap, "campaign: a selector and an output directory are required");
        return -1;
    }
    if (af_mkdirs(o->out_dir, why, cap)) return -1;
    af_dir_lock lock;
    int lrc = af_dir_lock_acquire(&lock, o->out_dir, why, cap);
    if (lrc != AF_DIR_LOCK_OK) return lrc == AF_DIR_LOCK_BUSY ? AF_CLAIMS_CAMPAIGN_BUSY : -1;
    af_claim_result *r = malloc(sizeof *r), *scratch = malloc(sizeof *scratch);
    af_min_result *mr = malloc(sizeof *mr);
    cc_bucket *buckets = calloc(CC_MAX_BUCKETS, sizeof *buckets);
    cc_unclaimed *unclaimed = calloc(CC_MAX_UNCLAIMED, sizeof *unclaimed);
    cc_feed *feed = calloc(1, sizeof *feed);
    af_case *c = malloc(sizeof *c);
    if (!r || !scratch || !mr || !buckets || !unclaimed || !feed || !c) {
        free(r), free(scratch), free(mr), free(buckets), free(unclaimed), free(feed), free(c);
        af_dir_lock_release(&lock);
        snprintf(why, cap, "campaign: out of memory");
        return -1;
    }
    x->probes = o->loop.probes;
    if (o->deadline_s > 0) x->deadline_s = o->deadline_s;
    int n_buckets = 0, n_unclaimed = 0, status = 0;
    cc_prior prior;
    int prc = read_prior(o, &prior, unclaimed, &n_unclaimed, why, cap);
    if (prc < 0)
        status = -1;
    else if ((prc == 0) != o->resume) {
        if (o->resume)
            snprintf(why, cap, "--resume: %s holds no campaign (no stats.json): drop --resume to start one",
                     o->out_dir);
        else
            snprintf(why, cap,
                     "%s holds an earlier campaign (stats.json): pass --resume to continue it, or another --out",
                     o->out_dir);
        status = -1;
    }
    if (o->resume && status == 0) prior.resumed++;
    feed->o = o;
    feed->x = x;
    feed->jobs = o->jobs > 1 ? o->jobs : 1;
    feed->first = feed->sent = feed->received = prior.s.cases;
    af_fuzz_limits_default(&feed->lim);
    af_fuzz_limits_set_work(&feed->lim, o->loop.max_work);
    feed->lim.max_cp = 1; /* the CP wrapper is opt-in (ATTNFUZZ_CP) */
    /* the workers first: forked before this process opens any session (claims_jobs.h) */
    if (status == 0 && feed->jobs > 1 &&
        af_claims_workers_start(&feed->w, feed->jobs, x, o->sel, &o->loop.facts, why, cap))
        status = -1;
    if (status == 0 && o->resume) reload_buckets(o, x, scratch, buckets, &n_buckets);
    *s = prior.s;
    double prior_elapsed = prior.s.elapsed_s;
    double t0 = af_clock_mono(), end_at = t0 + o->loop.time_s, last_stats = t0;
    feed->end_at = end_at;
    int got;
    while (status == 0 && (got = feed_next(feed, c, r, why, cap)) != 0) {
        if (af_clock_mono() - last_stats > 1) { /* DIR/stats.json about once a second */
            char w[512];
            s->elapsed_s = prior_elapsed + af_clock_mono() - t0;
            if (write_stats(o, s, unclaimed, n_unclaimed, prior.resumed, w, sizeof w) && o->log)
                fprintf(o->log, "campaign: %s\n", w);
            last_stats = af_clock_mono();
        }
        s->cases++;
        if (got < 0) {
            /* a selector that fails, a backend the policy names that does not exist:
             * every case would fail the same way */
            s->errors++;
            status = -1;
            break;
        }
        s->unclaimed += r->n_notes;
        note_unclaimed(r, c, unclaimed, &n_unclaimed);
        if (!r->choice.served) {
            s->none_chosen++;
            continue;
        }
        s->served++;
        if (r->verdict.n_findings == 0) continue;
        s->claim_mismatches++;
        char identity[AF_SIGNATURE_MAX];
        af_finding_identity(c, &r->verdict, identity, sizeof identity);
        int known = -1;
        for (int i = 0; i < n_buckets; i++)
            if (!strcmp(buckets[i].identity, identity)) known = i;
        if (known >= 0) { /* one bug, minimised once: counted in its bucket */
            cc_store(o, &buckets[known].best, &buckets[known].verdict, NULL);
            continue;
        }
        char line[1024];
        af_verdict_line(&r->verdict, line, sizeof line);
        if (o->log) fprintf(o->log, "campaign: %s: %s\n", r->choice.backend, line);
        af_min_opts mo;
        af_min_opts_default(&mo);
        mo.max_runs = o->loop.min_runs;
        double left = end_at - af_clock_mono();
        mo.max_seconds = left < o->loop.min_seconds ? left : o->loop.min_seconds;
        char chosen[AF_NAME_MAX];
        snprintf(chosen, sizeof chosen, "%s", r->choice.backend);
        cc_min_ctx m = {o, x, chosen, scratch};
        int mrc = mo.max_seconds >= 1 ? af_minimize(c, cc_min_run, &m, &mo, mr) : -1;
        const af_case *best = mrc == 0 ? &mr->best : c;
        const af_verdict *bv = mrc == 0 ? &mr->verdict : &r->verdict;
        cc_store(o, best, bv, c);
        s->minimised += mrc == 0;
        if (n_buckets < CC_MAX_BUCKETS) {
            cc_bucket *b = &buckets[n_buckets++];
            snprintf(b->identity, sizeof b->identity, "%s", identity);
            b->best = *best;
            b->verdict = *bv;
        }
    }
    if (feed->jobs > 1) af_claims_workers_stop(&feed->w);
    s->elapsed_s = prior_elapsed + af_clock_mono() - t0;
    af_triage_summary ts;
    memset(&ts, 0, sizeof ts);
    int resumed = prior.resumed;
    if (status == 0 && write_stats(o, s, unclaimed, n_unclaimed, resumed, why, cap)) status = -1;
    if (status == 0 && af_triage_build(o->out_dir, &ts, why, cap)) status = -1;
    s->buckets = ts.buckets;
    if (status == 0 && write_stats(o, s, unclaimed, n_unclaimed, resumed, why, cap)) status = -1; /* with the buckets */
    if (status == 0 && add_to_report(o->out_dir, unclaimed, n_unclaimed, why, cap)) status = -1;
    af_dir_lock_release(&lock);
    free(r), free(scratch), free(mr), free(buckets), free(unclaimed), free(feed), free(c);
    return status < 0 ? -1 : s->claim_mismatches ? 1 : 0;
}
