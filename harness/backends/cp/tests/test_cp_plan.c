/* test_cp_plan.c — the CP wrapper's plan and attribution, as a specification:
 *   - the load-balanced chunks: rank r's p2p diagonal step holds chunks r and 2cp-1-r;
 *     causal p2p has n steps per rank: the diagonal (causal), lower steps (all queries,
 *     the first K/V chunk, unmasked) and half steps (the second query chunk, all K/V);
 *   - all_gather turns causal into bottom-right on the trimmed K/V range;
 *   - thd chunks each sequence by its own length;
 *   - declines: p2p sliding window (TransformerEngine's reason), a2a heads, fp8;
 *   - a2a replicates K/V heads when heads_kv < cp (GQA, MQA) and matches plain cpu;
 *   - over cpu, the CP result equals the plain cpu result within the rounding of the
 *     merged partials (every comm type), and a declining inner call is named by rank
 *     and step.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cp/cp.h"
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

static void test_p2p_steps(void) {
    af_case c = parse("dtype = bf16\nheads = 2\nseqlen = 64\nhead_dim = 16\nmask = causal\ncp = 4 p2p\n");
    af_cp_plan p;
    char why[512];
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_OK);
    CHECK(p.count == 16); /* 4 ranks x 4 steps */
    const af_cp_run *r1s0 = &p.runs[1 * 4 + 0], *r1s1 = &p.runs[1 * 4 + 1], *r1s2 = &p.runs[1 * 4 + 2];
    CHECK(r1s0->mask == AF_MASK_CAUSAL && r1s0->nseg_q == 2 && r1s0->q[0][0].start == 8 && r1s0->q[0][1].start == 48);
    CHECK(r1s1->mask == AF_MASK_NONE && r1s1->nseg_q == 2 && r1s1->nseg_kv == 1 && r1s1->kv[0][0].start == 0);
    /* step 2 of rank 1: source rank 3 > 1, a half step: only chunk 6 (positions 48..55) */
    CHECK(r1s2->nseg_q == 1 && r1s2->q[0][0].start == 48 && r1s2->nseg_kv == 2 && r1s2->kv[0][0].start == 24);
    af_cp_plan_free(&p);
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NO_HALF_MASK, &p, why, sizeof why) == AF_RUN_OK);
    CHECK(p.runs[1 * 4 + 2].nseg_q == 2); /* the plant: the half step sees every query row */
    af_cp_plan_free(&p);
}

static void test_all_gather_trim(void) {
    af_case c = parse("dtype = bf16\nheads = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\nwindow = 5,0\n"
                      "cp = 2 all_gather\n");
    af_cp_plan p;
    char why[512];
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_OK);
    CHECK(p.count == 4);
    const af_cp_run *r = &p.runs[1 * 2 + 1]; /* rank 1, its chunk 2 = positions 16..23 */
    CHECK(r->align == AF_ALIGN_BOTTOM_RIGHT && r->q[0][0].start == 16);
    CHECK(r->kv[0][0].start == 11 && r->kv[0][0].size == 13); /* keys 11..23: window 5 back from 16 */
    af_case sub;
    CHECK(af_cp_sub_case(&c, r, false, &sub, why, sizeof why) == 0);
    CHECK(sub.seqlen_q == 8 && sub.seqlen_kv == 13 && sub.cp_size == 1 && sub.window_left == 5);
    af_cp_plan_free(&p);
}

static void test_thd_chunks(void) {
    af_case c = parse("dtype = bf16\nlayout = thd\nbatch = 2\nheads = 1\nseqlen = 32\nseqlens_q = 32,8\n"
                      "seqlens_kv = 32,8\nhead_dim = 16\nmask = padding_causal\ncp = 2 p2p\n");
    af_cp_plan p;
    char why[512];
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_OK);
    const af_cp_run *r = &p.runs[0]; /* rank 0 step 0: chunks 0 and 3 of each sequence */
    CHECK(r->q[0][1].start == 24 && r->q[0][1].size == 8 && r->q[1][1].start == 6 && r->q[1][1].size == 2);
    af_cp_plan_free(&p);
    c = parse("dtype = bf16\nlayout = thd\nbatch = 2\nheads = 1\nseqlen = 32\nseqlens_q = 32,6\n"
              "seqlens_kv = 32,6\nhead_dim = 16\nmask = padding_causal\ncp = 2 p2p\n");
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "sequence 1"));
}

static void test_declines(void) {
    af_cp_plan p;
    char why[512];
    af_case c = parse("dtype = bf16\nheads = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\nwindow = 4,0\ncp = 2 p2p\n");
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_DECLINED);
    CHECK_MSG(strstr(why, "cannot support sliding window"), "%s", why);
    c = parse("dtype = bf16\nheads = 3\nseqlen = 32\nhead_dim = 16\ncp = 2 a2a\n");
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "divisible"));
    c = parse("dtype = bf16\nheads = 2\nseqlen_q = 32\nseqlen_kv = 64\nhead_dim = 16\nwindow = -1,3\ncp = 2 a2a\n");
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_DECLINED &&
          strstr(why, "right-bounded window"));
    c = parse("dtype = fp8_e4m3\nheads = 2\nseqlen = 32\nhead_dim = 16\ncp = 2 p2p\n");
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "fp8"));
    c = parse("dtype = fp8_e5m2\nheads = 2\nseqlen = 32\nhead_dim = 16\ncp = 2 p2p\n");
    CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_DECLINED &&
          strstr(why, "fp8_e5m2 is not served"));
    /* ragged queries over paged K/V (the serving layout): declined, every comm type */
    static const char *const comms[] = {"p2p", "a2a", "all_gather"};
    for (int i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "dtype = bf16\nheads = 2\nlayout = thd\nbatch = 2\nseqlen = 32\nseqlens_q = 32,16\n"
                 "seqlens_kv = 32,16\npage_size = 8\nhead_dim = 16\ncp = 2 %s\n",
                 comms[i]);
        c = parse(text);
        CHECK(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &p, why, sizeof why) == AF_RUN_DECLINED);
        CHECK_MSG(strstr(why, "thd with paged K/V"), "%s: %s", comms[i], why);
    }
}

/* An inner backend: the cpu backend that declines any call holding global query rows
 * past position 40 of a 64-token sequence with fewer than 64 rows (some ranks' steps). */
static af_backend *g_cpu;
static af_run_status picky_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    if (c->seqlen_q == 16 && c->seqlen_kv == 32) {
        snprintf(why, cap, "picky: no 16 x 32 call");
        return AF_RUN_DECLINED;
    }
    return g_cpu->supports(g_cpu, c, why, cap);
}

static void test_attribution(void) {
    g_cpu = af_backend_cpu_new();
    af_backend picky = *g_cpu;
    picky.name = "picky";
    picky.supports = picky_supports;
    picky.destroy = NULL;
    af_backend *w = af_cp_wrap(&picky);
    af_case c = parse("dtype = bf16\nheads = 2\nseqlen = 64\nhead_dim = 16\nmask = causal\ncp = 2 p2p\n");
    char why[512];
    /* rank 0 step 1: source rank 1 > 0, the half step: 16 query rows x 32 keys */
    CHECK(w->supports(w, &c, why, sizeof why) == AF_RUN_DECLINED);
    CHECK_MSG(strstr(why, "cp p2p rank 0 step 1: picky: no 16 x 32 call"), "%s", why);
    w->destroy(w);
    g_cpu->destroy(g_cpu);
}

/* CP over cpu equals plain cpu on the global case up to the merge's rounding. */
static void test_matches_plain(const char *text) {
    af_case c = parse(text), g = c;
    g.cp_size = 1, g.cp_comm = AF_CP_NONE;
    af_backend *cp = af_cp_wrap(af_backend_cpu_new());
    af_tensors t1, t2;
    af_inputs in;
    char why[512];
    CHECK(af_tensors_alloc(&t1, &c, why, sizeof why) == 0 && af_tensors_alloc(&t2, &g, why, sizeof why) == 0);
    CHECK(af_inputs_alloc(&in, &c) == 0 && af_inputs_generate(&c, &t1, &in) == 0);
    af_tensors_copy(&t2, &t1);
    af_run_info info;
    CHECK_MSG(cp->run(cp, &c, "", &t1, &info, why, sizeof why) == AF_RUN_OK, "%s", why);
    CHECK_MSG(cp->run(cp, &g, "", &t2, &info, why, sizeof why) == AF_RUN_OK, "%s", why);
    af_outputs a, b;
    CHECK(af_outputs_alloc(&a, &c) == 0 && af_outputs_alloc(&b, &g) == 0);
    af_outputs_read(&t1, &c, &a);
    af_outputs_read(&t2, &g, &b);
    size_t no = (size_t)c.batch * c.heads_q * c.seqlen_q;
    double worst_o = 0, worst_lse = 0;
    for (size_t i = 0; i < no * c.head_dim_v; i++) worst_o = fmax(worst_o, fabs(a.o[i] - b.o[i]));
    for (size_t i = 0; i < no; i++)
        if (isfinite(b.lse[i])) worst_lse = fmax(worst_lse, fabs(a.lse[i] - b.lse[i]));
    /* a few bf16 units at |O| <= ~3 (inputs normal:1), and fp32 LSE rounding */
    CHECK_MSG(worst_o < 0.05 && worst_lse < 1e-4, "%s: O %.3g LSE %.3g", text, worst_o, worst_lse);
    if (c.backward) { /* dK, dV: each a sum of the calls' rounded partials (a few bf16 units) */
        size_t nk = (size_t)c.batch * c.heads_kv * c.seqlen_kv * c.head_dim_qk;
        double worst_grad = 0;
        for (size_t i = 0; i < nk; i++)
            worst_grad = fmax(worst_grad, fmax(fabs(a.dk[i] - b.dk[i]), fabs(a.dv[i] - b.dv[i])) / (1 + fabs(b.dk[i])));
        CHECK_MSG(worst_grad < 0.05, "%s: dK/dV relative %.3g", text, worst_grad);
    }
    af_outputs_free(&a), af_outputs_free(&b), af_inputs_free(&in);
    af_tensors_free(&t1), af_tensors_free(&t2);
    cp->destroy(cp);
}

int main(void) {
    test_p2p_steps();
    test_all_gather_trim();
    test_thd_chunks();
    test_declines();
    test_attribution();
    const char *comms[] = {"p2p", "all_gather", "a2a", "a2a+p2p"};
    for (int k = 0; k < 4; k++) {
        char text[256];
        snprintf(text, sizeof text, "dtype = bf16\nheads = 4\nseqlen = 32\nhead_dim = 16\nmask = causal\ncp = 2 %s\n",
                 comms[k]);
        test_matches_plain(text);
    }
    /* a2a with K/V heads replicated to the ranks (GQA and MQA, heads_kv < cp) */
    test_matches_plain("dtype = bf16\nheads_q = 8\nheads_kv = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\n"
                       "backward = yes\ncp = 4 a2a\n");
    test_matches_plain("dtype = bf16\nheads_q = 4\nheads_kv = 1\nseqlen = 32\nhead_dim = 16\ncp = 4 a2a\n");
    CHECK_DONE("test_cp_plan");
}
