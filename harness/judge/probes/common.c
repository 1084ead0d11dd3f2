/* common.c — the probes' shared machinery (common.h): the choice stream, notes and
 * findings, element access and bitwise comparison, extra runs on a copy of the
 * template, the focus's mask rule. */
#include "judge/probes/common.h"
#include "util/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/clone.h"

uint64_t probe_rng_next(probe_rng *r) { return af_rng_splitmix64(r->key ^ af_rng_splitmix64(r->counter++)); }
int probe_rng_below(probe_rng *r, int n) { return n <= 1 ? 0 : (int)(probe_rng_next(r) % (uint64_t)n); }

const af_tensor_id probe_outputs[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};

void probe_note(probe_ctx *x, const char *fmt, const char *arg) {
    size_t len = strlen(x->st->notes);
    if (len + 2 >= sizeof x->st->notes) return;
    if (len) {
        x->st->notes[len++] = ';';
        x->st->notes[len++] = ' ';
        x->st->notes[len] = '\0';
    }
    snprintf(x->st->notes + len, sizeof x->st->notes - len, fmt, arg);
}

void probe_finding(probe_ctx *x, af_verdict_kind kind, af_tensor_id t, int b, int h, int row, int col, double before,
                   double after, double tol, const char *detail) {
    af_finding f = af_finding_at(kind, t, b, h, row, t == AF_T_LSE ? -1 : col, detail);
    f.kernel_value = after;
    f.baseline_value = before;
    f.error = fabs(after - before);
    f.allowed = tol;
    f.ratio = tol > 0 ? f.error / tol : 0;
    af_verdict_add(x->v, &f);
}

/* ---- element access ------------------------------------------------------------------ */

double probe_load(const af_tensors *t, af_tensor_id id, int64_t off) {
    const af_tensor_view *w = &t->plan.view[id];
    return af_output_descale(t, id) * af_storage_load(w->storage, t->buf[w->buffer], off);
}
bool probe_same_bits(const af_tensors *a, const af_tensors *b, af_tensor_id id, int64_t off) {
    const af_tensor_view *w = &a->plan.view[id];
    int n = af_storage_bytes(w->storage);
    return memcmp((const uint8_t *)a->buf[w->buffer] + off * n, (const uint8_t *)b->buf[w->buffer] + off * n,
                  (size_t)n) == 0;
}

bool probe_row_same_bits(const af_tensors *a, const af_tensors *b, af_tensor_id id, int bb, int h, int s) {
    const af_tensor_view *w = &a->plan.view[id];
    size_t n = (size_t)af_storage_bytes(w->storage);
    int64_t off_a = offset_of(a, id, bb, h, s, 0), off_b = offset_of(b, id, bb, h, s, 0); /* each its own layout */
    return memcmp((const uint8_t *)a->buf[w->buffer] + off_a * n, (const uint8_t *)b->buf[w->buffer] + off_b * n,
                  n * (size_t)w->D) == 0;
}

bool probe_buffer_identical(const af_tensors *a, const af_tensors *b, af_tensor_id id) {
    const af_tensor_view *w = &a->plan.view[id];
    af_buffer_id buf = w->buffer;
    if (!a->buf[buf] || !b->buf[buf] || a->bytes[buf] != b->bytes[buf]) return false;
    return memcmp(a->buf[buf], b->buf[buf], a->bytes[buf]) == 0;
}

bool probe_moved(const probe_ctx *x, const af_tensors *a, const af_tensors *b, af_tensor_id id, int64_t off, double *va,
                 double *vb) {
    *va = probe_load(a, id, off);
    *vb = probe_load(b, id, off);
    if (x->exact) return !probe_same_bits(a, b, id, off);
    if (isnan(*va) || isnan(*vb)) return !(isnan(*va) && isnan(*vb));
    if (*va == *vb) return false;
    return !(fabs(*va - *vb) <= x->tol[id]);
}

/* ---- extra runs ------------------------------------------------------------------------- */

int probe_work_begin(probe_ctx *x, const af_case *cc, af_tensors *w) {
    char why[256];
    if (af_clone_tensors(w, cc, x->tg->template_tensors, x->tg->clones, why, sizeof why)) {
        probe_note(x, "no memory for a probe run: %s", why);
        return -1;
    }
    return 0;
}

void probe_work_end(probe_ctx *x, af_tensors *w) { af_clone_release(w, x->tg->clones); }

int probe_work_run(probe_ctx *x, const af_case *cc, af_tensors *w, const char *what) {
    return probe_work_run_on(x, x->tg->be, cc, w, what);
}

int probe_work_run_on(probe_ctx *x, af_backend *be, const af_case *cc, af_tensors *w, const char *what) {
    af_run_info info;
    memset(&info, 0, sizeof info);
    info.workspace_bytes = -1;
    char why[512] = "";
    x->st->extra_runs++;
    double t0 = af_clock_mono();
    af_run_status rs = af_backend_run(be, cc, x->tg->engine ? x->tg->engine : "", w, &info, why, sizeof why);
    x->st->run_s += af_clock_mono() - t0;
    if (rs == AF_RUN_OK) return 0;
    x->st->failed_runs++;
    char msg[256];
    snprintf(msg, sizeof msg, "%s run failed (status %d): %s", what, (int)rs, why);
    probe_note(x, "%s", msg);
    if (rs == AF_RUN_CRASH || rs == AF_RUN_HANG) x->stop = true;
    return -1;
}

unsigned char *probe_owned_map(const probe_ctx *x, const af_tensors *w, af_buffer_id bid, int64_t *n) {
    *n = w->plan.buffer_elems[bid];
    if (!w->buf[bid] || *n <= 0) {
        *n = 0;
        return NULL;
    }
    unsigned char *owned = calloc((size_t)*n, 1);
    if (!owned) return NULL;
    af_tensor_id ins[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    for (int t = 0; t < (x->c->backward ? 4 : 3); t++) {
        const af_tensor_view *v = &w->plan.view[ins[t]];
        if (v->buffer != bid) continue;
        for (int b = 0; b < v->B; b++)
            for (int s = 0; s < rows_in_buffer(x, ins[t], b); s++)
                for (int h = 0; h < v->H; h++) /* a row: D contiguous elements (model/layout.h) */
                    memset(owned + offset_of(w, ins[t], b, h, s, 0), 1, (size_t)v->D);
    }
    return owned;
}

/* ---- the mask rule of the focus, rows ------------------------------------------------ */

int probe_visible_range(const probe_ctx *x, int b, int i, int *lo, int *hi) {
    af_mask_keys k;
    *lo = 0;
    *hi = -1;
    if (af_mask_visible_keys(&x->rule, b, len_q(x, b), len_kv(x, b), i, &k) == 0) return 0;
    *lo = k.first[0];
    *hi = k.last[k.n - 1];
    return *hi - *lo + 1;
}

int probe_pick_row(probe_ctx *x, row_pred pred) {
    int lq = len_q(x, x->fb);
    if (lq <= 0) return -1;
    for (int t = 0; t < 16; t++) {
        int i = probe_rng_below(&x->rng, lq);
        if (pred(x, i)) return i;
    }
    int start = probe_rng_below(&x->rng, lq);
    for (int k = 0; k < lq; k++) {
        int i = (start + k) % lq;
        if (pred(x, i)) return i;
    }
    return -1;
}

bool probe_has_hidden_keys(const probe_ctx *x, int i) {
    int lo, hi, n = probe_visible_range(x, x->fb, i, &lo, &hi);
    return n > 0 && n < limit_kv(x);
}

/* ---- storage ----------------------------------------------------------------------- */

double probe_storage_max(af_storage st) { return af_storage_facts_of(st)->max_finite; }
