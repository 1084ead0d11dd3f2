/* determinism.c — the determinism probe (AF_V_NONDETERMINISTIC, probes.h): identical
 * inputs must give identical bits for a backend that declares AF_BACKEND_DETERMINISTIC.
 * For any other backend the run-to-run spread is measured here (the runner's repeats
 * first, then extra runs) and becomes the other probes' tolerance (x->tol: 2 * spread
 * + 2 ulp), so noise is not reported as a leak; and reruns of the unperturbed case
 * tell a probe's move from noise that the first runs did not show (a race striking a
 * third of the runs can miss them all). */
#include "judge/probes/common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "judge/clone.h"
#include "judge/tolerance.h"

/* Compare all judged outputs of two runs: spread per tensor, first differing bits. */
typedef struct {
    bool differ;
    af_tensor_id id;
    int b, h, row, col;
    double va, vb;
    long long n_differ;
} bits_diff;

static void compare_runs(const probe_ctx *x, const af_tensors *a, const af_tensors *b, double *spread, bits_diff *bd) {
    for (int k = 0; k < n_outs(x->c); k++) {
        af_tensor_id id = probe_outputs[k];
        const af_tensor_view *w = &a->plan.view[id];
        if (probe_buffer_identical(a, b, id)) continue; /* nothing moved */
        for (int bb = 0; bb < w->B; bb++)
            for (int h = 0; h < w->H; h++)
                for (int s = 0; s < judged_rows(x, id, bb); s++) {
                    if (probe_row_same_bits(a, b, id, bb, h, s)) continue;
                    for (int d = 0; d < w->D; d++) {
                        int64_t off = offset_of(a, id, bb, h, s, d);
                        if (probe_same_bits(a, b, id, off)) continue;
                        double va = probe_load(a, id, off), vb = probe_load(b, id, off), diff;
                        if (isnan(va) || isnan(vb))
                            diff = isnan(va) && isnan(vb) ? 0 : INFINITY;
                        else
                            diff = va == vb ? 0 : fabs(va - vb);
                        if (isnan(diff)) diff = INFINITY;
                        if (diff > spread[id]) spread[id] = diff;
                        if (!bd->differ) *bd = (bits_diff){true, id, bb, h, s, d, va, vb, 0};
                        bd->n_differ++;
                    }
                }
    }
}

/* 2 ulp of the output storage at the tensor's largest magnitude in the baseline. */
static double tiny_of(const probe_ctx *x, af_tensor_id id) {
    const af_tensors *t = x->tg->baseline;
    const af_tensor_view *w = &t->plan.view[id];
    double unit = af_storage_unit(w->storage), amax = 0;
    for (int b = 0; b < w->B; b++)
        for (int h = 0; h < w->H; h++)
            for (int s = 0; s < judged_rows(x, id, b); s++)
                for (int d = 0; d < w->D; d++) {
                    double v = fabs(probe_load(t, id, offset_of(t, id, b, h, s, d)));
                    if (isfinite(v) && v > amax) amax = v;
                }
    return 2 * unit * amax + 0x1p-24;
}

void probe_determinism(probe_ctx *x) {
    const af_probe_opts *o = x->o;
    bool declared = (x->tg->be->flags & AF_BACKEND_DETERMINISTIC) &&
                    !(x->tg->baseline_info && x->tg->baseline_info->nondeterministic);
    int runs = o->determinism ? (o->determinism_runs > 0 ? o->determinism_runs : 1) : 0;
    bool others =
        o->visibility || o->inclusion || o->feature || o->stale || o->batch || o->scales || o->capacity || o->history;
    if (!declared && others && runs < 2) runs = 2;
    x->exact = declared;
    if (runs == 0) return;
    double spread[AF_T_COUNT] = {0};
    bits_diff bd;
    memset(&bd, 0, sizeof bd);
    int done = 0;
    /* the runner's repeats are runs already made (and judged) */
    int given = x->runs ? x->runs->n_repeats : 0;
    for (int r = 0; r < given; r++, done++) compare_runs(x, x->tg->baseline, x->runs->repeats[r], spread, &bd);
    for (int r = given; r < runs && !x->stop; r++) {
        af_tensors w;
        if (probe_work_begin(x, x->c, &w)) return;
        x->next_run++;
        if (probe_work_run(x, x->c, &w, "determinism") == 0) {
            /* a deterministic backend's identical bits would be judged identically */
            if (!declared && x->runs && x->runs->judge) x->runs->judge(x->runs->judge_ctx, &w, x->next_run - 1, x->v);
            compare_runs(x, x->tg->baseline, &w, spread, &bd);
            done++;
        }
        probe_work_end(x, &w);
    }
    for (int k = 0; k < AF_T_COUNT; k++) x->st->spread[k] = spread[k];
    if (declared && bd.differ && o->determinism) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "declared deterministic, but %lld output elements differ between identical runs "
                 "(first: %s b%d h%d r%d c%d %.9g vs %.9g)",
                 bd.n_differ, af_tensor_name(bd.id), bd.b, bd.h, bd.row, bd.col, bd.va, bd.vb);
        probe_finding(x, AF_V_NONDETERMINISTIC, bd.id, bd.b, bd.h, bd.row, bd.col, bd.va, bd.vb, 0, msg);
    }
    if (!declared && done == 0) {
        /* nothing learnt: without a tolerance the other probes could only guess */
        probe_note(x, "%s", "no spread measured for a nondeterministic backend: probes skipped");
        x->stop = true;
        return;
    }
    if (declared && !bd.differ) return;
    /* nondeterministic (declared or found): tolerate the measured spread */
    x->exact = false;
    for (int k = 0; k < n_outs(x->c); k++) {
        af_tensor_id id = probe_outputs[k];
        x->tol[id] = 2 * spread[id] + tiny_of(x, id);
    }
}

bool probe_rerun_reproduces(probe_ctx *x, af_tensor_id id, double moved, int *index, double *seen) {
    *index = -1;
    *seen = 0;
    double spread[AF_T_COUNT] = {0};
    bool reproduced = false;
    for (int r = 0; r < x->o->leak_reruns && !x->stop && !reproduced; r++) {
        af_tensors w;
        if (probe_work_begin(x, x->c, &w)) break;
        int run_index = x->next_run++;
        if (probe_work_run(x, x->c, &w, "rerun") == 0) {
            x->st->leak_reruns++;
            if (x->runs && x->runs->judge) x->runs->judge(x->runs->judge_ctx, &w, run_index, x->v);
            double run_spread[AF_T_COUNT] = {0};
            bits_diff bd;
            memset(&bd, 0, sizeof bd);
            compare_runs(x, x->tg->baseline, &w, run_spread, &bd);
            for (int k = 0; k < AF_T_COUNT; k++)
                if (run_spread[k] > spread[k]) spread[k] = run_spread[k];
            if (run_spread[id] >= moved / 2) {
                reproduced = true;
                *index = run_index;
                *seen = run_spread[id];
            }
        }
        probe_work_end(x, &w);
    }
    /* what the reruns showed is run-to-run noise too: the later probes tolerate it */
    for (int k = 0; k < n_outs(x->c); k++) {
        af_tensor_id t = probe_outputs[k];
        if (spread[t] > x->st->spread[t]) x->st->spread[t] = spread[t];
        double tol = 2 * spread[t] + tiny_of(x, t);
        if (tol > x->tol[t]) x->tol[t] = tol;
    }
    if (reproduced) x->st->reproduced++;
    return reproduced;
}
