/* test_claims.c — engine_pin and engine_bar against the engine that really ran.
 *
 * A test backend ("engines_test") computes with the cpu reference (so every run is
 * correct) and lists two engines, "fast" and "slow"; it reports in af_run_info.engine
 * the engine it ran: the one asked for, "slow" when asked for none, and, with
 * fallback set, "slow" when asked for "fast" (the silent-fallback class). The claim check
 * runs it isolated (a forked child per case) like any backend:
 *   pin fast, backend honours it           -> pass (no finding)
 *   pin fast, backend falls back to slow   -> claim_mismatch naming both engines
 *   bar slow, default engine (slow) ran    -> claim_mismatch "bars it"
 *   bar slow, pin fast (fast ran)          -> pass
 * and the gate's and the claims campaign's defaults are one (af_claims_loop_default). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "gate/claims.h"
#include "gate/claims_campaign.h"
#include "gate/gate.h"
#include "model/case.h"
#include "select/selector.h"
#include "util/check.h"

typedef struct {
    af_backend *cpu;
    bool fallback; /* asked for "fast", runs (and reports) "slow" */
} engines_state;

static int eng_available(af_backend *be, char *why, size_t cap) {
    (void)be, (void)why, (void)cap;
    return 0;
}

static af_run_status eng_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    engines_state *st = be->state;
    return st->cpu->supports(st->cpu, c, why, cap);
}

static int eng_engines(af_backend *be, const af_case *c, char (*names)[AF_NAME_MAX], int cap, char *why,
                       size_t why_cap) {
    (void)be, (void)c, (void)why, (void)why_cap;
    if (cap < 2) return -1;
    snprintf(names[0], AF_NAME_MAX, "fast");
    snprintf(names[1], AF_NAME_MAX, "slow");
    return 2;
}

static af_run_status eng_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                             char *why, size_t cap) {
    engines_state *st = be->state;
    af_run_status rc = st->cpu->run(st->cpu, c, "", t, info, why, cap);
    const char *ran = engine && engine[0] ? engine : "slow";
    if (st->fallback && !strcmp(ran, "fast")) ran = "slow";
    snprintf(info->engine, sizeof info->engine, "%s", ran);
    return rc;
}

static void eng_destroy(af_backend *be) { (void)be; }

static af_case make_case(const char *text) {
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, "t.case", &c, &e) == 0, "case: %s", e.message);
    return c;
}

/* Claim-check case c under policy text with the test backend (fallback or not). */
static void check(const char *policy_text, bool fallback, const af_case *c, af_claim_result *r) {
    af_backend *cpu = af_backend_cpu_new();
    CHECK(cpu != NULL);
    engines_state st = {cpu, fallback};
    af_backend be;
    memset(&be, 0, sizeof be);
    be.name = "engines_test";
    be.description = "cpu arithmetic with two named engines (test_claims)";
    be.flags = AF_BACKEND_DETERMINISTIC;
    be.state = &st;
    be.available = eng_available;
    be.supports = eng_supports;
    be.engines = eng_engines;
    be.run = eng_run;
    be.destroy = eng_destroy;

    af_selector sel;
    memset(&sel, 0, sizeof sel);
    sel.policy = malloc(sizeof *sel.policy);
    CHECK(sel.policy != NULL);
    af_error e;
    CHECK_MSG(af_policy_parse(policy_text, "pin.policy", sel.policy, &e) == 0, "policy: %s", e.message);
    snprintf(sel.label, sizeof sel.label, "pin.policy");
    af_select_facts f;
    af_select_facts_unknown(&f);

    af_claims_ctx *x = malloc(sizeof *x);
    CHECK(x != NULL);
    af_claims_init(x);
    x->probes = false;
    CHECK(af_claims_add_backend(x, "engines_test", &be) == 0);
    char why[512] = "";
    CHECK_MSG(af_claims_check(x, &sel, &f, c, false, r, why, sizeof why) == 0, "claims check: %s", why);
    af_claims_close(x);
    free(x);
    af_selector_close(&sel);
    cpu->destroy(cpu);
}

int main(void) {
    af_case c = make_case("dtype = fp16\nbatch = 1\nheads = 2\nseqlen = 16\nhead_dim = 16\nmask = causal\n");
    af_claim_result *r = malloc(sizeof *r);
    CHECK(r != NULL);

    check("backend = engines_test\nengine_pin = fast\n", false, &c, r);
    CHECK(r->ran && r->choice.served && !strcmp(r->choice.engine, "fast"));
    CHECK_MSG(!strcmp(r->verdict.info.engine, "fast"), "engine that ran: '%s'", r->verdict.info.engine);
    CHECK_MSG(r->verdict.kind == AF_V_PASS && r->verdict.n_findings == 0, "matching pin: %s",
              af_verdict_name(r->verdict.kind));

    check("backend = engines_test\nengine_pin = fast\n", true, &c, r);
    CHECK_MSG(!strcmp(r->verdict.info.engine, "slow"), "engine that ran: '%s'", r->verdict.info.engine);
    CHECK_MSG(r->verdict.kind == AF_V_CLAIM_MISMATCH, "fallback: %s", af_verdict_name(r->verdict.kind));
    CHECK(r->verdict.n_findings >= 1 && r->verdict.findings[0].kind == AF_V_CLAIM_MISMATCH);
    CHECK_MSG(strstr(r->verdict.findings[0].detail, "engine 'slow' ran; pin.policy:1 pins 'fast'") != NULL,
              "detail: %s", r->verdict.findings[0].detail);

    check("backend = engines_test\nengine_bar = turbo,slow\n", false, &c, r);
    CHECK_MSG(r->verdict.kind == AF_V_CLAIM_MISMATCH, "barred: %s", af_verdict_name(r->verdict.kind));
    CHECK_MSG(strstr(r->verdict.findings[0].detail, "engine 'slow' ran; pin.policy:1 bars it") != NULL, "detail: %s",
              r->verdict.findings[0].detail);

    check("backend = engines_test\nengine_pin = fast\nengine_bar = slow\n", false, &c, r);
    CHECK_MSG(r->verdict.kind == AF_V_PASS, "pin fast, bar slow: %s", af_verdict_name(r->verdict.kind));

    /* the gate and the claims campaign take their loop settings from one default */
    af_gate_opts go;
    af_claims_campaign_opts co;
    af_gate_opts_default(&go);
    af_claims_campaign_opts_default(&co);
    CHECK(memcmp(&go.loop, &co.loop, sizeof go.loop) == 0);
    CHECK(go.loop.time_s == 60 && go.loop.seed == 1 && go.loop.max_work == 1 << 18 && go.loop.min_runs == 120 &&
          go.loop.min_seconds == 60 && go.loop.probes && go.loop.facts.sm == 0);

    free(r);
    printf("test_claims: ok\n");
    return 0;
}
