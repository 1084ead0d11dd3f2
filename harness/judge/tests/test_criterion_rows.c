/* test_criterion_rows.c — the criterion's two halves (criterion_rows.c) as a spec.
 *
 * 1. af_row_summary_of on hand rows: the first worst element, non-finite kernel values
 *    skipped (but the LSE fields still see the exact value), signed sums on sign(exact).
 * 2. af_criterion_decide on synthetic summaries (what the GPU sends back), without term
 *    budgets: the row rule's allowance 2 err_ref + max(u maxo, 2^-24) computed by hand,
 *    the worst row and element reported, fully masked rows and rows past the lengths
 *    skipped whatever their numbers, no reference = 8 x floor, the gradients'
 *    cancellation floor, LSE's tensor-wide reference error.
 * 3. af_criterion_tensor (host, dense) = summaries then decide, on a small dense tensor.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "judge/criterion/criterion.h"
#include "judge/verdict.h"
#include "model/case.h"
#include "util/check.h"

static af_case parse(const char *text) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(text, "test_criterion_rows", &c, &err) == 0, "%s: %s", err.field, err.message);
    return c;
}

static void summary_of_hand_rows(void) {
    double exact[5] = {1.0, -2.0, 0.5, 3.0, INFINITY};
    double kernel[5] = {1.25, -2.25, NAN, 3.0, 7.0};
    double ref[5] = {1.0, -2.125, 0.5, INFINITY, 1.0};
    af_row_summary s;
    af_row_summary_of(kernel, ref, exact, 4, &s);
    CHECK(s.n == 3);                                  /* d = 2 is NaN: skipped */
    CHECK(s.err == 0.25 && s.worst_d == 0);           /* d 0 and 1 tie: the first */
    CHECK(s.err_ref == 0.125 && s.maxo == 3.0);       /* ref inf at d 3: not counted */
    CHECK(s.beta_k == 0.25 * 1 + (-0.25) * -1 + 0.0); /* both errors point away from 0 */
    CHECK(s.beta_ref == 0.125);
    CHECK(s.o2 == 1.0 + 4.0 + 9.0);
    CHECK(s.kernel_at == 1.25 && s.exact_at == 1.0 && s.kernel_first == 1.25 && s.exact_first == 1.0);
    CHECK(s.lse_abs == 3.0 && s.lse_err_ref == 0.125); /* d 2 counted: its exact is finite */
    CHECK(s.el_ratio == -1 && s.maxkappa == 0);
    /* an exact value that is not finite leaves the LSE fields alone */
    af_row_summary_of(kernel + 4, ref + 4, exact + 4, 1, &s);
    CHECK(s.lse_abs == 0 && s.lse_err_ref == 0 && s.n == 1 && isinf(s.err));
    printf("af_row_summary_of: n, worst, sums, LSE fields as specified\n");
}

/* A summary of a row with n elements, error err at d, reference error err_ref, max |o|. */
static af_row_summary row(int n, double err, int d, double err_ref, double maxo) {
    af_row_summary s;
    memset(&s, 0, sizeof s);
    s.el_ratio = -1;
    s.n = n;
    s.err = err;
    s.worst_d = d;
    s.err_ref = err_ref;
    s.maxo = maxo;
    s.lse_abs = maxo;
    s.lse_err_ref = err_ref;
    s.kernel_at = 10.0 + d; /* recognisable values */
    s.exact_at = 20.0 + d;
    return s;
}

static void decide_synthetic(void) {
    /* bottom-right causal, per sequence: b0 (s_q 4, s_kv 2) rows 0, 1 see no key, b1 (3, 2)
     * row 0 sees none and row 3 is past its length */
    af_case c = parse("dtype = fp16\nbatch = 2\nheads_q = 2\nheads_kv = 1\nseqlen_q = 4\nseqlen_kv = 2\n"
                      "seqlens_q = 4,3\nseqlens_kv = 2,2\nhead_dim = 8\nmask = padding_causal\nalign = "
                      "bottom_right\nbackward = yes\nseed = 1\n");
    const double u = 0x1p-10;
    af_row_summary o_rows[2 * 2 * 4];
    for (int r = 0; r < 16; r++) o_rows[r] = row(8, 1e-4, 0, 1e-4, 1.0);
    o_rows[0] = row(8, 1e3, 0, 0, 1.0);         /* b0 h0 r0: fully masked, never judged */
    o_rows[15] = row(8, 1e3, 0, 0, 1.0);        /* b1 h1 r3: past len_q 3, never judged */
    o_rows[4 + 3] = row(8, 5e-3, 5, 1e-3, 2.0); /* b0 h1 r3: the worst judged row */
    af_criterion_result cr;
    af_criterion_decide(&c, AF_T_O, o_rows, true, NULL, u, 0, &cr);
    double allowed = 2 * 1e-3 + u * 2.0;
    CHECK_MSG(cr.check == AF_CHECK_ROW && cr.b == 0 && cr.h == 1 && cr.row == 3 && cr.col == 5, "b%d h%d r%d c%d", cr.b,
              cr.h, cr.row, cr.col);
    CHECK_MSG(cr.ratio == 5e-3 / allowed && cr.allowed == allowed && cr.floor == u * 2.0, "ratio %.17g", cr.ratio);
    CHECK(cr.kernel_value == 15.0 && cr.oracle_value == 25.0);
    /* judged rows: b0 rows 2, 3 and b1 rows 1, 2, x2 heads */
    CHECK_MSG(cr.elements == 8 * 4 * 2, "elements %lld", cr.elements);
    printf("decide O: worst b0 h1 r3 c5 ratio %.4f = 5e-3 / (2 err_ref + u maxo); masked / padded rows skipped\n",
           cr.ratio);
    /* no reference: 8 x floor; a floor below 2^-24 is raised to it */
    o_rows[7] = row(8, 1e-6, 2, 0, 0x1p-40);
    af_criterion_decide(&c, AF_T_O, o_rows, false, NULL, u, 0, &cr);
    double worst = 0;
    for (int r = 0; r < 16; r++) {
        int b = r / 8, s = r % 4;
        if ((b == 0 && s < 2) || (b == 1 && (s == 0 || s == 3))) continue;
        double fl = fmax(u * o_rows[r].maxo, 0x1p-24), ratio = o_rows[r].err / (8 * fl);
        if (ratio > worst) worst = ratio;
    }
    CHECK_MSG(cr.ratio == worst && cr.row == 3 && cr.h == 1 && cr.b == 0, "ratio %.17g vs %.17g", cr.ratio, worst);
    printf("decide O without reference: ratio %.4f = err / (8 max(u maxo, 2^-24))\n", cr.ratio);
    /* dK: the cancellation floor AF_GRAD_CANCEL_UNIT x the tensor's term magnitude;
     * key rows are judged up to len_kv (no query-row mask on the key side) */
    af_row_summary k_rows[2 * 1 * 2];
    for (int r = 0; r < 4; r++) k_rows[r] = row(8, 1e-5, 1, 0, 0.0);
    k_rows[3] = row(8, 3e-5, 7, 0, 0.0);
    double gm = 64.0;
    af_criterion_decide(&c, AF_T_DK, k_rows, true, NULL, u, gm, &cr);
    double fl = AF_GRAD_CANCEL_UNIT * gm;
    CHECK_MSG(cr.b == 1 && cr.row == 1 && cr.col == 7 && cr.ratio == 3e-5 / fl, "dK b%d r%d ratio %.17g", cr.b, cr.row,
              cr.ratio);
    printf("decide dK: floor = 2^-18 M_dK, worst key b1 j1 d7 ratio %.4f\n", cr.ratio);
    /* LSE: the reference error and magnitude of the whole tensor serve every row */
    af_row_summary l_rows[16];
    for (int r = 0; r < 16; r++) l_rows[r] = row(1, 1e-6, 0, 0, 1.0);
    l_rows[2] = row(1, 1e-6, 0, 4e-6, 3.0); /* b0 h0 r2: the tensor's reference error, max */
    l_rows[12 + 2] = row(1, 2e-5, 0, 0, 1.0);
    af_criterion_decide(&c, AF_T_LSE, l_rows, true, NULL, 0x1p-23, 0, &cr);
    double la = 2 * 4e-6 + 0x1p-23 * 3.0;
    CHECK_MSG(cr.b == 1 && cr.h == 1 && cr.row == 2 && cr.col == -1 && cr.ratio == 2e-5 / la, "LSE b%d h%d r%d %.17g",
              cr.b, cr.h, cr.row, cr.ratio);
    printf("decide LSE: allowance 2 max_r err_ref + u max_r |LSE| over the tensor, ratio %.4f\n", cr.ratio);
}

static void tensor_equals_halves(void) {
    af_case c = parse("dtype = bf16\nbatch = 1\nheads = 2\nseqlen = 3\nhead_dim = 4\nseed = 2\n");
    double exact[24], kernel[24], ref[24];
    for (int e = 0; e < 24; e++) {
        exact[e] = sin(e + 1.0);
        ref[e] = exact[e] + ((e % 3) - 1) * 0x1p-9;
        kernel[e] = exact[e] + ((e % 5) - 2) * 0x1p-9;
    }
    kernel[13] += 0.5; /* h1 r0 d1 */
    af_criterion_result whole, halves;
    af_criterion_tensor(&c, AF_T_O, kernel, ref, exact, kernel, NULL, NULL, 0x1p-7, 0, &whole);
    af_row_summary rows[6];
    af_criterion_row_summaries(&c, AF_T_O, kernel, ref, exact, NULL, NULL, 0x1p-7, rows);
    af_criterion_decide(&c, AF_T_O, rows, true, NULL, 0x1p-7, 0, &halves);
    CHECK(whole.ratio == halves.ratio && whole.b == halves.b && whole.h == halves.h && whole.row == halves.row &&
          whole.col == halves.col && whole.check == halves.check);
    CHECK(whole.ratio > 1 && whole.h == 1 && whole.row == 0 && whole.col == 1);
    printf("af_criterion_tensor = summaries + decide: planted h1 r0 d1 found, ratio %.3f\n", whole.ratio);
}

int main(void) {
    summary_of_hand_rows();
    decide_synthetic();
    tensor_equals_halves();
    CHECK_DONE("test_criterion_rows");
}
