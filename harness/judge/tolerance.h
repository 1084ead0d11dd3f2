/* judge/tolerance.h — the dtype units the judge's tolerances start from: one unit in the
 * last place, at magnitude 1, of each storage type the kernels write, read from the one
 * table of storage facts (model/layout.h, af_storage_facts). Every tolerance of the judge
 * that scales with an output's precision starts from it (compare.c's floor, the
 * probes' run-to-run slack and error bounds).
 *
 *   fp16 2^-10   bf16 2^-7 (also mxfp8's O and gradients)   E4M3 2^-3 (fp8_e4m3's O
 *   and gradients, one e4m3 ulp)   E5M2 2^-2 (fp8_e5m2's; an fp16 / bf16 O of
 *   out_dtype keeps E4M3's 2^-3: its P8 is E4M3)   fp32 2^-23 (LSE)
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

/* The smallest normal number of storage type st, and half the step of its subnormals
 * (half an ulp of the smallest subnormal): below the smallest normal (and up to twice
 * it) the spacing of st is that one step, so a correctly rounded value there is off by
 * up to half of it, whatever its own size (absolute, not relative, rounding):
 *   fp16 2^-14, 2^-25   bf16 2^-126, 2^-134   E4M3 2^-6, 2^-10   E5M2 2^-14, 2^-17   fp32 2^-126, 2^-150 */
double af_storage_min_normal(af_storage st);
double af_storage_subnormal_half_step(af_storage st);

#endif
