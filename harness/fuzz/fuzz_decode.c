/* fuzz_decode.c — fuzz bytes -> a case (af_fuzz_decode; the byte format is documented in
 * fuzz.h and laid out in fuzz_format.h). Sizes are decoded first, clamped in field order
 * against the work budget; the rest field by field; then fuzz_repair.c makes it legal. */
#include "fuzz/fuzz.h"
#include "util/config.h"

#include <math.h>
#include <string.h>

#include "fuzz/fuzz_format.h"
#include "fuzz/fuzz_tables.h"
#include "model/case_measure.h"

typedef struct {
    const uint8_t *d;
    size_t n;
} reader;

static unsigned rd(const reader *r, size_t i) { return i < r->n ? r->d[i] : 0u; }
static unsigned rd16(const reader *r, size_t i) { return rd(r, i) | rd(r, i + 1) << 8; }
/* Size offset: active when bit 7 of the first byte is set; 15 bits, and bit 15 from the
 * trailing section (high_bit) when active. */
static int rd_offset(const reader *r, size_t i, bool high_bit) {
    unsigned lo = rd(r, i);
    return (lo & 0x80u) ? (int)((lo & 0x7fu) | rd(r, i + 1) << 7 | (high_bit ? 1u << 15 : 0u)) : 0;
}
static uint64_t rd_le(const reader *r, size_t i, int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++) v |= (uint64_t)rd(r, i + (size_t)k) << (8 * k);
    return v;
}

/* Number of exact data terms in the fine section (0 = the core's data bytes). */
static unsigned fine_term_count(const reader *r) {
    return rd(r, F_DATA) ? 1 + (rd(r, F_DATA) - 1) % AF_MAX_DATA_TERMS : 0;
}

/* The trailing section's items (fuzz_format.h); items = 0 when the tag is absent. */
typedef struct {
    unsigned items;               /* EXT_* bits */
    unsigned high;                /* EXT_HIGH_* bits */
    size_t backend_at, engine_at; /* name bytes */
    unsigned backend_len, engine_len;
    size_t lengths_high_at, small_dims_at, features_at, headroom_at, dropout_at, chunk_at;
    size_t page_at;  /* the exact page size (EXT_PAGE_BYTES); 0 = no trailing section */
    size_t drops_at; /* the mask-drops item; 0 = no trailing section */
} extension;

static void read_extension(const reader *r, size_t at, int batch, extension *e) {
    memset(e, 0, sizeof *e);
    if (rd(r, at) != EXT_TAG0 || rd(r, at + 1) != EXT_TAG1) return;
    e->items = rd(r, at + 2);
    size_t p = at + EXT_HEADER_BYTES;
    if (e->items & EXT_BACKEND) {
        e->backend_len = rd(r, p);
        e->backend_at = p + 1;
        p += 1 + e->backend_len;
    }
    if (e->items & EXT_ENGINE) {
        e->engine_len = rd(r, p);
        e->engine_at = p + 1;
        p += 1 + e->engine_len;
    }
    if (e->items & EXT_HIGH_BITS) e->high = rd(r, p++);
    if (e->items & EXT_LENGTHS_HIGH) {
        e->lengths_high_at = p;
        p += (2 * (size_t)batch + 7) / 8;
    }
    if (e->items & EXT_SMALL_HEAD_DIMS) e->small_dims_at = p++;
    if (e->items & EXT_FEATURES) {
        e->features_at = p;
        p += EXT_FEATURE_BYTES;
    }
    if (e->items & EXT_FP8_HEADROOM) {
        e->headroom_at = p;
        p += AF_FP8_SCALED;
    }
    if (e->high & EXT_HIGH_DROPOUT) {
        e->dropout_at = p;
        p += EXT_DROPOUT_BYTES;
    }
    if (e->high & EXT_HIGH_CHUNK) {
        e->chunk_at = p;
        unsigned v = (unsigned)rd_le(r, p, EXT_CHUNK_BYTES);
        p += EXT_CHUNK_BYTES;
        if (v & EXT_CHUNK_GLOBAL) p += EXT_CHUNK_BYTES;
        if (v & EXT_CHUNK_DOCUMENTS) p += 1 + (size_t)(1 + rd(r, p) % AF_MAX_DOCUMENTS) * EXT_CHUNK_BYTES;
    }
    e->page_at = p;
    e->drops_at = p + EXT_PAGE_BYTES + EXT_HEADS_V_BYTES + EXT_TYPES_BYTES; /* after heads_v and the types byte */
}

/* The local-mask item (fuzz_format.h): attention_chunk, then global_keys and documents
 * when its flags say so; repair makes them fit the case. */
static void read_local_mask(const reader *r, size_t at, af_case *c) {
    unsigned v = (unsigned)rd_le(r, at, EXT_CHUNK_BYTES);
    size_t p = at + EXT_CHUNK_BYTES;
    c->attention_chunk = (int)(v & EXT_CHUNK_VALUE_MASK);
    if (v & EXT_CHUNK_GLOBAL) {
        c->global_keys = (int)rd_le(r, p, EXT_CHUNK_BYTES);
        p += EXT_CHUNK_BYTES;
    }
    if (v & EXT_CHUNK_DOCUMENTS) {
        c->n_documents = 1 + (int)(rd(r, p++) % AF_MAX_DOCUMENTS);
        for (int k = 0; k < c->n_documents; k++, p += EXT_CHUNK_BYTES)
            c->documents[k] = (int)rd_le(r, p, EXT_CHUNK_BYTES);
    }
}

static double rd_double(const reader *r, size_t at) {
    uint64_t bits = rd_le(r, at, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* The mask-drops item (fuzz_format.h): block_mask, then custom_mask when its flags say so;
 * repair makes them legal. */
static size_t read_drops(const reader *r, size_t at, af_case *c) {
    unsigned flags = rd(r, at);
    size_t p = at + 1;
    if (flags & EXT_DROPS_BLOCK) {
        c->block_mask_q = (int)rd_le(r, p, EXT_CHUNK_BYTES);
        c->block_mask_k = (int)rd_le(r, p + EXT_CHUNK_BYTES, EXT_CHUNK_BYTES);
        c->block_mask_p = rd_double(r, p + 2 * EXT_CHUNK_BYTES);
        p += 2 * EXT_CHUNK_BYTES + EXT_DROPS_P_BYTES;
    }
    if (flags & EXT_DROPS_CUSTOM) {
        c->custom_mask_p = rd_double(r, p);
        p += EXT_DROPS_P_BYTES;
    }
    return p; /* the bias / ALiBi item */
}

/* The bias / ALiBi item (fuzz_format.h), after the features item was read. */
static void read_bias_alibi(const reader *r, size_t at, af_case *c) {
    unsigned v = rd(r, at);
    if (v & EXT_BA_BIAS_ROW) c->bias = af_bias_query_broadcast(c->bias);
    unsigned conv = (v >> EXT_BA_ALIBI_SHIFT) & EXT_BA_FIELD_MASK;
    if (c->alibi != AF_ALIBI_NO && (conv == 1 || conv == 2)) c->alibi = conv == 1 ? AF_ALIBI_ABS : AF_ALIBI_SIGNED;
    unsigned slopes = (v >> EXT_BA_SLOPES_SHIFT) & EXT_BA_FIELD_MASK;
    c->alibi_slopes = slopes == 3 ? AF_SLOPES_STANDARD : (af_alibi_slopes)slopes;
}

/* The outputs byte (fuzz_format.h), after the bias / ALiBi item. */
static void read_outputs(const reader *r, size_t at, af_case *c) {
    c->outputs = (af_outputs_kind)(rd(r, at) % AF_FZ_N_OUTPUTS);
}

/* The KV-types byte (fuzz_format.h), after the outputs byte: kv_dtype and descale; repair
 * keeps it where the case allows it. */
static void read_kv_types(const reader *r, size_t at, af_case *c) {
    unsigned byte = rd(r, at), kv = byte & EXT_KV_DTYPE_MASK;
    c->kv_dtype = kv <= AF_KV_FP8_E5M2 ? (af_kv_dtype)kv : AF_KV_SAME;
    c->descale_head = (byte & EXT_KV_DESCALE_HEAD) != 0;
}

/* The layouts byte (fuzz_format.h), after the KV-types byte: per-head packing, layout_kv, layout_do. */
static void read_layouts(const reader *r, size_t at, af_case *c) {
    unsigned v = rd(r, at);
    if (v & EXT_LAYOUTS_PER_HEAD)
        c->packing = c->packing == AF_PACK_QKV ? AF_PACK_QKV_H : c->packing == AF_PACK_KV ? AF_PACK_KV_H : c->packing;
    c->layout_kv = (af_side_layout)((v >> EXT_LAYOUTS_KV_SHIFT) & EXT_LAYOUTS_SIDE_MASK);
    c->layout_do = (af_side_layout)((v >> EXT_LAYOUTS_DO_SHIFT) & EXT_LAYOUTS_SIDE_MASK);
}

/* The gaps item (fuzz_format.h), after the layouts byte: gap_h, gap_s, gap_b. */
static void read_gaps(const reader *r, size_t at, af_case *c) {
    int *gaps[EXT_N_GAPS] = {&c->gap_h, &c->gap_s, &c->gap_b};
    for (int k = 0; k < EXT_N_GAPS; k++) *gaps[k] = (int)rd_le(r, at + (size_t)k * EXT_GAP_BYTES, EXT_GAP_BYTES);
}

/* The orders byte (fuzz_format.h), after the gaps item: shbd, hbsd, hsbd for the layout,
 * layout_kv and layout_do. */
static void read_orders(const reader *r, size_t at, af_case *c) {
    unsigned v = rd(r, at);
    unsigned layout = v & EXT_ORDERS_MASK, kv = (v >> EXT_ORDERS_SHIFT) & EXT_ORDERS_MASK,
             dout = (v >> 2 * EXT_ORDERS_SHIFT) & EXT_ORDERS_MASK;
    if (layout) c->layout = (af_layout)(AF_LAYOUT_THD + layout);
    if (kv) c->layout_kv = (af_side_layout)(AF_SIDE_BHSD + kv);
    if (dout) c->layout_do = (af_side_layout)(AF_SIDE_BHSD + dout);
}

/* The dropout item (fuzz_format.h); repair drops it where the case cannot hold it. */
static void read_dropout(const reader *r, const extension *e, af_case *c) {
    c->dropout_p = af_fz_dropout_table[rd(r, e->dropout_at) % AF_FZ_N_DROPOUT];
    c->dropout_seed = c->dropout_offset = 0;
    for (int k = 0; k < 8; k++) {
        c->dropout_seed |= (uint64_t)rd(r, e->dropout_at + 1 + (size_t)k) << (8 * k);
        c->dropout_offset |= (uint64_t)rd(r, e->dropout_at + 9 + (size_t)k) << (8 * k);
    }
}

/* The features item (fuzz_format.h): out-of-range codes and softcaps are left to repair. */
static void read_features(const reader *r, const extension *e, af_case *c) {
    unsigned f = rd(r, e->features_at);
    c->softmax = (af_softmax_kind)((f & EXT_FEAT_SOFTMAX_MASK) % 3);
    c->bias = (af_bias_shape)(((f >> EXT_FEAT_BIAS_SHIFT) & EXT_FEAT_BIAS_MASK) % 5);
    c->alibi = (f & EXT_FEAT_ALIBI) ? AF_ALIBI_YES : AF_ALIBI_NO; /* abs / signed: the bias / ALiBi item */
    c->lse_base2 = (f & EXT_FEAT_LSE_BASE2) != 0;
    c->dlse = (f & EXT_FEAT_DLSE) != 0;
    uint64_t bits = 0;
    for (int k = 0; k < 8; k++) bits |= (uint64_t)rd(r, e->features_at + 1 + (size_t)k) << (8 * k);
    memcpy(&c->softcap, &bits, sizeof bits);
}

/* Bit 16 of a per-sequence length override (bit = 2 b for q, 2 b + 1 for kv). */
static unsigned length_high(const reader *r, const extension *e, int bit) {
    if (!(e->items & EXT_LENGTHS_HIGH)) return 0;
    return (rd(r, e->lengths_high_at + (size_t)bit / 8) >> (bit % 8) & 1u) << 16;
}

/* A 16-bit override with its bit 16 from the trailing section. */
static unsigned rd_override(const reader *r, size_t i, const extension *e, unsigned high_flag) {
    return rd16(r, i) | (e->high & high_flag ? 1u << 16 : 0u);
}

/* A name from the trailing section; left empty when its length or a byte is not one a
 * case file can hold. */
static void read_name(const reader *r, size_t at, unsigned len, char *dst) {
    dst[0] = 0;
    if (len == 0 || len >= AF_NAME_MAX) return;
    for (unsigned i = 0; i < len; i++) {
        unsigned b = rd(r, at + i);
        if (!fz_name_byte_ok(b)) {
            dst[0] = 0;
            return;
        }
        dst[i] = (char)b;
    }
    dst[len] = 0;
}

typedef struct {
    int batch, ratio, hkv, sq, skv, dqk, dv;
} sizes;

/* af_case_work of the case these sizes will make (bwf = 3 with backward, else 1). */
static double sizes_work(const sizes *s, double bwf) {
    return af_attention_work(bwf, s->batch, s->ratio * s->hkv, s->sq, s->skv, s->dqk + s->dv);
}

/* Largest value of a size field that keeps the work within the budget (other fields
 * as they are), never below the current value (which already fits). */
static int field_max(const sizes *s, double bwf, double budget, int field, bool wide) {
    int max_seqlen = wide ? AF_MAX_SEQLEN : AF_FUZZ_NARROW_MAX_SEQLEN;
    sizes t = *s;
    double rest;
    int hard;
    switch (field) {
        case 0:
            t.batch = 1;
            rest = sizes_work(&t, bwf);
            hard = AF_FUZZ_MAX_BATCH;
            break;
        case 1:
            t.ratio = 1;
            rest = sizes_work(&t, bwf);
            hard = AF_MAX_HEADS / s->hkv;
            break;
        case 2:
            t.hkv = 1;
            rest = sizes_work(&t, bwf);
            hard = AF_MAX_HEADS / s->ratio;
            break;
        case 3:
            t.sq = 1;
            rest = sizes_work(&t, bwf);
            hard = max_seqlen;
            break;
        case 4:
            t.skv = 1;
            rest = sizes_work(&t, bwf);
            hard = max_seqlen;
            break;
        case 5: {
            t.dqk = 0;
            t.dv = 1;
            double per = sizes_work(&t, bwf); /* work per unit of dqk + dv */
            double m = floor(budget / per) - s->dv;
            return (int)(m > AF_MAX_HEAD_DIM ? AF_MAX_HEAD_DIM : m < s->dqk ? s->dqk : m);
        }
        default: {
            t.dqk = 1;
            t.dv = 0;
            double per = sizes_work(&t, bwf);
            double m = floor(budget / per) - s->dqk;
            return (int)(m > AF_MAX_HEAD_DIM ? AF_MAX_HEAD_DIM : m < s->dv ? s->dv : m);
        }
    }
    double m = floor(budget / rest);
    int cur = field == 0 ? s->batch : field == 1 ? s->ratio : field == 2 ? s->hkv : field == 3 ? s->sq : s->skv;
    if (m > hard) m = hard;
    return m < cur ? cur : (int)m;
}

/* Sizes, then the trailing section (*ext: it starts where the fine section ends, which
 * depends on the batch, and holds the high bits of the seqlen offsets). */
/* The (seqlen_q, seqlen_kv) or (head_dim_qk, head_dim_v) pair of core byte b: the
 * largest pair at or below the byte's entry that fits the budget. A wide budget takes
 * bytes >= AF_FUZZ_WIDE_BYTE from the wide table (walking down it, then down the
 * curated one from its top); otherwise every byte indexes the curated table. */
static void pick_pair(sizes *s, double bwf, double budget, unsigned b, bool wide, const af_fz_pair *table, int n,
                      const af_fz_pair *wide_table, bool dims) {
    if (wide && b >= AF_FUZZ_WIDE_BYTE) {
        for (int j = (int)(b - AF_FUZZ_WIDE_BYTE) % AF_FZ_N_WIDE; j >= 0; j--) {
            sizes t = *s;
            if (dims) {
                t.dqk = wide_table[j].a;
                t.dv = wide_table[j].b;
            } else {
                t.sq = wide_table[j].a;
                t.skv = wide_table[j].b;
            }
            if (sizes_work(&t, bwf) <= budget) {
                *s = t;
                return;
            }
        }
        b = (unsigned)n - 1;
    }
    for (int j = (int)(b % (unsigned)n); j >= 0; j--) {
        sizes t = *s;
        if (dims) {
            t.dqk = table[j].a;
            t.dv = table[j].b;
        } else {
            t.sq = table[j].a;
            t.skv = table[j].b;
        }
        if (j == 0 || sizes_work(&t, bwf) <= budget) {
            *s = t;
            return;
        }
    }
}

static void decode_sizes(const reader *r, double bwf, double budget, bool wide, sizes *s, extension *ext) {
    int n_seq, n_dim;
    const af_fz_pair *sp = af_fz_seq_pairs(&n_seq), *dp = af_fz_dim_pairs(&n_dim);
    memset(ext, 0, sizeof *ext);
    /* core stage: later fields reserved at their minima (1, 1, 1, 1x1, 8+8) */
    *s = (sizes){1, 1, 1, 1, 1, 8, 8};
    int want = af_fz_batch_table[rd(r, C_BATCH) % AF_FZ_N_BATCH];
    int m = field_max(s, bwf, budget, 0, wide);
    s->batch = want < m ? want : m;
    want = af_fz_ratio_table[rd(r, C_RATIO) % AF_FZ_N_RATIO];
    m = field_max(s, bwf, budget, 1, wide);
    s->ratio = want < m ? want : m;
    unsigned hkv_byte = rd(r, C_HKV);
    want =
        wide && hkv_byte >= AF_FUZZ_WIDE_BYTE ? af_fz_wide_hkv[hkv_byte % 8] : af_fz_hkv_table[hkv_byte % AF_FZ_N_HKV];
    m = field_max(s, bwf, budget, 2, wide);
    s->hkv = want < m ? want : m;
    pick_pair(s, bwf, budget, rd(r, C_SEQ), wide, sp, n_seq, af_fz_wide_seq_pairs(), false);
    pick_pair(s, bwf, budget, rd(r, C_DIM), wide, dp, n_dim, af_fz_wide_dim_pairs(), true);
    /* fine stage: exact offsets, each clamped to what the budget leaves */
    int *field[7] = {&s->batch, &s->ratio, &s->hkv, &s->sq, &s->skv, &s->dqk, &s->dv};
    static const int pos[7] = {F_BATCH, F_RATIO, F_HKV, F_SQ, F_SKV, F_DQK, F_DV};
    for (int f = 0; f < 7; f++) {
        if (f == 1) /* the batch is final */
            read_extension(r, fz_fine_end(fine_term_count(r), rd(r, C_PAD) % 3 != 0, s->batch), s->batch, ext);
        bool high = (f == 3 && (ext->high & EXT_HIGH_SQ)) || (f == 4 && (ext->high & EXT_HIGH_SKV));
        int off = rd_offset(r, (size_t)pos[f], high);
        if (!off) continue;
        long long v = (long long)*field[f] + off;
        int mx = field_max(s, bwf, budget, f, wide);
        *field[f] = (int)(v < mx ? v : mx);
    }
    /* head dims below the tables' 8: less work, so within the budget too */
    if (ext->items & EXT_SMALL_HEAD_DIMS) {
        unsigned below = rd(r, ext->small_dims_at);
        if (s->dqk == 8) s->dqk -= (int)(below & 7u);
        if (s->dv == 8) s->dv -= (int)(below >> 4 & 7u);
    }
}

int af_fuzz_decode(const uint8_t *data, size_t size, const af_fuzz_limits *lim, af_case *c) {
    af_case_defaults(c);
    if (size == 0) return af_fuzz_repair(c, lim) ? 1 : 0;
    reader r = {data, size};
    af_dtype dt = (af_dtype)(rd(&r, C_DTYPE) % 4); /* fp8_e5m2: the types item below */
    c->dtype = af_fuzz_dtype_allowed(lim, dt) ? dt : af_fuzz_first_dtype(lim);
    c->backward = (rd(&r, C_FLAGS) & 1u) && af_fuzz_backward_allowed(lim, c->dtype);
    double budget = lim->max_work < 1024 ? 1024 : lim->max_work;
    sizes s;
    extension ext;
    decode_sizes(&r, c->backward ? 3.0 : 1.0, budget, af_fuzz_limits_wide(lim), &s, &ext);
    c->batch = s.batch;
    c->heads_kv = s.hkv;
    c->heads_q = s.hkv * s.ratio;
    c->seqlen_q = s.sq;
    c->seqlen_kv = s.skv;
    c->head_dim_qk = s.dqk;
    c->head_dim_v = s.dv;

    unsigned mask = rd(&r, C_MASK) % 4;
    c->mask = (mask == 1 || mask == 2) ? AF_MASK_CAUSAL : AF_MASK_NONE;
    c->align = (mask >= 2) ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
    c->window_left = af_fz_window_value((int)(rd(&r, C_WIN_L) % AF_FZ_N_WINDOW), c->seqlen_q, c->seqlen_kv);
    c->window_right = af_fz_window_value((int)(rd(&r, C_WIN_R) % AF_FZ_N_WINDOW), c->seqlen_q, c->seqlen_kv);
    unsigned win_l = rd_override(&r, F_WIN_L, &ext, EXT_HIGH_WIN_L),
             win_r = rd_override(&r, F_WIN_R, &ext, EXT_HIGH_WIN_R);
    if (win_l) c->window_left = (int)win_l - 2;
    if (win_r) c->window_right = (int)win_r - 2;

    unsigned pad = rd(&r, C_PAD) % 3;
    c->layout = (af_layout)(rd(&r, C_LAYOUT) % 3);
    if (pad == 2) c->layout = AF_LAYOUT_THD;
    c->has_seqlens = pad != 0;
    c->packing = (af_packing)(rd(&r, C_PACKING) % 3); /* kv_h, qkv_h: the layouts byte */
    c->stride_gap = af_fz_stride_gaps[rd(&r, C_STRIDE_GAP) % AF_FZ_N_STRIDE_GAP];
    unsigned stride_gap = rd_override(&r, F_STRIDE_GAP, &ext, EXT_HIGH_STRIDE_GAP);
    if (stride_gap) c->stride_gap = (int)stride_gap - 1;
    c->thd_gap = af_fz_thd_gaps[rd(&r, C_THD_GAP) % AF_FZ_N_THD_GAP];
    unsigned thd_gap = rd_override(&r, F_THD_GAP, &ext, EXT_HIGH_THD_GAP);
    if (thd_gap) c->thd_gap = (int)thd_gap - 1;
    unsigned page_byte = rd(&r, C_PAGE);
    c->page_size = af_fuzz_limits_wide(lim) && page_byte >= AF_FUZZ_WIDE_BYTE
                       ? af_fz_wide_pages[page_byte % 8]
                       : af_fz_page_sizes[page_byte % AF_FZ_N_PAGE];
    if (rd(&r, F_PAGE)) c->page_size = 1 << ((rd(&r, F_PAGE) - 1) % 17);
    unsigned exact_page = ext.page_at ? (unsigned)rd_le(&r, ext.page_at, EXT_PAGE_BYTES) : 0u;
    unsigned types = ext.page_at ? rd(&r, ext.page_at + EXT_PAGE_BYTES + EXT_HEADS_V_BYTES) : 0u; /* fuzz_format.h */
    unsigned out = (types >> EXT_TYPES_OUT_SHIFT) & EXT_TYPES_OUT_MASK;
    c->out_dtype = out <= AF_OUT_BF16 ? (af_out_dtype)out : AF_OUT_SAME;
    if ((types & EXT_TYPES_E5M2) && c->dtype == AF_DT_FP8_E4M3 && af_fuzz_dtype_allowed(lim, AF_DT_FP8_E5M2)) {
        c->dtype = AF_DT_FP8_E5M2;
        if (c->backward && !af_fuzz_backward_allowed(lim, c->dtype)) c->backward = false;
    }
    if (exact_page) c->page_size = (int)exact_page;
    /* repair fits it to heads_q */
    c->heads_v = ext.page_at ? (int)rd_le(&r, ext.page_at + EXT_PAGE_BYTES, EXT_HEADS_V_BYTES) : 0;
    c->page_tail_nan = (ext.items & EXT_PAGE_TAIL_NAN) != 0;
    unsigned cp = rd(&r, C_CP) % AF_FZ_N_CP;
    c->cp_size = af_fz_cp_sizes[cp];
    c->cp_comm = af_fz_cp_comms[cp];
    if (rd(&r, F_CP)) {
        c->cp_size = 2 + (int)((rd(&r, F_CP) - 1) % 63);
        if (c->cp_comm == AF_CP_NONE) c->cp_comm = AF_CP_P2P;
    }

    /* data: core base + modifiers, or exact terms from the fine section */
    unsigned n_fine_terms = fine_term_count(&r);
    if (n_fine_terms) {
        c->n_data = (int)n_fine_terms;
        for (unsigned i = 0; i < n_fine_terms; i++) {
            size_t at = F_DATA + 1 + i * DATA_TERM_BYTES;
            uint64_t b0 = rd_le(&r, at + 1, 8), b1 = rd_le(&r, at + 9, 8);
            c->data[i].kind = (af_data_kind)(rd(&r, at) % AF_DATA_KIND_COUNT);
            memcpy(&c->data[i].p0, &b0, 8);
            memcpy(&c->data[i].p1, &b1, 8);
        }
    } else {
        c->data[0] = *af_fz_data_base((int)(rd(&r, C_DATA_BASE) % AF_FZ_N_DATA_BASE));
        c->n_data = 1;
        unsigned mods = rd(&r, C_DATA_MODS);
        unsigned preset = rd(&r, C_DATA_PRESET) % AF_FZ_N_DATA_PRESET;
        if (mods & 0x20u)
            for (int k = 0; k < 5; k++)
                if (mods & (1u << k)) c->data[c->n_data++] = *af_fz_data_preset((int)preset, k);
    }

    float sc;
    c->has_scale = af_fz_scale_value((int)(rd(&r, C_SCALE) % AF_FZ_N_SCALE), c->head_dim_qk, &sc);
    c->scale = c->has_scale ? sc : 0;
    uint32_t bits = (uint32_t)rd_le(&r, F_SCALE, 4);
    if (bits) {
        float f;
        memcpy(&f, &bits, 4);
        if (isfinite(f) && f != 0 && fabsf(f) <= 1e6f && fabsf(f) >= 1e-12f) {
            c->has_scale = true;
            c->scale = f;
        }
    }
    c->seed = (uint64_t)rd(&r, C_SEED) + 1u + (rd_le(&r, F_SEED, 7) << 8);

    if (c->has_seqlens) {
        int pattern = (int)(rd(&r, C_PATTERN) % AF_FZ_N_PATTERN);
        size_t at = fz_lengths_at(n_fine_terms);
        for (int b = 0; b < c->batch; b++) {
            unsigned q = rd16(&r, at + 4 * (size_t)b) | length_high(&r, &ext, 2 * b);
            unsigned kv = rd16(&r, at + 4 * (size_t)b + 2) | length_high(&r, &ext, 2 * b + 1);
            c->seqlens_q[b] = q ? (int)q - 1 : af_fz_pattern_len(pattern, c->seqlen_q, b, c->batch, c->seed, 1);
            c->seqlens_kv[b] = kv ? (int)kv - 1 : af_fz_pattern_len(pattern, c->seqlen_kv, b, c->batch, c->seed, 2);
        }
    }
    if (ext.items & EXT_BACKEND) read_name(&r, ext.backend_at, ext.backend_len, c->backend);
    if (ext.items & EXT_ENGINE) read_name(&r, ext.engine_at, ext.engine_len, c->engine);
    if (ext.items & EXT_FEATURES) read_features(&r, &ext, c);
    if (ext.high & EXT_HIGH_DROPOUT) read_dropout(&r, &ext, c);
    if (ext.high & EXT_HIGH_CHUNK) read_local_mask(&r, ext.chunk_at, c);
    if (ext.drops_at) {
        size_t after = read_drops(&r, ext.drops_at, c);
        read_bias_alibi(&r, after, c);
        read_outputs(&r, after + 1, c);
        read_kv_types(&r, after + 2, c);
        read_layouts(&r, after + 3, c);
        unsigned pages = rd(&r, after + 4); /* the page-forms byte; repair drops it without pages */
        c->page_hnd = (pages & EXT_PAGES_HND) != 0;
        c->page_kv_joint = (pages & EXT_PAGES_JOINT) != 0;
        read_gaps(&r, after + 5, c);
        read_orders(&r, after + 5 + EXT_N_GAPS * EXT_GAP_BYTES, c);
        /* the dropout-stream byte, after the orders byte */
        if (rd(&r, after + 6 + EXT_N_GAPS * EXT_GAP_BYTES) & EXT_DROPOUT_RNG_KERNEL)
            c->dropout_rng = AF_DROPOUT_RNG_KERNEL;
        /* the score-mod byte, after the dropout-stream byte */
        c->score_mod = (af_score_mod)(rd(&r, after + 7 + EXT_N_GAPS * EXT_GAP_BYTES) % AF_FZ_N_SCORE_MODS);
    }
    if (ext.items & EXT_FP8_HEADROOM)
        for (int k = 0; k < AF_FP8_SCALED; k++) c->fp8_headroom[k] = (int)rd(&r, ext.headroom_at + (size_t)k);
    return af_fuzz_repair(c, lim) ? 1 : 0;
}
