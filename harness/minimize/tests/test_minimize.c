/* test_minimize.c — the minimiser shrinks a failing case while its finding keeps its
 * identity (kind | backend | tensor); the config class may change.
 *
 * The backend under test is the cpu backend with a bug written here: O is off by
 * 0.5 in the last sequence of the batch whenever head_dim_qk >= 40. From a big case
 * (batch 4, 8:2 GQA heads, seqlens 100/130, d 64, causal bottom-right, a sink data
 * term) the minimiser must come down to batch 1, one head, one query and key, d_qk 40
 * (the smallest that still fails; d_v 1), no mask, default data: the identity stays,
 * the config class (and so the bucket) is the minimised case's.
 *
 * Two variants check that the invariant holds the finding's identity and not less:
 *   - "kind": with one query head the bug writes NaN instead (another verdict kind),
 *     so the minimiser must keep more than one query head;
 *   - "window": the bug only fires with a left window, so the window survives.
 */
#include <math.h>
#include <string.h>

#include "minimize/minimize.h"
#include "judge/runner.h"
#include "util/clock.h"
#include "util/check.h"

static af_backend *inner;
static enum { BUG_PLAIN, BUG_KIND, BUG_WINDOW } bug_mode;

static af_run_status buggy_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    return inner->supports(inner, c, why, cap);
}

static int buggy_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    return inner->available(inner, why, cap);
}

static af_run_status buggy_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                               char *why, size_t cap) {
    (void)be;
    af_run_status st = inner->run(inner, c, engine, t, info, why, cap);
    if (st != AF_RUN_OK || c->head_dim_qk < 40) return st;
    if (bug_mode == BUG_WINDOW && c->window_left < 0) return st;
    float add = bug_mode == BUG_KIND && c->heads_q == 1 ? NAN : 0.5f;
    const af_tensor_view *o = &t->plan.view[AF_T_O];
    int b = c->batch - 1;
    for (int h = 0; h < c->heads_q; h++)
        for (int s = 0; s < af_case_len_q(c, b); s++)
            for (int d = 0; d < c->head_dim_v; d++) {
                int64_t off = af_layout_offset(&t->plan, AF_T_O, b, h, s, d);
                float x = (float)af_storage_load(o->storage, t->buf[o->buffer], off);
                af_storage_store(o->storage, t->buf[o->buffer], off, x + add);
            }
    return st;
}

typedef struct {
    af_runner runner;
    af_backend *be;
    int runs;
} ctx;

static int run_case(const af_case *c, void *user, af_verdict *v) {
    ctx *x = user;
    af_prepared p;
    char why[512];
    x->runs++;
    /* the test runs minutes: a progress line at most every 10 s */
    static double t0, last;
    double now = af_clock_mono();
    if (t0 == 0) t0 = last = now;
    if (now - last >= 10) {
        last = now;
        printf("test_minimize: %d runs, %.0f s\n", x->runs, now - t0);
        fflush(stdout);
    }
    if (af_prepare(&x->runner, c, &p, why, sizeof why)) return -1;
    af_judge(&x->runner, &p, x->be, "", v, NULL);
    af_prepared_free(&p);
    return 0;
}

int main(void) {
    inner = af_backend_cpu_new();
    af_backend buggy = *inner;
    buggy.name = "test:buggy_d40";
    buggy.supports = buggy_supports;
    buggy.available = buggy_available;
    buggy.run = buggy_run;
    buggy.destroy = NULL;
    buggy.engines = NULL;

    ctx x;
    memset(&x, 0, sizeof x);
    x.runner.reference = inner;
    af_oracle_opts_default(&x.runner.oracle);
    x.be = &buggy;

    af_case c;
    af_case_defaults(&c);
    c.batch = 4;
    c.heads_q = 8;
    c.heads_kv = 2;
    c.seqlen_q = 100;
    c.seqlen_kv = 130;
    c.head_dim_qk = c.head_dim_v = 64;
    c.mask = AF_MASK_CAUSAL;
    c.align = AF_ALIGN_BOTTOM_RIGHT;
    c.n_data = 2;
    c.data[1] = (af_data_term){AF_DATA_SINK, 30, 0};
    c.seed = 77;
    af_error err;
    CHECK(af_case_validate(&c, &err) == 0);

    af_min_opts o;
    af_min_opts_default(&o);
    o.max_runs = 400;
    o.log = stderr;
    af_min_result r;
    CHECK(af_minimize(&c, run_case, &x, &o, &r) == 0);

    /* still fails with the same identity; the bucket is the minimised case's signature */
    af_verdict v;
    CHECK(run_case(&r.best, &x, &v) == 0);
    CHECK(v.n_findings > 0);
    char sig_before[AF_SIGNATURE_MAX], sig_after[AF_SIGNATURE_MAX], id_before[AF_SIGNATURE_MAX],
        id_after[AF_SIGNATURE_MAX];
    af_verdict v0;
    CHECK(run_case(&c, &x, &v0) == 0 && v0.n_findings > 0);
    af_signature(&c, &v0, sig_before, sizeof sig_before);
    af_signature(&r.best, &v, sig_after, sizeof sig_after);
    af_finding_identity(&c, &v0, id_before, sizeof id_before);
    af_finding_identity(&r.best, &v, id_after, sizeof id_after);
    CHECK_MSG(strcmp(id_before, id_after) == 0, "%s vs %s", id_before, id_after);
    CHECK_MSG(strcmp(id_before, "mismatch|test:buggy_d40|O") == 0, "%s", id_before);
    CHECK(strcmp(r.identity, id_before) == 0);
    CHECK(strcmp(r.raw_signature, sig_before) == 0);
    CHECK_MSG(strcmp(r.signature, sig_after) == 0, "%s vs %s", r.signature, sig_after);
    CHECK(strncmp(sig_after, id_after, strlen(id_after)) == 0); /* signature = identity | class */
    /* the config class moved: GQA, causal-br and sq<skv were not needed to fail */
    CHECK_MSG(strcmp(sig_before, sig_after) != 0, "%s", sig_after);
    printf("minimised in %d runs: b%d h%d/%d s%d/%d d%d/%d cost %.4g -> %.4g\n  raw       %s\n  minimised %s\n", r.runs,
           r.best.batch, r.best.heads_q, r.best.heads_kv, r.best.seqlen_q, r.best.seqlen_kv, r.best.head_dim_qk,
           r.best.head_dim_v, r.cost_before, r.cost_after, sig_before, sig_after);
    CHECK(r.best.batch == 1);
    CHECK(r.best.heads_q == 1 && r.best.heads_kv == 1);
    CHECK(r.best.seqlen_q == 1 && r.best.seqlen_kv == 1);
    CHECK(r.best.head_dim_qk == 40); /* the smallest head dim that still fails */
    CHECK(r.best.head_dim_v == 1);
    CHECK(r.best.mask == AF_MASK_NONE && r.best.align == AF_ALIGN_TOP_LEFT);
    CHECK(r.best.n_data == 1 && r.best.seed == 1);
    CHECK(r.cost_after * 1000 < r.cost_before);

    /* the same bug from another raw case (other class: MHA, bf16, window, padding) meets
     * the same minimised case: one bucket */
    af_case c2;
    af_case_defaults(&c2);
    c2.dtype = AF_DT_BF16;
    c2.batch = 2;
    c2.heads_q = c2.heads_kv = 3;
    c2.seqlen_q = c2.seqlen_kv = 40;
    c2.has_seqlens = true;
    c2.seqlens_q[0] = c2.seqlens_kv[0] = 40;
    c2.seqlens_q[1] = c2.seqlens_kv[1] = 33;
    c2.window_left = 5;
    c2.head_dim_qk = c2.head_dim_v = 72;
    CHECK(af_case_validate(&c2, &err) == 0);
    af_min_result r2;
    o.log = NULL;
    CHECK(af_minimize(&c2, run_case, &x, &o, &r2) == 0);
    CHECK(strcmp(r2.raw_signature, sig_before) != 0);
    CHECK_MSG(strcmp(r2.signature, r.signature) == 0, "%s vs %s", r2.signature, r.signature);
    printf("second raw case %s\n  -> the same bucket %s\n", r2.raw_signature, r2.signature);

    /* kind is kept: with one query head the bug gives NaN (another kind), so h stays > 1 */
    bug_mode = BUG_KIND;
    CHECK(af_minimize(&c, run_case, &x, &o, &r2) == 0);
    CHECK_MSG(r2.best.heads_q > 1 && strcmp(r2.identity, id_before) == 0, "h%d %s", r2.best.heads_q, r2.identity);
    CHECK(run_case(&r2.best, &x, &v) == 0 && v.kind == AF_V_MISMATCH);
    printf("kind kept: %s (h%d/%d)\n", r2.signature, r2.best.heads_q, r2.best.heads_kv);

    /* a feature the bug needs survives: the window */
    bug_mode = BUG_WINDOW;
    af_case cw = c;
    cw.window_left = 7;
    CHECK(af_case_validate(&cw, &err) == 0);
    CHECK(af_minimize(&cw, run_case, &x, &o, &r2) == 0);
    CHECK(r2.best.window_left >= 0 && strstr(r2.signature, "win(L") != NULL);
    printf("window kept: %s\n", r2.signature);
    bug_mode = BUG_PLAIN;

    /* a passing case has nothing to minimise */
    af_case ok;
    af_case_defaults(&ok);
    ok.head_dim_qk = ok.head_dim_v = 32;
    CHECK(af_minimize(&ok, run_case, &x, &o, &r) == 1);

    /* the run budget is honoured */
    o.max_runs = 5;
    o.log = NULL;
    x.runs = 0;
    CHECK(af_minimize(&c, run_case, &x, &o, &r) == 0);
    CHECK(r.runs <= 5 && x.runs <= 5 && r.budget_exhausted);

    inner->destroy(inner);
    CHECK_DONE("test_minimize");
}
