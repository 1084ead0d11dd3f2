/* judge/criterion/criterion.h — the per-row, per-element and bias criterion of fp16/bf16 cases
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
 *             score and exp error (rho_i = 2^-21 (1 + |LSE_i|) + acc(Dqk) A_i relative
 *             per P_ij, acc = af_score_acc_unit of verdict.h: the score's fp32
 *             accumulation in any order, tensor cores included,
 *             hence per dS_ij), dP and D in fp32 (2^-22 of the dS term mass G_ij =
 *             P_ij (|dO_i|.|v_j| + |dO_i|.|O_i|)), the cancellation floor
 *             AF_GRAD_CANCEL_UNIT G_ij, fp32 accumulation bias ((n/16 + 1) 2^-23 of the
 *             mass for an n-term sum), fp16 subnormal P and dS (2^-25 absolute per term;
 *             for a P below 2^-14 rounded inside dS, 2^-25 |dP_ij - D_i| on dS_ij).
 *             For dQ, dK the judge adds per kernel the stored O's share of D_i = dO_i .
 *             O_i (the ABI's backward uses the O the kernel wrote): with the kernel's own
 *             dD_i = |dO_i . (O_kernel - O_exact)|, dQ_id gets dD_i scale sum_j P_ij |k_jd|
 *             and dK_jd scale sum_i P_ij dD_i |q_id|
 *   sig2[r]   per row, sum over the row's terms t of (w_t c_t)^2: w_t the operand a
 *             kernel rounds to the dtype (P_ij for O, dV; scale dS_ij for dQ, dK) and
 *             c_t the other operand projected on sign(exact row); the random rounding
 *             of the terms moves the row's signed sum (the bias statistic) with standard
 *             deviation <= u / (2 sqrt 3) sqrt(sig2[r]).
 * Dropout (oracle/feature_spec.h: O_i = sum_j P_ij w_ij v_j, dS_ij = P_ij (w_ij dP_ij - D_i),
 * dV_j = sum_i P_ij w_ij dO_i, w_ij = 0 or 1 / (1 - p)): every term that carries w carries it
 * in its budget too (mass, rho, subnormal and sig2 of O and dV; dP's part of dS and its
 * fp32 budget), so a kept term's allowance grows by 1 / (1 - p) exactly as the term does and
 * a dropped term has none; the fp32 keep factor and the product with it add 2^-23 of the
 * weighted mass to kappa (O, dV, dS). The stored LSE's growth of dV uses 1 / (1 - p) as
 * the bound of w (keep_scale).
 * LSE has kappa only: 2^-21 + acc(Dqk) A_i + 2^-24 sqrt(n_i) (score accumulation, sum, log).
 *
 * The stored LSE's growth (added per kernel, criterion_lse.c). The ABI's backward
 * recomputes P_ij = exp(s_ij - LSE_i) from fp32 scores and the fp32 LSE the kernel
 * stored, and a forward's P is exp(s_ij - LSE_i) of its own LSE too, so
 *   |ln(P~_ij / P_ij)| <= delta_i = sigma_i + e_i,  e_i = |LSE_kernel,i - LSE_exact,i|
 * (sigma_i = rho_i / 4: the fp32 error of the recomputed score at magnitude A_i and of
 * the exp argument s - LSE at magnitude |LSE_i|; e_i: the kernel's own stored LSE,
 * itself judged by the LSE check), and
 * P's relative error is up to expm1(delta_i). The budgets above are first order: rho_i
 * per P. Where expm1(delta_i) exceeds rho_i, the row gets x_i = expm1(min(delta_i,
 * AF_LSE_DELTA_CAP)) - rho_i more relative error on every term its P carries, with that
 * term's budget (the
 * fp32 dP, D and cancellation of dS, the stored O inside D): O_id and dQ_id get x_i
 * (mass + kappa + stored-O term)[e]; dV_jd sum_i x_i (1 + rho_i) P_ij |dO_id|; dK_jd
 * sum_i x_i scale (|dS_ij| + its budget + P_ij dD_i) |q_id|. Rows with expm1(delta_i)
 * <= rho_i (for a kernel whose e_i is within its rounding, every row with A_i + |LSE_i|
 * below ~2e7) get x_i = 0 and keep the budgets above to the bit. When even the finite
 * range is lost
 * (delta_i + ln F_i >= ln FLT_MAX, F_i the row's largest exact backward intermediate
 * factor, log_f), an ABI kernel's fp32 P, dS or sums may overflow: a non-finite dQ_i or
 * dK_j, dV_j of a key that row sees is then not a finding (af_criterion_unresolved).
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
/* delta_i is capped here so that every budget stays finite in double (e^500 ~ 1e217). */
#define AF_LSE_DELTA_CAP 500.0

typedef struct {
    bool ready;
    /* only kappa[AF_T_LSE] is set (ready false): a case above the runner's
     * AF_CRITERION_TERMS_MAX_WORK, whose LSE rows still get their budget
     * (af_criterion_lse_rows_only) while O and the gradients have none */
    bool lse_only;
    double *mass[AF_T_COUNT];  /* dense like the tensor (O, dQ, dK, dV); NULL otherwise */
    double *kappa[AF_T_COUNT]; /* dense like the tensor (also LSE: one per row)         */
    double *sig2[AF_T_COUNT];  /* one per row (O, dQ, dK, dV)                           */
    /* fp8 dtypes, host pass: per element of O and dV, the sum over its terms of the
     * squared term, (P_ij w_ij v_jd)^2 and (P_ij w_ij dO_id)^2: the variance of the E4M3
     * cast of P in them (criterion_fp8.c); NULL otherwise */
    double *cast_sq[AF_T_COUNT];
    /* fp8 dtypes, host pass: (B, Hq, Sq, Dv) per element of O, how far a score error of
     * eps_i = AF_FP8_SCORE_UNIT A_i per key (the FP8 tensor cores' accumulation, verdict.h)
     * can move it: min((e^(2 eps_i) - 1) sum_j P_ij |w_ij v_jd - O_id|, max_j |w_ij v_jd -
     * O_id|) over the row's keys with P_ij > 0 (and a sink as a key of value 0); NULL
     * otherwise (criterion_fp8.c) */
    double *fp8_score_o;
    /* backward, for the stored O's share of D (added per kernel, criterion.c): */
    double *kq;                       /* (B, Hq, Sq, Dqk)  scale sum_j P_ij |k_jd|               */
    double *wq;                       /* (B, Hkv, Skv, Dqk) scale sum_(h, i) P_ij |q_id|         */
    float *prob;                      /* (B, Hq, Sq, Skv) P_ij, or NULL when too large           */
    float *ds_abs;                    /* (B, Hq, Sq, Skv) |dS_ij| + its budget (unscaled), w/ prob */
    double *rho;                      /* (B, Hq, Sq) rho_i of each judged row; 0 elsewhere      */
    double *log_f;                    /* (B, Hq, Sq) ln F_i, backward (criterion.h above)       */
    const double *lse_exact;          /* the oracle's exact LSE                                  */
    double keep_scale;                /* dropout: 1 / (1 - p), the largest weight w_ij; 1 without */
    const double *dout, *q, *o_exact; /* the prepared case's dense dO, Q and exact O     */
    /* lse_only backward (criterion_large.c): the stored O's share of the row floors */
    double *row_kq; /* (B, Hq, Sq)   max_d scale sum_j P_ij |k_jd|                    */
    double *key_wq; /* (B, Hkv, Skv) max_d scale sum_(h, i) P_ij |q_id|               */
    /* fp8_e4m3: one subnormal step of each E4M3 output's encoding, 2^-9 descale (set by
     * the runner after the scales are chosen; 0 otherwise). Not a term budget: set
     * also when ready is false (fp8 computes no budgets). */
    double e4m3_step[AF_T_COUNT];
    /* device copies the GPU pass keeps for judging each run (criterion_gpu.h), or NULL */
    struct af_terms_dev *dev;
    /* The recipe lse_rowsum_dtype_p (criterion_rowsum.c; docs/criterion.md "A row sum of
     * rounded P"): (B, Hq, Sq) each row's share of the LSE budget, computed on the host
     * (whichever pass made the other budgets) the first time a backend that declares the
     * recipe is judged on the case, NULL before; lse_rowsum_on: the backend judged now
     * declares it (af_judge sets it for that backend's runs and clears it after), so the
     * share joins the LSE rows' per-kernel terms (af_criterion_extra_terms) of that
     * backend only. */
    double *lse_rowsum;
    bool lse_rowsum_on;
} af_criterion_terms;

/* Fill t from the problem's exact inputs and the oracle's exact outputs (backward when
 * exact->dq is set). dtype: the case's (P and dS round to it; fp16 adds subnormals).
 * Returns 0, or -1 when out of memory (t left empty: the criterion then runs without
 * element and bias checks). */
int af_criterion_terms_compute(const af_oracle_problem *p, const af_outputs *exact, af_dtype dtype,
                               af_criterion_terms *t);
void af_criterion_terms_free(af_criterion_terms *t);

/* lse_rowsum_dtype_p (criterion_rowsum.c states the derivation): out[r] (B, Hq, Sq), each
 * visible row's share min(W, 5 sigma) of the LSE error a row sum of P rounded to dtype
 * (fp16, bf16) puts on it; 0 for rows not judged. 0, or -1 (another dtype, out of memory). */
int af_criterion_lse_rowsum_share(const af_oracle_problem *p, const double *lse_exact, af_dtype dtype, double *out);
/* One row's share: P[k] = exp(s_k - m*), q[k] = exp(s_k - lse) of its n terms, exp_m_lse =
 * exp(m* - lse), u the dtype's half unit; scratch: room for n (double, double) pairs. */
double af_criterion_lse_rowsum_row(const double *P, const double *q, int n, double exp_m_lse, bool fp16, double u,
                                   void *scratch);
/* t->lse_rowsum from the problem unless already there (t must have the LSE budgets). 0, or
 * -1 (no LSE budgets, out of memory: no share, the LSE judged as without the recipe). */
int af_criterion_lse_rowsum_ensure(const af_oracle_problem *p, const double *lse_exact, af_dtype dtype,
                                   af_criterion_terms *t);

/* Where the terms are computed: the host loop (criterion.c) or the GPU pass
 * (judge/criterion/criterion_gpu.h: the same formulas; cases without features). */
typedef enum { AF_TERMS_HOST, AF_TERMS_GPU } af_terms_where;
/* af_criterion_terms_compute picks the GPU pass from this much work (B Hq Sq Skv (Dqk +
 * Dv)) on, where it serves: below it the host loop is as fast as the transfers. */
#define AF_CRITERION_TERMS_GPU_MIN_WORK 4e6
/* Does the GPU pass serve p of dtype here (no features, head dims, a usable GPU; not the
 * fp8 dtypes, whose O and dV budgets need the P cast's sums of squares only the host pass
 * forms: criterion_fp8.c)? */
bool af_criterion_terms_gpu_serves(const af_oracle_problem *p, af_dtype dtype);
/* af_criterion_terms_compute at a given place: 0, -1 (out of memory), or 1 when `where`
 * is the GPU and it does not serve the case (t left empty). A GPU pass that fails midway
 * is redone on the host. gpu_seconds (may be NULL): the GPU pass's wall time. */
int af_criterion_terms_compute_on(const af_oracle_problem *p, const af_outputs *exact, af_dtype dtype,
                                  af_terms_where where, af_criterion_terms *t, double *gpu_seconds);

/* The score error an approximate tanh may put on a softcapped row (verdict.h): with
 * r_abs >= max_j |r_ij| of the row's raw scores, AF_SOFTCAP_TANH_REL c tanh(r_abs / c) >=
 * max_j AF_SOFTCAP_TANH_REL |t_ij|; 0 without softcap (softcap 0). */
double af_criterion_softcap_err(double softcap, double r_abs);
/* score_mod (verdict.h AF_SCORE_MOD_*), for a row whose raw scores have |r_ij| <= r_abs:
 *   gain:      max(1, max |f'(r)|), the factor by which an error of r moves t = f(r)
 *              (squared: max(1, 2 r_abs); trig, trig2: 1; 1 without a score_mod);
 *   err:       the error of the kernel's own fp32 f on each score beside r's (squared:
 *              AF_SCORE_MOD_SQR_REL r_abs^2; trig: 2 AF_SCORE_MOD_TRIG_ABS, cos then sin
 *              with |sin'| <= 1; trig2: 2 AF_SCORE_MOD_TRIG_ABS + 2^-24, cos, sin and
 *              their product); 0 without;
 *   tan_err:   the error of its tan(b) for sequence b, AF_SCORE_MOD_TRIG_ABS (1 + tan^2 b)
 *              (tan = sin / cos with each off by the allowance); one constant of every
 *              row of the sequence: it moves the LSE only; 0 for squared and without;
 *   dgrad_err: the error of its f'(r) given r's error acc_r (|f''| <= 2 for every form:
 *              2 acc_r) and its fp32 functions (trig, trig2: 3 AF_SCORE_MOD_TRIG_ABS +
 *              2^-24); 0 without. dR = dS f' is off by |dS| times it. */
double af_criterion_score_mod_gain(af_score_mod mod, double r_abs);
double af_criterion_score_mod_err(af_score_mod mod, double r_abs);
double af_criterion_score_mod_tan_err(af_score_mod mod, int b);
double af_criterion_score_mod_dgrad_err(af_score_mod mod, double acc_r);

/* The LSE budget of one visible query row (verdict.h): the fp32 score's error
 * af_score_acc_unit(Dqk) A_i, A_i = max_j |scale| sum_d |q_d k_jd| over the n_i keys it
 * sees, one fp32 rounding of the LSE and the sum's 2^-24 sqrt(n_i):
 *   kappa_i = 2^-21 + af_score_acc_unit(Dqk) A_i + 2^-24 sqrt(n_i)                      */
double af_criterion_lse_kappa(int head_dim_qk, double score_abs, int n_keys);
/* A case too large for af_criterion_terms_compute: t gets kappa[AF_T_LSE] alone, from
 * score_abs ((B, Hq, Sq) A_i, af_oracle_score_abs) and each row's visible key count, and
 * lse_only. Returns 0, or -1 when out of memory (t left empty). */
int af_criterion_lse_rows_only(const af_case *c, const double *score_abs, af_criterion_terms *t);

/* ---- the stored O's share of the row floors of large cases (criterion_large.c) ---- */
/* Visible pairs x Dqk (af_problem_visible_pairs) above which af_criterion_stored_o_rows
 * computes nothing. */
#define AF_STORED_O_ROWS_MAX_WORK 4e9
/* A backward case too large for af_criterion_terms_compute: t (lse_only) gets row_kq,
 * key_wq and the dense dO, Q, exact O they are used with. 0; 1 when not computed (no
 * backward, above AF_STORED_O_ROWS_MAX_WORK); -1 out of memory (t unchanged). */
int af_criterion_stored_o_rows(const af_oracle_problem *p, const af_outputs *exact, af_criterion_terms *t);
/* Per row of dQ (B, Hq, Sq) or per key of dK (B, Hkv, Skv): the stored O's share of the
 * row floor, dD_i kq_i or max_i dD_i wq_j, from the O the kernel stored (caller frees);
 * NULL for other tensors, without row_kq or out of memory. */
double *af_criterion_stored_o_row_floor(const af_case *c, af_tensor_id id, const af_criterion_terms *t,
                                        const double *kernel_o);

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
                         const double *exact, const double *kernel_o, const double *kernel_lse,
                         const af_criterion_terms *terms, double unit, double grad_mass, af_criterion_result *out);

/* ---- the stored LSE's growth (criterion_lse.c) ---- */

/* x_i (above) of every query row, (B, Hq, Sq), from the kernel's dense LSE (NULL: e_i =
 * 0; a non-finite LSE_kernel,i gives x_i = 0: that LSE is a finding of its own).
 * Returns a malloc'd array, or NULL when every x_i is 0 (or out of memory). */
double *af_criterion_lse_growth(const af_case *c, const af_criterion_terms *t, const double *kernel_lse);

/* The growth's share of tensor id's element budgets (dense like the tensor; caller
 * frees) from x (af_criterion_lse_growth); stored_o: the stored-O term of dQ or dK
 * (dense, or NULL), kernel_o: the kernel's dense O (dD_i of dK; NULL: 0). NULL for LSE or
 * without budgets. */
double *af_criterion_lse_growth_term(const af_case *c, af_tensor_id id, const af_criterion_terms *t, const double *x,
                                     const double *stored_o, const double *kernel_o);

/* Rows of a backward whose fp32 range is lost (delta_i + ln F_i >= ln FLT_MAX): rows
 * (B, Hq, Sq) and keys (B, Hkv, Skv) they see are set to 1 (others 0). Returns the
 * number of such rows (0 without budgets or backward). */
int af_criterion_unresolved(const af_case *c, const af_criterion_terms *t, const double *kernel_lse,
                            unsigned char *rows, unsigned char *keys);

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
/* The same with ref_dev and exact_dev: device copies of ref and exact, bit for bit
 * (NULL: none), which the device's pass reads in place of uploads. */
void af_criterion_row_summaries_at(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                                   const double *ref_dev, const double *exact, const double *exact_dev,
                                   const af_criterion_terms *terms, const double *dterm, double unit,
                                   af_row_summary *rows);
/* The verdict of tensor id from its row summaries (rows (B * H * S)), exactly as
 * af_criterion_tensor: rows past the lengths and fully masked query rows are skipped. */
void af_criterion_decide(const af_case *c, af_tensor_id id, const af_row_summary *rows, bool have_ref,
                         const af_criterion_terms *terms, double unit, double grad_mass, af_criterion_result *out);
/* Every element's budget beyond its kappa, dense like tensor id (caller frees), or NULL:
 * the stored O's share (dQ, dK) plus the stored LSE's growth (criterion_lse.c), from the
 * kernel's dense O and LSE; the dterm af_criterion_row_summaries takes. */
double *af_criterion_extra_terms(const af_case *c, af_tensor_id id, const af_criterion_terms *terms,
                                 const double *kernel_o, const double *kernel_lse);
/* The kernel's D error of each query row, dD_i = |dO_i . (O_kernel,i - O_exact,i)| into dd
 * (B, Hq, Sq), and its max over each (b, hk) into group_max[b Hkv + hk] (zeroed by the
 * caller); from t's dout and o_exact. Each dD_i is carried by the kernel's own P of the row,
 * off from the exact P the shares sum by up to rho_i relative, so dd holds dD_i (1 + rho_i)
 * (t->rho where it is set; rho_i is 2^-21-small unless |LSE_i| or the scores are huge). */
void af_criterion_stored_o_dd(const af_case *c, const af_criterion_terms *t, const double *kernel_o, double *dd,
                              double *group_max);
/* The stored O's share of the budget of dQ (id DQ) or dK (DK), dense like the tensor
 * (caller frees), or NULL (criterion.c). */
double *af_criterion_stored_o_term(const af_case *c, af_tensor_id id, const af_criterion_terms *t,
                                   const double *kernel_o);

/* ---- fp8_e4m3 (criterion_fp8.c) ---- */

/* The floor of one fp8 row: max(unit maxo + step / 2 + cancel, 2^-24) (verdict.h). */
double af_criterion_fp8_row_floor(double unit, double maxo, double step, double cancel);
/* The per-row verdict of fp8 tensor id (O, dQ, dK, dV) from its row summaries (rows (B
 * * H * S), no term fields): each row's allowance is min(2 err_ref(row) + floor(row),
 * tensor_allowed) (8 floor(row) without a reference), tensor_allowed the per-tensor
 * rule's (0: no cap); step: the output's E4M3 subnormal step; grad_mass: the tensor's
 * term magnitude (gradients' cancellation floor); stored_o: the kernel's stored-O term
 * of dQ or dK (af_criterion_stored_o_term; dense like the tensor) or NULL, its row
 * maximum added to the row's floor (times (1 + u/2)^2: dS's and the output's E4M3
 * casts); cast_mass: the tensor's term mass (terms->mass, dense) or NULL, and cast_sq its
 * sum of squared terms (terms->cast_sq: O and dV) or NULL: the row maximum of the share of
 * the E4M3 cast of each term's first operand added (criterion_fp8.c cast_share: u/2 of the
 * mass for dS in dQ and dK; for P in O and dV the smaller of 2^-4 of the mass and 5
 * standard deviations of independent casts); score_o: O's score-error share
 * (terms->fp8_score_o, dense like O) or NULL, its row maximum added. The cap grows by the
 * largest sum of these over the tensor (the shares the per-tensor rule lacked). Rows past
 * the lengths and fully masked query rows are skipped. */
void af_criterion_fp8_decide(const af_case *c, af_tensor_id id, const af_row_summary *rows, bool have_ref,
                             double tensor_allowed, double unit, double step, double grad_mass, const double *stored_o,
                             const double *cast_mass, const double *cast_sq, const double *score_o,
                             af_criterion_result *out);

#endif
