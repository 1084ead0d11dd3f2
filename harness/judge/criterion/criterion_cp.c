/* criterion_cp.c — the budget of a CP case's rounded partials (criterion_cp.h). */
#include "judge/criterion/criterion_cp.h"
#include "judge/criterion/criterion_gpu.h"

#include <stdlib.h>

int af_cp_partials(const af_case *c, af_tensor_id id) {
    int cp = c->cp_size;
    if (cp <= 1 || id == AF_T_LSE) return 1;
    bool kvside = id == AF_T_DK || id == AF_T_DV;
    switch (c->cp_comm) {
        case AF_CP_P2P:
            return cp;
        case AF_CP_ALL_GATHER:
            return kvside ? 2 * cp : 1;
        case AF_CP_A2A: /* a K/V head replicated to cp / heads_kv ranks sums their partials */
            return kvside && c->heads_kv < cp ? cp / c->heads_kv : 1;
        case AF_CP_A2A_P2P:
            return cp % 2 == 0 ? cp / 2 : cp;
        default:
            return 1;
    }
}

double *af_criterion_cp_term(const af_case *c, af_tensor_id id, const af_criterion_terms *t, double unit) {
    int n = af_cp_partials(c, id);
    if (n <= 1 || !af_criterion_terms_have(t, id) || !t->mass[id]) return NULL;
    if (af_criterion_terms_gpu_host_budgets(t) != 0) return NULL; /* left on the device, unreadable */
    bool kvside = id == AF_T_DK || id == AF_T_DV;
    int D = (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
    size_t elems = (size_t)c->batch * (kvside ? c->heads_kv : c->heads_q) * (kvside ? c->seqlen_kv : c->seqlen_q) * D;
    double *out = malloc((elems ? elems : 1) * sizeof *out);
    if (!out) return NULL;
    double rel = 0.5 * unit * (1.0 + unit) + n * (0x1p-23 + 0x1p-24);
    double sub = c->dtype == AF_DT_FP16 ? n * 0x1p-25 : 0.0;
    const double *mass = t->mass[id]; /* dense like the tensor: the element's absolute term sum */
    for (size_t e = 0; e < elems; e++) out[e] = rel * mass[e] + sub;
    return out;
}
