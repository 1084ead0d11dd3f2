/* probe_dv_subnormal.c — one fp16 dV element of a backward case, evaluated three ways on
 * the CPU from the case's own inputs (af_inputs_generate, the generator every run uses):
 *
 *   exact     dV[b, hk, j, d] = sum over the group's query heads h and visible rows i of
 *             P_hij dO_hid, P = exp(s_hij - LSE_hi), all in double (LSE in long double);
 *   bwd16     each normalised P rounded to fp16 (subnormals kept, round to nearest even),
 *             the products P16 dO (exact in fp32) summed in fp32, then stored to fp16:
 *             a backward kernel that recomputes P from the stored LSE and feeds the P^T dO
 *             GEMM fp16 operands;
 *   fwd16     the criterion's old model: the unnormalised P~ = exp(s - m_hi) <= 1 rounded
 *             to fp16, then scaled by exp(m_hi - LSE_hi), the same fp32 sum and store.
 *
 * Values are printed in units of 2^-24 (the fp16 subnormal step). Research only: no test
 * runs it (docs/criterion.md, "Subnormal P in dV", holds the figures of one finding).
 * Usage: probe_dv_subnormal CASE B HKV KEY COL
 * The case must have no feature beyond the mask rule (no bias, softcap, sink, dropout).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/case.h"
#include "model/case_mask.h"
#include "model/gen.h"
#include "model/numeric.h"
#include "model/tensors.h"

static double f16(double x) { return (double)af_f16_to_f32(af_f32_to_f16((float)x)); }

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: probe_dv_subnormal CASE B HKV KEY COL\n");
        return 2;
    }
    af_case c;
    af_error err;
    if (af_case_load(argv[1], &c, &err) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err.message);
        return 3;
    }
    af_tensors t;
    af_inputs in;
    char why[256];
    if (af_tensors_alloc(&t, &c, why, sizeof why) != 0 || af_inputs_alloc(&in, &c) != 0 ||
        af_inputs_generate(&c, &t, &in) != 0 || !in.dout) {
        fprintf(stderr, "%s: cannot generate the inputs of a backward case (%s)\n", argv[1], why);
        return 3;
    }
    int b = atoi(argv[2]), hk = atoi(argv[3]), jj = atoi(argv[4]), dd = atoi(argv[5]);
    if (b < 0 || b >= in.B || hk < 0 || hk >= in.Hkv || jj < 0 || jj >= in.Skv || dd < 0 || dd >= in.Dv) {
        fprintf(stderr, "element out of range\n");
        return 2;
    }
    af_mask_rule rule = af_mask_rule_of_case(&c);
    double scale = (double)af_case_scale(&c), u = 0x1p-24;
    int g = in.Hq / in.Hkv, lq = in.Sq, lkv = in.Skv;
    double exact = 0, hx = 0, hp = 0, hf = 0, sum_hx = 0, sum_hp = 0, sum_hf = 0; /* the head's partials */
    float acc16 = 0.0f, accf = 0.0f;
    printf("%-4s %-4s %14s %14s %14s %14s %12s\n", "h", "row", "P", "P16(bwd)", "P(fwd model)", "dO", "P/2^-14");
    for (int h = hk * g; h < (hk + 1) * g; h++, sum_hx += f16(hx), sum_hp += f16(hp), sum_hf += f16(hf), hx = hp = hf = 0)
        for (int i = 0; i < lq; i++) {
            if (!af_mask_rule_visible(rule, lq, lkv, i, jj)) continue;
            const double *q = in.q + (((size_t)b * in.Hq + h) * in.Sq + i) * in.Dqk;
            double m = -INFINITY, sj = 0;
            long double z = 0;
            double *s = malloc((size_t)lkv * sizeof *s);
            if (!s) return 3;
            for (int j = 0; j < lkv; j++) {
                s[j] = -INFINITY;
                if (!af_mask_rule_visible(rule, lq, lkv, i, j)) continue;
                const double *k = in.k + (((size_t)b * in.Hkv + hk) * in.Skv + j) * in.Dqk;
                double x = 0;
                for (int d = 0; d < in.Dqk; d++) x += q[d] * k[d];
                s[j] = x * scale;
                if (s[j] > m) m = s[j];
            }
            for (int j = 0; j < lkv; j++)
                if (s[j] > -INFINITY) z += expl((long double)(s[j] - m));
            double lse = m + (double)logl(z);
            sj = s[jj];
            free(s);
            double p = exp(sj - lse), p16 = f16(p), pf = f16(exp(sj - m)) * exp(m - lse);
            double dO = in.dout[(((size_t)b * in.Hq + h) * in.Sq + i) * in.Dv + dd];
            exact += p * dO;
            hx += p * dO;
            hp += p16 * dO;
            hf += pf * dO;
            acc16 += (float)(p16 * dO); /* fp16 x fp16: exact in fp32 */
            accf += (float)(pf * dO);
            printf("%-4d %-4d %14.7g %14.7g %14.7g %14.7g %12.4f\n", h, i, p, p16, pf, dO, p / 0x1p-14);
        }
    printf("exact  dV = %.7g = %.3f x 2^-24, stored fp16 %.7g (%.0f)\n", exact, exact / u, f16(exact), f16(exact) / u);
    printf("bwd16  dV: fp32 sum %.3f x 2^-24, stored fp16 %.7g (%.0f)\n", (double)acc16 / u, f16(acc16),
           f16(acc16) / u);
    printf("fwd16  dV: fp32 sum %.3f x 2^-24, stored fp16 %.7g (%.0f)\n", (double)accf / u, f16(accf), f16(accf) / u);
    printf("stored toward zero instead: exact %.0f, bwd16 %.0f, fwd16 %.0f (x 2^-24)\n", trunc(exact / u),
           truncf(acc16 / (float)u), truncf(accf / (float)u));
    printf("head16 dV: each query head's partial stored fp16, then summed: exact P %.0f, P16 %.0f, fwd %.0f (x 2^-24)\n",
           sum_hx / u, sum_hp / u, sum_hf / u);
    af_inputs_free(&in);
    af_tensors_free(&t);
    return 0;
}
