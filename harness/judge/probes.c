/* probes.c — determinism, visibility, inclusion and feature probes (see probes.h).
 *
 * Every probe is built so that a correct kernel cannot fail it:
 *  - visibility compares only outputs that the oracle's mask rule makes independent
 *    of every perturbed input, bitwise (or within the measured run-to-run spread);
 *  - inclusion and feature demand a change only where the exact change (fp64, from the
 *    exact stored inputs) exceeds twice a generous bound on a correct kernel's error
 *    plus the run-to-run tolerance; rows whose scores fp32 cannot resolve are skipped.
 * The bound on a correct kernel's error of O_d is eps * sum_j P_j |v_jd| + ulp * |O_d|
 * (eps: P rounded to the dtype, 8x-16x slack; plus the fp32 score error), of LSE
 * 2^-10 (1 + |LSE|) plus the score error.
 */
#include "judge/probes.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gen.h"
#include "oracle/mask_spec.h"

void af_probe_opts_default(af_probe_opts *o) {
    memset(o, 0, sizeof *o);
    o->determinism = o->visibility = o->inclusion = o->feature = true;
    o->determinism_runs = 1;
    o->visibility_runs = 3;
    o->feature_runs = 3;
    o->keys_per_set = 8;
}

void af_leak_matrix_free(af_leak_matrix *m) {
    if (!m) return;
    free(m->cells);
    free(m->row_labels);
    free(m->col_labels);
    memset(m, 0, sizeof *m);
}

/* ---- deterministic choices: a counter-based stream from the case seed ------------- */

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

typedef struct { uint64_t key, counter; } probe_rng;

static uint64_t rng_next(probe_rng *r) { return mix64(r->key ^ mix64(r->counter++)); }
static int rng_below(probe_rng *r, int n) { return n <= 1 ? 0 : (int)(rng_next(r) % (uint64_t)n); }

/* ---- the probing context ------------------------------------------------------------ */

typedef struct {
    const af_probe_opts *o;
    const af_probe_target *tg;
    const af_case *c;
    af_verdict *v;
    af_probe_stats *st;
    af_mask_rule rule;
    int group;               /* heads_q / heads_kv */
    probe_rng rng;
    int fb, fh, fg;          /* focus: sequence, query head, its kv head */
    bool exact;              /* compare bits (deterministic backend) */
    double tol[AF_T_COUNT];  /* allowed run-to-run |difference| when !exact */
    bool stop;               /* a run crashed: the process state is suspect */
} probe_ctx;

static const af_tensor_id k_outs[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};

static int n_outs(const af_case *c) { return c->backward ? 5 : 2; }
static bool kv_side(af_tensor_id t) { return t == AF_T_K || t == AF_T_V || t == AF_T_DK || t == AF_T_DV; }
static int len_q(const probe_ctx *x, int b) { return af_case_len_q(x->c, b); }
static int len_kv(const probe_ctx *x, int b) { return af_case_len_kv(x->c, b); }

/* Rows of tensor id that exist in memory for sequence b (ragged: the actual length). */
static int rows_in_buffer(const probe_ctx *x, af_tensor_id id, int b) {
    const af_tensor_view *w = &x->tg->template_tensors->plan.view[id];
    if (!w->ragged) return w->S;
    return kv_side(id) ? len_kv(x, b) : len_q(x, b);
}
/* Rows of an output that are judged (valid tokens). */
static int judged_rows(const probe_ctx *x, af_tensor_id id, int b) {
    return kv_side(id) ? len_kv(x, b) : len_q(x, b);
}

static void note(probe_ctx *x, const char *fmt, const char *arg) {
    size_t len = strlen(x->st->notes);
    if (len + 2 >= sizeof x->st->notes) return;
    if (len) {
        x->st->notes[len++] = ';';
        x->st->notes[len++] = ' ';
        x->st->notes[len] = '\0';
    }
    snprintf(x->st->notes + len, sizeof x->st->notes - len, fmt, arg);
}

static void add_finding(probe_ctx *x, af_verdict_kind kind, af_tensor_id t, int b, int h, int row,
                        int col, double before, double after, double tol, const char *detail) {
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor = t;
    f.b = b; f.h = h; f.row = row; f.col = t == AF_T_LSE ? -1 : col;
    f.kernel_value = after;
    f.oracle_value = before;
    f.error = fabs(after - before);
    f.floor = tol;
    f.ratio = tol > 0 ? f.error / tol : 0;
    snprintf(f.detail, sizeof f.detail, "%s", detail);
    af_verdict_add(x->v, &f);
}

/* ---- element access ------------------------------------------------------------------ */

static int64_t offset_of(const af_tensors *t, af_tensor_id id, int b, int h, int s, int d) {
    return af_layout_offset(&t->plan, id, b, h, s, d);
}
/* Logical value of a stored output element (fp8_e4m3's E4M3 O and gradients times
 * their descale, exact), so tolerances and the inclusion probe's bounds share units. */
static double load_at(const af_tensors *t, af_tensor_id id, int64_t off) {
    const af_tensor_view *w = &t->plan.view[id];
    return af_output_descale(t, id) * af_storage_load(w->storage, t->buf[w->buffer], off);
}
static bool same_bits(const af_tensors *a, const af_tensors *b, af_tensor_id id, int64_t off) {
    const af_tensor_view *w = &a->plan.view[id];
    int n = af_storage_bytes(w->storage);
    return memcmp((const uint8_t *)a->buf[w->buffer] + off * n, (const uint8_t *)b->buf[w->buffer] + off * n,
                  (size_t)n) == 0;
}

/* Did element off of tensor id move between runs a and b by more than run-to-run
 * noise explains? */
static bool moved(const probe_ctx *x, const af_tensors *a, const af_tensors *b, af_tensor_id id,
                  int64_t off, double *va, double *vb) {
    *va = load_at(a, id, off);
    *vb = load_at(b, id, off);
    if (x->exact) return !same_bits(a, b, id, off);
    if (isnan(*va) || isnan(*vb)) return !(isnan(*va) && isnan(*vb));
    if (*va == *vb) return false;
    return !(fabs(*va - *vb) <= x->tol[id]);
}

/* ---- extra runs ------------------------------------------------------------------------- */

/* A working copy of the template (mxfp8 scales shared read-only, as in runner.c). */
static int work_begin(probe_ctx *x, const af_case *cc, af_tensors *w) {
    char why[256];
    if (af_tensors_alloc(w, cc, why, sizeof why)) {
        note(x, "no memory for a probe run: %s", why);
        return -1;
    }
    const af_tensors *tp = x->tg->template_tensors;
    af_tensors_copy(w, tp);
    w->mx_scale_q = tp->mx_scale_q;
    w->mx_scale_k = tp->mx_scale_k;
    w->mx_scale_v = tp->mx_scale_v;
    return 0;
}

static void work_end(af_tensors *w) {
    w->mx_scale_q = w->mx_scale_k = w->mx_scale_v = NULL;
    af_tensors_free(w);
}

/* Run the backend on case cc and buffers w. 0 when it ran. */
static int work_run(probe_ctx *x, const af_case *cc, af_tensors *w, const char *what) {
    af_run_info info;
    memset(&info, 0, sizeof info);
    info.workspace_bytes = -1;
    char why[512] = "";
    af_backend *be = x->tg->be;
    x->st->extra_runs++;
    af_run_status rs = be->run(be, cc, x->tg->engine ? x->tg->engine : "", w, &info, why, sizeof why);
    if (rs == AF_RUN_OK) return 0;
    x->st->failed_runs++;
    char msg[256];
    snprintf(msg, sizeof msg, "%s run failed (status %d): %s", what, (int)rs, why);
    note(x, "%s", msg);
    if (rs == AF_RUN_CRASH) x->stop = true;
    return -1;
}

/* ---- the mask rule and dependencies ------------------------------------------------- */

static int visible_range(const probe_ctx *x, int b, int i, int *lo, int *hi) {
    return af_mask_visible_range(&x->rule, len_q(x, b), len_kv(x, b), i, lo, hi);
}

/* A hidden set: what one visibility run perturbs, all inside the focus (fb, fg, fh),
 * plus (garbage) padding rows and gaps of every sequence. */
typedef struct {
    char label[AF_LEAK_LABEL];
    unsigned char *key_hit;   /* (Skv) K and V tokens of (fb, fg) */
    unsigned char *row_hit;   /* (Sq)  Q (and dO) rows of (fb, fh) */
    int *key_prefix;          /* (Skv + 1) prefix counts of key_hit */
    int *row_prefix;          /* (Sq + 1) */
    bool garbage;
} hidden_set;

static int count_in(const int *prefix, int lo, int hi) { return lo > hi ? 0 : prefix[hi + 1] - prefix[lo]; }

static void set_free(hidden_set *s) {
    free(s->key_hit); free(s->row_hit); free(s->key_prefix); free(s->row_prefix);
    memset(s, 0, sizeof *s);
}

static int set_alloc(const probe_ctx *x, hidden_set *s) {
    memset(s, 0, sizeof *s);
    size_t skv = (size_t)x->c->seqlen_kv, sq = (size_t)x->c->seqlen_q;
    s->key_hit = calloc(skv + 1, 1);
    s->row_hit = calloc(sq + 1, 1);
    s->key_prefix = calloc(skv + 1, sizeof(int));
    s->row_prefix = calloc(sq + 1, sizeof(int));
    if (!s->key_hit || !s->row_hit || !s->key_prefix || !s->row_prefix) { set_free(s); return -1; }
    return 0;
}

static void set_finish(const probe_ctx *x, hidden_set *s) {
    for (int j = 0; j < x->c->seqlen_kv; j++) s->key_prefix[j + 1] = s->key_prefix[j] + s->key_hit[j];
    for (int i = 0; i < x->c->seqlen_q; i++) s->row_prefix[i + 1] = s->row_prefix[i] + s->row_hit[i];
}

static bool set_empty(const probe_ctx *x, const hidden_set *s) {
    return !s->garbage && s->key_prefix[x->c->seqlen_kv] == 0 && s->row_prefix[x->c->seqlen_q] == 0;
}

/* Can the set reach row output (b, h, i) (O, LSE, dQ)? */
static bool row_reached(const probe_ctx *x, const hidden_set *s, int b, int h, int i) {
    if (b != x->fb || h / x->group != x->fg) return false;
    int lo, hi;
    if (visible_range(x, b, i, &lo, &hi) == 0) return false; /* fully masked: constant */
    if (count_in(s->key_prefix, lo, hi) > 0) return true;
    return h == x->fh && s->row_hit[i];
}

/* Can the set reach key output (b, g, j) (dK, dV)? dK_j, dV_j depend on q_i, dO_i of the
 * rows i that see j and, through their O_i and LSE_i, on every key those rows see: the
 * union of the rows' visible intervals, which is [lo(r0), hi(r1)] because both ends of
 * a row's interval grow with i (min/max taken anyway). */
static bool key_reached(const probe_ctx *x, const hidden_set *s, int b, int g, int j) {
    if (b != x->fb || g != x->fg) return false;
    int lq = len_q(x, b), lk = len_kv(x, b), r0, r1;
    if (af_mask_rows_seeing_key(&x->rule, lq, lk, j, &r0, &r1) == 0) return false; /* dK_j = 0 */
    int lo0, hi0, lo1, hi1;
    visible_range(x, b, r0, &lo0, &hi0);
    visible_range(x, b, r1, &lo1, &hi1);
    int lo = lo0 < lo1 ? lo0 : lo1, hi = hi0 > hi1 ? hi0 : hi1;
    if (count_in(s->key_prefix, lo, hi) > 0) return true;
    return count_in(s->row_prefix, r0, r1) > 0;
}

static bool output_reached(const probe_ctx *x, const hidden_set *s, af_tensor_id id, int b, int h, int r) {
    return kv_side(id) ? key_reached(x, s, b, h, r) : row_reached(x, s, b, h, r);
}

/* ---- perturbing stored values ---------------------------------------------------------- */

static double storage_max(af_storage st) {
    switch (st) {
    case AF_ST_F16: return 65504.0;
    case AF_ST_BF16: return 3.3895313892515355e38;
    case AF_ST_E4M3: return 448.0;
    case AF_ST_F32: return 3.4028234663852886e38;
    }
    return 1.0;
}

/* Replace a finite stored element by a very different finite one: times 2^k (k <= 12),
 * sign flipped, plus a large value, or a fresh large value. For E4M3 the stored byte is
 * changed directly (scales are never touched). The bits always change. */
static void perturb_finite(probe_rng *r, af_storage st, void *buf, int64_t off) {
    uint8_t *p = buf;
    if (st == AF_ST_E4M3) {
        uint8_t old = p[off], nb = old;
        for (int tries = 0; tries < 8 && (nb == old || (nb & 0x7F) == 0x7F); tries++) {
            int op = rng_below(r, 3);
            if (op == 0 && (old & 0x7F)) nb = old ^ 0x80;                   /* sign */
            else if (op == 1) {                                             /* times 2^k */
                int e = (old >> 3) & 0xF, k = 1 + rng_below(r, 6);
                e = e + k > 15 ? 15 : e + k;
                nb = (uint8_t)((old & 0x87) | (e << 3));
            } else nb = (uint8_t)(rng_next(r) & 0xFF);                     /* fresh */
        }
        if (nb == old || (nb & 0x7F) == 0x7F) nb = old == 0x7E ? 0xFE : 0x7E;
        p[off] = nb;
        return;
    }
    int bytes = af_storage_bytes(st);
    uint8_t before[4];
    memcpy(before, p + off * bytes, (size_t)bytes);
    double x = af_storage_load(st, buf, off);
    if (!isfinite(x)) x = 0;
    double lim = storage_max(st) / 2;
    if (lim > 1e30) lim = 1e30;
    for (int tries = 0; tries < 8; tries++) {
        double k = ldexp(1.0, 1 + rng_below(r, 12)), sign = (rng_next(r) & 1) ? 1.0 : -1.0, y;
        switch (rng_below(r, 4)) {
        case 0: y = x * k; break;
        case 1: y = -x * k; break;
        case 2: y = x + sign * k; break;
        default: y = sign * k * (1.0 + (double)(rng_next(r) % 1024) / 1024.0); break;
        }
        if (y > lim) y = lim;
        if (y < -lim) y = -lim;
        af_storage_store(st, buf, off, (float)y);
        if (memcmp(before, p + off * bytes, (size_t)bytes) != 0) return;
    }
    af_storage_store(st, buf, off, (float)(x == 0 ? 1000.0 : -x * 4 - 1));
}

/* Garbage for an element that belongs to no token (stride and thd gaps, which hold
 * poison NaN): other NaN payloads, infinities, huge and random finite values. */
static void write_garbage(probe_rng *r, af_storage st, void *buf, int64_t off) {
    uint8_t *p = buf;
    uint64_t u = rng_next(r);
    int op = (int)(u % 5);
    u >>= 8;
    switch (st) {
    case AF_ST_E4M3: {
        static const uint8_t pick[5] = {0xFF, 0x7E, 0xFE, 0x01, 0x55};
        p[off] = op == 4 ? (uint8_t)(u & 0xFF) : pick[op];
        return;
    }
    case AF_ST_F16: case AF_ST_BF16: {
        bool h = st == AF_ST_F16;
        uint16_t bits;
        if (op == 0) bits = (uint16_t)((h ? 0x7E01u : 0x7FC1u) + (u % 64));   /* NaN, new payload */
        else if (op == 1) bits = h ? 0x7C00u : 0x7F80u;                        /* +inf */
        else if (op == 2) bits = h ? 0xFC00u : 0xFF80u;                        /* -inf */
        else if (op == 3) bits = h ? 0x7BFFu : 0x7F7Fu;                        /* max finite */
        else {
            bits = (uint16_t)(u & 0xFFFF);
            uint16_t expmask = h ? 0x7C00u : 0x7F80u;
            if ((bits & expmask) == expmask) bits = (uint16_t)(bits & ~0x4000u);
        }
        memcpy(p + off * 2, &bits, 2);
        return;
    }
    case AF_ST_F32: {
        uint32_t bits = op == 0 ? 0x7FC00001u + (uint32_t)(u % 64) : op == 1 ? 0x7F800000u : (uint32_t)(u & 0x3FFFFFFF);
        memcpy(p + off * 4, &bits, 4);
        return;
    }
    }
}

/* Perturb all d of token (b, h, s) of input tensor id. */
static void perturb_token(probe_ctx *x, af_tensors *w, af_tensor_id id, int b, int h, int s) {
    const af_tensor_view *v = &w->plan.view[id];
    for (int d = 0; d < v->D; d++)
        perturb_finite(&x->rng, v->storage, w->buf[v->buffer], offset_of(w, id, b, h, s, d));
}

/* Padding rows (non-ragged: rows past a sequence's length) of every input get large
 * finite values; elements of input buffers that belong to no token get garbage. */
static int perturb_nonexistent(probe_ctx *x, af_tensors *w) {
    const af_case *c = x->c;
    af_tensor_id ins[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    int n_in = c->backward ? 4 : 3;
    for (int k = 0; k < n_in; k++) {
        const af_tensor_view *v = &w->plan.view[ins[k]];
        if (v->ragged) continue;
        for (int b = 0; b < v->B; b++)
            for (int s = judged_rows(x, ins[k], b); s < v->S; s++)
                for (int h = 0; h < v->H; h++) perturb_token(x, w, ins[k], b, h, s);
    }
    af_buffer_id bufs[4] = {AF_BUF_Q, AF_BUF_K, AF_BUF_V, AF_BUF_DO};
    for (int k = 0; k < n_in; k++) {
        af_buffer_id bid = bufs[k];
        int64_t n = w->plan.buffer_elems[bid];
        if (!w->buf[bid] || n <= 0) continue;
        uint8_t *owned = calloc((size_t)n, 1);
        if (!owned) return -1;
        for (int t = 0; t < n_in; t++) {
            const af_tensor_view *v = &w->plan.view[ins[t]];
            if (v->buffer != bid) continue;
            for (int b = 0; b < v->B; b++)
                for (int s = 0; s < rows_in_buffer(x, ins[t], b); s++)
                    for (int h = 0; h < v->H; h++)
                        for (int d = 0; d < v->D; d++) owned[offset_of(w, ins[t], b, h, s, d)] = 1;
        }
        for (int64_t e = 0; e < n; e++)
            if (!owned[e]) write_garbage(&x->rng, w->plan.buffer_storage[bid], w->buf[bid], e);
        free(owned);
    }
    return 0;
}

static int apply_set(probe_ctx *x, const hidden_set *s, af_tensors *w) {
    const af_case *c = x->c;
    for (int j = 0; j < c->seqlen_kv; j++)
        if (s->key_hit[j]) {
            perturb_token(x, w, AF_T_K, x->fb, x->fg, j);
            perturb_token(x, w, AF_T_V, x->fb, x->fg, j);
        }
    for (int i = 0; i < c->seqlen_q; i++)
        if (s->row_hit[i]) {
            perturb_token(x, w, AF_T_Q, x->fb, x->fh, i);
            if (c->backward) perturb_token(x, w, AF_T_DO, x->fb, x->fh, i);
        }
    return s->garbage ? perturb_nonexistent(x, w) : 0;
}

/* ---- building the hidden sets ------------------------------------------------------- */

/* "37..40,45" from a 0/1 array, truncated to cap. */
static void ranges_text(const unsigned char *hit, int n, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len + 1 < cap; i++) {
        if (!hit[i]) continue;
        int j = i;
        while (j + 1 < n && hit[j + 1]) j++;
        int w = j > i ? snprintf(buf + len, cap - len, "%s%d..%d", len ? "," : "", i, j)
                      : snprintf(buf + len, cap - len, "%s%d", len ? "," : "", i);
        if (w < 0) break;
        len += (size_t)w;
        if (len >= cap) { len = cap - 1; break; }
        i = j;
    }
}

static void mark_keys(hidden_set *s, int from, int to) {
    for (int j = from; j <= to; j++) s->key_hit[j] = 1;
}
static void mark_rows(hidden_set *s, int from, int to) {
    for (int i = from; i <= to; i++) s->row_hit[i] = 1;
}

static void label_keys(const probe_ctx *x, hidden_set *s, const char *kind, int row) {
    char keys[48];
    ranges_text(s->key_hit, x->c->seqlen_kv, keys, sizeof keys);
    int lo, hi, n = row >= 0 ? visible_range(x, x->fb, row, &lo, &hi) : 0;
    if (row >= 0 && n)
        snprintf(s->label, sizeof s->label, "%s: K/V keys %s of b%d h%d (row %d sees %d..%d)%s", kind, keys, x->fb,
                 x->fg, row, lo, hi, s->garbage ? " + padding/gaps" : "");
    else
        snprintf(s->label, sizeof s->label, "%s: K/V keys %s of b%d h%d%s", kind, keys, x->fb, x->fg,
                 s->garbage ? " + padding/gaps" : "");
}

static void label_rows(const probe_ctx *x, hidden_set *s, const char *kind, int key) {
    char rows[48];
    ranges_text(s->row_hit, x->c->seqlen_q, rows, sizeof rows);
    const char *what = x->c->backward ? "Q/dO" : "Q";
    if (key >= 0)
        snprintf(s->label, sizeof s->label, "%s: %s rows %s of b%d h%d (hidden from key %d)%s", kind, what, rows,
                 x->fb, x->fh, key, s->garbage ? " + padding/gaps" : "");
    else
        snprintf(s->label, sizeof s->label, "%s: %s rows %s of b%d h%d%s", kind, what, rows, x->fb, x->fh,
                 s->garbage ? " + padding/gaps" : "");
}

/* Keys past the last one row i sees, and before the first, that exist in the buffer. */
static int limit_kv(const probe_ctx *x) { return rows_in_buffer(x, AF_T_K, x->fb); }
static int limit_q(const probe_ctx *x) { return rows_in_buffer(x, AF_T_Q, x->fb); }

/* A random row of the focus sequence satisfying pred (tries, then scans). -1: none. */
typedef bool (*row_pred)(const probe_ctx *x, int i);
static int pick_row(probe_ctx *x, row_pred pred) {
    int lq = len_q(x, x->fb);
    if (lq <= 0) return -1;
    for (int t = 0; t < 16; t++) {
        int i = rng_below(&x->rng, lq);
        if (pred(x, i)) return i;
    }
    int start = rng_below(&x->rng, lq);
    for (int k = 0; k < lq; k++) {
        int i = (start + k) % lq;
        if (pred(x, i)) return i;
    }
    return -1;
}

static bool has_hidden_keys(const probe_ctx *x, int i) {
    int lo, hi, n = visible_range(x, x->fb, i, &lo, &hi);
    return n > 0 && n < limit_kv(x);
}
/* The key after row i's last visible key is hidden and shares its 32-token block; or
 * the key before its first one does. */
static bool has_block_edge(const probe_ctx *x, int i) {
    int lo, hi;
    if (visible_range(x, x->fb, i, &lo, &hi) == 0) return false;
    return (hi + 1 < limit_kv(x) && (hi + 1) % 32 != 0) || (lo > 0 && lo % 32 != 0);
}
/* Row i has a hidden key range that contains a 32-token block boundary inside it. */
static bool right_crossing(const probe_ctx *x, int hi) { return (hi + 1) / 32 * 32 + 32 <= limit_kv(x) - 1; }
static bool left_crossing(int lo) { return lo >= 2 && (lo - 1) / 32 * 32 >= 1; }
static bool has_crossing(const probe_ctx *x, int i) {
    int lo, hi;
    if (visible_range(x, x->fb, i, &lo, &hi) == 0) return false;
    return right_crossing(x, hi) || left_crossing(lo);
}

/* Recipe 1: a random subset of the keys some row cannot see, with padding rows and
 * gaps of every sequence; without hidden keys, one random Q (dO) row instead. */
static bool recipe_random(probe_ctx *x, hidden_set *s) {
    s->garbage = true;
    int i = pick_row(x, has_hidden_keys);
    if (i >= 0) {
        int lo, hi;
        int n_vis = visible_range(x, x->fb, i, &lo, &hi);
        int n_hidden = limit_kv(x) - n_vis;
        int want = x->o->keys_per_set > 0 ? x->o->keys_per_set : 8;
        for (int k = 0; k < want; k++) {
            int u = rng_below(&x->rng, n_hidden);
            s->key_hit[u < lo ? u : hi + 1 + (u - lo)] = 1;
        }
        label_keys(x, s, "hidden keys", i);
        return true;
    }
    int lq = len_q(x, x->fb);
    if (lq > 0) s->row_hit[rng_below(&x->rng, lq)] = 1;
    label_rows(x, s, "one row", -1);
    return true;
}

/* Recipe 2: the hidden keys in the same 32-token block as a row's first or last
 * visible key (tiles and quantisation blocks are shared with visible keys). */
static bool recipe_block_edge(probe_ctx *x, hidden_set *s) {
    int i = pick_row(x, has_block_edge);
    if (i < 0) return false;
    int lo, hi;
    visible_range(x, x->fb, i, &lo, &hi);
    if (hi + 1 < limit_kv(x) && (hi + 1) % 32 != 0) {
        int end = hi / 32 * 32 + 31;
        mark_keys(s, hi + 1, end < limit_kv(x) - 1 ? end : limit_kv(x) - 1);
    }
    if (lo > 0 && lo % 32 != 0) mark_keys(s, lo / 32 * 32, lo - 1);
    label_keys(x, s, "block edge", i);
    return true;
}

/* Recipe 3: hidden keys on both sides of a 32-token block boundary. */
static bool recipe_crossing(probe_ctx *x, hidden_set *s) {
    int i = pick_row(x, has_crossing);
    if (i < 0) return false;
    int lo, hi;
    visible_range(x, x->fb, i, &lo, &hi);
    if (right_crossing(x, hi)) {
        int m = (hi + 1) / 32 * 32 + 32;
        int from = m - 3 > hi + 1 ? m - 3 : hi + 1, to = m + 2 < limit_kv(x) - 1 ? m + 2 : limit_kv(x) - 1;
        mark_keys(s, from, to);
    } else {
        int m = (lo - 1) / 32 * 32;
        int from = m - 3 > 0 ? m - 3 : 0, to = m + 2 < lo - 1 ? m + 2 : lo - 1;
        mark_keys(s, from, to);
    }
    label_keys(x, s, "block crossing", i);
    return true;
}

/* Recipe 4: Q (and dO) rows that cannot see some key j, next to the rows that can
 * (dK_j and dV_j must not move; nor may other rows' outputs). */
static bool recipe_hidden_rows(probe_ctx *x, hidden_set *s) {
    int lq = len_q(x, x->fb), lk = len_kv(x, x->fb), lim = limit_q(x);
    if (lk <= 0 || lq <= 0) return false;
    int start = rng_below(&x->rng, lk);
    for (int k = 0; k < lk; k++) {
        int j = (start + k) % lk, r0, r1;
        if (af_mask_rows_seeing_key(&x->rule, lq, lk, j, &r0, &r1) == 0) continue;
        if (r0 == 0 && r1 >= lim - 1) continue;
        if (r0 > 0) mark_rows(s, r0 - 3 > 0 ? r0 - 3 : 0, r0 - 1);
        if (r1 < lim - 1) mark_rows(s, r1 + 1, r1 + 3 < lim - 1 ? r1 + 3 : lim - 1);
        label_rows(x, s, "hidden rows", j);
        return true;
    }
    return false;
}

typedef bool (*recipe_fn)(probe_ctx *x, hidden_set *s);

/* ---- sampling the rows of the leak matrix ------------------------------------------- */

typedef struct {
    af_tensor_id id;   /* AF_T_O (row outputs) or AF_T_DK (key outputs) */
    int row;
} matrix_row;

static int matrix_rows(const probe_ctx *x, matrix_row *out, int cap_rows, int cap_keys) {
    int n = 0, lq = len_q(x, x->fb), lk = len_kv(x, x->fb);
    int nr = lq < cap_rows ? lq : cap_rows;
    for (int k = 0; k < nr; k++) out[n++] = (matrix_row){AF_T_O, nr > 1 ? (int)((long long)k * (lq - 1) / (nr - 1)) : 0};
    if (x->c->backward) {
        int nk = lk < cap_keys ? lk : cap_keys;
        for (int k = 0; k < nk; k++) out[n++] = (matrix_row){AF_T_DK, nk > 1 ? (int)((long long)k * (lk - 1) / (nk - 1)) : 0};
    }
    return n;
}

/* Did anything in matrix row mr move between the runs a and b? */
static bool matrix_row_moved(const probe_ctx *x, const af_tensors *a, const af_tensors *b, matrix_row mr) {
    af_tensor_id ids[3];
    int nids = 0, head = mr.id == AF_T_DK ? x->fg : x->fh;
    if (mr.id == AF_T_DK) { ids[nids++] = AF_T_DK; ids[nids++] = AF_T_DV; }
    else { ids[nids++] = AF_T_O; ids[nids++] = AF_T_LSE; if (x->c->backward) ids[nids++] = AF_T_DQ; }
    for (int k = 0; k < nids; k++) {
        int D = a->plan.view[ids[k]].D;
        for (int d = 0; d < D; d++) {
            double va, vb;
            if (moved(x, a, b, ids[k], offset_of(a, ids[k], x->fb, head, mr.row, d), &va, &vb)) return true;
        }
    }
    return false;
}

/* ---- determinism ------------------------------------------------------------------------- */

/* Compare all judged outputs of two runs: spread per tensor, first differing bits. */
typedef struct {
    bool differ;
    af_tensor_id id;
    int b, h, row, col;
    double va, vb;
    long long n_differ;
} bits_diff;

static void compare_runs(const probe_ctx *x, const af_tensors *a, const af_tensors *b, double *spread,
                         bits_diff *bd) {
    for (int k = 0; k < n_outs(x->c); k++) {
        af_tensor_id id = k_outs[k];
        const af_tensor_view *w = &a->plan.view[id];
        for (int bb = 0; bb < w->B; bb++)
            for (int h = 0; h < w->H; h++)
                for (int s = 0; s < judged_rows(x, id, bb); s++)
                    for (int d = 0; d < w->D; d++) {
                        int64_t off = offset_of(a, id, bb, h, s, d);
                        if (same_bits(a, b, id, off)) continue;
                        double va = load_at(a, id, off), vb = load_at(b, id, off), diff;
                        if (isnan(va) || isnan(vb)) diff = isnan(va) && isnan(vb) ? 0 : INFINITY;
                        else diff = va == vb ? 0 : fabs(va - vb);
                        if (isnan(diff)) diff = INFINITY;
                        if (diff > spread[id]) spread[id] = diff;
                        if (!bd->differ) *bd = (bits_diff){true, id, bb, h, s, d, va, vb, 0};
                        bd->n_differ++;
                    }
    }
}

/* 2 ulp of the output storage at the tensor's largest magnitude in the baseline. */
static double tiny_of(const probe_ctx *x, af_tensor_id id) {
    const af_tensors *t = x->tg->baseline;
    const af_tensor_view *w = &t->plan.view[id];
    double unit = w->storage == AF_ST_F32 ? 0x1p-23 : w->storage == AF_ST_F16 ? 0x1p-10
                : w->storage == AF_ST_E4M3 ? 0x1p-3 : 0x1p-7, amax = 0;
    for (int b = 0; b < w->B; b++)
        for (int h = 0; h < w->H; h++)
            for (int s = 0; s < judged_rows(x, id, b); s++)
                for (int d = 0; d < w->D; d++) {
                    double v = fabs(load_at(t, id, offset_of(t, id, b, h, s, d)));
                    if (isfinite(v) && v > amax) amax = v;
                }
    return 2 * unit * amax + 0x1p-24;
}

static void probe_determinism(probe_ctx *x) {
    const af_probe_opts *o = x->o;
    bool declared = (x->tg->be->flags & AF_BACKEND_DETERMINISTIC) &&
                    !(x->tg->baseline_info && x->tg->baseline_info->nondeterministic);
    int runs = o->determinism ? (o->determinism_runs > 0 ? o->determinism_runs : 1) : 0;
    bool others = o->visibility || o->inclusion || o->feature;
    if (!declared && others && runs < 2) runs = 2;
    x->exact = declared;
    if (runs == 0) return;
    double spread[AF_T_COUNT] = {0};
    bits_diff bd;
    memset(&bd, 0, sizeof bd);
    int done = 0;
    for (int r = 0; r < runs && !x->stop; r++) {
        af_tensors w;
        if (work_begin(x, x->c, &w)) return;
        if (work_run(x, x->c, &w, "determinism") == 0) {
            compare_runs(x, x->tg->baseline, &w, spread, &bd);
            done++;
        }
        work_end(&w);
    }
    for (int k = 0; k < AF_T_COUNT; k++) x->st->spread[k] = spread[k];
    if (declared && bd.differ && o->determinism) {
        char msg[256];
        snprintf(msg, sizeof msg, "declared deterministic, but %lld output elements differ between identical runs "
                 "(first: %s b%d h%d r%d c%d %.9g vs %.9g)", bd.n_differ, af_tensor_name(bd.id), bd.b, bd.h,
                 bd.row, bd.col, bd.va, bd.vb);
        add_finding(x, AF_V_NONDETERMINISTIC, bd.id, bd.b, bd.h, bd.row, bd.col, bd.va, bd.vb, 0, msg);
    }
    if (!declared && done == 0) {
        /* nothing learnt: without a tolerance the other probes could only guess */
        note(x, "%s", "no spread measured for a nondeterministic backend: probes skipped");
        x->stop = true;
        return;
    }
    if (declared && !bd.differ) return;
    /* nondeterministic (declared or found): tolerate the measured spread */
    x->exact = false;
    for (int k = 0; k < n_outs(x->c); k++) {
        af_tensor_id id = k_outs[k];
        x->tol[id] = 2 * spread[id] + tiny_of(x, id);
    }
}

/* ---- visibility ------------------------------------------------------------------------ */

static void probe_visibility(probe_ctx *x, af_leak_matrix *lm) {
    const af_case *c = x->c;
    int want = x->o->visibility_runs;
    if (want <= 0) return;
    recipe_fn order_fwd[4] = {recipe_random, recipe_block_edge, recipe_crossing, recipe_hidden_rows};
    recipe_fn order_bwd[4] = {recipe_random, recipe_hidden_rows, recipe_block_edge, recipe_crossing};
    recipe_fn *order = c->backward ? order_bwd : order_fwd;
    hidden_set sets[8];
    int n_sets = 0;
    for (int k = 0; k < 4 && n_sets < want && n_sets < 8; k++) {
        if (set_alloc(x, &sets[n_sets])) break;
        if (order[k](x, &sets[n_sets])) {
            set_finish(x, &sets[n_sets]);
            if (!set_empty(x, &sets[n_sets])) { n_sets++; continue; }
        }
        set_free(&sets[n_sets]);
    }
    /* leak matrix */
    matrix_row mrows[64];
    int n_mrows = matrix_rows(x, mrows, c->backward ? 48 : 64, 16);
    if (lm) {
        memset(lm, 0, sizeof *lm);
        lm->rows = n_mrows;
        lm->cols = n_sets;
        lm->cells = calloc((size_t)(n_mrows * n_sets) + 1, 1);
        lm->row_labels = calloc((size_t)n_mrows + 1, sizeof *lm->row_labels);
        lm->col_labels = calloc((size_t)n_sets + 1, sizeof *lm->col_labels);
        if (!lm->cells || !lm->row_labels || !lm->col_labels) { af_leak_matrix_free(lm); lm = NULL; }
    }
    if (lm) {
        for (int r = 0; r < n_mrows; r++)
            snprintf(lm->row_labels[r], AF_LEAK_LABEL, mrows[r].id == AF_T_DK ? "dK b%d h%d k%d" : "O b%d h%d r%d",
                     x->fb, mrows[r].id == AF_T_DK ? x->fg : x->fh, mrows[r].row);
        for (int k = 0; k < n_sets; k++) snprintf(lm->col_labels[k], AF_LEAK_LABEL, "%s", sets[k].label);
    }
    for (int k = 0; k < n_sets && !x->stop; k++) {
        hidden_set *s = &sets[k];
        af_tensors w;
        if (work_begin(x, c, &w)) break;
        if (apply_set(x, s, &w) || work_run(x, c, &w, "visibility")) { work_end(&w); continue; }
        x->st->hidden_sets++;
        /* every judged output element that the set cannot reach must not move */
        bool found = false;
        af_tensor_id fid = AF_T_O;
        int fb = 0, fh = 0, fr = 0, fd = 0;
        double fva = 0, fvb = 0;
        long long leaked_rows = 0;
        for (int t = 0; t < n_outs(c); t++) {
            af_tensor_id id = k_outs[t];
            const af_tensor_view *v = &w.plan.view[id];
            for (int b = 0; b < v->B; b++)
                for (int h = 0; h < v->H; h++)
                    for (int r = 0; r < judged_rows(x, id, b); r++) {
                        if (output_reached(x, s, id, b, h, r)) continue;
                        x->st->protected_checked++;
                        for (int d = 0; d < v->D; d++) {
                            double va, vb;
                            if (!moved(x, x->tg->baseline, &w, id, offset_of(&w, id, b, h, r, d), &va, &vb)) continue;
                            if (!found) { found = true; fid = id; fb = b; fh = h; fr = r; fd = d; fva = va; fvb = vb; }
                            leaked_rows++;
                            break;
                        }
                    }
        }
        if (found) {
            char where[64], msg[256];
            int lo, hi;
            if (kv_side(fid)) {
                int r0, r1;
                if (af_mask_rows_seeing_key(&x->rule, len_q(x, fb), len_kv(x, fb), fr, &r0, &r1))
                    snprintf(where, sizeof where, "seen by rows %d..%d", r0, r1);
                else
                    snprintf(where, sizeof where, "seen by no row");
            } else if (visible_range(x, fb, fr, &lo, &hi)) {
                snprintf(where, sizeof where, "visible keys %d..%d", lo, hi);
            } else {
                snprintf(where, sizeof where, "fully masked");
            }
            snprintf(msg, sizeof msg, "%s changed %s b%d h%d %s %d (%s) %.6g -> %.6g; %lld protected rows moved",
                     s->label, af_tensor_name(fid), fb, fh, kv_side(fid) ? "key" : "row", fr, where, fva, fvb,
                     leaked_rows);
            add_finding(x, AF_V_LEAK, fid, fb, fh, fr, fd, fva, fvb, x->exact ? 0 : x->tol[fid], msg);
        }
        if (lm) {
            for (int r = 0; r < n_mrows; r++) {
                int head = mrows[r].id == AF_T_DK ? x->fg : x->fh;
                unsigned char cell = 0;
                if (output_reached(x, s, mrows[r].id, x->fb, head, mrows[r].row)) cell |= AF_LEAK_VISIBLE;
                if (matrix_row_moved(x, x->tg->baseline, &w, mrows[r])) cell |= AF_LEAK_CHANGED;
                lm->cells[r * n_sets + k] = cell;
            }
        }
        work_end(&w);
    }
    for (int k = 0; k < n_sets; k++) set_free(&sets[k]);
}

/* ---- exact expectations (fp64 from the exact stored inputs) ------------------------------ */

/* Softmax of row (b, h, i) over keys [lo, hi] at `scale`, in fp64.
 *   o[d] = sum_j P_j v_jd, mass[d] = sum_j P_j |v_jd|  (Dv each), *lse, and the bound
 *   *score_err on the fp32 score error of a kernel: 2^-21 (Dqk + 2) scale max_j sum_d |q_d k_jd|.
 *   p (n) receives P_j when not NULL. Returns -1 on allocation failure. */
typedef struct {
    double lse, score_err;
} row_stats;

static int row_fp64(const probe_ctx *x, const af_inputs *in, int b, int h, int i, int lo, int hi, double scale,
                    double *o, double *mass, double *p, row_stats *rs) {
    int n = hi - lo + 1, Dqk = in->Dqk, Dv = in->Dv, g = h / x->group;
    double *s = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!s) return -1;
    const double *q = in->q + (((size_t)b * in->Hq + h) * in->Sq + i) * Dqk;
    double m = -INFINITY, abs_max = 0;
    for (int j = 0; j < n; j++) {
        const double *k = in->k + (((size_t)b * in->Hkv + g) * in->Skv + lo + j) * Dqk;
        double acc = 0, aacc = 0;
        for (int d = 0; d < Dqk; d++) { acc += q[d] * k[d]; aacc += fabs(q[d] * k[d]); }
        s[j] = acc * scale;
        if (s[j] > m) m = s[j];
        if (aacc * fabs(scale) > abs_max) abs_max = aacc * fabs(scale);
    }
    double l = 0;
    for (int j = 0; j < n; j++) { s[j] = exp(s[j] - m); l += s[j]; }
    for (int d = 0; d < Dv; d++) o[d] = mass[d] = 0;
    for (int j = 0; j < n; j++) {
        double pj = s[j] / l;
        if (p) p[j] = pj;
        const double *v = in->v + (((size_t)b * in->Hkv + g) * in->Skv + lo + j) * Dv;
        for (int d = 0; d < Dv; d++) { o[d] += pj * v[d]; mass[d] += pj * fabs(v[d]); }
    }
    rs->lse = n > 0 ? m + log(l) : -INFINITY;
    rs->score_err = 0x1p-21 * (Dqk + 2) * abs_max;
    free(s);
    return 0;
}

/* Relative error of P (and so of O against its mass) that a correct kernel may have:
 * P rounded to the dtype before P*V (fp16 2^-11, bf16 2^-8, E4M3 2^-4) with 8x-16x
 * slack, plus what the fp32 score error does to exp. */
static double eps_of(const af_case *c, double score_err) {
    double e = c->dtype == AF_DT_FP16 ? 0x1p-7 : c->dtype == AF_DT_BF16 ? 0x1p-5 : 0x1p-2;
    return e + 4 * score_err;
}
/* Rounding of the stored output relative to its magnitude (fp8_e4m3's O is E4M3). */
static double ulp_of(const af_case *c) {
    return c->dtype == AF_DT_FP16 ? 0x1p-10 : c->dtype == AF_DT_FP8_E4M3 ? 0x1p-3 : 0x1p-7;
}
/* The absolute resolution of the stored O near zero: values below about this flush to 0
 * (E4M3's smallest subnormal is 2^-9, times descale_o; fp16's 2^-24; bf16's is below
 * any output that matters). A required move must exceed it too. */
static double out_abs_of(const af_case *c, const af_tensors *t) {
    if (c->dtype == AF_DT_FP8_E4M3) return 0x1p-9 * (double)t->descale_o;
    return c->dtype == AF_DT_FP16 ? 0x1p-24 : 0x1p-126;
}

/* Scores fp32 cannot resolve well enough for a guarantee: skip such rows. */
static bool row_checkable(const row_stats *rs) { return rs->score_err < 0x1p-6 && isfinite(rs->lse); }

/* ---- inclusion ---------------------------------------------------------------------------- */

/* Logical value = stored * factor for element (b, h, s, d) of input tensor id. */
static double dequant_factor(const af_tensors *t, const af_case *c, af_tensor_id id, int b, int h, int s, int d) {
    if (c->dtype == AF_DT_FP8_E4M3)
        return id == AF_T_Q ? t->descale_q : id == AF_T_K ? t->descale_k : id == AF_T_V ? t->descale_v : t->descale_do;
    if (c->dtype != AF_DT_MXFP8) return 1.0;
    const af_tensor_view *v = &t->plan.view[id];
    bool along_s = id == AF_T_V;
    int nblk_d = along_s ? v->D : (v->D + 31) / 32, nblk_s = along_s ? (v->S + 31) / 32 : v->S;
    const uint8_t *sc = id == AF_T_Q ? t->mx_scale_q : id == AF_T_K ? t->mx_scale_k : id == AF_T_V ? t->mx_scale_v : NULL;
    if (!sc) return 1.0;
    int bs = along_s ? s / 32 : s, bd = along_s ? d : d / 32;
    return ldexp(1.0, (int)sc[(((size_t)b * v->H + h) * nblk_s + bs) * nblk_d + bd] - 127);
}

/* Store logical value y into input element (b, h, s, d), clamped to the format's range.
 * Returns the logical value actually stored. */
static double store_logical(af_tensors *t, const af_case *c, af_tensor_id id, int b, int h, int s, int d, double y) {
    const af_tensor_view *v = &t->plan.view[id];
    double f = dequant_factor(t, c, id, b, h, s, d), lim = storage_max(v->storage) / 2, stored = y / f;
    if (stored > lim) stored = lim;
    if (stored < -lim) stored = -lim;
    int64_t off = offset_of(t, id, b, h, s, d);
    af_storage_store(v->storage, t->buf[v->buffer], off, (float)stored);
    return af_storage_load(v->storage, t->buf[v->buffer], off) * f;
}

static bool row_has_keys(const probe_ctx *x, int i) {
    int lo, hi;
    return visible_range(x, x->fb, i, &lo, &hi) > 0;
}

static void probe_inclusion(probe_ctx *x) {
    const af_case *c = x->c;
    const af_inputs *in = x->tg->inputs;
    int Dv = c->head_dim_v, b = x->fb, h = x->fh, g = x->fg, lq = len_q(x, b);
    double scale = af_case_scale(c);
    double *o = calloc((size_t)Dv, sizeof(double)), *mass = calloc((size_t)Dv, sizeof(double));
    double *p = calloc((size_t)c->seqlen_kv + 1, sizeof(double));
    double *o2 = calloc((size_t)Dv, sizeof(double)), *mass2 = calloc((size_t)Dv, sizeof(double));
    double *delta = calloc((size_t)Dv, sizeof(double));
    unsigned char *must = calloc((size_t)Dv, 1);
    af_tensors w;
    memset(&w, 0, sizeof w);
    bool have_w = false;
    if (!o || !mass || !p || !o2 || !mass2 || !delta || !must || lq <= 0) goto done;
    /* the row and key with the largest weight P_ij among a few rows: prefer rows that
     * see few keys (first rows, window rows) and add random ones */
    int best_i = -1, best_j = -1;
    double best_p = 0;
    row_stats best_rs = {0, 0};
    int cand[12], nc = 0;
    for (int i = 0; i < lq && nc < 4; i++)
        if (row_has_keys(x, i)) cand[nc++] = i;
    for (int t = 0; t < 8; t++) {
        int i = pick_row(x, row_has_keys);
        if (i >= 0) cand[nc++] = i;
    }
    for (int k = 0; k < nc; k++) {
        int lo, hi;
        visible_range(x, b, cand[k], &lo, &hi);
        row_stats rs;
        if (row_fp64(x, in, b, h, cand[k], lo, hi, scale, o, mass, p, &rs) || !row_checkable(&rs)) continue;
        for (int j = 0; j <= hi - lo; j++)
            if (p[j] > best_p) { best_p = p[j]; best_i = cand[k]; best_j = lo + j; best_rs = rs; }
    }
    if (best_i < 0 || best_p < 1e-6) { note(x, "%s", "inclusion: no row with a key of usable weight"); goto done; }
    int lo, hi;
    visible_range(x, b, best_i, &lo, &hi);
    row_stats rs;
    row_fp64(x, in, b, h, best_i, lo, hi, scale, o, mass, NULL, &rs);
    double eps = eps_of(c, best_rs.score_err), ulp = ulp_of(c), tol = x->exact ? 0 : x->tol[AF_T_O];
    if (work_begin(x, c, &w)) goto done;
    have_w = true;
    /* V row j: a change so large that O_d must move: P * |dv| (1 - eps - ulp) exceeds
     * 2 (eps * mass + ulp |O|) + tol with a factor 4 to spare */
    const double *vrow = in->v + (((size_t)b * in->Hkv + g) * in->Skv + best_j) * Dv;
    for (int d = 0; d < Dv; d++) {
        double need = 4 * (2 * (eps * mass[d] + ulp * fabs(o[d])) + tol + 0x1p-20) / (best_p * (1 - eps - ulp));
        double plain = (mass[d] + fabs(o[d])) / best_p; /* at least the output's own size */
        if (need < plain) need = plain;
        double sign = vrow[d] >= o[d] ? 1.0 : -1.0; /* push away from the average */
        double stored = store_logical(&w, c, AF_T_V, b, g, best_j, d, vrow[d] + sign * need);
        delta[d] = stored - vrow[d];
        double moved_exact = best_p * fabs(delta[d]);
        double err_after = eps * (mass[d] + best_p * fabs(delta[d])) + ulp * (fabs(o[d]) + moved_exact);
        must[d] = moved_exact > eps * mass[d] + ulp * fabs(o[d]) + err_after + tol + 2 * out_abs_of(c, x->tg->baseline) + 0x1p-24;
    }
    /* LSE: scale q of another row (another head when there is one) by 8 */
    int lh = c->heads_q > 1 ? (h + 1) % c->heads_q : h, li = -1;
    if (lh == h) {
        for (int i = 0; i < lq; i++)
            if (i != best_i && row_has_keys(x, i)) { li = i; break; }
    } else {
        li = best_i;
    }
    bool lse_must = false;
    double lse_before = 0, lse_after = 0;
    if (li >= 0) {
        int llo, lhi;
        visible_range(x, b, li, &llo, &lhi);
        row_stats r1, r2;
        row_fp64(x, in, b, lh, li, llo, lhi, scale, o2, mass2, NULL, &r1);
        const double *q = in->q + (((size_t)b * in->Hq + lh) * in->Sq + li) * c->head_dim_qk;
        for (int d = 0; d < c->head_dim_qk; d++) store_logical(&w, c, AF_T_Q, b, lh, li, d, q[d] * 8);
        af_inputs pin;
        if (af_inputs_alloc(&pin, c) == 0) {
            af_inputs_read(c, &w, &pin);
            row_fp64(x, &pin, b, lh, li, llo, lhi, scale, o2, mass2, NULL, &r2);
            af_inputs_free(&pin);
            double ltol = x->exact ? 0 : x->tol[AF_T_LSE];
            double margin = 2 * (0x1p-10 * (1 + fabs(r1.lse) + fabs(r2.lse)) + 2 * (r1.score_err + r2.score_err)) + ltol;
            lse_before = r1.lse;
            lse_after = r2.lse;
            lse_must = row_checkable(&r1) && row_checkable(&r2) && fabs(r2.lse - r1.lse) > margin;
        }
    }
    if (work_run(x, c, &w, "inclusion")) goto done;
    const af_tensors *base = x->tg->baseline;
    int first_bad = -1, n_must = 0, n_bad = 0;
    double bva = 0, bvb = 0;
    for (int d = 0; d < Dv; d++) {
        if (!must[d]) continue;
        n_must++;
        double va, vb;
        if (!moved(x, base, &w, AF_T_O, offset_of(&w, AF_T_O, b, h, best_i, d), &va, &vb)) {
            if (first_bad < 0) { first_bad = d; bva = va; bvb = vb; }
            n_bad++;
        }
    }
    x->st->inclusion_checked += n_must;
    if (first_bad >= 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "V key %d of b%d h%d (weight P=%.3g for row %d, visible keys %d..%d) changed by %.4g: "
                 "O must move by about %.4g but stayed %.6g (%d of %d elements)", best_j, b, g, best_p, best_i, lo, hi,
                 delta[first_bad], best_p * delta[first_bad], bva, n_bad, n_must);
        add_finding(x, AF_V_INERT, AF_T_O, b, h, best_i, first_bad, bva, bvb, tol, msg);
    }
    if (lse_must) {
        x->st->inclusion_checked++;
        double va, vb;
        if (!moved(x, base, &w, AF_T_LSE, offset_of(&w, AF_T_LSE, b, lh, li, 0), &va, &vb)) {
            char msg[256];
            snprintf(msg, sizeof msg, "q row %d of b%d h%d scaled by 8: LSE must move from %.6g to %.6g but stayed %.6g",
                     li, b, lh, lse_before, lse_after, va);
            add_finding(x, AF_V_INERT, AF_T_LSE, b, lh, li, -1, va, vb, x->exact ? 0 : x->tol[AF_T_LSE], msg);
        }
    }
done:
    if (have_w) work_end(&w);
    free(o); free(mass); free(p); free(o2); free(mass2); free(delta); free(must);
}

/* ---- feature sensitivity -------------------------------------------------------------- */

typedef struct {
    const char *name;
    af_case toggled;
} toggle;

static af_mask_rule rule_of(const af_case *c) {
    af_mask_rule r = {c->mask == AF_MASK_CAUSAL, c->align == AF_ALIGN_BOTTOM_RIGHT, c->window_left, c->window_right};
    return r;
}

static int make_toggles(const af_case *c, toggle *t) {
    int n = 0;
    if (c->mask == AF_MASK_CAUSAL) {
        t[n].name = "causal -> none";
        t[n].toggled = *c;
        t[n].toggled.mask = AF_MASK_NONE;
        n++;
    }
    if (c->window_left >= 0 || c->window_right >= 0) {
        t[n].name = "window -> none";
        t[n].toggled = *c;
        t[n].toggled.window_left = t[n].toggled.window_right = -1;
        n++;
    }
    t[n].name = "scale -> 2 * scale";
    t[n].toggled = *c;
    t[n].toggled.has_scale = true;
    t[n].toggled.scale = 2.0f * af_case_scale(c);
    n++;
    bool uneven = false;
    for (int b = 0; b < c->batch; b++) uneven |= af_case_len_q(c, b) != af_case_len_kv(c, b);
    if (uneven && (c->mask == AF_MASK_CAUSAL || c->window_left >= 0 || c->window_right >= 0)) {
        t[n].name = "alignment flipped";
        t[n].toggled = *c;
        t[n].toggled.align = c->align == AF_ALIGN_TOP_LEFT ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
        n++;
    }
    return n;
}

/* Rows to examine under a toggle: up to `cap` rows of the focus head, over all
 * sequences, whose visible set or scale changes. */
static int feature_rows(const probe_ctx *x, const af_case *tc, int *rb, int *ri, int cap) {
    af_mask_rule r2 = rule_of(tc);
    bool scale_changes = af_case_scale(tc) != af_case_scale(x->c);
    int n = 0;
    for (int b = 0; b < x->c->batch && n < cap; b++) {
        int lq = len_q(x, b), lk = len_kv(x, b);
        int per_seq = (cap - n) / (x->c->batch - b);
        if (per_seq < 1) per_seq = 1;
        int taken = 0, step = lq / per_seq > 1 ? lq / per_seq : 1;
        for (int i = 0; i < lq && taken < per_seq && n < cap; i += step) {
            /* within a stride, the first row whose visible set changes */
            for (int k = i; k < i + step && k < lq; k++) {
                int lo1, hi1, lo2, hi2;
                int n1 = af_mask_visible_range(&x->rule, lq, lk, k, &lo1, &hi1);
                int n2 = af_mask_visible_range(&r2, lq, lk, k, &lo2, &hi2);
                if ((n1 || n2) && (scale_changes || n1 != n2 || lo1 != lo2 || hi1 != hi2)) {
                    rb[n] = b; ri[n] = k; n++; taken++;
                    break;
                }
            }
        }
    }
    return n;
}

static void probe_feature(probe_ctx *x) {
    const af_case *c = x->c;
    toggle tg[4];
    int nt = make_toggles(c, tg), want = x->o->feature_runs;
    int Dv = c->head_dim_v, h = x->fh;
    double *o1 = calloc((size_t)Dv, sizeof(double)), *m1 = calloc((size_t)Dv, sizeof(double));
    double *o2 = calloc((size_t)Dv, sizeof(double)), *m2 = calloc((size_t)Dv, sizeof(double));
    if (!o1 || !m1 || !o2 || !m2) goto done;
    for (int k = 0; k < nt && k < want && !x->stop; k++) {
        af_case *tc = &tg[k].toggled;
        char why[512] = "";
        if (x->tg->be->supports(x->tg->be, tc, why, sizeof why) != AF_RUN_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s declined: %s", tg[k].name, why);
            note(x, "feature: %s", msg);
            continue;
        }
        int rb[16], ri[16];
        int nr = feature_rows(x, tc, rb, ri, 16);
        if (nr == 0) continue;
        af_mask_rule r2 = rule_of(tc);
        double s1 = af_case_scale(c), s2 = af_case_scale(tc);
        af_tensors w;
        if (work_begin(x, tc, &w)) break;
        if (work_run(x, tc, &w, "feature")) { work_end(&w); continue; }
        x->st->feature_toggles++;
        const af_tensors *base = x->tg->baseline;
        int n_must = 0, n_bad = 0;
        bool reported = false;
        for (int r = 0; r < nr && !reported; r++) {
            int b = rb[r], i = ri[r], lq = len_q(x, b), lk = len_kv(x, b), lo1, hi1, lo2, hi2;
            int n1 = af_mask_visible_range(&x->rule, lq, lk, i, &lo1, &hi1);
            int n2 = af_mask_visible_range(&r2, lq, lk, i, &lo2, &hi2);
            row_stats a, z;
            if (n1 == 0 || n2 == 0) continue; /* fully masked on one side: convention's business */
            if (row_fp64(x, x->tg->inputs, b, h, i, lo1, hi1, s1, o1, m1, NULL, &a) ||
                row_fp64(x, x->tg->inputs, b, h, i, lo2, hi2, s2, o2, m2, NULL, &z))
                break;
            if (!row_checkable(&a) || !row_checkable(&z)) continue;
            double eps1 = eps_of(c, a.score_err), eps2 = eps_of(c, z.score_err), ulp = ulp_of(c);
            double tol = x->exact ? 0 : x->tol[AF_T_O], out_abs = out_abs_of(c, base);
            for (int d = 0; d < Dv && !reported; d++) {
                double margin = eps1 * m1[d] + ulp * fabs(o1[d]) + eps2 * m2[d] + ulp * fabs(o2[d]) + 2 * out_abs;
                if (!(fabs(o2[d] - o1[d]) > 2 * margin + 2 * tol + 0x1p-20)) continue;
                n_must++;
                double va, vb;
                if (moved(x, base, &w, AF_T_O, offset_of(&w, AF_T_O, b, h, i, d), &va, &vb)) continue;
                n_bad++;
                char msg[256];
                snprintf(msg, sizeof msg, "%s: O must move from %.6g to %.6g (row %d sees %d..%d, then %d..%d) but "
                         "stayed %.6g", tg[k].name, o1[d], o2[d], i, lo1, hi1, lo2, hi2, va);
                add_finding(x, AF_V_FEATURE_IGNORED, AF_T_O, b, h, i, d, va, vb, tol, msg);
                reported = true;
            }
            if (reported) break;
            double ltol = x->exact ? 0 : x->tol[AF_T_LSE];
            double lmargin = 0x1p-10 * (1 + fabs(a.lse) + fabs(z.lse)) + 4 * (a.score_err + z.score_err);
            if (fabs(z.lse - a.lse) > 2 * lmargin + 2 * ltol) {
                n_must++;
                double va, vb;
                if (!moved(x, base, &w, AF_T_LSE, offset_of(&w, AF_T_LSE, b, h, i, 0), &va, &vb)) {
                    n_bad++;
                    char msg[256];
                    snprintf(msg, sizeof msg, "%s: LSE must move from %.6g to %.6g (row %d) but stayed %.6g",
                             tg[k].name, a.lse, z.lse, i, va);
                    add_finding(x, AF_V_FEATURE_IGNORED, AF_T_LSE, b, h, i, -1, va, vb, ltol, msg);
                    reported = true;
                }
            }
        }
        x->st->feature_checked += n_must;
        work_end(&w);
    }
done:
    free(o1); free(m1); free(o2); free(m2);
}

/* ---- the focus and the entry point ---------------------------------------------------- */

/* The (sequence, head) the perturbations live in: a sequence with rows and keys,
 * preferring one where some row has hidden keys. */
static void choose_focus(probe_ctx *x) {
    const af_case *c = x->c;
    int start = rng_below(&x->rng, c->batch), fallback = -1;
    x->fb = -1;
    for (int k = 0; k < c->batch && x->fb < 0; k++) {
        int b = (start + k) % c->batch;
        if (len_q(x, b) <= 0 || len_kv(x, b) <= 0) continue;
        if (fallback < 0) fallback = b;
        x->fb = b;
        if (pick_row(x, has_hidden_keys) < 0) x->fb = -1;
    }
    if (x->fb < 0) x->fb = fallback;
    x->fh = rng_below(&x->rng, c->heads_q);
    x->fg = x->fh / x->group;
}

int af_probes_run(const af_probe_opts *o, const af_probe_target *tg, af_verdict *v, af_leak_matrix *leaks,
                  af_probe_stats *stats) {
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
    x.rule = rule_of(tg->c);
    x.group = tg->c->heads_q / tg->c->heads_kv;
    x.rng.key = mix64(tg->c->seed ^ 0x50524F4245ull ^ mix64(o->salt));
    choose_focus(&x);
    if (x.fb < 0) {
        note(&x, "%s", "no sequence has both rows and keys: nothing to probe");
        return 0;
    }
    probe_determinism(&x);
    stats->exact = x.exact;
    for (int k = 0; k < AF_T_COUNT; k++) stats->tolerance[k] = x.exact ? 0 : x.tol[k];
    if (o->visibility && !x.stop) probe_visibility(&x, leaks);
    if (o->inclusion && !x.stop) probe_inclusion(&x);
    if (o->feature && !x.stop) probe_feature(&x);
    return v->n_findings - before;
}
