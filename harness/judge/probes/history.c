/* history.c — the process-history probe (AF_V_NONDETERMINISTIC, probes.h): a case's
 * outputs must not depend on what the backend ran before. Kernel libraries keep compiled
 * kernels, graphs and plans in a handle, keyed by what they were built for; a key that
 * leaves out a non-shape attribute (the score scale, the softcap, a stride) replays the
 * kernel built for an earlier case on a later one of the same shape (research C18: FA PR
 * #2402, #2745, flashinfer #4014). So after the judged run of case B, the sibling A (B
 * with the scale doubled: the same shape, one attribute other) runs on the same backend
 * instance, which has B in its history, and then on a fresh instance of the backend
 * (af_backend.fresh: the registry's constructor, a plugin's own instance), which has
 * nothing. The two runs of A must agree: bitwise on a deterministic backend, else within
 * the run-to-run tolerance (determinism.c; there a move that reruns of the unperturbed
 * case reproduce at half its size is run-to-run noise: a note). Two runs, the last
 * probe's (the instance has then run the case and the other probes' variants of it).
 *
 * When it runs: on backends that can keep state between runs, i.e. plugins (their
 * instance, plugin.h) and backends with a plan cache (af_backend.counters); every
 * backend offering a fresh instance with af_probe_opts.history_all (the cpu keeps none,
 * and its tests run it that way). A backend that cannot make a fresh instance is skipped
 * with a note. */
#include "judge/probes/common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "judge/clone.h"

/* The first judged output element where a and b (both laid out for case c) differ,
 * bitwise when exact, else beyond the tolerance; the count of such elements. */
typedef struct {
    long long moved;
    af_tensor_id id;
    int b, h, r, d;
    double va, vb;
} hist_diff;

static void compare(const probe_ctx *x, const af_case *c, const af_tensors *a, const af_tensors *b, hist_diff *df) {
    memset(df, 0, sizeof *df);
    for (int t = 0; t < n_outs(c); t++) {
        af_tensor_id id = probe_outputs[t];
        const af_tensor_view *v = &a->plan.view[id];
        for (int bb = 0; bb < v->B; bb++)
            for (int h = 0; h < v->H; h++)
                for (int r = 0; r < af_tensor_valid_rows(c, id, bb); r++) {
                    if (probe_row_same_bits(a, b, id, bb, h, r)) continue;
                    for (int d = 0; d < v->D; d++) {
                        double va, vb;
                        if (!probe_moved(x, a, b, id, offset_of(a, id, bb, h, r, d), &va, &vb)) continue;
                        if (df->moved++ == 0) {
                            df->id = id;
                            df->b = bb, df->h = h, df->r = r, df->d = d;
                            df->va = va, df->vb = vb;
                        }
                    }
                }
    }
}

/* Can be keep state between runs? (a plugin's instance, a plan cache) */
static bool keeps_state(const af_backend *be) { return (be->flags & AF_BACKEND_PLUGIN) || be->counters; }

void probe_history(probe_ctx *x) {
    const af_case *c = x->c;
    af_backend *be = x->tg->be;
    if (!x->o->history_all && !keeps_state(be)) return; /* nothing to remember: not run */
    if (!be->fresh) {
        probe_note(x, "history: skipped (backend %s cannot make a fresh instance)", be->name);
        return;
    }
    af_case sibling = *c; /* the same shape, the scale doubled */
    sibling.has_scale = true;
    sibling.scale = 2.0f * af_case_scale(c);
    const char *attribute = "scale";
    char why[256] = "";
    af_backend *fresh = be->fresh(be, why, sizeof why);
    if (!fresh) {
        probe_note(x, "history: no fresh instance: %s", why);
        return;
    }
    fresh->mark = be->mark; /* its calls are the backend's too */
    af_tensors after, alone;
    bool have_after = false, have_alone = false;
    if (probe_work_begin(x, &sibling, &after) == 0) {
        have_after = true;
        if (probe_work_begin(x, &sibling, &alone) == 0) have_alone = true;
    }
    /* A on this instance (B in its history), then A on the fresh one */
    if (have_alone && probe_work_run(x, &sibling, &after, "history") == 0 &&
        probe_work_run_on(x, fresh, &sibling, &alone, "history (fresh instance)") == 0) {
        x->st->history_runs += 2;
        hist_diff df;
        compare(x, &sibling, &after, &alone, &df);
        int rerun = -1;
        double seen = 0, move = isnan(df.va) || isnan(df.vb) ? INFINITY : fabs(df.va - df.vb);
        if (df.moved && !x->exact && probe_rerun_reproduces(x, df.id, move, &rerun, &seen)) {
            char note[160];
            snprintf(note, sizeof note, "moved %s by %.3g, rerun %d of the case by %.3g: run-to-run noise",
                     af_tensor_name(df.id), move, rerun, seen);
            probe_note(x, "history: %s", note);
        } else if (df.moved) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "history: %s %.6g>%.6g, the case run after the judged one: %s b%d h%d %s %d d%d is %.6g, %.6g "
                     "on a fresh instance; %lld elements differ (a kernel cache keyed without the %s?)",
                     attribute, (double)af_case_scale(c), (double)af_case_scale(&sibling), af_tensor_name(df.id), df.b,
                     df.h, af_tensor_is_kv(df.id) ? "key" : "row", df.r, df.d, df.va, df.vb, df.moved, attribute);
            probe_finding(x, AF_V_NONDETERMINISTIC, df.id, df.b, df.h, df.r, df.d, df.vb, df.va,
                          x->exact ? 0 : x->tol[df.id], msg);
        }
    }
    if (have_after) probe_work_end(x, &after);
    if (have_alone) probe_work_end(x, &alone);
    fresh->destroy(fresh);
}
