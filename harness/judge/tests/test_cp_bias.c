/* test_cp_bias.c — bias under context parallelism (docs/cp.md, "Sinks and bias"), as a
 * specification:
 *   - the CP wrapper over cpu passes the whole judge (oracle fp64 tier, cpu reference on
 *     the global case) on bias cases of every comm type, forward and backward, causal and
 *     not, with a query-broadcast shape (111s, 1h1s), a per-head shape (1hss, bhss) and a
 *     batch-broadcast one whose call takes the batch extent (thd chunks; all_gather's
 *     trimmed K/V of sequences with other lengths);
 *   - each call is given its slice of the global bias: the planted wrapper bias_local,
 *     whose calls generate their bias from their own sub-case (what every call did before
 *     the slice was given), is a finding on the same cases, so this test fails on a
 *     wrapper that hands no slice;
 *   - a call's bias keeps the case's shape where the sequences' local positions agree, and
 *     takes the batch extent where they do not;
 *   - a given bias is what the cpu backend reads (af_tensors_bias_at), and it survives a
 *     clone (judge/clone.h) as the clone's own copy.
 */
#include <stdio.h>
#include <string.h>

#include "backends/cp/cp.h"
#include "backends/cp/cp_plan.h"
#include "judge/clone.h"
#include "judge/runner.h"
#include "judge/tests/probe_fixture.h"
#include "model/features.h"
#include "model/gen.h"
#include "util/check.h"

typedef struct {
    const char *name;
    const char *text;
} bias_case;

#define SMALL "batch = 2\nheads = 2\nseqlen = 16\nhead_dim = 16\n"
static const bias_case cases[] = {
    {"p2p causal 1hss bwd",
     "dtype = bf16\n" SMALL "mask = causal\nbackward = yes\ncp = 2 p2p\nbias = 1hss\nseed = 41\n"},
    {"p2p none 111s fwd", "dtype = fp16\n" SMALL "mask = none\ncp = 2 p2p\nbias = 111s\nseed = 42\n"},
    {"p2p thd causal 11ss bwd (batch extent)",
     "dtype = bf16\nlayout = thd\nbatch = 2\nheads = 2\nseqlen = 16\nseqlens_q = 16,8\nseqlens_kv = 16,8\n"
     "head_dim = 16\nmask = padding_causal\nbackward = yes\ncp = 2 p2p\nbias = 11ss\nseed = 43\n"},
    {"all_gather causal window 111s bwd (batch extent)",
     "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 16\nseqlens_q = 16,10\nseqlens_kv = 16,14\nalign = bottom_right\n"
     "head_dim = 16\nmask = padding_causal\nwindow = 4,0\nbackward = yes\ncp = 2 all_gather\nbias = 111s\nseed = 44\n"},
    {"all_gather none bhss fwd", "dtype = bf16\n" SMALL "mask = none\ncp = 2 all_gather\nbias = bhss\nseed = 45\n"},
    {"a2a none 1hss bwd",
     "dtype = bf16\nbatch = 2\nheads = 4\nseqlen = 16\nhead_dim = 16\nmask = none\nbackward = yes\ncp = 2 a2a\n"
     "bias = 1hss\nseed = 46\n"},
    {"a2a causal 1h1s fwd",
     "dtype = fp16\nbatch = 1\nheads = 4\nseqlen = 16\nhead_dim = 16\nmask = causal\ncp = 2 a2a\nbias = 1h1s\n"
     "seed = 47\n"},
    {"a2a+p2p causal 1hss bwd",
     "dtype = bf16\nbatch = 1\nheads = 2\nseqlen = 16\nhead_dim = 16\nmask = causal\nbackward = yes\n"
     "cp = 4 a2a+p2p\nbias = 1hss\nseed = 48\n"},
};

/* The whole judge of be on case text (no probes); the first finding printed when it does
 * not pass. */
static af_verdict_kind judge(af_backend *be, af_backend *cpu, const char *text) {
    af_case c;
    fx_parse_case(&c, text);
    af_prepared p;
    af_verdict v;
    fx_judge_be(be, cpu, &c, &p, &v, NULL);
    char line[1024];
    af_verdict_line(&v, line, sizeof line);
    printf("    %s\n", line);
    af_prepared_free(&p);
    return v.kind;
}

/* A given bias is what the cpu backend adds: a 1hss case run with its given bias set to
 * the generated values (bit-identical outputs), then with one element changed (that
 * row's outputs move); a clone of tensors with a given bias owns an equal copy. */
static void given_bias_is_read(af_backend *cpu) {
    af_case c;
    fx_parse_case(&c, "dtype = fp16\nbatch = 1\nheads = 2\nseqlen = 8\nhead_dim = 16\nmask = none\nbias = 1hss\n"
                      "seed = 49\n");
    char why[512];
    af_tensors gen, given;
    af_inputs in;
    CHECK(af_tensors_alloc(&gen, &c, why, sizeof why) == 0 && af_tensors_alloc(&given, &c, why, sizeof why) == 0);
    CHECK(af_inputs_alloc(&in, &c) == 0 && af_inputs_generate(&c, &gen, &in) == 0);
    af_tensors_copy(&given, &gen);
    float *bias = af_tensors_bias_alloc(&given, &c); /* (1, 2, 8, 8) */
    CHECK(bias && given.bias_given_elems == 2 * 8 * 8);
    for (int h = 0, k = 0; h < 2; h++)
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 8; j++, k++) bias[k] = af_feature_bias(&c, 0, h, i, j);
    CHECK(af_tensors_bias_at(&c, &given, 0, 1, 3, 5) == af_feature_bias(&c, 0, 1, 3, 5));
    CHECK(af_tensors_bias_at(&c, NULL, 0, 1, 3, 5) == af_feature_bias(&c, 0, 1, 3, 5));
    af_run_info info;
    af_outputs a, b;
    CHECK(af_outputs_alloc(&a, &c) == 0 && af_outputs_alloc(&b, &c) == 0);
    CHECK(cpu->run(cpu, &c, "", &gen, &info, why, sizeof why) == AF_RUN_OK);
    CHECK(cpu->run(cpu, &c, "", &given, &info, why, sizeof why) == AF_RUN_OK);
    af_outputs_read(&gen, &c, &a);
    af_outputs_read(&given, &c, &b);
    CHECK_MSG(memcmp(a.o, b.o, 2 * 8 * 16 * sizeof *a.o) == 0, "the generated values as given change O");
    bias[(1 * 8 + 3) * 8 + 5] += 4.0f; /* head 1, row 3, key 5 */
    CHECK(af_tensors_bias_at(&c, &given, 0, 1, 3, 5) == af_feature_bias(&c, 0, 1, 3, 5) + 4.0f);
    CHECK(cpu->run(cpu, &c, "", &given, &info, why, sizeof why) == AF_RUN_OK);
    af_outputs_read(&given, &c, &b);
    CHECK_MSG(a.lse[8 + 3] != b.lse[8 + 3], "a changed given bias element leaves its row's LSE unchanged");
    CHECK_MSG(a.lse[3] == b.lse[3], "head 0's row 3 moved with head 1's bias");
    af_tensors clone;
    CHECK(af_clone_tensors(&clone, &c, &given, NULL, why, sizeof why) == 0);
    CHECK(clone.bias_given && clone.bias_given != given.bias_given && clone.bias_given_elems == given.bias_given_elems);
    CHECK(memcmp(clone.bias_given, given.bias_given, given.bias_given_elems * sizeof(float)) == 0);
    af_clone_release(&clone, NULL);
    af_outputs_free(&a), af_outputs_free(&b), af_inputs_free(&in);
    af_tensors_free(&gen), af_tensors_free(&given);
}

/* The calls' bias shape: the case's where every sequence's local positions map to the
 * same global ones (padded p2p chunks), with the batch extent where they do not (thd
 * chunks by length; all_gather's trimmed K/V of sequences with other lengths). */
static void batch_extent(const char *text, af_bias_shape expect) {
    af_case c;
    fx_parse_case(&c, text);
    af_cp_plan plan;
    char why[512];
    CHECK_MSG(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &plan, why, sizeof why) == AF_RUN_OK, "%s", why);
    int seen = 0, calls = 0;
    for (int ri = 0; ri < plan.count; ri++) {
        af_case sub;
        if (af_cp_sub_case(&c, &plan.runs[ri], c.backward, &sub, why, sizeof why)) continue;
        calls++;
        seen += sub.bias == expect;
    }
    /* the case's own shape in every call; the batch extent in at least one */
    CHECK_MSG(expect == c.bias ? seen == calls : seen > 0, "%d of %d calls have bias %s", seen, calls,
              af_bias_shape_name(expect));
    af_cp_plan_free(&plan);
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    af_backend *cp = af_cp_wrap(af_backend_cpu_new());
    af_backend *planted = af_cp_planted_new(cpu, AF_CP_PLANT_BIAS_LOCAL, "cp-bug:bias_local:cpu");
    CHECK(cpu && cp && planted);
    given_bias_is_read(cpu);
    batch_extent(cases[0].text, AF_BIAS_1HSS);
    batch_extent(cases[1].text, AF_BIAS_111S);
    batch_extent(cases[2].text, AF_BIAS_B1SS);
    batch_extent(cases[3].text, AF_BIAS_B11S);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        printf("%s\n", cases[k].name);
        af_verdict_kind served = judge(cp, cpu, cases[k].text);
        CHECK_MSG(served == AF_V_PASS, "%s: the CP wrapper over cpu does not pass the judge", cases[k].name);
        af_verdict_kind local = judge(planted, cpu, cases[k].text);
        CHECK_MSG(local == AF_V_MISMATCH, "%s: calls generating their own bias are not a mismatch (%d)", cases[k].name,
                  (int)local);
    }
    planted->destroy(planted);
    cp->destroy(cp);
    cpu->destroy(cpu);
    CHECK_DONE("test_cp_bias");
}
