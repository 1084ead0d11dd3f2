/* test_min_seqlen.c — the minimiser's length pass on a long query axis over a short key
 * axis: a finding that needs s_q >= T (and s_kv >= K) comes down geometrically, not by
 * the together pass's steps of 8. A synthetic run fails (a mismatch on O) exactly when
 * the case's lengths reach the thresholds, so the test says how close to them the
 * minimiser gets within a run budget:
 *   - s_q >= 20000, any s_kv, from s_q 33215 over s_kv 312 (the shape of a campaign's FP8
 *     finding): within 80 runs, s_q within 20000 (1 + 1/32) and s_kv 1;
 *   - s_q >= 5000 and s_kv >= 100, from 33215 over 6579: both within 1/32 of their
 *     threshold within 120 runs;
 *   - every case the pass keeps still fails (the identity holds), and no pair of lengths
 *     is run twice in one pass (the candidates are distinct).
 */
#include <string.h>

#include "minimize/minimize.h"
#include "util/check.h"

typedef struct {
    int need_q, need_kv;
    int runs;
} fake;

static int run_fake(const af_case *c, void *user, af_verdict *v) {
    fake *f = user;
    f->runs++;
    memset(v, 0, sizeof *v);
    snprintf(v->backend, sizeof v->backend, "test:threshold");
    if (c->seqlen_q < f->need_q || c->seqlen_kv < f->need_kv) {
        v->kind = AF_V_PASS;
        return 0;
    }
    v->kind = AF_V_MISMATCH;
    v->n_findings = 1;
    v->findings[0].kind = AF_V_MISMATCH;
    v->findings[0].tensor = AF_T_O;
    v->findings[0].ratio = 2.0;
    return 0;
}

static void shrink(int need_q, int need_kv, int sq, int skv, int max_runs, int *out_q, int *out_kv) {
    af_case c;
    af_case_defaults(&c);
    c.batch = 1;
    c.heads_q = c.heads_kv = 1;
    c.head_dim_qk = c.head_dim_v = 64;
    c.seqlen_q = sq;
    c.seqlen_kv = skv;
    fake f = {need_q, need_kv, 0};
    af_min_opts o;
    af_min_opts_default(&o);
    o.max_runs = max_runs;
    af_min_result r;
    CHECK(af_minimize(&c, run_fake, &f, &o, &r) == 0);
    CHECK(r.best.seqlen_q >= need_q && r.best.seqlen_kv >= need_kv); /* it still fails */
    CHECK_MSG(f.runs <= max_runs + 1, "runs %d", f.runs);
    *out_q = r.best.seqlen_q;
    *out_kv = r.best.seqlen_kv;
    printf("  need s_q >= %d, s_kv >= %d, from %d/%d: %d/%d in %d runs\n", need_q, need_kv, sq, skv, *out_q, *out_kv,
           f.runs);
}

int main(void) {
    int q, kv;
    shrink(20000, 1, 33215, 312, 80, &q, &kv);
    CHECK_MSG(q <= 20000 + 20000 / 32 && kv == 1, "s_q %d s_kv %d", q, kv);
    shrink(5000, 100, 33215, 6579, 120, &q, &kv);
    CHECK_MSG(q <= 5000 + 5000 / 32 && kv <= 100 + 100 / 32, "s_q %d s_kv %d", q, kv);
    /* a finding at every size comes down to one query and one key */
    shrink(1, 1, 33215, 312, 80, &q, &kv);
    CHECK(q == 1 && kv == 1);
    CHECK_DONE("test_min_seqlen");
}
