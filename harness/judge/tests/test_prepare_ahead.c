/* test_prepare_ahead.c — a case prepared on its own thread (judge/prepare_ahead.h) is the
 * case af_prepare makes in the caller's thread: the same laid-out buffers (poison and
 * guards included), the same exact inputs, oracle and reference outputs, the same verdict
 * of the cpu backend; a take for another case drops it; an idle take and a drop are no-ops;
 * the taken preparation carries the caller's stage mark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/prepare_ahead.h"
#include "judge/tests/probe_fixture.h"
#include "judge/verdict_json.h"
#include "util/check.h"

static const char *const case_a =
    "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 40\nseqlen_kv = 72\nhead_dim = 32\n"
    "mask = causal\nbackward = yes\nseed = 11\n";
static const char *const case_b =
    "dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 17\nseqlen_kv = 33\nhead_dim = 16\nseed = 12\n";

static void runner_for(af_runner *r, af_backend *cpu, af_stage_mark *mark) {
    fx_probe_runner(r, cpu, true);
    r->mark = mark;
}

static void same_doubles(const double *a, const double *b, size_t n, const char *what) {
    CHECK_MSG((a == NULL) == (b == NULL), "%s: one side missing", what);
    if (a) CHECK_MSG(memcmp(a, b, n * sizeof *a) == 0, "%s differs", what);
}

/* Two preparations of c are the same bits. */
static void same_prepared(const af_prepared *x, const af_prepared *y) {
    const af_case *c = &x->c;
    CHECK(af_case_equal(&x->c, &y->c));
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        CHECK((x->tensors.alloc[i] == NULL) == (y->tensors.alloc[i] == NULL));
        if (!x->tensors.alloc[i]) continue;
        CHECK(x->tensors.bytes[i] == y->tensors.bytes[i]);
        CHECK_MSG(memcmp(x->tensors.alloc[i], y->tensors.alloc[i], x->tensors.bytes[i] + 2 * (size_t)AF_GUARD_BYTES) ==
                      0,
                  "buffer %d differs", i);
    }
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nkv = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    same_doubles(x->inputs.q, y->inputs.q, nq * c->head_dim_qk, "exact Q");
    same_doubles(x->inputs.k, y->inputs.k, nkv * c->head_dim_qk, "exact K");
    same_doubles(x->inputs.v, y->inputs.v, nkv * c->head_dim_v, "exact V");
    same_doubles(x->inputs.dout, y->inputs.dout, nq * c->head_dim_v, "exact dO");
    CHECK(x->have_oracle == y->have_oracle && x->have_ref == y->have_ref);
    same_doubles(x->oracle.out.o, y->oracle.out.o, nq * c->head_dim_v, "oracle O");
    same_doubles(x->oracle.out.lse, y->oracle.out.lse, nq, "oracle LSE");
    same_doubles(x->oracle.out.dq, y->oracle.out.dq, nq * c->head_dim_qk, "oracle dQ");
    same_doubles(x->oracle.out.dk, y->oracle.out.dk, nkv * c->head_dim_qk, "oracle dK");
    same_doubles(x->ref.o, y->ref.o, nq * c->head_dim_v, "reference O");
    same_doubles(x->ref.dv, y->ref.dv, nkv * c->head_dim_v, "reference dV");
}

/* The cpu backend's verdict on p as JSON, timings removed (the "seconds" objects). */
static char *verdict_text(af_runner *r, af_prepared *p, af_backend *cpu) {
    af_verdict *v = malloc(sizeof *v);
    CHECK(v != NULL);
    af_judge(r, p, cpu, "", v, NULL);
    CHECK_MSG(v->kind == AF_V_PASS, "the cpu backend's verdict: %s (%s)", af_verdict_name(v->kind), v->reason);
    json_t *o = af_verdict_to_json("case", v);
    CHECK(o != NULL);
    json_object_del(o, "seconds");
    json_t *j = json_object_get(o, "judge");
    if (j) json_object_del(j, "seconds");
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    free(v);
    CHECK(s != NULL);
    return s;
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    CHECK(cpu != NULL);
    af_stage_mark mark;
    memset(&mark, 0, sizeof mark);
    af_runner r;
    runner_for(&r, cpu, &mark);
    af_case a, b;
    fx_parse_case(&a, case_a);
    fx_parse_case(&b, case_b);
    char why[512];

    /* 1. idle: take says no, drop does nothing */
    af_prepare_ahead ahead;
    memset(&ahead, 0, sizeof ahead);
    af_prepared *got = NULL;
    int rc = -1;
    CHECK(!af_prepare_ahead_take(&ahead, &a, &r, &got, &rc, why, sizeof why));
    CHECK(got == NULL);
    af_prepare_ahead_drop(&ahead);
    CHECK(!ahead.started);

    /* 2. a prepared ahead, then taken for a: the preparation of the caller's thread */
    CHECK(af_prepare_ahead_start(&ahead, &r, &a));
    CHECK(ahead.started);
    CHECK(!af_prepare_ahead_start(&ahead, &r, &b)); /* one at a time */
    af_prepared direct;
    CHECK_MSG(af_prepare(&r, &a, &direct, why, sizeof why) == 0, "%s", why);
    CHECK(af_prepare_ahead_take(&ahead, &a, &r, &got, &rc, why, sizeof why));
    CHECK_MSG(rc == 0 && got != NULL, "rc %d: %s", rc, why);
    CHECK(!ahead.started);
    CHECK(got->mark == &mark); /* the judging thread's mark, not the thread's NULL */
    same_prepared(&direct, got);
    char *va = verdict_text(&r, &direct, cpu), *vb = verdict_text(&r, got, cpu);
    CHECK_MSG(strcmp(va, vb) == 0, "verdicts differ:\n%s\n%s", va, vb);
    free(va);
    free(vb);
    af_prepared_free(got);
    free(got);
    af_prepared_free(&direct);

    /* 3. a prepared ahead, then b comes: dropped, the caller prepares b itself */
    CHECK(af_prepare_ahead_start(&ahead, &r, &a));
    got = NULL;
    CHECK(!af_prepare_ahead_take(&ahead, &b, &r, &got, &rc, why, sizeof why));
    CHECK(got == NULL && !ahead.started && ahead.p == NULL);

    /* 4. started and never taken: the drop joins and frees (LeakSanitizer checks the free) */
    CHECK(af_prepare_ahead_start(&ahead, &r, &b));
    af_prepare_ahead_drop(&ahead);
    CHECK(!ahead.started && ahead.p == NULL);

    /* 5. the mode */
    setenv("ATTNFUZZ_PREPARE_AHEAD", "0", 1);
    CHECK(af_prepare_ahead_mode(1) == 0);
    setenv("ATTNFUZZ_PREPARE_AHEAD", "1", 1);
    CHECK(af_prepare_ahead_mode(8) == 1);
    setenv("ATTNFUZZ_PREPARE_AHEAD", "gpu", 1);
    CHECK(af_prepare_ahead_mode(8) == 2);
    unsetenv("ATTNFUZZ_PREPARE_AHEAD"); /* the default: GPU backends, one case at a time */
    CHECK(af_prepare_ahead_mode(1) == 2);
    CHECK(af_prepare_ahead_mode(8) == 0);

    cpu->destroy(cpu);
    CHECK_DONE("test_prepare_ahead");
}
