/* probe_fp8_row.c — one forward row of a case, from the case's own inputs
 * (af_inputs_generate, the generator every run uses), for the question whether a kernel's
 * O element can be explained by the error of its score accumulation (the FP8 one of
 * docs/cudnn-findings.md F5: |dS_ij| up to about 2^-10 A_i, A_i = max_j scale sum_d
 * |q_id k_jd|) rather than by a defect:
 *
 *   s_j = scale q_i . k_j over the row's visible keys (double), P_j = softmax, O_d = sum_j
 *   P_j v_jd; the two largest scores and how many keys lie within 2 delta of the largest;
 *   the rigorous bound of |O'_d - O_d| when every score moves by at most delta:
 *   (e^(2 delta) - 1) sum_j P_j |v_jd - O_d|  (P'_j / P_j lies in [e^-2delta, e^2delta]
 *   and the P' - P sum to 0), for delta = 2^-10.1 A_i (the worst row F5 measured) and
 *   2^-8 A_i (the LSE criterion's unit); and the range of v_jd over the keys of largest
 *   weight, to set beside the kernel's value.
 *
 * Research only: no test runs it (docs/cudnn-findings.md holds the figures of the finding
 * it was written for). Usage: probe_fp8_row CASE B H ROW COL [KERNEL_VALUE] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/case.h"
#include "model/case_mask.h"
#include "model/gen.h"
#include "model/tensors.h"

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: probe_fp8_row CASE B H ROW COL [KERNEL_VALUE]\n");
        return 2;
    }
    af_case c;
    af_tensors t;
    af_inputs in;
    char why[1400];
    if (af_inputs_of_case_file(argv[1], &c, &t, &in, why, sizeof why) != 0) {
        fprintf(stderr, "probe_fp8_row: %s\n", why);
        return 3;
    }
    int b = atoi(argv[2]), h = atoi(argv[3]), i = atoi(argv[4]), col = atoi(argv[5]);
    if (b < 0 || b >= in.B || h < 0 || h >= in.Hq || i < 0 || i >= in.Sq || col < 0 || col >= in.Dv) {
        fprintf(stderr, "element out of range\n");
        return 2;
    }
    int hk = h / (in.Hq / in.Hkv), lq = af_case_len_q(&c, b), lkv = af_case_len_kv(&c, b);
    af_mask_rule rule = af_mask_rule_of_case(&c);
    af_mask_keys keys;
    if (af_mask_rule_keys(rule, lq, lkv, i, &keys) == 0) {
        printf("row %d sees no key\n", i);
        return 0;
    }
    double scale = (double)af_case_scale(&c);
    const double *q = in.q + (((size_t)b * in.Hq + h) * in.Sq + i) * in.Dqk;
    double *s = calloc((size_t)in.Skv, sizeof(double)), *p = calloc((size_t)in.Skv, sizeof(double));
    char *seen = calloc((size_t)in.Skv, 1);
    if (!s || !p || !seen) return 3;
    double m = -INFINITY, A = 0;
    for (int ks = 0; ks < keys.n; ks++)
        for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
            if (!af_mask_rule_kept(&rule, b, i, j)) continue;
            const double *k = in.k + (((size_t)b * in.Hkv + hk) * in.Skv + j) * in.Dqk;
            double dot = 0, mag = 0;
            for (int d = 0; d < in.Dqk; d++) dot += q[d] * k[d], mag += fabs(q[d] * k[d]);
            s[j] = scale * dot;
            seen[j] = 1;
            if (s[j] > m) m = s[j];
            if (fabs(scale) * mag > A) A = fabs(scale) * mag;
        }
    double z = 0;
    for (int j = 0; j < in.Skv; j++)
        if (seen[j]) p[j] = exp(s[j] - m), z += p[j];
    double o = 0;
    for (int j = 0; j < in.Skv; j++)
        if (seen[j]) p[j] /= z, o += p[j] * in.v[(((size_t)b * in.Hkv + hk) * in.Skv + j) * in.Dv + col];
    double spread = 0, second = -INFINITY;
    for (int j = 0; j < in.Skv; j++) {
        if (!seen[j]) continue;
        spread += p[j] * fabs(in.v[(((size_t)b * in.Hkv + hk) * in.Skv + j) * in.Dv + col] - o);
        if (s[j] < m && s[j] > second) second = s[j];
    }
    double deltas[2] = {exp2(-10.1) * A, exp2(-8.0) * A};
    printf("row b%d h%d i%d col %d: %d visible keys, A_i = %.6g, max score %.6g, next %.6g (gap %.4g), LSE %.6g\n", b,
           h, i, col, keys.n ? (int)(keys.last[0] - keys.first[0] + 1) : 0, A, m, second, m - second, m + log(z));
    printf("exact O = %.6g, sum_j P_j |v_j - O| = %.6g\n", o, spread);
    for (int k = 0; k < 2; k++) {
        int near = 0;
        double vmin = INFINITY, vmax = -INFINITY;
        for (int j = 0; j < in.Skv; j++) {
            if (!seen[j] || s[j] < m - 2 * deltas[k]) continue;
            near++;
            double v = in.v[(((size_t)b * in.Hkv + hk) * in.Skv + j) * in.Dv + col];
            if (v < vmin) vmin = v;
            if (v > vmax) vmax = v;
        }
        printf("delta = %s A_i = %.4g: bound (e^2delta - 1) sum P|v - O| = %.4g; %d keys within 2 delta of the "
               "max, their v in [%.4g, %.4g]\n",
               k ? "2^-8" : "2^-10.1", deltas[k], expm1(2 * deltas[k]) * spread, near, vmin, vmax);
    }
    /* the five keys of largest score, with their v at the column */
    for (int r = 0; r < 5; r++) {
        int best = -1;
        for (int j = 0; j < in.Skv; j++)
            if (seen[j] == 1 && (best < 0 || s[j] > s[best])) best = j;
        if (best < 0) break;
        seen[best] = 2; /* listed */
        printf("  key %d: score %.6g (max - %.4g), P %.3g, v = %.6g\n", best, s[best], m - s[best], p[best],
               in.v[(((size_t)b * in.Hkv + hk) * in.Skv + best) * in.Dv + col]);
    }
    if (argc == 7) {
        double kv = atof(argv[6]);
        printf("kernel %.6g: |kernel - O| = %.4g\n", kv, fabs(kv - o));
    }
    free(s);
    free(p);
    free(seen);
    return 0;
}
