/* gate/claims_campaign.c — a campaign of claim checks (claims_campaign.h). */
#include "gate/claims_campaign.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
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
                       int n_u, char *why, size_t cap) {
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
    json_object_set_new(j, "jobs", json_integer(1));
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

int af_claims_campaign_run(const af_claims_campaign_opts *o, af_claims_ctx *x, af_claims_campaign_summary *s, char *why,
                           size_t cap) {
    memset(s, 0, sizeof *s);
    if (!o->out_dir || !o->sel) {
        snprintf(why, cap, "campaign: a selector and an output directory are required");
        return -1;
    }
    if (af_mkdirs(o->out_dir, why, cap)) return -1;
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_fuzz_limits_set_work(&lim, o->loop.max_work);
    lim.max_cp = 1; /* the CP wrapper is opt-in (ATTNFUZZ_CP) */
    af_claim_result *r = malloc(sizeof *r), *scratch = malloc(sizeof *scratch);
    af_min_result *mr = malloc(sizeof *mr);
    cc_bucket *buckets = calloc(CC_MAX_BUCKETS, sizeof *buckets);
    cc_unclaimed *unclaimed = calloc(CC_MAX_UNCLAIMED, sizeof *unclaimed);
    if (!r || !scratch || !mr || !buckets || !unclaimed) {
        free(r), free(scratch), free(mr), free(buckets), free(unclaimed);
        snprintf(why, cap, "campaign: out of memory");
        return -1;
    }
    x->probes = o->loop.probes;
    if (o->deadline_s > 0) x->deadline_s = o->deadline_s;
    int n_buckets = 0, n_unclaimed = 0, status = 0;
    uint64_t rng = o->loop.seed ? o->loop.seed : 1;
    double t0 = af_clock_mono(), end_at = t0 + o->loop.time_s, last_stats = t0;
    while (af_clock_mono() < end_at) {
        if (af_clock_mono() - last_stats > 1) { /* DIR/stats.json about once a second */
            char w[512];
            s->elapsed_s = af_clock_mono() - t0;
            if (write_stats(o, s, unclaimed, n_unclaimed, w, sizeof w) && o->log) fprintf(o->log, "campaign: %s\n", w);
            last_stats = af_clock_mono();
        }
        uint8_t bytes[160];
        size_t len = 8 + af_fuzz_rand(&rng) % (sizeof bytes - 8);
        for (size_t i = 0; i < len; i++) bytes[i] = (uint8_t)af_fuzz_rand(&rng);
        af_case c;
        af_fuzz_decode(bytes, len, &lim, &c);
        c.backend[0] = c.engine[0] = 0;
        s->cases++;
        char w[1024];
        if (af_claims_check(x, o->sel, &o->loop.facts, &c, true, r, w, sizeof w)) {
            /* a selector that fails, a backend the policy names that does not exist:
             * every case would fail the same way */
            s->errors++;
            snprintf(why, cap, "%s", w);
            status = -1;
            break;
        }
        s->unclaimed += r->n_notes;
        note_unclaimed(r, &c, unclaimed, &n_unclaimed);
        if (!r->choice.served) {
            s->none_chosen++;
            continue;
        }
        s->served++;
        if (r->verdict.n_findings == 0) continue;
        s->claim_mismatches++;
        char identity[AF_SIGNATURE_MAX];
        af_finding_identity(&c, &r->verdict, identity, sizeof identity);
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
        int mrc = mo.max_seconds >= 1 ? af_minimize(&c, cc_min_run, &m, &mo, mr) : -1;
        const af_case *best = mrc == 0 ? &mr->best : &c;
        const af_verdict *bv = mrc == 0 ? &mr->verdict : &r->verdict;
        cc_store(o, best, bv, &c);
        s->minimised += mrc == 0;
        if (n_buckets < CC_MAX_BUCKETS) {
            cc_bucket *b = &buckets[n_buckets++];
            snprintf(b->identity, sizeof b->identity, "%s", identity);
            b->best = *best;
            b->verdict = *bv;
        }
    }
    s->elapsed_s = af_clock_mono() - t0;
    af_triage_summary ts;
    memset(&ts, 0, sizeof ts);
    if (status == 0 && write_stats(o, s, unclaimed, n_unclaimed, why, cap)) status = -1;
    if (status == 0 && af_triage_build(o->out_dir, &ts, why, cap)) status = -1;
    s->buckets = ts.buckets;
    if (status == 0 && write_stats(o, s, unclaimed, n_unclaimed, why, cap)) status = -1; /* with the buckets */
    if (status == 0 && add_to_report(o->out_dir, unclaimed, n_unclaimed, why, cap)) status = -1;
    free(r), free(scratch), free(mr), free(buckets), free(unclaimed);
    return status < 0 ? -1 : s->claim_mismatches ? 1 : 0;
}
