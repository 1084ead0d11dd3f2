/* fuzz_encode.c — a case -> fuzz bytes that decode back to it (af_fuzz_encode; format in
 * fuzz.h and fuzz_format.h): each field as the core table entry at or below its value,
 * the rest as a fine-section offset or override. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "fuzz/fuzz_format.h"
#include "model/case_fields.h"
#include "fuzz/fuzz_tables.h"

static int table_floor(const int *t, int n, int v) {
    int best = 0;
    for (int i = 0; i < n; i++)
        if (t[i] <= v && t[i] > t[best]) best = i;
    return best;
}

/* The entry closest below (a, b) whose offsets fit max_off each; -1 when none does. */
static int pair_floor_within(const af_fz_pair *p, int n, int a, int b, int max_off) {
    int best = -1;
    long long best_gap = -1;
    for (int i = 0; i < n; i++) {
        if (p[i].a > a || p[i].b > b || a - p[i].a > max_off || b - p[i].b > max_off) continue;
        long long gap = (long long)(a - p[i].a) + (b - p[i].b);
        if (best_gap < 0 || gap < best_gap) {
            best = i;
            best_gap = gap;
        }
    }
    return best;
}

static int pair_floor(const af_fz_pair *p, int n, int a, int b) {
    int i = pair_floor_within(p, n, a, b, 1 << 30);
    return i < 0 ? 0 : i;
}

/* A size offset: bits 0..14 here; returns bit 15 (for the trailing section). */
static bool put_offset(uint8_t *o, int pos, int off) {
    if (off <= 0) return false;
    o[pos] = (uint8_t)(0x80u | (off & 0x7f));
    o[pos + 1] = (uint8_t)(off >> 7);
    return (off >> 15) & 1;
}

static void put_le(uint8_t *o, int pos, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; k++) o[pos + k] = (uint8_t)(v >> (8 * k));
}

/* A 16-bit override: the low 16 bits here; returns whether bit 16 is set. */
static bool put_override(uint8_t *o, int pos, uint64_t v) {
    put_le(o, pos, v, 2);
    return (v >> 16) & 1;
}

/* A double as its little-endian bits; returns the position after it. */
static int put_double(uint8_t *o, int pos, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(o, pos, bits, 8);
    return pos + 8;
}

/* Can the trailing section hold this name (and the decoder give it back)? */
static bool name_encodable(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n >= AF_NAME_MAX) return false;
    for (size_t i = 0; i < n; i++)
        if (!fz_name_byte_ok((unsigned char)name[i])) return false;
    return true;
}

static int put_name(uint8_t *o, int pos, const char *name) {
    size_t n = strlen(name);
    o[pos] = (uint8_t)n;
    memcpy(o + pos + 1, name, n);
    return pos + 1 + (int)n;
}

static bool same_terms(const af_case *a, const af_data_term *t, int n) {
    if (a->n_data != n) return false;
    for (int i = 0; i < n; i++)
        if (a->data[i].kind != t[i].kind || a->data[i].p0 != t[i].p0 || a->data[i].p1 != t[i].p1) return false;
    return true;
}

size_t af_fuzz_encode(const af_case *c, uint8_t *out, size_t cap) {
    uint8_t o[AF_FUZZ_MAX_ENCODED];
    memset(o, 0, sizeof o);
    int n_seq, n_dim;
    const af_fz_pair *sp = af_fz_seq_pairs(&n_seq), *dp = af_fz_dim_pairs(&n_dim);
    unsigned high = 0; /* EXT_HIGH_* bits for the trailing section */
    o[C_DTYPE] = (uint8_t)(c->dtype == AF_DT_FP8_E5M2 ? AF_DT_FP8_E4M3 : c->dtype); /* + EXT_TYPES_E5M2 */
    o[C_FLAGS] = c->backward ? 1 : 0;
    int ratio = c->heads_q / c->heads_kv;
    int i = table_floor(af_fz_batch_table, AF_FZ_N_BATCH, c->batch);
    o[C_BATCH] = (uint8_t)i;
    put_offset(o, F_BATCH, c->batch - af_fz_batch_table[i]);
    i = table_floor(af_fz_ratio_table, AF_FZ_N_RATIO, ratio);
    o[C_RATIO] = (uint8_t)i;
    put_offset(o, F_RATIO, ratio - af_fz_ratio_table[i]);
    i = table_floor(af_fz_hkv_table, AF_FZ_N_HKV, c->heads_kv);
    o[C_HKV] = (uint8_t)i;
    put_offset(o, F_HKV, c->heads_kv - af_fz_hkv_table[i]);
    i = pair_floor(sp, n_seq, c->seqlen_q, c->seqlen_kv);
    const af_fz_pair *seq = &sp[i];
    o[C_SEQ] = (uint8_t)i;
    if (c->seqlen_q - sp[i].a > 65535 || c->seqlen_kv - sp[i].b > 65535) {
        /* past the offsets' 16 bits: a wide-table base (decodes so under a wide budget,
         * the only one such lengths are legal under) */
        int w = pair_floor_within(af_fz_wide_seq_pairs(), AF_FZ_N_WIDE, c->seqlen_q, c->seqlen_kv, 65535);
        if (w >= 0) {
            seq = &af_fz_wide_seq_pairs()[w];
            o[C_SEQ] = (uint8_t)(AF_FUZZ_WIDE_BYTE + w);
        }
    }
    if (put_offset(o, F_SQ, c->seqlen_q - seq->a)) high |= EXT_HIGH_SQ;
    if (put_offset(o, F_SKV, c->seqlen_kv - seq->b)) high |= EXT_HIGH_SKV;
    /* head dims below 8 (the tables' smallest): 8 here, the rest in the trailing section */
    int dqk = c->head_dim_qk < 8 ? 8 : c->head_dim_qk, dv = c->head_dim_v < 8 ? 8 : c->head_dim_v;
    unsigned small_dims = (unsigned)(dqk - c->head_dim_qk) | (unsigned)(dv - c->head_dim_v) << 4;
    i = pair_floor(dp, n_dim, dqk, dv);
    o[C_DIM] = (uint8_t)i;
    put_offset(o, F_DQK, dqk - dp[i].a);
    put_offset(o, F_DV, dv - dp[i].b);

    bool br = c->align == AF_ALIGN_BOTTOM_RIGHT;
    o[C_MASK] = (uint8_t)(c->mask == AF_MASK_CAUSAL ? (br ? 2 : 1) : (br ? 3 : 0));
    int win[2] = {c->window_left, c->window_right};
    for (int side = 0; side < 2; side++) {
        int found = -1;
        for (int k = 0; k < AF_FZ_N_WINDOW && found < 0; k++)
            if (af_fz_window_value(k, c->seqlen_q, c->seqlen_kv) == win[side]) found = k;
        if (found >= 0)
            o[C_WIN_L + side] = (uint8_t)found;
        else if (put_override(o, side ? F_WIN_R : F_WIN_L, (uint64_t)(win[side] + 2)))
            high |= side ? EXT_HIGH_WIN_R : EXT_HIGH_WIN_L;
    }
    o[C_PAD] = (uint8_t)(c->layout == AF_LAYOUT_THD ? 2 : c->has_seqlens ? 1 : 0);
    o[C_LAYOUT] = (uint8_t)(c->layout == AF_LAYOUT_THD || !af_layout_is_classic(c->layout) ? 0 : c->layout);
    o[C_PACKING] = (uint8_t)(c->packing == AF_PACK_KV_H    ? AF_PACK_KV /* + EXT_LAYOUTS_PER_HEAD */
                             : c->packing == AF_PACK_QKV_H ? AF_PACK_QKV
                                                           : c->packing);
    int found = -1;
    for (int k = 0; k < AF_FZ_N_STRIDE_GAP && found < 0; k++)
        if (af_fz_stride_gaps[k] == c->stride_gap) found = k;
    if (found >= 0)
        o[C_STRIDE_GAP] = (uint8_t)found;
    else if (put_override(o, F_STRIDE_GAP, (uint64_t)c->stride_gap + 1))
        high |= EXT_HIGH_STRIDE_GAP;
    found = -1;
    for (int k = 0; k < AF_FZ_N_THD_GAP && found < 0; k++)
        if (af_fz_thd_gaps[k] == c->thd_gap) found = k;
    if (found >= 0)
        o[C_THD_GAP] = (uint8_t)found;
    else if (put_override(o, F_THD_GAP, (uint64_t)c->thd_gap + 1))
        high |= EXT_HIGH_THD_GAP;
    found = -1;
    for (int k = 0; k < AF_FZ_N_PAGE && found < 0; k++)
        if (af_fz_page_sizes[k] == c->page_size) found = k;
    bool page_pow2 = c->page_size > 0 && (c->page_size & (c->page_size - 1)) == 0;
    unsigned exact_page = 0; /* a page size the sections cannot hold: the trailing section's */
    if (found >= 0) {
        o[C_PAGE] = (uint8_t)found;
    } else if (page_pow2 || c->page_size <= 0) {
        int lg = 0;
        while ((1 << lg) < c->page_size && lg < 16) lg++;
        o[F_PAGE] = (uint8_t)(lg + 1);
    } else {
        exact_page = (unsigned)c->page_size;
    }
    found = -1;
    for (int k = 0; k < AF_FZ_N_CP && found < 0; k++)
        if (af_fz_cp_sizes[k] == c->cp_size && af_fz_cp_comms[k] == c->cp_comm) found = k;
    if (found >= 0) {
        o[C_CP] = (uint8_t)found;
    } else {
        for (int k = 1; k < AF_FZ_N_CP; k++)
            if (af_fz_cp_comms[k] == c->cp_comm) {
                o[C_CP] = (uint8_t)k;
                break;
            }
        o[F_CP] = (uint8_t)(c->cp_size - 1);
    }

    /* data: a core combination when one gives exactly these terms, else exact terms */
    bool data_done = false;
    for (int base = 0; base < AF_FZ_N_DATA_BASE && !data_done; base++)
        for (int preset = 0; preset < AF_FZ_N_DATA_PRESET && !data_done; preset++)
            for (unsigned mods = 0; mods < 32 && !data_done; mods++) {
                af_data_term t[AF_MAX_DATA_TERMS];
                int n = 0;
                t[n++] = *af_fz_data_base(base);
                for (int k = 0; k < 5; k++)
                    if (mods & (1u << k)) t[n++] = *af_fz_data_preset(preset, k);
                if (n > 1 && t[1].kind == AF_DATA_OUTLIER_CHANNELS && t[1].p0 > c->head_dim_qk) continue;
                if (same_terms(c, t, n)) {
                    o[C_DATA_BASE] = (uint8_t)base;
                    o[C_DATA_MODS] = (uint8_t)(mods ? 0x20u | mods : 0);
                    o[C_DATA_PRESET] = (uint8_t)preset;
                    data_done = true;
                }
            }
    int n_fine_terms = 0;
    if (!data_done) {
        n_fine_terms = c->n_data;
        o[F_DATA] = (uint8_t)n_fine_terms;
        for (int k = 0; k < n_fine_terms; k++) {
            int at = F_DATA + 1 + k * DATA_TERM_BYTES;
            uint64_t b0, b1;
            memcpy(&b0, &c->data[k].p0, 8);
            memcpy(&b1, &c->data[k].p1, 8);
            o[at] = (uint8_t)c->data[k].kind;
            put_le(o, at + 1, b0, 8);
            put_le(o, at + 9, b1, 8);
        }
    }

    found = -1;
    for (int k = 0; k < AF_FZ_N_SCALE && found < 0; k++) {
        float sc = 0;
        bool has = af_fz_scale_value(k, c->head_dim_qk, &sc);
        if (has == c->has_scale && (!has || sc == c->scale)) found = k;
    }
    if (found >= 0) {
        o[C_SCALE] = (uint8_t)found;
    } else {
        uint32_t bits;
        memcpy(&bits, &c->scale, 4);
        put_le(o, F_SCALE, bits, 4);
    }
    uint64_t s1 = c->seed - 1u;
    o[C_SEED] = (uint8_t)(s1 & 0xffu);
    put_le(o, F_SEED, s1 >> 8, 7);

    int end = (int)fz_lengths_at((unsigned)n_fine_terms);
    uint8_t lengths_high[(2 * AF_MAX_BATCH + 7) / 8] = {0}; /* bit 16 of each length override */
    bool any_length_high = false;
    if (c->has_seqlens) {
        int best = 0, best_match = -1;
        for (int p = 0; p < AF_FZ_N_PATTERN; p++) {
            int match = 0;
            for (int b = 0; b < c->batch; b++)
                match += (af_fz_pattern_len(p, c->seqlen_q, b, c->batch, c->seed, 1) == c->seqlens_q[b]) +
                         (af_fz_pattern_len(p, c->seqlen_kv, b, c->batch, c->seed, 2) == c->seqlens_kv[b]);
            if (match > best_match) {
                best = p;
                best_match = match;
            }
        }
        o[C_PATTERN] = (uint8_t)best;
        for (int b = 0; b < c->batch; b++) {
            bool hq = af_fz_pattern_len(best, c->seqlen_q, b, c->batch, c->seed, 1) != c->seqlens_q[b] &&
                      put_override(o, end + 4 * b, (uint64_t)c->seqlens_q[b] + 1);
            bool hkv = af_fz_pattern_len(best, c->seqlen_kv, b, c->batch, c->seed, 2) != c->seqlens_kv[b] &&
                       put_override(o, end + 4 * b + 2, (uint64_t)c->seqlens_kv[b] + 1);
            lengths_high[(2 * b) / 8] |=
                (uint8_t)((hq ? 1u : 0u) << ((2 * b) % 8) | (hkv ? 1u : 0u) << ((2 * b + 1) % 8));
            any_length_high |= hq || hkv;
        }
        end += 4 * c->batch;
    }
    int dropout_index = -1; /* a probability outside the table is not encodable: left out */
    for (int k = 0; k < AF_FZ_N_DROPOUT && c->dropout_p != 0.0; k++)
        if (af_fz_dropout_table[k] == c->dropout_p) dropout_index = k;
    if (dropout_index >= 0) high |= EXT_HIGH_DROPOUT;
    if (c->attention_chunk > 0 || c->global_keys > 0 || c->n_documents > 0) high |= EXT_HIGH_CHUNK;
    /* the trailing section, only for what the sections above cannot hold */
    unsigned items = (c->page_tail_nan ? EXT_PAGE_TAIL_NAN : 0u) | (name_encodable(c->backend) ? EXT_BACKEND : 0u) |
                     (name_encodable(c->engine) ? EXT_ENGINE : 0u) | (high ? EXT_HIGH_BITS : 0u) |
                     (any_length_high ? EXT_LENGTHS_HIGH : 0u) | (small_dims ? EXT_SMALL_HEAD_DIMS : 0u) |
                     (af_case_has_features(c) ? EXT_FEATURES : 0u) |
                     (af_case_has_fp8_headroom(c) ? EXT_FP8_HEADROOM : 0u);
    bool split_v = af_case_field_printed(c, AF_CF_HEADS_V);
    unsigned types = (c->dtype == AF_DT_FP8_E5M2 ? EXT_TYPES_E5M2 : 0u) | /* the item after heads_v */
                     (unsigned)c->out_dtype << EXT_TYPES_OUT_SHIFT;
    unsigned drops = (c->block_mask_q > 0 ? EXT_DROPS_BLOCK : 0u) | (c->custom_mask_p != 0.0 ? EXT_DROPS_CUSTOM : 0u);
    unsigned side_kv = c->layout_kv <= AF_SIDE_BHSD ? (unsigned)c->layout_kv : 0u; /* the orders byte's beyond */
    unsigned side_do = c->layout_do <= AF_SIDE_BHSD ? (unsigned)c->layout_do : 0u;
    unsigned layouts = (af_packing_per_head(c->packing) ? EXT_LAYOUTS_PER_HEAD : 0u) | /* after the KV-types byte */
                       side_kv << EXT_LAYOUTS_KV_SHIFT | side_do << EXT_LAYOUTS_DO_SHIFT;
    unsigned orders = /* after the gaps item: shbd, hbsd, hsbd */
        (af_layout_is_classic(c->layout) ? 0u : (unsigned)(c->layout - AF_LAYOUT_THD)) |
        (c->layout_kv > AF_SIDE_BHSD ? (unsigned)(c->layout_kv - AF_SIDE_BHSD) : 0u) << EXT_ORDERS_SHIFT |
        (c->layout_do > AF_SIDE_BHSD ? (unsigned)(c->layout_do - AF_SIDE_BHSD) : 0u) << 2 * EXT_ORDERS_SHIFT;
    unsigned bias_alibi = (af_bias_broadcasts_query(c->bias) ? EXT_BA_BIAS_ROW : 0u) | /* the item after the drops */
                          (c->alibi == AF_ALIBI_ABS      ? 1u
                           : c->alibi == AF_ALIBI_SIGNED ? 2u
                                                         : 0u)
                              << EXT_BA_ALIBI_SHIFT |
                          (unsigned)c->alibi_slopes << EXT_BA_SLOPES_SHIFT;
    unsigned outs = (unsigned)c->outputs; /* the byte after the bias / ALiBi item */
    unsigned kv_types = (unsigned)c->kv_dtype | (c->descale_head ? EXT_KV_DESCALE_HEAD : 0u);        /* after outputs */
    unsigned pages = (c->page_hnd ? EXT_PAGES_HND : 0u) | (c->page_kv_joint ? EXT_PAGES_JOINT : 0u); /* after layouts */
    unsigned rng = c->dropout_rng == AF_DROPOUT_RNG_KERNEL ? EXT_DROPOUT_RNG_KERNEL : 0u;            /* after orders */
    unsigned smod = (unsigned)c->score_mod;                                                          /* after rng */
    bool gaps =
        c->gap_h || c->gap_s || c->gap_b || orders || rng || smod; /* the gaps item (zeros to reach what follows) */
    if ((exact_page || split_v || types || drops || bias_alibi || outs || kv_types || layouts || pages || gaps) &&
        !items)
        items = EXT_HIGH_BITS; /* a section to hold them */
    if (items) {
        o[end] = EXT_TAG0;
        o[end + 1] = EXT_TAG1;
        o[end + 2] = (uint8_t)items;
        end += EXT_HEADER_BYTES;
        if (items & EXT_BACKEND) end = put_name(o, end, c->backend);
        if (items & EXT_ENGINE) end = put_name(o, end, c->engine);
        if (items & EXT_HIGH_BITS) o[end++] = (uint8_t)high;
        if (items & EXT_LENGTHS_HIGH) {
            int n = (2 * c->batch + 7) / 8;
            memcpy(o + end, lengths_high, (size_t)n);
            end += n;
        }
        if (items & EXT_SMALL_HEAD_DIMS) o[end++] = (uint8_t)small_dims;
        if (items & EXT_FEATURES) {
            o[end++] = (uint8_t)(((unsigned)c->softmax & EXT_FEAT_SOFTMAX_MASK) |
                                 ((unsigned)af_bias_full_query(c->bias) & EXT_FEAT_BIAS_MASK) << EXT_FEAT_BIAS_SHIFT |
                                 (c->alibi != AF_ALIBI_NO ? EXT_FEAT_ALIBI : 0u) |
                                 (c->lse_base2 ? EXT_FEAT_LSE_BASE2 : 0u) | (c->dlse ? EXT_FEAT_DLSE : 0u));
            uint64_t bits;
            memcpy(&bits, &c->softcap, sizeof bits);
            for (int k = 0; k < 8; k++) o[end++] = (uint8_t)(bits >> (8 * k));
        }
        if (items & EXT_FP8_HEADROOM)
            for (int k = 0; k < AF_FP8_SCALED; k++) o[end++] = (uint8_t)c->fp8_headroom[k];
        if (high & EXT_HIGH_DROPOUT) {
            o[end++] = (uint8_t)dropout_index;
            for (int k = 0; k < 8; k++) o[end++] = (uint8_t)(c->dropout_seed >> (8 * k));
            for (int k = 0; k < 8; k++) o[end++] = (uint8_t)(c->dropout_offset >> (8 * k));
        }
        if (high & EXT_HIGH_CHUNK) { /* the local-mask item */
            unsigned v = (unsigned)c->attention_chunk | (c->global_keys > 0 ? EXT_CHUNK_GLOBAL : 0u) |
                         (c->n_documents > 0 ? EXT_CHUNK_DOCUMENTS : 0u);
            for (int k = 0; k < EXT_CHUNK_BYTES; k++) o[end++] = (uint8_t)(v >> (8 * k));
            if (c->global_keys > 0)
                for (int k = 0; k < EXT_CHUNK_BYTES; k++) o[end++] = (uint8_t)((unsigned)c->global_keys >> (8 * k));
            if (c->n_documents > 0) {
                o[end++] = (uint8_t)(c->n_documents - 1); /* 1 + b % AF_MAX_DOCUMENTS */
                for (int d = 0; d < c->n_documents; d++)
                    for (int k = 0; k < EXT_CHUNK_BYTES; k++)
                        o[end++] = (uint8_t)((unsigned)c->documents[d] >> (8 * k));
            }
        }
        for (int k = 0; k < EXT_PAGE_BYTES; k++) o[end++] = (uint8_t)(exact_page >> (8 * k));
        for (int k = 0; (split_v || types || drops || bias_alibi || outs || kv_types || layouts || pages || gaps) &&
                        k < EXT_HEADS_V_BYTES;
             k++)
            o[end++] = (uint8_t)(split_v ? (unsigned)c->heads_v >> (8 * k) : 0u);
        o[end++] = (uint8_t)types;
        o[end++] = (uint8_t)drops; /* the mask-drops item */
        if (drops & EXT_DROPS_BLOCK) {
            for (int k = 0; k < EXT_CHUNK_BYTES; k++) o[end++] = (uint8_t)((unsigned)c->block_mask_q >> (8 * k));
            for (int k = 0; k < EXT_CHUNK_BYTES; k++) o[end++] = (uint8_t)((unsigned)c->block_mask_k >> (8 * k));
            end = put_double(o, end, c->block_mask_p);
        }
        if (drops & EXT_DROPS_CUSTOM) end = put_double(o, end, c->custom_mask_p);
        /* a later item needs the earlier ones written */
        bool later = gaps;
        bool w_pages = pages || later, w_layouts = layouts || w_pages, w_kv = kv_types || w_layouts;
        bool w_outs = outs || w_kv, w_ba = bias_alibi || w_outs;
        if (w_ba) o[end++] = (uint8_t)bias_alibi;   /* the bias / ALiBi item */
        if (w_outs) o[end++] = (uint8_t)outs;       /* the outputs byte */
        if (w_kv) o[end++] = (uint8_t)kv_types;     /* the KV-types byte */
        if (w_layouts) o[end++] = (uint8_t)layouts; /* the layouts byte */
        if (w_pages) o[end++] = (uint8_t)pages;     /* the page-forms byte */
        if (gaps) {                                 /* the gaps item */
            const int g[EXT_N_GAPS] = {c->gap_h, c->gap_s, c->gap_b};
            for (int i = 0; i < EXT_N_GAPS; i++)
                for (int k = 0; k < EXT_GAP_BYTES; k++) o[end++] = (uint8_t)((unsigned)g[i] >> (8 * k));
        }
        if (orders || rng || smod) o[end++] = (uint8_t)orders; /* the orders byte */
        if (rng || smod) o[end++] = (uint8_t)rng;              /* the dropout-stream byte */
        if (smod) o[end++] = (uint8_t)smod;                    /* the score-mod byte */
    }
    /* missing bytes read as 0: drop trailing zeros, but never down to the empty input */
    while (end > 1 && o[end - 1] == 0) end--;
    if ((size_t)end > cap) return 0;
    memcpy(out, o, (size_t)end);
    return (size_t)end;
}
