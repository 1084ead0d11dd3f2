/* stale.c — the stale-data probe (AF_V_LEAK, AF_V_NAN_INF, probes.h): memory that
 * holds no valid token (rows past a sequence in a padded layout, the tails of a
 * sequence's last page and unused pages, thd gaps between sequences, stride gaps) may
 * hold anything a previous step left there: a reused KV cache, NaN from a freed
 * buffer. Two runs fill every such input element, first with NaN, then with the
 * storage's largest finite value; every judged output must keep the judged run's value
 * (bitwise on a deterministic backend, else within the run-to-run tolerance) and stay
 * finite. A kernel that loads a whole tile past the sequence's end and masks its scores
 * by multiplying with 0 (NaN * 0 = NaN, huge * 0 after exp = NaN) fails here.
 *
 * The visibility probe also writes large values there, mixed with other perturbations;
 * this probe isolates the stale memory and asks for finite outputs as well. On a
 * backend that is not exact a move is first offered to reruns of the unperturbed case
 * (probe_rerun_reproduces), as the visibility probe does. */
#include "judge/probes/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "judge/clone.h"

typedef enum { STALE_NAN = 0, STALE_HUGE } stale_fill;

static void fill(af_storage st, void *buf, int64_t off, stale_fill f) {
    af_storage_store(st, buf, off, f == STALE_NAN ? NAN : (float)probe_storage_max(st));
}

/* Fill every input element that belongs to no valid token; the count filled, or -1. */
static long long fill_stale(probe_ctx *x, af_tensors *w, stale_fill f) {
    const af_case *c = x->c;
    af_tensor_id ins[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    int n_in = c->backward ? 4 : 3;
    long long filled = 0;
    for (int k = 0; k < n_in; k++) { /* rows past a sequence (page tails too) */
        const af_tensor_view *v = &w->plan.view[ins[k]];
        if (v->ragged) continue;
        for (int b = 0; b < v->B; b++)
            for (int s = judged_rows(x, ins[k], b); s < v->S; s++)
                for (int h = 0; h < v->H; h++)
                    for (int d = 0; d < v->D; d++, filled++)
                        fill(v->storage, w->buf[v->buffer], offset_of(w, ins[k], b, h, s, d), f);
    }
    af_buffer_id bufs[4] = {AF_BUF_Q, AF_BUF_K, AF_BUF_V, AF_BUF_DO};
    for (int k = 0; k < n_in; k++) { /* gaps and unused pages */
        int64_t n;
        unsigned char *owned = probe_owned_map(x, w, bufs[k], &n);
        if (!owned && n > 0) return -1;
        for (int64_t e = 0; e < n; e++)
            if (!owned[e]) {
                fill(w->plan.buffer_storage[bufs[k]], w->buf[bufs[k]], e, f);
                filled++;
            }
        free(owned);
    }
    return filled;
}

/* One filled run: the first output that moved or went non-finite becomes a finding. */
static void stale_run(probe_ctx *x, stale_fill f) {
    const af_case *c = x->c;
    const char *what = f == STALE_NAN ? "NaN" : "the largest finite value";
    af_tensors w;
    if (probe_work_begin(x, c, &w)) return;
    long long filled = fill_stale(x, &w, f);
    if (filled <= 0) {
        if (filled < 0) probe_note(x, "%s", "stale: out of memory");
        probe_work_end(x, &w);
        return;
    }
    if (probe_work_run(x, c, &w, "stale data")) {
        probe_work_end(x, &w);
        return;
    }
    x->st->stale_runs++;
    const af_tensors *base = x->tg->baseline;
    long long moved = 0;
    bool nonfinite = false;
    af_tensor_id fid = AF_T_O;
    int fb = 0, fh = 0, fr = 0, fd = 0;
    double fva = 0, fvb = 0, worst_move[AF_T_COUNT] = {0};
    for (int t = 0; t < n_outs(c); t++) {
        af_tensor_id id = probe_outputs[t];
        const af_tensor_view *v = &w.plan.view[id];
        for (int b = 0; b < v->B; b++)
            for (int h = 0; h < v->H; h++)
                for (int r = 0; r < judged_rows(x, id, b); r++) {
                    if (probe_row_same_bits(base, &w, id, b, h, r)) continue;
                    for (int d = 0; d < v->D; d++) {
                        double va, vb;
                        if (!probe_moved(x, base, &w, id, offset_of(&w, id, b, h, r, d), &va, &vb)) continue;
                        bool bad = isfinite(va) && !isfinite(vb);
                        double move = isnan(va) || isnan(vb) ? INFINITY : fabs(vb - va);
                        if (move > worst_move[id]) worst_move[id] = move;
                        if (moved++ == 0 || (bad && !nonfinite)) {
                            nonfinite = bad;
                            fid = id;
                            fb = b;
                            fh = h;
                            fr = r;
                            fd = d;
                            fva = va;
                            fvb = vb;
                        }
                    }
                }
    }
    int rerun = -1;
    double rerun_move = 0;
    if (moved && !x->exact && probe_rerun_reproduces(x, fid, worst_move[fid], &rerun, &rerun_move)) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "stale data: %s in the padding moved %s b%d h%d %s %d by %.3g, but rerun %d of the unperturbed case "
                 "moved %s by %.3g: run-to-run differences, not a leak",
                 what, af_tensor_name(fid), fb, fh, af_tensor_is_kv(fid) ? "key" : "row", fr, worst_move[fid], rerun,
                 af_tensor_name(fid), rerun_move);
        probe_finding(x, AF_V_NONDETERMINISTIC, fid, fb, fh, fr, fd, fva, fvb, x->tol[fid], msg);
        moved = 0;
    }
    if (moved) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "stale data: %s in %lld input elements of no valid token (padding rows, page tails, gaps) changed "
                 "%s b%d h%d %s %d %.6g -> %.6g; %lld output elements moved",
                 what, filled, af_tensor_name(fid), fb, fh, af_tensor_is_kv(fid) ? "key" : "row", fr, fva, fvb, moved);
        probe_finding(x, nonfinite ? AF_V_NAN_INF : AF_V_LEAK, fid, fb, fh, fr, fd, fva, fvb,
                      x->exact ? 0 : x->tol[fid], msg);
    }
    probe_work_end(x, &w);
}

void probe_stale(probe_ctx *x) {
    stale_run(x, STALE_NAN);
    if (!x->stop) stale_run(x, STALE_HUGE);
}
