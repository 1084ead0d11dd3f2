/* judge/compare.h — judging one run: buffer integrity, then numbers. */
#ifndef ATTNFUZZ_COMPARE_H
#define ATTNFUZZ_COMPARE_H

#include "oracle/oracle.h"
#include "judge/criterion/criterion.h"
#include "judge/verdict.h"

/* Guards around every buffer intact (else out_of_bounds); output gaps (stride_gap,
 * thd gaps) still poisoned (else out_of_bounds); every judged output element written
 * (else unwritten) and finite (else nan_inf, unless a value within the element's
 * allowance of the oracle's exact value rounds to that infinity in the output type:
 * af_overflow_within; oracle, ref may be NULL; or the element is a
 * gradient of a row, or of a key seen by a row, whose fp32 range an ABI kernel loses
 * to the stored LSE's growth: criterion.h, terms may be NULL); fully masked rows give
 * O = 0 and LSE = -inf, or the sink logit with sinks (af_masked_row_lse; else
 * convention). Adds findings to v; returns their number. */
int af_check_buffers(const af_case *c, const af_tensors *t, const af_outputs *oracle, const af_outputs *ref,
                     const af_criterion_terms *terms, af_verdict *v);
/* The same for the buffers whose bit (1u << af_buffer_id) is set in `buffers` only: their
 * guards, gaps and judged elements (a further run whose other buffers are bitwise run 0's
 * has run 0's findings there). */
int af_check_buffers_of(const af_case *c, const af_tensors *t, const af_outputs *oracle, const af_outputs *ref,
                        const af_criterion_terms *terms, unsigned buffers, af_verdict *v);

/* An infinity x as the stored value of an element whose exact value is `exact`: the
 * correct rounding of some value within `reach` of exact (the element's allowance,
 * af_element_reach), so an overflow and not a defect? For fp16 that is |exact| + reach >=
 * 65520 with x's sign; reach 0: exact itself rounds to x. */
bool af_overflow_within(af_storage st, double exact, double reach, double x);
/* The element rule's allowance (verdict.h rule 2, row_terms.h) at element e of tensor id
 * (dense index, af_outputs order): max(2 |ref - exact| + 2 eps, 2^-24), 8 eps without a
 * reference, eps = u/2 mass + kappa + extra + u/2 |exact|, extra the kernel's stored O's
 * and LSE's share there (af_criterion_extra_terms; 0: left out). 0 without budgets for id
 * (then only an exact value that itself rounds to infinity excuses an infinity). */
double af_element_reach(const af_case *c, af_tensor_id id, const af_criterion_terms *terms, const af_outputs *ref,
                        size_t e, double exact, double extra);

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
/* af_compare_outputs_only where kernel was read (af_outputs_read) from the run's tensors
 * `run`, unchanged since (NULL: unknown): the device's row summaries may read a tensor's
 * values from its stored buffer (a quarter of the doubles' bytes for fp16 / bf16), the
 * same values. */
int af_compare_outputs_run(const af_case *c, const af_outputs *kernel, const af_tensors *run, const af_outputs *ref,
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
