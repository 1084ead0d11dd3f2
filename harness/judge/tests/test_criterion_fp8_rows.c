/* test_criterion_fp8_rows.c — the fp8_e4m3 per-row rule (criterion_fp8.c) at its edge: on a
 * b1 h1 s4 d8 O tensor whose rows differ in magnitude by 2^6, each row's error just
 * below its own allowance (2 err_ref(row) + E4M3 unit at the row's max + half a
 * subnormal step) passes and just above it fails, while the per-tensor rule (the cap)
 * would pass every such row but the largest; a row whose own allowance exceeds the cap
 * is judged at the cap (the rule is never looser than the per-tensor one).
 * P's E4M3 cast in O (cast_mass, cast_sq: criterion_fp8.c cast_share), on row 0:
 *   - a row whose reference error is small by chance: the allowance is the share, the
 *     smaller of 2^-4 of the term mass and 5 (2^-4 / sqrt 3) sqrt(sum of squared terms),
 *     plus the floor; 0.98 x passes, 1.02 x fails, for both branches of the smaller;
 *   - a row whose doubled reference error exceeds the share: the allowance is the old
 *     one, 2 err_ref + floor (the share does not loosen it). */
#include "judge/criterion/criterion.h"
#include "model/case.h"
#include "util/check.h"

#include <math.h>
#include <string.h>

static af_case small_case(void) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse("dtype = fp8_e4m3\nseqlen = 4\nhead_dim = 8\n", "fp8", &c, &err) == 0, "%s: %s", err.field,
              err.message);
    return c;
}

/* rows (4): maxo 2^(-6 r), err_ref maxo / 32, err set to factor * the row's allowance
 * on row `planted` (others 0); returns the decision. */
static af_criterion_result judge(const af_case *c, int planted, double factor, double cap, double step) {
    af_row_summary rows[4];
    memset(rows, 0, sizeof rows);
    for (int r = 0; r < 4; r++) {
        rows[r].n = 8;
        rows[r].maxo = ldexp(1.0, -6 * r);
        rows[r].err_ref = rows[r].maxo / 32;
    }
    double own = 2 * rows[planted].err_ref + af_criterion_fp8_row_floor(0x1p-3, rows[planted].maxo, step, 0);
    rows[planted].err = factor * fmin(own, cap);
    af_criterion_result out;
    af_criterion_fp8_decide(c, AF_T_O, rows, true, cap, 0x1p-3, step, 0, NULL, NULL, NULL, NULL, &out);
    return out;
}

/* Row 0 of O with P's cast share: every element's mass m and sum of squares q, err_ref
 * e_ref, err factor x the allowance `expect`; returns the decision. */
static af_criterion_result judge_cast(const af_case *c, double m, double q, double e_ref, double expect, double factor,
                                      double step) {
    af_row_summary rows[4];
    memset(rows, 0, sizeof rows);
    rows[0].n = 8;
    rows[0].maxo = 0.04;
    rows[0].err_ref = e_ref;
    rows[0].err = factor * expect;
    double mass[32], sq[32];
    for (int e = 0; e < 32; e++) mass[e] = e < 8 ? m : 0, sq[e] = e < 8 ? q : 0;
    af_criterion_result out;
    af_criterion_fp8_decide(c, AF_T_O, rows, true, 0, 0x1p-3, step, 0, NULL, mass, sq, NULL, &out);
    return out;
}

static void cast_share_edges(const af_case *c, double step) {
    double floor0 = af_criterion_fp8_row_floor(0x1p-3, 0.04, step, 0);
    struct {
        const char *what;
        double m, q, e_ref, share;
    } k[3] = {
        /* a short row that cancels (d = 1, few keys): 2^-4 of the mass is the smaller */
        {"worst case", 0.8, 0.09, 0.001, 0x1p-4 * 0.8},
        /* many keys: 5 sigma of independent casts is the smaller */
        {"5 sigma", 0.8, 0.0004, 0.001, 5 * 0x1p-4 / sqrt(3.0) * 0.02},
        /* the reference's doubled error above the share: the old allowance */
        {"reference", 0.8, 0.0004, 0.05, 5 * 0x1p-4 / sqrt(3.0) * 0.02},
    };
    for (int i = 0; i < 3; i++) {
        double expect = (i < 2 ? k[i].share : 2 * k[i].e_ref) + floor0;
        af_criterion_result lo = judge_cast(c, k[i].m, k[i].q, k[i].e_ref, expect, 0.98, step);
        af_criterion_result hi = judge_cast(c, k[i].m, k[i].q, k[i].e_ref, expect, 1.02, step);
        CHECK_MSG(fabs(hi.allowed - expect) <= 1e-12 * expect, "%s: allowance %.9g, expected %.9g", k[i].what,
                  hi.allowed, expect);
        CHECK_MSG(lo.ratio <= 1 && hi.ratio > 1 && hi.row == 0, "%s: 0.98x ratio %.4f, 1.02x ratio %.4f", k[i].what,
                  lo.ratio, hi.ratio);
        printf("P's cast, %s: allowance %.6g (share %.6g, 2 err_ref %.6g): 0.98x ratio %.3f passes, 1.02x ratio "
               "%.3f fails\n",
               k[i].what, hi.allowed, k[i].share, 2 * k[i].e_ref, lo.ratio, hi.ratio);
    }
}

int main(void) {
    af_case c = small_case();
    double step = 0x1p-9 * 0x1p-12;                  /* O's descale 2^-12 */
    double tensor_allowed = 2 * (1.0 / 32) + 0x1p-3; /* the per-tensor rule of these rows */
    for (int r = 0; r < 4; r++) {
        af_criterion_result lo = judge(&c, r, 1 - 1e-9, tensor_allowed, step);
        af_criterion_result hi = judge(&c, r, 1 + 1e-9, tensor_allowed, step);
        CHECK_MSG(lo.ratio <= 1, "row %d: an error just below its allowance fails (ratio %.12g)", r, lo.ratio);
        CHECK_MSG(hi.ratio > 1 && hi.row == r, "row %d: an error just above its allowance passes (ratio %.12g)", r,
                  hi.ratio);
        CHECK_MSG(hi.check == AF_CHECK_ROW && hi.elements == 32, "row %d: check %d, %lld elements", r, (int)hi.check,
                  hi.elements);
        if (r > 0) /* the per-tensor rule would pass this error: the row rule is the finer one */
            CHECK_MSG(hi.err < tensor_allowed, "row %d: err %g not below the per-tensor allowance", r, hi.err);
        printf("row %d (max |O| 2^%d): allowance %.6g, ratio %.9f below and %.9f above it\n", r, -6 * r, hi.allowed,
               lo.ratio, hi.ratio);
    }
    /* a cap below row 0's own allowance: judged at the cap */
    double cap = 0.1;
    af_criterion_result hi = judge(&c, 0, 1 + 1e-9, cap, step);
    CHECK_MSG(hi.allowed == cap && hi.ratio > 1, "capped row: allowed %g (cap %g), ratio %g", hi.allowed, cap,
              hi.ratio);
    cast_share_edges(&c, step);
    CHECK_DONE("test_criterion_fp8_rows");
}
