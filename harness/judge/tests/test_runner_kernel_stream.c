/* test_runner_kernel_stream.c — the runner on dropout_rng = kernel cases (runner.h,
 * oracle_deferred), with the cpu backend (its own Philox key, mask returned) wrapped:
 *   1. the cpu backend passes, judged by the oracle given its mask ("returned", an oracle
 *      tier named, no reference); a second backend on the same prepared case is judged
 *      against its own mask (the first run's oracle is gone);
 *   2. a wrapper that returns the complement of the mask it applied is a mismatch;
 *   3. a wrapper that returns no mask is judged without an oracle ("not returned", no tier)
 *      and passes; the probes that weigh P by the mask say they were skipped;
 *   4. a wrapper (not declared deterministic) whose every run draws another stream and
 *      returns it: a repeat's mask differs from run 0's, nondeterministic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/runner.h"
#include "util/check.h"

enum { WRAP_FLIP, WRAP_HIDE, WRAP_DRIFT };
static af_backend *cpu;
static int wrap_mode, wrap_calls;

static af_run_status wrap_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    return cpu->supports(cpu, c, why, cap);
}
static af_run_status wrap_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                              char *why, size_t cap) {
    (void)be;
    af_case own = *c;
    if (wrap_mode == WRAP_DRIFT) own.dropout_seed += (uint64_t)++wrap_calls; /* another stream each run */
    af_run_status st = cpu->run(cpu, &own, engine, t, info, why, cap);
    if (st == AF_RUN_OK && wrap_mode == WRAP_FLIP)
        for (size_t k = 0; k < t->dropout_keep_elems; k++) t->dropout_keep[k] = !t->dropout_keep[k];
    if (wrap_mode == WRAP_HIDE) t->dropout_keep_returned = false;
    if (info && wrap_mode == WRAP_DRIFT) info->nondeterministic = true;
    return st;
}

static void judge_with(af_runner *r, af_prepared *p, af_backend *be, int mode, af_verdict *v) {
    wrap_mode = mode, wrap_calls = 0;
    af_judge(r, p, be, "", v, NULL);
}

static bool has_kind(const af_verdict *v, af_verdict_kind k) {
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        if (v->findings[i].kind == k) return true;
    return false;
}

int main(void) {
    cpu = af_backend_cpu_new();
    af_backend wrap = *cpu;
    wrap.name = "wrapped";
    wrap.supports = wrap_supports;
    wrap.run = wrap_run;
    wrap.destroy = NULL;
    wrap.flags = cpu->flags & ~(unsigned)AF_BACKEND_DETERMINISTIC;

    af_runner r;
    memset(&r, 0, sizeof r);
    r.reference = cpu;
    af_oracle_opts_default(&r.oracle);
    r.oracle.tier = AF_ORACLE_FP64;
    r.repeats = 2;
    af_case c;
    af_error e;
    CHECK(af_case_parse("dtype = fp16\nheads = 2\nseqlen_q = 24\nseqlen_kv = 40\nhead_dim = 16\nbackward = yes\n"
                        "mask = causal\ndropout = 0.5 77 3\ndropout_rng = kernel\nseed = 5\n",
                        "t.case", &c, &e) == 0);
    af_prepared p;
    char why[512];
    CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
    CHECK(p.oracle_deferred && !p.have_oracle && !p.have_ref);

    af_verdict v;
    af_judge(&r, &p, cpu, "", &v, NULL);
    CHECK_MSG(v.kind == AF_V_PASS, "cpu: %s %s", af_verdict_name(v.kind), v.n_findings ? v.findings[0].detail : "");
    CHECK(!strcmp(v.judge.dropout_mask, "returned") && v.judge.oracle_tier[0] && !v.judge.reference[0]);
    CHECK(!p.have_oracle && !p.inputs.feat.dropout_keep); /* the run's oracle went with it */

    judge_with(&r, &p, &wrap, WRAP_FLIP, &v);
    CHECK_MSG(has_kind(&v, AF_V_MISMATCH), "flipped mask: %s", af_verdict_name(v.kind));

    af_judge(&r, &p, cpu, "", &v, NULL); /* judged against its own mask again */
    CHECK(v.kind == AF_V_PASS);

    r.probes = true;
    af_probe_opts_default(&r.probe_opts);
    judge_with(&r, &p, &wrap, WRAP_HIDE, &v);
    CHECK_MSG(v.kind == AF_V_PASS, "hidden mask: %s %s", af_verdict_name(v.kind),
              v.n_findings ? v.findings[0].detail : "");
    CHECK(!strcmp(v.judge.dropout_mask, "not returned") && !v.judge.oracle_tier[0]);
    r.probes = false;

    judge_with(&r, &p, &wrap, WRAP_DRIFT, &v);
    CHECK_MSG(has_kind(&v, AF_V_NONDETERMINISTIC), "drifting stream: %s", af_verdict_name(v.kind));

    af_prepared_free(&p);
    cpu->destroy(cpu);
    CHECK_DONE("test_runner_kernel_stream");
}
