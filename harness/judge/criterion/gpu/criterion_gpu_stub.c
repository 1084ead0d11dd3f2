/* criterion_gpu_stub.c — judge/criterion/criterion_gpu.h in a build without CUDA: the host serves. */
#include <stdio.h>
#include "judge/criterion/criterion_gpu.h"

int af_criterion_terms_gpu_fill(const af_oracle_problem *p, const af_outputs *exact, const af_terms_gpu_consts *k,
                                af_criterion_terms *t, double *row_a, int *row_n, double *seconds, char *why,
                                size_t cap) {
    (void)p, (void)exact, (void)k, (void)t, (void)row_a, (void)row_n;
    if (seconds) *seconds = 0;
    snprintf(why, cap, "criterion terms on the GPU: built without CUDA");
    return 1;
}

void af_criterion_terms_gpu_release(af_terms_dev *dev) { (void)dev; }

int af_criterion_terms_gpu_host_pds(const af_criterion_terms *t) {
    (void)t;
    return 0;
}

int af_criterion_terms_gpu_host_budgets(const af_criterion_terms *t) {
    (void)t;
    return 0;
}

bool af_criterion_terms_gpu_keeps_exact(const af_criterion_terms *t, af_tensor_id id, const double *exact) {
    (void)t, (void)id, (void)exact;
    return false;
}

int af_criterion_stored_o_dk_gpu(const af_case *c, const af_criterion_terms *t, const double *dd, double *out,
                                 char *why, size_t cap) {
    (void)c, (void)t, (void)dd, (void)out;
    snprintf(why, cap, "stored O share on the GPU: built without CUDA");
    return 1;
}

int af_criterion_row_summaries_gpu(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                                   const double *ref_dev, const double *exact, const double *exact_dev,
                                   const af_criterion_terms *t, const double *dterm, double unit, af_row_summary *out,
                                   char *why, size_t cap) {
    (void)c, (void)id, (void)kernel, (void)ref, (void)ref_dev, (void)exact, (void)exact_dev, (void)t, (void)dterm;
    (void)unit, (void)out;
    snprintf(why, cap, "row summaries on the GPU: built without CUDA");
    return 1;
}
