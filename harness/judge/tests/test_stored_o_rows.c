/* test_stored_o_rows.c — the stored O's share of the gradients' row floors in a bf16 case
 * too large for the element budgets (judge/criterion/criterion_large.c), at its edge.
 *
 * The kernel here is what a backward from the stored O computes exactly: its O is the
 * exact O moved by 0.9 of O's own row allowance (unit max |O_i|) in the direction of
 * sign(dO), the largest D error dD_i = dO_i . (O_kernel - O_exact) an O that passes can
 * carry, and its gradients are the exact ones for that D:
 *   dQ_i = dQ_exact,i - scale dD_i sum_j P_ij k_j,  dK_j = dK_exact,j - scale sum_i P_ij dD_i q_i
 * Everything the test expects is recomputed here from the dense inputs and the oracle's
 * exact outputs (P_ij = exp(scale q_i.k_j - LSE_i), no mask):
 *  1. the rows pass, and without the share at least one dQ row and one dK key would not
 *     (the share is needed: the error is above the floor it had before);
 *  2. the judge's ratio equals max_r err_r / A_r with A_r recomputed here
 *     (A_r = unit max|exact row| + 2^-18 M + share_r);
 *  3. one dQ row and one dK key moved to 1.02 x A_r are a mismatch at that row or key,
 *     0.98 x A_r passes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "judge/compare.h"
#include "judge/runner.h"
#include "judge/tolerance.h"
#include "judge/verdict.h"
#include "util/check.h"

#define B 1
#define H 2
#define S 256
#define D 192

static size_t at(int b, int h, int s) { return ((size_t)b * H + h) * S + s; }

typedef struct {
    double allowed[B * H * S]; /* per dQ row / dK key: A_r recomputed here */
    double err[B * H * S];     /* per row: max_d |kernel - exact| */
} rows_t;

static double judge(const af_prepared *p, const af_outputs *k, af_tensor_id id, af_verdict *v) {
    af_verdict_init(v, "test");
    af_compare_outputs(&p->c, k, &p->oracle.out, &p->oracle, &p->terms, v);
    return v->stats[id].ratio;
}

/* The worst row ratio err / A over rows other than skip (-1: all); *wr its row. */
static double worst(const rows_t *r, int skip, int *wr) {
    double w = -1;
    for (int x = 0; x < B * H * S; x++)
        if (x != skip && r->err[x] / r->allowed[x] > w) {
            w = r->err[x] / r->allowed[x];
            *wr = x;
        }
    return w;
}

int main(void) {
    af_case c;
    af_error e;
    char text[256];
    snprintf(text, sizeof text,
             "dtype = bf16\nbatch = %d\nheads = %d\nseqlen = %d\nhead_dim = %d\nmask = none\nbackward = yes\n"
             "seed = 31\n",
             B, H, S, D);
    CHECK_MSG(af_case_parse(text, "stored_o", &c, &e) == 0, "%s: %s", e.field, e.message);
    af_runner run;
    memset(&run, 0, sizeof run);
    af_oracle_opts_default(&run.oracle);
    af_prepared p;
    char why[256];
    CHECK_MSG(af_prepare(&run, &c, &p, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(!p.terms.ready && p.terms.lse_only && p.terms.row_kq && p.terms.key_wq,
              "the case must be judged without element budgets, with the stored-O rows (ready %d lse_only %d)",
              p.terms.ready, p.terms.lse_only);
    const af_inputs *in = &p.inputs;
    const af_outputs *ex = &p.oracle.out;
    double scale = af_case_scale(&p.c);

    /* the kernel: O moved by 0.9 unit max|O_i| along sign(dO); gradients exact for its D */
    af_outputs k;
    CHECK(af_outputs_alloc(&k, &p.c) == 0);
    size_t n = (size_t)B * H * S * D;
    memcpy(k.lse, ex->lse, (size_t)B * H * S * sizeof(double));
    memcpy(k.dv, ex->dv, n * sizeof(double)); /* dV does not depend on D */
    double uo = af_output_unit(&p.c, AF_T_O);
    double dd[B * H * S]; /* signed dD_i */
    for (int h = 0; h < H; h++)
        for (int i = 0; i < S; i++) {
            size_t r = at(0, h, i);
            double m = 0, s = 0;
            for (int d = 0; d < D; d++) m = fmax(m, fabs(ex->o[r * D + d]));
            for (int d = 0; d < D; d++) {
                double g = in->dout[r * D + d];
                k.o[r * D + d] = ex->o[r * D + d] + (g > 0 ? 0.9 : g < 0 ? -0.9 : 0) * uo * m;
                s += g * (k.o[r * D + d] - ex->o[r * D + d]);
            }
            dd[r] = s;
        }
    /* P, and the kernel's gradients; kq_i, wq_j: the shares' weights */
    static double kq[B * H * S], wq[B * H * S], col[B * H * S * D];
    memcpy(k.dq, ex->dq, n * sizeof(double));
    memcpy(k.dk, ex->dk, n * sizeof(double));
    for (int h = 0; h < H; h++)
        for (int i = 0; i < S; i++) {
            size_t r = at(0, h, i);
            double acc[D];
            memset(acc, 0, sizeof acc);
            for (int j = 0; j < S; j++) {
                size_t kr = at(0, h, j); /* heads_kv = heads_q */
                double s = 0;
                for (int d = 0; d < D; d++) s += in->q[r * D + d] * in->k[kr * D + d];
                double pij = exp(scale * s - ex->lse[r]);
                for (int d = 0; d < D; d++) {
                    k.dq[r * D + d] -= scale * dd[r] * pij * in->k[kr * D + d];
                    k.dk[kr * D + d] -= scale * pij * dd[r] * in->q[r * D + d];
                    acc[d] += pij * fabs(in->k[kr * D + d]);
                    col[kr * D + d] += pij * fabs(in->q[r * D + d]);
                }
            }
            for (int d = 0; d < D; d++) kq[r] = fmax(kq[r], fabs(scale) * acc[d]);
        }
    for (int h = 0; h < H; h++) {
        double gmax = 0;
        for (int i = 0; i < S; i++) gmax = fmax(gmax, fabs(dd[at(0, h, i)]));
        for (int j = 0; j < S; j++) {
            size_t kr = at(0, h, j);
            for (int d = 0; d < D; d++) wq[kr] = fmax(wq[kr], fabs(scale) * col[kr * D + d]);
            wq[kr] *= gmax; /* the key's share: max_i dD_i over its group times wq_j */
        }
    }

    af_tensor_id ids[2] = {AF_T_DQ, AF_T_DK};
    double *kern[2] = {k.dq, k.dk};
    const double *exact[2] = {ex->dq, ex->dk};
    double mass[2] = {p.oracle.grad.dq, p.oracle.grad.dk};
    static rows_t rows[2];
    for (int t = 0; t < 2; t++) {
        double u = af_output_unit(&p.c, ids[t]), need = -1;
        for (int r = 0; r < B * H * S; r++) {
            double m = 0, err = 0;
            for (int d = 0; d < D; d++) {
                m = fmax(m, fabs(exact[t][r * D + d]));
                err = fmax(err, fabs(kern[t][r * D + d] - exact[t][r * D + d]));
            }
            double share = t == 0 ? fabs(dd[r]) * kq[r] : wq[r];
            double before = u * m + 0x1p-18 * mass[t];
            rows[t].allowed[r] = before + share;
            rows[t].err[r] = err;
            need = fmax(need, err / before);
        }
        int wr = 0;
        double expect = worst(&rows[t], -1, &wr);
        af_verdict v;
        double got = judge(&p, &k, ids[t], &v);
        CHECK_MSG(need > 1, "%s: the error is within the floor without the share (%.3f): the test shows nothing",
                  af_tensor_name(ids[t]), need);
        CHECK_MSG(v.n_findings == 0 && got <= 1, "%s: a backward from the stored O judged a finding (ratio %.3f)",
                  af_tensor_name(ids[t]), got);
        CHECK_MSG(fabs(got - expect) <= 1e-9 * expect, "%s: ratio %.12g, recomputed %.12g", af_tensor_name(ids[t]), got,
                  expect);
        printf("%s: backward from an O moved 0.9 of its allowance: ratio %.3f (%.2f x the floor without the share)\n",
               af_tensor_name(ids[t]), got, need);
        /* the edge, on the row with the largest share */
        int er = 0;
        for (int r = 0; r < B * H * S; r++)
            if (rows[t].allowed[r] - rows[t].allowed[er] > 0) er = r;
        int other = 0;
        CHECK_MSG(worst(&rows[t], er, &other) < 0.97, "%s: another row's ratio leaves no room for the edge",
                  af_tensor_name(ids[t]));
        double keep = kern[t][er * D];
        for (int f = 0; f < 2; f++) {
            double x = f ? 1.02 : 0.98;
            kern[t][er * D] = exact[t][er * D] + x * rows[t].allowed[er];
            got = judge(&p, &k, ids[t], &v);
            if (f) {
                CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == ids[t] &&
                              v.findings[0].row == er % S && v.findings[0].h == er / S,
                          "%s: 1.02 x the allowance on row %d not found there (ratio %.3f)", af_tensor_name(ids[t]), er,
                          got);
            } else {
                CHECK_MSG(v.n_findings == 0, "%s: 0.98 x the allowance judged a finding (ratio %.3f)",
                          af_tensor_name(ids[t]), got);
            }
            printf("%s: row %d at %.2f x its allowance %.4g (share %.4g): ratio %.3f -> %s\n", af_tensor_name(ids[t]),
                   er, x, rows[t].allowed[er], t == 0 ? fabs(dd[er]) * kq[er] : wq[er], got,
                   v.n_findings ? "mismatch" : "pass");
        }
        kern[t][er * D] = keep;
    }
    af_outputs_free(&k);
    af_prepared_free(&p);
    CHECK_DONE("test_stored_o_rows");
}
