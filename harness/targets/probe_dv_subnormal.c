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
 * and, beside them, the same sums with one more rounding each: a store toward zero, or
 * each query head's partial stored to fp16 before the GQA sum. Values are printed in units
 * of 2^-24 (the fp16 subnormal step). With --blocks, for kv head HKV of batch B, each
 * model's max |model - exact| over every block of 32 keys (all columns), the quantity of
 * a finding's dV heatmap.txt. Research only: no test runs it (docs/criterion.md,
 * "Subnormal P in dV", holds the figures of one finding).
 * Usage: probe_dv_subnormal CASE B HKV KEY COL | probe_dv_subnormal CASE B HKV --blocks
 * The case must have no feature beyond the mask rule (no bias, softcap, sink, dropout).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"
#include "model/case_mask.h"
#include "model/gen.h"
#include "model/numeric.h"
#include "model/tensors.h"

static double f16(double x) { return (double)af_f16_to_f32(af_f32_to_f16((float)x)); }

enum { M_EXACT, M_BWD, M_FWD, M_BWD_RZ, M_HEAD_EXACT, M_HEAD_BWD, M_HEAD_FWD, M_COUNT };
static const char *const model_names[M_COUNT] = {"exact fp16", "bwd16",      "fwd16",     "bwd16 rz",
                                                 "head exact", "head bwd16", "head fwd16"};

typedef struct {
    const af_inputs *in;
    af_mask_rule rule;
    double scale;
    double *lse, *m; /* (B, Hq, Sq) the exact LSE and max score of each row */
} probe_ctx;

static double score(const probe_ctx *x, int b, int h, int i, int j) {
    const af_inputs *in = x->in;
    const double *q = in->q + (((size_t)b * in->Hq + h) * in->Sq + i) * in->Dqk;
    const double *k = in->k + (((size_t)b * in->Hkv + h / (in->Hq / in->Hkv)) * in->Skv + j) * in->Dqk;
    double s = 0;
    for (int d = 0; d < in->Dqk; d++) s += q[d] * k[d];
    return s * x->scale;
}

static void rows_lse(probe_ctx *x) {
    const af_inputs *in = x->in;
    for (int b = 0; b < in->B; b++)
        for (int h = 0; h < in->Hq; h++)
            for (int i = 0; i < in->Sq; i++) {
                double m = -INFINITY;
                long double z = 0;
                for (int j = 0; j < in->Skv; j++)
                    if (af_mask_rule_sees(x->rule, b, in->Sq, in->Skv, i, j)) m = fmax(m, score(x, b, h, i, j));
                for (int j = 0; j < in->Skv; j++)
                    if (af_mask_rule_sees(x->rule, b, in->Sq, in->Skv, i, j))
                        z += expl((long double)(score(x, b, h, i, j) - m));
                size_t r = ((size_t)b * in->Hq + h) * in->Sq + i;
                x->m[r] = m;
                x->lse[r] = m + (double)logl(z);
            }
}

/* The models of dV[b, hk, j, d] (the exact value in *exact; the others stored to fp16). */
static void element(const probe_ctx *x, int b, int hk, int j, int dd, bool verbose, double *exact,
                    double out[M_COUNT]) {
    const af_inputs *in = x->in;
    int g = in->Hq / in->Hkv;
    double ex = 0, sum_hx = 0, sum_hp = 0, sum_hf = 0;
    float acc16 = 0.0f, accf = 0.0f;
    for (int h = hk * g; h < (hk + 1) * g; h++) {
        double hx = 0, hp = 0, hf = 0; /* the head's partials */
        for (int i = 0; i < in->Sq; i++) {
            if (!af_mask_rule_sees(x->rule, b, in->Sq, in->Skv, i, j)) continue;
            size_t r = ((size_t)b * in->Hq + h) * in->Sq + i;
            double s = score(x, b, h, i, j), lse = x->lse[r], m = x->m[r];
            double p = exp(s - lse), p16 = f16(p), pf = f16(exp(s - m)) * exp(m - lse);
            double dO = in->dout[r * in->Dv + dd];
            ex += p * dO;
            hx += p * dO;
            hp += p16 * dO;
            hf += pf * dO;
            acc16 += (float)(p16 * dO); /* fp16 x fp16: exact in fp32 */
            accf += (float)(pf * dO);
            if (verbose) printf("%-4d %-4d %14.7g %14.7g %14.7g %14.7g %12.4f\n", h, i, p, p16, pf, dO, p / 0x1p-14);
        }
        sum_hx += f16(hx), sum_hp += f16(hp), sum_hf += f16(hf);
    }
    double acc_rz = (double)af_f16_to_f32(
        (uint16_t)(af_f32_to_f16(acc16) - (f16(acc16) != acc16 && fabs(f16(acc16)) > fabs(acc16))));
    *exact = ex;
    out[M_EXACT] = f16(ex), out[M_BWD] = f16(acc16), out[M_FWD] = f16(accf), out[M_BWD_RZ] = acc_rz;
    out[M_HEAD_EXACT] = f16(sum_hx), out[M_HEAD_BWD] = f16(sum_hp), out[M_HEAD_FWD] = f16(sum_hf);
    if (verbose)
        printf("fp32 sums (x 2^-24): exact %.3f, bwd16 %.3f, fwd16 %.3f\n", ex / 0x1p-24, (double)acc16 / 0x1p-24,
               (double)accf / 0x1p-24);
}

int main(int argc, char **argv) {
    bool blocks = argc == 5 && strcmp(argv[4], "--blocks") == 0;
    if (argc != 6 && !blocks) {
        fprintf(stderr, "usage: probe_dv_subnormal CASE B HKV KEY COL | probe_dv_subnormal CASE B HKV --blocks\n");
        return 2;
    }
    af_case c;
    af_tensors t;
    af_inputs in;
    char why[1400];
    if (af_inputs_of_case_file(argv[1], &c, &t, &in, why, sizeof why) != 0) {
        fprintf(stderr, "probe_dv_subnormal: %s\n", why);
        return 3;
    }
    if (!in.dout) {
        fprintf(stderr, "probe_dv_subnormal: %s: not a backward case\n", argv[1]);
        return 3;
    }
    int b = atoi(argv[2]), hk = atoi(argv[3]), jj = blocks ? 0 : atoi(argv[4]), dd = blocks ? 0 : atoi(argv[5]);
    if (b < 0 || b >= in.B || hk < 0 || hk >= in.Hkv || jj < 0 || jj >= in.Skv || dd < 0 || dd >= in.Dv) {
        fprintf(stderr, "element out of range\n");
        return 2;
    }
    size_t nq = (size_t)in.B * in.Hq * in.Sq;
    probe_ctx x = {.in = &in,
                   .rule = af_mask_rule_of_case(&c),
                   .scale = (double)af_case_scale(&c),
                   .lse = calloc(nq, sizeof(double)),
                   .m = calloc(nq, sizeof(double))};
    if (!x.lse || !x.m) return 3;
    rows_lse(&x);
    double ex, out[M_COUNT];
    if (!blocks) {
        printf("%-4s %-4s %14s %14s %14s %14s %12s\n", "h", "row", "P", "P16(bwd)", "P(fwd model)", "dO", "P/2^-14");
        element(&x, b, hk, jj, dd, true, &ex, out);
        printf("exact dV = %.7g = %.3f x 2^-24\n", ex, ex / 0x1p-24);
        for (int k = 0; k < M_COUNT; k++)
            printf("%-11s stored %.7g = %.0f x 2^-24\n", model_names[k], out[k], out[k] / 0x1p-24);
    } else {
        printf("%-6s", "block");
        for (int k = 0; k < M_COUNT; k++) printf(" %15s", model_names[k]);
        printf("\n");
        for (int j0 = 0; j0 < in.Skv; j0 += 32) {
            double mx[M_COUNT] = {0};
            for (int j = j0; j < j0 + 32 && j < in.Skv; j++)
                for (int d = 0; d < in.Dv; d++) {
                    element(&x, b, hk, j, d, false, &ex, out);
                    for (int k = 0; k < M_COUNT; k++) mx[k] = fmax(mx[k], fabs(out[k] - ex));
                }
            printf("%-6d", j0 / 32);
            for (int k = 0; k < M_COUNT; k++) printf(" %15.9g", mx[k]);
            printf("\n");
        }
    }
    free(x.lse), free(x.m);
    af_inputs_free(&in);
    af_tensors_free(&t);
    return 0;
}
