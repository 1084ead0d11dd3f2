/* test_plugin_features.c — the features through the plugin ABI (version 2), as a
 * specification:
 *   - planted:none serves softcap, sinks, bias, ALiBi and log2 stats in the forward and
 *     writes bit for bit what the cpu reference writes;
 *   - planted:ignores_softcap, planted:ignores_sinks and planted:ignores_bias (each
 *     accepts its feature and drops it) are found: a mismatch by the comparison, and
 *     feature_ignored by the feature probe alone (no oracle: toggling the feature off
 *     must move O); each passes cases without its feature;
 *   - the cpu reference and planted:none give the feature probe nothing to report;
 *   - flash_ref and the example plugin decline feature problems with a reason;
 *   - a score_mod (ABI 8) reaches plugins as AF_PLUGIN_FEAT_SCORE_MOD with its form:
 *     flash_ref and the example plugin decline it with a reason; the cpu reference and the
 *     planted plugins (forward) serve it, and planted:none gives the feature probe nothing
 *     to report while planted:score_mod_unscaled (the modifier on the unscaled q.k) is a
 *     mismatch on the same case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/tests/plugin_fixture.h"
#include "judge/tests/criterion_fixture.h"
#include "judge/runner.h"
#include "model/gen.h"
#include "util/check.h"

static void parse_case(af_case *c, const char *text) {
    af_error e;
    if (af_case_parse(text, "test", c, &e) != 0) {
        char msg[1024];
        af_error_format(&e, msg, sizeof msg);
        CHECK_MSG(false, "case does not parse: %s\n%s", msg, text);
    }
}

static const char *const softcap_case = "dtype = bf16\nseqlen_q = 33\nseqlen_kv = 70\nhead_dim = 32\nsoftcap = 5\n"
                                        "data = normal:3\nseed = 7\n";
static const char *const sinks_case = "dtype = fp16\nheads = 2\nseqlen = 40\nhead_dim = 32\nmask = causal\n"
                                      "softmax = learnable\nseed = 8\n";
static const char *const bias_case = "dtype = fp16\nbatch = 2\nheads = 3\nseqlen_q = 20\nseqlen_kv = 36\n"
                                     "head_dim = 32\nbias = bhss\nseed = 9\n";
static const char *const others_case = "dtype = bf16\nheads = 4\nseqlen_q = 24\nseqlen_kv = 40\nhead_dim = 32\n"
                                       "mask = causal_bottom_right\nalibi = yes\nstats = log2\nsoftmax = off_by_one\n"
                                       "seed = 10\n";

/* O and LSE buffers of be and of the cpu reference on the case, byte for byte. */
static void check_mirrors_cpu(af_backend *be, af_backend *cpu, const char *text) {
    af_case c;
    parse_case(&c, text);
    af_tensors a, b;
    af_inputs in;
    char why[512] = "";
    CHECK_MSG(af_tensors_alloc(&a, &c, why, sizeof why) == 0, "%s", why);
    CHECK(af_inputs_alloc(&in, &c) == 0);
    CHECK(af_inputs_generate(&c, &a, &in) == 0);
    af_inputs_free(&in);
    af_tensors_poison_outputs(&a, &c);
    CHECK_MSG(af_tensors_alloc(&b, &c, why, sizeof why) == 0, "%s", why);
    af_tensors_copy(&b, &a);
    af_run_info info;
    CHECK_MSG(be->run(be, &c, "", &a, &info, why, sizeof why) == AF_RUN_OK, "%s: %s", be->name, why);
    CHECK_MSG(cpu->run(cpu, &c, "", &b, &info, why, sizeof why) == AF_RUN_OK, "cpu: %s", why);
    af_buffer_id ids[2] = {AF_BUF_O, AF_BUF_LSE};
    for (int k = 0; k < 2; k++)
        CHECK_MSG(a.bytes[ids[k]] == b.bytes[ids[k]] &&
                      !memcmp(a.alloc[ids[k]], b.alloc[ids[k]], a.bytes[ids[k]] + 2 * AF_GUARD_BYTES),
                  "%s differs from cpu in buffer %s on:\n%s", be->name, af_buffer_name(ids[k]), text);
    af_tensors_free(&a);
    af_tensors_free(&b);
}

/* The verdict of the ordinary runner (fp64 oracle) with probes off. */
static af_verdict_kind judge(af_backend *be, const char *text) {
    af_case c;
    parse_case(&c, text);
    af_backend *cpu = af_backend_cpu_new();
    af_runner runner;
    memset(&runner, 0, sizeof runner);
    runner.reference = cpu;
    af_oracle_opts_default(&runner.oracle);
    runner.oracle.tier = AF_ORACLE_FP64;
    af_prepared prep;
    char why[512] = "";
    CHECK_MSG(af_prepare(&runner, &c, &prep, why, sizeof why) == 0, "%s", why);
    af_verdict v;
    af_judge(&runner, &prep, be, "", &v, NULL);
    af_prepared_free(&prep);
    cpu->destroy(cpu);
    return v.kind;
}

/* Runs the probes alone (no oracle) and returns how many feature_ignored findings name
 * the toggle `toggle` ("softcap -> none", ...); every finding's detail goes to stderr. */
static int feature_findings(af_backend *be, const char *text, const char *toggle) {
    af_case c;
    parse_case(&c, text);
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
    af_probe_opts_default(&o);
    af_probe_stats st;
    memset(&st, 0, sizeof st);
    af_probe_target tg = {&p.c, &p.tensors, &p.inputs, &out, &v.info, be, "", p.clones};
    af_probes_run(&o, &tg, &v, NULL, &st);
    int n = 0;
    for (int k = 0; k < v.n_findings && k < AF_MAX_FINDINGS; k++) {
        const af_finding *f = &v.findings[k];
        if (f->kind == AF_V_FEATURE_IGNORED) {
            fprintf(stderr, "  %s: feature_ignored: %s\n", be->name, f->detail);
            if (strstr(f->detail, toggle)) n++;
        }
    }
    CHECK_MSG(st.feature_toggles > 0, "%s: the feature probe toggled nothing on:\n%s", be->name, text);
    af_tensors_free(&out);
    af_prepared_free(&p);
    return n;
}

static const char *const score_mod_case = "dtype = fp16\nheads = 2\nseqlen = 24\nhead_dim = 32\nscore_mod = trig2\n"
                                          "seed = 12\n";

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    af_backend *none = fx_load_plugin("planted_none");
    const char *const cases[] = {softcap_case, sinks_case, bias_case, others_case};
    for (int k = 0; k < 4; k++) {
        check_mirrors_cpu(none, cpu, cases[k]);
        CHECK_MSG(judge(none, cases[k]) == AF_V_PASS, "planted:none fails:\n%s", cases[k]);
        CHECK_MSG(feature_findings(none, cases[k], "-> none") == 0, "planted:none: feature_ignored on:\n%s", cases[k]);
        CHECK_MSG(feature_findings(cpu, cases[k], "-> none") == 0, "cpu: feature_ignored on:\n%s", cases[k]);
    }
    static const struct {
        const char *plugin, *text, *toggle;
    } planted[] = {
        {"planted_ignores_softcap", softcap_case, "softcap -> none"},
        {"planted_ignores_sinks", sinks_case, "sinks -> none"},
        {"planted_ignores_bias", bias_case, "bias -> none"},
    };
    for (int k = 0; k < 3; k++) {
        af_backend *be = fx_load_plugin(planted[k].plugin);
        af_verdict_kind got = judge(be, planted[k].text);
        CHECK_MSG(got == AF_V_MISMATCH, "%s: verdict %s, expected mismatch", planted[k].plugin, af_verdict_name(got));
        int found = feature_findings(be, planted[k].text, planted[k].toggle);
        CHECK_MSG(found > 0, "%s: the feature probe did not find '%s' ignored", planted[k].plugin, planted[k].toggle);
        for (int other = 0; other < 4; other++) /* cases without its feature pass */
            if (other != k && !(k == 1 && other == 3))
                CHECK_MSG(judge(be, cases[other]) == AF_V_PASS, "%s fails a case without its feature:\n%s",
                          planted[k].plugin, cases[other]);
        be->destroy(be);
    }
    /* kernels that lack the features decline them, saying so */
    const char *const decliners[] = {"flash_ref", "example_plugin"};
    for (int k = 0; k < 2; k++) {
        af_backend *be = fx_load_plugin(decliners[k]);
        for (int f = 0; f < 4; f++) {
            af_case c;
            parse_case(&c, cases[f]);
            char why[512] = "";
            CHECK_MSG(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "features"),
                      "%s on a feature case: '%s'", decliners[k], why);
        }
        be->destroy(be);
    }
    /* score_mod: declined by every plugin of the tree, served by the cpu reference */
    CHECK_MSG(feature_findings(cpu, score_mod_case, "-> none") == 0, "cpu: feature_ignored on a score_mod case");
    const char *const score_mod_decliners[] = {"flash_ref", "example_plugin"};
    for (int k = 0; k < 2; k++) {
        af_backend *be = fx_load_plugin(score_mod_decliners[k]);
        af_case c;
        parse_case(&c, score_mod_case);
        char why[512] = "";
        CHECK_MSG(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "feature"),
                  "%s on a score_mod case: '%s'", score_mod_decliners[k], why);
        printf("%s declines score_mod: %s\n", score_mod_decliners[k], why);
        be->destroy(be);
    }
    /* the planted plugins serve it in the forward: the correct one passes, the bug does not */
    CHECK_MSG(feature_findings(none, score_mod_case, "-> none") == 0, "planted_none: feature_ignored on score_mod");
    af_case smc;
    parse_case(&smc, score_mod_case);
    char why[512] = "";
    CHECK_MSG(none->supports(none, &smc, why, sizeof why) == AF_RUN_OK, "planted_none declines score_mod: %s", why);
    af_prepared sp;
    af_backend *ref;
    fx_prepare(score_mod_case, &sp, &ref);
    const char *const served[] = {"planted_none", "planted_score_mod_unscaled"};
    for (int k = 0; k < 2; k++) {
        af_backend *be = fx_load_plugin(served[k]);
        af_verdict v;
        af_tensors out;
        af_outputs kout;
        fx_judge_run(&sp, ref, be, &v, &out, &kout);
        char line[1024];
        af_verdict_line(&v, line, sizeof line);
        printf("%s on score_mod = trig2: %s\n", served[k], line);
        if (k == 0)
            CHECK_MSG(v.kind == AF_V_PASS, "planted_none on score_mod: %s", line);
        else
            CHECK_MSG(v.kind == AF_V_MISMATCH, "planted_score_mod_unscaled: %s", line);
        af_outputs_free(&kout);
        af_tensors_free(&out);
        be->destroy(be);
    }
    af_prepared_free(&sp);
    ref->destroy(ref);
    none->destroy(none);
    cpu->destroy(cpu);
    printf("test_plugin_features: ok\n");
    return 0;
}
