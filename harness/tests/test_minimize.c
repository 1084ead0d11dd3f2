/* test_minimize.c — the minimiser shrinks a failing case and keeps its signature.
 *
 * The backend under test is the cpu backend with a bug written here: O is off by
 * 0.5 in the last sequence of the batch whenever head_dim_qk >= 40. From a big case
 * (batch 4, 8:2 GQA heads, seqlens 100/130, d 64) the minimiser must come down to
 * batch 1, 4:2 heads, short sequences and the smallest failing head dim of the same
 * config class, with the same signature.
 */
#include <string.h>

#include "attnfuzz/minimize.h"
#include "attnfuzz/runner.h"
#include "check.h"

static af_backend *inner;

static af_run_status buggy_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    return inner->supports(inner, c, why, cap);
}

static int buggy_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    return inner->available(inner, why, cap);
}

static af_run_status buggy_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                               af_run_info *info, char *why, size_t cap) {
    (void)be;
    af_run_status st = inner->run(inner, c, engine, t, info, why, cap);
    if (st != AF_RUN_OK || c->head_dim_qk < 40) return st;
    const af_tensor_view *o = &t->plan.view[AF_T_O];
    int b = c->batch - 1;
    for (int h = 0; h < c->heads_q; h++)
        for (int s = 0; s < af_case_len_q(c, b); s++)
            for (int d = 0; d < c->head_dim_v; d++) {
                int64_t off = af_layout_offset(&t->plan, AF_T_O, b, h, s, d);
                float x = (float)af_storage_load(o->storage, t->buf[o->buffer], off);
                af_storage_store(o->storage, t->buf[o->buffer], off, x + 0.5f);
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

    /* same signature, still fails, much smaller */
    af_verdict v;
    CHECK(run_case(&r.best, &x, &v) == 0);
    CHECK(v.n_findings > 0);
    char sig_before[AF_SIGNATURE_MAX], sig_after[AF_SIGNATURE_MAX];
    af_verdict v0;
    CHECK(run_case(&c, &x, &v0) == 0 && v0.n_findings > 0);
    af_signature(&c, &v0, sig_before, sizeof sig_before);
    af_signature(&r.best, &v, sig_after, sizeof sig_after);
    CHECK_MSG(strcmp(sig_before, sig_after) == 0, "%s vs %s", sig_before, sig_after);
    CHECK(strcmp(r.signature, sig_before) == 0);
    printf("minimised %s in %d runs: b%d h%d/%d s%d/%d d%d/%d cost %.4g -> %.4g\n", sig_after, r.runs, r.best.batch,
           r.best.heads_q, r.best.heads_kv, r.best.seqlen_q, r.best.seqlen_kv, r.best.head_dim_qk, r.best.head_dim_v,
           r.cost_before, r.cost_after);
    CHECK(r.best.batch == 1);
    CHECK(r.best.heads_q < c.heads_q && r.best.heads_q != r.best.heads_kv && r.best.heads_kv > 1); /* still GQA */
    CHECK(r.best.seqlen_q < r.best.seqlen_kv);  /* sq < skv kept: it is in the config class */
    CHECK(r.best.seqlen_kv <= 8);
    /* the smallest head dim that still fails in the same class (d<=64, multiple of 16):
     * 40 fails too, but it is a multiple of 8 only, another config class */
    CHECK(r.best.head_dim_qk == 48);
    CHECK(r.best.n_data == 1 && r.best.seed == 1);
    CHECK(r.cost_after * 100 < r.cost_before);

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
