/* capacity.c — the capacity-invariance probe (AF_V_LEAK, probes.h): the same logical
 * case in a larger physical allocation must give the same outputs. The case is run
 * again with CAP_EXTRA_ROWS more rows after every sequence on both sides (seqlen_q and
 * seqlen_kv grow, the actual lengths stay: a case without lengths gets them) and a thd
 * gap CAP_EXTRA_ROWS tokens longer; only where the lengths cannot grow (the maximum
 * reached) a stride gap CAP_EXTRA_GAP elements longer instead. Growing the lengths alone
 * keeps the strides, so a backend that serves cases from a graph built for bucketed
 * maxima (cudnn's padded graphs) runs the enlarged case on the graph it already has
 * instead of building one (measured on the H200, mix of ci/bench_judge.sh: the probe was
 * 127 ms median per case with the gap grown too, nearly all of it a graph build); reads
 * past a head vector into a stride gap are the stale probe's (garbage in every gap). Every
 * input element that belongs to no valid token holds finite garbage (uniform in
 * [-4, 4]) and every valid token keeps its stored bits. A kernel that pads the key
 * loop to a tile and bounds it by the allocation instead of the sequence's length
 * (reads keys up to len rounded to the tile, cut at the capacity, unmasked) is right
 * while the allocation is tight and wrong once it is not: the bug class "pad to tile
 * without masking".
 *
 * A larger allocation may legitimately change the call (a padding mask or a varlen
 * path where there was none, a split heuristic keyed on the maximum length) and so the
 * last bits. So an output that moves is only a finding when the garbage itself reaches
 * it: a second run with other garbage must then move it again (bitwise on a
 * deterministic backend, else beyond the run-to-run tolerance, which reruns of the
 * unperturbed case are first offered to explain, as the stale probe does). A move that
 * the garbage does not explain is a note. One run, two when an output moved.
 *
 * Skipped: fp8, kv_dtype's fp8 K, V (per-tensor scales over the maximum shape), bias, dLSE and dropout (their
 * inputs are generated over the maximum shape, so a larger one gives other values), and
 * cases the model refuses to enlarge (page table full, context-parallel divisibility,
 * the maximum length reached). */
#include "judge/probes/common.h"
#include "util/parfor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CAP_EXTRA_ROWS 64 /* rows added after every sequence (a whole 64-key tile) */
#define CAP_EXTRA_GAP  8  /* elements added after every (token, head) vector */

static int clamp_gap(int g) { return g > 4096 ? 4096 : g; } /* the model's largest gap */

/* The enlarged case: 0, or -1 when the model refuses every enlargement. */
static int capacity_case(const af_case *c, af_case *out) {
    for (int attempt = 0; attempt < 2; attempt++) {
        *out = *c;
        if (!out->has_seqlens) {
            out->has_seqlens = true;
            for (int b = 0; b < c->batch; b++) {
                out->seqlens_q[b] = c->seqlen_q;
                out->seqlens_kv[b] = c->seqlen_kv;
            }
        }
        int room_q = AF_MAX_SEQLEN - c->seqlen_q, room_kv = AF_MAX_SEQLEN - c->seqlen_kv;
        int grow = room_q < room_kv ? room_q : room_kv; /* the same on both sides (qkv packing) */
        int step = c->cp_size > 1 ? 2 * c->cp_size : 1; /* context parallel: lengths divisible by 2 cp */
        int want = (CAP_EXTRA_ROWS + step - 1) / step * step;
        grow = grow < want ? grow / step * step : want;
        if (attempt == 0 && grow == 0) continue;
        out->seqlen_q += grow;
        out->seqlen_kv += grow;
        if (attempt == 1) { /* the lengths cannot grow: the stride gap alone */
            out->seqlen_q = c->seqlen_q;
            out->seqlen_kv = c->seqlen_kv;
            out->stride_gap = clamp_gap(c->stride_gap + CAP_EXTRA_GAP);
        }
        if (c->layout == AF_LAYOUT_THD) out->thd_gap = clamp_gap(c->thd_gap + CAP_EXTRA_ROWS);
        af_error e;
        if (af_case_validate(out, &e) == 0 && !af_case_equal(out, c)) return 0;
    }
    return -1;
}

/* Finite garbage in [-4, 4] for element e of a buffer: splitmix64's stream from the
 * fill's key (one hash an element). */
static float garbage(uint64_t key, int64_t e) {
    return (float)((double)(af_rng_splitmix64(key + (uint64_t)e) >> 11) * 0x1p-53 * 8.0 - 4.0);
}

/* One buffer's garbage fill, in chunks of GARBAGE_CHUNK elements on the parfor threads
 * (each chunk writes its own elements: the same bits whatever the thread count). */
#define GARBAGE_CHUNK 65536
typedef struct {
    void *buf; /* [elems] of storage st */
    af_storage st;
    int64_t elems;
    uint64_t key;
} garbage_fill;

static void garbage_chunk(void *ctx, long i) {
    const garbage_fill *g = ctx;
    int64_t e0 = (int64_t)i * GARBAGE_CHUNK, e1 = e0 + GARBAGE_CHUNK < g->elems ? e0 + GARBAGE_CHUNK : g->elems;
    for (int64_t e = e0; e < e1; e++) af_storage_store(g->st, g->buf, e, garbage(g->key, e));
}

static void fill_garbage(void *buf, af_storage st, int64_t elems, uint64_t key) {
    garbage_fill g = {buf, st, elems, key};
    long chunks = (long)((elems + GARBAGE_CHUNK - 1) / GARBAGE_CHUNK);
    af_parfor(chunks, af_parfor_threads(8.0 * (double)elems), garbage_chunk, &g);
}

/* The enlarged run's buffers: every input buffer filled with garbage, then the valid
 * tokens of the template copied bit for bit; outputs poisoned. */
static int capacity_tensors(probe_ctx *x, const af_case *cc, uint64_t key, af_tensors *t) {
    char why[256];
    if (af_tensors_alloc(t, cc, why, sizeof why)) {
        probe_note(x, "capacity: %s", why);
        return -1;
    }
    af_buffer_id bufs[4] = {AF_BUF_Q, AF_BUF_K, AF_BUF_V, AF_BUF_DO};
    for (int k = 0; k < (cc->backward ? 4 : 3); k++)
        if (t->buf[bufs[k]])
            fill_garbage(t->buf[bufs[k]], t->plan.buffer_storage[bufs[k]], t->plan.buffer_elems[bufs[k]],
                         key ^ af_rng_splitmix64((uint64_t)bufs[k]));
    const af_tensors *src = x->tg->template_tensors;
    af_tensor_id ins[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    for (int k = 0; k < (cc->backward ? 4 : 3); k++) {
        const af_tensor_view *sv = &src->plan.view[ins[k]], *tv = &t->plan.view[ins[k]];
        int64_t bytes = af_storage_bytes(sv->storage);
        for (int b = 0; b < sv->B; b++)
            for (int h = 0; h < sv->H; h++)
                for (int s = 0; s < judged_rows(x, ins[k], b); s++) /* a row: D contiguous elements */
                    memcpy((uint8_t *)t->buf[tv->buffer] + offset_of(t, ins[k], b, h, s, 0) * bytes,
                           (const uint8_t *)src->buf[sv->buffer] + offset_of(src, ins[k], b, h, s, 0) * bytes,
                           (size_t)(bytes * sv->D));
    }
    af_tensors_poison_outputs(t, cc);
    return 0;
}

/* The first judged output element of a that differs from b (bitwise when exact, else
 * beyond the tolerance; both laid out for their own case): the count moved, the first
 * position and values, and the largest move on the first one's tensor. */
typedef struct {
    long long moved;
    af_tensor_id id;
    int b, h, r, d;
    double va, vb, worst;
} cap_diff;

static bool elem_moved(const probe_ctx *x, af_tensor_id id, const af_tensors *a, int64_t oa, const af_tensors *b,
                       int64_t ob, double *va, double *vb) {
    const af_tensor_view *w = &a->plan.view[id];
    int n = af_storage_bytes(w->storage);
    *va = probe_load(a, id, oa);
    *vb = probe_load(b, id, ob);
    if (x->exact)
        return memcmp((const uint8_t *)a->buf[w->buffer] + oa * n, (const uint8_t *)b->buf[w->buffer] + ob * n,
                      (size_t)n) != 0;
    if (isnan(*va) || isnan(*vb)) return !(isnan(*va) && isnan(*vb));
    return *va != *vb && !(fabs(*va - *vb) <= x->tol[id]);
}

static void compare(const probe_ctx *x, const af_tensors *a, const af_tensors *b, cap_diff *df) {
    memset(df, 0, sizeof *df);
    for (int t = 0; t < n_outs(x->c); t++) {
        af_tensor_id id = probe_outputs[t];
        const af_tensor_view *v = &a->plan.view[id];
        for (int bb = 0; bb < v->B; bb++)
            for (int h = 0; h < v->H; h++)
                for (int r = 0; r < judged_rows(x, id, bb); r++) {
                    /* the same bits in the whole row (the usual case): nothing moved in it */
                    if (probe_row_same_bits(a, b, id, bb, h, r)) continue;
                    for (int d = 0; d < v->D; d++) {
                        double va, vb;
                        if (!elem_moved(x, id, a, offset_of(a, id, bb, h, r, d), b, offset_of(b, id, bb, h, r, d), &va,
                                        &vb))
                            continue;
                        double move = isnan(va) || isnan(vb) ? INFINITY : fabs(vb - va);
                        if (df->moved++ == 0) {
                            df->id = id;
                            df->b = bb, df->h = h, df->r = r, df->d = d;
                            df->va = va, df->vb = vb;
                        }
                        if (id == df->id && move > df->worst) df->worst = move;
                    }
                }
    }
}

/* Why the probe skips c ("" = it runs), from the case alone. */
static const char *capacity_skip(const af_case *c) {
    if (af_dtype_is_fp8(c->dtype) || c->kv_dtype != AF_KV_SAME)
        return "capacity: skipped (fp8 scales are per tensor, over the maximum shape)";
    if (c->bias != AF_BIAS_NONE || c->dlse || c->dropout_p != 0.0)
        return "capacity: skipped (bias, dLSE and dropout are generated over the maximum shape)";
    return "";
}

int probe_capacity_cases(const af_case *c, af_case *out, int cap) {
    return cap >= 1 && !capacity_skip(c)[0] && capacity_case(c, out) == 0 ? 1 : 0;
}

void probe_capacity(probe_ctx *x) {
    const af_case *c = x->c;
    const char *skip = capacity_skip(c);
    if (skip[0]) {
        probe_note(x, "%s", skip);
        return;
    }
    af_case cc;
    if (capacity_case(c, &cc)) {
        probe_note(x, "%s", "capacity: the model refuses a larger allocation of this case");
        return;
    }
    uint64_t key = af_rng_splitmix64(c->seed ^ 0x434150ull ^ af_rng_splitmix64(x->o->salt));
    af_tensors first;
    if (capacity_tensors(x, &cc, key, &first)) return;
    if (probe_work_run(x, &cc, &first, "capacity")) {
        af_tensors_free(&first);
        return;
    }
    x->st->capacity_runs++;
    cap_diff moved;
    compare(x, &first, x->tg->baseline, &moved);
    if (!moved.moved) {
        af_tensors_free(&first);
        return;
    }
    af_tensors second;
    if (capacity_tensors(x, &cc, af_rng_splitmix64(key + 1), &second)) {
        af_tensors_free(&first);
        return;
    }
    if (probe_work_run(x, &cc, &second, "capacity")) {
        af_tensors_free(&first);
        af_tensors_free(&second);
        return;
    }
    x->st->capacity_runs++;
    cap_diff df;
    compare(x, &second, &first, &df);
    char msg[320];
    if (!df.moved) {
        snprintf(msg, sizeof msg,
                 "capacity: %lld output elements moved in a larger allocation, the same with other garbage in it "
                 "(another path or split for the larger shape, not its contents)",
                 moved.moved);
        probe_note(x, "%s", msg);
    } else {
        const char *side = af_tensor_is_kv(df.id) ? "key" : "row";
        int rerun = -1;
        double rerun_move = 0;
        if (!x->exact && probe_rerun_reproduces(x, df.id, df.worst, &rerun, &rerun_move)) {
            snprintf(msg, sizeof msg,
                     "capacity: other garbage in a larger allocation moved %s b%d h%d %s %d by %.3g, but rerun %d of "
                     "the unperturbed case moved %s by %.3g: run-to-run differences, not a leak",
                     af_tensor_name(df.id), df.b, df.h, side, df.r, df.worst, rerun, af_tensor_name(df.id), rerun_move);
            probe_finding(x, AF_V_NONDETERMINISTIC, df.id, df.b, df.h, df.r, df.d, df.vb, df.va, x->tol[df.id], msg);
        } else {
            int64_t ob = offset_of(x->tg->baseline, df.id, df.b, df.h, df.r, df.d);
            double judged = probe_load(x->tg->baseline, df.id, ob);
            char thd[32] = "";
            if (c->layout == AF_LAYOUT_THD) snprintf(thd, sizeof thd, ", thd_gap %d>%d", c->thd_gap, cc.thd_gap);
            snprintf(msg, sizeof msg,
                     "capacity: in a larger allocation (seqlen %d>%d / %d>%d, stride_gap %d>%d%s; garbage where no "
                     "token lives) %s b%d h%d %s %d is %.5g, %.5g with other garbage (judged %.5g): padding reaches "
                     "outputs (pad to tile unmasked?); %lld elements differ",
                     c->seqlen_q, cc.seqlen_q, c->seqlen_kv, cc.seqlen_kv, c->stride_gap, cc.stride_gap, thd,
                     af_tensor_name(df.id), df.b, df.h, side, df.r, df.vb, df.va, judged, df.moved);
            probe_finding(x, AF_V_LEAK, df.id, df.b, df.h, df.r, df.d, judged, df.va, x->exact ? 0 : x->tol[df.id],
                          msg);
        }
    }
    af_tensors_free(&first);
    af_tensors_free(&second);
}
