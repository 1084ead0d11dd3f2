/* judge/criterion/criterion_gpu.h — the criterion's term budgets (criterion.h) computed on the GPU.
 *
 * The same quantities as criterion.c's host loop (af_criterion_terms_compute), from the
 * same dense exact inputs and the oracle's exact outputs, in fp64, on the device:
 *   O    mass, kappa (B,Hq,Sq,Dv), sig2 (B,Hq,Sq)
 *   dQ   mass, kappa, kq (B,Hq,Sq,Dqk), sig2 (B,Hq,Sq)
 *   dK   mass, kappa, wq (B,Hkv,Skv,Dqk), sig2 (B,Hkv,Skv)
 *   dV   mass, kappa (B,Hkv,Skv,Dv), sig2 (B,Hkv,Skv)
 *   rows rho, log_f (B,Hq,Sq); P and |dS| + budget (B,Hq,Sq,Skv) when t keeps them;
 *        A_i and n_i per row for the LSE budget, which criterion.c forms on the host
 *        with af_criterion_lse_kappa (one formula for both paths).
 * Each row is one thread block; each key of dK, dV is one thread block that sums over
 * the query rows that see it in row order, so every sum over keys (or rows) of one
 * element runs in the host loop's order and the result does not depend on the launch:
 * the same case gives the same bits on every run. The per-row statistics sig2 are
 * block reductions in a fixed tree (not the host's order: equal to rounding).
 * Served: cases without features (af_feat_any false), Dqk and Dv <= AF_TERMS_GPU_MAX_DIM.
 * The oracle's own GPU tier (oracle/gpu/) stays separate: this is the judge's pass.
 */
#ifndef ATTNFUZZ_JUDGE_CRITERION_GPU_H
#define ATTNFUZZ_JUDGE_CRITERION_GPU_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "judge/criterion/criterion.h"

/* Largest head dimension the GPU pass serves (one thread per element of a row). */
#define AF_TERMS_GPU_MAX_DIM 256

/* The criterion's constants the pass needs (verdict.h, criterion.h), filled by criterion.c. */
typedef struct {
    double acc_unit;    /* af_score_acc_unit(Dqk): the fp32 score's error per unit of A_i   */
    double cancel_unit; /* 2^-22 + AF_GRAD_CANCEL_UNIT: dP, D in fp32 and the cancellation */
    bool fp16;          /* subnormal P (2^-25 per term) and dS                              */
} af_terms_gpu_consts;

/* Fill t, already allocated and zeroed the way af_criterion_terms_compute allocates it
 * (mass, kappa, sig2 of O; with backward those of dQ, dK, dV and kq, wq, log_f, and prob
 * and ds_abs when not NULL; rho), from p (no NULL lengths needed: NULL means the maxima)
 * and exact. row_a (B,Hq,Sq) receives A_i and row_n (B,Hq,Sq) n_i, the visible key count
 * (0 for a row that is not judged). seconds: the pass's wall time, transfers included.
 * 0; 1 when the pass does not serve the case (features, head dimension, no GPU: why says
 * which, t untouched); -1 on a CUDA error or out of device memory (why; t partly filled,
 * the caller recomputes on the host). */
int af_criterion_terms_gpu_fill(const af_oracle_problem *p, const af_outputs *exact, const af_terms_gpu_consts *k,
                                af_criterion_terms *t, double *row_a, int *row_n, double *seconds, char *why,
                                size_t cap);

/* What the GPU pass keeps on the device for the judging of each kernel run (t->dev):
 * P (B,Hq,Sq,Skv) float and Q (B,Hq,Sq,Dqk), when t keeps P. */
typedef struct af_terms_dev af_terms_dev;
/* Free t->dev (NULL: nothing). */
void af_criterion_terms_gpu_release(af_terms_dev *dev);
/* The GPU pass leaves P and |dS| (t->prob, t->ds_abs) on the device: a host reader of
 * them calls this first, which copies them into t's host arrays once. 0 (they hold the
 * pass's values, or t has no device copy pending); -1 on a CUDA error (then they do not:
 * the reader takes its path without them). */
int af_criterion_terms_gpu_host_pds(const af_criterion_terms *t);
/* The same for the element budgets t->kappa[id], t->mass[id] of O, dQ, dK and dV (the
 * device's row summaries read the device's copies; a host reader calls this first). */
int af_criterion_terms_gpu_host_budgets(const af_criterion_terms *t);
/* Does t->dev hold a device copy of the host array `exact` as tensor id's exact values
 * (the pass's upload of the oracle's O, dQ, dK or dV, which the row summaries then read
 * in place of uploading it)? */
bool af_criterion_terms_gpu_keeps_exact(const af_criterion_terms *t, af_tensor_id id, const double *exact);

/* The stored O's share of dK with P kept (af_criterion_stored_o_term, criterion.c) on
 * the device: out (B,Hkv,Skv,Dqk) = scale sum over the rows (h in the key's group, i)
 * that see key j, in the host's order, of P_ij dd_i |q_id|; dd (B,Hq,Sq) the rows' D
 * errors. 0 (out filled, the host's bits), or nonzero (no t->dev, a CUDA error: why). */
int af_criterion_stored_o_dk_gpu(const af_case *c, const af_criterion_terms *t, const double *dd, double *out,
                                 char *why, size_t cap);

/* Tensor id's row summaries with their term fields (af_criterion_row_summaries, same
 * arguments) on the device, each row by the host's functions (row_terms.h), so with the
 * host's bits: kappa and mass from the pass's device copies (t->dev) when it kept them,
 * else uploaded from t; kernel, ref (NULL: none), exact and dterm (NULL: none) are host
 * arrays (B H S, D) dense, uploaded in chunks, but for ref when ref_dev (its device copy)
 * is given and exact when exact_dev is or t->dev holds it (af_criterion_terms_gpu_keeps_exact);
 * out (B H S) host. 0; 1 when not served
 * (LSE, no budgets for id, no usable GPU: why); -1 on a CUDA error or out of device
 * memory (why; the caller summarises on the host). */
int af_criterion_row_summaries_gpu(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                                   const double *ref_dev, const double *exact, const double *exact_dev,
                                   const af_criterion_terms *t, const double *dterm, double unit, af_row_summary *out,
                                   char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
