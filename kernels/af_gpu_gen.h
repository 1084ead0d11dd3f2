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

#ifdef __cplusplus
}
#endif
#endif
