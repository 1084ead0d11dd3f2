/* judge/tolerance.h — the one table of dtype units: one unit in the last place, at
 * magnitude 1, of each storage type the kernels write. Every tolerance of the judge
 * that scales with an output's precision starts from it (compare.c's floor, the
 * probes' run-to-run slack and error bounds).
 *
 *   fp16 2^-10   bf16 2^-7 (also mxfp8's O and gradients)   E4M3 2^-3 (fp8_e4m3's O
 *   and gradients, one e4m3 ulp)   fp32 2^-23 (LSE)
 */
#ifndef ATTNFUZZ_JUDGE_TOLERANCE_H
#define ATTNFUZZ_JUDGE_TOLERANCE_H

#include "model/case.h"
#include "model/layout.h"

/* One ulp at magnitude 1 of storage type st. */
double af_storage_unit(af_storage st);

/* One ulp at magnitude 1 of output tensor id as case c stores it
 * (af_tensor_storage of the case's dtype). */
double af_output_unit(const af_case *c, af_tensor_id id);

#endif
