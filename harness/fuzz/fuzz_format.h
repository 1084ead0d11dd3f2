/* fuzz_format.h — byte positions of the fuzz input format (described in fuzz.h), shared
 * by the decoder (fuzz_decode.c) and the encoder (fuzz_encode.c). Internal to harness/fuzz. */
#ifndef ATTNFUZZ_FUZZ_FORMAT_H
#define ATTNFUZZ_FUZZ_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

/* core section: one byte per field, a table index */
enum {
    C_DTYPE,
    C_FLAGS,
    C_BATCH,
    C_RATIO,
    C_HKV,
    C_SEQ,
    C_DIM,
    C_MASK,
    C_WIN_L,
    C_WIN_R,
    C_PAD,
    C_LAYOUT,
    C_PACKING,
    C_STRIDE_GAP,
    C_THD_GAP,
    C_PAGE,
    C_CP,
    C_DATA_BASE,
    C_DATA_MODS,
    C_DATA_PRESET,
    C_SCALE,
    C_SEED,
    C_PATTERN,
    CORE_LEN
};
/* fine section: exact offsets and overrides, then F_DATA's count of data terms of
 * DATA_TERM_BYTES each (kind, p0 and p1 as little-endian doubles) */
enum {
    F_BATCH = CORE_LEN,
    F_RATIO = F_BATCH + 2,
    F_HKV = F_RATIO + 2,
    F_SQ = F_HKV + 2,
    F_SKV = F_SQ + 2,
    F_DQK = F_SKV + 2,
    F_DV = F_DQK + 2,
    F_SEED = F_DV + 2,
    F_WIN_L = F_SEED + 7,
    F_WIN_R = F_WIN_L + 2,
    F_STRIDE_GAP = F_WIN_R + 2,
    F_THD_GAP = F_STRIDE_GAP + 2,
    F_PAGE = F_THD_GAP + 2,
    F_CP = F_PAGE + 1,
    F_SCALE = F_CP + 1,
    F_DATA = F_SCALE + 4,
    DATA_TERM_BYTES = 17
};

/* Where the per-sequence length overrides start (4 bytes per sequence: q, kv as 16-bit
 * length + 1, 0 = the ragged pattern's length). */
static inline size_t fz_lengths_at(unsigned n_fine_terms) {
    return F_DATA + 1 + (size_t)n_fine_terms * DATA_TERM_BYTES;
}

/* End of the fine section: the lengths are there only with padding or thd. */
static inline size_t fz_fine_end(unsigned n_fine_terms, bool has_seqlens, int batch) {
    return fz_lengths_at(n_fine_terms) + (has_seqlens ? 4 * (size_t)batch : 0);
}

/* Trailing section (optional), at fz_fine_end: the two tag bytes, an item mask, then the
 * items present, in bit order. The tag holds bytes that never occur in UTF-8 text and
 * that a random input has at that position once in 65536. */
enum { EXT_TAG0 = 0xC0, EXT_TAG1 = 0xDE, EXT_HEADER_BYTES = 3 };
enum {
    EXT_PAGE_TAIL_NAN = 1u << 0,   /* page_tail = nan; no bytes */
    EXT_BACKEND = 1u << 1,         /* name length (1..AF_NAME_MAX-1), then the name's bytes */
    EXT_ENGINE = 1u << 2,          /* the same */
    EXT_HIGH_BITS = 1u << 3,       /* one byte of EXT_HIGH_* bits */
    EXT_LENGTHS_HIGH = 1u << 4,    /* (2 batch + 7) / 8 bytes: bit 2b is bit 16 of sequence b's
                                    q length override, bit 2b + 1 of its kv one */
    EXT_SMALL_HEAD_DIMS = 1u << 5, /* one byte: bits 0..2 = 8 - head_dim_qk, bits 4..6 = 8 -
                                     head_dim_v, taken off a decoded head dim of exactly 8 (the
                                     tables' smallest) */
    EXT_FEATURES = 1u << 6,        /* EXT_FEATURE_BYTES: one byte of EXT_FEAT_* (softmax in bits
                                     0..1, bias shape in bits 2..4, then alibi, log2 stats, dlse),
                                     then softcap as a little-endian double */
    EXT_FP8_HEADROOM = 1u << 7     /* AF_FP8_SCALED bytes: fp8_headroom of q, k, v, do, o (repair
                                     takes each modulo AF_FP8_HEADROOM_MAX + 1) */
};
enum { EXT_FEATURE_BYTES = 9 };
enum {
    EXT_FEAT_SOFTMAX_MASK = 0x3u,
    EXT_FEAT_BIAS_SHIFT = 2,
    EXT_FEAT_BIAS_MASK = 0x7u,
    EXT_FEAT_ALIBI = 1u << 5,
    EXT_FEAT_LSE_BASE2 = 1u << 6,
    EXT_FEAT_DLSE = 1u << 7
};
/* Bits above the fine section's widths, for values only the largest cases reach. */
enum {
    EXT_HIGH_SQ = 1u << 0,         /* bit 15 of the seqlen_q offset */
    EXT_HIGH_SKV = 1u << 1,        /* bit 15 of the seqlen_kv offset */
    EXT_HIGH_WIN_L = 1u << 2,      /* bit 16 of the window_left override (left + 2) */
    EXT_HIGH_WIN_R = 1u << 3,      /* bit 16 of the window_right override */
    EXT_HIGH_STRIDE_GAP = 1u << 4, /* bit 16 of the stride gap override (gap + 1) */
    EXT_HIGH_THD_GAP = 1u << 5,    /* bit 16 of the thd gap override */
    EXT_HIGH_DROPOUT = 1u << 6,    /* a dropout item (EXT_DROPOUT_BYTES) after the others: one
                                     byte, the probability's index in af_fz_dropout_table
                                     (modulo AF_FZ_N_DROPOUT), then the Philox seed and offset
                                     as little-endian 64-bit words */
    EXT_HIGH_CHUNK = 1u << 7       /* a local-mask item after the dropout item, the last item of
                                     the trailing section: EXT_CHUNK_BYTES little-endian, whose
                                     bits 0..21 are attention_chunk (repair clamps it to
                                     AF_MAX_SEQLEN), bit 22 (EXT_CHUNK_GLOBAL) says global_keys
                                     follows (EXT_CHUNK_BYTES, little-endian) and bit 23
                                     (EXT_CHUNK_DOCUMENTS) that documents follow: a count byte
                                     (1 + b % AF_MAX_DOCUMENTS documents), then each length in
                                     EXT_CHUNK_BYTES (repair keeps each >= 1 and the documents
                                     that fit in seqlen_kv) */
};
/* After the last item present (the local-mask item, or where it would start): an exact
 * page size in EXT_PAGE_BYTES little-endian bytes, 0 = none (missing bytes read as 0), which
 * replaces the core and fine sections' page size; the encoder writes it only for a size
 * those cannot hold (not a power of two), so older inputs decode as before; repair bounds
 * it as any page size. */
/* After the exact page size: heads_v (V's own head count; 0 = heads_kv) in EXT_HEADS_V_BYTES
 * little-endian bytes, missing = 0; the encoder writes it when heads_v != heads_kv (or as
 * zeros to reach the types byte); repair makes it a divisor of heads_q (the largest common
 * one) and drops it with packed K/V.
 * Then one types byte (missing reads as 0): bit 0 (EXT_TYPES_E5M2) turns a decoded fp8_e4m3
 * into fp8_e5m2 (the core byte's dtype stays modulo 4, so older inputs decode as before);
 * bits 1..2 (EXT_TYPES_OUT_SHIFT) are out_dtype (3 reads as same; repair keeps it for
 * fp8_e4m3 / fp8_e5m2 only). */
enum { EXT_DROPOUT_BYTES = 17, EXT_CHUNK_BYTES = 3, EXT_PAGE_BYTES = 3, EXT_HEADS_V_BYTES = 2, EXT_TYPES_BYTES = 1 };
enum { EXT_TYPES_E5M2 = 1u << 0, EXT_TYPES_OUT_SHIFT = 1, EXT_TYPES_OUT_MASK = 0x3u };
enum { EXT_CHUNK_VALUE_MASK = 0x3fffffu, EXT_CHUNK_GLOBAL = 1u << 22, EXT_CHUNK_DOCUMENTS = 1u << 23 };
/* After the types byte (which follows heads_v): the mask-drops item, one byte of EXT_DROPS_* bits (missing = 0: no
 * drops, so older inputs decode as before), then, when EXT_DROPS_BLOCK is set, block_mask's
 * BQ and BK (EXT_CHUNK_BYTES each, little-endian) and P (a little-endian double), then, when
 * EXT_DROPS_CUSTOM is set, custom_mask's P (a little-endian double). Repair clamps the block
 * sizes to [1, AF_MAX_SEQLEN], takes a P above 1 as 1 / P and drops a mask whose P is not a
 * positive finite number, or which leaves no row a key. The encoder writes the item only for
 * a case with a drop. */
enum { EXT_DROPS_BLOCK = 1u << 0, EXT_DROPS_CUSTOM = 1u << 1, EXT_DROPS_P_BYTES = 8 };
/* After the mask-drops item (a zero drops byte written to reach it): the bias / ALiBi item,
 * one byte (missing = 0, so older inputs decode as before): bit 0 (EXT_BA_BIAS_ROW) turns
 * the features byte's bias shape into its query-broadcast form (1hss -> 1h1s ...); bits
 * 1..2 (EXT_BA_ALIBI_SHIFT) make the features byte's ALiBi abs (1) or signed (2) (0 and
 * 3: yes); bits 3..4 (EXT_BA_SLOPES_SHIFT) are alibi_slopes (3 reads as standard; repair
 * keeps them for abs / signed only). The encoder writes it when one is set or the outputs byte follows. */
enum { EXT_BA_BIAS_ROW = 1u << 0, EXT_BA_ALIBI_SHIFT = 1, EXT_BA_SLOPES_SHIFT = 3, EXT_BA_FIELD_MASK = 0x3u };
/* After the bias / ALiBi item (a zero byte written to reach it): the outputs byte (missing
 * = 0: lse, so older inputs decode as before), the case's outputs modulo AF_FZ_N_OUTPUTS
 * (lse, max_sumexp, max_logit). The encoder writes it only for outputs other than lse. */
enum { EXT_OUTPUTS_BYTES = 1, AF_FZ_N_OUTPUTS = 3 };
/* After the outputs byte (the encoder writes the items before it, as 0, to reach it): the KV-types
 * byte (missing = 0: K, V in the dtype, so older inputs decode as before): bits 0..1
 * (EXT_KV_DTYPE_MASK) are kv_dtype (3 reads as same; repair keeps it for fp16 / bf16 forward
 * cases without qkv packing); bit 2 (EXT_KV_DESCALE_HEAD) is descale = head (repair keeps it
 * for fp8_e4m3 / fp8_e5m2 forward cases with heads_v == heads_kv). */
enum { EXT_KV_DTYPE_MASK = 0x3u, EXT_KV_DESCALE_HEAD = 1u << 2 };
/* After the KV-types byte (the encoder writes the items before it, as 0, to reach it): the layouts byte (missing = 0,
 * so older inputs decode as before): bit 0 (EXT_LAYOUTS_PER_HEAD) turns a decoded kv / qkv
 * packing into kv_h / qkv_h (the core byte's packing stays modulo 3), bits 1..2
 * (EXT_LAYOUTS_KV_SHIFT) are layout_kv, bits 3..4 (EXT_LAYOUTS_DO_SHIFT) layout_do (repair
 * drops them where validate would refuse them). The encoder writes it only for a case with
 * one of them. */
enum {
    EXT_LAYOUTS_PER_HEAD = 1u << 0,
    EXT_LAYOUTS_KV_SHIFT = 1,
    EXT_LAYOUTS_DO_SHIFT = 3,
    EXT_LAYOUTS_SIDE_MASK = 0x3u
};
/* After the layouts byte (the encoder writes the items before it, as 0, to reach it): the
 * page-forms byte (missing = 0: nhd, split, so older inputs decode as before): bit 0
 * (EXT_PAGES_HND) is page_layout = hnd, bit 1 (EXT_PAGES_JOINT) page_kv = joint (repair
 * drops both without pages). The encoder writes it only for a case with one of them. */
enum { EXT_PAGES_HND = 1u << 0, EXT_PAGES_JOINT = 1u << 1 };
/* After the page-forms byte (the items before it written, as 0, to reach it): the gaps item,
 * gap_h, gap_s and gap_b in EXT_GAP_BYTES little-endian bytes each (missing = 0, so older
 * inputs decode as before; repair bounds them, model/case.c's limits and the memory the
 * gaps cost). The encoder writes it only for a case with a gap. */
enum { EXT_GAP_BYTES = 2, EXT_N_GAPS = 3 };
/* After the gaps item (written as zeros to reach it): the orders byte (missing = 0), the
 * orders the core byte and the layouts byte cannot hold: bits 0..1 the layout, bits 2..3
 * layout_kv, bits 4..5 layout_do, each 0 (as decoded before) or 1..3 for shbd, hbsd, hsbd
 * (EXT_ORDERS_SHIFT apart; repair keeps them with separate packing only). The encoder writes
 * it only for a case with one of them. */
enum { EXT_ORDERS_SHIFT = 2, EXT_ORDERS_MASK = 0x3u };
/* After the orders byte (the encoder writes the items before it, as 0, to reach it): the
 * dropout-stream byte (missing = 0: attnfuzz's stream, so older inputs decode as before):
 * bit 0 (EXT_DROPOUT_RNG_KERNEL) is dropout_rng = kernel (repair drops it without dropout).
 * The encoder writes it only for dropout_rng = kernel. */
enum { EXT_DROPOUT_RNG_KERNEL = 1u << 0 };
/* After the dropout-stream byte (the encoder writes the items before it, as 0, to reach it):
 * the score-mod byte (missing = 0: none, so older inputs decode as before), score_mod
 * modulo AF_FZ_N_SCORE_MODS (none, squared, trig, trig2; repair drops it with softcap or
 * where features are not allowed). The encoder writes it only for a case with one. */
enum { AF_FZ_N_SCORE_MODS = 4 };

/* A byte a backend or engine name may hold: what the case parser keeps in a value (no
 * white space, no '#', which starts a comment). */
static inline bool fz_name_byte_ok(unsigned b) { return b > 0x20 && b != '#'; }

#endif
