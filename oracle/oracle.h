/* oracle/oracle.h — ground truth.
 *
 * Tiered: MPFR at `precision_bits` for every element of small cases and for
 * sampled rows (always including mask/window/block/chunk boundary rows) of large
 * ones; an fp64 tier with compensated sums covers every element and is checked
 * against MPFR on the sampled rows of every case it serves. The mask comes from
 * mask_spec.h only. Inputs are the exact stored values (af_inputs).
 */
#ifndef ATTNFUZZ_ORACLE_H
#define ATTNFUZZ_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include "oracle/mask_spec.h"
#include "model/dense.h"

/* AUTO: MPFR when the work fits mpfr_budget, else the GPU fp64 tier when a GPU is usable
 * (oracle/gpu/), else the CPU fp64 tier; both fp64 tiers are then certified by MPFR on
 * sampled rows and key columns. GPU: the GPU fp64 tier, certified the same way (the CPU
 * fp64 tier with a note in af_oracle_result.note when no GPU is usable). FP64: the CPU
 * fp64 tier alone, no MPFR. */
typedef enum { AF_ORACLE_AUTO = 0, AF_ORACLE_MPFR, AF_ORACLE_FP64, AF_ORACLE_GPU } af_oracle_tier;

typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    const int *len_q;  /* [B] actual lengths */
    const int *len_kv; /* [B] */
    af_mask_rule mask;
    double scale;        /* exact value of the fp32 scale */
    const af_inputs *in; /* dout == NULL: forward only */
    int Hv;              /* V's heads when they differ from K's (query head h reads V head
                            h / (Hq / Hv)); 0 = Hkv. */
    /* The same dense inputs already on the device, bit for bit (the GPU generator's,
     * kernels/af_gpu_gen.h), or NULL: the GPU tier reads them there instead of uploading
     * in's. Last, for positional initialisers. */
    const af_inputs_dev *in_dev;
} af_oracle_problem;

typedef struct {
    af_oracle_tier tier; /* AUTO: MPFR when the work fits mpfr_budget */
    int precision_bits;  /* MPFR precision, default 128 */
    int threads;         /* 0 = number of cores */
    double mpfr_budget;  /* MPFR work units (multiply-adds) allowed, default 5e8 */
    /* Certification of the fp64 tiers (sampled MPFR): the sampled work grows with the
     * case, cert_fraction of its total work, at least mpfr_budget (split between rows and
     * key columns) and at most what cert_seconds of wall time allows on `threads` threads
     * (oracle/README.md). Defaults 1e-3 and 15 s. */
    double cert_fraction;
    double cert_seconds;
    /* With a usable GPU, AUTO computes every element in MPFR only up to this much work
     * (default 4e6) and the GPU tier's certification starts from this budget instead of
     * mpfr_budget; 0 = mpfr_budget serves both (the CPU behaviour). */
    double gpu_mpfr_budget;
    /* Magnitudes the GPU tier computes in its own passes when it runs (AF_ORACLE_MAG_*
     * bits, default none): af_oracle_result.magnitudes says which it filled; the others
     * are the caller's to compute (af_oracle_score_abs, af_oracle_grad_abs). */
    unsigned gpu_magnitudes;
    /* Keep the GPU tier's exact inputs and outputs on the device when it runs and the
     * certification is pipelined (af_oracle_run_pipelined with pending: the sampled rows
     * keep their fp64 values, so the device copies equal r->out bit for bit):
     * af_oracle_result.gpu_kept, r->out.dev. Default off. */
    bool gpu_keep;
    /* When the pipelined certification (af_oracle_run_pipelined with pending) starts: 0
     * (the default) before the fp64 tier when the GPU tier is expected to serve (its
     * sampled rows need only the inputs: they run beside the GPU passes), else after it;
     * 1 before the tier either way (the CPU tier then shares the cores with them); -1
     * after the tier either way. The certified set and figures do not depend on it. */
    int cert_early;
    /* true: every MPFR sum by mpfr_sum, the integer paths (src/exact_dot.h,
     * src/exact_wsum.h) off. The same bits, slower: for the test that checks they change
     * none (test_oracle_integer_sums). Default off. */
    bool mpfr_sums_only;
} af_oracle_opts;

/* The GPU tier's arrays left on the device (af_oracle_opts.gpu_keep); freed with the
 * result. */
typedef struct af_oracle_gpu_kept {
    af_outputs_dev out; /* o, lse, dq, dk, dv: equal to af_oracle_result.out's */
    af_inputs_dev in;   /* q, k, v, dout: the problem's exact inputs */
    double bytes;       /* device memory held */
    void *owner;        /* the tier's allocations (oracle_gpu.cu) */
} af_oracle_gpu_kept;

/* af_oracle_opts.gpu_magnitudes, af_oracle_result.magnitudes */
#define AF_ORACLE_MAG_SCORE_ABS 1u /* af_oracle_result.score_abs */
#define AF_ORACLE_MAG_GRAD      2u /* af_oracle_result.grad (backward) */

/* Term magnitudes of the gradients (af_oracle_grad_abs): M_dQ, M_dK, M_dV, each the max
 * over the tensor's elements of its formula with absolute values, and max |dS|. */
typedef struct {
    double dq, dk, dv, ds_max;
} af_grad_magnitudes;

typedef struct {
    af_outputs out; /* o, lse and (backward) dq dk dv, dense */
    /* Every returned value x satisfies |x - exact| <= bound_rel * |x| + bound_abs_scale * M
     * where M is the largest magnitude among the terms that made x (plus, from the fp64
     * tiers, an underflow term of at most about 1e-300: oracle/README.md, "Underflow"); in practice
     * the oracle reports one relative figure: */
    double bound_rel; /* stated relative error bound of the values */
    /* The cancellation term of the bound above (added by the oracle): M is the value's
     * formula evaluated with absolute values throughout (oracle/README.md); it
     * includes the dependence on the largest score. Tiny (~1e-34) for MPFR. */
    double bound_abs_scale;
    bool all_mpfr;           /* every element came from MPFR */
    int mpfr_rows;           /* rows (b, h, i) computed by MPFR */
    double fp64_vs_mpfr_rel; /* worst relative gap of the fp64 tier on MPFR rows */
    double seconds;
    /* Which tier computed the elements that MPFR did not (MPFR, FP64 = CPU fp64, GPU). */
    af_oracle_tier tier_used;
    /* Certification of an fp64 tier by MPFR: the sampled rows (b, h, i) and key columns
     * (b, hkv, j) recomputed in MPFR, and the worst over their elements of
     * |fp64 - MPFR| / (stated bound of the element); above 1 af_oracle_run fails. */
    int cert_rows, cert_keys;
    double cert_gap_over_bound;
    double cert_cpu_seconds; /* pipelined certification: its thread's CPU time (its passes' other threads aside) */
    double gpu_seconds;      /* GPU tier: time of its passes (uploads included) */
    double gpu_peak_bytes;   /* GPU tier: device memory it held at its peak */
    char note[192];          /* e.g. why the GPU tier fell back to the CPU fp64 tier */
    /* (B, Hq, Sq) or NULL: per row, max over visible keys of scale * sum_d |q_d k_jd|
     * (af_oracle_score_abs); filled by the runner for fp8 and mxfp8 cases and fp16/bf16 cases too large
     * for the judge's element budgets, freed with the result. */
    double *score_abs;
    /* backward: the gradients' term magnitudes (af_oracle_grad_abs), filled by the
     * runner; 0 without backward. */
    af_grad_magnitudes grad;
    /* AF_ORACLE_MAG_* bits: the magnitudes above that the GPU tier's passes filled
     * (asked by af_oracle_opts.gpu_magnitudes), same definitions as the functions. */
    unsigned magnitudes;
    /* The GPU tier's device copies (af_oracle_opts.gpu_keep) or NULL; out.dev points at
     * gpu_kept->out while they are kept. */
    af_oracle_gpu_kept *gpu_kept;
} af_oracle_result;

void af_oracle_opts_default(af_oracle_opts *o);
int af_oracle_run(const af_oracle_problem *p, const af_oracle_opts *o, af_oracle_result *r, char *why, size_t cap);

/* The certification of an fp64 tier still running (af_oracle_run_pipelined). */
typedef struct af_oracle_cert af_oracle_cert;
/* af_oracle_run, except that the MPFR certification of an fp64 tier (GPU or CPU, AUTO or
 * GPU tier) runs on CPU threads in the background: it returns once every element is
 * computed, with *pending set (NULL when nothing is certified: the MPFR tier, FP64
 * alone). The sampled rows keep their fp64 values (certified within the stated bound)
 * instead of taking MPFR's, so readers of r->out may run meanwhile. p->in's arrays and
 * r must stay alive and unchanged until af_oracle_cert_finish; p itself may go. */
int af_oracle_run_pipelined(const af_oracle_problem *p, const af_oracle_opts *o, af_oracle_result *r,
                            af_oracle_cert **pending, char *why, size_t cap);
/* Wait for a pending certification (NULL: nothing to wait for, returns 0): fills r's
 * cert fields (cert_rows, cert_keys, cert_gap_over_bound, mpfr_rows, fp64_vs_mpfr_rel)
 * and adds the wait to r->seconds; frees the handle. 0, or -1 with why when the fp64
 * tier exceeded its stated bound (an oracle error, never a kernel finding). */
int af_oracle_cert_finish(af_oracle_cert *pending, af_oracle_result *r, double *cert_seconds, char *why, size_t cap);
void af_oracle_result_free(af_oracle_result *r);

/* af_oracle_score_abs and af_oracle_grad_abs run on the GPU (oracle/gpu/) when one is
 * usable and the case has more than ~1e8 (row, key) pairs, else on the host. */

/* The magnitude of each row's scores: out (B, Hq, Sq) = max over the keys j row i sees
 * of scale * sum_d |q_d k_jd| (0 for rows past len_q or seeing no key). fp8 kernels
 * accumulate Q K^T with fewer bits than fp32, so their score error scales with this,
 * not with the score itself (docs/cudnn-findings.md F5). */
void af_oracle_score_abs(const af_oracle_problem *p, double *out);

/* The term magnitudes of dQ, dK, dV, each the max over the tensor's elements of the
 * gradient's formula with absolute values, and max |dS| (oracle_score_abs.c), from the
 * exact O and LSE in `exact`: a gradient that cancels to ~0 is still computed from terms
 * this large, so its rounding noise scales with them (compare.c floors); max |dS| sets
 * the fp8 backward's scale_dp (fp8_scales.c). */
void af_oracle_grad_abs(const af_oracle_problem *p, const af_outputs *exact, af_grad_magnitudes *g);

#endif
