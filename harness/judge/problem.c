/* problem.c — af_problem_from_case and the case's mask rule. */
#include "judge/problem.h"

#include <string.h>

#include "model/features.h"
#include "oracle/gpu/oracle_gpu.h"

void af_problem_from_case(af_oracle_problem *p, const af_case *c, const af_inputs *in, int *len_q, int *len_kv) {
    memset(p, 0, sizeof *p);
    p->B = c->batch;
    p->Hq = c->heads_q;
    p->Hkv = c->heads_kv;
    p->Hv = c->heads_v && c->heads_v != c->heads_kv ? c->heads_v : 0;
    p->Sq = c->seqlen_q;
    p->Skv = c->seqlen_kv;
    p->Dqk = c->head_dim_qk;
    p->Dv = c->head_dim_v;
    for (int b = 0; b < c->batch; b++) {
        len_q[b] = af_case_len_q(c, b);
        len_kv[b] = af_case_len_kv(c, b);
    }
    p->len_q = len_q;
    p->len_kv = len_kv;
    p->mask = af_mask_rule_of_case(c);
    p->scale = (double)af_case_scale(c);
    p->in = in;
}

double af_problem_visible_pairs(const af_oracle_problem *p) {
    double pairs = 0;
    for (int b = 0; b < p->B; b++) {
        int lq = p->len_q ? p->len_q[b] : p->Sq, lkv = p->len_kv ? p->len_kv[b] : p->Skv;
        for (int i = 0; i < lq; i++) {
            af_mask_keys k;
            pairs += af_mask_visible_keys(&p->mask, b, lq, lkv, i, &k);
        }
    }
    return pairs * p->Hq;
}

bool af_problem_device_judged(const af_case *c) {
    af_inputs in;
    memset(&in, 0, sizeof in);
    af_features_of_case(c, &in.feat);
    double dlse_given = 0.0; /* the tier asks only whether a dLSE is given */
    if (c->dlse) in.dlse = &dlse_given;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_oracle_problem p;
    af_problem_from_case(&p, c, &in, len_q, len_kv);
    char why[192];
    return af_oracle_gpu_implements(&p, why, sizeof why) == 0;
}
