/* judge/criterion/row_terms.h — the element check and the term sums of one row with
 * budgets (criterion.h, verdict.h rule 2), for the host (criterion_rows.c) and the device
 * (gpu/criterion_rows.cu): one function, built without fused multiply-adds on both
 * sides, so a row summarised on the device has the host's bits.
 *
 * kernel, ref (NULL: none), exact, kappa, mass (NULL: 0), dterm (NULL: 0) are the row's
 * (D) values; lse: the row is LSE's (its budget sums only); unit: the output's unit at
 * magnitude 1; min_normal, sub_half: the output storage's smallest normal and half its
 * subnormal step (judge/tolerance.h). Adds to s (after af_row_summary_row):
 *   maxkappa, sumkappa  over the finite kernel values of kappa + dterm
 *   maxmass             of mass
 *   sub_abs             sub_half per element whose exact value is a nonzero subnormal
 *   el_*                the element check's worst element:
 *                         eps = u/2 mass + kappa + dterm + u/2 |o|
 *                         allowed = max(2 |ref - o| + 2 eps (8 eps without ref), 2^-24)
 */
#ifndef ATTNFUZZ_JUDGE_CRITERION_ROW_TERMS_H
#define ATTNFUZZ_JUDGE_CRITERION_ROW_TERMS_H

#include "kernels/row_summary.h"

/* The element rule's allowance (verdict.h rule 2) of an element with exact value o, term
 * mass ma and budget ka (kappa plus the per-kernel shares), against the reference's error
 * er (have_ref false: no reference, 8 eps): max(2 er + 2 eps, 2^-24),
 * eps = u/2 ma + ka + u/2 |o|. The check below and compare.c's overflow reach use it. */
AF_HD double af_element_allowed(double o, double ka, double ma, double unit, bool have_ref, double er) {
    double eps = 0.5 * unit * ma + ka + 0.5 * unit * fabs(o);
    return fmax(have_ref ? 2.0 * er + 2.0 * eps : 8.0 * eps, 0x1p-24);
}

AF_HD void af_row_terms_row(const double *kernel, const double *ref, const double *exact, const double *kappa,
                            const double *mass, const double *dterm, int D, bool lse, double unit, double min_normal,
                            double sub_half, af_row_summary *s) {
    for (int d = 0; d < D; d++) {
        double o = exact[d], x = kernel[d];
        if (!isfinite(x)) continue;
        double ek = fabs(x - o), er = ref && isfinite(ref[d]) ? fabs(ref[d] - o) : 0;
        double ka = kappa[d] + (dterm ? dterm[d] : 0), ma = mass ? mass[d] : 0;
        s->maxkappa = fmax(s->maxkappa, ka);
        s->sumkappa += ka;
        s->maxmass = fmax(s->maxmass, ma);
        if (lse) continue;
        /* an element the bias sums (sign(o) != 0) whose output is subnormal */
        if (o != 0 && fabs(o) < min_normal) s->sub_abs += sub_half;
        double ea = af_element_allowed(o, ka, ma, unit, ref != NULL, er);
        double ratio = ek / ea;
        if (ratio > s->el_ratio) {
            s->el_ratio = ratio;
            s->el_err = ek;
            s->el_allowed = ea;
            s->el_err_ref = er;
            s->el_d = d;
            s->el_kernel = x;
            s->el_exact = o;
        }
    }
}

#endif
