/* test_criterion_fp8_rows.c — the fp8_e4m3 per-row rule (criterion_fp8.c) at its edge: on a
 * b1 h1 s4 d8 O tensor whose rows differ in magnitude by 2^6, each row's error just
 * below its own allowance (2 err_ref(row) + E4M3 unit at the row's max + half a
 * subnormal step) passes and just above it fails, while the per-tensor rule (the cap)
 * would pass every such row but the largest; a row whose own allowance exceeds the cap
 * is judged at the cap (the rule is never looser than the per-tensor one). */
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
    af_criterion_fp8_decide(c, AF_T_O, rows, true, cap, 0x1p-3, step, 0, NULL, NULL, &out);
    return out;
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
    CHECK_DONE("test_criterion_fp8_rows");
}
