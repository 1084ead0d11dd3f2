/* fuzz_mutate.c — the structure-aware mutator: change one field of a case meaningfully.
 *
 * Each mutation moves one field to a value where kernels tend to break: head dims that
 * are not multiples of 16, sequence lengths on either side of a 32/64/128 tile
 * boundary, sq != skv with bottom-right alignment, window edges at 0/1/len-1/len, GQA
 * ratios, packed layouts and stride gaps, zero- and one-token ragged sequences, and
 * input distributions with outliers, sinks and wide dynamic range.
 */
#include <math.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "fuzz/fuzz_tables.h"
#include "util/rng.h"

static const char *const mutation_names[AF_MUT_COUNT] = {
    "head_dim", "seqlen",   "sq_vs_skv", "mask",  "window", "gqa",      "layout",  "packing", "ragged",
    "data",     "backward", "dtype",     "batch", "scale",  "cp_paged", "feature", "seed",    "boundary"};

const char *af_fuzz_mutation_name(int m) { return m >= 0 && m < AF_MUT_COUNT ? mutation_names[m] : "?"; }

uint64_t af_fuzz_rand(uint64_t *state) { return af_rng_mix64(*state += 0x9e3779b97f4a7c15ull); }

static int pick(uint64_t *rng, int n) { return (int)(af_fuzz_rand(rng) % (uint64_t)n); }

static void fill_lengths(af_case *c, uint64_t *rng) {
    int pattern = pick(rng, AF_FZ_N_PATTERN);
    for (int b = 0; b < c->batch; b++) {
        c->seqlens_q[b] = af_fz_pattern_len(pattern, c->seqlen_q, b, c->batch, c->seed, 1);
        c->seqlens_kv[b] = af_fz_pattern_len(pattern, c->seqlen_kv, b, c->batch, c->seed, 2);
    }
}

static int boundary_seqlen(uint64_t *rng) { return af_fz_seqlen_values[pick(rng, AF_FZ_N_SEQLEN)]; }

static void mutate_head_dim(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    if (af_fuzz_limits_wide(lim) && pick(rng, 2)) { /* log-uniform 1..1024, odd ones too */
        int d = af_fz_wide_head_dim(af_fuzz_rand(rng));
        if (pick(rng, 2))
            c->head_dim_qk = d;
        else
            c->head_dim_v = d;
        if (c->packing != AF_PACK_SEPARATE) c->head_dim_v = c->head_dim_qk = d;
        return;
    }
    int d = af_fz_head_dims[pick(rng, AF_FZ_N_HEAD_DIM - 1)]; /* 512 only through pairs */
    switch (pick(rng, 4)) {
        case 0:
            c->head_dim_qk = c->head_dim_v = d;
            break;
        case 1:
            c->head_dim_qk = d;
            break;
        case 2:
            c->head_dim_v = d;
            break;
        default: {
            int step = pick(rng, 2) ? 8 : -8;
            c->head_dim_qk = c->head_dim_qk + step > 0 ? c->head_dim_qk + step : 8;
            if (c->packing != AF_PACK_SEPARATE || pick(rng, 2)) c->head_dim_v = c->head_dim_qk;
        }
    }
}

static void mutate_seqlen(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    bool equal = c->seqlen_q == c->seqlen_kv;
    if (af_fuzz_limits_wide(lim) && pick(rng, 2)) {
        /* log-uniform up to AF_MAX_SEQLEN on 32/64/128 boundaries; a long-KV decode shape
         * (s_q 1..16) a third of the time */
        int len = af_fz_wide_length(af_fuzz_rand(rng), AF_MAX_SEQLEN);
        switch (pick(rng, 3)) {
            case 0:
                c->seqlen_q = 1 + pick(rng, 16);
                c->seqlen_kv = len;
                break;
            case 1:
                c->seqlen_kv = len;
                if (equal) c->seqlen_q = len;
                break;
            default:
                c->seqlen_q = len;
                if (equal) c->seqlen_kv = len;
        }
        for (int b = 0; c->has_seqlens && b < c->batch; b++) {
            c->seqlens_q[b] = c->seqlen_q;
            c->seqlens_kv[b] = c->seqlen_kv;
        }
        return;
    }
    switch (pick(rng, 4)) {
        case 0:
            c->seqlen_q = c->seqlen_kv = boundary_seqlen(rng);
            break;
        case 1:
            c->seqlen_q = boundary_seqlen(rng);
            if (equal && pick(rng, 2)) c->seqlen_kv = c->seqlen_q;
            break;
        case 2:
            c->seqlen_kv = boundary_seqlen(rng);
            if (equal && pick(rng, 2)) c->seqlen_q = c->seqlen_kv;
            break;
        default: {
            /* step to the other side of the nearest 32-multiple */
            int s = c->seqlen_q, up = (s / 32 + 1) * 32, down = (s / 32) * 32;
            int target = pick(rng, 2) ? up + pick(rng, 2) : (down > 1 ? down - pick(rng, 2) : 1);
            c->seqlen_q = target;
            if (equal) c->seqlen_kv = target;
        }
    }
    if (c->has_seqlens)
        for (int b = 0; b < c->batch; b++) {
            if (c->seqlens_q[b] > c->seqlen_q || pick(rng, 2)) c->seqlens_q[b] = c->seqlen_q;
            if (c->seqlens_kv[b] > c->seqlen_kv || pick(rng, 2)) c->seqlens_kv[b] = c->seqlen_kv;
        }
}

/* A reach draw (wide budgets only, fuzz.h AF_FUZZ_REACH_ONE_IN): a long shape, lengths
 * log-uniform with tile-boundary steps (af_fz_long_length). Four regimes, one each:
 *   long-KV decode  s_q 1..16, s_kv 256..AF_MAX_SEQLEN; half the time GQA (kv heads 1..8,
 *                   ratio 4..16), as in decoding with a KV cache;
 *   split-KV        s_kv 1024..AF_MAX_SEQLEN, s_q <= s_kv / 8, batch * heads_q <= 8: too few
 *                   rows to fill the GPU, where split-KV / flash-decoding kernels switch on;
 *   equal           s_q = s_kv, 1..AF_MAX_SEQLEN;
 *   independent     s_q and s_kv each 1..AF_MAX_SEQLEN.
 * Repair then fits the case to the budget and the memory bound (batch and heads go
 * before a length). Ragged cases get fresh per-sequence lengths from a pattern. */
static void mutate_reach(af_case *c, uint64_t *rng) {
    static const int gqa_kv[] = {1, 2, 4, 8}, gqa_ratio[] = {4, 5, 7, 8, 16};
    switch (pick(rng, 4)) {
        case 0:
            c->seqlen_q = 1 + pick(rng, 16);
            c->seqlen_kv = af_fz_long_length(af_fuzz_rand(rng), 256, AF_MAX_SEQLEN);
            if (pick(rng, 2)) {
                int kv = gqa_kv[pick(rng, 4)];
                c->heads_kv = kv;
                c->heads_q = kv * gqa_ratio[pick(rng, 5)];
            }
            break;
        case 1: {
            c->seqlen_kv = af_fz_long_length(af_fuzz_rand(rng), 1024, AF_MAX_SEQLEN);
            c->seqlen_q = af_fz_long_length(af_fuzz_rand(rng), 1, c->seqlen_kv / 8);
            c->batch = 1 + pick(rng, 2);
            c->heads_kv = 1;
            c->heads_q = 1 << pick(rng, 3);
            break;
        }
        case 2:
            c->seqlen_q = c->seqlen_kv = af_fz_long_length(af_fuzz_rand(rng), 1, AF_MAX_SEQLEN);
            break;
        default:
            c->seqlen_q = af_fz_long_length(af_fuzz_rand(rng), 1, AF_MAX_SEQLEN);
            c->seqlen_kv = af_fz_long_length(af_fuzz_rand(rng), 1, AF_MAX_SEQLEN);
    }
    if (c->has_seqlens) fill_lengths(c, rng);
}

/* ---- boundary draws (the default budget, fuzz.h AF_FUZZ_BOUNDARY_ONE_IN) ---------- */

/* What a boundary draw keeps while it shrinks a case into the budget. */
typedef enum { KEEP_KV, KEEP_KV_HEADS, KEEP_BATCH_HEADS } boundary_keep;

/* Shrink c until its work (af_fuzz_budget_work) fits the budget, never touching what the
 * draw set up: batch
 * (unless kept), s_q, head dims down to 8, heads (down to 2 when kept), then s_kv. Repair
 * would halve the longer sequence first and lose the boundary. */
static void fit_keeping(af_case *c, const af_fuzz_limits *lim, boundary_keep keep) {
    for (int guard = 0; guard < 200 && af_fuzz_budget_work(c) > lim->max_work; guard++) {
        if (keep != KEEP_BATCH_HEADS && c->batch > 1) {
            c->batch = (c->batch + 1) / 2;
        } else if (c->seqlen_q > 1) {
            c->seqlen_q = (c->seqlen_q + 1) / 2;
        } else if (c->head_dim_qk > 8 || c->head_dim_v > 8) {
            if (c->head_dim_qk >= c->head_dim_v)
                c->head_dim_qk = (c->head_dim_qk + 1) / 2;
            else
                c->head_dim_v = (c->head_dim_v + 1) / 2;
        } else if (keep == KEEP_KV && c->heads_q > 1) {
            c->heads_q = c->heads_kv = 1;
        } else if (keep == KEEP_KV_HEADS && c->heads_q > 2) {
            c->heads_kv = c->heads_kv > 1 ? c->heads_kv / 2 : 1;
            c->heads_q = c->heads_kv * 2;
        } else if (c->seqlen_kv > 1) {
            c->seqlen_kv = (c->seqlen_kv + 1) / 2;
        } else {
            break;
        }
    }
    if (c->packing != AF_PACK_SEPARATE && c->head_dim_qk != c->head_dim_v) c->packing = AF_PACK_SEPARATE;
    for (int b = 0; c->has_seqlens && b < c->batch; b++) {
        if (c->seqlens_q[b] > c->seqlen_q) c->seqlens_q[b] = c->seqlen_q;
        if (c->seqlens_kv[b] > c->seqlen_kv) c->seqlens_kv[b] = c->seqlen_kv;
    }
}

/* A small query side: s_q log-uniform in 1..16 (1 half the time). */
static int small_sq(uint64_t *rng) { return pick(rng, 2) ? 1 : af_fz_long_length(af_fuzz_rand(rng), 1, 16); }

/* Full per-sequence lengths (a boundary on s_kv is the real length of every sequence). */
static void full_lengths(af_case *c) {
    for (int b = 0; c->has_seqlens && b < c->batch; b++) {
        c->seqlens_q[b] = c->seqlen_q;
        c->seqlens_kv[b] = c->seqlen_kv;
    }
}

/* Paged KV: pages of 2..1024 tokens (256, 512 or 1024 half the time) and keys past a
 * power of two inside a page: s_kv = k * P + 2^m + {0, 1, 2} with k in 0..1 and 2^m < P
 * (repair keeps a page within the next power of two of s_kv, so k = 0 and a small 2^m
 * give a smaller page: the same regime, smaller). Paging wants separate K/V, a forward
 * and no thd. */
static void boundary_paged(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    int log2_page = pick(rng, 2) ? 8 + pick(rng, 3) : 1 + pick(rng, 10);
    int page = 1 << log2_page, past = 1 << pick(rng, log2_page);
    c->page_size = page;
    c->seqlen_kv = pick(rng, 2) * page + past + pick(rng, 3);
    c->seqlen_q = small_sq(rng);
    c->packing = AF_PACK_SEPARATE;
    c->backward = false;
    if (c->layout == AF_LAYOUT_THD) c->layout = AF_LAYOUT_BSHD;
    full_lengths(c);
    fit_keeping(c, lim, KEEP_KV);
}

/* Long KV with several heads: s_kv just past 256, 1024, 4096 or 16384 (the default
 * budget holds s_kv 32768 at most with two heads and head dims 8 + 8; 65536 only with one
 * head), heads_q 2..8 over 1, 2 or 4 kv heads, a short query side. */
static void boundary_long_kv(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    static const int edges[] = {256, 1024, 4096, 16384};
    int edge = edges[pick(rng, 4)];
    int over = pick(rng, 2) ? 1 : af_fz_long_length(af_fuzz_rand(rng), 1, edge);
    c->seqlen_kv = edge + over;
    c->seqlen_q = small_sq(rng);
    c->heads_kv = 1 << pick(rng, 3);
    c->heads_q = c->heads_kv * (c->heads_kv == 1 ? 2 << pick(rng, 2) : 1 << pick(rng, 2));
    if (af_packing_is_qkv(c->packing)) c->packing = c->packing == AF_PACK_QKV_H ? AF_PACK_KV_H : AF_PACK_KV;
    full_lengths(c);
    fit_keeping(c, lim, KEEP_KV_HEADS);
}

/* Head dims of every residue mod 8, 16 and 32: 32 k + r, r uniform in 0..31, k in 0..4
 * (small first); d_qk, d_v or both. */
static void boundary_head_dim(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    int d = 32 * pick(rng, 5) + pick(rng, 32);
    if (d < 1) d = 32;
    switch (pick(rng, 3)) {
        case 0:
            c->head_dim_qk = d;
            break;
        case 1:
            c->head_dim_v = d;
            break;
        default:
            c->head_dim_qk = c->head_dim_v = d;
    }
    if (c->packing != AF_PACK_SEPARATE) c->head_dim_v = c->head_dim_qk;
    (void)lim;
}

/* batch == heads_kv (2..5) with GQA (ratio 2..4) most of the time: a broadcast that
 * mixes the batch and head indices only shows when the two counts agree. */
static void boundary_batch_heads(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    int old = c->batch;
    c->heads_kv = 2 + pick(rng, 4);
    c->batch = c->heads_kv;
    c->heads_q = c->heads_kv * (pick(rng, 4) ? 2 + pick(rng, 3) : 1);
    if (af_packing_is_qkv(c->packing) && c->heads_q != c->heads_kv)
        c->packing = c->packing == AF_PACK_QKV_H ? AF_PACK_KV_H : AF_PACK_KV;
    for (int b = old; b < c->batch; b++) {
        c->seqlens_q[b] = c->seqlen_q;
        c->seqlens_kv[b] = c->seqlen_kv;
    }
    fit_keeping(c, lim, KEEP_BATCH_HEADS);
}

/* attention_chunk off (one draw in three) or a table size around s_kv (fuzz_tables.h). */
static void mutate_chunk(af_case *c, uint64_t *rng) {
    int k = pick(rng, AF_FZ_N_CHUNK + AF_FZ_N_CHUNK / 2);
    c->attention_chunk = k < AF_FZ_N_CHUNK ? af_fz_chunk_value(k, c->seqlen_kv) : 0;
}

/* Documents off (one draw in four) or 1 to 4 documents of table lengths (fuzz_tables.h:
 * 1, powers of two, odd lengths, fractions of s_kv); half the time the last one is
 * stretched to the last key (an empty tail), else the keys past them are the tail;
 * repair cuts what does not fit in s_kv. */
static void mutate_documents(af_case *c, uint64_t *rng) {
    if (!pick(rng, 4)) {
        c->n_documents = 0;
        return;
    }
    int n = 1 + pick(rng, 4), sum = 0;
    for (int k = 0; k < n; k++) sum += c->documents[k] = af_fz_document_len(pick(rng, AF_FZ_N_DOCUMENT), c->seqlen_kv);
    if (pick(rng, 2) && sum < c->seqlen_kv) c->documents[n - 1] += c->seqlen_kv - sum;
    c->n_documents = n;
}

/* global_keys off (one draw in three) or a table count (fuzz_tables.h). */
static void mutate_global(af_case *c, uint64_t *rng) {
    int k = pick(rng, AF_FZ_N_GLOBAL + AF_FZ_N_GLOBAL / 2);
    c->global_keys = k < AF_FZ_N_GLOBAL ? af_fz_global_value(k, c->seqlen_kv) : 0;
}

/* block_mask off (one draw in three) or table block sizes along s_q and s_kv (fuzz_tables.h:
 * 1, small powers of two, odd sizes, the whole side) and a keep probability in [0.3, 1). */
static void mutate_block_mask(af_case *c, uint64_t *rng) {
    int k = pick(rng, AF_FZ_N_BLOCK + AF_FZ_N_BLOCK / 2);
    if (k >= AF_FZ_N_BLOCK) {
        c->block_mask_q = c->block_mask_k = 0;
        c->block_mask_p = 0.0;
        return;
    }
    int kk = pick(rng, AF_FZ_N_BLOCK); /* drawn in a fixed order: BQ, BK, then P */
    c->block_mask_q = af_fz_block_size(k, c->seqlen_q);
    c->block_mask_k = af_fz_block_size(kk, c->seqlen_kv);
    c->block_mask_p = af_fz_keep_value(pick(rng, AF_FZ_N_KEEP));
}

/* custom_mask off (one draw in three) or a keep probability in [0.3, 1). */
static void mutate_custom_mask(af_case *c, uint64_t *rng) {
    int k = pick(rng, AF_FZ_N_KEEP + AF_FZ_N_KEEP / 2);
    c->custom_mask_p = k < AF_FZ_N_KEEP ? af_fz_keep_value(k) : 0.0;
}

/* Window edges at 0, 1 and at or past the lengths, either alignment, causal or not;
 * s_q and s_kv one or two keys apart half the time (where the alignments differ). */
static void boundary_window(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    if (pick(rng, 2)) {
        int step = 1 + pick(rng, 2);
        c->seqlen_kv = c->seqlen_q + (pick(rng, 2) ? step : -step);
        if (c->seqlen_kv < 1) c->seqlen_kv = 1;
        if (af_packing_is_qkv(c->packing)) c->packing = c->packing == AF_PACK_QKV_H ? AF_PACK_KV_H : AF_PACK_KV;
        full_lengths(c);
    }
    int big = c->seqlen_q > c->seqlen_kv ? c->seqlen_q : c->seqlen_kv;
    const int edges[] = {0, 1, c->seqlen_q, c->seqlen_kv, big + 1, -1};
    c->window_left = edges[pick(rng, 6)];
    c->window_right = edges[pick(rng, 6)];
    c->align = pick(rng, 2) ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
    c->mask = pick(rng, 2) ? AF_MASK_CAUSAL : AF_MASK_NONE;
    if (!pick(rng, 4)) mutate_chunk(c, rng); /* chunk edges against the window's */
    fit_keeping(c, lim, KEEP_KV);
}

/* s_q > s_kv, bottom-right: the first s_q - s_kv rows see no key under a causal mask. */
static void boundary_sq_over_skv(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    c->seqlen_kv = af_fz_long_length(af_fuzz_rand(rng), 1, 64);
    c->seqlen_q = c->seqlen_kv + af_fz_long_length(af_fuzz_rand(rng), 1, 64);
    c->align = AF_ALIGN_BOTTOM_RIGHT;
    if (pick(rng, 4)) c->mask = AF_MASK_CAUSAL;
    if (af_packing_is_qkv(c->packing)) c->packing = c->packing == AF_PACK_QKV_H ? AF_PACK_KV_H : AF_PACK_KV;
    full_lengths(c);
    fit_keeping(c, lim, KEEP_KV);
}

/* Features switched on (the feature mutation switches one at a time, and off as often
 * as on). Half the time a backward with what a backward serves most often, a learnable
 * sink (dsink) or dLSE or both; otherwise a forward with each of dropout (a table
 * probability, fresh Philox seed and offset), a sink kind, a softcap, a bias broadcast,
 * ALiBi, log2 stats and a score statistics output on with probability 1/2 (one at
 * least): a kernel that ignores one of them shows it whatever the others do. Features
 * are fp16 / bf16's: an fp8 case becomes fp16 or bf16 where allowed. */
static void boundary_feature(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    static const double softcaps[] = {5.0, 20.0, 30.0, 50.0};
    if (c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16) {
        af_dtype d = pick(rng, 2) ? AF_DT_FP16 : AF_DT_BF16;
        if (af_fuzz_dtype_allowed(lim, d)) c->dtype = d;
    }
    if (pick(rng, 2)) {
        int which = 1 + pick(rng, 3); /* bit 0 learnable sink, bit 1 dLSE */
        c->backward = true;
        if (which & 1) c->softmax = AF_SOFTMAX_LEARNABLE;
        if (which & 2) c->dlse = true;
    } else {
        int on = 1 + pick(rng, 127); /* bits: dropout, sink, softcap, bias, ALiBi, log2, outputs */
        c->backward = false;
        if (on & 1) { /* drawn in a fixed order: probability, then seed, then offset */
            c->dropout_p = af_fz_dropout_table[pick(rng, AF_FZ_N_DROPOUT)];
            c->dropout_seed = af_fuzz_rand(rng);
            uint64_t offset = af_fuzz_rand(rng);
            c->dropout_offset = offset >> pick(rng, 64);
        }
        if (on & 2) c->softmax = pick(rng, 2) ? AF_SOFTMAX_OFF_BY_ONE : AF_SOFTMAX_LEARNABLE;
        if (on & 4) c->softcap = softcaps[pick(rng, 4)];
        if (on & 8) c->bias = (af_bias_shape)(1 + pick(rng, AF_BIAS_COUNT - 1));
        if (on & 16) { /* a convention, then (abs / signed) the slopes */
            c->alibi = (af_alibi_kind)(1 + pick(rng, 3));
            if (c->alibi != AF_ALIBI_YES) c->alibi_slopes = (af_alibi_slopes)pick(rng, 3);
        }
        if (on & 32) c->lse_base2 = true;
        if (on & 64) { /* a score statistic, half the time under a causal mask: the keys it
                        * hides must not reach the row's max */
            c->outputs = pick(rng, 2) ? AF_OUTPUTS_MAX_LOGIT : AF_OUTPUTS_MAX_SUMEXP;
            if (pick(rng, 2)) c->mask = AF_MASK_CAUSAL;
        }
    }
    fit_keeping(c, lim, KEEP_KV);
}

/* A boundary draw: one of the regimes above on top of the case (the rest of it stays). */
static void mutate_boundary(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    switch (pick(rng, 7)) {
        case 0:
            boundary_paged(c, lim, rng);
            break;
        case 1:
            boundary_long_kv(c, lim, rng);
            break;
        case 2:
            boundary_head_dim(c, lim, rng);
            break;
        case 3:
            boundary_batch_heads(c, lim, rng);
            break;
        case 4:
            boundary_window(c, lim, rng);
            break;
        case 5:
            boundary_sq_over_skv(c, lim, rng);
            break;
        default:
            boundary_feature(c, lim, rng);
    }
}

static void mutate_sq_vs_skv(af_case *c, uint64_t *rng) {
    int sq = c->seqlen_q;
    int options[] = {sq, sq + 1, sq - 1, 2 * sq, sq / 2, sq + 31, 1};
    int v = options[pick(rng, 7)];
    c->seqlen_kv = v > 0 ? v : 1;
    if (c->has_seqlens)
        for (int b = 0; b < c->batch; b++)
            if (c->seqlens_kv[b] > c->seqlen_kv || pick(rng, 2)) c->seqlens_kv[b] = c->seqlen_kv;
}

static void mutate_mask(af_case *c, uint64_t *rng) {
    int now = (c->mask == AF_MASK_CAUSAL) * 2 + (c->align == AF_ALIGN_BOTTOM_RIGHT);
    int next = (now + 1 + pick(rng, 3)) % 4;
    c->mask = next >= 2 ? AF_MASK_CAUSAL : AF_MASK_NONE;
    c->align = (next & 1) ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
}

/* A window bound, or (one draw in eight each) the chunk, the documents, the global keys,
 * the block mask or the element mask, the other masks that cut a row's keys. */
static void mutate_window(af_case *c, uint64_t *rng) {
    int v = af_fz_window_value(pick(rng, AF_FZ_N_WINDOW), c->seqlen_q, c->seqlen_kv);
    switch (pick(rng, 8)) {
        case 3:
            mutate_chunk(c, rng);
            break;
        case 4:
            mutate_documents(c, rng);
            break;
        case 5:
            mutate_global(c, rng);
            break;
        case 6:
            mutate_block_mask(c, rng);
            break;
        case 7:
            mutate_custom_mask(c, rng);
            break;
        case 0:
            c->window_left = v;
            break;
        case 1:
            c->window_right = v;
            break;
        default:
            c->window_left = c->window_right = v;
    }
}

static void mutate_gqa(af_case *c, uint64_t *rng) {
    if (pick(rng, 4) == 0) { /* V's own head count: a divisor of heads_q other than heads_kv */
        int divisors[64], n = 0;
        for (int d = 1; d <= c->heads_q && n < 64; d++)
            if (c->heads_q % d == 0 && d != c->heads_kv) divisors[n++] = d;
        c->heads_v = n ? divisors[pick(rng, n)] : 0;
        if (n) c->packing = AF_PACK_SEPARATE;
        if (!n) c->heads_q = 2 * c->heads_q; /* 1 head: make room for another V head count */
        return;
    }
    if (pick(rng, 2)) {
        int ratio = af_fz_ratio_table[pick(rng, AF_FZ_N_RATIO)];
        c->heads_q = c->heads_kv * ratio;
    } else {
        /* keep heads_q, move heads_kv to another divisor (1 = MQA) */
        int divisors[64], n = 0;
        for (int d = 1; d <= c->heads_q && n < 64; d++)
            if (c->heads_q % d == 0) divisors[n++] = d;
        if (n == 1)
            c->heads_q = 2 * c->heads_q; /* 1 head: make room for a ratio */
        else
            c->heads_kv = divisors[pick(rng, n)];
    }
}

static void mutate_layout(af_case *c, uint64_t *rng) {
    if (pick(rng, 4) == 0) { /* K/V's own layout, or dO's (backward); repair drops what validate refuses */
        if (pick(rng, 2)) {
            c->layout_kv = (af_side_layout)((c->layout_kv + 1 + pick(rng, 6)) % 7);
        } else {
            c->layout_do = (af_side_layout)((c->layout_do + 1 + pick(rng, 6)) % 7);
            if (c->layout_do != AF_SIDE_SAME) c->backward = true;
        }
        return;
    }
    af_layout next = (af_layout)((c->layout + 1 + pick(rng, 3)) % 4);
    if (pick(rng, 4) == 0) { /* another order of b, s, h (separate packing: repair) */
        next = (af_layout)(AF_LAYOUT_SHBD + pick(rng, 3));
        if (next == c->layout) next = AF_LAYOUT_BSHD;
    }
    if (next == AF_LAYOUT_THD && !c->has_seqlens) {
        c->has_seqlens = true;
        fill_lengths(c, rng);
    }
    if (c->layout == AF_LAYOUT_THD && next != AF_LAYOUT_THD && pick(rng, 2)) c->has_seqlens = false;
    c->layout = next;
}

static void mutate_packing(af_case *c, uint64_t *rng) {
    if (pick(rng, 3) == 0) { /* a gap: the vector's (stride_gap) half the time, else a head / token / batch gap */
        int which = pick(rng, 6);
        int *gap = which < 3 ? &c->stride_gap : which == 3 ? &c->gap_h : which == 4 ? &c->gap_s : &c->gap_b;
        int g =
            which < 3 ? af_fz_stride_gaps[pick(rng, AF_FZ_N_STRIDE_GAP)] : af_fz_axis_gaps[pick(rng, AF_FZ_N_AXIS_GAP)];
        *gap = g != *gap ? g : (g ? 0 : 1); /* repair drops what validate refuses */
        return;
    }
    af_packing next = (af_packing)((c->packing + 1 + pick(rng, 4)) % 5);
    c->packing = next;
    if (next != AF_PACK_SEPARATE) c->head_dim_v = c->head_dim_qk;
    if (af_packing_per_head(next) && c->layout == AF_LAYOUT_BHSD) c->layout = AF_LAYOUT_BSHD; /* none in bhsd */
    if (af_packing_is_qkv(next)) {
        c->heads_kv = c->heads_q;
        c->seqlen_kv = c->seqlen_q;
        if (c->has_seqlens)
            for (int b = 0; b < c->batch; b++)
                c->seqlens_kv[b] = c->seqlens_q[b] < c->seqlen_kv ? c->seqlens_q[b] : c->seqlen_kv;
    }
}

static void mutate_ragged(af_case *c, uint64_t *rng) {
    if (!c->has_seqlens) {
        c->has_seqlens = true;
        fill_lengths(c, rng);
        if (pick(rng, 2)) c->layout = AF_LAYOUT_THD;
        return;
    }
    switch (pick(rng, 4)) {
        case 0:
            c->has_seqlens = false;
            if (c->layout == AF_LAYOUT_THD) c->layout = AF_LAYOUT_BSHD;
            break;
        case 1: {
            int b = pick(rng, c->batch);
            bool kv = pick(rng, 2);
            int max = kv ? c->seqlen_kv : c->seqlen_q;
            int options[] = {0, 1, max - 1, max, max / 2};
            int v = options[pick(rng, 5)];
            if (v < 0) v = 0;
            if (kv)
                c->seqlens_kv[b] = v;
            else
                c->seqlens_q[b] = v;
            if (af_packing_is_qkv(c->packing)) c->seqlens_kv[b] = c->seqlens_q[b] = v;
            break;
        }
        case 2:
            if (c->layout == AF_LAYOUT_THD)
                c->thd_gap = af_fz_thd_gaps[pick(rng, AF_FZ_N_THD_GAP)];
            else
                c->layout = AF_LAYOUT_THD;
            break;
        default:
            fill_lengths(c, rng);
    }
}

static void mutate_data(af_case *c, uint64_t *rng) {
    int what = pick(rng, 3);
    if (what == 0 && c->n_data < AF_MAX_DATA_TERMS) {
        /* two draws in a fixed order (as arguments of one call their order would be the
         * compiler's: gcc and clang differed); the order gcc used */
        int modifier = pick(rng, 5);
        int preset = pick(rng, AF_FZ_N_DATA_PRESET);
        af_data_term t = *af_fz_data_preset(preset, modifier);
        /* half the low_lse draws push the rows' logits far below -1e4 (every logit
         * of a row below -5e4: flashinfer #4267's finite "-inf" running max) */
        static const double far_shifts[3] = {6e4, 2e5, 1e6};
        if (t.kind == AF_DATA_LOW_LSE && pick(rng, 2) == 0) t.p1 = far_shifts[pick(rng, 3)];
        for (int i = 0; i < c->n_data; i++)
            if (c->data[i].kind == t.kind) {
                c->data[i] = t; /* same kind: new parameters */
                return;
            }
        c->data[c->n_data++] = t;
    } else if (what == 1 && c->n_data > 1) {
        int i = 1 + pick(rng, c->n_data - 1);
        memmove(&c->data[i], &c->data[i + 1], (size_t)(c->n_data - i - 1) * sizeof c->data[0]);
        c->n_data--;
        memset(&c->data[c->n_data], 0, sizeof c->data[0]);
    } else {
        c->data[0] = *af_fz_data_base(pick(rng, AF_FZ_N_DATA_BASE));
    }
}

static void mutate_batch(af_case *c, uint64_t *rng) {
    int old = c->batch;
    c->batch = af_fz_batch_table[pick(rng, AF_FZ_N_BATCH)];
    for (int b = old; b < c->batch; b++) {
        c->seqlens_q[b] = c->seqlen_q;
        c->seqlens_kv[b] = c->seqlen_kv;
    }
}

static void mutate_cp_paged(af_case *c, uint64_t *rng) {
    if (pick(rng, 2)) {
        int k = pick(rng, AF_FZ_N_CP);
        c->cp_size = af_fz_cp_sizes[k];
        c->cp_comm = af_fz_cp_comms[k];
        /* make the lengths divisible by 2*cp so the repair keeps it */
        int q = 2 * c->cp_size;
        if (c->cp_size > 1) {
            c->seqlen_q = (c->seqlen_q + q - 1) / q * q;
            c->seqlen_kv = (c->seqlen_kv + q - 1) / q * q;
        }
    } else {
        int k = pick(rng, AF_FZ_N_PAGE + AF_FZ_N_ODD_PAGE);
        c->page_size = k < AF_FZ_N_PAGE ? af_fz_page_sizes[k] : af_fz_odd_page_sizes[k - AF_FZ_N_PAGE];
        if (c->page_size) { /* a thd case stays thd: ragged queries over paged K/V */
            c->packing = AF_PACK_SEPARATE;
            c->backward = false;
            c->page_hnd = pick(rng, 4) == 0;      /* FlashInfer's HND pages */
            c->page_kv_joint = pick(rng, 4) == 0; /* K and V blocks in one page */
        }
    }
}

/* One feature on, off or to another value (repair drops what the case cannot hold):
 * softcaps where tanh bends most scores (5) to Gemma's 30 / 50, both sink kinds, every
 * bias broadcast (the query-broadcast ones too), ALiBi in each convention with each kind of
 * slopes, log2 stats, dLSE (needs backward, which repair checks), dropout
 * (off, or a table probability with a fresh Philox seed and offset, a quarter of them with
 * the kernel's own stream), the local masks, the
 * block / element drop masks, the score statistics outputs and the score_mods (none,
 * squared, trig, trig2). */
static void mutate_feature(af_case *c, uint64_t *rng) {
    static const double softcaps[] = {0.0, 5.0, 20.0, 30.0, 50.0};
    if (af_dtype_is_fp8_tensor(c->dtype)) { /* fp8's: O's storage, descales, sinks, or one tensor's headroom */
        int what = pick(rng, 6);
        if (what == 5) { /* the one score feature fp8 holds (docs/fp8.md, "Sinks") */
            c->softmax = (af_softmax_kind)pick(rng, 3);
            return;
        }
        if (what == 0) {
            c->out_dtype = (af_out_dtype)pick(rng, 3); /* same, fp16, bf16 */
            return;
        }
        if (what == 1) { /* per-tensor <-> per-(batch, kv head) descales (forward only) */
            c->descale_head = !c->descale_head;
            if (c->descale_head) c->backward = false;
            return;
        }
        int tensor = pick(rng, AF_FP8_SCALED); /* drawn first: one order for every compiler */
        c->fp8_headroom[tensor] = pick(rng, AF_FP8_HEADROOM_MAX + 1);
        return;
    }
    switch (pick(rng, 14)) {
        case 13: /* off or one of torch Flex's named score_mods, in place of a softcap (one
                  * score modifier: repair drops the score_mod beside a softcap) */
            c->score_mod = (af_score_mod)pick(rng, AF_SCORE_MOD_TRIG2 + 1);
            if (c->score_mod != AF_SCORE_MOD_NONE) c->softcap = 0.0;
            break;
        case 12: /* the score statistics beside O and LSE: lse, max_sumexp, max_logit */
            c->outputs = (af_outputs_kind)pick(rng, 3);
            break;
        case 7:
            mutate_chunk(c, rng);
            break;
        case 8:
            mutate_documents(c, rng);
            break;
        case 9:
            mutate_global(c, rng);
            break;
        case 10:
            mutate_block_mask(c, rng);
            break;
        case 11:
            mutate_custom_mask(c, rng);
            break;
        case 0:
            c->softcap = softcaps[pick(rng, 5)];
            break;
        case 1:
            c->softmax = (af_softmax_kind)pick(rng, 3);
            break;
        case 2:
            c->bias = (af_bias_shape)pick(rng, AF_BIAS_COUNT);
            break;
        case 3: /* off or a convention, then (abs / signed) the slopes */
            c->alibi = (af_alibi_kind)pick(rng, 4);
            c->alibi_slopes = c->alibi == AF_ALIBI_ABS || c->alibi == AF_ALIBI_SIGNED ? (af_alibi_slopes)pick(rng, 3)
                                                                                      : AF_SLOPES_STANDARD;
            break;
        case 4:
            c->lse_base2 = !c->lse_base2;
            break;
        case 5:
            c->dlse = !c->dlse;
            if (c->dlse) c->backward = true;
            break;
        default: { /* drawn in a fixed order: probability, then seed, then offset */
            int k = pick(rng, AF_FZ_N_DROPOUT + 1);
            uint64_t seed = af_fuzz_rand(rng);
            uint64_t offset = af_fuzz_rand(rng);
            offset >>= pick(rng, 64); /* small offsets as often as large ones */
            c->dropout_p = k == AF_FZ_N_DROPOUT ? 0.0 : af_fz_dropout_table[k];
            c->dropout_seed = c->dropout_p != 0.0 ? seed : 0;
            c->dropout_offset = c->dropout_p != 0.0 ? offset : 0;
            /* with dropout, a quarter of the draws leave the stream to the kernel (its own RNG,
             * judged given the mask it returns: docs/dropout.md) */
            c->dropout_rng = c->dropout_p != 0.0 && pick(rng, 4) == 0 ? AF_DROPOUT_RNG_KERNEL : AF_DROPOUT_RNG_ATTNFUZZ;
            break;
        }
    }
}

static void apply(af_case *c, int m, const af_fuzz_limits *lim, uint64_t *rng) {
    switch (m) {
        case AF_MUT_HEAD_DIM:
            mutate_head_dim(c, lim, rng);
            break;
        case AF_MUT_SEQLEN:
            mutate_seqlen(c, lim, rng);
            break;
        case AF_MUT_SQ_VS_SKV:
            mutate_sq_vs_skv(c, rng);
            break;
        case AF_MUT_MASK:
            mutate_mask(c, rng);
            break;
        case AF_MUT_WINDOW:
            mutate_window(c, rng);
            break;
        case AF_MUT_GQA:
            mutate_gqa(c, rng);
            break;
        case AF_MUT_LAYOUT:
            mutate_layout(c, rng);
            break;
        case AF_MUT_PACKING:
            mutate_packing(c, rng);
            break;
        case AF_MUT_RAGGED:
            mutate_ragged(c, rng);
            break;
        case AF_MUT_DATA:
            mutate_data(c, rng);
            break;
        case AF_MUT_BACKWARD:
            c->backward = !c->backward;
            break;
        case AF_MUT_DTYPE: {
            if ((c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16) && pick(rng, 4) == 0) {
                /* an fp8 KV cache under the wide queries (or back): forward only */
                c->kv_dtype = (af_kv_dtype)((c->kv_dtype + 1 + pick(rng, 2)) % 3);
                if (c->kv_dtype != AF_KV_SAME) c->backward = false;
                break;
            }
            int d = (c->dtype + 1 + pick(rng, AF_DT_COUNT - 1)) % AF_DT_COUNT;
            if ((lim->dtype_mask >> d) & 1u) c->dtype = (af_dtype)d;
            break;
        }
        case AF_MUT_BATCH:
            mutate_batch(c, rng);
            break;
        case AF_MUT_SCALE: {
            float s = 0;
            c->has_scale = af_fz_scale_value(pick(rng, AF_FZ_N_SCALE), c->head_dim_qk, &s);
            c->scale = c->has_scale ? s : 0;
            break;
        }
        case AF_MUT_CP_PAGED:
            mutate_cp_paged(c, rng);
            break;
        case AF_MUT_FEATURE:
            mutate_feature(c, rng);
            break;
        default:
            c->seed += 1 + af_fuzz_rand(rng) % 1000;
            break;
    }
}

int af_fuzz_mutate_case(af_case *c, const af_fuzz_limits *lim, uint64_t *rng) {
    af_case orig = *c;
    for (int attempt = 0; attempt < 24; attempt++) {
        af_case t = orig;
        int m;
        /* a wide budget: one draw in AF_FUZZ_REACH_ONE_IN a reach draw (a seqlen
         * mutation); the default budget: one in AF_FUZZ_BOUNDARY_ONE_IN a boundary draw */
        if (af_fuzz_limits_wide(lim) && pick(rng, AF_FUZZ_REACH_ONE_IN) == 0) {
            m = AF_MUT_SEQLEN;
            mutate_reach(&t, rng);
        } else if (!af_fuzz_limits_wide(lim) && pick(rng, AF_FUZZ_BOUNDARY_ONE_IN) == 0) {
            m = AF_MUT_BOUNDARY;
            mutate_boundary(&t, lim, rng);
        } else {
            m = pick(rng, AF_MUT_SEED); /* the seed mutation is the last resort */
            apply(&t, m, lim, rng);
        }
        af_fuzz_repair(&t, lim);
        if (!af_case_equal(&t, &orig)) {
            *c = t;
            return m;
        }
    }
    c->seed = orig.seed + 1 + af_fuzz_rand(rng) % 1000;
    return AF_MUT_SEED;
}

size_t af_fuzz_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed, const af_fuzz_limits *lim) {
    af_case c;
    af_fuzz_decode(data, size, lim, &c);
    uint64_t rng = 0x5eedull ^ ((uint64_t)seed << 17) ^ (uint64_t)size;
    af_fuzz_mutate_case(&c, lim, &rng);
    uint8_t out[AF_FUZZ_MAX_ENCODED];
    size_t n = af_fuzz_encode(&c, out, sizeof out);
    if (n == 0 || n > max_size) return size;
    memcpy(data, out, n);
    return n;
}
