/* cudnn_sdpa.h — SDPA forward/backward as cuDNN backend graphs (composite lowering).
 *
 * The graphs follow what cudnn-frontend emits for cuDNN 9.14-9.19 (see
 * shared/research/cudnn-backend-sdpa.md): Q x K^T -> scale -> [softcap -> bias -> ALiBi:
 * cudnn_graph_feat.c] -> padding mask -> diagonal band (causal / bottom-right / sliding
 * window) -> softmax [with a sink] and Stats (natural-log LSE) -> [dropout: P x 1/(1-p)
 * x mask] -> P x V; the backward is
 * the composite bwd graph with softmax_sum and, for the nondeterministic variant, a dQ
 * fp32 accumulator in scratch memory.
 */
#ifndef ATTNFUZZ_CUDNN_SDPA_H
#define ATTNFUZZ_CUDNN_SDPA_H

#ifdef ATTNFUZZ_HAVE_CUDA

#include "model/case.h"
#include "model/layout.h"
#include "backends/cudnn/cudnn_graph.h"

/* Everything the graph builders need, derived from a case and its layout plan.
 * Strides are [b, h, s, d] in elements of the tensor's buffer. */
typedef struct {
    cudnnDataType_t io;     /* CUDNN_DATA_HALF, _BFLOAT16, _FP8_E4M3 or _FP8_E5M2 */
    cudnnDataType_t o_type; /* O's: io, or HALF / BFLOAT16 for fp8 with out_dtype (scale_o 1) */
    bool fp8;               /* fp8_e4m3 graphs (cudnn-frontend sdpa_fp8 and
                                           sdpa_fp8_bwd): device scales, E4M3 P, O, dO, dS,
                                           dQ, dK, dV, amax outputs */
    int64_t b, hq, hk, sq, skv, dqk, dv;
    int64_t str[AF_T_COUNT][4];     /* per tensor id: [b,h,s,d] strides */
    int64_t base_align[AF_T_COUNT]; /* per tensor id: the largest power of two <= 16 dividing
                                       the byte offset of its (0,0,0,0) in the device buffer */
    bool padding;                   /* seq_len tensors + padding mask */
    bool workaround_padding;        /* padding added for cuDNN <= 9.15.0 bwd (FE does it) */
    bool ragged;                    /* thd: ragged offset tensors (Q, O, Stats, dO, dQ) */
    bool ragged_kv;                 /* ... and K, V, dK, dV: thd without pages or layout_kv
                                   (ragged Q over padded K/V: the offsets on Q's side only) */
    bool kv_offsets_padded;         /* ragged Q over padded K/V with K/V offsets too, each
                                   sequence's start in the padded buffer (ragged_kv set;
                                   ATTNFUZZ_CUDNN_KV_OFFSETS=padded) */
    bool paged;                     /* K/V through a page table (forward only) */
    int64_t n_pages, page_size, pages_per_seq;
    bool has_right; /* right bound: keep j <= diag + right */
    int right;
    bool has_left;  /* cuDNN left bound: keep j > diag - left_cudnn */
    int left_cudnn; /* = window_left + 1 (mask_spec.h convention) */
    bool bottom_right;
    /* the score scale and dropout's 1 / (1 - p) are not part of the description: the graph
     * takes them by value with each run (CG_SLOT_ATTN_SCALE, CG_SLOT_DROPOUT_SCALE;
     * af_sdpa_run_scalars), so one graph serves every scale */
    /* features (oracle/feature_spec.h), fp16/bf16 composite graphs only */
    float softcap;          /* 0 = none: t = c * tanh(r / c) */
    bool softcap_exp;       /* tanh from EXP nodes (ATTNFUZZ_CUDNN_SOFTCAP=exp), not TANH_FWD/BWD */
    int64_t bias_b, bias_h; /* bias extents (1 = broadcast); 0, 0 = no bias */
    int64_t bias_q;         /* bias query extent: sq, or 1 for a row seen by every query */
    bool bias_row_stride0;  /* bias_q 1 declared as sq rows at stride 0 (ATTNFUZZ_CUDNN_BIAS_ROW=stride0) */
    bool alibi;             /* -slope_h * |j - (i + len_kv - len_q)| */
    bool alibi_signed;      /* slope_h * (j - (i + len_kv - len_q)) in place of the above */
    int64_t alibi_b;        /* slope table [alibi_b, hq]: 1, or b for per-(batch, head) slopes */
    bool sink;              /* sink logit per head in the softmax denominator */
    bool dsink;             /* backward writes the learnable sinks' gradient */
    /* dropout (model/dropout.h): the case's keep mask M enters as a real tensor in the io
     * dtype [b, hq, sq, skv] (CG_SLOT_DROPOUT_MASK, 1 kept, 0 dropped; cudnn.c builds it),
     * the by-value FLOAT scalar 1 / (1 - p); cuDNN's own RNG node is not used (its
     * words-to-elements mapping is cuDNN's, the oracle could not regenerate it) */
    bool dropout;
} af_sdpa_desc;

/* The by-value scalars of a run of case c: the score scale and dropout's 1 / (1 - p), as
 * the cpu reference rounds it (1 without dropout). */
void af_sdpa_run_scalars(const af_case *c, float *attn_scale, float *dropout_scale);

/* Fill d from the case. Returns 0, or -1 with why when the cudnn backend does not
 * build such a graph (the reason is the backend's, not cuDNN's). */
int af_sdpa_desc_make(const af_case *c, const af_layout_plan *p, size_t cudnn_version, af_sdpa_desc *d, char *why,
                      size_t cap);

/* cudnn-frontend's rule for the SDPA operands it declares 16-byte aligned (1.32.0,
 * node/sdpa_support_surface.h): Q, K, V, O and, with backward, dO, dQ, dK, dV must keep 16
 * bytes in their pointer's offset and in every stride of a dimension of extent > 1 and
 * stride != 1. Returns 0, or -1 with why naming the first operand that breaks it
 * (ATTNFUZZ_CUDNN_ALIGN=frontend declines such cases as the frontend refuses them). */
int af_sdpa_frontend_alignment(const af_sdpa_desc *d, bool backward, char *why, size_t cap);

/* Build and finalize the operation graphs (errors in g->err). */
void af_sdpa_build_fwd(af_cg *g, const af_sdpa_desc *d);         /* composite (fp8 too) */
void af_sdpa_build_fwd_unified(af_cg *g, const af_sdpa_desc *d); /* one SDPA_FWD op */
void af_sdpa_build_bwd(af_cg *g, const af_sdpa_desc *d, bool deterministic);
void af_sdpa_build_bwd_fp8(af_cg *g, const af_sdpa_desc *d); /* sdpa_fp8_bwd lowering */

/* Score modifiers shared by forward and backward: return the masked score tensor. */
cg_t af_sdpa_padding_mask(af_cg *g, const af_sdpa_desc *d, cg_t score, cg_t seq_q, cg_t seq_kv);
cg_t af_sdpa_band_mask(af_cg *g, const af_sdpa_desc *d, cg_t score, cg_t seq_q, cg_t seq_kv);
/* The score features between the scale and the masks, in feature_spec.h's order: softcap
 * (c * tanh(r / c)), bias, ALiBi. *r_over_c gets the tensor r / c when softcap is on
 * (the backward's TANH_BWD reads it), else NULL. cudnn_graph_feat.c. */
cg_t af_sdpa_score_features(af_cg *g, const af_sdpa_desc *d, cg_t score, cg_t seq_q, cg_t seq_kv, cg_t *r_over_c);
/* Backward: dR = dS * (1 - tanh^2(r / c)) from the recomputed r / c (identity without
 * softcap), as cudnn-frontend's Softcap::backward (MUL c, TANH_BWD, DIV c); with
 * softcap_exp from the EXP form's th: dS - dS th^2. */
cg_t af_sdpa_softcap_bwd(af_cg *g, const af_sdpa_desc *d, cg_t ds, cg_t r_over_c);
/* The sink logits, a real FLOAT [1,hq,1,1] tensor (CG_SLOT_SINK). */
cg_t af_sdpa_sink_tensor(af_cg *g, const af_sdpa_desc *d);
/* Backward: dsink [1,hq,1,1] (CG_SLOT_DSINK) from Stats and rowsum(dO * O), as FE. */
void af_sdpa_dsink(af_cg *g, const af_sdpa_desc *d, cg_t stats, cg_t softmax_rowsum);
/* Dropout of P (identity without dropout): P * 1 / (1 - p) (by value), then * M (the
 * real mask tensor), into a score-shaped tensor of dtype out_dt; cudnn_graph_feat.c. */
cg_t af_sdpa_dropout_fwd(af_cg *g, const af_sdpa_desc *d, cg_t p, cudnnDataType_t out_dt);
/* The keep mask M, a real io-dtype [b,hq,sq,skv] tensor (CG_SLOT_DROPOUT_MASK). */
cg_t af_sdpa_dropout_mask(af_cg *g, const af_sdpa_desc *d);
/* Do any of the features above apply (dropout included)? */
bool af_sdpa_has_features(const af_sdpa_desc *d);
/* S^T view [b,hq,skv,sq] of a packed S [b,hq,sq,skv], in dtype dt (backward graphs). */
cg_t af_sdpa_scores_t(af_cg *g, const af_sdpa_desc *d, cudnnDataType_t dt);

/* Can the unified SDPA_FWD op express this case at all (no mask, no window)? */
bool af_sdpa_unified_applies(const af_sdpa_desc *d);

#endif /* ATTNFUZZ_HAVE_CUDA */
#endif
