/* cudnn_bucket.h — one built cuDNN graph (and its plans) for many cases: the padded case.
 *
 * A cuDNN SDPA graph with padding takes per-sequence lengths at run time (seq_len_q /
 * seq_len_kv tensors, [b,1,1,1] INT32) and computes, for sequence b, the attention of
 * its first seq_len_q[b] queries over its first seq_len_kv[b] keys; the band's diagonal
 * (bottom-right alignment, windows) is placed from those actual lengths
 * (cudnn_graph_fwd.c, af_sdpa_band_mask). A case with lengths (s_q, s_kv) therefore asks
 * the same function as its padded case: the same case with maxima rounded up to buckets
 * (S_q, S_kv) and seqlens_q[b] = s_q, seqlens_kv[b] = s_kv (or the case's own lists).
 * Every case with the same padded case shares one graph description, so one graph and
 * one set of finalized plans (cudnn.c's cache) serve all of them.
 *
 * Served through a padded case: fp16 / bf16, layouts bshd, sbhd, bhsd (any packing,
 * stride gap), padded or not, every mask, alignment and window, forward and backward.
 * Run on their own graph: thd (ragged offsets follow the actual token positions), paged
 * KV (the page table follows the actual pages), fp8_e4m3 (its scale / amax graph stays
 * exact), cp > 1 (declined anyway), dropout cases whose padded case's keep mask would
 * exceed AF_CUDNN_DROPOUT_MASK_MAX (the mask is a real input in the padded extents), and
 * cases whose lengths are already buckets and that are padded already (the padded case is
 * the case). ATTNFUZZ_CUDNN_PLAN_REUSE=0 runs every
 * case on its own graph.
 *
 * Buckets of a length s: s <= AF_CUDNN_BUCKET_FLOOR -> AF_CUDNN_BUCKET_FLOOR; above it,
 * for 2^k < s <= 2^(k+1), the next multiple of 2^k / 8 (at most 12.5 % more rows, 8
 * buckets per octave; every bucket is a multiple of 128). The floor makes every short
 * case of a shape share one graph; the extra rows cost the GPU microseconds.
 */
#ifndef ATTNFUZZ_CUDNN_BUCKET_H
#define ATTNFUZZ_CUDNN_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "model/case.h"
#include "backends/backend.h"
#include "model/tensors.h"

#define AF_CUDNN_BUCKET_FLOOR 1024

/* Dropout: the cudnn backend hands cuDNN the keep mask as a real (B, Hq, Sq, Skv) tensor of
 * 2-byte elements (cudnn.c); a case whose mask would be larger than this is declined. */
#define AF_CUDNN_DROPOUT_MASK_MAX (1LL << 30)

/* Bytes of the keep mask of a case with b sequences, hq query heads and maxima sq, skv
 * (2 bytes an element; 0 when p = 0, no dropout). */
long long af_cudnn_dropout_mask_bytes(double p, int b, int hq, int sq, int skv);

/* The bucket of a sequence length s >= 1 (never above AF_MAX_SEQLEN for s within it). */
int af_cudnn_bucket_len(int s);

/* Can c run through a padded case? false with why (one line) when it runs on its own. */
bool af_cudnn_bucket_applies(const af_case *c, char *why, size_t cap);

/* The padded case of c (c itself when the bucket would change nothing). Returns true when
 * padded differs from c (the run goes through padded's graph), false otherwise. */
bool af_cudnn_bucket_case(const af_case *c, af_case *padded);

/* Whether c's own buffers serve padded's graph as they are: padded keeps c's maxima (only
 * the per-sequence lengths were added, every length already a bucket), so every tensor of
 * padded is laid out as c's and the run reads and writes c's buffers with no staged copy
 * (af_cudnn_stage_in / _out; a 32k case that sits on its bucket moves 2 GB less on the
 * host a run). */
bool af_cudnn_bucket_in_place(const af_case *c, const af_case *padded);

/* The run info's plan note: "padded s_q=1024 s_kv=1024" (the graph that served). */
void af_cudnn_bucket_note(const af_case *padded, char *buf, size_t cap);

/* Blocks of staged buffers kept between runs: a case's run, its repeats and its probes
 * stage the same padded case again and again, and fresh blocks cost the kernel's page
 * faults and zeroing each time (25 MB of a b2 h8 d128 bucket: 6.7 ms of 18 a run on the
 * development machine). A block of exactly the size asked for is taken from the pool,
 * else malloc's; af_cudnn_stage_release gives a staged case's blocks back, up to
 * AF_CUDNN_STAGE_KEEP blocks and AF_CUDNN_STAGE_KEEP_BYTES bytes (the oldest go first).
 * One caller at a time (the backend's run). Zero-initialised: empty. */
#define AF_CUDNN_STAGE_KEEP       24
#define AF_CUDNN_STAGE_KEEP_BYTES (1LL << 29)
/* The gap margins' moves between a case's buffers and its padded case's (af_cudnn_stage_in):
 * found once for a pair of layouts (every row of both sorted, tens of ms for a large case
 * with gaps) and kept in the pool for the pair's next runs. */
typedef struct {
    int64_t case_at, padded_at, bytes; /* byte offsets in the data of one buffer */
} af_cudnn_margin_move;
typedef struct {
    af_cudnn_margin_move *move;
    size_t n;
} af_cudnn_margin_moves;
typedef struct {
    bool valid;
    af_layout_plan case_plan, padded_plan; /* the pair (their views and buffer sizes) */
    int batch, stride_gap;
    af_cudnn_margin_moves buf[AF_BUF_COUNT];
} af_cudnn_margin_map;
typedef struct {
    void *block[AF_CUDNN_STAGE_KEEP];
    size_t size[AF_CUDNN_STAGE_KEEP];
    unsigned long age[AF_CUDNN_STAGE_KEEP];
    unsigned long clock;
    af_cudnn_margin_map margins; /* the last pair's (cases with gap_h / gap_s / gap_b) */
} af_cudnn_stage_pool;
/* Free every block the pool holds. */
void af_cudnn_stage_pool_free(af_cudnn_stage_pool *pool);
/* Bytes the pool holds now (for tests). */
long long af_cudnn_stage_pool_bytes(const af_cudnn_stage_pool *pool);

/* Host buffers of the padded case for a run of c: tp is allocated for padded (guards
 * AF_GUARD_BYTE, every data byte 0), then every row c's buffers hold (b, h, s < c's
 * maxima: a sequence's padding rows too, so what the stale-data probe puts there reaches
 * the kernel as it would on c's own layout) of every tensor of t is copied in, outputs
 * too (their poison keeps unwritten rows visible), each row with the stride gap after it
 * (stride_gap), and so is every gap_h / gap_s / gap_b margin (the elements no view owns:
 * the margin after a row goes after the same row of the padded case; what follows c's last
 * row along s, the outer axes' gaps, after the padded case's last row along s); the rows
 * the bucket adds and their margins stay 0.
 * Rows are head_dim elements (LSE: 1), contiguous in every layout served. Returns 0, or
 * -1 with why (out of host memory, padded case too large). The buffers' blocks come from
 * pool where it holds blocks of their sizes (pool NULL: malloc's); the bytes are the same. */
int af_cudnn_stage_in(const af_case *c, const af_tensors *t, const af_case *padded, af_tensors *tp,
                      af_cudnn_stage_pool *pool, char *why, size_t cap);
/* Free tp (af_tensors_free), its buffers' blocks given to pool (NULL: freed). */
void af_cudnn_stage_release(af_tensors *tp, af_cudnn_stage_pool *pool);

/* After the run: the rows of c's buffers (O, LSE; dQ dK dV with backward; Q, K, V, dO too: the
 * judge's input-mutation check compares t's inputs with the case's template, so a write into
 * an input row of tp shows as on c's own buffers; a sequence's padding rows too, each with its
 * stride gap; the gap margins as af_cudnn_stage_in placed them) back from tp into t, and tp's guard margins over t's (a write past the padded
 * buffers shows as out_of_bounds of the case's). A byte of an input buffer of tp outside
 * those rows (the rows the bucket adds, the gap margins: staged as 0) that is not 0 after the
 * run is reported in info (af_run_info_input_write; tp's input rows are zeroed to find
 * them). */
void af_cudnn_stage_out(const af_case *c, af_tensors *t, af_tensors *tp, af_cudnn_stage_pool *pool, af_run_info *info);

#endif
