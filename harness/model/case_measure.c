/* case_measure.c — the cost of a case. */
#include "model/case_measure.h"

double af_case_cost(const af_case *c) {
    double cost = (double)c->batch * c->heads_q * c->seqlen_q * c->seqlen_kv *
                  (double)(c->head_dim_qk + c->head_dim_v);
    /* K/V traffic of extra kv heads counts too, then one unit per non-default feature */
    cost += (double)c->batch * c->heads_kv * c->seqlen_kv * (double)(c->head_dim_qk + c->head_dim_v);
    cost += c->n_data + (c->has_seqlens ? 1 : 0) + (c->stride_gap ? 1 : 0) + (c->page_size ? 1 : 0) +
            (c->packing != AF_PACK_SEPARATE ? 1 : 0) + (c->cp_size > 1 ? c->cp_size : 0) + (c->backward ? 1 : 0);
    return cost;
}
