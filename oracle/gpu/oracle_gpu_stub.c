/* oracle_gpu_stub.c — the GPU oracle tier's API in a build without CUDA: every entry
 * point says why it cannot run, so that oracle.c falls back to the CPU fp64 tier. */
#include <stdio.h>
#include "oracle/gpu/oracle_gpu.h"

int af_oracle_gpu_usable(char *why, size_t cap) {
    snprintf(why, cap, "built without CUDA");
    return -1;
}

int af_oracle_gpu_supports(const af_oracle_problem *p, char *why, size_t cap) {
    (void)p;
    return af_oracle_gpu_usable(why, cap);
}

int af_oracle_gpu_run(const af_oracle_problem *p, af_outputs *out, double *lse64, double *drow64,
                      const af_oracle_gpu_mags *mags, af_oracle_gpu_kept **keep, af_oracle_gpu_stats *st, char *why,
                      size_t cap) {
    (void)p, (void)out, (void)lse64, (void)drow64, (void)mags, (void)st;
    if (keep) *keep = NULL;
    return af_oracle_gpu_usable(why, cap);
}

void af_oracle_gpu_kept_free(af_oracle_gpu_kept *k) { (void)k; /* nothing is ever kept */ }

int af_oracle_gpu_score_abs(const af_oracle_problem *p, double *out, char *why, size_t cap) {
    (void)p, (void)out;
    return af_oracle_gpu_usable(why, cap);
}

int af_oracle_gpu_grad_abs(const af_oracle_problem *p, const af_outputs *exact, af_grad_magnitudes *g, char *why,
                           size_t cap) {
    (void)p, (void)exact, (void)g;
    return af_oracle_gpu_usable(why, cap);
}

int af_oracle_gpu_fetch(double *host, const double *dev, size_t count, char *why, size_t cap) {
    (void)host, (void)dev, (void)count;
    return af_oracle_gpu_usable(why, cap);
}
