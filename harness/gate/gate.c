/* gate/gate.c — the selection gate (gate.h). */
#include "gate/gate.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "judge/signature.h"
#include "judge/verdict_json.h"
#include "minimize/minimize.h"
#include "triage/findings.h"
#include "triage/report.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/json.h"

void af_gate_opts_default(af_gate_opts *o) {
    memset(o, 0, sizeof *o);
    af_claims_loop_default(&o->loop);
}

typedef enum { DIFF_NEWLY = 0, DIFF_LOST, DIFF_SWITCHED } diff_kind;
static const char *const diff_names[] = {"newly_served", "no_longer_served", "switched"};

/* What the minimiser runs. Newly chosen failures: the head's claim check of a candidate;
 * a candidate the head no longer routes to the same backend does not keep the finding
 * (-1). Regressions: a candidate the base still routes to the same backend while the
 * head serves it with nothing keeps the regression's verdict. */
typedef struct {
    af_claims_ctx *claims;
    const af_gate_opts *o;
    const char *backend;
    bool regression;
    af_claim_result *scratch;
    af_choice *base_choice;
} min_ctx;

static void lost_verdict(const af_choice *base, const af_choice *head, const af_gate_opts *o, af_verdict *v);

static int min_run(const af_case *c, void *user, af_verdict *v) {
    min_ctx *m = user;
    char why[512];
    if (m->regression) {
        if (af_selector_choose(m->o->base, c, &m->o->loop.facts, m->base_choice, why, sizeof why)) return -1;
        if (!m->base_choice->served || strcmp(m->base_choice->backend, m->backend)) return -1;
        af_choice *head = &m->scratch->choice;
        if (af_selector_choose(m->o->head, c, &m->o->loop.facts, head, why, sizeof why) || head->served) return -1;
        lost_verdict(m->base_choice, head, m->o, v);
        return 0;
    }
    if (af_claims_check(m->claims, m->o->head, &m->o->loop.facts, c, false, m->scratch, why, sizeof why)) return -1;
    if (!m->scratch->choice.served || strcmp(m->scratch->choice.backend, m->backend)) return -1;
    *v = m->scratch->verdict;
    return 0;
}

/* One minimised bucket: failures of the same identity (kind|backend|tensor: what the
 * minimiser keeps) count in it and are not minimised again. */
typedef struct {
    char identity[AF_SIGNATURE_MAX];
    char bucket[AF_BUCKET_ID_LEN + 1];
    af_case best;
    af_verdict verdict;
} gate_bucket;

static json_t *choice_json(const af_choice *ch) {
    json_t *j = json_object();
    json_object_set_new(j, "backend", ch->served ? af_json_text(ch->backend) : json_null());
    json_object_set_new(j, "engine", af_json_text(ch->engine));
    json_t *reasons = json_array();
    for (int i = 0; i < ch->n_reasons; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "backend", af_json_text(ch->reasons[i].backend));
        json_object_set_new(r, "line", json_integer(ch->reasons[i].line));
        json_object_set_new(r, "reason", af_json_text(ch->reasons[i].reason));
        json_array_append_new(reasons, r);
    }
    json_object_set_new(j, "not_chosen", reasons);
    return j;
}

static void case_text_json(json_t *obj, const char *key, const af_case *c) {
    char text[16384];
    af_case_print(c, text, sizeof text);
    json_object_set_new(obj, key, af_json_text(text));
}

/* The regression as a stored finding: claim_mismatch on the base's backend. */
static void lost_verdict(const af_choice *base, const af_choice *head, const af_gate_opts *o, af_verdict *v) {
    af_verdict_init(v, base->backend);
    char detail[1024];
    int len = snprintf(detail, sizeof detail, "no longer served: %s chose %s, %s chooses none", o->base->label,
                       base->backend, o->head->label);
    for (int i = 0; i < head->n_reasons && len > 0 && (size_t)len < sizeof detail; i++)
        len += snprintf(detail + len, sizeof detail - (size_t)len, "; %s: %s", head->reasons[i].backend,
                        head->reasons[i].reason);
    af_finding f = af_finding_at(AF_V_CLAIM_MISMATCH, AF_T_NONE, -1, -1, -1, -1, detail);
    af_verdict_add(v, &f);
    snprintf(v->reason, sizeof v->reason, "%s", detail);
}

static int store(const af_gate_opts *o, const af_case *c, const af_verdict *v, const af_case *original,
                 char bucket[AF_BUCKET_ID_LEN + 1]) {
    af_finding_extra extra;
    memset(&extra, 0, sizeof extra);
    extra.original = original;
    char why[512];
    int rc = af_finding_store(o->out_dir, c, v, &extra, bucket, why, sizeof why);
    if (rc < 0 && o->log) fprintf(o->log, "gate: storing a finding: %s\n", why);
    return rc;
}

/* The state of one gate run, shared by the loop and the failure handling. */
typedef struct {
    const af_gate_opts *o;
    af_gate_summary *s;
    af_claims_ctx *claims;
    af_claim_result *scratch;
    af_min_result *mr;
    af_choice *min_base; /* the minimiser's base choice (regressions) */
    gate_bucket *buckets;
    int n_buckets;
    double end_at; /* monotonic end of --time: minimisations count inside it */
} gate_state;

/* A failing configuration (newly chosen backend failed its claim, or a regression):
 * counted in the bucket of its identity when that was minimised already; else minimised
 * (within what is left of --time and --minimize-time) and stored as a new bucket. The
 * item gets "bucket", and "minimised" / "minimised_verdict" when it was minimised. */
static void handle_failure(gate_state *g, const af_case *c, const af_verdict *v, const char *backend, bool regression,
                           json_t *item, char bucket[AF_BUCKET_ID_LEN + 1]) {
    const af_gate_opts *o = g->o;
    char identity[AF_SIGNATURE_MAX];
    af_finding_identity(c, v, identity, sizeof identity);
    for (int i = 0; i < g->n_buckets; i++)
        if (!strcmp(g->buckets[i].identity, identity)) {
            store(o, &g->buckets[i].best, &g->buckets[i].verdict, NULL, bucket); /* counted: count + 1 */
            json_object_set_new(item, "deduplicated", json_true());
            if (o->log)
                fprintf(o->log, "gate: same failure as bucket %s (%s): not minimised again\n", bucket, identity);
            return;
        }
    double left = g->end_at - af_clock_mono();
    af_min_opts mo;
    af_min_opts_default(&mo);
    mo.max_runs = o->loop.min_runs;
    mo.max_seconds = left < o->loop.min_seconds ? left : o->loop.min_seconds;
    int mrc = -1;
    if (mo.max_seconds >= 1) {
        min_ctx m = {g->claims, o, backend, regression, g->scratch, g->min_base};
        mrc = af_minimize(c, min_run, &m, &mo, g->mr);
    } else if (o->log)
        fprintf(o->log, "gate: no time left in --time to minimise %s: stored as found\n", identity);
    const af_case *best = mrc == 0 ? &g->mr->best : c;
    const af_verdict *bv = mrc == 0 ? &g->mr->verdict : v;
    store(o, best, bv, c, bucket);
    case_text_json(item, "minimised", best);
    json_object_set_new(item, "minimised_verdict", af_verdict_to_json(NULL, bv));
    if (mrc == 0 && o->log)
        fprintf(o->log, "gate: minimised in %d runs (cost %.0f -> %.0f), bucket %s\n", g->mr->runs, g->mr->cost_before,
                g->mr->cost_after, bucket);
    if (g->n_buckets < AF_GATE_MAX_BUCKETS && bucket[0]) {
        gate_bucket *b = &g->buckets[g->n_buckets++];
        snprintf(b->identity, sizeof b->identity, "%s", identity);
        snprintf(b->bucket, sizeof b->bucket, "%s", bucket);
        b->best = *best;
        b->verdict = *bv;
    }
}

int af_gate_run(const af_gate_opts *o, af_gate_summary *s, char *why, size_t cap) {
    memset(s, 0, sizeof *s);
    if (!o->out_dir || !o->base || !o->head) {
        snprintf(why, cap, "gate: base, head and an output directory are required");
        return -1;
    }
    if (af_mkdirs(o->out_dir, why, cap)) return -1;
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_fuzz_limits_set_work(&lim, o->loop.max_work);
    lim.max_cp = 1; /* the CP wrapper is opt-in (ATTNFUZZ_CP); policies decline cp > 1 */
    gate_state g;
    memset(&g, 0, sizeof g);
    g.o = o;
    g.s = s;
    g.claims = malloc(sizeof *g.claims);
    af_claim_result *res = malloc(sizeof *res);
    g.scratch = malloc(sizeof *g.scratch);
    g.mr = malloc(sizeof *g.mr);
    g.min_base = malloc(sizeof *g.min_base);
    af_choice *base = malloc(sizeof *base);
    g.buckets = calloc(AF_GATE_MAX_BUCKETS, sizeof *g.buckets);
    json_t *listed = json_array();
    if (!g.claims || !res || !g.scratch || !g.mr || !g.min_base || !base || !g.buckets || !listed) {
        snprintf(why, cap, "gate: out of memory");
        free(g.claims), free(res), free(g.scratch), free(g.mr), free(g.min_base), free(base), free(g.buckets);
        json_decref(listed);
        return -1;
    }
    af_claims_init(g.claims);
    g.claims->probes = o->loop.probes;
    int status = 0;
    uint64_t rng = o->loop.seed ? o->loop.seed : 1;
    double t0 = af_clock_mono();
    g.end_at = t0 + o->loop.time_s;
    while (status == 0 && af_clock_mono() < g.end_at) {
        uint8_t bytes[160];
        size_t len = 8 + af_fuzz_rand(&rng) % (sizeof bytes - 8);
        for (size_t i = 0; i < len; i++) bytes[i] = (uint8_t)af_fuzz_rand(&rng);
        af_case c;
        af_fuzz_decode(bytes, len, &lim, &c);
        c.backend[0] = c.engine[0] = 0;
        s->examined++;
        if (af_selector_choose(o->base, &c, &o->loop.facts, base, why, cap)) {
            status = -1;
            break;
        }
        af_claim_result *r = res;
        bool same_choice = false;
        {
            af_choice head;
            if (af_selector_choose(o->head, &c, &o->loop.facts, &head, why, cap)) {
                status = -1;
                break;
            }
            same_choice =
                base->served == head.served &&
                (!base->served || (!strcmp(base->backend, head.backend) && !strcmp(base->engine, head.engine)));
        }
        if (same_choice) continue;
        s->differing++;
        /* the head's claim check runs the newly chosen backend (and chooses again: a
         * command selector answers the same for the same case text) */
        if (af_claims_check(g.claims, o->head, &o->loop.facts, &c, false, r, why, cap)) {
            status = -1;
            break;
        }
        diff_kind kind = !base->served ? DIFF_NEWLY : !r->choice.served ? DIFF_LOST : DIFF_SWITCHED;
        json_t *item = json_object();
        json_object_set_new(item, "change", json_string(diff_names[kind]));
        case_text_json(item, "case", &c);
        json_object_set_new(item, "base", choice_json(base));
        json_object_set_new(item, "head", choice_json(&r->choice));
        char bucket[AF_BUCKET_ID_LEN + 1] = "";
        if (kind == DIFF_LOST) {
            s->no_longer_served++;
            af_verdict *v = malloc(sizeof *v);
            if (!v) {
                json_decref(item);
                snprintf(why, cap, "gate: out of memory");
                status = -1;
                break;
            }
            lost_verdict(base, &r->choice, o, v);
            json_object_set_new(item, "verdict", af_verdict_to_json(NULL, v));
            if (o->log) fprintf(o->log, "gate: no longer served (%s -> none): %s\n", base->backend, v->reason);
            char lost_backend[AF_NAME_MAX];
            snprintf(lost_backend, sizeof lost_backend, "%s", base->backend);
            handle_failure(&g, &c, v, lost_backend, true, item, bucket);
            free(v);
        } else {
            if (kind == DIFF_NEWLY)
                s->newly_served++;
            else
                s->switched++;
            af_verdict *v = &r->verdict;
            json_object_set_new(item, "verdict", af_verdict_to_json(NULL, v));
            if (v->n_findings > 0) {
                s->newly_failed++;
                char line[1024];
                af_verdict_line(v, line, sizeof line);
                if (o->log) fprintf(o->log, "gate: %s %s fails: %s\n", diff_names[kind], r->choice.backend, line);
                handle_failure(&g, &c, v, r->choice.backend, false, item, bucket);
            }
        }
        json_object_set_new(item, "bucket", bucket[0] ? json_string(bucket) : json_null());
        if (json_array_size(listed) < AF_GATE_MAX_LISTED)
            json_array_append_new(listed, item);
        else
            json_decref(item);
    }
    af_claims_close(g.claims);
    int result = status < 0 ? -1 : (s->newly_failed || s->no_longer_served) ? 1 : 0;
    if (status == 0) {
        af_triage_summary ts;
        if (af_triage_build(o->out_dir, &ts, why, cap))
            result = -1;
        else
            s->buckets = ts.buckets; /* the buckets on disk (minimised cases merge) */
    }
    s->elapsed_s = af_clock_mono() - t0;
    if (result >= 0) {
        json_t *j = json_object();
        json_object_set_new(j, "base", af_json_text(o->base->label));
        json_object_set_new(j, "head", af_json_text(o->head->label));
        json_object_set_new(j, "seed", json_integer((json_int_t)o->loop.seed));
        json_object_set_new(j, "time_s", af_json_real(o->loop.time_s));
        json_object_set_new(j, "elapsed_s", af_json_real(s->elapsed_s));
        json_object_set_new(j, "minimize_time_s", af_json_real(o->loop.min_seconds));
        json_object_set_new(j, "passed", json_boolean(result == 0));
        json_object_set_new(j, "examined", json_integer(s->examined));
        json_object_set_new(j, "differing", json_integer(s->differing));
        json_object_set_new(j, "newly_served", json_integer(s->newly_served));
        json_object_set_new(j, "no_longer_served", json_integer(s->no_longer_served));
        json_object_set_new(j, "switched", json_integer(s->switched));
        json_object_set_new(j, "newly_chosen_failed", json_integer(s->newly_failed));
        json_object_set_new(j, "buckets", json_integer(s->buckets));
        json_object_set_new(j, "minimised", json_integer(g.n_buckets));
        json_object_set_new(j, "configurations", listed);
        listed = NULL;
        char *text = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
        json_decref(j);
        char path[1200];
        snprintf(path, sizeof path, "%s/gate.json", o->out_dir);
        if (!text || af_write_file_atomic(path, text, strlen(text), why, cap)) result = -1;
        free(text);
    }
    s->minimised = g.n_buckets;
    json_decref(listed);
    free(g.claims), free(res), free(g.scratch), free(g.mr), free(g.min_base), free(base), free(g.buckets);
    return result;
}
