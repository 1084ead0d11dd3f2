/* run_compare.h — what the cudnn backend's GPU tests that run one case on two backend
 * instances share: a case's inputs made once (outputs poisoned), a run of it into doubles,
 * and the comparison of two runs' outputs (O and LSE bit for bit; the gradients within
 * the backward's run-to-run spread: its dQ accumulates with atomics). */
#ifndef ATTNFUZZ_CUDNN_TESTS_RUN_COMPARE_H
#define ATTNFUZZ_CUDNN_TESTS_RUN_COMPARE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "model/gen.h"
#include "util/check.h"

typedef struct {
    af_case c;
    af_tensors t; /* the generated inputs, outputs poisoned */
} run_fixture;

static void run_fixture_make(run_fixture *f, const char *text, const char *name) {
    af_error err;
    char why[512];
    CHECK_MSG(af_case_parse(text, name, &f->c, &err) == 0, "%s: %s: %s", name, err.field, err.message);
    af_inputs in;
    CHECK_MSG(af_tensors_alloc(&f->t, &f->c, why, sizeof why) == 0, "%s", why);
    CHECK(af_inputs_alloc(&in, &f->c) == 0);
    CHECK(af_inputs_generate(&f->c, &f->t, &in) == 0);
    af_inputs_free(&in);
    af_tensors_poison_outputs(&f->t, &f->c);
}

/* Run f's case on be (default engine) into out; info gets the run's. */
static void run_fixture_into(af_backend *be, const run_fixture *f, af_outputs *out, af_run_info *info) {
    char why[1024];
    af_tensors w;
    CHECK_MSG(af_tensors_alloc(&w, &f->c, why, sizeof why) == 0, "%s", why);
    af_tensors_copy(&w, &f->t);
    memset(info, 0, sizeof *info);
    af_run_status st = be->run(be, &f->c, "", &w, info, why, sizeof why);
    CHECK_MSG(st == AF_RUN_OK, "run: status %d: %s", (int)st, why);
    CHECK(af_outputs_alloc(out, &f->c) == 0);
    af_outputs_read(&w, &f->c, out);
    af_tensors_free(&w);
}

/* max |a - b| / max |b| over n doubles (0 when both are all zero; NaNs compare by bits). */
static double run_rel_diff(const double *a, const double *b, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]) || isinf(a[i]) || isinf(b[i])) {
            if (memcmp(&a[i], &b[i], sizeof a[i]) != 0) return INFINITY;
            continue;
        }
        d = fmax(d, fabs(a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
    }
    return m > 0 ? d / m : d;
}

/* Two runs of case i (`what` names the difference between them in messages). */
static void run_compare_outputs(int i, const af_case *c, const af_outputs *a, const af_outputs *b, const char *what) {
    size_t o = (size_t)c->batch * c->heads_q * c->seqlen_q * c->head_dim_v;
    size_t lse = (size_t)c->batch * c->heads_q * c->seqlen_q;
    CHECK_MSG(memcmp(a->o, b->o, o * sizeof(double)) == 0, "case %d: O differs %s", i, what);
    CHECK_MSG(memcmp(a->lse, b->lse, lse * sizeof(double)) == 0, "case %d: LSE differs %s", i, what);
    if (!c->backward) return;
    size_t dq = (size_t)c->batch * c->heads_q * c->seqlen_q * c->head_dim_qk;
    size_t dk = (size_t)c->batch * c->heads_kv * c->seqlen_kv * c->head_dim_qk;
    size_t dv = (size_t)c->batch * c->heads_kv * c->seqlen_kv * c->head_dim_v;
    double r =
        fmax(run_rel_diff(a->dq, b->dq, dq), fmax(run_rel_diff(a->dk, b->dk, dk), run_rel_diff(a->dv, b->dv, dv)));
    printf("case %d: gradients' largest difference %.3g of their maximum\n", i, r);
    /* the dQ accumulator's atomics reorder sums: a few units of the io dtype at most */
    CHECK_MSG(r <= 2e-2, "case %d: gradients differ by %.3g of their maximum %s", i, r, what);
}

#endif
