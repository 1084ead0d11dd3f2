/* test_plan_counters.c — a verdict says how many of its builds' plans came from a plan
 * folder and went to it (af_judge_summary.plans_from_disk / plans_to_disk, JSON
 * judge.seconds.builds.plans_from_disk / plans_to_disk), from the backend's counters before
 * and after the case (run 0, the repeats, the probes' reruns). A backend stands in for
 * cudnn's plan folder: the cpu backend, whose every run reads 2 plans from the folder and
 * writes 1. Without such counts (the cpu backend itself) the JSON has neither key, so the
 * verdicts of runs without a folder are as they were.
 */
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/tests/probe_fixture.h"
#include "judge/verdict_json.h"
#include "util/check.h"

static af_backend *inner;          /* the cpu backend the stand-in runs */
static af_backend_counters totals; /* the stand-in's counters */
static int run_calls;              /* its runs */

static af_run_status folder_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                char *why, size_t cap) {
    (void)be;
    run_calls++;
    totals.plans_from_disk += 2;
    totals.plans_to_disk += 1;
    return inner->run(inner, c, engine, t, info, why, cap);
}

static void folder_counters(af_backend *be, af_backend_counters *out) {
    (void)be;
    *out = totals;
}

/* The key's integer in obj["judge"]["seconds"]["builds"], or -1 when it is absent. */
static long long builds_key(json_t *obj, const char *key) {
    json_t *b = json_object_get(json_object_get(json_object_get(obj, "judge"), "seconds"), "builds");
    json_t *x = b ? json_object_get(b, key) : NULL;
    return x && json_is_integer(x) ? (long long)json_integer_value(x) : -1;
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    CHECK(cpu != NULL);
    inner = cpu;
    af_backend folder = *cpu; /* the cpu backend's functions, its run and counters replaced */
    folder.name = "folder";
    folder.run = folder_run;
    folder.counters = folder_counters;
    folder.destroy = NULL;

    af_case c;
    fx_parse_case(&c, "dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 24\nseqlen_kv = 40\n"
                      "head_dim_qk = 32\nhead_dim_v = 32\nmask = causal\nbackward = yes\nseed = 5\n");
    for (int with_probes = 0; with_probes < 2; with_probes++) {
        af_runner r;
        fx_probe_runner(&r, cpu, with_probes);
        af_prepared p;
        char why[512] = "";
        CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
        af_verdict v;
        run_calls = 0;
        af_judge(&r, &p, &folder, "", &v, NULL);
        CHECK_MSG(v.kind == AF_V_PASS, "probes %d: verdict %d", with_probes, (int)v.kind);
        CHECK_MSG(run_calls >= 1 + with_probes, "probes %d: %d runs", with_probes, run_calls);
        CHECK_MSG(v.judge.plans_from_disk == 2LL * run_calls && v.judge.plans_to_disk == run_calls,
                  "probes %d: %d runs, %lld plans from the folder, %lld to it", with_probes, run_calls,
                  v.judge.plans_from_disk, v.judge.plans_to_disk);
        json_t *js = af_verdict_to_json("test.case", &v);
        CHECK(js != NULL);
        CHECK_MSG(builds_key(js, "plans_from_disk") == 2LL * run_calls && builds_key(js, "plans_to_disk") == run_calls,
                  "probes %d: JSON says %lld and %lld for %d runs", with_probes, builds_key(js, "plans_from_disk"),
                  builds_key(js, "plans_to_disk"), run_calls);
        json_decref(js);

        /* the cpu backend itself: no counters, no keys */
        af_verdict w;
        af_judge(&r, &p, cpu, "", &w, NULL);
        CHECK(w.kind == AF_V_PASS && w.judge.plans_from_disk == 0 && w.judge.plans_to_disk == 0);
        json_t *jw = af_verdict_to_json("test.case", &w);
        CHECK(jw != NULL && builds_key(jw, "plans_from_disk") == -1 && builds_key(jw, "plans_to_disk") == -1);
        json_decref(jw);
        af_prepared_free(&p);
    }
    cpu->destroy(cpu);
    CHECK_DONE("test_plan_counters");
}
