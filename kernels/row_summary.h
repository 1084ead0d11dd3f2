/* row_summary.h — what the criterion needs to know about one row of one output tensor
 * (plain C, shared by the judge's host path, judge/criterion/criterion.c, and the device path,
 * kernels/compare_gpu.cu, so both fill the same struct the same way).
 *
 * A row is the last axis of a dense (B, H, S, D) tensor at fixed (b, h, s) (criterion.h).
 * Over the row's elements d whose kernel value x_d is finite, with exact value o_d and
 * reference value r_d (ref terms only where r_d is finite):
 *   n          how many such elements
 *   err        max |x_d - o_d|; worst_d the first d attaining it (0 when n = 0)
 *   err_ref    max |r_d - o_d|;  maxo = max |o_d|
 *   beta_k     sum_d (x_d - o_d) sign(o_d); beta_ref the same for r; o2 = sum_d o_d^2
 *              (summed in order d = 0, 1, ..., no fused multiply-add)
 *   kernel_at, exact_at   x and o at worst_d; kernel_first, exact_first at d = 0
 *   lse_abs, lse_err_ref  over every d whose o_d is finite (kernel finite or not):
 *              max |o_d| and max |r_d - o_d|; the LSE row check takes these over the
 *              tensor (criterion.c)
 * With per-element term budgets (host only, small cases; 0 / -1 otherwise):
 *   maxkappa, sumkappa    max and sum of the elements' kappa (+ the stored-O term)
 *   maxmass               max of the elements' term mass (criterion.h: mass[e])
 *   sub_abs               sum over the elements with 0 < |o_d| < the output's smallest
 *                         normal of half its subnormal step (judge/tolerance.h): the
 *                         absolute rounding of a correctly rounded output there, which
 *                         the row bias sum takes at most (verdict.h rule 3)
 *   el_*                  the element check's worst element of the row (el_ratio -1: none)
 * Without them, set by the judge on the host after summarising (0 otherwise):
 *   floor_extra           the stored O's share of the row floor (judge/criterion/criterion_large.c)
 */
#ifndef ATTNFUZZ_KERNELS_ROW_SUMMARY_H
#define ATTNFUZZ_KERNELS_ROW_SUMMARY_H

typedef struct {
    int n, worst_d;
    double err, err_ref, maxo;
    double kernel_at, exact_at, kernel_first, exact_first;
    double beta_k, beta_ref, o2;
    double lse_abs, lse_err_ref;
    double maxkappa, sumkappa, maxmass, sub_abs;
    int el_d;
    double el_ratio, el_err, el_allowed, el_err_ref, el_kernel, el_exact;
    double floor_extra;
} af_row_summary;

#endif
