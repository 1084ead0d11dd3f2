/* terms_dev.cuh — what the GPU pass of the criterion's terms keeps on the device for the
 * judging of each kernel run (af_criterion_terms.dev, criterion_gpu.h); private to
 * judge/criterion/gpu/. */
#ifndef ATTNFUZZ_JUDGE_CRITERION_GPU_TERMS_DEV_CUH
#define ATTNFUZZ_JUDGE_CRITERION_GPU_TERMS_DEV_CUH

#include "model/layout.h"

struct af_terms_dev {
    float *prob;     /* (B,Hq,Sq,Skv) P_ij, or NULL (not kept: t->prob is NULL)      */
    const double *q; /* (B,Hq,Sq,Dqk), with prob                                      */
    /* the budgets of O, dQ, dK, dV, dense like the tensor (NULL for the others and
     * forward-only cases): equal to t->kappa[id], t->mass[id] (the pass's own output) */
    double *kappa[AF_T_COUNT], *mass[AF_T_COUNT];
};

#endif
