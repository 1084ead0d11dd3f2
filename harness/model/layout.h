/* model/layout.h — where every logical element lives in the real buffers.
 *
 * A layout plan maps (tensor, b, h, s, d) to an element offset inside one of the
 * buffers below. Packed tensors share a buffer (qkv: Q, K, V in BUF_Q; kv: K and V
 * in BUF_K); the gradient buffers mirror the input buffers' packing. The head dim
 * is innermost with stride 1; stride_gap extra elements follow every (token, head)
 * vector, gap_h / gap_s / gap_b more are in each head / token / batch stride (layout.c).
 * Offsets are in elements of the buffer's element type.
 */
#ifndef ATTNFUZZ_LAYOUT_H
#define ATTNFUZZ_LAYOUT_H

#include <stdint.h>
#include "model/case.h"

typedef enum {
    AF_T_NONE = -1, /* no tensor: a finding about the whole run (crash, hang, resource) */
    AF_T_Q = 0,
    AF_T_K,
    AF_T_V,
    AF_T_O,
    AF_T_LSE,
    AF_T_DO,
    AF_T_DQ,
    AF_T_DK,
    AF_T_DV,
    AF_T_COUNT,
    /* Not laid out in the buffers and without a stats slot: the (heads_q) fp32 gradient
     * of learnable sink logits (af_tensors.dsink), named in findings (judge/compare_dsink.h). */
    AF_T_DSINK,
    /* Inputs that are not laid out in the buffers either, named by input_mutation
     * findings (judge/mutation.h) when a run changed them: */
    AF_T_PAGE_TABLE,  /* "page_table": paged KV's (batch, pages_per_seq) physical pages */
    AF_T_SEQ_OFFSETS, /* "seq_offsets": thd token starts (cu_seqlens), (batch + 1) */
    AF_T_SEQLENS,     /* "seqlens": actual lengths (seqused), (batch) per side */
    AF_T_SINK,        /* "sink": (heads_q) sink logits */
    AF_T_BIAS,        /* "bias": the additive bias */
    AF_T_ALIBI,       /* "alibi_slopes": (1 or batch, heads_q) */
    AF_T_DLSE,        /* "dlse": the incoming LSE gradient */
    AF_T_MX_SCALE,    /* "mx_scale": the mxfp8 E8M0 scales of Q, K or V */
    AF_T_DESCALE,     /* "descale": the fp8_e4m3 per-tensor scales */
    /* The score statistics of outputs = max_sumexp / max_logit (af_tensors.row_max ...),
     * fp32 outputs without a stats slot, like dsink (judge/compare_stats.h): */
    AF_T_ROW_MAX,    /* "max": (B, Hq, Sq) each row's max of its visible scores */
    AF_T_ROW_SUMEXP, /* "sum_exp": (B, Hq, Sq) sum over the row of exp(score - max) */
    AF_T_MAX_LOGIT,  /* "max_logit": (B, Hq) max of the visible scores of (b, h) */
    AF_T_END         /* one past the last name */
} af_tensor_id;

typedef enum {
    AF_BUF_Q = 0,
    AF_BUF_K,
    AF_BUF_V,
    AF_BUF_O,
    AF_BUF_LSE,
    AF_BUF_DO,
    AF_BUF_DQ,
    AF_BUF_DK,
    AF_BUF_DV,
    AF_BUF_COUNT
} af_buffer_id;

/* Element storage types (E5M2 last: the plugin ABI's numbers of the others stay). */
typedef enum { AF_ST_F16 = 0, AF_ST_BF16, AF_ST_E4M3, AF_ST_F32, AF_ST_E5M2 } af_storage;
/* One-byte fp8 storage (E4M3 or E5M2), per-tensor scaled. */
static inline bool af_storage_is_fp8(af_storage s) { return s == AF_ST_E4M3 || s == AF_ST_E5M2; }
/* Every fact of a storage type the stages use, one row per type (layout.c, the one
 * table): its bytes; its unit, one ulp at magnitude 1 (2^-mantissa bits); its largest
 * finite value; its smallest normal number and half the step of its subnormals (half an
 * ulp of the smallest subnormal); the bits all set in every Inf and NaN and in no finite
 * value (the exponent field; E4M3, with no Inf: its only NaN's S.1111.111 less the sign):
 *   fp16 2 B, 2^-10, 65504, 2^-14, 2^-25   bf16 2 B, 2^-7, 3.39e38, 2^-126, 2^-134
 *   E4M3 1 B, 2^-3, 448, 2^-6, 2^-10       E5M2 1 B, 2^-2, 57344, 2^-14, 2^-17
 *   fp32 4 B, 2^-23, 3.40e38, 2^-126, 2^-150 */
typedef struct {
    int bytes;
    double unit;
    double max_finite;
    double min_normal;
    double subnormal_half_step;
    uint32_t nonfinite_bits;
} af_storage_facts;
/* The row of s (fp32's for a value outside the enum: never NULL). */
const af_storage_facts *af_storage_facts_of(af_storage s);
/* The largest finite value of fp8 storage s: E4M3 448, E5M2 57344 (0 for others). */
static inline float af_storage_fp8_max(af_storage s) {
    return af_storage_is_fp8(s) ? (float)af_storage_facts_of(s)->max_finite : 0.0f;
}

typedef struct {
    af_buffer_id buffer;
    af_storage storage;
    int B, H, S, D;   /* logical shape (S = maximum length) */
    int64_t base;     /* element offset of (b=0, h=0, s=0, d=0) */
    int64_t stride_b; /* unused when ragged or paged */
    int64_t stride_h;
    int64_t stride_s; /* token stride (ragged: stride between packed tokens) */
    bool ragged;      /* thd: token = token_start[b] + s */
    bool paged;       /* paged KV: token s of sequence b lives in page
                                page_table[b][s / page_size], slot s % page_size
                                (any page_size >= 1, not only powers of two);
                                stride_b is then the page stride */
} af_tensor_view;

typedef struct {
    af_tensor_view view[AF_T_COUNT];
    af_storage buffer_storage[AF_BUF_COUNT];
    int64_t buffer_elems[AF_BUF_COUNT];      /* 0 = buffer unused (packed into another) */
    int64_t token_start_q[AF_MAX_BATCH + 1]; /* thd: first packed token of each sequence */
    int64_t token_start_kv[AF_MAX_BATCH + 1];
    int64_t total_tokens_q, total_tokens_kv; /* thd: rows in the packed buffers, gaps included */
    /* thd with page_size > 0 (the serving layout: FlashAttention varlen + block_table,
     * FlashInfer qo_indptr + paged KV, cuDNN ragged Q with paged K/V): Q, O, LSE (and
     * the query-side gradients) are ragged with token_start_q and thd_gap; K and V are
     * paged, not ragged. They have no packed tokens: token_start_kv stays all 0 and
     * total_tokens_kv 0, neither is passed to a backend (the plugin ABI's K/V token_start
     * is NULL, the worker's K/V descriptors carry no token_start) nor checked. A kernel
     * API that wants cu_seqlens_k derives it from seqlens_kv: its differences are the
     * key lengths, never addresses. The same with thd and layout_kv bshd / sbhd / bhsd:
     * K and V are padded (seqlen_kv rows per sequence, seqlens_kv of them valid). */
    int page_size; /* 0 = not paged */
    int pages_per_seq;
    int n_pages;
    int32_t page_table[AF_MAX_PAGES]; /* [b * pages_per_seq + p] -> physical page */
} af_layout_plan;

/* Build the plan of a validated case. Returns 0, or -1 with a reason (e.g. a paged
 * case with too many pages). */
int af_layout_plan_make(const af_case *c, af_layout_plan *p, char *why, size_t cap);
/* The plan's metadata and the case's lengths as the layout promises them (a backend that
 * trusts them checks them first: the metadata probe, judge/probes/metadata.c, hands
 * malformed ones to every backend): lengths within [0, max]; thd starts monotonic, each
 * sequence inside its span, the last start inside the buffer; paged: lengths within the
 * table's span, every entry a sequence uses a page. 0, or -1 with why ("malformed thd key
 * offsets at sequence 1"). */
int af_layout_metadata_check(const af_case *c, const af_layout_plan *p, char *why, size_t cap);

/* The heads of tensor t of the case: K, dK heads_kv; V, dV af_case_heads_v; the rest heads_q. */
static inline int af_tensor_heads(const af_case *c, af_tensor_id t) {
    return t == AF_T_K || t == AF_T_DK ? c->heads_kv : t == AF_T_V || t == AF_T_DV ? af_case_heads_v(c) : c->heads_q;
}

/* The key side: K, V and their gradients dK, dV have a row per key token (s_kv, the
 * key lengths, token_start_kv); every other tensor a row per query token. */
static inline bool af_tensor_is_kv(af_tensor_id t) {
    return t == AF_T_K || t == AF_T_V || t == AF_T_DK || t == AF_T_DV;
}

/* Rows of tensor t that hold valid tokens in sequence b: its actual key or query length. */
static inline int af_tensor_valid_rows(const af_case *c, af_tensor_id t, int b) {
    return af_tensor_is_kv(t) ? af_case_len_kv(c, b) : af_case_len_q(c, b);
}

/* Rows of tensor t (view v) that exist in its buffer for sequence b: all S of the view,
 * or for a ragged (thd) tensor only the valid ones (its tokens are packed). */
static inline int af_tensor_rows_in_buffer(const af_case *c, const af_tensor_view *v, af_tensor_id t, int b) {
    return v->ragged ? af_tensor_valid_rows(c, t, b) : v->S;
}

/* Element offset of logical (b, h, s, d) in the tensor's buffer. For LSE, d = 0.
 * s must be < the sequence's actual length for ragged tensors. Every layout keeps a
 * row's D elements contiguous: offset(b, h, s, d) = offset(b, h, s, 0) + d, which the
 * row-wise passes over the buffers rely on. */

int64_t af_layout_offset(const af_layout_plan *p, af_tensor_id t, int b, int h, int s, int d);

int af_storage_bytes(af_storage s);
/* The storage type of tensor t in a case of this dtype (LSE is always fp32). */
af_storage af_tensor_storage(af_dtype dtype, af_tensor_id t);
/* The storage of tensor t in case c: af_tensor_storage of its dtype, but O in fp16 / bf16
 * when out_dtype says so, and K, V in fp8 when kv_dtype says so. */
af_storage af_case_tensor_storage(const af_case *c, af_tensor_id t);
/* "Q", "K", ..., "dV", "dsink", "page_table", ... (the names above); "-" for AF_T_NONE */
const char *af_tensor_name(af_tensor_id t);
const char *af_buffer_name(af_buffer_id b);

#endif
