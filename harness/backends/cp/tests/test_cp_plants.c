/* test_cp_plants.c — the planted CP bugs window_left_dropped, kv_repeat_tiled and
 * a2a_skipped (cp.h) live in the wrapper's execution:
 *   - each plan differs from the correct one exactly where the bug sits (the mirror query
 *     chunk's all_gather call; the K/V head a rank holds; the a2a rank's segments);
 *   - run over cpu, each plant changes the reassembled outputs against plant none on a
 *     hand-made case where it must, and leaves them bit-identical where it must not
 *     (no window; MQA and divisible K/V heads; a window of one key, which is local);
 *   - the names parse and every plant has a one-line description.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cp/cp.h"
#include "backends/cp/cp_exec.h"
#include "backends/cp/cp_plan.h"
#include "model/gen.h"
#include "model/tensors.h"
#include "util/check.h"

static af_case parse(const char *text) {
    af_case c;
    af_error err;
    int rc = af_case_parse(text, "test", &c, &err);
    CHECK_MSG(rc == 0, "%s: %s", err.field, err.message);
    return c;
}

static double max_diff(const double *a, const double *b, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(a[i]) && isinf(b[i]) && a[i] == b[i]) continue; /* the same -inf LSE of an empty row */
        double d = fabs(a[i] - b[i]);
        worst = isnan(d) ? INFINITY : fmax(worst, d);
    }
    return worst;
}

/* The largest difference, over O, LSE and (backward) dQ, dK, dV, between case `text`
 * run by the wrapper over cpu with `plant` and with no plant, on the same inputs. */
static double plant_effect(const char *text, af_cp_plant plant) {
    af_case c = parse(text);
    af_backend *cpu = af_backend_cpu_new();
    af_tensors t_none, t_plant;
    af_inputs in;
    char why[512];
    CHECK(af_tensors_alloc(&t_none, &c, why, sizeof why) == 0 && af_tensors_alloc(&t_plant, &c, why, sizeof why) == 0);
    CHECK(af_inputs_alloc(&in, &c) == 0 && af_inputs_generate(&c, &t_none, &in) == 0);
    af_tensors_copy(&t_plant, &t_none);
    af_run_info info;
    memset(&info, 0, sizeof info);
    CHECK_MSG(af_cp_execute(cpu, AF_CP_PLANT_NONE, &c, "", &t_none, &info, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK_MSG(af_cp_execute(cpu, plant, &c, "", &t_plant, &info, why, sizeof why) == AF_RUN_OK, "%s: %s",
              af_cp_plant_name(plant), why);
    af_outputs a, b;
    CHECK(af_outputs_alloc(&a, &c) == 0 && af_outputs_alloc(&b, &c) == 0);
    af_outputs_read(&t_none, &c, &a);
    af_outputs_read(&t_plant, &c, &b);
    size_t rows = (size_t)c.batch * c.heads_q * c.seqlen_q, keys = (size_t)c.batch * c.heads_kv * c.seqlen_kv;
    double worst = fmax(max_diff(a.o, b.o, rows * c.head_dim_v), max_diff(a.lse, b.lse, rows));
    if (c.backward) {
        worst = fmax(worst, max_diff(a.dq, b.dq, rows * c.head_dim_qk));
        worst = fmax(worst, max_diff(a.dk, b.dk, keys * c.head_dim_qk));
        worst = fmax(worst, max_diff(a.dv, b.dv, keys * c.head_dim_v));
    }
    af_outputs_free(&a), af_outputs_free(&b), af_inputs_free(&in);
    af_tensors_free(&t_none), af_tensors_free(&t_plant);
    cpu->destroy(cpu);
    return worst;
}

static void expect_effect(const char *what, const char *text, af_cp_plant plant, bool changes) {
    double d = plant_effect(text, plant);
    if (changes)
        CHECK_MSG(d > 0.05, "%s %s: must change the outputs, largest difference %.3g", af_cp_plant_name(plant), what,
                  d);
    else
        CHECK_MSG(d == 0, "%s %s: must not change the outputs, largest difference %.3g", af_cp_plant_name(plant), what,
                  d);
    printf("%s %s: largest output difference %.3g\n", af_cp_plant_name(plant), what, d);
}

static void test_window_left_dropped(void) {
    const char *window = "dtype = bf16\nheads = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\nwindow = 3,0\n"
                         "backward = yes\ncp = 2 all_gather\nseed = 5\n";
    af_case c = parse(window);
    af_cp_plan none, bug;
    char why[512];
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &none, why, sizeof why) == AF_RUN_OK);
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_WINDOW_LEFT_DROPPED, &bug, why, sizeof why) == AF_RUN_OK);
    CHECK(none.count == 4 && bug.count == 4);
    for (int ri = 0; ri < 4; ri++) { /* runs: rank r's chunk r (step 0), then chunk 2cp-1-r (step 1) */
        const af_cp_run *n = &none.runs[ri], *b = &bug.runs[ri];
        CHECK(n->window_left == 3 && b->window_left == (b->step == 1 ? -1 : 3));
        /* the trim is the same: only the call's mask lost the left bound */
        CHECK(n->kv[0][0].start == b->kv[0][0].start && n->kv[0][0].size == b->kv[0][0].size);
    }
    af_cp_plan_free(&none), af_cp_plan_free(&bug);
    expect_effect("on a causal window 3,0", window, AF_CP_PLANT_WINDOW_LEFT_DROPPED, true);
    expect_effect("without a window",
                  "dtype = bf16\nheads = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\nbackward = yes\n"
                  "cp = 2 all_gather\nseed = 5\n",
                  AF_CP_PLANT_WINDOW_LEFT_DROPPED, false);
    expect_effect("on the same window over a2a (not its path)",
                  "dtype = bf16\nheads = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\nwindow = 3,0\n"
                  "backward = yes\ncp = 2 a2a\nseed = 5\n",
                  AF_CP_PLANT_WINDOW_LEFT_DROPPED, false);
}

static void test_kv_repeat_tiled(void) {
    const char *gqa = "dtype = bf16\nheads_q = 4\nheads_kv = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\n"
                      "backward = yes\ncp = 4 a2a\nseed = 6\n";
    af_case c = parse(gqa);
    af_cp_plan none, bug;
    char why[512];
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &none, why, sizeof why) == AF_RUN_OK);
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_KV_REPEAT_TILED, &bug, why, sizeof why) == AF_RUN_OK);
    CHECK(none.count == 4 && bug.count == 4);
    const int interleaved[4] = {0, 0, 1, 1}, tiled[4] = {0, 1, 0, 1}; /* K/V head of rank r */
    for (int r = 0; r < 4; r++) {
        CHECK(none.runs[r].h0 == r && none.runs[r].heads_q == 1 && none.runs[r].heads_kv == 1);
        CHECK_MSG(none.runs[r].hk0 == interleaved[r] && bug.runs[r].hk0 == tiled[r], "rank %d: K/V head %d / %d", r,
                  none.runs[r].hk0, bug.runs[r].hk0);
    }
    af_cp_plan_free(&none), af_cp_plan_free(&bug);
    /* heads_kv neither divisible by cp nor dividing it: declined, with and without the plant */
    c = parse("dtype = bf16\nheads_q = 6\nheads_kv = 3\nseqlen = 32\nhead_dim = 16\ncp = 2 a2a\n");
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &none, why, sizeof why) == AF_RUN_DECLINED);
    CHECK_MSG(strstr(why, "not divisible by 2"), "%s", why);
    expect_effect("on GQA heads 4/2 at cp 4", gqa, AF_CP_PLANT_KV_REPEAT_TILED, true);
    expect_effect("on MQA (tiling and interleaving agree)",
                  "dtype = bf16\nheads_q = 4\nheads_kv = 1\nseqlen = 32\nhead_dim = 16\nmask = causal\n"
                  "backward = yes\ncp = 4 a2a\nseed = 6\n",
                  AF_CP_PLANT_KV_REPEAT_TILED, false);
    expect_effect("on heads_kv divisible by cp (no replication)",
                  "dtype = bf16\nheads_q = 8\nheads_kv = 4\nseqlen = 32\nhead_dim = 16\nmask = causal\n"
                  "backward = yes\ncp = 4 a2a\nseed = 6\n",
                  AF_CP_PLANT_KV_REPEAT_TILED, false);
}

static void test_a2a_skipped(void) {
    const char *causal = "dtype = bf16\nheads = 4\nseqlen = 32\nhead_dim = 16\nmask = causal\nbackward = yes\n"
                         "cp = 2 a2a\nseed = 7\n";
    af_case c = parse(causal);
    af_cp_plan bug;
    char why[512];
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_A2A_SKIPPED, &bug, why, sizeof why) == AF_RUN_OK);
    CHECK(bug.count == 2);
    /* rank 1: every head, its own chunks 1 and 2 (positions 8..15, 16..23) as queries and keys */
    const af_cp_run *r1 = &bug.runs[1];
    CHECK(r1->h0 == 0 && r1->heads_q == 4 && r1->nseg_q == 2 && r1->nseg_kv == 2);
    CHECK(r1->q[0][0].start == 8 && r1->q[0][1].start == 16 && r1->kv[0][0].start == 8 && r1->kv[0][1].start == 16);
    af_cp_plan_free(&bug);
    expect_effect("on causal cp 2", causal, AF_CP_PLANT_A2A_SKIPPED, true);
    expect_effect("on unmasked GQA cp 4",
                  "dtype = bf16\nheads_q = 8\nheads_kv = 4\nseqlen = 32\nhead_dim = 16\nbackward = yes\n"
                  "cp = 4 a2a\nseed = 7\n",
                  AF_CP_PLANT_A2A_SKIPPED, true);
    /* window 0,0: each query sees only its own key, which every rank holds */
    expect_effect("on a window of one key",
                  "dtype = bf16\nheads = 4\nseqlen = 32\nhead_dim = 16\nmask = causal\nwindow = 0,0\n"
                  "backward = yes\ncp = 2 a2a\nseed = 7\n",
                  AF_CP_PLANT_A2A_SKIPPED, false);
}

static void test_names(void) {
    for (int p = 0; p < AF_CP_PLANT_COUNT; p++) {
        CHECK(af_cp_plant_parse(af_cp_plant_name((af_cp_plant)p)) == p);
        const char *d = af_cp_plant_description((af_cp_plant)p);
        CHECK_MSG(d && strlen(d) > 10 && !strchr(d, '\n'), "plant %d: no one-line description", p);
    }
    CHECK(af_cp_plant_parse("window_left_dropped") == AF_CP_PLANT_WINDOW_LEFT_DROPPED);
    CHECK(af_cp_plant_parse("kv_repeat_tiled") == AF_CP_PLANT_KV_REPEAT_TILED);
    CHECK(af_cp_plant_parse("a2a_skipped") == AF_CP_PLANT_A2A_SKIPPED);
    CHECK(af_cp_plant_parse("a2a") == -1);
}

int main(void) {
    test_names();
    test_window_left_dropped();
    test_kv_repeat_tiled();
    test_a2a_skipped();
    CHECK_DONE("test_cp_plants");
}
