/* terms_dev.cuh — what the GPU pass of the criterion's terms keeps on the device for the
 * judging of each kernel run (af_criterion_terms.dev, criterion_gpu.h); private to
 * judge/criterion/gpu/. */
#ifndef ATTNFUZZ_JUDGE_CRITERION_GPU_TERMS_DEV_CUH
#define ATTNFUZZ_JUDGE_CRITERION_GPU_TERMS_DEV_CUH

#include "model/layout.h"

struct af_terms_dev {
    float *prob;     /* (B,Hq,Sq,Skv) P_ij, or NULL (not kept: t->prob is NULL)      */
    float *ds_abs;   /* (B,Hq,Sq,Skv) |dS_ij| + its budget, with prob                 */
    const double *q; /* (B,Hq,Sq,Dqk), with prob                                      */
    bool q_owned;    /* q is this record's (else the oracle tier's kept copy)        */
    /* t->prob and t->ds_abs not yet copied from prob and ds_abs: the host readers ask
     * for them (af_criterion_terms_gpu_host_pds); most cases never read them there */
    bool pds_pending;
    long long pds_elems; /* (B Hq Sq Skv) */
    /* the budgets of O, dQ, dK, dV, dense like the tensor (NULL for the others and
     * forward-only cases): the pass's own output, which t->kappa[id], t->mass[id] hold
     * once a host reader asked for them */
    double *kappa[AF_T_COUNT], *mass[AF_T_COUNT];
    long long budget_elems[AF_T_COUNT]; /* each kept tensor's element count */
    /* t->kappa, t->mass not yet copied from kappa, mass (af_criterion_terms_gpu_host_budgets) */
    bool budgets_pending;
    /* the oracle's exact O, dQ, dK, dV the pass uploaded (dense like the tensor; NULL for
     * the others), and the host arrays they are bit-for-bit copies of: a row summary pass
     * given that same host array reads the device copy instead of uploading it again */
    const double *exact[AF_T_COUNT];
    const double *exact_host[AF_T_COUNT];
};

#endif
