/* test_compare_dsink.c — the learnable sinks' gradient is judged (verdict.h, "dsink"), as
 * a specification:
 *   - the cpu reference and planted:none (the cpu's recipe through the plugin ABI) pass
 *     learnable-sink backward cases with dsink judged, and their dsink error is within
 *     the floor alone (no help from the reference's error);
 *   - the floor has teeth: on every head it is below u M_h, one unit of the stored O's
 *     dtype times the term mass (dsink = -sum P_sink,i D_i cancels: |dsink| is often a
 *     few % of M, and the stored O's rounding inside D_i is an error every ABI kernel
 *     has; the cpu's own error is printed beside the floor);
 *   - planted:dsink_dropped (dsink written 0, everything else right) is a mismatch on
 *     tensor dsink, and passes cases without a dsink (forward, off_by_one backward);
 *   - the rule's edges on the cpu's own run: dsink moved to 0.98 x its allowance passes,
 *     to 1.02 x is a mismatch naming the head; poison left is unwritten, NaN is nan_inf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/tests/plugin_fixture.h"
#include "judge/compare_dsink.h"
#include "judge/runner.h"
#include "util/check.h"

static const char *const learnable_cases[] = {
    "dtype = fp16\nheads = 2\nseqlen = 64\nhead_dim = 32\nmask = causal\nwindow = 16,0\nsoftmax = learnable\n"
    "backward = yes\nseed = 104\n",
    "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 24\nseqlen_kv = 40\nseqlens_q = 24,13\n"
    "seqlens_kv = 40,29\nhead_dim = 64\nmask = padding_causal_bottom_right\nsoftmax = learnable\nbackward = yes\nseed "
    "= 5\n",
};
static const char *const no_dsink_cases[] = {
    "dtype = fp16\nheads = 2\nseqlen = 40\nhead_dim = 32\nmask = causal\nsoftmax = learnable\nseed = 8\n",
    "dtype = bf16\nheads_q = 4\nheads_kv = 2\nseqlen = 48\nhead_dim = 32\nsoftmax = off_by_one\nbackward = yes\n"
    "seed = 9\n",
};

typedef struct {
    af_backend *cpu;
    af_runner runner;
    af_prepared prep;
} fixture;

static void prepare(fixture *fx, const char *text) {
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, "test", &c, &e) == 0, "case does not parse: %s", e.message);
    fx->cpu = af_backend_cpu_new();
    memset(&fx->runner, 0, sizeof fx->runner);
    fx->runner.reference = fx->cpu;
    af_oracle_opts_default(&fx->runner.oracle);
    fx->runner.oracle.tier = AF_ORACLE_FP64;
    char why[512] = "";
    CHECK_MSG(af_prepare(&fx->runner, &c, &fx->prep, why, sizeof why) == 0, "%s", why);
}

static void release(fixture *fx) {
    af_prepared_free(&fx->prep);
    fx->cpu->destroy(fx->cpu);
}

static int dsink_findings(const af_verdict *v) {
    int n = 0;
    for (int k = 0; k < v->n_findings && k < AF_MAX_FINDINGS; k++) n += v->findings[k].tensor == AF_T_DSINK;
    return n;
}

static void judge(af_backend *be, const char *text, af_verdict *v) {
    fixture fx;
    prepare(&fx, text);
    af_judge(&fx.runner, &fx.prep, be, "", v, NULL);
    release(&fx);
}

/* The cpu's dsink against the oracle: within the floor alone, the floor below 2^-8 |dsink|. */
static void check_floor(const char *text) {
    fixture fx;
    prepare(&fx, text);
    const af_case *c = &fx.prep.c;
    const af_outputs *ex = &fx.prep.oracle.out, *ref = &fx.prep.ref;
    CHECK(fx.prep.have_ref && ref->dsink && ex->dsink);
    double unit = c->dtype == AF_DT_FP16 ? 0x1p-10 : 0x1p-7; /* one unit of the stored O */
    for (int h = 0; h < c->heads_q; h++) {
        double mass = 0, floor = af_dsink_floor(c, &fx.prep.inputs, ex, ref, h, &mass);
        double err = fabs(ref->dsink[h] - ex->dsink[h]);
        printf("dsink[%d] = %.6g: cpu err %.3g, floor %.3g (%.2g of |dsink|, 2^%.1f M), M %.3g\n", h, ex->dsink[h], err,
               floor, floor / fabs(ex->dsink[h]), log2(floor / mass), mass);
        CHECK_MSG(mass > 0 && floor >= AF_GRAD_CANCEL_UNIT * mass, "head %d: M %g floor %g", h, mass, floor);
        CHECK_MSG(floor < unit * mass, "head %d: floor %g vs u M %g", h, floor, unit * mass);
        CHECK_MSG(err <= floor, "head %d: cpu err %g > floor %g", h, err, floor);
    }
    release(&fx);
}

/* The rule at its edges on the cpu's own run of text: head h's dsink moved by `times`
 * its allowance, poison, NaN. */
static void check_edges(const char *text) {
    fixture fx;
    prepare(&fx, text);
    const af_case *c = &fx.prep.c;
    af_verdict v;
    af_tensors t;
    af_judge(&fx.runner, &fx.prep, fx.cpu, "", &v, &t);
    CHECK_MSG(v.kind == AF_V_PASS, "cpu: %s", af_verdict_name(v.kind));
    af_outputs out;
    CHECK(af_outputs_alloc(&out, c) == 0);
    const af_outputs *ex = &fx.prep.oracle.out, *ref = &fx.prep.ref;
    int h = c->heads_q - 1;
    float kept = t.dsink[h];
    /* the kernel's O and LSE are the cpu's own: the floor is the one af_compare_dsink uses */
    af_outputs_read(&t, c, &out);
    double allowed = 2.0 * fabs(ref->dsink[h] - ex->dsink[h]) + af_dsink_floor(c, &fx.prep.inputs, ex, &out, h, NULL);
    const double times[2] = {0.98, 1.02};
    for (int k = 0; k < 2; k++) {
        t.dsink[h] = (float)(ex->dsink[h] + times[k] * allowed);
        af_outputs_read(&t, c, &out);
        af_verdict_init(&v, "cpu");
        int n = af_compare_dsink(c, &t, &fx.prep.inputs, &out, ref, ex, &v);
        char line[512];
        af_verdict_line(&v, line, sizeof line);
        printf("dsink[%d] at %.2f x allowed (%.3g): %s\n", h, times[k], allowed, line);
        if (k == 0)
            CHECK_MSG(n == 0, "0.98 x allowed: %s", line);
        else
            CHECK_MSG(n == 1 && v.kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_DSINK && v.findings[0].h == h &&
                          v.findings[0].ratio > 1.0 && v.findings[0].ratio < 1.05,
                      "1.02 x allowed: %s", line);
    }
    uint32_t poison = AF_POISON_F32;
    memcpy(&t.dsink[h], &poison, sizeof poison);
    af_outputs_read(&t, c, &out);
    af_verdict_init(&v, "cpu");
    CHECK(af_compare_dsink(c, &t, &fx.prep.inputs, &out, ref, ex, &v) == 1 && v.kind == AF_V_UNWRITTEN &&
          v.findings[0].tensor == AF_T_DSINK);
    t.dsink[h] = NAN;
    af_outputs_read(&t, c, &out);
    af_verdict_init(&v, "cpu");
    CHECK(af_compare_dsink(c, &t, &fx.prep.inputs, &out, ref, ex, &v) == 1 && v.kind == AF_V_NAN_INF);
    t.dsink[h] = kept;
    af_outputs_read(&t, c, &out);
    af_verdict_init(&v, "cpu");
    CHECK(af_compare_dsink(c, &t, &fx.prep.inputs, &out, ref, ex, &v) == 0);
    CHECK(strcmp(af_tensor_name(AF_T_DSINK), "dsink") == 0);
    af_outputs_free(&out);
    af_tensors_free(&t);
    release(&fx);
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    af_backend *none = fx_load_plugin("planted_none");
    af_backend *dropped = fx_load_plugin("planted_dsink_dropped");
    af_verdict v;
    for (int k = 0; k < 2; k++) {
        check_floor(learnable_cases[k]);
        judge(cpu, learnable_cases[k], &v);
        CHECK_MSG(v.kind == AF_V_PASS, "cpu on learnable case %d: %s", k, af_verdict_name(v.kind));
        judge(none, learnable_cases[k], &v);
        CHECK_MSG(v.kind == AF_V_PASS, "planted:none on learnable case %d: %s (%s)", k, af_verdict_name(v.kind),
                  v.n_findings ? v.findings[0].detail : v.reason);
        judge(dropped, learnable_cases[k], &v);
        char line[512];
        af_verdict_line(&v, line, sizeof line);
        printf("planted:dsink_dropped on learnable case %d: %s\n", k, line);
        CHECK_MSG(v.kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_DSINK && dsink_findings(&v) == 1 &&
                      v.n_findings == 1,
                  "planted:dsink_dropped: %s", line);
        judge(dropped, no_dsink_cases[k], &v);
        CHECK_MSG(v.kind == AF_V_PASS, "planted:dsink_dropped without a dsink (case %d): %s", k,
                  af_verdict_name(v.kind));
    }
    check_edges(learnable_cases[0]);
    dropped->destroy(dropped);
    none->destroy(none);
    cpu->destroy(cpu);
    CHECK_DONE("test_compare_dsink");
}
