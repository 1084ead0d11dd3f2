/* compare_gpu.h — the judge's per-row summaries (row_summary.h) computed on the device.
 *
 * For long cases the comparison's element loops are the judge's cost: these kernels
 * read the kernel's, the reference's and the oracle's dense values and write one
 * af_row_summary per row (no term fields: the per-element budgets exist only for small
 * cases, which the host judges), so only the summaries cross back; the decision stays
 * in judge/criterion/criterion_rows.c. Each row is summed by one thread in the host's order
 * (d = 0, 1, ...) without fused multiply-adds (-fmad=false), so the summaries equal
 * af_row_summary_of's bit for bit (harness/judge/tests/test_compare_gpu.c), and the
 * error map's bins (evidence.h) the host's.
 */
#ifndef ATTNFUZZ_KERNELS_COMPARE_GPU_H
#define ATTNFUZZ_KERNELS_COMPARE_GPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "kernels/row_summary.h"
#include "model/case.h"
#include "model/layout.h"
#include "model/run_status.h"

/* Host arrays kernel, ref (NULL: no reference), exact, each (rows, D) dense: summaries
 * into out (rows), host memory. The arrays are uploaded in chunks of rows (at most
 * ~256 MiB of device memory per array). */
af_run_status af_gpu_row_summaries(const double *kernel, const double *ref, const double *exact, long long rows, int D,
                                   af_row_summary *out, char *why, size_t cap);
/* af_gpu_row_summaries where ref and / or exact are device addresses of the whole dense
 * (rows, D) array already (the bits of on_device below): read there, never uploaded (the
 * oracle's and the reference's outputs the GPU tiers kept, model/dense.h af_outputs_dev).
 * The same summaries, bit for bit. */
#define AF_ROWS_REF_ON_DEVICE    1u
#define AF_ROWS_EXACT_ON_DEVICE  2u
#define AF_ROWS_KERNEL_ON_DEVICE 4u
af_run_status af_gpu_row_summaries_at(const double *kernel, const double *ref, const double *exact, unsigned on_device,
                                      long long rows, int D, af_row_summary *out, char *why, size_t cap);

/* One output tensor as the run stored it: the host buffer's bytes and the view's
 * addressing (model/layout.h: strided, or ragged with the sequences' token starts; not
 * paged), storage fp16, bf16 or fp32, value = scale x stored. */
typedef struct {
    const void *buf; /* the tensor's buffer (data, no guards), host */
    size_t bytes;    /* its size */
    af_storage storage;
    double scale;
    int B, H, S, D;
    int64_t base, stride_b, stride_h, stride_s; /* elements, as af_tensor_view */
    bool ragged;
    int64_t token_start[AF_MAX_BATCH + 1]; /* ragged: the sequences' first tokens */
    int len[AF_MAX_BATCH];                 /* rows of sequence b: s < len[b] */
} af_gpu_stored;

/* True when af_gpu_row_summaries_stored can read the storage (fp16, bf16, fp32). */
bool af_gpu_stored_served(af_storage storage);
/* af_gpu_row_summaries_at with the kernel's values read from its stored buffer: the bytes
 * are uploaded once (a quarter of the doubles' for fp16 / bf16) and decoded on the device
 * into the dense (B, H, S, D) doubles af_outputs_read gives (rows s >= len[b] 0), so the
 * summaries are the same bit for bit. ref / exact as in af_gpu_row_summaries_at. */
af_run_status af_gpu_row_summaries_stored(const af_gpu_stored *k, const double *ref, const double *exact,
                                          unsigned on_device, af_row_summary *out, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
