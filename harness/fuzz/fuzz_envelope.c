/* fuzz_envelope.c — per-cell decline counts and the redraw rule (fuzz/fuzz_envelope.h). */
#include "fuzz/fuzz_envelope.h"

#include <stdio.h>
#include <string.h>

#include "util/json.h"

void af_envelope_init(af_fuzz_envelope *e, const char *backend) {
    memset(e, 0, sizeof *e);
    snprintf(e->backend, sizeof e->backend, "%s", backend ? backend : "");
}

/* "64-127" or "64-127/odd8": the log2 bucket of d and whether d % 8 != 0. */
static void dim_class(int d, char *buf, size_t cap) {
    int lo = 1;
    while (lo * 2 <= d) lo *= 2;
    snprintf(buf, cap, "%d-%d%s", lo, lo * 2 - 1, d % 8 ? "/odd8" : "");
}

void af_envelope_cell_key(const af_case *c, char *buf, size_t cap) {
    char dqk[32], dv[32];
    dim_class(c->head_dim_qk, dqk, sizeof dqk);
    dim_class(c->head_dim_v, dv, sizeof dv);
    const char *mask = c->mask != AF_MASK_CAUSAL ? "none" : c->align == AF_ALIGN_BOTTOM_RIGHT ? "causal_br" : "causal";
    bool window = c->window_left >= 0 || c->window_right >= 0;
    snprintf(buf, cap, "%s dqk=%s dv=%s mask=%s win=%s layout=%s pad=%s paged=%s bwd=%s", af_dtype_name(c->dtype), dqk,
             dv, mask, window ? "yes" : "no", af_layout_name(c->layout), c->has_seqlens ? "yes" : "no",
             c->page_size ? "yes" : "no", c->backward ? "yes" : "no");
}

static af_envelope_cell *find_cell(const af_fuzz_envelope *e, const char *key) {
    for (int i = 0; i < e->n_cells; i++)
        if (strcmp(e->cells[i].key, key) == 0) return (af_envelope_cell *)&e->cells[i];
    return NULL;
}

void af_envelope_note(af_fuzz_envelope *e, const af_case *c, bool declined, const char *reason) {
    char key[AF_ENVELOPE_KEY_MAX];
    af_envelope_cell_key(c, key, sizeof key);
    af_envelope_cell *cell = find_cell(e, key);
    if (!cell) {
        if (e->n_cells == AF_ENVELOPE_CELLS) {
            e->dropped++;
            return;
        }
        cell = &e->cells[e->n_cells++];
        memset(cell, 0, sizeof *cell);
        snprintf(cell->key, sizeof cell->key, "%s", key);
    }
    cell->runs++;
    if (declined) {
        cell->declines++;
        cell->decline_streak++;
        snprintf(cell->reason, sizeof cell->reason, "%s", reason ? reason : "");
    } else {
        cell->decline_streak = 0;
    }
}

static bool cell_outside(const af_envelope_cell *cell) {
    return cell && cell->decline_streak >= AF_ENVELOPE_LEARN_AFTER;
}

bool af_envelope_outside(const af_fuzz_envelope *e, const af_case *c) {
    char key[AF_ENVELOPE_KEY_MAX];
    af_envelope_cell_key(c, key, sizeof key);
    return cell_outside(find_cell(e, key));
}

bool af_envelope_redraw(af_fuzz_envelope *e, const af_case *c, uint64_t rnd) {
    if (!af_envelope_outside(e, c)) return false;
    if (rnd % AF_ENVELOPE_EXPLORE == 0) {
        e->explored++;
        return false;
    }
    e->redrawn++;
    return true;
}

json_t *af_envelope_json(const af_fuzz_envelope *e) {
    json_t *outside = json_array();
    for (int i = 0; outside && i < e->n_cells; i++) {
        const af_envelope_cell *cell = &e->cells[i];
        if (!cell_outside(cell)) continue;
        json_array_append_new(outside, json_pack("{s:o, s:I, s:I, s:o}", "cell", af_json_text(cell->key), "runs",
                                                 (json_int_t)cell->runs, "declines", (json_int_t)cell->declines,
                                                 "reason", af_json_text(cell->reason)));
    }
    if (!outside) return NULL;
    return json_pack("{s:o, s:I, s:I, s:i, s:I, s:o}", "backend", af_json_text(e->backend), "redrawn",
                     (json_int_t)e->redrawn, "explored", (json_int_t)e->explored, "cells_seen", e->n_cells,
                     "cells_dropped", (json_int_t)e->dropped, "outside", outside);
}
