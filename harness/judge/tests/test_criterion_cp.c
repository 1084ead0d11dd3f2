/* test_criterion_cp.c — the budget of a CP case's rounded partials (judge/criterion/criterion_cp.h):
 *  1. af_cp_partials against the wrapper's plan (backends/cp): for every comm type and
 *     cp in {2, 3, 4, 8} where the plan is valid, no query row (O, dQ) or key (dK, dV)
 *     combines more calls than the judge's count, and on an unmasked case some row or
 *     key reaches it (the count is tight); a2a and cp 1 give 1 (no term), but a2a's
 *     K/V heads replicated to the ranks (heads_kv < cp) sum cp / heads_kv partials;
 *  2. the correct wrapper over cpu on bf16 and fp16 backward cases passes with the term;
 *     the same outputs judged as a cp = 1 case (no term: the floor before it) fail on at
 *     least one of them (the term is what the rounded partials need);
 *  3. no wider than the rounding: on a bf16 p2p cp 4 case, the largest dK error on the
 *     element with the largest term that still passes (bisection) exceeds the cp = 1
 *     budget's by more than 0 and at most 2 cp[e] (the element check doubles its eps),
 *     and 1.02 times it is a dK mismatch; the same on a bf16 a2a cp 4 case whose one K/V
 *     head is replicated to the 4 ranks (the a2a term).
 */
#include "judge/tests/criterion_fixture.h"

#include <stdlib.h>

#include "backends/cp/cp.h"
#include "backends/cp/cp_plan.h"
#include "judge/criterion/criterion_cp.h"
#include "judge/tolerance.h"

static af_case parse(const char *text) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(text, "test", &c, &err) == 0, "%s: %s", err.field, err.message);
    return c;
}

/* The most calls of the plan that hold one query row (kv = false) or one key (kv = true). */
static int plan_max_calls(const af_case *c, const af_cp_plan *plan, bool kv) {
    int H = kv ? c->heads_kv : c->heads_q, S = kv ? c->seqlen_kv : c->seqlen_q;
    int *count = calloc((size_t)c->batch * H * S, sizeof *count);
    CHECK(count != NULL);
    int best = 0;
    for (int ri = 0; ri < plan->count; ri++) {
        const af_cp_run *run = &plan->runs[ri];
        af_case sub;
        char why[600];
        if (af_cp_sub_case(c, run, c->backward, &sub, why, sizeof why) != 0) continue; /* no work */
        int h0 = kv ? run->hk0 : run->h0, nh = kv ? sub.heads_kv : sub.heads_q;
        for (int b = 0; b < c->batch; b++) {
            int nseg = kv ? run->nseg_kv : run->nseg_q;
            const af_cp_seg *seg = kv ? run->kv[b] : run->q[b];
            for (int s = 0; s < nseg; s++)
                for (int l = 0; l < seg[s].valid; l++)
                    for (int h = h0; h < h0 + nh; h++) {
                        int *n = &count[((size_t)b * H + h) * S + seg[s].start + l];
                        if (++*n > best) best = *n;
                    }
        }
    }
    free(count);
    return best;
}

static void partial_counts(void) {
    const char *comms[] = {"p2p", "all_gather", "a2a", "a2a+p2p"};
    const char *masks[] = {"none", "causal"};
    int sizes[] = {2, 3, 4, 8}, checked = 0;
    for (int ci = 0; ci < 4; ci++)
        for (int si = 0; si < 4; si++)
            for (int mi = 0; mi < 2; mi++) {
                char text[256];
                snprintf(text, sizeof text,
                         "dtype = bf16\nbatch = 1\nheads_q = 24\nheads_kv = 24\nseqlen = 48\nhead_dim = 8\n"
                         "mask = %s\nbackward = yes\ncp = %d %s\n",
                         masks[mi], sizes[si], comms[ci]);
                af_case c = parse(text);
                af_cp_plan plan;
                char why[512];
                if (af_cp_plan_make(&c, AF_CP_PLANT_NONE, &plan, why, sizeof why) != AF_RUN_OK) continue;
                int q = plan_max_calls(&c, &plan, false), k = plan_max_calls(&c, &plan, true);
                int jq = af_cp_partials(&c, AF_T_DQ), jk = af_cp_partials(&c, AF_T_DK);
                CHECK(af_cp_partials(&c, AF_T_O) == jq && af_cp_partials(&c, AF_T_DV) == jk);
                CHECK(af_cp_partials(&c, AF_T_LSE) == 1);
                CHECK_MSG(q <= jq && k <= jk, "cp %d %s %s: plan rows %d keys %d > judge %d %d", sizes[si], comms[ci],
                          masks[mi], q, k, jq, jk);
                if (mi == 0)
                    CHECK_MSG(q == jq && k == jk, "cp %d %s none: plan rows %d keys %d, judge %d %d (not tight)",
                              sizes[si], comms[ci], q, k, jq, jk);
                if (ci == 2) CHECK(jq == 1 && jk == 1);
                af_cp_plan_free(&plan);
                checked++;
            }
    /* a2a with K/V heads replicated to the ranks (heads_kv < cp): dK, dV sum cp / heads_kv */
    for (int si = 0; si < 3; si++) {
        const char *text[] = {"heads_q = 8\nheads_kv = 2\ncp = 4 a2a\n", "heads_q = 8\nheads_kv = 1\ncp = 8 a2a\n",
                              "heads_q = 8\nheads_kv = 2\ncp = 8 a2a\n"};
        char full[256];
        snprintf(full, sizeof full, "dtype = bf16\nbatch = 1\nseqlen = 48\nhead_dim = 8\nbackward = yes\n%s", text[si]);
        af_case c = parse(full);
        af_cp_plan plan;
        char why[512];
        CHECK_MSG(af_cp_plan_make(&c, AF_CP_PLANT_NONE, &plan, why, sizeof why) == AF_RUN_OK, "%s", why);
        int q = plan_max_calls(&c, &plan, false), k = plan_max_calls(&c, &plan, true);
        CHECK_MSG(q == 1 && af_cp_partials(&c, AF_T_DQ) == 1 && k == af_cp_partials(&c, AF_T_DK) &&
                      k == c.cp_size / c.heads_kv,
                  "%s: plan rows %d keys %d, judge %d", text[si], q, k, af_cp_partials(&c, AF_T_DK));
        af_cp_plan_free(&plan);
        checked++;
    }
    af_case one = parse("dtype = bf16\nheads = 2\nseqlen = 16\nhead_dim = 8\nbackward = yes\n");
    CHECK(af_cp_partials(&one, AF_T_DK) == 1 && af_cp_partials(&one, AF_T_O) == 1);
    CHECK(checked >= 24);
    printf("partials: %d (comm, cp, mask) plans within the judge's counts, unmasked ones equal\n", checked);
}

/* Judge the wrapper's outputs of p's case as they are (cp) and as a cp = 1 case. */
static void judge_both(const af_prepared *p, const af_outputs *k, int *cp_findings, int *plain_findings,
                       double *cp_worst, af_tensor_id *plain_tensor) {
    af_verdict v;
    *cp_findings = fx_judge(p, k, &v, cp_worst);
    af_case plain = p->c;
    plain.cp_size = 1;
    plain.cp_comm = AF_CP_NONE;
    af_verdict_init(&v, "test");
    *plain_findings = af_compare_outputs(&plain, k, &p->ref, &p->oracle, &p->terms, &v);
    *plain_tensor = v.n_findings ? v.findings[0].tensor : AF_T_NONE;
}

/* One case through the wrapper over cpu: returns whether the cp = 1 floor flags it
 * (the term's floor must not). */
static bool wrapper_case(af_backend *wrapped, const char *text) {
    af_prepared p;
    af_backend *cpu;
    fx_prepare(text, &p, &cpu);
    af_verdict v;
    af_tensors out;
    af_outputs k;
    fx_judge_run(&p, cpu, wrapped, &v, &out, &k);
    CHECK_MSG(v.n_findings == 0 && v.kind == AF_V_PASS, "correct wrapper flagged (%s) on\n%s", v.reason, text);
    int fc, fp;
    double worst;
    af_tensor_id tensor;
    judge_both(&p, &k, &fc, &fp, &worst, &tensor);
    CHECK_MSG(fc == 0, "correct wrapper flagged (worst ratio %.3f) on\n%s", worst, text);
    if (fp > 0)
        printf("needs the term (cp = 1 floor: %s mismatch; ratio with it %.3f):\n%s", af_tensor_name(tensor), worst,
               text);
    af_outputs_free(&k);
    af_tensors_free(&out);
    af_prepared_free(&p);
    cpu->destroy(cpu);
    return fp > 0;
}

static void wrapper_passes(int explore) {
    af_backend *wrapped = af_cp_wrap(af_backend_cpu_new());
    CHECK(wrapped != NULL);
    const char *shapes[] = {
        "seqlen_q = 24\nseqlen_kv = 24\nhead_dim_qk = 23\nhead_dim_v = 1\nmask = none\nscale = 30\n",
        "seqlen_q = 24\nseqlen_kv = 48\nhead_dim_qk = 40\nhead_dim_v = 1\nmask = none\n",
        "seqlen_q = 24\nseqlen_kv = 24\nhead_dim_qk = 8\nhead_dim_v = 2\nmask = causal\n",
        "seqlen_q = 24\nseqlen_kv = 48\nhead_dim_qk = 16\nhead_dim_v = 3\nmask = none\nscale = 4\n",
    };
    const char *comms[] = {"2 p2p", "4 p2p", "2 all_gather", "4 a2a+p2p", "3 p2p"};
    /* bf16 keeps block_range's wide blocks; fp16 would overflow there */
    const char *data[2][4] = {
        {"normal:16 block_range:40", "uniform:8 block_range:40", "normal:1 outlier_channels:3:20 sink:8",
         "uniform:3 zeros:0.3"},
        {"normal:4", "uniform:8", "normal:1 outlier_channels:3:20 sink:8", "uniform:3 zeros:0.3"}};
    int cases = 0, plain_failed = 0, seeds = explore ? explore : 2;
    for (int dt = 0; dt < 2; dt++)
        for (int si = 0; si < 4; si++)
            for (int ci = 0; ci < 5; ci++)
                for (int seed = 1; seed <= seeds; seed++) {
                    char text[512];
                    snprintf(text, sizeof text,
                             "dtype = %s\nbatch = 1\nheads = 2\nbackward = yes\n%scp = %s\n"
                             "seed = %d\ndata = %s\n",
                             dt ? "fp16" : "bf16", shapes[si], comms[ci], seed * 7 + ci,
                             data[dt][(seed + ci + si) % 4]);
                    plain_failed += wrapper_case(wrapped, text);
                    cases++;
                }
    wrapped->destroy(wrapped);
    printf("wrapper: %d cases pass with the partials' term; judged as cp = 1, %d of them fail\n", cases, plain_failed);
    if (!explore) CHECK_MSG(plain_failed > 0, "no case needed the term: the test shows nothing");
}

static bool dk_passes(const af_prepared *p, const af_case *judged, const af_outputs *perfect, af_outputs *k, size_t e,
                      double err) {
    size_t n;
    double *dk = fx_tensor(&p->c, k, AF_T_DK, &n);
    memcpy(dk, perfect->dk, n * sizeof(double));
    dk[e] += err;
    af_verdict v;
    af_verdict_init(&v, "test");
    return af_compare_outputs(judged, k, &p->ref, &p->oracle, &p->terms, &v) == 0;
}

/* The largest added error on dK element e that passes (bisection to 1e-4 relative). */
static double largest_passing(const af_prepared *p, const af_case *judged, const af_outputs *perfect, af_outputs *k,
                              size_t e) {
    double lo = 0, hi = 1e-6;
    CHECK(dk_passes(p, judged, perfect, k, e, lo));
    while (dk_passes(p, judged, perfect, k, e, hi)) hi *= 2;
    while (hi - lo > 1e-4 * hi) {
        double mid = 0.5 * (lo + hi);
        if (dk_passes(p, judged, perfect, k, e, mid))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void allowance_is_tight(const char *text, bool a2a_without_replicas) {
    af_prepared p;
    af_backend *cpu;
    fx_prepare(text, &p, &cpu);
    const af_case *c = &p.c;
    double *term = af_criterion_cp_term(c, AF_T_DK, &p.terms, af_output_unit(c, AF_T_DK));
    CHECK(term != NULL);
    size_t n, e = 0;
    af_outputs perfect, k;
    fx_perfect(&p, &perfect);
    CHECK(af_outputs_alloc(&k, c) == 0);
    fx_copy(c, &perfect, &k);
    fx_tensor(c, &k, AF_T_DK, &n);
    for (size_t i = 0; i < n; i++)
        if (term[i] > term[e]) e = i;
    af_case plain = *c;
    plain.cp_size = 1;
    plain.cp_comm = AF_CP_NONE;
    double a_cp = largest_passing(&p, c, &perfect, &k, e), a_plain = largest_passing(&p, &plain, &perfect, &k, e);
    printf("allowance: dK element %zu: cp term %.4g, largest passing error %.4g (cp = 1 budget: %.4g)\n", e, term[e],
           a_cp, a_plain);
    CHECK(a_cp > a_plain);
    CHECK_MSG(a_cp - a_plain <= 2.0 * term[e] * (1 + 1e-3), "the budget grew by %.4g > 2 x %.4g", a_cp - a_plain,
              term[e]);
    CHECK(!dk_passes(&p, c, &perfect, &k, e, 1.02 * a_cp));
    af_verdict v;
    af_verdict_init(&v, "test");
    CHECK(af_compare_outputs(c, &k, &p.ref, &p.oracle, &p.terms, &v) == 1);
    CHECK(v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_DK);
    if (a2a_without_replicas) {
        /* a2a: one call per head, so no term: the budgets are cp = 1's (cp 2: heads 2 split
         * across the ranks, no K/V head replicated) */
        af_case a2a = *c;
        a2a.cp_comm = AF_CP_A2A;
        a2a.cp_size = 2;
        CHECK(af_criterion_cp_term(&a2a, AF_T_DK, &p.terms, af_output_unit(c, AF_T_DK)) == NULL);
    }
    free(term);
    af_outputs_free(&k);
    af_outputs_free(&perfect);
    af_prepared_free(&p);
    cpu->destroy(cpu);
}

int main(int argc, char **argv) {
    if (argc > 1) { /* wrapper cases only */
        wrapper_passes(atoi(argv[1]));
        return 0;
    }
    partial_counts();
    allowance_is_tight("dtype = bf16\nbatch = 1\nheads = 2\nseqlen = 32\nhead_dim = 16\nmask = causal\nbackward = yes\n"
                       "cp = 4 p2p\nseed = 5\n",
                       true);
    /* a2a with one K/V head replicated to 4 ranks (4 dK, dV partials): the same edge */
    allowance_is_tight("dtype = bf16\nbatch = 1\nheads_q = 4\nheads_kv = 1\nseqlen = 32\nhead_dim = 16\nmask = causal\n"
                       "backward = yes\ncp = 4 a2a\nseed = 5\n",
                       false);
    wrapper_passes(0);
    printf("test_criterion_cp: ok\n");
    return 0;
}
