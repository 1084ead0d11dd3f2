/* oracle/feature_spec.h — THE specification of the attention features (the oracle's own;
 * backends implement it from this text, never by calling it).
 *
 * For query row i of head h, sequence b (lengths len_q, len_kv), visible key j
 * (mask_spec.h), with raw score r_ij = scale * (q_i . k_j):
 *   softcap c > 0:   t_ij = c * tanh(r_ij / c)               (else t_ij = r_ij)
 *   score_mod:       t_ij = f(r_ij), one of torch Flex's named score_mods (torch
 *                    test/inductor/test_flex_attention.py: _squared, _trig, _trig2, where
 *                    Flex's score is the already-scaled q.k), with b the sequence's batch
 *                    index as a real number; never together with softcap:
 *                      squared:  f(r) = r^2                        f'(r) = 2 r
 *                      trig:     f(r) = sin(cos(r)) + tan(b)       f'(r) = -sin(r) cos(cos(r))
 *                      trig2:    f(r) = cos(r) sin(r) + tan(b)     f'(r) = cos(2 r)
 *                                                                        = cos^2 r - sin^2 r
 *                    tan(b) is one constant per sequence: it moves L_i and the LSE output
 *                    by tan(b) and leaves P, O and the gradients as they are.
 *   bias:            s_ij = t_ij + bias[b', h', i', j]        b' = b or 0, h' = h or 0, i' =
 *                                                             i or 0 when the bias broadcasts
 *                                                             that axis (111s ... broadcast
 *                                                             one row over every query)
 *   ALiBi:           with d_ij = j - (i + len_kv - len_q) (bottom-right, whatever the
 *                    mask's alignment) and slope m = slope[b', h] (b' = b for per-(batch,
 *                    head) slopes, else 0), fp32 values:
 *                      alibi = yes, abs:  s_ij += -m * |d_ij|   (FlashAttention's convention)
 *                      alibi = signed:    s_ij += m * d_ij       (cuDNN's / FlashInfer's: a key
 *                                                             right of the diagonal gains)
 *                    yes: m = 2^(-8 (h + 1) / heads_q); abs / signed: model/features.h's
 *                    recipe of alibi_slopes (the paper's, or drawn per head / per (b, h))
 *   sinks:           a per-head logit a_h joins every row's denominator but has no value
 *                    vector: Z_i = sum_j exp(s_ij) + exp(a_h); off_by_one: a_h = 0;
 *                    learnable: a_h is an input (model/features.h)
 *   softmax:         P_ij = exp(s_ij - L_i), L_i = ln Z_i (natural), O_i = sum_j P_ij v_j
 *   stats:           the LSE output is L_i (natural) or L_i / ln 2 (stats = log2); the
 *                    harness reads a base-2 output back times ln 2, so the oracle's LSE is
 *                    always L_i.
 *   fully masked:    a row that sees no key keeps O = 0 and no gradient, sink or not (the
 *                    sink is not a key). Its Z_i holds the sink alone, so its LSE output
 *                    is a_h (in the stats' base) with sinks and -inf without (the log of
 *                    an empty sum). The tiers write -inf for every such row and give it
 *                    no dsink share; the judge holds the stored LSE to a_h itself
 *                    (judge/compare.c). (A dLSE g_i on such a row would reach dsink_h
 *                    as g'_i; the tiers do not model that.)
 *   score statistics (outputs = max_sumexp / max_logit; no effect on O, LSE or gradients):
 *                    over the visible keys a row's mask keeps (block / custom mask drops
 *                    are not visible), with s_ij the full score above (softcap applied
 *                    first, bias and ALiBi added; the sink's logit a_h is NOT a score):
 *                    M_i = max_j s_ij and E_i = sum_j exp(s_ij - M_i) (cuDNN SDPA's Max
 *                    and Sum_exp; without sinks L_i = M_i + ln E_i); a row with no such
 *                    key has M_i = -inf, E_i = 0. max_logit[b, h] = max over the rows
 *                    i < len_q of M_i (TransformerEngine's max_logit for QK-clip, of the
 *                    scaled scores; -inf when no row sees a key). Undropped (dropout does
 *                    not touch them), natural base whatever stats says.
 * Backward, with dO_i and the incoming gradient g_i of the LSE output (dlse; 0 without):
 *   g'_i   = g_i / ln 2 with stats = log2, else g_i     (the gradient of L_i)
 *   D_i    = dO_i . O_i - g'_i
 *   dS_ij  = P_ij (dO_i . v_j - D_i)                    (gradient of s_ij)
 *   dR_ij  = dS_ij * dt_ij/dr_ij                        (gradient of r_ij), with
 *            dt/dr = 1 - (t_ij / c)^2 with softcap, f'(r_ij) with score_mod, else 1
 *            (0 <= dt/dr <= 1 only for softcap: squared's 2 r is any size and sign)
 *   dQ_i   = scale * sum_j dR_ij k_j;  dK_j = scale * sum_i dR_ij q_i;  dV_j = sum_i P_ij dO_i
 *   dsink_h = - sum_{b, i} P_sink,i D_i,  P_sink,i = exp(a_h - L_i)   (learnable only)
 *   The bias is a constant input here: no dBias output.
 * Precision of the tiers: MPFR evaluates tanh, r^2 (mpfr_sqr), sin, cos and tan at its
 * working precision, each rounded once (the product cos(r) sin(r), the derivatives and
 * the adds too); the CPU fp64 tier uses libm's tanh, sin, cos and tan in double, each a
 * few ulp (the fp64 tier is certified against MPFR on sampled rows). The score bound that
 * scales both tiers' stated error (oracle.c score_bound) is that of t = f(r), not of r:
 * |f(r)| + sigma_r max |f'| over |r| <= sigma_r (af_feat_score_bound). A kernel's fp32
 * f is its own matter (the judge's allowance: judge/verdict.h AF_SCORE_MOD_*).
 * Dropout (drop probability p, Philox seed and offset; the mask is oracle/dropout_spec.h's,
 * never model/dropout.c's; dropout_rng = kernel: the kernel's own returned mask, given in
 * feat.dropout_keep): M_ij = 0 when element (b, h, i, j) is dropped, else 1, and
 * w_ij = M_ij / (1 - p). The softmax and its statistics are the undropped ones: P_ij,
 * L_i and the LSE output do not see the mask (cuDNN's SDPA and FlashAttention-2 drop
 * after the softmax: the stats they return are the full row's logsumexp). Then
 *   O_i    = sum_j P_ij w_ij v_j
 *   D_i    = dO_i . O_i - g'_i                          (O with dropout)
 *   dP_ij  = w_ij (dO_i . v_j);  dS_ij = P_ij (dP_ij - D_i)
 *   dV_j   = sum_i P_ij w_ij dO_i
 *   (O depends on P only through sum_j P_ij w_ij v_j, so dL/dP_ij = w_ij dO_i . v_j, and
 *   the softmax Jacobian gives dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik) with
 *   sum_k P_ik dP_ik = dO_i . O_i; the sink's dsink_h = -sum P_sink,i D_i keeps its form.)
 */
#ifndef ATTNFUZZ_FEATURE_SPEC_H
#define ATTNFUZZ_FEATURE_SPEC_H

#include <stdbool.h>
#include "oracle/oracle.h"

/* Any feature that changes the scores or the denominator. Inline: the GPU tier's scope
 * (oracle/gpu/oracle_gpu_scope.h) asks it from the tier's own library too. */
static inline bool af_feat_any(const af_oracle_problem *p) {
    const af_features *f = &p->in->feat;
    return f->softcap != 0.0 || f->sink || f->bias_b || f->alibi || p->in->dlse || f->dropout_p != 0.0 ||
           f->score_mod != AF_SCORE_MOD_NONE;
}

/* s_ij from r = scale * q.k in fp64 for row (b, h, i), key j; *dt_dr (may be NULL) gets
 * the derivative dt/dr: 1 - (t / c)^2 with softcap, f'(r) with score_mod, else 1. Only
 * softcap's lies in [0, 1]: a caller that needs a magnitude takes fabs. */
double af_feat_score64(const af_oracle_problem *p, int b, int h, int i, int j, double r, double *dt_dr);

/* The additive part bias + ALiBi of s_ij (exact in fp64: a dtype value plus an fp32
 * slope times an integer). */
double af_feat_additive(const af_oracle_problem *p, int b, int h, int i, int j);

/* Sink logit a_h, or -inf without sinks. */
double af_feat_sink(const af_oracle_problem *p, int h);

/* g'_i, the incoming gradient of L_i (0 without dlse). */
double af_feat_dlse_nat(const af_oracle_problem *p, int b, int h, int i);

/* Dropout weight w_ij of feature_spec.h in fp64: 1 without dropout, 0 when the element
 * is dropped, else 1 / (1 - p). */
double af_feat_dropout_weight(const af_oracle_problem *p, int b, int h, int i, int j);
/* Is element (b, h, i, j) kept (true without dropout)? */
bool af_feat_dropout_kept(const af_oracle_problem *p, int b, int h, int i, int j);

/* Largest |bias + ALiBi| and |sink| over the problem (for the score bound). */
double af_feat_additive_bound(const af_oracle_problem *p);

/* The score_mod's t = f(r) in fp64 for sequence b (the tan(b) constant included), and
 * *dt_dr = f'(r) (may be NULL); r itself (dt/dr 1) without score_mod. */
double af_feat_score_mod64(const af_oracle_problem *p, int b, double r, double *dt_dr);

/* For |r| <= sigma_r, a bound of |t| plus sigma_r times |dt/dr|: sigma_r without a
 * score_mod (softcap keeps |t| <= |r|), else max |f(r)| + sigma_r max |f'(r)| over
 * |r| <= sigma_r and every batch (squared: 3 sigma_r^2; trig, trig2: 1 + max_b |tan b| +
 * sigma_r). It replaces sigma_r in the tiers' stated bound (oracle.c score_bound). */
double af_feat_score_bound(const af_oracle_problem *p, double sigma_r);

#endif
