/* model/gen.h — deterministic inputs.
 *
 * Every input element is a pure function of (seed, tensor, logical index) and of the
 * case's data mixture: never of a stateful RNG, the layout, or the machine. The core
 * (gen_core.h) is plain integer and IEEE +,-,*,/ arithmetic with no contraction, and
 * is compiled both here and into the GPU generator, so both give the same bits.
 * Logical index of (b, h, s, d) = ((b * H + h) * S + s) * D + d over the tensor's
 * maximum shape.
 */
#ifndef ATTNFUZZ_GEN_H
#define ATTNFUZZ_GEN_H

#include "model/case.h"
#include "model/tensors.h"
#include "model/gen_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The generator parameters of a case (what gen_core.h and the GPU generator take). */
void af_gen_params_of_case(const af_case *c, af_gen_params *g);

/* Value of logical element (b, h, s, d) of an input tensor (Q, K, V or dO) before it
 * is rounded to the case dtype. */
float af_gen_element(const af_case *c, af_tensor_id t, int b, int h, int s, int d);

/* Fill the laid-out input buffers and the dense logical inputs (exact stored values,
 * dequantised for fp8/mxfp8). */
int af_inputs_generate(const af_case *c, af_tensors *t, af_inputs *in);
/* The same from values generated elsewhere (the GPU generator, kernels/af_gpu_gen.h):
 * pregen[i] for Q, K, V, dO is NULL (generated here) or (B, H, S, D) dense fp32 of that
 * tensor's view, element (b,h,s,d) = af_gen_element (caller owns it). */
int af_inputs_generate_from(const af_case *c, af_tensors *t, af_inputs *in, float *const pregen[4]);

/* A case file's case and inputs, for the research probes and benches: the case loaded
 * from path, its buffers allocated and its inputs generated. 0, or -1 with why
 * ("FILE:LINE: message", or what could not be made). */
int af_inputs_of_case_file(const char *path, af_case *c, af_tensors *t, af_inputs *in, char *why, size_t cap);

/* Re-read dense logical inputs from the buffers (after a probe perturbed them). */
void af_inputs_read(const af_case *c, const af_tensors *t, af_inputs *in);

#ifdef __cplusplus
}
#endif

#endif
