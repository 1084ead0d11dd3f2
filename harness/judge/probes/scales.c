/* scales.c — the scale-plumbing probe (AF_V_FEATURE_IGNORED, probes.h) of fp8_e4m3 cases:
 * rerun with one input descale doubled and the output descales moved with it so that a
 * kernel that plumbs every scale writes the same bytes.
 *
 * The rule. Every descale is applied by multiplication (docs/fp8.md's recipe, and every
 * kernel that folds them into one factor or into the exp2 domain): multiplying by a
 * power of two is exact in fp32 while the product stays a normal number, so a factor 2
 * on an input's descale moves each intermediate it reaches by exactly 2^k, and the
 * matching factor on the output descale (stored = e4m3(X / descale_X)) gives the same
 * fp32 argument to every E4M3 cast: the stored O, LSE, dQ, dK, dV keep their bits.
 *   descale_v x 2:   O x 2, D_i x 2 (the stored O's descale), dP, dS, dQ, dK x 2, dV
 *                    unchanged  ->  descale_o, descale_dp, descale_dq, descale_dk x 2
 *   descale_q x 2 and descale_k / 2:  scores unchanged (2 x 1/2 = 1, exactly), dQ / 2,
 *                    dK x 2  ->  descale_dq / 2, descale_dk x 2
 *   descale_do x 2 (backward): D, dP, dS, dQ, dK, dV x 2  ->  descale_dp, descale_dq,
 *                    descale_dk, descale_dv x 2
 * A kernel that ignores one descale (fixed at 1.0) or takes one for another writes other
 * bytes under one of the three (the same scale-invariance on a kernel that is not
 * deterministic: within the run-to-run tolerance). A toggle whose scaled descales would
 * not all be normal fp32 numbers is skipped with a note. The sign of a zero is not
 * compared: where an fp32 term underflows (P v of a kernel that dequantises V on load) a
 * stored 0 may become -0 with the scale; that moves no output. With out_dtype fp16 / bf16
 * O has no descale to move with descale_v: that toggle is skipped with a note.
 */
#include "judge/probes/common.h"

#include <math.h>
#include <stdio.h>

#include "judge/clone.h"

typedef struct {
    const char *name;
    bool backward_only;
    /* powers of two applied to descale_q, _k, _v, _do, _o, _dp, _dq, _dk, _dv */
    int q, k, v, dout, o, dp, dq, dk, dv;
} scale_toggle;

static const scale_toggle scale_toggles[] = {
    {"descale_v x2 (descale_o, descale_dp, descale_dq, descale_dk x2)", false, 0, 0, 1, 0, 1, 1, 1, 1, 0},
    {"descale_q x2, descale_k / 2 (descale_dq / 2, descale_dk x2)", false, 1, -1, 0, 0, 0, 0, -1, 1, 0},
    {"descale_do x2 (descale_dp, descale_dq, descale_dk, descale_dv x2)", true, 0, 0, 0, 1, 0, 1, 1, 1, 1},
};

/* *d = d 2^e; false when the result is not a normal fp32 number. */
static bool scale_by(float *d, int e) {
    *d = ldexpf(*d, e);
    return isnormal(*d);
}

static bool apply(const scale_toggle *s, af_tensors *w) {
    float *const d[9] = {&w->descale_q,  &w->descale_k,  &w->descale_v,  &w->descale_do, &w->descale_o,
                         &w->descale_dp, &w->descale_dq, &w->descale_dk, &w->descale_dv};
    const int e[9] = {s->q, s->k, s->v, s->dout, s->o, s->dp, s->dq, s->dk, s->dv};
    bool ok = true;
    for (int k = 0; k < 9; k++) ok = scale_by(d[k], e[k]) && ok; /* every descale scaled, each checked */
    return ok;
}

/* The first judged element of an output whose stored value moved under toggle s
 * (beyond the tolerance when the backend is not exact); true and a finding when one did. */
static bool report_moved(probe_ctx *x, const scale_toggle *s, const af_tensors *base, const af_tensors *w) {
    for (int k = 0; k < n_outs(x->c); k++) {
        af_tensor_id id = probe_outputs[k];
        if (probe_buffer_identical(base, w, id)) continue;
        const af_tensor_view *view = &base->plan.view[id];
        double factor = af_output_descale(base, id); /* stored -> logical, at the judged run's scale */
        double tol = x->exact ? 0 : x->tol[id];
        for (int b = 0; b < view->B; b++)
            for (int h = 0; h < view->H; h++)
                for (int r = 0; r < judged_rows(x, id, b); r++) {
                    if (probe_row_same_bits(base, w, id, b, h, r)) continue;
                    for (int d = 0; d < view->D; d++) {
                        int64_t off = offset_of(base, id, b, h, r, d);
                        if (probe_same_bits(base, w, id, off)) continue;
                        double before = probe_load(base, id, off);
                        double after = factor * af_storage_load(view->storage, w->buf[view->buffer], off);
                        /* +0 and -0: the same output (a kernel that dequantises V on load
                         * may underflow an fp32 P v term to -0 under one scale and not the
                         * other); a zero that became nonzero differs here and is reported */
                        if (before == 0.0 && after == 0.0) continue;
                        if (!x->exact && isfinite(before) && isfinite(after) && fabs(after - before) <= tol) continue;
                        char msg[256];
                        snprintf(msg, sizeof msg,
                                 "scales: %s: stored %s must keep its bits, but %.6g became %.6g (at the judged "
                                 "run's scale)",
                                 s->name, af_tensor_name(id), before, after);
                        probe_finding(x, AF_V_FEATURE_IGNORED, id, b, h, r, d, before, after, tol, msg);
                        return true;
                    }
                }
    }
    return false;
}

void probe_scales(probe_ctx *x) {
    const af_case *c = x->c;
    if (!af_dtype_is_fp8_tensor(c->dtype)) return; /* per-tensor descales: fp8_e4m3 and fp8_e5m2 only */
    if (c->descale_head) {                         /* its toggles move the per-tensor descales, which are 1 here */
        probe_note(x, "scales: skipped: %s (per-head descales; the toggles move per-tensor ones)", "descale = head");
        return;
    }
    for (size_t k = 0; k < sizeof scale_toggles / sizeof scale_toggles[0] && !x->stop; k++) {
        const scale_toggle *s = &scale_toggles[k];
        if (s->backward_only && !c->backward) continue;
        if (s->o && c->out_dtype != AF_OUT_SAME) { /* O of fp16 / bf16 has no descale to move */
            probe_note(x, "scales: %s skipped: out_dtype is fp16 / bf16 (O has no output scale)", s->name);
            continue;
        }
        af_tensors w;
        if (probe_work_begin(x, c, &w)) return;
        if (!apply(s, &w)) {
            probe_note(x, "scales: %s skipped: a scaled descale is not a normal fp32 number", s->name);
            probe_work_end(x, &w);
            continue;
        }
        if (probe_work_run(x, c, &w, "scales") == 0) {
            x->st->scale_toggles++;
            bool found = report_moved(x, s, x->tg->baseline, &w);
            probe_work_end(x, &w);
            if (found) return; /* one finding names the broken plumbing */
            continue;
        }
        probe_work_end(x, &w);
    }
}
