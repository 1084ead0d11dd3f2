/* backends/tests/oracle_problem.h — the oracle problem of a case, for the backend stage's tests
 * (test_cpu_features, test_cudnn_features), which may link the oracle but not the judge (whose
 * af_problem_from_case, judge/problem.h, is the harness's own mapping). lq and lk hold
 * AF_MAX_BATCH lengths and must outlive p. */
#ifndef ATTNFUZZ_BACKENDS_TESTS_ORACLE_PROBLEM_H
#define ATTNFUZZ_BACKENDS_TESTS_ORACLE_PROBLEM_H

#include <string.h>

#include "model/case.h"
#include "oracle/oracle.h"

static inline void bt_oracle_problem(const af_case *c, const af_inputs *in, int *lq, int *lk, af_oracle_problem *p) {
    for (int b = 0; b < c->batch; b++) lq[b] = af_case_len_q(c, b), lk[b] = af_case_len_kv(c, b);
    memset(p, 0, sizeof *p);
    p->B = c->batch, p->Hq = c->heads_q, p->Hkv = c->heads_kv, p->Sq = c->seqlen_q, p->Skv = c->seqlen_kv;
    p->Dqk = c->head_dim_qk, p->Dv = c->head_dim_v;
    p->len_q = lq, p->len_kv = lk;
    p->mask.causal = c->mask == AF_MASK_CAUSAL;
    p->mask.bottom_right = c->align == AF_ALIGN_BOTTOM_RIGHT;
    p->mask.window_left = c->window_left, p->mask.window_right = c->window_right;
    p->scale = (double)af_case_scale(c);
    p->in = in;
}

#endif
