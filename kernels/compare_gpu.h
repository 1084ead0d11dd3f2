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
#define AF_ROWS_REF_ON_DEVICE   1u
#define AF_ROWS_EXACT_ON_DEVICE 2u
af_run_status af_gpu_row_summaries_at(const double *kernel, const double *ref, const double *exact, unsigned on_device,
                                      long long rows, int D, af_row_summary *out, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
