/* oracle_gpu.h — the GPU fp64 tier of the oracle (host API; CUDA C in oracle/gpu/ .cu files).
 *
 * From the dense exact inputs of an af_oracle_problem (never the case) it computes every
 * element of O (B,Hq,Sq,Dv), LSE (B,Hq,Sq) and, with backward, dQ (B,Hq,Sq,Dqk),
 * dK (B,Hkv,Skv,Dqk), dV (B,Hkv,Skv,Dv), plus the row statistics LSE_i and D_i of the
 * key-column pass (af_oracle_ctx.lse64 / drow64), in O(s) device memory:
 *   row pass     online softmax over key tiles of 32 (O, LSE), D_i = dO_i . O_i,
 *                then dQ over the same tiles from LSE_i and D_i;
 *   column pass  dK, dV of a block of keys over the rows that see them (mask_rule.h).
 * Sums over keys / rows: a 32-term fma chain per tile, tiles added with TwoSum into a
 * (sum, compensation) pair; dots over the head dimension are plain fma chains. The stated
 * error bound is derived in oracle/README.md (oracle.c reports it). The mask rule is the
 * oracle's own (model/mask_rule.h), run on the device.
 * Without CUDA the functions exist (oracle_gpu_stub.c) and report why they cannot run.
 */
#ifndef ATTNFUZZ_ORACLE_GPU_H
#define ATTNFUZZ_ORACLE_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "oracle/oracle.h"
#include "oracle/gpu/oracle_gpu_scope.h" /* af_oracle_gpu_implements, AF_ORACLE_GPU_MAX_DIM */

/* Terms of one plain fma chain inside a tile of the long sums (keys or rows). */
#define AF_ORACLE_GPU_CHAIN 32
/* Online softmax: the reference maximum moves only when a tile's maximum exceeds it by
 * more than this (so at most 1 + 2 sigma / 64 rescales; exp(s - m_ref) <= e^64). */
#define AF_ORACLE_GPU_RESCALE 64.0

typedef struct {
    double seconds;    /* wall time of the GPU work, transfers included */
    double peak_bytes; /* device memory the tier held at its peak */
    /* wall time of each pass (launch to its end; af_oracle_gpu_run): the forward, the
     * dQ row pass and the dK / dV key pass (with the magnitudes when asked) */
    double fwd_s, rows_s, keys_s;
} af_oracle_gpu_stats;

/* Magnitudes the tier's passes give beside the values when asked (NULL fields: not
 * asked): score_abs (B,Hq,Sq) host array, as af_oracle_score_abs; grad, as
 * af_oracle_grad_abs of the tier's own O and LSE (backward only). The forward and the
 * gradient passes form the |.| chains from the tiles they load for the values, so the
 * magnitudes cost no pass and no upload of their own. */
typedef struct {
    double *score_abs;
    af_grad_magnitudes *grad;
} af_oracle_gpu_mags;

/* 0 when the GPU tier can run here (built with CUDA and a device is usable), else -1
 * with the reason. */
int af_oracle_gpu_usable(char *why, size_t cap);
/* 0 when the GPU tier handles the problem (its lengths set, and af_oracle_gpu_implements)
 * in this build, else -1 with why (a build without CUDA handles none). */
int af_oracle_gpu_supports(const af_oracle_problem *p, char *why, size_t cap);

/* The tier: out holds host arrays allocated by the caller (o, lse; with backward dq, dk,
 * dv), each overwritten whole; lse64 (B,Hq,Sq) receives LSE, drow64 (B,Hq,Sq) D_i (with
 * backward; may be NULL without); mags (or NULL) the magnitudes asked for; keep (or NULL)
 * receives the device copies of the inputs and outputs instead of their being freed
 * (free with af_oracle_gpu_kept_free; NULL when the run failed). Lengths must be set
 * (no NULL len_q / len_kv).
 * 0, or -1 with why (CUDA error, out of device memory, unsupported shape). */
int af_oracle_gpu_run(const af_oracle_problem *p, af_outputs *out, double *lse64, double *drow64,
                      const af_oracle_gpu_mags *mags, af_oracle_gpu_kept **keep, af_oracle_gpu_stats *st, char *why,
                      size_t cap);
/* Free what af_oracle_gpu_run kept (NULL: nothing). */
void af_oracle_gpu_kept_free(af_oracle_gpu_kept *k);
/* Copy count doubles of a kept device array back into host (tests, evidence). 0 or -1
 * with why. */
int af_oracle_gpu_fetch(double *host, const double *dev, size_t count, char *why, size_t cap);
/* af_oracle_score_abs on the GPU: out (B,Hq,Sq). 0 or -1 with why. */
int af_oracle_gpu_score_abs(const af_oracle_problem *p, double *out, char *why, size_t cap);
/* af_oracle_grad_abs on the GPU (exact O, LSE from `exact`). 0 or -1 with why. */
int af_oracle_gpu_grad_abs(const af_oracle_problem *p, const af_outputs *exact, af_grad_magnitudes *g, char *why,
                           size_t cap);

#ifdef __cplusplus
}
#endif
#endif
