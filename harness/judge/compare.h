/* judge/compare.h — judging one run: buffer integrity, then numbers. */
#ifndef ATTNFUZZ_COMPARE_H
#define ATTNFUZZ_COMPARE_H

#include "oracle/oracle.h"
#include "judge/criterion/criterion.h"
#include "judge/verdict.h"

/* Guards around every buffer intact (else out_of_bounds); output gaps (stride_gap,
 * thd gaps) still poisoned (else out_of_bounds); every judged output element written
 * (else unwritten) and finite (else nan_inf, unless the oracle's exact value itself
 * rounds to that infinity in the output type: oracle may be NULL; or the element is a
 * gradient of a row, or of a key seen by a row, whose fp32 range an ABI kernel loses
 * to the stored LSE's growth: criterion.h, terms may be NULL); fully masked rows give
 * O = 0 and LSE = -inf, or the sink logit with sinks (af_masked_row_lse; else
 * convention). Adds findings to v; returns their number. */
int af_check_buffers(const af_case *c, const af_tensors *t, const af_outputs *oracle, const af_criterion_terms *terms,
                     af_verdict *v);
/* The same for the buffers whose bit (1u << af_buffer_id) is set in `buffers` only: their
 * guards, gaps and judged elements (a further run whose other buffers are bitwise run 0's
 * has run 0's findings there). */
int af_check_buffers_of(const af_case *c, const af_tensors *t, const af_outputs *oracle,
                        const af_criterion_terms *terms, unsigned buffers, af_verdict *v);

/* Step 1 of af_check_buffers alone: the guard margins of the buffers whose bit is set
 * in `buffers`, byte for byte (out_of_bounds, one finding per buffer). Needs no layout,
 * so it also serves a run whose metadata was malformed on purpose (the metadata probe). */
int af_check_guards(const af_tensors *t, unsigned buffers, af_verdict *v);

/* Numeric comparison of kernel outputs against the oracle with the reference's
 * error as floor (see verdict.h). ref may be NULL (no reference could run): then
 * err_ref = 0 and the floor alone is allowed, times 8. terms: the term budgets of the
 * fp16/bf16 criterion (judge/criterion/criterion.h) or NULL (row rule without element, bias and
 * term floors). */
int af_compare_outputs(const af_case *c, const af_outputs *kernel, const af_outputs *ref,
                       const af_oracle_result *oracle, const af_criterion_terms *terms, af_verdict *v);
/* The same for the tensors whose bit (1u << af_tensor_id) is set in `tensors` only (the
 * others' stats are left as they are). */
int af_compare_outputs_only(const af_case *c, const af_outputs *kernel, const af_outputs *ref,
                            const af_oracle_result *oracle, const af_criterion_terms *terms, unsigned tensors,
                            af_verdict *v);

/* The per-row summaries of a tensor (criterion.h) are computed on the GPU
 * (kernels/compare_gpu.h) when it has at least this many elements and a GPU is usable;
 * the host computes the same bits otherwise. */
#define AF_COMPARE_GPU_MIN_ELEMS (1LL << 24)

/* Does row (b, h, i) see no key at all? (oracle's mask rule) */
bool af_row_fully_masked(const af_case *c, int b, int i);
/* The stored LSE of a fully masked row of query head h (oracle/feature_spec.h): the log
 * of its softmax denominator, which without a key holds the sink alone: the sink logit
 * a_h (a_h / ln 2 with stats = log2), or -inf without sinks (an empty sum). */
double af_masked_row_lse(const af_case *c, int h);
/* Is x that LSE? -inf exactly without sinks; with a sink within 2^-21 (1 + |LSE|), the
 * LSE row budget's fp32 share (criterion.h: 2^-21 and the score's 2^-21 (1 + |LSE_i|);
 * no score, so no accumulation term) that a kernel computing m + log(exp(a - m)) or
 * converting between bases may lose. */
bool af_masked_row_lse_ok(const af_case *c, int h, double x);

#endif
