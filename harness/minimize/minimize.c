/* minimize.c — shrink a failing case while it keeps failing the same way (same verdict
 * kind, backend / engine and tensor: af_finding_identity). */
#include "minimize/minimize.h"
#include "model/case_fields.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CANDIDATES 96

void af_min_opts_default(af_min_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_runs = 200;
}

static long long lengths_sum(const af_case *c) {
    long long s = 0;
    if (c->has_seqlens)
        for (int b = 0; b < c->batch; b++) s += c->seqlens_q[b] + c->seqlens_kv[b];
    return s;
}

/* Window tie-break: no left bound before a left bound, then the smaller left bound,
 * then likewise on the right (a window that fails on either side ends on the right,
 * and a bound as small as still fails: one minimised class per window bug). */
static int window_cmp(const af_case *a, const af_case *b) {
    int ka[4] = {a->window_left >= 0, a->window_left, a->window_right >= 0, a->window_right};
    int kb[4] = {b->window_left >= 0, b->window_left, b->window_right >= 0, b->window_right};
    for (int i = 0; i < 4; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Is a strictly simpler than b? (cost, then features, then ragged lengths, then the
 * window bounds, then the larger attention_chunk: closer to none, then fewer documents,
 * then fewer global keys, then the drop masks closer to none: a block mask's higher keep
 * probability, then its larger query / key blocks, then the element mask's higher keep
 * probability) */
static bool simpler(const af_case *a, const af_case *b) {
    double ca = af_case_cost(a), cb = af_case_cost(b);
    if (ca != cb) return ca < cb;
    int fa = af_case_features(a), fb = af_case_features(b);
    if (fa != fb) return fa < fb;
    long long la = lengths_sum(a), lb = lengths_sum(b);
    if (la != lb) return la < lb;
    int w = window_cmp(a, b);
    if (w) return w < 0;
    if (a->attention_chunk != b->attention_chunk)
        return a->attention_chunk > b->attention_chunk && b->attention_chunk > 0;
    if (a->n_documents != b->n_documents) return a->n_documents < b->n_documents;
    if (a->global_keys != b->global_keys) return a->global_keys < b->global_keys;
    if (a->block_mask_p != b->block_mask_p) return a->block_mask_p > b->block_mask_p;
    if (a->block_mask_q != b->block_mask_q) return a->block_mask_q > b->block_mask_q;
    if (a->block_mask_k != b->block_mask_k) return a->block_mask_k > b->block_mask_k;
    return a->custom_mask_p > b->custom_mask_p;
}

typedef struct {
    af_case items[MAX_CANDIDATES];
    int n;
} candidates;

static void add(candidates *cs, const af_case *c) {
    if (cs->n < MAX_CANDIDATES) cs->items[cs->n++] = *c;
}

static void with_batch(candidates *cs, const af_case *c, int nb, int first) {
    if (nb < 1 || nb >= c->batch + (first > 0) || first + nb > c->batch) return;
    af_case t = *c;
    t.batch = nb;
    if (c->has_seqlens) {
        memmove(t.seqlens_q, c->seqlens_q + first, (size_t)nb * sizeof(int));
        memmove(t.seqlens_kv, c->seqlens_kv + first, (size_t)nb * sizeof(int));
        for (int b = nb; b < AF_MAX_BATCH; b++) t.seqlens_q[b] = t.seqlens_kv[b] = 0;
    }
    add(cs, &t);
}

static void pass_batch(candidates *cs, const af_case *c) {
    with_batch(cs, c, 1, 0);
    for (int b = 1; b < c->batch && b < 8; b++) with_batch(cs, c, 1, b); /* the one sequence that matters */
    with_batch(cs, c, c->batch / 2, 0);
    with_batch(cs, c, c->batch / 2, c->batch - c->batch / 2);
    with_batch(cs, c, c->batch - 1, 0);
    with_batch(cs, c, c->batch - 1, 1);
}

static void pass_heads(candidates *cs, const af_case *c) {
    static const int hq_try[] = {1, 2, 3, 4, 6, 8, 16};
    for (size_t i = 0; i < sizeof hq_try / sizeof hq_try[0]; i++) {
        int hq = hq_try[i];
        if (hq > c->heads_q) break;
        for (int hkv = 1; hkv <= hq && hkv <= c->heads_kv; hkv++) {
            if (hq % hkv || (hq == c->heads_q && hkv == c->heads_kv)) continue;
            af_case t = *c;
            t.heads_q = hq;
            t.heads_kv = hkv;
            if (t.heads_v && hq % t.heads_v) t.heads_v = 0; /* V's heads no longer divide: K's */
            add(cs, &t);
        }
    }
    if (c->heads_kv % 2 == 0) {
        af_case t = *c;
        t.heads_q /= 2;
        t.heads_kv /= 2;
        if (t.heads_v) t.heads_v = t.heads_v % 2 == 0 ? t.heads_v / 2 : 0;
        add(cs, &t);
    }
}

static void with_seqlens(candidates *cs, const af_case *c, int sq, int skv) {
    if (sq < 1 || skv < 1 || (sq == c->seqlen_q && skv == c->seqlen_kv)) return;
    if (sq > c->seqlen_q || skv > c->seqlen_kv) return;
    for (int i = 0; i < cs->n; i++) /* each pair once: a run per candidate */
        if (cs->items[i].seqlen_q == sq && cs->items[i].seqlen_kv == skv) return;
    af_case t = *c;
    t.seqlen_q = sq;
    t.seqlen_kv = skv;
    if (t.has_seqlens)
        for (int b = 0; b < t.batch; b++) {
            if (t.seqlens_q[b] > sq) t.seqlens_q[b] = sq;
            if (t.seqlens_kv[b] > skv) t.seqlens_kv[b] = skv;
        }
    add(cs, &t);
}

/* The smaller lengths tried for a length n: 1, 2, then n (1 - 2^-k) for k = 1..6 (a
 * failing case comes down by halves while a half still fails, and within 1/64 of the
 * length where it stops failing in a few steps more), n - 8, n - 1. */
#define SHRINK_STEPS 10
static void shrink_steps(int n, int out[SHRINK_STEPS]) {
    out[0] = 1;
    out[1] = 2;
    for (int k = 1; k <= 6; k++) out[1 + k] = (int)((long long)n * ((1 << k) - 1) / (1 << k));
    out[8] = n - 8;
    out[9] = n - 1;
}

/* Smaller cost first; equal costs by s_q, then s_kv (a fixed order). */
static int cost_cmp(const void *pa, const void *pb) {
    const af_case *a = pa, *b = pb;
    double ca = af_case_cost(a), cb = af_case_cost(b);
    if (ca != cb) return ca < cb ? -1 : 1;
    if (a->seqlen_q != b->seqlen_q) return a->seqlen_q < b->seqlen_q ? -1 : 1;
    return (a->seqlen_kv > b->seqlen_kv) - (a->seqlen_kv < b->seqlen_kv);
}

/* Both lengths together (keeping the relation between them), then each alone; the
 * candidates are tried cheapest first, so the largest step that still fails is taken
 * (a long s_q over a short s_kv shrinks s_q by halves, not by the together pass's 8). */
static void pass_seqlen(candidates *cs, const af_case *c) {
    int sq = c->seqlen_q, skv = c->seqlen_kv, d = skv - sq, vq[SHRINK_STEPS], vk[SHRINK_STEPS];
    shrink_steps(sq, vq);
    shrink_steps(skv, vk);
    if (sq == skv) {
        for (int i = 0; i < SHRINK_STEPS; i++) with_seqlens(cs, c, vq[i], vq[i]);
    } else {
        /* equal lengths: sq = skv makes the alignment irrelevant, one class for the
         * findings that fail either way */
        int m = sq < skv ? sq : skv;
        with_seqlens(cs, c, m, m);
        for (int i = 2; i < SHRINK_STEPS; i++) with_seqlens(cs, c, vq[i], vk[i]);
        with_seqlens(cs, c, sq - 8, skv - 8);
        with_seqlens(cs, c, sq - 1, skv - 1);
        if (d > 0)
            with_seqlens(cs, c, 1, 1 + d);
        else
            with_seqlens(cs, c, 1 - d, 1);
    }
    for (int i = 0; i < SHRINK_STEPS; i++) with_seqlens(cs, c, vq[i], skv);
    for (int i = 0; i < SHRINK_STEPS; i++) with_seqlens(cs, c, sq, vk[i]);
    qsort(cs->items, (size_t)cs->n, sizeof cs->items[0], cost_cmp);
}

static void pass_head_dim(candidates *cs, const af_case *c) {
    static const int dims[] = {8, 16, 24, 32, 40, 48, 64, 72, 80, 96, 104, 128, 160, 192, 256, 384, 512};
    size_t n = sizeof dims / sizeof dims[0];
    af_case t;
    if (c->head_dim_qk != c->head_dim_v) { /* equal head dims: one class less */
        t = *c;
        t.head_dim_qk = t.head_dim_v = c->head_dim_qk < c->head_dim_v ? c->head_dim_qk : c->head_dim_v;
        add(cs, &t);
    }
    if (c->head_dim_qk == c->head_dim_v)
        for (size_t i = 0; i < n && dims[i] < c->head_dim_qk; i++) {
            t = *c;
            t.head_dim_qk = t.head_dim_v = dims[i];
            add(cs, &t);
        }
    for (size_t i = 0; i < n && dims[i] < c->head_dim_qk; i++) {
        t = *c;
        t.head_dim_qk = dims[i];
        add(cs, &t);
    }
    for (size_t i = 0; i < n && dims[i] < c->head_dim_v; i++) {
        t = *c;
        t.head_dim_v = dims[i];
        add(cs, &t);
    }
    if (c->head_dim_qk > 1 && c->head_dim_qk <= 8) { /* below the table: halve, then step */
        t = *c;
        t.head_dim_qk /= 2;
        if (c->head_dim_v == c->head_dim_qk) t.head_dim_v = t.head_dim_qk;
        add(cs, &t);
    }
    if (c->head_dim_v > 1 && c->head_dim_v <= 8 && c->head_dim_v != c->head_dim_qk) {
        t = *c;
        t.head_dim_v /= 2;
        add(cs, &t);
    }
    if (c->head_dim_qk > 1) {
        t = *c;
        t.head_dim_qk--;
        if (c->head_dim_v == c->head_dim_qk) t.head_dim_v--;
        add(cs, &t);
    }
    if (c->head_dim_v > 1 && c->head_dim_v != c->head_dim_qk) {
        t = *c;
        t.head_dim_v--;
        add(cs, &t);
    }
}

static void pass_cp(candidates *cs, const af_case *c) {
    if (c->cp_size <= 1) return;
    af_case t = *c;
    t.cp_size = 1;
    t.cp_comm = AF_CP_NONE;
    add(cs, &t);
    if (c->cp_size / 2 > 1) {
        t = *c;
        t.cp_size /= 2;
        add(cs, &t);
    }
}

static int mini(int a, int b) { return a < b ? a : b; }

/* A feature made lighter rather than dropped: learnable sinks -> off_by_one, a full bias
 * -> one broadcast over heads or batch (bh1s -> 1h1s or b11s -> 111s alike), ALiBi's
 * slopes -> standard and its convention -> yes, a coarser chunk, two adjacent documents merged,
 * fewer global keys (one, or half), a block mask's keep probability halfway to 1 or its
 * blocks twice as large, an element mask's keep probability halfway to 1, dropout's p
 * toward 1/2 and its Philox state toward seed 1, offset 0. c has the feature. */
static void lighter_feature(candidates *cs, const af_case *c, af_case_field f) {
    af_case t;
#define TRY(cond, stmt)                                                                                                \
    if (cond) {                                                                                                        \
        t = *c;                                                                                                        \
        stmt;                                                                                                          \
        add(cs, &t);                                                                                                   \
    }
    switch (f) {
        case AF_CF_SOFTMAX:
            TRY(c->softmax == AF_SOFTMAX_LEARNABLE, t.softmax = AF_SOFTMAX_OFF_BY_ONE);
            return;
        case AF_CF_BIAS:
            TRY(c->bias == AF_BIAS_BHSS, t.bias = AF_BIAS_1HSS);
            TRY(c->bias == AF_BIAS_BHSS, t.bias = AF_BIAS_B1SS);
            TRY(c->bias == AF_BIAS_1HSS || c->bias == AF_BIAS_B1SS, t.bias = AF_BIAS_11SS);
            TRY(c->bias == AF_BIAS_BH1S, t.bias = AF_BIAS_1H1S);
            TRY(c->bias == AF_BIAS_BH1S, t.bias = AF_BIAS_B11S);
            TRY(c->bias == AF_BIAS_1H1S || c->bias == AF_BIAS_B11S, t.bias = AF_BIAS_111S);
            return;
        case AF_CF_ALIBI: /* the slopes toward standard, the convention toward yes */
            TRY(c->alibi_slopes != AF_SLOPES_STANDARD, t.alibi_slopes = AF_SLOPES_STANDARD);
            TRY(c->alibi == AF_ALIBI_ABS || c->alibi == AF_ALIBI_SIGNED, {
                t.alibi = AF_ALIBI_YES;
                t.alibi_slopes = AF_SLOPES_STANDARD;
            });
            return;
        case AF_CF_ATTENTION_CHUNK: /* a coarser chunk, towards none */
            TRY(c->attention_chunk < c->seqlen_kv, t.attention_chunk = 2 * c->attention_chunk);
            return;
        case AF_CF_DOCUMENTS: /* documents k and k + 1 as one, for each k */
            for (int k = 0; k + 1 < c->n_documents; k++) {
                TRY(true, {
                    t.documents[k] += t.documents[k + 1];
                    for (int m = k + 1; m + 1 < t.n_documents; m++) t.documents[m] = t.documents[m + 1];
                    t.documents[--t.n_documents] = 0;
                });
            }
            return;
        case AF_CF_GLOBAL_KEYS: /* one global key, or half of them */
            TRY(c->global_keys > 1, t.global_keys = 1);
            TRY(c->global_keys > 3, t.global_keys = c->global_keys / 2);
            return;
        case AF_CF_BLOCK_MASK: /* fewer blocks dropped (P halfway to 1), larger blocks */
            TRY(c->block_mask_p < 1.0, t.block_mask_p = (1.0 + c->block_mask_p) / 2);
            TRY(c->block_mask_q < c->seqlen_q, t.block_mask_q = mini(2 * c->block_mask_q, c->seqlen_q));
            TRY(c->block_mask_k < c->seqlen_kv, t.block_mask_k = mini(2 * c->block_mask_k, c->seqlen_kv));
            return;
        case AF_CF_CUSTOM_MASK: /* fewer elements dropped: P halfway to 1 */
            TRY(c->custom_mask_p < 1.0, t.custom_mask_p = (1.0 + c->custom_mask_p) / 2);
            return;
        case AF_CF_DROPOUT:
            TRY(c->dropout_p != 0.5, t.dropout_p = 0.5);
            TRY(c->dropout_seed != 1, t.dropout_seed = 1);
            TRY(c->dropout_offset != 0, t.dropout_offset = 0);
            return;
        default:
            return;
    }
#undef TRY
}

static void pass_features(candidates *cs, const af_case *c) {
    af_case t;
#define TRY(cond, stmt)                                                                                                \
    if (cond) {                                                                                                        \
        t = *c;                                                                                                        \
        stmt;                                                                                                          \
        add(cs, &t);                                                                                                   \
    }
    TRY(c->heads_v && c->heads_v != c->heads_kv, t.heads_v = 0); /* V back to K's head count */
    TRY(c->page_size, t.page_size = 0; t.page_hnd = t.page_kv_joint = false);
    TRY(c->page_hnd, t.page_hnd = false);           /* hnd pages to nhd */
    TRY(c->page_kv_joint, t.page_kv_joint = false); /* joint K/V pages to split */
    TRY(c->stride_gap, t.stride_gap = 0);
    TRY(c->gap_h, t.gap_h = 0);
    TRY(c->gap_s, t.gap_s = 0);
    TRY(c->gap_b, t.gap_b = 0);
    TRY(c->thd_gap, t.thd_gap = 0);
    TRY(c->packing != AF_PACK_SEPARATE, t.packing = AF_PACK_SEPARATE);
    TRY(c->packing == AF_PACK_QKV, t.packing = AF_PACK_KV);
    TRY(af_packing_per_head(c->packing), t.packing = c->packing == AF_PACK_QKV_H ? AF_PACK_QKV : AF_PACK_KV);
    TRY(c->packing == AF_PACK_QKV_H, t.packing = AF_PACK_KV_H);
    TRY(c->layout_kv != AF_SIDE_SAME, t.layout_kv = AF_SIDE_SAME);
    TRY(c->layout_do != AF_SIDE_SAME, t.layout_do = AF_SIDE_SAME);
    TRY(c->layout != AF_LAYOUT_BSHD && c->layout != AF_LAYOUT_THD, t.layout = AF_LAYOUT_BSHD);
    TRY(c->layout == AF_LAYOUT_THD, (t.layout = AF_LAYOUT_BSHD, t.thd_gap = 0));
    TRY(c->has_seqlens && c->layout != AF_LAYOUT_THD,
        (t.has_seqlens = false, memset(t.seqlens_q, 0, sizeof t.seqlens_q),
         memset(t.seqlens_kv, 0, sizeof t.seqlens_kv)));
    TRY(c->window_left >= 0, t.window_left = -1);
    TRY(c->window_right >= 0, t.window_right = -1);
    TRY(c->mask == AF_MASK_CAUSAL, t.mask = AF_MASK_NONE);
    TRY(c->align == AF_ALIGN_BOTTOM_RIGHT, t.align = AF_ALIGN_TOP_LEFT);
    TRY(c->backward, (t.backward = false, t.dlse = false, t.layout_do = AF_SIDE_SAME));
    /* the features (model/case_fields.h), in feature-number order: dropped, then made lighter */
    for (int k = 0; k < AF_CF_N_FEATURES; k++) {
        af_case_field f = af_case_field_of_feature(k);
        if (!af_case_field_printed(c, f)) continue;
        t = *c;
        af_case_field_reset(&t, f);
        add(cs, &t);
        lighter_feature(cs, c, f);
    }
    TRY(c->has_scale, (t.has_scale = false, t.scale = 0));
    TRY(c->out_dtype != AF_OUT_SAME, t.out_dtype = AF_OUT_SAME);
    TRY(c->kv_dtype != AF_KV_SAME, t.kv_dtype = AF_KV_SAME);
    TRY(c->dropout_rng != AF_DROPOUT_RNG_ATTNFUZZ, t.dropout_rng = AF_DROPOUT_RNG_ATTNFUZZ); /* attnfuzz's stream */
    TRY(c->descale_head, t.descale_head = false);                    /* one descale per tensor */
    TRY(c->kv_dtype == AF_KV_FP8_E5M2, t.kv_dtype = AF_KV_FP8_E4M3); /* the commoner fp8 KV cache */
    TRY(c->dtype == AF_DT_FP8_E5M2, t.dtype = AF_DT_FP8_E4M3);       /* the commoner fp8 kind, same recipe */
    TRY(c->dtype != AF_DT_FP16, t.dtype = AF_DT_FP16);
#undef TRY
}

/* Window bounds: smaller (0, half, minus one), moved to the other side, and mirrored
 * (sides swapped with the alignment toggled: a left window with bottom-right
 * alignment and a right one with top-left hide the same corner when sq < skv). */
static void pass_window(candidates *cs, const af_case *c) {
    af_case t;
    for (int side = 0; side < 2; side++) {
        int w = side ? c->window_right : c->window_left;
        int v[] = {0, w / 2, w - 1};
        for (int i = 0; i < 3 && w > 0; i++) {
            if (v[i] < 0 || v[i] >= w || (i > 0 && v[i] == v[i - 1])) continue;
            t = *c;
            if (side)
                t.window_right = v[i];
            else
                t.window_left = v[i];
            add(cs, &t);
        }
    }
    if (c->window_left != c->window_right) {
        t = *c;
        t.window_left = c->window_right;
        t.window_right = c->window_left;
        add(cs, &t);
        t.align = c->align == AF_ALIGN_TOP_LEFT ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
        add(cs, &t);
    }
}

static void pass_data(candidates *cs, const af_case *c) {
    af_case t;
    for (int i = c->n_data - 1; i >= 1; i--) {
        t = *c;
        memmove(&t.data[i], &t.data[i + 1], (size_t)(t.n_data - i - 1) * sizeof t.data[0]);
        t.n_data--;
        memset(&t.data[t.n_data], 0, sizeof t.data[0]);
        add(cs, &t);
    }
    if (!(c->data[0].kind == AF_DATA_NORMAL && c->data[0].p0 == 1.0)) {
        t = *c;
        t.data[0] = (af_data_term){AF_DATA_NORMAL, 1.0, 0};
        add(cs, &t);
    }
    if (c->seed != 1) {
        t = *c;
        t.seed = 1;
        add(cs, &t);
    }
}

static void pass_lengths(candidates *cs, const af_case *c) {
    if (!c->has_seqlens) return;
    for (int b = 0; b < c->batch; b++)
        for (int kv = 0; kv < 2; kv++) {
            int len = kv ? c->seqlens_kv[b] : c->seqlens_q[b];
            int v[] = {1, len / 2, len - 1};
            for (int i = 0; i < 3; i++) {
                if (v[i] < 1 || v[i] >= len) continue;
                af_case t = *c;
                if (kv)
                    t.seqlens_kv[b] = v[i];
                else
                    t.seqlens_q[b] = v[i];
                add(cs, &t);
            }
        }
}

typedef void (*pass_fn)(candidates *, const af_case *);

int af_minimize(const af_case *c, af_min_run_fn run, void *user, const af_min_opts *o, af_min_result *r) {
    af_min_opts def;
    if (!o) {
        af_min_opts_default(&def);
        o = &def;
    }
    memset(r, 0, sizeof *r);
    r->best = *c;
    r->cost_before = r->cost_after = af_case_cost(c);
    double t0 = af_clock_mono();
    if (run(c, user, &r->verdict)) return -1;
    r->runs = 1;
    if (r->verdict.n_findings == 0) return 1;
    af_signature(c, &r->verdict, r->raw_signature, sizeof r->raw_signature);
    snprintf(r->signature, sizeof r->signature, "%s", r->raw_signature);
    af_finding_identity(c, &r->verdict, r->identity, sizeof r->identity);

    /* Features before sizes: on the big case a window side, the alignment, paging ...
     * are usually not needed and go; shrunk first, the tiny case would need whichever
     * of them it started with, and findings of one bug would end in more classes. */
    static const pass_fn passes[] = {pass_batch, pass_heads,  pass_cp,       pass_features, pass_window,
                                     pass_data,  pass_seqlen, pass_head_dim, pass_lengths};
    static const char *const pass_names[] = {"batch", "heads",  "cp",       "layout/mask", "window",
                                             "data",  "seqlen", "head_dim", "lengths"};
    candidates *cs = malloc(sizeof *cs);
    if (!cs) return -1;
    bool progress = true;
    while (progress && !r->budget_exhausted) {
        progress = false;
        for (size_t p = 0; p < sizeof passes / sizeof passes[0] && !r->budget_exhausted; p++) {
            bool accepted = true;
            while (accepted && !r->budget_exhausted) {
                accepted = false;
                cs->n = 0;
                passes[p](cs, &r->best);
                for (int i = 0; i < cs->n; i++) {
                    af_case *cand = &cs->items[i];
                    af_error err;
                    if (!simpler(cand, &r->best) || af_case_validate(cand, &err)) continue;
                    if (r->runs >= o->max_runs || (o->max_seconds > 0 && af_clock_mono() - t0 > o->max_seconds)) {
                        r->budget_exhausted = true;
                        break;
                    }
                    af_verdict v;
                    r->runs++;
                    if (run(cand, user, &v) || v.n_findings == 0) continue;
                    char id[AF_SIGNATURE_MAX];
                    af_finding_identity(cand, &v, id, sizeof id);
                    if (strcmp(id, r->identity)) { /* another failure: not this finding */
                        if (o->on_other) o->on_other(user, cand, &v);
                        continue;
                    }
                    r->best = *cand;
                    r->verdict = v;
                    r->accepted++;
                    accepted = progress = true;
                    if (o->log)
                        fprintf(o->log, "minimize: %-11s -> b%d h%d/%d s%d/%d d%d/%d cost %.4g (run %d)\n",
                                pass_names[p], r->best.batch, r->best.heads_q, r->best.heads_kv, r->best.seqlen_q,
                                r->best.seqlen_kv, r->best.head_dim_qk, r->best.head_dim_v, af_case_cost(&r->best),
                                r->runs);
                    break;
                }
            }
        }
    }
    free(cs);
    r->cost_after = af_case_cost(&r->best);
    af_signature(&r->best, &r->verdict, r->signature, sizeof r->signature);
    return 0;
}

/* Head-dim class rank as in af_config_class: d<=64, d<=128, d<=256, d>256. */
static int head_dim_rank(const af_case *c) {
    int d = c->head_dim_qk > c->head_dim_v ? c->head_dim_qk : c->head_dim_v;
    return d <= 64 ? 0 : d <= 128 ? 1 : d <= 256 ? 2 : 3;
}

static bool has_window(const af_case *c) { return c->window_left >= 0 || c->window_right >= 0; }

/* The minimiser turns qkv into kv and per-head packing into the blocked one (pass_features):
 * to's packing is from's, or one of those steps (or both) away. */
static bool packing_reachable(af_packing from, af_packing to) {
    if (to == from) return true;
    if (af_packing_per_head(to) && !af_packing_per_head(from)) return false;
    if (af_packing_is_qkv(to) && !af_packing_is_qkv(from)) return false;
    return from != AF_PACK_SEPARATE;
}

bool af_min_could_reach(const af_case *from, const af_case *to) {
    /* each line: what `to` shows needs `from` to have it (or the default) */
    if (to->dtype != from->dtype && to->dtype != AF_DT_FP16 &&
        !(to->dtype == AF_DT_FP8_E4M3 && from->dtype == AF_DT_FP8_E5M2))
        return false;
    if (to->out_dtype != AF_OUT_SAME && to->out_dtype != from->out_dtype) return false;
    if (to->descale_head && !from->descale_head) return false;
    if (to->kv_dtype != AF_KV_SAME && to->kv_dtype != from->kv_dtype &&
        !(to->kv_dtype == AF_KV_FP8_E4M3 && from->kv_dtype == AF_KV_FP8_E5M2))
        return false;
    if (to->mask == AF_MASK_CAUSAL && from->mask != AF_MASK_CAUSAL) return false;
    if (to->align == AF_ALIGN_BOTTOM_RIGHT && from->align != AF_ALIGN_BOTTOM_RIGHT && !has_window(from)) return false;
    if (has_window(to) && !has_window(from)) return false;
    if (to->layout == AF_LAYOUT_THD && from->layout != AF_LAYOUT_THD) return false;
    if (to->layout != AF_LAYOUT_THD && to->has_seqlens && !from->has_seqlens) return false;
    if (to->layout != AF_LAYOUT_BSHD && to->layout != AF_LAYOUT_THD && to->layout != from->layout) return false;
    if (to->packing != AF_PACK_SEPARATE && !packing_reachable(from->packing, to->packing)) return false;
    if (to->layout_kv != AF_SIDE_SAME && to->layout_kv != from->layout_kv) return false;
    if (to->layout_do != AF_SIDE_SAME && to->layout_do != from->layout_do) return false;
    bool to_gqa = to->heads_kv > 1 && to->heads_kv < to->heads_q, to_mqa = to->heads_kv == 1 && to->heads_q > 1;
    if (to_mqa && from->heads_q < 2) return false;
    if (to_gqa && (from->heads_kv < 2 || from->heads_q < 4)) return false;
    if (head_dim_rank(to) > head_dim_rank(from)) return false;
    if ((to->stride_gap > 0 || (to->layout == AF_LAYOUT_THD && to->thd_gap > 0)) &&
        !(from->stride_gap > 0 || (from->layout == AF_LAYOUT_THD && from->thd_gap > 0)))
        return false;
    if ((to->gap_h && !from->gap_h) || (to->gap_s && !from->gap_s) || (to->gap_b && !from->gap_b)) return false;
    if (to->page_size > 0 && from->page_size == 0) return false;
    if (to->cp_size > 1 && (from->cp_size <= 1 || to->cp_comm != from->cp_comm)) return false;
    if (to->backward && !from->backward) return false;
    for (int f = 0; f < AF_CF_COUNT; f++) /* a score feature `to` has, `from` has too */
        if (af_case_field_row((af_case_field)f)->feature_text && af_case_field_printed(to, (af_case_field)f) &&
            !af_case_field_printed(from, (af_case_field)f))
            return false;
    return true;
}
