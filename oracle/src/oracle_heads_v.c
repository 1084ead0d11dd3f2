/* oracle_heads_v.c — V with its own head count (Hv != Hkv, cuDNN's h_v), by an exact
 * reduction to the shared-head problem the tiers solve.
 *
 * Query head h reads K head h / (Hq / Hkv) and V head h / (Hq / Hv). With L = lcm(Hkv, Hv)
 * (a divisor of Hq, as both are), the problem with L shared K/V heads, K' head g = K head
 * g / (L / Hkv) and V' head g = V head g / (L / Hv), has the same scores, P, O and LSE for
 * every query head (h / (Hq / L) / (L / Hkv) = h / (Hq / Hkv)). Its dK' and dV' sum over
 * the query heads of one g; dK of head hk is the sum of dK' over the L / Hkv heads g that
 * read it, dV of head hv the sum of dV' over the L / Hv heads g that read it. Those sums
 * are compensated (Neumaier); each part carries the tiers' bound, so the sum is within
 * bound_rel * sum |part| + bound_abs_scale * M: the relative term becomes an absolute one
 * on M (>= sum |part|, as M sums the parts' absolute terms), added to bound_abs_scale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "oracle/src/oracle_internal.h"

static int gcd(int a, int b) {
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

bool af_oracle_split_v(const af_oracle_problem *p) { return p->Hv > 0 && p->Hv != p->Hkv; }

/* x (B, from, S, D) -> (B, to, S, D), head g of the result = head g / (to / from). */
static double *widen_heads(const double *x, int B, int from, int to, int S, int D) {
    size_t head = (size_t)S * (size_t)D;
    double *w = malloc((size_t)B * (size_t)to * head * sizeof *w + 1);
    if (!w) return NULL;
    for (int b = 0; b < B; b++)
        for (int g = 0; g < to; g++)
            memcpy(w + ((size_t)b * to + g) * head, x + ((size_t)b * from + g / (to / from)) * head, head * sizeof *w);
    return w;
}

/* w (B, from, S, D) -> (B, to, S, D): head t of the result sums heads t * r .. t * r + r - 1
 * (r = from / to), compensated. */
static double *narrow_heads(const double *w, int B, int from, int to, int S, int D) {
    size_t head = (size_t)S * (size_t)D;
    int r = from / to;
    double *x = malloc((size_t)B * (size_t)to * head * sizeof *x + 1);
    if (!x) return NULL;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < to; t++)
            for (size_t e = 0; e < head; e++) {
                double sum = 0.0, comp = 0.0;
                for (int g = t * r; g < t * r + r; g++) {
                    double v = w[((size_t)b * from + g) * head + e], s2 = sum + v;
                    comp += fabs(sum) >= fabs(v) ? (sum - s2) + v : (v - s2) + sum;
                    sum = s2;
                }
                x[((size_t)b * to + t) * head + e] = sum + comp;
            }
    return x;
}

int af_oracle_widen_v(const af_oracle_problem *p, af_oracle_problem *wide, af_inputs *wide_in) {
    int L = p->Hkv / gcd(p->Hkv, p->Hv) * p->Hv;
    *wide_in = *p->in;
    wide_in->Hkv = L;
    wide_in->Hv = 0;
    wide_in->k = widen_heads(p->in->k, p->B, p->Hkv, L, p->Skv, p->Dqk);
    wide_in->v = widen_heads(p->in->v, p->B, p->Hv, L, p->Skv, p->Dv);
    *wide = *p;
    wide->Hkv = L;
    wide->Hv = 0;
    wide->in = wide_in;
    wide->in_dev = NULL; /* the device copies are of the narrow K and V */
    return wide_in->k && wide_in->v ? 0 : -1;
}

void af_oracle_widen_release(af_inputs *wide_in) {
    free(wide_in->k);
    free(wide_in->v);
    wide_in->k = wide_in->v = NULL;
}

int af_oracle_narrow_v(const af_oracle_problem *p, int L, af_oracle_result *r) {
    if (r->out.dk) {
        double *dk = narrow_heads(r->out.dk, p->B, L, p->Hkv, p->Skv, p->Dqk);
        double *dv = narrow_heads(r->out.dv, p->B, L, p->Hv, p->Skv, p->Dv);
        free(r->out.dk);
        free(r->out.dv);
        r->out.dk = dk;
        r->out.dv = dv;
        if (!dk || !dv) return -1;
        r->bound_abs_scale += 2.0 * r->bound_rel; /* the parts' relative terms, on M */
    }
    r->out.Hkv = p->Hkv;
    r->out.Hv = p->Hv;
    return 0;
}
