/* visibility.c — the visibility probe (AF_V_LEAK, probes.h): perturb inputs that the
 * mask hides from a set of outputs (future / out-of-window / padding keys, Q and dO rows
 * that cannot see a key, padding rows, stride and thd gaps); those outputs must stay
 * bitwise identical (or within the measured run-to-run spread). Which outputs a set can
 * reach comes from the oracle's mask rule (probes.h), never from the backend. Also
 * fills the leak matrix for triage's picture.
 *
 * Sections: hidden sets and what they reach; perturbing stored values; the recipes
 * that build hidden sets; the leak matrix's rows; the probe. */
#include "judge/probes/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/clone.h"

/* ---- hidden sets and what they reach ------------------------------------------------ */

/* A hidden set: what one visibility run perturbs, all inside the focus (fb, fg, fh),
 * plus (garbage) padding rows and gaps of every sequence. */
typedef struct {
    char label[AF_LEAK_LABEL];
    unsigned char *key_hit; /* (Skv) K and V tokens of (fb, fg) */
    unsigned char *row_hit; /* (Sq)  Q (and dO) rows of (fb, fh) */
    int *key_prefix;        /* (Skv + 1) prefix counts of key_hit */
    int *row_prefix;        /* (Sq + 1) */
    bool garbage;
    bool shrink; /* E4M3 inputs: every perturbed byte gets smaller (perturb_finite) */
} hidden_set;

static int count_in(const int *prefix, int lo, int hi) { return lo > hi ? 0 : prefix[hi + 1] - prefix[lo]; }

static void set_free(hidden_set *s) {
    free(s->key_hit);
    free(s->row_hit);
    free(s->key_prefix);
    free(s->row_prefix);
    memset(s, 0, sizeof *s);
}

static int set_alloc(const probe_ctx *x, hidden_set *s) {
    memset(s, 0, sizeof *s);
    size_t skv = (size_t)x->c->seqlen_kv, sq = (size_t)x->c->seqlen_q;
    s->key_hit = calloc(skv + 1, 1);
    s->row_hit = calloc(sq + 1, 1);
    s->key_prefix = calloc(skv + 1, sizeof(int));
    s->row_prefix = calloc(sq + 1, sizeof(int));
    if (!s->key_hit || !s->row_hit || !s->key_prefix || !s->row_prefix) {
        set_free(s);
        return -1;
    }
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
    if (probe_visible_range(x, b, i, &lo, &hi) == 0) return false; /* fully masked: constant */
    if (count_in(s->key_prefix, lo, hi) > 0) return true;
    return h == x->fh && s->row_hit[i];
}

/* Can the set reach key output (b, g, j) (dK, dV)? dK_j, dV_j depend on q_i, dO_i of the
 * rows i that see j and, through their O_i and LSE_i, on every key those rows see: the
 * union of the rows' visible intervals, which is [lo(r0), hi(r1)] because both ends of
 * a row's interval grow with i (min/max taken anyway); with global keys, row by row. */
static bool key_reached(const probe_ctx *x, const hidden_set *s, int b, int g, int j) {
    if (b != x->fb || g != x->fg) return false;
    int lq = len_q(x, b), lk = len_kv(x, b), r0, r1;
    if (af_mask_rows_seeing_key(&x->rule, lq, lk, j, &r0, &r1) == 0) return false; /* dK_j = 0 */
    int lo0, hi0, lo1, hi1;
    probe_visible_range(x, b, r0, &lo0, &hi0);
    probe_visible_range(x, b, r1, &lo1, &hi1);
    int lo = lo0 < lo1 ? lo0 : lo1, hi = hi0 > hi1 ? hi0 : hi1;
    /* global keys: every row sees a global key, also rows whose own keys are none (past
     * the last document, before the chunk...): their hulls do not grow with i, so take
     * the union row by row; likewise with drops (block_mask, custom_mask), which may mask
     * r0 or r1 fully */
    bool row_by_row = x->rule.global_keys > 0 || af_mask_rule_drops(&x->rule);
    for (int i = r0 + 1; row_by_row && i < r1; i++) {
        int l, h;
        if (probe_visible_range(x, b, i, &l, &h) == 0) continue;
        if (l < lo) lo = l;
        if (h > hi) hi = h;
    }
    if (count_in(s->key_prefix, lo, hi) > 0) return true;
    return count_in(s->row_prefix, r0, r1) > 0;
}

static bool output_reached(const probe_ctx *x, const hidden_set *s, af_tensor_id id, int b, int h, int r) {
    return af_tensor_is_kv(id) ? key_reached(x, s, b, h, r) : row_reached(x, s, b, h, r);
}

/* Replace a finite stored element by a very different finite one: times 2^k (k <= 12),
 * sign flipped, plus a large value, or a fresh large value. For E4M3 the stored byte is
 * changed directly (scales are never touched); with shrink it is divided by 2^k
 * (1 <= k <= 6; zero, keeping the sign, below the normals): a stored payload cannot grow
 * past its block's scale range, but hidden tokens that hold a 32-token block's largest
 * magnitudes and all shrink lower the amax that a recipe re-quantising V sees, and with
 * it the scale it gives the block's visible tokens (a mixed perturbation almost always
 * leaves some hidden token at the top). The bits always change. */
static void perturb_finite(probe_rng *r, af_storage st, void *buf, int64_t off, bool shrink) {
    uint8_t *p = buf;
    if (st == AF_ST_E4M3 && shrink && (p[off] & 0x7F) != 0 && (p[off] & 0x7F) != 0x7F) {
        int e = (p[off] >> 3) & 0xF, k = 1 + probe_rng_below(r, 6);
        p[off] = e - k >= 1 ? (uint8_t)((p[off] & 0x87) | ((e - k) << 3)) : (uint8_t)(p[off] & 0x80);
        return;
    }
    if (st == AF_ST_E4M3) {
        uint8_t old = p[off], nb = old;
        for (int tries = 0; tries < 8 && (nb == old || (nb & 0x7F) == 0x7F); tries++) {
            int op = probe_rng_below(r, 3);
            if (op == 0 && (old & 0x7F))
                nb = old ^ 0x80; /* sign */
            else if (op == 1) {  /* times 2^k */
                int e = (old >> 3) & 0xF, k = 1 + probe_rng_below(r, 6);
                e = e + k > 15 ? 15 : e + k;
                nb = (uint8_t)((old & 0x87) | (e << 3));
            } else
                nb = (uint8_t)(probe_rng_next(r) & 0xFF); /* fresh */
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
    double lim = probe_storage_max(st) / 2;
    if (lim > 1e30) lim = 1e30;
    for (int tries = 0; tries < 8; tries++) {
        double k = ldexp(1.0, 1 + probe_rng_below(r, 12)), sign = (probe_rng_next(r) & 1) ? 1.0 : -1.0, y;
        switch (probe_rng_below(r, 4)) {
            case 0:
                y = x * k;
                break;
            case 1:
                y = -x * k;
                break;
            case 2:
                y = x + sign * k;
                break;
            default:
                y = sign * k * (1.0 + (double)(probe_rng_next(r) % 1024) / 1024.0);
                break;
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
    uint64_t u = probe_rng_next(r);
    int op = (int)(u % 5);
    u >>= 8;
    switch (st) {
        case AF_ST_E4M3: {
            static const uint8_t pick[5] = {0xFF, 0x7E, 0xFE, 0x01, 0x55};
            p[off] = op == 4 ? (uint8_t)(u & 0xFF) : pick[op];
            return;
        }
        case AF_ST_E5M2: { /* NaN, +inf, -inf, max finite, random */
            static const uint8_t pick[5] = {0xFF, 0x7C, 0xFC, 0x7B, 0x55};
            p[off] = op == 4 ? (uint8_t)(u & 0xFF) : pick[op];
            return;
        }
        case AF_ST_F16:
        case AF_ST_BF16: {
            bool h = st == AF_ST_F16;
            uint16_t bits;
            if (op == 0)
                bits = (uint16_t)((h ? 0x7E01u : 0x7FC1u) + (u % 64)); /* NaN, new payload */
            else if (op == 1)
                bits = h ? 0x7C00u : 0x7F80u; /* +inf */
            else if (op == 2)
                bits = h ? 0xFC00u : 0xFF80u; /* -inf */
            else if (op == 3)
                bits = h ? 0x7BFFu : 0x7F7Fu; /* max finite */
            else {
                bits = (uint16_t)(u & 0xFFFF);
                uint16_t expmask = h ? 0x7C00u : 0x7F80u;
                if ((bits & expmask) == expmask) bits = (uint16_t)(bits & ~0x4000u);
            }
            memcpy(p + off * 2, &bits, 2);
            return;
        }
        case AF_ST_F32: {
            uint32_t bits = op == 0   ? 0x7FC00001u + (uint32_t)(u % 64)
                            : op == 1 ? 0x7F800000u
                                      : (uint32_t)(u & 0x3FFFFFFF);
            memcpy(p + off * 4, &bits, 4);
            return;
        }
    }
}

/* Perturb all d of token (b, h, s) of input tensor id (shrink: hidden_set). */
static void perturb_token(probe_ctx *x, af_tensors *w, af_tensor_id id, int b, int h, int s, bool shrink) {
    const af_tensor_view *v = &w->plan.view[id];
    for (int d = 0; d < v->D; d++)
        perturb_finite(&x->rng, v->storage, w->buf[v->buffer], offset_of(w, id, b, h, s, d), shrink);
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
                for (int h = 0; h < v->H; h++) perturb_token(x, w, ins[k], b, h, s, false);
    }
    af_buffer_id bufs[4] = {AF_BUF_Q, AF_BUF_K, AF_BUF_V, AF_BUF_DO};
    for (int k = 0; k < n_in; k++) {
        af_buffer_id bid = bufs[k];
        int64_t n;
        unsigned char *owned = probe_owned_map(x, w, bid, &n);
        if (!owned && n > 0) return -1;
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
            perturb_token(x, w, AF_T_K, x->fb, x->fg, j, s->shrink);
            perturb_token(x, w, AF_T_V, x->fb, x->fg, j, s->shrink);
        }
    for (int i = 0; i < c->seqlen_q; i++)
        if (s->row_hit[i]) {
            perturb_token(x, w, AF_T_Q, x->fb, x->fh, i, s->shrink);
            if (c->backward) perturb_token(x, w, AF_T_DO, x->fb, x->fh, i, s->shrink);
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
        if (len >= cap) {
            len = cap - 1;
            break;
        }
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
    int lo, hi, n = row >= 0 ? probe_visible_range(x, x->fb, row, &lo, &hi) : 0;
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
        snprintf(s->label, sizeof s->label, "%s: %s rows %s of b%d h%d (hidden from key %d)%s", kind, what, rows, x->fb,
                 x->fh, key, s->garbage ? " + padding/gaps" : "");
    else
        snprintf(s->label, sizeof s->label, "%s: %s rows %s of b%d h%d%s", kind, what, rows, x->fb, x->fh,
                 s->garbage ? " + padding/gaps" : "");
}

/* The key after row i's last visible key is hidden and shares its 32-token block; or
 * the key before its first one does. */
static bool has_block_edge(const probe_ctx *x, int i) {
    int lo, hi;
    if (probe_visible_range(x, x->fb, i, &lo, &hi) == 0) return false;
    return (hi + 1 < limit_kv(x) && (hi + 1) % 32 != 0) || (lo > 0 && lo % 32 != 0);
}
/* Row i has a hidden key range that contains a 32-token block boundary inside it. */
static bool right_crossing(const probe_ctx *x, int hi) { return (hi + 1) / 32 * 32 + 32 <= limit_kv(x) - 1; }
static bool left_crossing(int lo) { return lo >= 2 && (lo - 1) / 32 * 32 >= 1; }
static bool has_crossing(const probe_ctx *x, int i) {
    int lo, hi;
    if (probe_visible_range(x, x->fb, i, &lo, &hi) == 0) return false;
    return right_crossing(x, hi) || left_crossing(lo);
}

/* Recipe 1: a random subset of the keys some row cannot see, with padding rows and
 * gaps of every sequence; without hidden keys, one random Q (dO) row instead. */
static bool recipe_random(probe_ctx *x, hidden_set *s) {
    s->garbage = true;
    int i = probe_pick_row(x, probe_has_hidden_keys);
    if (i >= 0) {
        int lo, hi;
        int n_vis = probe_visible_range(x, x->fb, i, &lo, &hi);
        int n_hidden = limit_kv(x) - n_vis;
        int want = x->o->keys_per_set > 0 ? x->o->keys_per_set : 8;
        for (int k = 0; k < want; k++) {
            int u = probe_rng_below(&x->rng, n_hidden);
            s->key_hit[u < lo ? u : hi + 1 + (u - lo)] = 1;
        }
        label_keys(x, s, "hidden keys", i);
        return true;
    }
    int lq = len_q(x, x->fb);
    if (lq > 0) s->row_hit[probe_rng_below(&x->rng, lq)] = 1;
    label_rows(x, s, "one row", -1);
    return true;
}

/* Recipe 2: the hidden keys in the same 32-token block as a row's first or last
 * visible key (tiles and quantisation blocks are shared with visible keys); E4M3 inputs
 * shrink (perturb_finite: a block's scale follows its largest magnitude). */
static bool recipe_block_edge(probe_ctx *x, hidden_set *s) {
    int i = probe_pick_row(x, has_block_edge);
    if (i < 0) return false;
    s->shrink = true;
    int lo, hi;
    probe_visible_range(x, x->fb, i, &lo, &hi);
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
    int i = probe_pick_row(x, has_crossing);
    if (i < 0) return false;
    int lo, hi;
    probe_visible_range(x, x->fb, i, &lo, &hi);
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
    int start = probe_rng_below(&x->rng, lk);
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
    af_tensor_id id; /* AF_T_O (row outputs) or AF_T_DK (key outputs) */
    int row;
} matrix_row;

static int matrix_rows(const probe_ctx *x, matrix_row *out, int cap_rows, int cap_keys) {
    int n = 0, lq = len_q(x, x->fb), lk = len_kv(x, x->fb);
    int nr = lq < cap_rows ? lq : cap_rows;
    for (int k = 0; k < nr; k++)
        out[n++] = (matrix_row){AF_T_O, nr > 1 ? (int)((long long)k * (lq - 1) / (nr - 1)) : 0};
    if (x->c->backward) {
        int nk = lk < cap_keys ? lk : cap_keys;
        for (int k = 0; k < nk; k++)
            out[n++] = (matrix_row){AF_T_DK, nk > 1 ? (int)((long long)k * (lk - 1) / (nk - 1)) : 0};
    }
    return n;
}

/* Did anything in matrix row mr move between the runs a and b? */
static bool matrix_row_moved(const probe_ctx *x, const af_tensors *a, const af_tensors *b, matrix_row mr) {
    af_tensor_id ids[3];
    int nids = 0, head = mr.id == AF_T_DK ? x->fg : x->fh;
    if (mr.id == AF_T_DK) {
        ids[nids++] = AF_T_DK;
        ids[nids++] = AF_T_DV;
    } else {
        ids[nids++] = AF_T_O;
        ids[nids++] = AF_T_LSE;
        if (x->c->backward) ids[nids++] = AF_T_DQ;
    }
    for (int k = 0; k < nids; k++) {
        int D = a->plan.view[ids[k]].D;
        for (int d = 0; d < D; d++) {
            double va, vb;
            if (probe_moved(x, a, b, ids[k], offset_of(a, ids[k], x->fb, head, mr.row, d), &va, &vb)) return true;
        }
    }
    return false;
}

/* ---- visibility ------------------------------------------------------------------------ */

void probe_visibility(probe_ctx *x, af_leak_matrix *lm) {
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
            if (!set_empty(x, &sets[n_sets])) {
                n_sets++;
                continue;
            }
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
        if (!lm->cells || !lm->row_labels || !lm->col_labels) {
            af_leak_matrix_free(lm);
            lm = NULL;
        }
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
        if (probe_work_begin(x, c, &w)) break;
        if (apply_set(x, s, &w) || probe_work_run(x, c, &w, "visibility")) {
            probe_work_end(x, &w);
            continue;
        }
        x->st->hidden_sets++;
        /* every judged output element that the set cannot reach must not move */
        bool found = false;
        af_tensor_id fid = AF_T_O;
        int fb = 0, fh = 0, fr = 0, fd = 0;
        double fva = 0, fvb = 0, worst_move[AF_T_COUNT] = {0};
        long long leaked_rows = 0;
        for (int t = 0; t < n_outs(c); t++) {
            af_tensor_id id = probe_outputs[t];
            const af_tensor_view *v = &w.plan.view[id];
            for (int b = 0; b < v->B; b++)
                for (int h = 0; h < v->H; h++)
                    for (int r = 0; r < judged_rows(x, id, b); r++) {
                        if (output_reached(x, s, id, b, h, r)) continue;
                        x->st->protected_checked++;
                        if (probe_row_same_bits(x->tg->baseline, &w, id, b, h, r)) continue;
                        for (int d = 0; d < v->D; d++) {
                            double va, vb;
                            if (!probe_moved(x, x->tg->baseline, &w, id, offset_of(&w, id, b, h, r, d), &va, &vb))
                                continue;
                            double move = isnan(va) || isnan(vb) ? INFINITY : fabs(vb - va);
                            if (move > worst_move[id]) worst_move[id] = move;
                            if (!found) {
                                found = true;
                                fid = id;
                                fb = b;
                                fh = h;
                                fr = r;
                                fd = d;
                                fva = va;
                                fvb = vb;
                            }
                            leaked_rows++;
                            break;
                        }
                    }
        }
        int rerun = -1;
        double rerun_move = 0;
        if (found && !x->exact && probe_rerun_reproduces(x, fid, worst_move[fid], &rerun, &rerun_move)) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "%s moved %s b%d h%d %s %d by %.3g (%.6g -> %.6g), but rerun %d of the unperturbed case moved "
                     "%s by %.3g: run-to-run differences, not a leak",
                     s->label, af_tensor_name(fid), fb, fh, af_tensor_is_kv(fid) ? "key" : "row", fr, worst_move[fid],
                     fva, fvb, rerun, af_tensor_name(fid), rerun_move);
            probe_finding(x, AF_V_NONDETERMINISTIC, fid, fb, fh, fr, fd, fva, fvb, x->tol[fid], msg);
            found = false;
        }
        if (found) {
            char where[64], msg[256];
            int lo, hi;
            if (af_tensor_is_kv(fid)) {
                int r0, r1;
                if (af_mask_rows_seeing_key(&x->rule, len_q(x, fb), len_kv(x, fb), fr, &r0, &r1))
                    snprintf(where, sizeof where, "seen by rows %d..%d", r0, r1);
                else
                    snprintf(where, sizeof where, "seen by no row");
            } else if (probe_visible_range(x, fb, fr, &lo, &hi)) {
                snprintf(where, sizeof where, "visible keys %d..%d", lo, hi);
            } else {
                snprintf(where, sizeof where, "fully masked");
            }
            snprintf(msg, sizeof msg, "%s changed %s b%d h%d %s %d (%s) %.6g -> %.6g; %lld protected rows moved",
                     s->label, af_tensor_name(fid), fb, fh, af_tensor_is_kv(fid) ? "key" : "row", fr, where, fva, fvb,
                     leaked_rows);
            probe_finding(x, AF_V_LEAK, fid, fb, fh, fr, fd, fva, fvb, x->exact ? 0 : x->tol[fid], msg);
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
        probe_work_end(x, &w);
    }
    for (int k = 0; k < n_sets; k++) set_free(&sets[k]);
}
