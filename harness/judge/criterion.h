/* judge/criterion.h — the per-row, per-element and bias criterion of fp16/bf16 cases
 * (the rule is stated in verdict.h; compare.c calls it once per tensor).
 *
 * A "row" of a dense output tensor is its last axis at fixed (b, h, s): a query row of
 * O, LSE, dQ (b, h, i) and a key of dK, dV (b, hk, j). Each row is judged on its own
 * magnitudes, so small rows and small keys are checked as tightly as large ones.
 *
 * The term budgets below come from the exact inputs and the oracle's exact O and LSE
 * (P_ij = exp(scale S_ij - LSE_i)); they say how much error the roundings that the
 * plugin ABI allows can put on each element:
 *   mass[e]   the sum of the absolute terms a kernel rounds (O_id: sum_j P_ij |v_jd|;
 *             dV_jd: sum_i P_ij |dO_id|; dQ_id: sum_j |scale dS_ij k_jd|; dK_jd: sum_i
 *             |scale dS_ij q_id|): dtype rounding of P, dS moves e by <= u/2 mass[e]
 *   kappa[e]  the part of the error that need not look like the reference's: fp32
 *             score and exp error (rho_i = 2^-21 (1 + A_i + |LSE_i|) relative per P_ij,
 *             hence per dS_ij), dP and D in fp32 (2^-22 of the dS term mass G_ij =
 *             P_ij (|dO_i|.|v_j| + |dO_i|.|O_i|)), the cancellation floor
 *             AF_GRAD_CANCEL_UNIT G_ij, fp32 accumulation bias ((n/16 + 1) 2^-23 of the
 *             mass for an n-term sum), fp16 subnormal P and dS (2^-25 absolute per term).
 *             For dQ, dK the judge adds per kernel the stored O's share of D_i = dO_i .
 *             O_i (the ABI's backward uses the O the kernel wrote): with the kernel's own
 *             dD_i = |dO_i . (O_kernel - O_exact)|, dQ_id gets dD_i scale sum_j P_ij |k_jd|
 *             and dK_jd scale sum_i P_ij dD_i |q_id|
 *   sig2[r]   per row, sum over the row's terms t of (w_t c_t)^2: w_t the operand a
 *             kernel rounds to the dtype (P_ij for O, dV; scale dS_ij for dQ, dK) and
 *             c_t the other operand projected on sign(exact row); the random rounding
 *             of the terms moves the row's signed sum (the bias statistic) with standard
 *             deviation <= u / (2 sqrt 3) sqrt(sig2[r]).
 * LSE has kappa only: 2^-21 (1 + A_i) + 2^-24 sqrt(n_i) (score accumulation, sum, log).
 */
#ifndef ATTNFUZZ_JUDGE_CRITERION_H
#define ATTNFUZZ_JUDGE_CRITERION_H

#include <stdbool.h>
#include "model/case.h"
#include "model/layout.h"
#include "oracle/oracle.h"
#include "kernels/row_summary.h"

/* P is kept (float) for the stored-O term of dK when B Hq Sq Skv is at most this. */
#define AF_CRITERION_MAX_PROB (1u << 24)

typedef struct {
    bool ready;
    double *mass[AF_T_COUNT];  /* dense like the tensor (O, dQ, dK, dV); NULL otherwise */
    double *kappa[AF_T_COUNT]; /* dense like the tensor (also LSE: one per row)         */
    double *sig2[AF_T_COUNT];  /* one per row (O, dQ, dK, dV)                           */
    /* backward, for the stored O's share of D (added per kernel, criterion.c): */
    double *kq;                       /* (B, Hq, Sq, Dqk)  scale sum_j P_ij |k_jd|               */
    double *wq;                       /* (B, Hkv, Skv, Dqk) scale sum_(h, i) P_ij |q_id|         */
    float *prob;                      /* (B, Hq, Sq, Skv) P_ij, or NULL when too large           */
    const double *dout, *q, *o_exact; /* the prepared case's dense dO, Q and exact O     */
} af_criterion_terms;

/* Fill t from the problem's exact inputs and the oracle's exact outputs (backward when
 * exact->dq is set). dtype: the case's (P and dS round to it; fp16 adds subnormals).
 * Returns 0, or -1 when out of memory (t left empty: the criterion then runs without
 * element and bias checks). */
int af_criterion_terms_compute(const af_oracle_problem *p, const af_outputs *exact, af_dtype dtype,
                               af_criterion_terms *t);
void af_criterion_terms_free(af_criterion_terms *t);

/* Which check gave a tensor its ratio. */
typedef enum { AF_CHECK_ROW = 0, AF_CHECK_ELEMENT, AF_CHECK_ROW_BIAS, AF_CHECK_TENSOR_BIAS } af_check_kind;
const char *af_check_name(af_check_kind k);

/* The worst check of one tensor. err/allowed: of that check (for a bias check, the
 * signed row sum |beta| and its allowance); floor: the row floor of that row; location
 * (b, h, row, col) and values: the row's worst element. */
typedef struct {
    af_check_kind check;
    double ratio, err, allowed, floor, err_ref;
    int b, h, row, col;
    double kernel_value, oracle_value;
    long long elements;
} af_criterion_result;

/* Judge tensor id of case c (fp16 or bf16): kernel, ref (NULL: no reference) and exact
 * are dense (verdict.h). unit: one unit of the output type at magnitude 1; grad_mass:
 * the tensor's term magnitude (af_oracle_grad_abs), used for the cancellation floor when
 * terms is NULL or not ready. Rows a fully masked query row owns are skipped (judged by
 * af_check_buffers), as are non-finite kernel values (nan_inf). */
void af_criterion_tensor(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                         const double *exact, const double *kernel_o, const af_criterion_terms *terms, double unit,
                         double grad_mass, af_criterion_result *out);

/* The two halves of af_criterion_tensor (criterion_rows.c), so that the summaries may
 * come from the device (kernels/compare_gpu.h) and the decision stays here.
 * Does terms hold tensor id's budgets? */
bool af_criterion_terms_have(const af_criterion_terms *terms, af_tensor_id id);
/* One row: kernel, ref (NULL: none), exact each (D) (row_summary.h; no term fields). */
void af_row_summary_of(const double *kernel, const double *ref, const double *exact, int D, af_row_summary *s);
/* Every row (b, h, s) of tensor id, s over the full S: rows (B * H * S). terms: NULL or
 * with id's budgets (then the term fields too, dterm: the stored-O term, dense like the
 * tensor, or NULL). */
void af_criterion_row_summaries(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                                const double *exact, const af_criterion_terms *terms, const double *dterm, double unit,
                                af_row_summary *rows);
/* The verdict of tensor id from its row summaries (rows (B * H * S)), exactly as
 * af_criterion_tensor: rows past the lengths and fully masked query rows are skipped. */
void af_criterion_decide(const af_case *c, af_tensor_id id, const af_row_summary *rows, bool have_ref,
                         const af_criterion_terms *terms, double unit, double grad_mass, af_criterion_result *out);
/* The stored O's share of the budget of dQ (id DQ) or dK (DK), dense like the tensor
 * (caller frees), or NULL (criterion.c). */
double *af_criterion_stored_o_term(const af_case *c, af_tensor_id id, const af_criterion_terms *t,
                                   const double *kernel_o);

#endif
