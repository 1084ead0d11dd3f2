/* ref_gpu.h — the low-precision reference (the cpu backend's recipe) on the GPU.
 *
 * Computes what harness/backends/cpu.c stores, bit for bit, for fp16 and bf16: the same
 * per-element operation order (fp32, each sum sequential in cpu.c's order: scores over d
 * ascending from 0.0f, then * scale; m = ordered max; l and O over visible keys
 * ascending; P and dS rounded to the dtype before their GEMMs; O / l; LSE = m +
 * af_logf(l); D_i from the stored rounded O; P recomputed from the stored fp32 LSE;
 * dK and dV summed over the group's query heads ascending, then rows ascending), the
 * same af_expf / af_logf (af_mathf.h), the same RNE storage conversions (af_numeric.h)
 * and cpu.c's own mask rule (not the oracle's mask_spec). Tiles only decide which
 * thread computes which element: no sum is split or reordered.
 *
 * Work is O(visible pairs), memory O(s): no s x s buffer. fp8_e4m3 and mxfp8 are
 * declined (af_ref_gpu_supports): the runner then keeps the cpu backend.
 */
#ifndef ATTNFUZZ_REF_GPU_H
#define ATTNFUZZ_REF_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "model/run_status.h"
#include "model/case.h"
#include "model/tensors.h"

/* The problem as plain data (copyable to the device). Dense logical arrays are
 * row-major in the order of their shape comment; rows past a sequence's length are
 * never read as inputs and are written 0 (O, dQ, dK, dV) / -inf (LSE). */
typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    int group;                     /* Hq / Hkv */
    float scale;                   /* af_case_scale */
    bool round_fp16;               /* P, dS and outputs rounded to fp16 (else bf16) */
    bool causal, bottom_right;     /* the mask rule of cpu.c's visible_keys_for_row */
    int window_left, window_right; /* -1 = unbounded */
    bool backward;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    int kernels;        /* AF_REF_GPU_KERNELS_NEW (0, what desc_of_case sets) or _OLD */
    int exact_products; /* set by af_ref_gpu_run_device (callers leave it): 2 every
                                  GEMM product is exact in fp32, 1 those of the score
                                  GEMMs (Q K, dO V), 0 none known; the new kernels fuse
                                  multiply and add there (ref_gpu_tile.cuh, rg_mac) */
} af_ref_gpu_desc;

/* Which kernels af_ref_gpu_run_device launches: the same bits either way (the tests
 * check NEW against cpu.c); OLD stays for side-by-side timing (bench_ref_gpu --kernel). */
#define AF_REF_GPU_KERNELS_NEW 0
#define AF_REF_GPU_KERNELS_OLD 1

/* Device buffers of one run, dense fp32 (values exactly as cpu.c holds them). */
typedef struct {
    const float *q;    /* (B, Hq,  Sq,  Dqk) */
    const float *k;    /* (B, Hkv, Skv, Dqk) */
    const float *v;    /* (B, Hkv, Skv, Dv)  */
    const float *dout; /* (B, Hq,  Sq,  Dv)   backward only */
    float *o;          /* (B, Hq,  Sq,  Dv)   out: O as stored (rounded to the dtype) */
    float *lse;        /* (B, Hq,  Sq)        out: LSE (fp32; -inf fully masked) */
    float *delta;      /* (B, Hq,  Sq)        backward scratch: D_i = dO_i . O_i */
    float *dq;         /* (B, Hq,  Sq,  Dqk)  out, backward: as stored */
    float *dk;         /* (B, Hkv, Skv, Dqk)  out, backward */
    float *dv;         /* (B, Hkv, Skv, Dv)   out, backward */
} af_ref_gpu_buffers;

/* Milliseconds of each phase of the last run (device time, cudaEvent). */
typedef struct {
    float fwd_ms, delta_ms, dq_ms, dkdv_ms;
    double upload_s, download_s; /* host entry only: conversions and copies */
} af_ref_gpu_timing;

/* AF_RUN_OK when the GPU reference serves the case (fp16/bf16, no CP, valid shape,
 * the same shapes cpu.c serves), else AF_RUN_DECLINED with why. */
af_run_status af_ref_gpu_supports(const af_case *c, char *why, size_t cap);

#ifndef __CUDACC__
/* Fill d from a case (len_* per sequence, scale = af_case_scale). Inline on the C side
 * only: the kernels library does not call into attnfuzz_core. */
static inline void af_ref_gpu_desc_of_case(af_ref_gpu_desc *d, const af_case *c) {
    memset(d, 0, sizeof *d);
    d->B = c->batch;
    d->Hq = c->heads_q;
    d->Hkv = c->heads_kv;
    d->Sq = c->seqlen_q;
    d->Skv = c->seqlen_kv;
    d->Dqk = c->head_dim_qk;
    d->Dv = c->head_dim_v;
    d->group = c->heads_kv > 0 ? c->heads_q / c->heads_kv : 1;
    d->scale = af_case_scale(c);
    d->round_fp16 = c->dtype == AF_DT_FP16;
    d->causal = c->mask == AF_MASK_CAUSAL;
    d->bottom_right = c->align != AF_ALIGN_TOP_LEFT;
    d->window_left = c->window_left;
    d->window_right = c->window_right;
    d->backward = c->backward;
    for (int b = 0; b < c->batch && b < AF_MAX_BATCH; b++) {
        d->len_q[b] = af_case_len_q(c, b);
        d->len_kv[b] = af_case_len_kv(c, b);
    }
}
#endif

/* Run on device buffers (forward; backward when d->backward). tm may be NULL. */
af_run_status af_ref_gpu_run_device(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *buf, af_ref_gpu_timing *tm,
                                    char *why, size_t cap);

/* The reference's outputs left on the device (af_ref_gpu_run's keep): dense doubles
 * equal to what it wrote into out, bit for bit (rows past a length 0). */
typedef struct af_ref_gpu_kept {
    af_outputs_dev out;
    double *owned[5]; /* o, lse, dq, dk, dv */
    double bytes;
} af_ref_gpu_kept;
void af_ref_gpu_kept_free(af_ref_gpu_kept *k); /* NULL: nothing */

/* The device-resident side of af_ref_gpu_run (each NULL: not used): in, the exact inputs
 * already on the device (dense doubles with af_inputs' shapes; narrowed to fp32 there
 * instead of converted and uploaded from the host); keep, receives the outputs' device
 * copies (NULL when not kept: out of device memory keeps nothing, the run still counts). */
typedef struct {
    const af_inputs_dev *in;
    af_ref_gpu_kept **keep;
} af_ref_gpu_dev;

/* Host entry: dense exact inputs -> dense outputs, equal to what af_outputs_read gives
 * after the cpu backend's run (out allocated by af_outputs_alloc; rows past a
 * sequence's length are 0 there, as af_outputs_read leaves them). d: from
 * af_ref_gpu_desc_of_case of a case that af_ref_gpu_supports serves; dev may be NULL. */
af_run_status af_ref_gpu_run(const af_ref_gpu_desc *d, const af_inputs *in, const af_ref_gpu_dev *dev, af_outputs *out,
                             af_ref_gpu_timing *tm, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
