/* fuzz_tables.h — the curated value tables (fuzz_tables.c) shared by the decoder
 * (fuzz_decode.c), the encoder (fuzz_encode.c) and the mutator (fuzz_mutate.c).
 * Internal to harness/fuzz. */
#ifndef ATTNFUZZ_FUZZ_TABLES_H
#define ATTNFUZZ_FUZZ_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "model/case.h"

#define AF_FZ_N_BATCH       6
#define AF_FZ_N_RATIO       7
#define AF_FZ_N_HKV         5
#define AF_FZ_N_SEQLEN      19
#define AF_FZ_N_HEAD_DIM    16
#define AF_FZ_N_STRIDE_GAP  5
#define AF_FZ_N_THD_GAP     4
#define AF_FZ_N_PAGE        7
#define AF_FZ_N_ODD_PAGE    5
#define AF_FZ_N_CP          9
#define AF_FZ_N_DATA_BASE   6
#define AF_FZ_N_DATA_PRESET 4
#define AF_FZ_N_WINDOW      19
#define AF_FZ_N_CHUNK       14
#define AF_FZ_N_DOCUMENT    13
#define AF_FZ_N_GLOBAL      9
#define AF_FZ_N_BLOCK       14
#define AF_FZ_N_KEEP        14
#define AF_FZ_N_SCALE       6
#define AF_FZ_N_PATTERN     8
#define AF_FZ_MAX_PAIRS     255

extern const int af_fz_batch_table[AF_FZ_N_BATCH];
/* Drop probabilities the fuzzer draws: common training values, 0.9 (almost all dropped),
 * and 1/3, whose threshold round(p 2^32) is not exact. */
#define AF_FZ_N_DROPOUT 6
extern const double af_fz_dropout_table[AF_FZ_N_DROPOUT];
extern const int af_fz_ratio_table[AF_FZ_N_RATIO];
extern const int af_fz_hkv_table[AF_FZ_N_HKV];
/* seqlens on and around the 32/64/128 boundaries */
extern const int af_fz_seqlen_values[AF_FZ_N_SEQLEN];
/* awkward and common head dims */
extern const int af_fz_head_dims[AF_FZ_N_HEAD_DIM];
extern const int af_fz_stride_gaps[AF_FZ_N_STRIDE_GAP];
extern const int af_fz_thd_gaps[AF_FZ_N_THD_GAP];
/* gap_h / gap_s / gap_b the mutator draws: small mostly, 1 and odd sizes (misaligned
 * strides), one wide */
#define AF_FZ_N_AXIS_GAP 8
extern const int af_fz_axis_gaps[AF_FZ_N_AXIS_GAP];
extern const int af_fz_page_sizes[AF_FZ_N_PAGE];
/* the mutator's page sizes that are not powers of two (FlashInfer's and FA3's serving
 * layouts); the byte format holds them in its trailing section */
extern const int af_fz_odd_page_sizes[AF_FZ_N_ODD_PAGE];
extern const int af_fz_cp_sizes[AF_FZ_N_CP];
extern const af_cp_comm af_fz_cp_comms[AF_FZ_N_CP];

typedef struct {
    int a, b;
} af_fz_pair;

/* (seqlen_q, seqlen_kv) sorted by product; (head_dim_qk, head_dim_v) sorted by sum. */
const af_fz_pair *af_fz_seq_pairs(int *n);
const af_fz_pair *af_fz_dim_pairs(int *n);
/* Wide draws (fuzz.h, AF_FUZZ_WIDE_BYTE): 32 entries each, chosen by the core bytes
 * >= AF_FUZZ_WIDE_BYTE when the budget is wide. Sequence pairs (sorted by product):
 * equal lengths log-spaced 511..131072 on and beside 32/64/128 multiples, long-KV decode
 * shapes (s_q 1..16, s_kv up to 131072), split-KV regimes (s_kv just above 256, 1024,
 * 4096, 65536); head-dim pairs (sorted by sum): odd and non-multiple-of-8 dims 1..1024. */
#define AF_FZ_N_WIDE 32
const af_fz_pair *af_fz_wide_seq_pairs(void);
const af_fz_pair *af_fz_wide_dim_pairs(void);
extern const int af_fz_wide_hkv[8];
extern const int af_fz_wide_pages[8];
/* A length drawn log-uniformly in [1, max] from r, then moved onto or beside a 32, 64 or
 * 128 multiple (k*32, k*64 +- 1, k*128 +- 1) half of the time. */
int af_fz_wide_length(uint64_t r, int max);
/* The same draw in [lo, max] (a tile step may leave it one below lo). */
int af_fz_long_length(uint64_t r, int lo, int max);
/* A head dim drawn log-uniformly in [1, 1024] from r (odd ones included). */
int af_fz_wide_head_dim(uint64_t r);

/* Base distribution i; modifier k (outlier, sink, low_lse, block_range, zeros) of a preset. */
const af_data_term *af_fz_data_base(int i);
const af_data_term *af_fz_data_preset(int preset, int modifier);
/* Window edge idx for these lengths (-1 = unbounded). */
int af_fz_window_value(int idx, int sq, int skv);
/* attention_chunk idx (0 .. AF_FZ_N_CHUNK - 1) for this key length: 1, powers of two, odd
 * sizes and the edges around skv (skv / 2, skv - 1, skv, skv + 1); never below 1. */
int af_fz_chunk_value(int idx, int skv);
/* A document length idx (0 .. AF_FZ_N_DOCUMENT - 1) for this key length: 1, powers of
 * two, odd lengths and fractions of skv (skv / 2, skv / 3, skv - 1); never below 1. */
int af_fz_document_len(int idx, int skv);
/* global_keys idx (0 .. AF_FZ_N_GLOBAL - 1): 1 (a sink token), small counts, odd, skv - 1
 * and skv (every key global); never below 1. */
int af_fz_global_value(int idx, int skv);
/* A block_mask block size idx (0 .. AF_FZ_N_BLOCK - 1) along a side of length len: 1,
 * small powers of two (2 .. 128), odd sizes (3, 5, 7, 13, 31) and len itself (one block);
 * never below 1. */
int af_fz_block_size(int idx, int len);
/* A drop mask's keep probability idx (0 .. AF_FZ_N_KEEP - 1): 0.30, 0.35, ... 0.95, in
 * [0.3, 1) so that most rows keep keys; each the double nearest its two decimals (the case
 * text's value). */
double af_fz_keep_value(int idx);
/* Scale preset idx: false = the default 1/sqrt(d_qk), else *out. */
bool af_fz_scale_value(int idx, int dqk, float *out);
/* Length of sequence b of B under a ragged-length pattern (max = padded maximum). */
int af_fz_pattern_len(int pattern, int max, int b, int B, uint64_t seed, int salt);

#endif
