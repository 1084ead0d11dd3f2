/* probe_fixture.h — shared by the probe tests (test_probe_capacity, test_probe_history,
 * test_probes_recent) and the judge tests that keep a run's tensors (test_axis_gaps,
 * test_masked_sink_lse): a case from its text, a runner judging against the oracle's fp64
 * tier with the cpu backend as the reference, the cpu backend judged with its prepared
 * case and tensors kept, and one probe pass as the probes see it: judge be on the case
 * without probes (it must pass; a decline only where the caller allows one, and then no
 * probe runs), then af_probes_run with the caller's options on the judged run's buffers. */
#ifndef ATTNFUZZ_PROBE_FIXTURE_H
#define ATTNFUZZ_PROBE_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "judge/runner.h"
#include "util/check.h"

static inline void fx_parse_case(af_case *c, const char *text) {
    af_error e;
    if (af_case_parse(text, "test", c, &e) != 0) {
        char msg[1024];
        af_error_format(&e, msg, sizeof msg);
        CHECK_MSG(false, "case does not parse: %s\n%s", msg, text);
    }
}

/* The runner: cpu reference, oracle fp64 tier, default probe options (run by af_judge
 * only when probes). */
static inline void fx_probe_runner(af_runner *r, af_backend *cpu, bool probes) {
    memset(r, 0, sizeof *r);
    r->reference = cpu;
    r->ref_choice = AF_REF_CPU;
    af_oracle_opts_default(&r->oracle);
    r->oracle.tier = AF_ORACLE_FP64;
    r->probes = probes;
    af_probe_opts_default(&r->probe_opts);
}

/* be judged on c without probes against the fp64 oracle with the cpu reference: the
 * prepared case kept in *p, the verdict in *v, the run's tensors in *out unless NULL (the
 * caller frees p and out). */
static inline void fx_judge_be(af_backend *be, af_backend *cpu, const af_case *c, af_prepared *p, af_verdict *v,
                               af_tensors *out) {
    af_runner r;
    fx_probe_runner(&r, cpu, false);
    char why[512] = "";
    CHECK_MSG(af_prepare(&r, c, p, why, sizeof why) == 0, "%s", why);
    af_judge(&r, p, be, "", v, out);
}

/* The cpu backend judged on c (fx_judge_be), the prepared case and the run's tensors kept;
 * the first finding printed when it does not pass. */
static inline af_verdict_kind fx_judge_cpu_kept(af_backend *cpu, const af_case *c, af_prepared *p, af_tensors *out) {
    af_verdict v;
    fx_judge_be(cpu, cpu, c, p, &v, out);
    if (v.kind != AF_V_PASS) printf("  cpu: %s\n", v.n_findings ? v.findings[0].detail : v.reason);
    return v.kind;
}

/* Judge be on the case without probes, then run the probes of *o on the judged run's
 * buffers: their findings into *pv, their statistics into *ps (zero after a decline). */
static inline void fx_probe_judged(af_backend *be, af_backend *cpu, const char *text, const af_probe_opts *o,
                                   bool allow_declined, af_verdict *pv, af_probe_stats *ps) {
    af_case c;
    fx_parse_case(&c, text);
    af_prepared p;
    af_verdict v;
    af_tensors out;
    fx_judge_be(be, cpu, &c, &p, &v, &out);
    char line[1024];
    af_verdict_line(&v, line, sizeof line);
    CHECK_MSG(v.kind == AF_V_PASS || (allow_declined && v.kind == AF_V_DECLINED),
              "%s is not judged pass without probes: %s\n%s", be->name, line, text);
    af_probe_target tg = {&p.c, &p.tensors, &p.inputs, &out, &v.info, be, "", p.clones};
    af_verdict_init(pv, be->name);
    if (v.kind != AF_V_DECLINED)
        af_probes_run(o, &tg, pv, NULL, ps);
    else
        memset(ps, 0, sizeof *ps);
    af_tensors_free(&out);
    af_prepared_free(&p);
}

/* Does v hold a finding of kind whose detail contains text? */
static inline bool fx_has_finding(const af_verdict *v, af_verdict_kind kind, const char *text) {
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        if (v->findings[i].kind == kind && strstr(v->findings[i].detail, text)) return true;
    return false;
}

#endif
