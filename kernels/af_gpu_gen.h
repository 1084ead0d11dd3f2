/* af_gpu_gen.h — input generation on the GPU, bit-identical to af_gen_element.
 *
 * The device runs the same gen_core.h recipe (integer hashing and IEEE double +,-,*,/
 * compiled with -fmad=false), so a tensor generated here equals the CPU generator's
 * bit for bit: tested by kernels/tests/test_gpu_gen.c.
 */
#ifndef ATTNFUZZ_AF_GPU_GEN_H
#define ATTNFUZZ_AF_GPU_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* the harness headers are C: their functions have C linkage in CUDA C++ too */
#ifdef __cplusplus
extern "C" {
#endif
#include "model/run_status.h"
#include "model/case.h"
#include "model/layout.h"

/* dev_out is (B, H, S, D) dense fp32 over tensor t's maximum shape (t in Q, K, V, dO):
 * element (b,h,s,d) = af_gen_element(c, t, b, h, s, d), before rounding to the dtype. */
af_run_status af_gpu_gen_logical(const af_case *c, af_tensor_id t, float *dev_out, char *why, size_t cap);
/* dev_exact (B, H, S, D) dense fp64: the exact input af_inputs_read gives for the values
 * dev_vals (af_gpu_gen_logical's, same shape) stored in `storage` (fp16, bf16 or fp32:
 * rounded to it as af_storage_store does and read back; rows s >= len[b] 0), so the
 * oracle's GPU tier can read the inputs where they were made. AF_RUN_DECLINED for the
 * other storages (fp8 is scaled: the host serves). len: B entries. */
af_run_status af_gpu_gen_exact(const float *dev_vals, af_storage storage, int B, int H, int S, int D, const int *len,
                               double *dev_exact, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
