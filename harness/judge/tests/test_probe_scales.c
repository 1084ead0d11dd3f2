/* test_probe_scales.c — the scale-plumbing probe (judge/probes/scales.c), as a
 * specification:
 *   - the cpu reference and flash_fp8 (two fp8_e4m3 kernels that round differently)
 *     keep every stored output bitwise under each toggle (descale_v x2; descale_q x2
 *     with descale_k / 2; descale_do x2 in the backward, the output descales moved
 *     with them): forward 2 toggles, backward 3, no finding;
 *   - flash_fp8_bug:descale_v_ignored (descale_v fixed at 1.0) is found by the probe
 *     alone, no oracle: feature_ignored on O naming the descale_v toggle;
 *   - the same with the fuzzer's non-default scales (fp8_headroom);
 *   - the probe leaves other dtypes alone (0 toggles on fp16);
 *   - a signed zero is no moved output: the cpu backend with one O element stored as a
 *     zero whose sign follows descale_v (0 -> -0 when descale_v doubles: what a kernel
 *     that dequantises V on load does where an fp32 P v term underflows) passes; the same
 *     element stored 0 under one descale_v and E4M3's smallest subnormal under the other
 *     (a zero that became nonzero) is feature_ignored on O naming the descale_v toggle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/tests/plugin_fixture.h"
#include "judge/runner.h"
#include "util/check.h"

static const char *const fwd_case =
    "dtype = fp8_e4m3\nheads = 2\nseqlen_q = 48\nseqlen_kv = 80\nhead_dim = 64\nmask = causal\nseed = 3\n";
static const char *const bwd_case = "dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 64\n"
                                    "head_dim = 32\nmask = causal\nbackward = yes\nseed = 4\n";
static const char *const headroom_case = "dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 64\nmask = causal\n"
                                         "backward = yes\nfp8_headroom = 2,1,3,0,1\nseed = 53\n";
static const char *const fp16_case = "dtype = fp16\nheads = 2\nseqlen = 32\nhead_dim = 32\nbackward = yes\nseed = 5\n";

/* The scales probe alone (no oracle) on text; its findings' details that name `toggle`
 * are counted into *named; returns the number of feature_ignored findings. */
static int scale_findings(af_backend *be, const char *text, const char *toggle, int *named, int *toggles) {
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, "test", &c, &e) == 0, "case does not parse: %s", e.message);
    af_runner r;
    memset(&r, 0, sizeof r);
    r.skip_oracle = true;
    af_prepared p;
    char why[512] = "";
    CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
    af_tensors out;
    af_verdict v;
    af_judge(&r, &p, be, "", &v, &out);
    CHECK_MSG(v.kind != AF_V_DECLINED, "%s declined: %s", be->name, v.reason);
    af_probe_opts o;
    memset(&o, 0, sizeof o); /* the scales probe alone */
    o.scales = true;
    af_probe_stats st;
    af_probe_target tg = {&p.c, &p.tensors, &p.inputs, &out, &v.info, be, "", p.clones};
    af_verdict pv;
    af_verdict_init(&pv, be->name);
    af_probes_run(&o, &tg, &pv, NULL, &st);
    int n = 0;
    *named = 0;
    for (int k = 0; k < pv.n_findings && k < AF_MAX_FINDINGS; k++) {
        const af_finding *f = &pv.findings[k];
        printf("  %s: %s %s: %s\n", be->name, af_verdict_name(f->kind), af_tensor_name(f->tensor), f->detail);
        if (f->kind == AF_V_FEATURE_IGNORED) n++;
        if (toggle && strstr(f->detail, toggle)) (*named)++;
    }
    *toggles = st.scale_toggles;
    CHECK_MSG(pv.n_findings == n, "%s: findings other than feature_ignored", be->name);
    af_tensors_free(&out);
    af_prepared_free(&p);
    return n;
}

/* ---- the cpu backend with O element (0, 0, 0, 0) rewritten: an E4M3 +0 under the
 * descale_v of its first run (the judged run), and under any other (the descale_v x2
 * toggle) -0 (zero_sign) or the smallest subnormal 0x01 (zero_moves) ---- */
typedef struct {
    af_backend *cpu;
    bool moves;
    float first_descale_v; /* 0 before the first run */
} zero_state;

static af_run_status zero_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                              char *why, size_t cap) {
    zero_state *s = be->state;
    af_run_status st = s->cpu->run(s->cpu, c, engine, t, info, why, cap);
    if (st != AF_RUN_OK) return st;
    const af_tensor_view *w = &t->plan.view[AF_T_O];
    CHECK(w->storage == AF_ST_E4M3);
    if (s->first_descale_v == 0) s->first_descale_v = t->descale_v;
    uint8_t *at = (uint8_t *)t->buf[w->buffer] + af_layout_offset(&t->plan, AF_T_O, 0, 0, 0, 0);
    *at = t->descale_v == s->first_descale_v ? 0x00 : s->moves ? 0x01 : 0x80;
    return AF_RUN_OK;
}
static af_run_status zero_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    zero_state *s = be->state;
    return s->cpu->supports(s->cpu, c, why, cap);
}
static int zero_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    if (cap) why[0] = '\0';
    return 0;
}
static void zero_destroy(af_backend *be) {
    zero_state *s = be->state;
    s->cpu->destroy(s->cpu);
    free(s);
    free(be);
}
static af_backend *zero_new(bool moves) {
    af_backend *be = calloc(1, sizeof *be);
    zero_state *s = calloc(1, sizeof *s);
    CHECK(be && s && (s->cpu = af_backend_cpu_new()) != NULL);
    s->moves = moves;
    be->name = moves ? "zero_moves" : "zero_sign";
    be->description = "cpu backend with one O element a zero (or not) by descale_v";
    be->flags = AF_BACKEND_DETERMINISTIC;
    be->state = s;
    be->available = zero_available;
    be->supports = zero_supports;
    be->run = zero_run;
    be->destroy = zero_destroy;
    return be;
}

static void signed_zero(void) {
    af_backend *sign = zero_new(false), *moves = zero_new(true);
    int named, toggles;
    CHECK_MSG(scale_findings(sign, fwd_case, NULL, &named, &toggles) == 0 && toggles == 2,
              "0 -> -0 under descale_v x2 reported (%d toggles)", toggles);
    int n = scale_findings(moves, fwd_case, "descale_v x2", &named, &toggles);
    CHECK_MSG(n == 1 && named == 1 && toggles == 1, "0 -> 2^-9 descale_o: %d findings, %d named, %d toggles", n, named,
              toggles);
    printf("a zero whose sign follows descale_v passes; a zero that becomes nonzero is found\n");
    sign->destroy(sign);
    moves->destroy(moves);
}

int main(void) {
    signed_zero();
    af_backend *cpu = af_backend_cpu_new();
    af_backend *fp8 = fx_load_plugin("flash_fp8");
    af_backend *bug = fx_load_plugin("flash_fp8_bug_descale_v_ignored");
    af_backend *clean[2] = {cpu, fp8};
    int named, toggles;
    for (int k = 0; k < 2; k++) {
        CHECK_MSG(scale_findings(clean[k], fwd_case, NULL, &named, &toggles) == 0 && toggles == 2,
                  "%s forward: %d toggles", clean[k]->name, toggles);
        CHECK_MSG(scale_findings(clean[k], bwd_case, NULL, &named, &toggles) == 0 && toggles == 3,
                  "%s backward: %d toggles", clean[k]->name, toggles);
        CHECK_MSG(scale_findings(clean[k], headroom_case, NULL, &named, &toggles) == 0 && toggles == 3,
                  "%s backward with fp8_headroom: %d toggles", clean[k]->name, toggles);
        printf("%s keeps its bits under every scale toggle (forward 2, backward 3, with headroom 3)\n", clean[k]->name);
    }
    const char *const cases[3] = {fwd_case, bwd_case, headroom_case};
    for (int k = 0; k < 3; k++) {
        int n = scale_findings(bug, cases[k], "descale_v x2", &named, &toggles);
        CHECK_MSG(n == 1 && named == 1 && toggles == 1,
                  "descale_v_ignored on case %d: %d findings, %d named, %d toggles", k, n, named, toggles);
    }
    CHECK(scale_findings(cpu, fp16_case, NULL, &named, &toggles) == 0 && toggles == 0);
    bug->destroy(bug);
    fp8->destroy(fp8);
    cpu->destroy(cpu);
    CHECK_DONE("test_probe_scales");
}
