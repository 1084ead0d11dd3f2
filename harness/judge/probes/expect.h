/* judge/probes/expect.h — what a probe expects (internal to the probes, see common.h).
 *
 * A required change is exact: fp64 from the exact stored inputs. The bound on a correct
 * kernel's error of O_d is eps * sum_j P_j |v_jd| + ulp * |O_d| (eps: P rounded to the
 * dtype, with slack, plus the fp32 score error; ulp: the output's unit, tolerance.h),
 * of LSE 2^-10 (1 + |LSE|) plus the score error. A probe demands a move only where the
 * exact move exceeds twice such bounds plus the run-to-run tolerance.
 */
#ifndef ATTNFUZZ_JUDGE_PROBES_EXPECT_H
#define ATTNFUZZ_JUDGE_PROBES_EXPECT_H

#include "judge/probes/common.h"

/* Softmax of row (b, h, i) over keys [lo, hi] at `scale`, in fp64.
 *   o[d] = sum_j P_j v_jd, mass[d] = sum_j P_j |v_jd|  (Dv each), *lse, and the bound
 *   *score_err on the fp32 score error of a kernel: 2^-21 (Dqk + 2) scale max_j sum_d |q_d k_jd|.
 *   p (n) receives P_j when not NULL. With dropout (in->feat) every P_j above is the
 *   weighted P_j w_j (0 for a dropped key, P_j / (1 - p) for a kept one). Returns -1 on allocation failure. */
typedef struct {
    double lse, score_err;
    /* fp16: P_j rounded to fp16 underflows below 2^-14 (subnormal steps of 2^-24), up to
     * 2^-25 absolute per term, so O_d may be off by 2^-25 sum_j w_j |v_jd| whatever its
     * size (criterion.h's fp16 subnormal term); the bound over d: 2^-25 sum_j w_j max_d
     * |v_jd|. 0 for other dtypes. */
    double sub_abs;
} row_stats;
int probe_row_fp64(const probe_ctx *x, const af_mask_rule *rule, const af_inputs *in, int b, int h, int i, int lo,
                   int hi, double scale, double *o, double *mass, double *p, row_stats *rs);

/* Relative error of P (and so of O against its mass) that a correct kernel may have:
 * P's rounding to the dtype with slack, plus what the fp32 score error does to exp. */
double probe_eps(const af_case *c, double score_err);
/* Rounding of the stored O relative to its magnitude: O's unit (tolerance.h;
 * fp8_e4m3's O is E4M3). */
double probe_ulp(const af_case *c);
/* The absolute resolution of the stored O near zero: values below about this flush to 0
 * (E4M3's smallest subnormal is 2^-9, times descale_o; fp16's 2^-24; bf16's is below
 * any output that matters). A required move must exceed it too. */
double probe_out_abs(const af_case *c, const af_tensors *t);
/* Can fp32 resolve the row's scores well enough for a guarantee? (else skip the row) */
bool probe_row_checkable(const row_stats *rs);

/* The feature probe's bound on a correct kernel's error in the move O2_d - O1_d between
 * two exact rows a (O1_d = o1, mass m1, eps1) and z (o2, m2, eps2):
 *   eps1 m1 + ulp |o1| + eps2 m2 + ulp |o2| + 2 out_abs + a->sub_abs + z->sub_abs
 * (the last two: fp16's subnormal P, row_stats). */
double probe_o_margin(const row_stats *a, const row_stats *z, double eps1, double m1, double o1, double eps2, double m2,
                      double o2, double ulp, double out_abs);
/* The exact move |o2 - o1| above which O_d must move: 2 margin + 2 tol + 2^-20 (tol:
 * the run-to-run tolerance, 0 for an exact backend). */
double probe_o_threshold(double margin, double tol);
/* Must O_d move from o1 to o2 under that threshold? (false for NaN) */
bool probe_o_must_move(double o1, double o2, double threshold);

#endif
