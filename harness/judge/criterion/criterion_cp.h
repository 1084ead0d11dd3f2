/* judge/criterion/criterion_cp.h — the budget of a context-parallel (cp > 1) case for the
 * roundings that the plugin ABI makes legitimate between the ranks' kernel calls.
 *
 * A CP implementation gets each kernel call's outputs in the output dtype (the ABI has
 * no fp32 outputs for fp16/bf16; TransformerEngine's non-FP8 CP path likewise receives
 * each step's out_per_step and dq_, dk_, dv_ in the nominal dtype from the fused or
 * flash kernel) and combines them: O partials o_s weighted by exp(lse_s - lse), dQ, dK,
 * dV partials p_s summed. Each partial was rounded to the dtype once before the
 * combination, by at most half a unit of its own magnitude. The terms of one element's
 * exact sum (criterion.h: mass[e], the sum of its absolute terms) are split between the
 * calls, every (query row, key) pair in exactly one call, so over the n_e partials of e
 *   sum_s |w_s p_s| <= (1 + u) mass[e]    (u: one dtype unit; the partials' own error)
 * and the partials' roundings move e by at most
 *   cp[e] = u/2 (1 + u) mass[e] + n_e (2^-23 + 2^-24) mass[e] + [fp16] n_e 2^-25
 * (second term: each partial sum's own fp32 accumulation step and the fp32 sum of the
 * partials; third: a partial in fp16's subnormal range rounds by 2^-25 absolute).
 * n_e <= 1 adds nothing: one partial rounded to the dtype and stored again unchanged.
 *
 * n_e comes from the case's cp field alone (never from the wrapper), by the comm types
 * of docs/cp.md: p2p: cp ring steps for every tensor; all_gather: one call per query
 * row (O, dQ: 1), up to 2 cp calls per key (dK, dV: one per query chunk); a2a: one call
 * per head (1; dK, dV with heads_kv < cp: cp / heads_kv, the ranks a K/V head is
 * replicated to); a2a+p2p: the p2p ring over cp / g groups (g = 2 for even cp, 1 for odd).
 * The judge adds cp[e] to e's budget beyond kappa (af_criterion_extra_terms), so the
 * element, row and bias checks all take it, each as a worst case like kappa.
 */
#ifndef ATTNFUZZ_JUDGE_CRITERION_CP_H
#define ATTNFUZZ_JUDGE_CRITERION_CP_H

#include "judge/criterion/criterion.h"

/* The most partials an element of tensor id of case c combines (1 when cp_size <= 1,
 * and for LSE, which is fp32 throughout). */
int af_cp_partials(const af_case *c, af_tensor_id id);

/* cp[e] above, dense like tensor id (caller frees), or NULL when the tensor combines at
 * most one partial, has no mass budget (LSE) or memory is short. unit: one dtype unit. */
double *af_criterion_cp_term(const af_case *c, af_tensor_id id, const af_criterion_terms *t, double unit);

#endif
