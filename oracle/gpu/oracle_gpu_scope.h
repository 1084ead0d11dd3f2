/* oracle_gpu_scope.h — what the GPU fp64 tier computes (oracle/gpu/oracle_gpu.h), in every
 * build and inline (the tier's static library and the oracle's link in either order): the
 * tier's af_oracle_gpu_supports and the oracle's choice of tier ask it, and so does the
 * judge, which budgets the cases the tier leaves to the host (judge/problem.h). */
#ifndef ATTNFUZZ_ORACLE_GPU_SCOPE_H
#define ATTNFUZZ_ORACLE_GPU_SCOPE_H

#include <stdio.h>

#include "oracle/feature_spec.h"
#include "oracle/mask_spec.h"
#include "oracle/oracle.h"

/* Largest head dimension (Dqk and Dv) the GPU tier handles. */
#define AF_ORACLE_GPU_MAX_DIM 256

/* 0 when the problem is one the GPU tier computes, whatever the build: head dims up to
 * AF_ORACLE_GPU_MAX_DIM, a mask of intervals (no block or custom mask, no global keys),
 * plain attention (none of oracle/feature_spec.h's features: sinks, softcap, score_mod,
 * bias, ALiBi, dropout, dLSE; no score statistics); else -1 with why. */
static inline int af_oracle_gpu_implements(const af_oracle_problem *p, char *why, size_t cap) {
    if (p->Dqk > AF_ORACLE_GPU_MAX_DIM || p->Dv > AF_ORACLE_GPU_MAX_DIM) {
        snprintf(why, cap, "oracle gpu: head dims %d/%d above %d", p->Dqk, p->Dv, AF_ORACLE_GPU_MAX_DIM);
        return -1;
    }
    if (af_mask_rule_drops(&p->mask)) { /* the tiles walk intervals, not their drops */
        snprintf(why, cap, "oracle gpu: block_mask / custom_mask is not implemented (CPU tiers serve it)");
        return -1;
    }
    if (p->mask.global_keys > 0) { /* a row's keys are two intervals; the tiles walk one */
        snprintf(why, cap, "oracle gpu: global_keys is not implemented (CPU tiers serve it)");
        return -1;
    }
    if (af_feat_any(p)) {
        snprintf(why, cap,
                 "oracle gpu: sinks, softcap, score_mod, bias, ALiBi, dropout and dLSE are not implemented (CPU tiers "
                 "serve them)");
        return -1;
    }
    if (p->in->feat.outputs) { /* the CPU fp64 rows write them */
        snprintf(why, cap, "oracle gpu: the score statistics (outputs = max_sumexp / max_logit) are not implemented");
        return -1;
    }
    return 0;
}

#endif
