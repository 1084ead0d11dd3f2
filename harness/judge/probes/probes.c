/* probes.c — the probes' entry point (probes.h): options, the focus (the sequence and
 * head the perturbations live in), and the order determinism -> convention -> batch ->
 * visibility -> stale -> capacity -> inclusion -> feature -> scales -> dropout -> history ->
 * metadata. The probes themselves are the other files of this folder
 * (common.h lists them). */
#include "judge/probes/common.h"
#include "util/clock.h"
#include "util/stage_mark.h"

#include <stdlib.h>
#include <string.h>

#include "judge/problem.h"

void af_probe_opts_default(af_probe_opts *o) {
    memset(o, 0, sizeof *o);
    o->determinism = o->visibility = o->inclusion = o->feature = true;
    o->convention = o->batch = o->stale = o->scales = true;
    o->dropout = o->capacity = o->history = o->metadata = true;
    o->leak_reruns = 4;
    o->determinism_runs = 1;
    o->visibility_runs = 3;
    o->feature_runs = 3;
    o->keys_per_set = 8;
}

int af_probes_variant_cases(const af_probe_opts *o, const af_case *c, af_case *out, int cap) {
    int n = 0;
    if (o->capacity) n += probe_capacity_cases(c, out + n, cap - n);
    if (o->feature) n += probe_feature_cases(o, c, out + n, cap - n);
    return n;
}

void af_leak_matrix_free(af_leak_matrix *m) {
    if (!m) return;
    free(m->cells);
    free(m->row_labels);
    free(m->col_labels);
    memset(m, 0, sizeof *m);
}

/* ---- the focus and the entry point ---------------------------------------------------- */

/* The (sequence, head) the perturbations live in: a sequence with rows and keys,
 * preferring one where some row has hidden keys. */
static void choose_focus(probe_ctx *x) {
    const af_case *c = x->c;
    int start = probe_rng_below(&x->rng, c->batch), fallback = -1;
    x->fb = -1;
    for (int k = 0; k < c->batch && x->fb < 0; k++) {
        int b = (start + k) % c->batch;
        if (len_q(x, b) <= 0 || len_kv(x, b) <= 0) continue;
        if (fallback < 0) fallback = b;
        x->fb = b;
        if (probe_pick_row(x, probe_has_hidden_keys) < 0) x->fb = -1;
    }
    if (x->fb < 0) x->fb = fallback;
    x->fh = probe_rng_below(&x->rng, c->heads_q);
    x->fg = x->fh / x->group;
}

int af_probes_run(const af_probe_opts *o, const af_probe_target *tg, af_verdict *v, af_leak_matrix *leaks,
                  af_probe_stats *stats) {
    return af_probes_run_with(o, tg, NULL, v, leaks, stats);
}

const char *const af_probe_names[AF_PROBE_COUNT] = {"determinism", "convention", "batch",   "visibility",
                                                    "stale",       "inclusion",  "feature", "scales_dropout",
                                                    "capacity",    "history",    "metadata"};

int af_probes_run_with(const af_probe_opts *o, const af_probe_target *tg, const af_probe_runs *runs, af_verdict *v,
                       af_leak_matrix *leaks, af_probe_stats *stats) {
    af_probe_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (leaks) memset(leaks, 0, sizeof *leaks);
    if (!o || !tg || !tg->c || !tg->template_tensors || !tg->inputs || !tg->baseline || !tg->be) return 0;
    int before = v->n_findings;
    probe_ctx x;
    memset(&x, 0, sizeof x);
    x.o = o;
    x.tg = tg;
    x.c = tg->c;
    x.v = v;
    x.st = stats;
    x.rule = af_mask_rule_of_case(tg->c);
    x.group = tg->c->heads_q / tg->c->heads_kv;
    x.runs = runs;
    x.next_run = 1 + (runs ? runs->n_repeats : 0);
    x.rng.key = af_rng_splitmix64(tg->c->seed ^ 0x50524F4245ull ^ af_rng_splitmix64(o->salt));
    choose_focus(&x);
    if (x.fb < 0) {
        probe_note(&x, "%s", "no sequence has both rows and keys: nothing to probe");
        return 0;
    }
    double t = af_clock_mono(), t1;
    /* each probe's name into the process's mark (util/stage_mark.h): a deadline that
     * finds a probe's rerun in the backend says which probe ran it */
#define PROBE_TIMED(k, call)                                                                                           \
    (af_stage_mark_step(tg->be->mark, af_probe_names[k]), call, t1 = af_clock_mono(), stats->probe_s[k] += t1 - t,     \
     t = t1)
    PROBE_TIMED(0, probe_determinism(&x));
    stats->exact = x.exact;
    for (int k = 0; k < AF_T_COUNT; k++) stats->tolerance[k] = x.exact ? 0 : x.tol[k];
    if (af_case_heads_v(tg->c) != tg->c->heads_kv) { /* the probes below follow one K/V head */
        probe_note(&x, "%s", "heads_v != heads_kv: the input probes read one K/V head group; only determinism ran");
        return v->n_findings - before;
    }
    if (o->convention && !x.stop) PROBE_TIMED(1, probe_convention(&x));
    if (o->batch && !x.stop) PROBE_TIMED(2, probe_batch(&x));
    if (o->visibility && !x.stop) PROBE_TIMED(3, probe_visibility(&x, leaks));
    if (o->stale && !x.stop) PROBE_TIMED(4, probe_stale(&x));
    if (o->capacity && !x.stop) PROBE_TIMED(8, probe_capacity(&x));
    /* dropout_rng = kernel without a returned mask: which P the kernel dropped is unknown,
     * so the probes that weigh P by the mask (expect.h) cannot say what it must give */
    bool unknown_mask = x.c->dropout_rng == AF_DROPOUT_RNG_KERNEL && !tg->inputs->feat.dropout_keep;
    if (unknown_mask && (o->inclusion || o->feature))
        probe_note(&x, "%s", "inclusion, feature: skipped (dropout_rng = kernel and the kernel returned no mask)");
    if (o->inclusion && !x.stop && !unknown_mask) PROBE_TIMED(5, probe_inclusion(&x));
    if (o->feature && !x.stop && !unknown_mask) PROBE_TIMED(6, probe_feature(&x));
    if (o->scales && !x.stop) PROBE_TIMED(7, probe_scales(&x));
    if (o->dropout && !x.stop) PROBE_TIMED(7, probe_dropout(&x));
    /* last: the instance has run the case and its variants (the other probes' schedules
       of runs stay as they were) */
    if (o->history && !x.stop) PROBE_TIMED(9, probe_history(&x));
    /* after history, so that its runs on the instance stay as they were */
    if (o->metadata && !x.stop) PROBE_TIMED(10, probe_metadata(&x));
#undef PROBE_TIMED
    return v->n_findings - before;
}
