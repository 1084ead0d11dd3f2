/* test_masked_sink_lse.c — the LSE of a fully masked row with attention sinks
 * (oracle/feature_spec.h, judge/compare.h af_masked_row_lse), as a specification:
 *   - a row that sees no key keeps the sink alone in its softmax denominator, so its LSE
 *     is the sink logit a_h: the cpu backend stores it and passes the whole judge
 *     (learnable sinks, natural and log2 stats, where the base-2 LSE is a_h / ln 2);
 *   - in that row an LSE of -inf (the empty-sum convention of rows without a sink), the
 *     natural a_h where stats = log2 asks for a_h / ln 2, or a_h + 2^-10 is a
 *     `convention` finding on LSE at that row naming the expected value;
 *   - the allowance is 2^-21 (1 + |a_h|): with off_by_one sinks (a_h = 0) an LSE of
 *     0.98 x 2^-21 passes and 1.02 x 2^-21 is a finding;
 *   - without sinks the convention is unchanged: -inf passes, 0 is a finding.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/compare.h"
#include "judge/runner.h"
#include "judge/tests/probe_fixture.h"
#include "model/features.h"
#include "util/check.h"

/* causal top-left 40 x 24 with window (3, 0): rows 27.. see no key */
#define CASE_HEAD "dtype = bf16\nheads = 2\nseqlen_q = 40\nseqlen_kv = 24\nhead_dim = 32\nmask = causal\nwindow = 3,0\n"
enum { MASKED_ROW = 30, HEAD = 1 };

typedef struct {
    af_prepared p;
    af_tensors out;
} judged;

/* The whole judge on the cpu backend (oracle fp64); the run's tensors kept in j->out. */
static af_verdict_kind judge_cpu(af_backend *cpu, const char *text, judged *j) {
    af_case c;
    fx_parse_case(&c, text);
    CHECK(af_row_fully_masked(&c, 0, MASKED_ROW) && !af_row_fully_masked(&c, 0, 26));
    return fx_judge_cpu_kept(cpu, &c, &j->p, &j->out);
}

static void set_lse(judged *j, double x) {
    const af_tensor_view *w = &j->out.plan.view[AF_T_LSE];
    af_storage_store(w->storage, j->out.buf[w->buffer],
                     af_layout_offset(&j->out.plan, AF_T_LSE, 0, HEAD, MASKED_ROW, 0), (float)x);
}
static double get_lse(const judged *j) {
    const af_tensor_view *w = &j->out.plan.view[AF_T_LSE];
    return af_storage_load(w->storage, j->out.buf[w->buffer],
                           af_layout_offset(&j->out.plan, AF_T_LSE, 0, HEAD, MASKED_ROW, 0));
}

/* The buffer checks on j's tensors with the masked row's LSE set to x: true when they
 * pass; else exactly one convention finding on LSE at that row, whose detail is checked
 * to contain `expect` (when not NULL). */
static bool buffers_pass(judged *j, double x, const char *expect) {
    set_lse(j, x);
    af_verdict v;
    af_verdict_init(&v, "cpu");
    int n = af_check_buffers(&j->p.c, &j->out, NULL, NULL, NULL, &v);
    if (n == 0) return true;
    const af_finding *f = &v.findings[0];
    printf("  LSE %.9g: %s: %s\n", x, af_verdict_name(f->kind), f->detail);
    CHECK(n == 1 && f->kind == AF_V_CONVENTION && f->tensor == AF_T_LSE && f->h == HEAD && f->row == MASKED_ROW);
    if (expect) CHECK_MSG(strstr(f->detail, expect) != NULL, "'%s' not in: %s", expect, f->detail);
    return false;
}

static void release(judged *j) {
    af_tensors_free(&j->out);
    af_prepared_free(&j->p);
}

static void learnable(af_backend *cpu, bool log2_stats) {
    judged j;
    CHECK(judge_cpu(cpu,
                    log2_stats ? CASE_HEAD "softmax = learnable\nstats = log2\nseed = 31\n"
                               : CASE_HEAD "softmax = learnable\nseed = 31\n",
                    &j) == AF_V_PASS);
    double a = af_feature_sink(&j.p.c, HEAD), want = log2_stats ? a * M_LOG2E : a;
    CHECK(a > -3.5 && a < 3.5 && a != 0);
    double stored = get_lse(&j);
    CHECK_MSG(fabs(stored - want) <= 0x1p-22 * (1 + fabs(want)), "cpu stored %.9g, the sink gives %.9g", stored, want);
    char expected[64];
    snprintf(expected, sizeof expected, "expected %.9g", want);
    CHECK(buffers_pass(&j, stored, NULL));
    CHECK(!buffers_pass(&j, -INFINITY, expected));
    CHECK(!buffers_pass(&j, want + 0x1p-10, expected));
    if (log2_stats) CHECK(!buffers_pass(&j, a, "/ ln 2")); /* the natural a_h in a base-2 LSE */
    printf("learnable sinks%s: the masked row's LSE %.7g (the sink) passes; -inf and a wrong value are findings\n",
           log2_stats ? ", log2 stats" : "", stored);
    release(&j);
}

static void edges(af_backend *cpu) {
    judged j;
    CHECK(judge_cpu(cpu, CASE_HEAD "softmax = off_by_one\nseed = 32\n", &j) == AF_V_PASS);
    CHECK(get_lse(&j) == 0.0); /* off_by_one: a_h = 0 */
    CHECK(buffers_pass(&j, 0.98 * 0x1p-21, NULL));
    CHECK(buffers_pass(&j, -0.98 * 0x1p-21, NULL));
    CHECK(!buffers_pass(&j, 1.02 * 0x1p-21, "expected 0"));
    CHECK(!buffers_pass(&j, -1.02 * 0x1p-21, "expected 0"));
    CHECK(!buffers_pass(&j, -INFINITY, "expected 0"));
    release(&j);
    CHECK(judge_cpu(cpu, CASE_HEAD "seed = 33\n", &j) == AF_V_PASS);
    CHECK(isinf(get_lse(&j)) && get_lse(&j) < 0);
    CHECK(buffers_pass(&j, -INFINITY, NULL));
    CHECK(!buffers_pass(&j, 0.0, "fix: store -inf"));
    release(&j);
    printf("off_by_one: 0.98 x 2^-21 passes, 1.02 x 2^-21 is a finding; without sinks -inf passes, 0 does not\n");
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    learnable(cpu, false);
    learnable(cpu, true);
    edges(cpu);
    cpu->destroy(cpu);
    CHECK_DONE("test_masked_sink_lse");
}
