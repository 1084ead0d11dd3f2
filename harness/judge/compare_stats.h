/* judge/compare_stats.h — judging the score statistics of outputs = max_sumexp (each row's
 * max M_i of its visible scores and E_i = sum_j exp(s_ij - M_i), (B, Hq, Sq)) and
 * outputs = max_logit (max_i M_i of each (b, h), (B, Hq)): fp32 outputs beside O and LSE,
 * oracle/feature_spec.h states them.
 *
 * The rule, per judged row i < len_q (and per (b, h) for max_logit), with A_i the row's
 * score magnitude max_j scale sum_d |q_id k_jd| over its visible keys and n_i their count:
 *   score error   eps_i = acc(Dqk) A_i + 2^-21 (1 + |M_i| + A_i)   (acc = af_score_acc_unit
 *                 of verdict.h: the fp32 accumulation of q . k in any order; 2^-21 of the
 *                 magnitudes: the fp32 roundings of the scale, softcap, bias and ALiBi)
 *   M_i:          |M~ - M| <= 2 err_ref + eps_i  (a max of scores moves by at most the
 *                 largest score's error, as the LSE's score part)
 *   E_i:          |E~ - E| <= 2 err_ref + (expm1(2 eps_i) + 2^-21 + (n_i / 16 + 1) 2^-23) E
 *                 (each term's exponent moves by eps_i twice - the score and the max -,
 *                 fp32 exp, and the fp32 sum's bias as the criterion's accumulation term)
 *   max_logit:    as M_i with A the largest A_i of (b, h)
 * err_ref: the reference backend's own error (0 without one). A row that sees no key must
 * give M = -inf and E = 0 exactly (else mismatch); a value still holding the poison is
 * unwritten; a non-finite one where the oracle's is finite is nan_inf. Findings name
 * tensor "max", "sum_exp" or "max_logit" (no stats slot), b, h and the row. */
#ifndef ATTNFUZZ_JUDGE_COMPARE_STATS_H
#define ATTNFUZZ_JUDGE_COMPARE_STATS_H

#include "judge/verdict.h"
#include "model/dense.h"
#include "model/tensors.h"

/* The score error bound eps_i above, from the row's A_i and the exact max M_i. */
double af_compare_stats_eps(int head_dim_qk, double score_abs, double exact_max);

/* Judge the score statistics of a run (no-op, 0, for a case without them): t the run's
 * buffers (poison check), in the exact inputs (A_i), kernel / ref (NULL: no reference) /
 * exact the dense outputs. Returns the number of findings added (one of each kind and
 * tensor at most: the worst). */
int af_compare_stats(const af_case *c, const af_tensors *t, const af_inputs *in, const af_outputs *kernel,
                     const af_outputs *ref, const af_outputs *exact, af_verdict *v);

#endif
