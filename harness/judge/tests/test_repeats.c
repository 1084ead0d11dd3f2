/* test_repeats.c — repeats of a nondeterministic backend (judge/runner.h), as a
 * specification, on probe_bug:racy (harness/plugins/probe_bug: flash_ref that, on a
 * pseudo-random third of its calls chosen by a call counter, moves 0.2 % of O by
 * 0.5..2.0; the test sets the counter and asks which calls strike):
 *   1. the race striking a probe run after clean runs: without repeats and reruns (the
 *      judge before repeats) some such case is reported as a leak of O, the wrong cause;
 *      with them no case is a leak: the move is reproduced by a rerun of the unperturbed
 *      case, reported nondeterministic, and the rerun that struck is judged: a mismatch
 *      of O whose finding names its run;
 *   2. a clean judged run and a struck repeat: a mismatch of O on run 1, the spread
 *      measured, the judged run's own statistics passing;
 *   3. a deterministic backend (flash_ref) runs once; repeats = 1 turns repeats off.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/runner.h"
#include "util/check.h"

typedef void (*racy_reset_fn)(uint64_t first_call);
typedef int (*racy_struck_fn)(uint64_t call);

typedef struct {
    af_backend *be;
    void *handle; /* the same loaded object as be's (dlopen of a loaded path) */
    racy_reset_fn reset;
    racy_struck_fn struck;
} racy_plugin;

static racy_plugin load_racy(void) {
    racy_plugin r;
    r.be = fx_load_plugin("probe_bug_racy");
    char path[1024];
    fx_plugin_path(AF_TEST_PLUGIN_DIR, "probe_bug_racy", path, sizeof path);
    r.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(r.handle != NULL, "%s", dlerror());
    r.reset = (racy_reset_fn)dlsym(r.handle, "attnfuzz_test_racy_reset");
    r.struck = (racy_struck_fn)dlsym(r.handle, "attnfuzz_test_racy_struck");
    CHECK(r.reset && r.struck);
    CHECK(!(r.be->flags & AF_BACKEND_DETERMINISTIC));
    return r;
}

static void parse_case(af_case *c, const char *text) {
    af_error e;
    if (af_case_parse(text, "test", c, &e) != 0) {
        char msg[1024];
        af_error_format(&e, msg, sizeof msg);
        CHECK_MSG(false, "case does not parse: %s\n%s", msg, text);
    }
}

/* The judge as the CLI and the campaign set it up; repeats and leak_reruns as given
 * (repeats 1 and leak_reruns 0: the judge before repeats). */
static void judge(af_backend *be, af_backend *cpu, const af_case *c, int repeats, int leak_reruns, bool probes,
                  af_verdict *v) {
    af_runner r;
    memset(&r, 0, sizeof r);
    r.reference = cpu;
    r.ref_choice = AF_REF_CPU;
    af_oracle_opts_default(&r.oracle);
    r.oracle.tier = AF_ORACLE_FP64;
    r.probes = probes;
    af_probe_opts_default(&r.probe_opts);
    r.probe_opts.leak_reruns = leak_reruns;
    r.repeats = repeats;
    af_prepared p;
    char why[512] = "";
    CHECK_MSG(af_prepare(&r, c, &p, why, sizeof why) == 0, "%s", why);
    af_judge(&r, &p, be, "", v, NULL);
    af_prepared_free(&p);
}

static int count_kind(const af_verdict *v, af_verdict_kind kind, af_tensor_id tensor) {
    int n = 0;
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        n += v->findings[i].kind == kind && (tensor == AF_T_COUNT || v->findings[i].tensor == tensor);
    return n;
}

static void print_verdict(const char *what, const af_verdict *v) {
    printf("  %s: %d runs, %d findings\n", what, v->runs, v->n_findings);
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        printf("    %s %s run %d: %.160s\n", af_verdict_name(v->findings[i].kind),
               af_tensor_name(v->findings[i].tensor), v->findings[i].repeat, v->findings[i].detail);
}

static const char *const race_case =
    "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 48\nhead_dim = 32\nmask = causal\nbackward = yes\n";

/* 1. The race strikes the first visibility run after three clean runs (calls n..n+2:
 * the judged run and two more, determinism's in the old judge, the repeats now) and
 * again within the reruns (n+4..n+7). */
static void race_in_a_probe_run(racy_plugin *rp, af_backend *cpu) {
    af_case c;
    parse_case(&c, race_case);
    int tried = 0, old_leaks = 0;
    for (uint64_t n = 0; n < 2000 && tried < 6; n++) {
        if (rp->struck(n) || rp->struck(n + 1) || rp->struck(n + 2) || !rp->struck(n + 3)) continue;
        bool rerun_strikes = false;
        for (uint64_t k = n + 4; k < n + 8; k++) rerun_strikes |= rp->struck(k) != 0;
        if (!rerun_strikes) continue;
        tried++;
        af_verdict old_v, new_v;
        rp->reset(n);
        judge(rp->be, cpu, &c, 1, 0, true, &old_v);
        rp->reset(n);
        judge(rp->be, cpu, &c, AF_REPEATS_DEFAULT, 4, true, &new_v);
        printf("first call %llu\n", (unsigned long long)n);
        print_verdict("without repeats", &old_v);
        print_verdict("with repeats", &new_v);
        old_leaks += count_kind(&old_v, AF_V_LEAK, AF_T_O) > 0;
        CHECK_MSG(count_kind(&new_v, AF_V_LEAK, AF_T_COUNT) == 0, "a race reported as a leak (first call %llu)",
                  (unsigned long long)n);
        CHECK(new_v.runs >= AF_REPEATS_DEFAULT + 1); /* the repeats and at least one rerun judged */
        bool named = false, told = false;
        for (int i = 0; i < new_v.n_findings && i < AF_MAX_FINDINGS; i++) {
            const af_finding *f = &new_v.findings[i];
            if (f->kind == AF_V_MISMATCH && f->tensor == AF_T_O && f->repeat >= AF_REPEATS_DEFAULT) {
                char want[64];
                snprintf(want, sizeof want, "run %d of the unperturbed case", f->repeat);
                named |= strstr(f->detail, want) != NULL;
            }
            told |= f->kind == AF_V_NONDETERMINISTIC && strstr(f->detail, "not a leak") != NULL;
        }
        CHECK_MSG(named, "no mismatch of O naming the rerun that struck (first call %llu)", (unsigned long long)n);
        CHECK_MSG(told, "no nondeterministic finding saying why it is not a leak (first call %llu)",
                  (unsigned long long)n);
        CHECK(new_v.stats[AF_T_O].ratio <= 1); /* the judged run itself was clean */
    }
    CHECK(tried == 6);
    CHECK_MSG(old_leaks > 0, "the judge without repeats reported no leak: the scenario did not happen");
    printf("race in a probe run: %d of %d cases a leak without repeats, none with\n", old_leaks, tried);
}

/* 2. A clean judged run (call n), a struck repeat (n + 1). */
static void race_in_a_repeat(racy_plugin *rp, af_backend *cpu) {
    af_case c;
    parse_case(&c, race_case);
    uint64_t n = 0;
    while (rp->struck(n) || !rp->struck(n + 1) || rp->struck(n + 2)) n++;
    rp->reset(n);
    af_verdict v;
    judge(rp->be, cpu, &c, AF_REPEATS_DEFAULT, 4, false, &v);
    print_verdict("struck repeat", &v);
    CHECK(v.runs == AF_REPEATS_DEFAULT);
    CHECK(v.kind == AF_V_MISMATCH);
    CHECK(v.n_findings >= 1 && v.findings[0].tensor == AF_T_O && v.findings[0].repeat == 1);
    CHECK(strstr(v.findings[0].detail, "run 1 of the unperturbed case") != NULL);
    for (int i = 0; i < v.n_findings && i < AF_MAX_FINDINGS; i++) CHECK(v.findings[i].repeat == 1);
    CHECK(v.stats[AF_T_O].ratio <= 1);   /* run 0 passes */
    CHECK(v.run_spread[AF_T_O] >= 0.25); /* a move of 0.5..2.0, rounded to fp16 */
    CHECK(v.run_spread[AF_T_DQ] == 0);   /* the race touches O only */
    /* one run only: the strike is not seen */
    rp->reset(n);
    judge(rp->be, cpu, &c, 1, 0, false, &v);
    CHECK(v.runs == 1 && v.kind == AF_V_PASS);
}

/* 3. A deterministic backend is judged once. */
static void deterministic_runs_once(af_backend *cpu) {
    af_backend *flash = fx_load_plugin("flash_ref");
    CHECK(flash->flags & AF_BACKEND_DETERMINISTIC);
    af_case c;
    parse_case(&c, race_case);
    af_verdict v;
    judge(flash, cpu, &c, AF_REPEATS_DEFAULT, 4, true, &v);
    print_verdict("flash_ref", &v);
    CHECK(v.runs == 1 && v.kind == AF_V_PASS);
    flash->destroy(flash);
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    racy_plugin rp = load_racy();
    race_in_a_probe_run(&rp, cpu);
    race_in_a_repeat(&rp, cpu);
    deterministic_runs_once(cpu);
    dlclose(rp.handle);
    rp.be->destroy(rp.be);
    cpu->destroy(cpu);
    CHECK_DONE("test_repeats");
}
