/* compare_dsink.c — the learnable sinks' gradient against the oracle (verdict.h, "dsink"). */
#include "judge/compare_dsink.h"
#include "judge/criterion/criterion.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double af_dsink_floor(const af_case *c, const af_inputs *in, const af_outputs *exact, const af_outputs *kernel, int h,
                      double *mass) {
    const int Hq = c->heads_q, Sq = c->seqlen_q, Dv = c->head_dim_v;
    const double a = in->sink ? in->sink[h] : -INFINITY;
    const double fp32_dot = (Dv / 16.0 + 1.0) * 0x1p-23; /* D_i = dO_i . O_i in fp32 */
    double extra = 0, m = 0, sum_abs = 0;
    long long terms = 0;
    for (int b = 0; b < c->batch; b++)
        for (int i = 0; i < af_case_len_q(c, b); i++) {
            size_t r = ((size_t)b * Hq + h) * Sq + i;
            double lse = exact->lse[r];
            if (!isfinite(lse) || !isfinite(a)) continue; /* fully masked: no share (feature_spec.h) */
            double p_sink = exp(a - lse);
            const double *dout = in->dout + r * Dv, *o = exact->o + r * Dv;
            const double *ko = kernel && kernel->o ? kernel->o + r * Dv : NULL;
            double g = in->dlse ? in->dlse[r] : 0.0;
            if (c->lse_base2) g /= 0.69314718055994530942; /* the gradient of L_i (feature_spec.h) */
            double dot = 0, dot_abs = 0, d_stored = 0;
            bool stored_finite = ko != NULL;
            for (int d = 0; d < Dv; d++) {
                dot += dout[d] * o[d];
                dot_abs += fabs(dout[d]) * fabs(o[d]);
                if (ko && isfinite(ko[d]))
                    d_stored += dout[d] * (ko[d] - o[d]);
                else
                    stored_finite = false;
            }
            double delta_stored = stored_finite ? fabs(d_stored) : 0.0; /* a non-finite O is its own finding */
            double D = dot - g;
            /* P_sink,i from the fp32 LSE the kernel stored: relative error up to expm1(delta_i) */
            double e_lse = kernel && kernel->lse && isfinite(kernel->lse[r]) ? fabs(kernel->lse[r] - lse) : 0.0;
            double delta = 0x1p-23 * (1.0 + fabs(a) + fabs(lse)) + e_lse;
            double x = expm1(fmin(delta, AF_LSE_DELTA_CAP));
            extra += p_sink * (delta_stored + fp32_dot * dot_abs + x * (fabs(D) + delta_stored));
            m += p_sink * (dot_abs + fabs(g));
            sum_abs += p_sink * fabs(D);
            terms++;
        }
    if (mass) *mass = m;
    double exact_h = exact->dsink ? fabs(exact->dsink[h]) : 0.0;
    double floor =
        0x1p-23 * exact_h + extra + ((double)terms / 16.0 + 1.0) * 0x1p-23 * sum_abs + AF_GRAD_CANCEL_UNIT * m;
    return fmax(floor, 0x1p-24);
}

static void add(af_verdict *v, af_verdict_kind kind, int h, double kernel, double exact, double err, double allowed,
                const char *detail) {
    af_finding f = af_finding_at(kind, AF_T_DSINK, -1, h, -1, -1, detail);
    f.kernel_value = kernel;
    f.baseline_value = exact;
    f.error = err;
    f.allowed = allowed;
    f.ratio = allowed > 0 ? err / allowed : 0;
    af_verdict_add(v, &f);
}

int af_compare_dsink(const af_case *c, const af_tensors *t, const af_inputs *in, const af_outputs *kernel,
                     const af_outputs *ref, const af_outputs *exact, af_verdict *v) {
    if (!af_case_has_dsink(c) || !t->dsink || !kernel->dsink || !exact->dsink) return 0;
    int before = v->n_findings;
    /* the worst head is the one reported: one finding of each kind at most */
    int worst_h = -1, unwritten_h = -1, nan_h = -1;
    double worst_ratio = 1.0;
    af_dsink_check worst;
    memset(&worst, 0, sizeof worst);
    for (int h = 0; h < c->heads_q; h++) {
        uint32_t bits;
        memcpy(&bits, &t->dsink[h], sizeof bits);
        if (bits == AF_POISON_F32) {
            if (unwritten_h < 0) unwritten_h = h;
            continue;
        }
        double k = kernel->dsink[h], e = exact->dsink[h];
        if (!isfinite(k)) {
            if (isfinite(e) && nan_h < 0) nan_h = h;
            continue;
        }
        af_dsink_check ck;
        ck.err = fabs(k - e);
        ck.err_ref = ref && ref->dsink && isfinite(ref->dsink[h]) ? fabs(ref->dsink[h] - e) : 0.0;
        ck.floor = af_dsink_floor(c, in, exact, kernel, h, &ck.mass);
        ck.allowed = ref && ref->dsink ? 2.0 * ck.err_ref + ck.floor : 8.0 * ck.floor;
        double ratio = ck.allowed > 0 ? ck.err / ck.allowed : INFINITY;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst_h = h;
            worst = ck;
        }
    }
    char detail[256];
    if (unwritten_h >= 0) {
        snprintf(detail, sizeof detail, "dsink[%d] still holds the poison: the backward did not write it", unwritten_h);
        add(v, AF_V_UNWRITTEN, unwritten_h, NAN, exact->dsink[unwritten_h], 0, 0, detail);
    }
    if (nan_h >= 0) {
        snprintf(detail, sizeof detail, "dsink[%d] = %g where the oracle's is %.9g", nan_h, kernel->dsink[nan_h],
                 exact->dsink[nan_h]);
        add(v, AF_V_NAN_INF, nan_h, kernel->dsink[nan_h], exact->dsink[nan_h], INFINITY, 0, detail);
    }
    if (worst_h >= 0) {
        snprintf(detail, sizeof detail,
                 "dsink[%d] = %.9g, oracle %.9g: err %.3g > allowed %.3g (2 err_ref %.3g + floor %.3g, M %.3g)",
                 worst_h, kernel->dsink[worst_h], exact->dsink[worst_h], worst.err, worst.allowed, worst.err_ref,
                 worst.floor, worst.mass);
        add(v, AF_V_MISMATCH, worst_h, kernel->dsink[worst_h], exact->dsink[worst_h], worst.err, worst.allowed, detail);
    }
    return v->n_findings - before;
}
