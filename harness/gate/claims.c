/* gate/claims.c — the claim check (claims.h). */
#include "gate/claims.h"

#include <stdlib.h>
#include <string.h>

void af_claims_loop_default(af_claims_loop_opts *o) {
    memset(o, 0, sizeof *o);
    af_select_facts_unknown(&o->facts);
    o->time_s = 60;
    o->seed = 1;
    o->max_work = 1 << 18;
    o->min_runs = 120;
    o->min_seconds = 60;
    o->probes = true;
}

void af_claims_init(af_claims_ctx *x) {
    memset(x, 0, sizeof *x);
    x->probes = true;
    x->deadline_s = AF_DEADLINE_CPU_S;
}

void af_claims_close(af_claims_ctx *x) {
    for (int i = 0; i < x->n; i++)
        if (x->sessions[i].open_rc == 0) af_session_close(&x->sessions[i].s);
    x->n = 0;
}

int af_claims_add_backend(af_claims_ctx *x, const char *name, af_backend *be) {
    if (x->n_given == AF_CLAIMS_MAX_SESSIONS) return -1;
    af_claims_given *g = &x->given[x->n_given++];
    snprintf(g->name, sizeof g->name, "%s", name);
    g->be = be;
    return 0;
}

static af_backend *given_backend(const af_claims_ctx *x, const char *name) {
    for (int i = 0; i < x->n_given; i++)
        if (!strcmp(x->given[i].name, name)) return x->given[i].be;
    return NULL;
}

static af_claims_session *session_for(af_claims_ctx *x, const char *backend) {
    for (int i = 0; i < x->n; i++)
        if (!strcmp(x->sessions[i].name, backend)) return &x->sessions[i];
    if (x->n == AF_CLAIMS_MAX_SESSIONS) return NULL;
    af_claims_session *cs = &x->sessions[x->n++];
    memset(cs, 0, sizeof *cs);
    snprintf(cs->name, sizeof cs->name, "%s", backend);
    unsigned flags = AF_SESSION_NO_LIMITS | (x->in_process ? AF_SESSION_INPROCESS : AF_SESSION_ISOLATE);
    if (af_session_open_ex(&cs->s, backend, given_backend(x, backend), "", "", flags, cs->why, sizeof cs->why)) {
        cs->open_rc = -1;
        cs->open_error = cs->s.open_error;
        return cs;
    }
    cs->s.runner.probes = x->probes;
    if (x->runner_set) {
        cs->s.runner.oracle = x->oracle;
        cs->s.runner.ref_choice = x->ref_choice;
        cs->s.runner.repeats = x->repeats;
        cs->s.max_memory = x->max_memory;
    }
    return cs;
}

int af_claims_run(af_claims_ctx *x, const char *backend, const char *engine, const af_case *c, af_verdict *v, char *why,
                  size_t cap) {
    af_claims_session *cs = session_for(x, backend);
    if (!cs) {
        snprintf(why, cap, "more than %d backends", AF_CLAIMS_MAX_SESSIONS);
        return -1;
    }
    if (cs->open_rc) {
        if (cs->open_error == AF_OPEN_UNAVAILABLE) { /* e.g. cudnn on a machine without GPU */
            af_verdict_init(v, backend);
            v->kind = AF_V_DECLINED;
            snprintf(v->reason, sizeof v->reason, "unavailable here: %s", cs->why);
            return 0;
        }
        snprintf(why, cap, "%s", cs->why);
        return -1;
    }
    af_case run_case = *c;
    snprintf(run_case.backend, sizeof run_case.backend, "%s", backend);
    snprintf(run_case.engine, sizeof run_case.engine, "%s", engine ? engine : "");
    af_session_result *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    if (x->in_process)
        af_session_run(&cs->s, &run_case, AF_STORE_NONE, NULL, r);
    else
        af_session_run_isolated(&cs->s, &run_case, AF_STORE_NONE, NULL, x->deadline_s, r);
    int rc = 0;
    if (r->status == AF_CASE_NOT_RUN) {
        snprintf(why, cap, "%s: %s", backend, r->why);
        rc = -1;
    } else
        *v = r->verdict;
    free(r);
    return rc;
}

/* Put f first (the verdict's kind becomes claim_mismatch), keeping the others behind it. */
static void prepend_finding(af_verdict *v, const af_finding *f) {
    int keep = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS - 1;
    memmove(&v->findings[1], &v->findings[0], (size_t)keep * sizeof v->findings[0]);
    v->findings[0] = *f;
    v->n_findings = keep + 1;
    v->kind = f->kind;
}

void af_claim_judge(const af_choice *ch, const char *label, af_verdict *v) {
    if (!ch->served) return;
    char where[600];
    if (ch->entry)
        snprintf(where, sizeof where, "%s:%d", label, ch->entry->line);
    else
        snprintf(where, sizeof where, "%s", label);
    char detail[1024];
    if (v->kind == AF_V_DECLINED) {
        snprintf(detail, sizeof detail, "%s declined a case %s claims: %s", v->backend, where, v->reason);
        af_finding f = af_finding_at(AF_V_CLAIM_MISMATCH, AF_T_NONE, -1, -1, -1, -1, detail);
        prepend_finding(v, &f);
        return;
    }
    if (v->n_findings > 0 && v->findings[0].kind != AF_V_CLAIM_MISMATCH) {
        const af_finding *first = &v->findings[0];
        snprintf(detail, sizeof detail, "claimed by %s, failed: %s %s", where, af_verdict_name(first->kind),
                 first->detail);
        af_finding f =
            af_finding_at(AF_V_CLAIM_MISMATCH, first->tensor, first->b, first->h, first->row, first->col, detail);
        f.error = first->error;
        f.allowed = first->allowed;
        f.ratio = first->ratio;
        f.kernel_value = first->kernel_value;
        f.baseline_value = first->baseline_value;
        prepend_finding(v, &f);
        return;
    }
    const char *ran = v->info.engine;
    if (ch->engine[0] && strcmp(ran, ch->engine)) {
        snprintf(detail, sizeof detail, "engine '%s' ran; %s pins '%s' (a silent fallback)", ran, where, ch->engine);
        af_finding f = af_finding_at(AF_V_CLAIM_MISMATCH, AF_T_NONE, -1, -1, -1, -1, detail);
        prepend_finding(v, &f);
        return;
    }
    if (ch->entry)
        for (int i = 0; i < ch->entry->n_barred; i++)
            if (!strcmp(ran, ch->entry->engine_bar[i])) {
                snprintf(detail, sizeof detail, "engine '%s' ran; %s bars it", ran, where);
                af_finding f = af_finding_at(AF_V_CLAIM_MISMATCH, AF_T_NONE, -1, -1, -1, -1, detail);
                prepend_finding(v, &f);
                return;
            }
}

int af_claims_check(af_claims_ctx *x, const af_selector *sel, const af_select_facts *f, const af_case *c,
                    bool try_declined, af_claim_result *out, char *why, size_t cap) {
    memset(out, 0, sizeof *out);
    if (af_selector_choose(sel, c, f, &out->choice, why, cap)) return -1;
    const af_choice *ch = &out->choice;
    af_verdict_init(&out->verdict, ch->served ? ch->backend : "none");
    if (ch->served) {
        if (af_claims_run(x, ch->backend, ch->engine, c, &out->verdict, why, cap)) return -1;
        out->ran = true;
        af_claim_judge(ch, sel->label, &out->verdict);
    }
    if (!try_declined) return 0;
    for (int i = 0; i < ch->n_reasons && out->n_notes < AF_CLAIMS_MAX_NOTES; i++) {
        const af_choice_reason *r = &ch->reasons[i];
        if (!r->line || r->claims || !strcmp(r->backend, ch->backend)) continue; /* a command's; claimed; chosen */
        bool seen = false;
        for (int j = 0; j < i; j++) seen |= !strcmp(ch->reasons[j].backend, r->backend);
        if (seen) continue;
        af_verdict *tried = malloc(sizeof *tried);
        if (!tried) break;
        char w[512];
        if (af_claims_run(x, r->backend, "", c, tried, w, sizeof w) == 0 && tried->kind == AF_V_PASS)
            snprintf(out->notes[out->n_notes++], sizeof out->notes[0],
                     "unclaimed capability: %s serves this case correctly (the policy declines it: %s)", r->backend,
                     r->reason);
        free(tried);
    }
    return 0;
}
