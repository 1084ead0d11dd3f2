/* model/case_measure.h — how big a case is: its work, its cost and its features.
 *
 * Three measures with three uses:
 *   af_case_work      the fuzz work budget (af_fuzz_limits.max_work): attention work,
 *                     x3 with backward;
 *   af_case_cost      "keep the smaller reproducer" (minimiser, finding store): forward
 *                     attention work + K/V traffic + one unit per non-default feature;
 *   af_case_features  the minimiser's tie-break after the cost: non-default fields.
 */
#ifndef ATTNFUZZ_MODEL_CASE_MEASURE_H
#define ATTNFUZZ_MODEL_CASE_MEASURE_H

#include "model/case.h"

/* passes * batch * heads_q * seqlen_q * seqlen_kv * head_dim_sum, head_dim_sum =
 * head_dim_qk + head_dim_v (the score and the output products), in doubles multiplied
 * in that order. Also takes sizes that are not yet a case (the fuzz decoder's). */
double af_attention_work(double passes, int batch, int heads_q, int seqlen_q, int seqlen_kv, int head_dim_sum);

/* af_attention_work of the case, passes 3 with backward (forward + two gradient
 * products of the same size), else 1. */
double af_case_work(const af_case *c);

/* Elements a case holds (inputs + outputs, gaps and pad tokens included), doubled with
 * backward: what af_case_validate bounds by AF_CASE_MAX_ELEMENTS (host memory: the
 * harness holds them in doubles). */
#define AF_CASE_MAX_ELEMENTS 4e9
double af_case_elements(const af_case *c);

/* Work a case costs, for "keep the smaller reproducer": batch*heads*sq*skv*(dqk+dv)
 * plus small terms for every non-default feature. Smaller is simpler. */
double af_case_cost(const af_case *c);

/* Non-default features of a case (tie-break after af_case_cost). */
int af_case_features(const af_case *c);

#endif
