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

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include "model/numeric.h" /* AF_HD: host and device */

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

/* The summary of one row without term fields: kernel, ref (NULL: none), exact each (D),
 * D >= 1. One function for the host (judge/criterion/criterion_rows.c) and the device
 * (kernels/compare_gpu.cu, judge/criterion/gpu/): summed in order d = 0, 1, ..., built
 * without fused multiply-adds on both sides, so both give the same bits. */
AF_HD void af_row_summary_row(const double *kernel, const double *ref, const double *exact, int D, af_row_summary *s) {
    memset(s, 0, sizeof *s);
    s->el_ratio = -1;
    s->kernel_first = kernel[0];
    s->exact_first = exact[0];
    for (int d = 0; d < D; d++) {
        double o = exact[d], x = kernel[d];
        bool ref_ok = ref && isfinite(ref[d]);
        if (isfinite(o)) {
            s->lse_abs = fmax(s->lse_abs, fabs(o));
            if (ref_ok) s->lse_err_ref = fmax(s->lse_err_ref, fabs(ref[d] - o));
        }
        if (!isfinite(x)) continue;
        double ek = fabs(x - o), er = ref_ok ? fabs(ref[d] - o) : 0;
        if (ek > s->err || s->n == 0) {
            s->err = fmax(s->err, ek);
            s->worst_d = d;
        }
        if (er > s->err_ref) s->err_ref = er;
        if (fabs(o) > s->maxo) s->maxo = fabs(o);
        s->n++;
        double sg = o > 0 ? 1.0 : o < 0 ? -1.0 : 0.0;
        s->beta_k += (x - o) * sg;
        if (ref_ok) s->beta_ref += (ref[d] - o) * sg;
        s->o2 += o * o;
    }
    s->kernel_at = kernel[s->worst_d];
    s->exact_at = exact[s->worst_d];
}

#endif
