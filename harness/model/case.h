/* model/case.h — the case model: one attention problem, fully determined by its text.
 *
 * Logical tensor shapes (whatever the memory layout):
 *   Q, dQ   (batch, heads_q,  seqlen_q,  head_dim_qk)
 *   K, dK   (batch, heads_kv, seqlen_kv, head_dim_qk)
 *   V, dV   (batch, heads_v,  seqlen_kv, head_dim_v)    heads_v = heads_kv unless set
 *   O, dO   (batch, heads_q,  seqlen_q,  head_dim_v)
 *   LSE     (batch, heads_q,  seqlen_q)            natural log, fp32
 * seqlen_q / seqlen_kv are the maxima; per-sequence actual lengths live in
 * seqlens_q / seqlens_kv when the case is padded or ragged (layout thd).
 */
#ifndef ATTNFUZZ_CASE_H
#define ATTNFUZZ_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/dense.h"

#define AF_MAX_BATCH      128 /* the serving batches peer suites test (FlashInfer, FA3: 128) */
#define AF_MAX_HEADS      256
#define AF_MAX_SEQLEN     131072
#define AF_MAX_HEAD_DIM   1024
#define AF_MAX_DATA_TERMS 8
/* Paged KV: page-table entries of a case, all sequences together (batch x pages per
 * sequence; af_layout_plan holds the table in place, 256 KiB). One sequence may use them
 * all: 65536 pages of 2 tokens for a 131072-token cache. */
#define AF_MAX_PAGES     65536
#define AF_MAX_DOCUMENTS 16 /* a document mask's documents (model/mask_rule.h's AF_MASK_MAX_DOCS) */
#define AF_NAME_MAX      128
/* fp8_headroom: the tensors it scales (q, k, v, do, o) and its largest binade count */
#define AF_FP8_SCALED       5
#define AF_FP8_HEADROOM_MAX 8

/* fp8_e5m2 comes last so that the numbers of the others (fuzz bytes, plugin ABI) stay. */
typedef enum { AF_DT_FP16 = 0, AF_DT_BF16, AF_DT_FP8_E4M3, AF_DT_MXFP8, AF_DT_FP8_E5M2, AF_DT_COUNT } af_dtype;
/* fp8 with per-tensor scales (docs/fp8.md): fp8_e4m3 (E4M3FN, max 448) or fp8_e5m2
 * (E5M2, max 57344, with Inf): the same recipe, each in its own encoding. */
static inline bool af_dtype_is_fp8_tensor(af_dtype d) { return d == AF_DT_FP8_E4M3 || d == AF_DT_FP8_E5M2; }
/* out_dtype: O's storage for fp8 dtypes with per-tensor scales: the dtype's own fp8 with
 * an output scale (same, the default), or fp16 / bf16 with none (cuDNN's output data
 * type; FlashAttention 3's fp8 forward returns bf16). The gradients keep the dtype. */
typedef enum { AF_OUT_SAME = 0, AF_OUT_FP16, AF_OUT_BF16 } af_out_dtype;
/* kv_dtype: K and V of an fp16 / bf16 case stored in fp8 with one descale each (an fp8 KV
 * cache: FlashInfer's kv_data_type with k_scale / v_scale, vLLM's kv_cache_dtype); Q, O and
 * the arithmetic stay in the dtype; forward only (docs/fp8.md). same: K, V in the dtype. */
typedef enum { AF_KV_SAME = 0, AF_KV_FP8_E4M3, AF_KV_FP8_E5M2 } af_kv_dtype;
/* fp8_e4m3, fp8_e5m2 or mxfp8: fp8 operands (their own criteria and scales) */
static inline bool af_dtype_is_fp8(af_dtype d) { return af_dtype_is_fp8_tensor(d) || d == AF_DT_MXFP8; }

/* Memory order of the sequence/head axes; the head dim is always innermost (cuDNN's SDPA
 * needs stride 1 on d). shbd, hbsd, hsbd: the other orders of b, s, h (cudnn-frontend's
 * test_mhas_v2 draws any), separate packing only (model/case.c validate). */
typedef enum {
    AF_LAYOUT_BSHD = 0,
    AF_LAYOUT_SBHD,
    AF_LAYOUT_BHSD,
    AF_LAYOUT_THD,
    AF_LAYOUT_SHBD,
    AF_LAYOUT_HBSD,
    AF_LAYOUT_HSBD
} af_layout;
/* The three orders the packings know (and thd): bshd, sbhd, bhsd */
static inline bool af_layout_is_classic(af_layout l) { return l <= AF_LAYOUT_THD; }

/* separate: Q, K, V in three buffers. kv: K and V in one buffer, per token K's heads then
 * V's heads (token, {K,V}, head, d: TransformerEngine's bs2hd); qkv: Q, K, V the same
 * (bs3hd; needs equal heads, lengths, dims). kv_h / qkv_h: interleaved per head, per token
 * and head K then V (Q, K, V) adjacent (token, head, {K,V}, d: TE's bsh2d / bsh3d, th3d):
 * stride_h = 2 (3) (D + stride_gap); not with bhsd (layout.c says why). */
typedef enum { AF_PACK_SEPARATE = 0, AF_PACK_KV, AF_PACK_QKV, AF_PACK_KV_H, AF_PACK_QKV_H } af_packing;
/* Q, K and V in one buffer (qkv or qkv_h) */
static inline bool af_packing_is_qkv(af_packing p) { return p == AF_PACK_QKV || p == AF_PACK_QKV_H; }
/* K and V, and not Q, in one buffer (kv or kv_h) */
static inline bool af_packing_is_kv(af_packing p) { return p == AF_PACK_KV || p == AF_PACK_KV_H; }
/* interleaved per head (kv_h or qkv_h) */
static inline bool af_packing_per_head(af_packing p) { return p == AF_PACK_KV_H || p == AF_PACK_QKV_H; }

/* layout_kv (K, V, dK, dV) and layout_do (dO): their own memory order, or the case's
 * layout (same). layout = thd with layout_kv = bshd is ragged Q over a padded KV cache
 * (cuDNN's ragged Q with a padded K/V; chunked prefill): seqlens_kv are then each
 * sequence's valid keys in its seqlen_kv rows (FlashAttention's seqused_k). */
typedef enum {
    AF_SIDE_SAME = 0,
    AF_SIDE_BSHD,
    AF_SIDE_SBHD,
    AF_SIDE_BHSD,
    AF_SIDE_SHBD,
    AF_SIDE_HBSD,
    AF_SIDE_HSBD
} af_side_layout;

/* Which keys a query row may see before the window is applied. */
typedef enum { AF_MASK_NONE = 0, AF_MASK_CAUSAL } af_mask_kind;

/* top_left: row i is aligned with key i.  bottom_right: row i is aligned with key
 * i + (len_kv - len_q), lengths taken per sequence. */
typedef enum { AF_ALIGN_TOP_LEFT = 0, AF_ALIGN_BOTTOM_RIGHT } af_align;

/* CP communication pattern (context parallelism, load-balanced 2*cp chunks). */
typedef enum { AF_CP_NONE = 0, AF_CP_P2P, AF_CP_ALL_GATHER, AF_CP_A2A, AF_CP_A2A_P2P } af_cp_comm;

/* Components of the input distribution mixture. Base is normal or uniform; the
 * others modify it. See harness/model/gen.c for the exact recipe. */
typedef enum {
    AF_DATA_NORMAL = 0,       /* p0 = sigma                                        */
    AF_DATA_UNIFORM,          /* p0 = a: U(-a, a)                                  */
    AF_DATA_OUTLIER_CHANNELS, /* p0 = count of channels, p1 = magnitude multiplier */
    AF_DATA_SINK,             /* p0 = magnitude of key/value token 0 (sink spike)  */
    AF_DATA_LOW_LSE,          /* p0 = fraction of query rows, p1 = score shift     */
    AF_DATA_BLOCK_RANGE,      /* p0 = log2 range inside each 32-token block        */
    AF_DATA_ZEROS,            /* p0 = fraction of elements set to zero             */
    AF_DATA_KIND_COUNT
} af_data_kind;

/* Attention sinks (TransformerEngine's softmax_type): vanilla = none; off_by_one adds
 * exp(0) to every row's softmax denominator; learnable adds exp(sink_h), one logit per
 * query head (an input with a gradient). oracle/feature_spec.h has the formulas. */
typedef enum { AF_SOFTMAX_VANILLA = 0, AF_SOFTMAX_OFF_BY_ONE, AF_SOFTMAX_LEARNABLE } af_softmax_kind;

/* Additive score bias, shape (batch or 1, heads_q or 1, seqlen_q or 1, seqlen_kv): the
 * letters name which of batch (b), heads (h) and queries (s) the tensor has; 1 =
 * broadcast. The ..1s shapes are one row of seqlen_kv values per (b, h) seen by every
 * query (TransformerEngine's 111s; cuDNN takes any broadcast axis by stride 0). */
typedef enum {
    AF_BIAS_NONE = 0,
    AF_BIAS_11SS,
    AF_BIAS_1HSS,
    AF_BIAS_B1SS,
    AF_BIAS_BHSS,
    AF_BIAS_111S, /* the query-broadcast shapes: appended, so the numbers above stay */
    AF_BIAS_B11S,
    AF_BIAS_1H1S,
    AF_BIAS_BH1S,
    AF_BIAS_COUNT
} af_bias_shape;

/* ALiBi's distance convention (oracle/feature_spec.h has the formulas): yes = the
 * original form (slopes 2^(-8 (h+1) / heads_q) for any head count, -slope |distance|
 * from the bottom-right diagonal); abs = FlashAttention's -slope |i + s_k - s_q - j| with
 * the slopes of alibi_slopes; signed = slope (j - (i + s_k - s_q)), cuDNN's and
 * FlashInfer's form (positive right of the diagonal). */
typedef enum { AF_ALIBI_NO = 0, AF_ALIBI_YES, AF_ALIBI_ABS, AF_ALIBI_SIGNED } af_alibi_kind;

/* ALiBi slopes (abs and signed; yes keeps its own): standard = the ALiBi paper's recipe
 * (non-power-of-two head counts included), random = one slope per head drawn from the
 * seed (FlashAttention's alibi_slopes of shape (nheads,), FlashInfer's / TE's custom
 * slopes), random_batch = one per (batch, head) (FlashAttention's (batch, nheads)). */
typedef enum { AF_SLOPES_STANDARD = 0, AF_SLOPES_RANDOM, AF_SLOPES_RANDOM_BATCH } af_alibi_slopes;

/* Does the bias shape broadcast the query axis (111s, b11s, 1h1s, bh1s)? */
static inline bool af_bias_broadcasts_query(af_bias_shape b) { return b >= AF_BIAS_111S && b <= AF_BIAS_BH1S; }
/* The batch / heads part of a shape with its query axis full (b11s -> b1ss) or broadcast. */
static inline af_bias_shape af_bias_full_query(af_bias_shape b) {
    return af_bias_broadcasts_query(b) ? (af_bias_shape)(b == AF_BIAS_111S   ? AF_BIAS_11SS
                                                         : b == AF_BIAS_B11S ? AF_BIAS_B1SS
                                                         : b == AF_BIAS_1H1S ? AF_BIAS_1HSS
                                                                             : AF_BIAS_BHSS)
                                       : b;
}
static inline af_bias_shape af_bias_query_broadcast(af_bias_shape b) {
    b = af_bias_full_query(b);
    return b == AF_BIAS_NONE   ? b
           : b == AF_BIAS_11SS ? AF_BIAS_111S
           : b == AF_BIAS_B1SS ? AF_BIAS_B11S
           : b == AF_BIAS_1HSS ? AF_BIAS_1H1S
                               : AF_BIAS_BH1S;
}

/* The score statistics a run writes beside O and LSE (oracle/feature_spec.h states them):
 * lse = LSE only; max_sumexp = also each row's max of the visible scores and the sum of
 * exp(score - max) (cuDNN's SDPA Max and Sum_exp outputs); max_logit = also the max of
 * the visible scores of each (batch, head) (TransformerEngine's max_logit for QK-clip). */
typedef enum { AF_OUTPUTS_LSE = 0, AF_OUTPUTS_MAX_SUMEXP, AF_OUTPUTS_MAX_LOGIT } af_outputs_kind;
/* Whose random stream drops P's elements (docs/dropout.md): attnfuzz's Philox mapping
 * (model/dropout.h), or the kernel's own RNG, judged given the keep mask it returns. */
typedef enum { AF_DROPOUT_RNG_ATTNFUZZ = 0, AF_DROPOUT_RNG_KERNEL } af_dropout_rng;

typedef struct {
    af_data_kind kind;
    double p0, p1;
} af_data_term;

typedef struct {
    af_dtype dtype;
    af_out_dtype out_dtype; /* O's storage (fp8 dtypes with per-tensor scales only) */
    af_kv_dtype kv_dtype;   /* K's and V's storage (fp16 / bf16 dtypes only) */
    bool descale_head;      /* descale = head: Q, K, V descales per (batch, kv head), FlashAttention 3's
                               q/k/v_descale of shape (batch, heads_kv); fp8 forward only */
    int batch, heads_q, heads_kv;
    int heads_v;             /* V's (and dV's) heads when they differ from K's (cuDNN's h_v); 0 = heads_kv */
    int seqlen_q, seqlen_kv; /* maxima */
    int head_dim_qk, head_dim_v;
    bool has_seqlens;            /* padding / ragged: per-sequence lengths below */
    int seqlens_q[AF_MAX_BATCH]; /* actual lengths, 0 <= len <= seqlen_q */
    int seqlens_kv[AF_MAX_BATCH];
    af_layout layout;
    af_packing packing;
    /* K, V, dK, dV (layout_kv) and dO (layout_do, backward) in their own layout; same = layout */
    af_side_layout layout_kv, layout_do;
    int stride_gap; /* extra elements after each (token, head) vector */
    /* Extra elements in each head's, token's and batch's stride beyond its packed size,
     * whatever the order of the axes (model/layout.c); 0 = packed */
    int gap_h, gap_s, gap_b;
    int thd_gap;        /* pad tokens between ragged sequences (thd only) */
    int page_size;      /* paged KV: tokens per page, 0 = not paged */
    bool page_tail_nan; /* unused slots of a sequence's last page hold NaN
                                         (default: finite stale values, like a reused cache) */
    bool page_hnd;      /* page_layout = hnd: a page is [heads, page_size, head_dim]
                           (FlashInfer's kv_layout "HND"); default nhd: [page_size, heads,
                           head_dim], bshd inside a page */
    bool page_kv_joint; /* page_kv = joint: K's and V's pages in one buffer, page p's K block
                           then its V block (FlashInfer's [pages, 2, ...] paged_kv_cache);
                           default split: K and V each in their own buffer (FA3's k_cache,
                           v_cache) */
    af_mask_kind mask;
    af_align align;
    int window_left, window_right; /* -1 = unbounded; see mask.h for the convention */
    bool has_scale;
    float scale; /* default 1/sqrt(head_dim_qk), stored as fp32 */
    bool backward;
    int cp_size; /* 1 = no context parallelism */
    af_cp_comm cp_comm;
    uint64_t seed;
    int n_data;
    af_data_term data[AF_MAX_DATA_TERMS];
    /* Features (oracle/feature_spec.h); printed only when not the default. */
    af_softmax_kind softmax;      /* attention sinks */
    double softcap;               /* 0 = none; else scores s -> softcap * tanh(s / softcap) */
    af_bias_shape bias;           /* additive bias input (not learnable: no dBias) */
    af_alibi_kind alibi;          /* ALiBi's convention; AF_ALIBI_NO = none */
    af_alibi_slopes alibi_slopes; /* abs / signed: which slopes */
    bool lse_base2;               /* stats = log2: the LSE output is log2 of the denominator */
    bool dlse;                    /* the backward takes an incoming gradient of the LSE output */
    char backend[AF_NAME_MAX];    /* "" = chosen on the command line */
    char engine[AF_NAME_MAX];     /* "" = default engine; "all" = every engine */
    /* fp8_e4m3 scales (docs/fp8.md): binades of headroom, each 0..AF_FP8_HEADROOM_MAX, of
     * Q, K, V, dO (descale = amax / 448 * 2^h: the stored values use 448 / 2^h of E4M3's
     * range, as under delayed scaling whose amax history exceeds today's) and O (descale_o
     * = 2^h / scale_o); all 0 = current scaling. Printed only when not all 0. */
    int fp8_headroom[AF_FP8_SCALED];
    /* Dropout on P (model/dropout.h maps Philox words to elements; docs/dropout.md):
     * drop probability in [0, 1) (0 = none, not printed), the Philox seed (key) and the
     * 64-bit block offset (counter), printed as "dropout = P SEED OFFSET". A feature. */
    double dropout_p;
    uint64_t dropout_seed, dropout_offset;
    /* dropout_rng = kernel: the kernel drops with its own RNG (seeded from dropout's seed
     * and offset as it likes) and may return its keep mask; needs dropout (docs/dropout.md). */
    af_dropout_rng dropout_rng;
    /* Chunked local attention (FlashAttention 3's attention_chunk, Llama 4): 0 = off, else
     * row i sees key j only if floor(diag(i) / N) == floor(j / N) (diag(i) as the causal and
     * window masks align it, oracle/mask_spec.h), ANDed with the rest of the mask. A feature. */
    int attention_chunk;
    /* Document mask (packed documents, FlexAttention / cuDNN / FlashInfer): n_documents = 0
     * off; else documents[0 .. n - 1] are lengths (>= 1, summing to at most seqlen_kv) over
     * the key axis, the keys past their sum one more document, and row i sees key j only
     * if diag(i) and j are in the same document (ANDed with the rest). Ragged (seqlens)
     * cases: the same boundaries in every sequence, cut at its own length. A feature. */
    int n_documents;
    int documents[AF_MAX_DOCUMENTS];
    /* Global keys ("arrow" masks: Longformer / BigBird global tokens, StreamingLLM sink
     * tokens): keys 0 .. G-1 are seen by every row whatever the rest of the mask says
     * (oracle/mask_spec.h); 0 = off. A feature. */
    int global_keys;
    /* Block-sparse mask (FA4 / FlexAttention block masks, cuDNN block_mask): 0 = off; else
     * query block i / block_mask_q and key block j / block_mask_k are kept when a hash of
     * (seed, the two blocks) falls below block_mask_p in (0, 1], ANDed with the rest
     * (oracle/mask_spec.h). Printed "block_mask = BQ BK P". A feature. */
    int block_mask_q, block_mask_k;
    double block_mask_p;
    /* Arbitrary element mask (FlashInfer custom_mask, a random boolean matrix per batch
     * entry): 0 = off; else element (b, i, j) is kept when a hash of (seed, b, i, j) falls
     * below custom_mask_p in (0, 1], ANDed with the rest. A feature. */
    double custom_mask_p;
    /* Extra score statistics the run writes (af_outputs_kind); lse = none. A feature that
     * is not a score feature: the attention function is the same. */
    af_outputs_kind outputs;
    /* Nonlinear score modifier (af_score_mod); none = off. A feature. */
    af_score_mod score_mod;
} af_case;

/* The smallest custom_mask P: floor(P 2^32) >= 1, so that a threshold of 0 still means
 * "no element mask" (model/mask_rule.h) and every consumer agrees that a smaller P is
 * not a mask that drops everything. */
#define AF_CUSTOM_MASK_MIN_P 0x1p-32

/* Errors carry the position of the problem and the field. */
typedef struct {
    char file[256];
    int line; /* 0 when the problem is not tied to one line */
    char field[64];
    char message[512];
} af_error;

/* Fill *c with the defaults of every field (a valid 1x1x1x16x16x64 fp16 case). */
void af_case_defaults(af_case *c);

/* Parse .case text. name is used in error messages. Returns 0 or -1 with *err set.
 * Validation (af_case_validate) is part of parsing. */
int af_case_parse(const char *text, const char *name, af_case *c, af_error *err);
int af_case_load(const char *path, af_case *c, af_error *err);

/* Check a case for impossible combinations; err->line is the line of the
 * offending field when known (lines[] from parsing), else 0. */
int af_case_validate(const af_case *c, af_error *err);

/* Canonical text: every field in a fixed order, defaults explicit.
 * Returns the number of bytes that the full text needs (like snprintf). */
size_t af_case_print(const af_case *c, char *buf, size_t cap);
int af_case_write(const af_case *c, FILE *f);
int af_case_save(const af_case *c, const char *path);

/* Derived quantities used everywhere. */
float af_case_scale(const af_case *c);      /* the fp32 scale the kernels get */
int af_case_len_q(const af_case *c, int b); /* actual length of sequence b */
int af_case_len_kv(const af_case *c, int b);
/* V's head count: heads_v, or heads_kv when heads_v is 0. Query head h reads V head
 * h / (heads_q / af_case_heads_v(c)). */
static inline int af_case_heads_v(const af_case *c) { return c->heads_v ? c->heads_v : c->heads_kv; }
bool af_case_equal(const af_case *a, const af_case *b);

const char *af_dtype_name(af_dtype d);
const char *af_out_dtype_name(af_out_dtype d);
const char *af_kv_dtype_name(af_kv_dtype d);
const char *af_layout_name(af_layout l);
const char *af_packing_name(af_packing p);
/* The layout K, V, dK, dV (af_case_layout_kv) and dO (af_case_layout_do) are laid out in. */
af_layout af_case_layout_kv(const af_case *c);
af_layout af_case_layout_do(const af_case *c);
const char *af_cp_comm_name(af_cp_comm c);
const char *af_data_kind_name(af_data_kind k);
const char *af_softmax_name(af_softmax_kind k);
const char *af_bias_shape_name(af_bias_shape b);
const char *af_alibi_name(af_alibi_kind a);
const char *af_alibi_slopes_name(af_alibi_slopes s);
const char *af_outputs_name(af_outputs_kind k);
const char *af_score_mod_name(af_score_mod m);
/* Any of the features (sinks, softcap, bias, ALiBi, log2 stats, dLSE, dropout, chunk,
 * documents, global keys) set. */
bool af_case_has_features(const af_case *c);
/* A short list of the features set ("softcap sinks bias ..."), "" when none. */
void af_case_features_text(const af_case *c, char *buf, size_t cap);
/* Any fp8_headroom binade set (not plain current scaling). */
bool af_case_has_fp8_headroom(const af_case *c);
/* Canonical mask text: none | causal | padding | padding_causal (alignment separate). */
const char *af_mask_text(const af_case *c);

/* Format "file:line: field: message" into buf. */
void af_error_format(const af_error *e, char *buf, size_t cap);

#endif
