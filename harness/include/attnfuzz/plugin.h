/* attnfuzz/plugin.h — the plugin ABI: fuzz your own attention kernel without
 * rebuilding attnfuzz.
 *
 *   attnfuzz run corpora/seed/CASE.case --backend plugin:./my_kernel.so
 *
 * A plugin is a shared object that exports four functions with C linkage:
 *
 *   uint32_t attnfuzz_plugin_abi_version(void);        returns ATTNFUZZ_PLUGIN_ABI_VERSION
 *   const af_plugin_info *attnfuzz_plugin_info(void);  name, description, flags
 *   int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap);
 *   int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t,
 *                           char *why, size_t cap);
 *
 * This header is self-contained (stdint/stddef only) and is the whole contract: the
 * structs below use fixed-size plain C types and never attnfuzz's internal ones. The
 * loader refuses a plugin whose attnfuzz_plugin_abi_version() differs from the
 * ATTNFUZZ_PLUGIN_ABI_VERSION it was built with; any change to a struct or a
 * meaning below bumps the version.
 *
 * Logical tensor shapes (whatever the memory layout), as in model/case.h:
 *   Q, dQ   (batch, heads_q,  seqlen_q,  head_dim_qk)
 *   K, dK   (batch, heads_kv, seqlen_kv, head_dim_qk)
 *   V, dV   (batch, heads_v,  seqlen_kv, head_dim_v)   heads_v == heads_kv unless set
 *   O, dO   (batch, heads_q,  seqlen_q,  head_dim_v)
 *   LSE     (batch, heads_q,  seqlen_q)   fp32, natural log; -inf for a fully masked row
 * GQA/MQA: query head h reads K head h / (heads_q / heads_kv) and V head
 * h / (heads_q / heads_v).
 *
 * Mask semantics (the plugin implements them itself; see docs/plugins.md). For
 * sequence b with actual lengths len_q = seqlens_q[b], len_kv = seqlens_kv[b]:
 *   diag(i) = i (AF_PLUGIN_ALIGN_TOP_LEFT) or i + len_kv - len_q (BOTTOM_RIGHT)
 *   row i sees key j iff 0 <= j < len_kv and
 *     (mask causal)       j <= diag(i)
 *     (window_left  L>=0) j >= diag(i) - L     (L does not count the diagonal)
 *     (window_right R>=0) j <= diag(i) + R
 *     (attention_chunk N>=1, ABI 4, AF_PLUGIN_FEAT_CHUNK) floor(diag(i) / N) == floor(j / N)
 *                         (floor division: diag(i) < 0 is in chunk -1 or below)
 *     (n_documents >= 1, ABI 5, AF_PLUGIN_FEAT_DOCUMENTS) doc(diag(i)) == doc(j), doc(p)
 *                         = -1 for p < 0, else the number of document_ends <= p (the
 *                         keys past the last end are one more document)
 *   or (global_keys G >= 1, ABI 5, AF_PLUGIN_FEAT_GLOBAL) j < G, whatever the above say
 *                         (an existing row sees the first G keys of its sequence)
 *   A row that sees no key is fully masked: O = 0, LSE = -inf, no gradient.
 *
 * Features (ABI 2; oracle/feature_spec.h in the attnfuzz tree is the full text), with
 * r_ij = scale * q_i . k_j:
 *   softcap c:  t_ij = c tanh(r_ij / c);  bias:  + bias[b', h', i', j] (broadcast axes 0;
 *               i' = 0 when bias_q = 1, ABI 7);
 *   score_mod (ABI 8, never with softcap): t_ij = r_ij^2 (SQUARED), sin(cos(r_ij)) + tan(b)
 *               (TRIG), cos(r_ij) sin(r_ij) + tan(b) (TRIG2), b the sequence index; the
 *               backward's dS carries f'(r_ij): 2 r, -sin(r) cos(cos(r)), cos(2 r);
 *   ALiBi:      + -alibi_slopes[b', h] * |j - (i + len_kv - len_q)|  (whatever the alignment;
 *               b' = 0 unless alibi_b = batch, ABI 7), or with alibi_signed (ABI 7)
 *               + alibi_slopes[b', h] * (j - (i + len_kv - len_q));
 *   sinks:      exp(sink[h]) joins every row's softmax denominator (no value row);
 *   log2 stats: LSE is written as log2 of the denominator (natural LSE / ln 2);
 *   backward:   D_i = dO_i . O_i - g_i (g = dlse, times 1/ln 2 for log2 stats), dS carries
 *               the softcap factor 1 - tanh^2; learnable sinks also write
 *               dsink[h] = -sum_(b,i) exp(sink[h] - LSE_nat_i) D_i.
 *   dropout (ABI 3): element (b, h, i, j) of P (maximum lengths: n = ((b Hq + h) Sq + i)
 *               Skv + j) is dropped when word n % 4 of Philox4x32-10 with counter
 *               (dropout_offset + n / 4, 0, 0) (64-bit, low word first) and key
 *               dropout_seed (low word first) is below round(dropout_p 2^32); kept
 *               elements are scaled by 1 / (1 - dropout_p). LSE is the undropped row's.
 *               Backward: dP_ij = w_ij dO_i . v_j, dV_j = sum_i P_ij w_ij dO_i (w = 0 or
 *               1 / (1 - p)), D_i = dO_i . O_i with the dropped O.
 *   A plugin that does not implement a feature must DECLINE problems whose `features` has
 *   its bit: accepting and ignoring one is exactly the bug attnfuzz's feature probe finds.
 *
 * What run() must do:
 *   forward:  O = softmax(scale * Q K^T + mask) V and LSE, for every row i < len_q.
 *   backward (p->flags & AF_PLUGIN_BACKWARD): also dQ, dK, dV given dO, with O and
 *             LSE as the plugin just wrote them.
 *   Rows past a sequence's length (padded layouts) may be written (0 / -inf) or left.
 *   Nothing else may be written: the buffers carry guard margins and poisoned gaps
 *   (stride gaps, thd gaps) that attnfuzz checks after the run. Inputs (Q, K, V, dO
 *   buffers, gaps included, page table, token starts, mx scales and the problem's arrays)
 *   must come back bitwise unchanged: a change is an input_mutation finding.
 */
#ifndef ATTNFUZZ_PLUGIN_H
#define ATTNFUZZ_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of everything in this header. */
#define ATTNFUZZ_PLUGIN_ABI_VERSION 8u
/* 2: af_plugin_problem gained the features (sinks, softcap, bias, ALiBi, log2 stats,
 *    dLSE, dsink) after `packing`; a version-1 plugin cannot see them, so it is refused.
 * 3: af_plugin_problem gained dropout (p, Philox seed and offset) at its end; a
 *    version-2 plugin would run a dropout problem without dropout, so it is refused.
 * 4: af_plugin_problem gained attention_chunk (chunked local attention) at its end; a
 *    version-3 plugin would attend across chunks, so it is refused.
 * 5: af_plugin_problem gained the document mask (n_documents, document_ends) and
 *    global_keys at its end; a version-4 plugin would attend across documents and hide
 *    the global keys, so it is refused.
 * 6: af_plugin_problem gained heads_v (V's own head count, cuDNN's h_v) and the drops
 *    (block_mask, custom_mask) with their seed at its end; the fp8_e5m2 dtype
 *    (AF_PLUGIN_DTYPE_FP8_E5M2, tensors of AF_PLUGIN_STORAGE_E5M2); fp8 cases whose O is
 *    fp16 / bf16 (the case's out_dtype: O's storage says so, descale 1). A version-5
 *    plugin would read V with heads_kv heads, attend to dropped blocks and elements, read
 *    E5M2 bytes as E4M3 and write an fp8 O, so it is refused.
 * 7: af_plugin_problem gained, at its end, bias_q (a bias row broadcast over every query),
 *    alibi_b (slopes per (batch, head)), alibi_signed (ALiBi's signed distance), the score
 *    statistics outputs (AF_PLUGIN_FEAT_OUTPUTS: the rows' max and sum-exp, or max_logit)
 *    with their output pointers, kv_dtype (fp16 / bf16 problems whose K and V are stored in
 *    fp8: an fp8 KV cache; K's and V's storage and descale say how), descale_per_head and
 *    the q/k/v_descale arrays (per-(batch, kv head) fp8 descales), page_layout and page_kv
 *    (HND and joint K/V pages), dropout_rng with the dropout_keep mask a kernel with its own
 *    RNG may return. A version-6 plugin would
 *    read a one-row bias with a query stride, per-batch slopes as per-head ones, a signed
 *    distance as |distance|, fp8 K, V bytes as fp16 / bf16 and per-head descales as 1, and
 *    leave the statistics unwritten, so it is refused. ABI 7 also carries dropout_rng
 *    (a kernel's own dropout stream) with the dropout_keep mask it may return.
 * 8: af_plugin_problem gained score_mod (AF_PLUGIN_FEAT_SCORE_MOD: torch Flex's named
 *    nonlinear score modifiers squared, trig, trig2) at its end; a version-7 plugin could
 *    not see it and would run plain scores, so it is refused. */

/* Mark the four entry points exported even under -fvisibility=hidden. */
#if defined(__GNUC__)
#define AF_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define AF_PLUGIN_EXPORT
#endif

/* ---- status codes of supports() and run() ---------------------------------------- */
#define AF_PLUGIN_OK       0 /* supported / ran                                     */
#define AF_PLUGIN_DECLINE  1 /* cannot serve this problem; why = one-line reason    */
#define AF_PLUGIN_ERROR    2 /* failed while running (API error, bad status)        */
#define AF_PLUGIN_CRASH    3 /* state is suspect (sticky device error); stop using  */
#define AF_PLUGIN_RESOURCE 4 /* out of memory, workspace over budget                */

/* ---- info ------------------------------------------------------------------------ */
#define AF_PLUGIN_DETERMINISTIC (1u << 0) /* the same inputs give the same bits      */
#define AF_PLUGIN_WANTS_DEVICE  (1u << 1) /* wants GPU (CUDA device) buffers         */
#define AF_PLUGIN_PLANTED       (1u << 2) /* carries a deliberate bug (self-test)    */
/* promises to refuse malformed metadata (thd token starts, page table, lengths) with
 * AF_PLUGIN_ERROR or to give the oracle's answer; the metadata probe holds a plugin that
 * sets it to the promise and leaves the others alone (a kernel that documents malformed
 * metadata as undefined behaviour, as most do for speed, makes no such promise) */
#define AF_PLUGIN_CHECKS_METADATA (1u << 3)

typedef struct {
    uint32_t abi_version;    /* ATTNFUZZ_PLUGIN_ABI_VERSION                          */
    uint32_t flags;          /* AF_PLUGIN_DETERMINISTIC | ...                        */
    const char *name;        /* backend name when found on the plugin path, e.g.
                                 "mykernel" or "planted:window_off_by_one"; no spaces */
    const char *description; /* one line                                             */
} af_plugin_info;

/* ---- the problem ----------------------------------------------------------------- */
#define AF_PLUGIN_DTYPE_FP16     0
#define AF_PLUGIN_DTYPE_BF16     1
#define AF_PLUGIN_DTYPE_FP8_E4M3 2 /* per-tensor scaling: logical = stored * descale  */
#define AF_PLUGIN_DTYPE_MXFP8    3 /* E4M3 + one E8M0 scale per 32 (see mx_scale)     */
#define AF_PLUGIN_DTYPE_FP8_E5M2 4 /* as FP8_E4M3, every tensor E5M2 (max 57344)      */

#define AF_PLUGIN_MASK_NONE          0
#define AF_PLUGIN_MASK_CAUSAL        1
#define AF_PLUGIN_ALIGN_TOP_LEFT     0
#define AF_PLUGIN_ALIGN_BOTTOM_RIGHT 1

/* problem flags */
#define AF_PLUGIN_BACKWARD (1u << 0) /* compute dQ, dK, dV too                        */
#define AF_PLUGIN_PADDED   (1u << 1) /* per-sequence lengths differ from the maxima    */
#define AF_PLUGIN_RAGGED   (1u << 2) /* thd: sequences packed, token_start arrays set  */
#define AF_PLUGIN_PAGED    (1u << 3) /* K and V live in pages (page_table set)         */

/* feature bits (af_plugin_problem.features, ABI 2) */
#define AF_PLUGIN_FEAT_SOFTCAP      (1u << 0)  /* softcap > 0                                 */
#define AF_PLUGIN_FEAT_SINK         (1u << 1)  /* sink logits (off_by_one: all 0, or learnable) */
#define AF_PLUGIN_FEAT_BIAS         (1u << 2)  /* additive bias tensor                         */
#define AF_PLUGIN_FEAT_ALIBI        (1u << 3)  /* ALiBi slopes                                 */
#define AF_PLUGIN_FEAT_LSE_BASE2    (1u << 4)  /* write LSE in base 2                          */
#define AF_PLUGIN_FEAT_DLSE         (1u << 5)  /* backward takes dlse                          */
#define AF_PLUGIN_FEAT_DSINK        (1u << 6)  /* learnable sinks: write dsink                  */
#define AF_PLUGIN_FEAT_DROPOUT      (1u << 7)  /* dropout on P (ABI 3)                          */
#define AF_PLUGIN_FEAT_CHUNK        (1u << 8)  /* attention_chunk > 0 (ABI 4)                   */
#define AF_PLUGIN_FEAT_DOCUMENTS    (1u << 9)  /* a document mask (ABI 5)                       */
#define AF_PLUGIN_FEAT_GLOBAL       (1u << 10) /* global_keys > 0 (ABI 5)                      */
#define AF_PLUGIN_FEAT_BLOCK_MASK   (1u << 11) /* block_mask (ABI 6)                         */
#define AF_PLUGIN_FEAT_CUSTOM_MASK  (1u << 12) /* custom_mask (ABI 6)                        */
#define AF_PLUGIN_FEAT_BIAS_ROW     (1u << 13) /* bias_q = 1: one row for every query (ABI 7) */
#define AF_PLUGIN_FEAT_ALIBI_SIGNED (1u << 14) /* ALiBi's signed distance (ABI 7)           */
#define AF_PLUGIN_FEAT_ALIBI_BATCH  (1u << 15) /* slopes per (batch, head) (ABI 7)           */
#define AF_PLUGIN_FEAT_OUTPUTS      (1u << 16) /* score statistics to write (ABI 7)          */
#define AF_PLUGIN_FEAT_SCORE_MOD    (1u << 17) /* score_mod != none (ABI 8)                  */

/* af_plugin_problem.outputs (ABI 7) */
#define AF_PLUGIN_OUTPUTS_LSE        0 /* O and LSE only                                 */
#define AF_PLUGIN_OUTPUTS_MAX_SUMEXP 1 /* also row_max and row_sumexp (cuDNN Max, Sum_exp) */
#define AF_PLUGIN_OUTPUTS_MAX_LOGIT  2 /* also max_logit (TransformerEngine's, QK-clip)   */

#define AF_PLUGIN_SOFTMAX_VANILLA    0
#define AF_PLUGIN_SOFTMAX_OFF_BY_ONE 1 /* TransformerEngine's off-by-one: sink logit 0 */
#define AF_PLUGIN_SOFTMAX_LEARNABLE  2 /* one learnable logit per query head            */

typedef struct {
    int32_t dtype; /* AF_PLUGIN_DTYPE_*                               */
    int32_t batch, heads_q, heads_kv;
    int32_t seqlen_q, seqlen_kv; /* maxima                                          */
    int32_t head_dim_qk, head_dim_v;
    const int32_t *seqlens_q;  /* (batch) actual lengths, host memory, always set */
    const int32_t *seqlens_kv; /* (batch)                                         */
    int32_t mask;              /* AF_PLUGIN_MASK_*                                */
    int32_t align;             /* AF_PLUGIN_ALIGN_*                               */
    int32_t window_left;       /* -1 = unbounded                                  */
    int32_t window_right;      /* -1 = unbounded                                  */
    float scale;               /* multiplies Q K^T; fp32 as the kernel gets it    */
    uint32_t flags;            /* AF_PLUGIN_BACKWARD | ...                        */
    const char *layout;        /* "bshd" | "sbhd" | "bhsd" | "thd" | "shbd" | "hbsd" | "hsbd" (informative:
                                       the strides below are the truth); Q's: K, V, dK,
                                       dV (layout_kv) and dO (layout_do) may have their
                                       own, only their strides say so (no ABI step)    */
    const char *packing;       /* "separate" | "kv" | "qkv" (blocked: K's heads,
                                       then V's) | "kv_h" | "qkv_h" (per head: K's then
                                       V's vector of each head, in the strides)        */
    /* ABI 2: features. Arrays are dense fp32 in host memory (also for device plugins). */
    uint32_t features;         /* AF_PLUGIN_FEAT_* set in this problem           */
    int32_t softmax;           /* AF_PLUGIN_SOFTMAX_*                            */
    float softcap;             /* 0 = none                                       */
    const float *sink;         /* (heads_q) sink logits; NULL without sinks       */
    const float *bias;         /* (bias_b, bias_h, bias_q, seqlen_kv); NULL       */
    int32_t bias_b, bias_h;    /* 1 or batch, 1 or heads_q (0 without bias)       */
    const float *alibi_slopes; /* (alibi_b, heads_q); NULL without ALiBi          */
    const float *dlse;         /* (batch, heads_q, seqlen_q) incoming gradient of
                                   the LSE output (in its base); NULL without      */
    float *dsink;              /* (heads_q) output, learnable sinks + backward;
                                   NULL otherwise (and in supports())              */
    /* ABI 3: dropout (AF_PLUGIN_FEAT_DROPOUT); 0, 0, 0 without */
    double dropout_p;        /* drop probability in [0, 1)                     */
    uint64_t dropout_seed;   /* Philox key                                     */
    uint64_t dropout_offset; /* Philox counter offset, in 128-bit blocks        */
    /* ABI 4: chunked local attention (AF_PLUGIN_FEAT_CHUNK; the mask above); 0 without */
    int32_t attention_chunk;
    /* ABI 5: the document mask (AF_PLUGIN_FEAT_DOCUMENTS) and the global keys
     * (AF_PLUGIN_FEAT_GLOBAL); 0 without */
    int32_t n_documents;       /* 0 .. 16                                         */
    int32_t document_ends[16]; /* exclusive key positions, ascending; the same in
                                  every sequence (cut at its len_kv)              */
    int32_t global_keys;       /* G: keys 0 .. G-1 seen by every row              */
    /* ABI 6: V's and dV's heads (always set; == heads_kv unless the case sets heads_v).
     * A plugin that does not index V by it must decline heads_v != heads_kv. */
    int32_t heads_v;
    /* ABI 6: drops ANDed with the mask above, global keys included (AF_PLUGIN_FEAT_BLOCK_MASK,
     * AF_PLUGIN_FEAT_CUSTOM_MASK; 0 without). With h(t, x, y) the top 32 bits of
     * splitmix64(mask_seed + t 0x9E3779B97F4A7C15 + x 0xD1B54A32D192ED03 + y 0xABC98388FB8FAC03)
     * (mod 2^64) and T(P) = floor(P 2^32) (2^32 for P = 1): block_mask keeps (i, j) iff
     * h(1, i / block_mask_q, j / block_mask_k) < T(block_mask_p); custom_mask keeps
     * (b, i, j) iff h(2, b 2^32 + i, j) < T(custom_mask_p). A row left with no key is
     * fully masked (O = 0, LSE = -inf). */
    uint64_t mask_seed;
    int32_t block_mask_q, block_mask_k; /* query / key block sizes                    */
    double block_mask_p;                /* keep probability of a block, (0, 1]        */
    double custom_mask_p;               /* keep probability of an element, (0, 1]     */
    /* ABI 7: the bias's query extent (seqlen_q, or 1 for one row per (b, h) seen by every
     * query, AF_PLUGIN_FEAT_BIAS_ROW; 0 without bias); the slope table's batch extent (1,
     * or batch with AF_PLUGIN_FEAT_ALIBI_BATCH; 0 without ALiBi); alibi_signed = 1 with
     * AF_PLUGIN_FEAT_ALIBI_SIGNED (the formula above). */
    int32_t bias_q;
    int32_t alibi_b;
    int32_t alibi_signed;
    /* ABI 7: the score statistics the forward writes beside O and LSE (AF_PLUGIN_FEAT_OUTPUTS
     * set when outputs != AF_PLUGIN_OUTPUTS_LSE). Dense fp32 in host memory (also for
     * device plugins), poisoned before the run, NULL when not asked (and in supports()).
     * With s_ij the score after softcap, bias and ALiBi (the sink's logit is not a score)
     * over the keys row i sees: row_max[b, h, i] = M_i = max_j s_ij, row_sumexp[b, h, i] =
     * sum_j exp(s_ij - M_i) (-inf and 0 for a row that sees no key); max_logit[b, h] =
     * max over the rows i < len_q of M_i (-inf when none sees a key). */
    int32_t outputs;   /* AF_PLUGIN_OUTPUTS_*                               */
    float *row_max;    /* (batch, heads_q, seqlen_q) outputs = MAX_SUMEXP   */
    float *row_sumexp; /* (batch, heads_q, seqlen_q)                         */
    float *max_logit;  /* (batch, heads_q)          outputs = MAX_LOGIT     */
    /* ABI 7: an fp8 KV cache under fp16 / bf16 queries (forward only): K and V stored in
     * fp8 (t[K].storage, t[V].storage: AF_PLUGIN_STORAGE_E4M3 or _E5M2) with one descale each
     * (t[K].descale, t[V].descale, powers of two: logical = stored * descale; FlashInfer's
     * k_scale / v_scale); Q, O and everything else in the dtype. AF_PLUGIN_KV_SAME otherwise. */
    int32_t kv_dtype;
    /* ABI 7: per-(batch, kv head) descales of fp8_e4m3 / fp8_e5m2 Q, K, V (the case's
     * descale = head; FlashAttention 3's q_descale, k_descale, v_descale of shape (batch,
     * heads_kv); forward only, heads_v == heads_kv): descale_per_head is 1 and logical Q of
     * query head h in sequence b = stored * q_descale[b * heads_kv + h / (heads_q /
     * heads_kv)], K and V of kv head g = stored * k_descale / v_descale[b * heads_kv + g];
     * t[Q/K/V].descale are then 1. Host memory, set in run() only (NULL in supports()),
     * const; 0 and NULL without. */
    int32_t descale_per_head;
    const float *q_descale, *k_descale, *v_descale; /* (batch, heads_kv) each          */
    /* ABI 7: the paged K/V's form (paged problems; 0 otherwise). The views already say it
     * (t[K], t[V] strides and data): page_layout AF_PLUGIN_PAGE_HND is FlashInfer's "HND"
     * page [heads, page_size, D] (stride_s one vector, stride_h page_size vectors), NHD
     * [page_size, heads, D]; page_kv AF_PLUGIN_PAGE_JOINT puts K's and V's blocks of a page
     * in one buffer (FlashInfer's [pages, 2, ...] cache): stride_b spans both blocks and
     * t[V].data is t[K].data + one K block. A kernel that takes only one form declines the
     * other. */
    int32_t page_layout;
    int32_t page_kv;
    /* ABI 7: whose RNG drops P (dropout_p > 0): AF_PLUGIN_DROPOUT_RNG_ATTNFUZZ = the Philox
     * mapping above (the kernel must reproduce it), AF_PLUGIN_DROPOUT_RNG_KERNEL = the
     * kernel's own RNG, seeded from dropout_seed and dropout_offset as it likes. Then it
     * may return the keep mask it applied in dropout_keep: (batch, heads_q, seqlen_q,
     * seqlen_kv) bytes, 1 = kept, 0 = dropped, host memory (also for device plugins), as
     * FlashAttention's returned dropout mask or cuDNN's rng_dump; only the elements rows
     * see are read. It sets *dropout_keep_returned to 1 when it filled the mask, and the
     * harness judges O and the gradients given that mask (and the mask's keep rates);
     * left 0, only statistical checks judge the dropout. NULL in supports(). */
    int32_t dropout_rng;
    uint8_t *dropout_keep;
    int32_t *dropout_keep_returned;
    /* ABI 8: a nonlinear score modifier by name (AF_PLUGIN_SCORE_MOD_*, the formulas above;
     * AF_PLUGIN_FEAT_SCORE_MOD set when not NONE). A plugin that does not compute it must
     * decline the feature bit. */
    int32_t score_mod;
} af_plugin_problem;

#define AF_PLUGIN_PAGE_NHD   0 /* [page_size, heads, D] inside a page (ABI 7)          */
#define AF_PLUGIN_PAGE_HND   1 /* [heads, page_size, D] inside a page (ABI 7)          */
#define AF_PLUGIN_PAGE_SPLIT 0 /* K and V pages in separate buffers (ABI 7)            */
#define AF_PLUGIN_PAGE_JOINT 1 /* page p: K's block then V's, one buffer (ABI 7)       */

#define AF_PLUGIN_DROPOUT_RNG_ATTNFUZZ 0
#define AF_PLUGIN_DROPOUT_RNG_KERNEL   1

/* af_plugin_problem.score_mod (ABI 8; the formulas above) */
#define AF_PLUGIN_SCORE_MOD_NONE    0
#define AF_PLUGIN_SCORE_MOD_SQUARED 1
#define AF_PLUGIN_SCORE_MOD_TRIG    2
#define AF_PLUGIN_SCORE_MOD_TRIG2   3

#define AF_PLUGIN_KV_SAME     0 /* K, V in the dtype                                   */
#define AF_PLUGIN_KV_FP8_E4M3 1 /* K, V stored E4M3 with descales (ABI 7)              */
#define AF_PLUGIN_KV_FP8_E5M2 2 /* K, V stored E5M2 with descales (ABI 7)              */

/* ---- the tensors ----------------------------------------------------------------- */
#define AF_PLUGIN_STORAGE_F16  0
#define AF_PLUGIN_STORAGE_BF16 1
#define AF_PLUGIN_STORAGE_E4M3 2 /* OCP FP8 E4M3FN                                   */
#define AF_PLUGIN_STORAGE_F32  3
#define AF_PLUGIN_STORAGE_E5M2 4 /* OCP FP8 E5M2 (Inf and NaN; max finite 57344)     */

/* Index into af_plugin_tensors.t */
#define AF_PLUGIN_Q       0
#define AF_PLUGIN_K       1
#define AF_PLUGIN_V       2
#define AF_PLUGIN_O       3
#define AF_PLUGIN_LSE     4
#define AF_PLUGIN_DO      5
#define AF_PLUGIN_DQ      6
#define AF_PLUGIN_DK      7
#define AF_PLUGIN_DV      8
#define AF_PLUGIN_TENSORS 9

/* Where logical element (b, h, s, d) of a tensor lives, in elements from data:
 *   plain:   b * stride_b + s * stride_s + h * stride_h + d
 *   ragged:  (token_start[b] + s) * stride_s + h * stride_h + d          (thd)
 *   paged:   page_table[b * pages_per_seq + s / page_size] * stride_b
 *              + (s % page_size) * stride_s + h * stride_h + d           (K, V)
 * LSE has D = 1 (d = 0). Pointers (data, buffer, token_start, page_table, mx_scale)
 * are host memory, or device memory when the plugin declared AF_PLUGIN_WANTS_DEVICE.
 * Packed tensors (kv, qkv, kv_h, qkv_h packing) share one buffer: e.g. K and V
 * interleaved; per head (kv_h) V's data is K's + one vector and stride_h two vectors.
 * With thd, K and V may be padded (layout_kv: no token_start, plain rule) under ragged Q. */
typedef struct {
    void *data;           /* element (0,0,0,0); NULL when absent (dO, dQ, dK,
                                   dV of a forward-only problem)                     */
    void *buffer;         /* start of the buffer the tensor lives in           */
    int64_t buffer_elems; /* the buffer holds [buffer, buffer + buffer_elems)  */
    int32_t storage;      /* AF_PLUGIN_STORAGE_*                               */
    int32_t B, H, S, D;   /* logical shape, S = maximum length                 */
    int64_t stride_b;     /* elements; unused when ragged; page stride if paged */
    int64_t stride_h;
    int64_t stride_s;           /* token stride                                      */
    const int64_t *token_start; /* ragged: (B + 1) first packed token of each sequence
                                   (gaps between sequences allowed); else NULL       */
    const int32_t *page_table;  /* paged: (B, pages_per_seq) physical pages; else NULL */
    int32_t page_size;          /* paged: tokens per page, any size >= 1 (not only
                                   powers of two: 5, 12, 48 too; use / and %, never
                                   shifts or masks); else 0                          */
    int32_t pages_per_seq;      /* paged: B * pages_per_seq <= 65536                 */
    float descale;              /* fp8_e4m3, fp8_e5m2: logical = stored * descale;
                                   else 1. (fp8_e5m2: the same with E5M2 and 57344.)
                                   Inputs Q, K, V (and dO): read as stored * descale.
                                   O of fp8_e4m3 is an E4M3 output (storage says so):
                                   write e4m3(O / descale), descale a power of two
                                   chosen so that |O| <= max |V| fits (<= 448).
                                   Backward: dO is E4M3 (read as above) and dQ, dK,
                                   dV are E4M3 outputs: write e4m3(dX / descale)
                                   (powers of two from the exact gradients, one
                                   binade of headroom; docs/fp8.md)               */
    /* mxfp8: one E8M0 byte per 32 elements along the contraction axis,
     *   logical = stored * 2^(byte - 127), dense arrays:
     *   Q, K: (B, H, S, ceil(D / 32))   blocks along d
     *   V:    (B, H, ceil(S / 32), D)   blocks along s
     * NULL for other tensors and dtypes. */
    const uint8_t *mx_scale;
} af_plugin_tensor;

typedef struct {
    af_plugin_tensor t[AF_PLUGIN_TENSORS];
} af_plugin_tensors;

/* ---- the entry points (what a plugin defines) ------------------------------------ */
typedef uint32_t (*af_plugin_abi_version_fn)(void);
typedef const af_plugin_info *(*af_plugin_info_fn)(void);
/* AF_PLUGIN_OK, or AF_PLUGIN_DECLINE with a one-line reason in why (cap bytes). */
typedef int (*af_plugin_supports_fn)(const af_plugin_problem *p, char *why, size_t cap);
/* Runs forward (and backward); returns an AF_PLUGIN_* status, why on failure. */
typedef int (*af_plugin_run_fn)(const af_plugin_problem *p, const af_plugin_tensors *t, char *why, size_t cap);

/* ---- optional: an instance handle ------------------------------------------------- *
 * Kernel libraries keep compiled kernels and plans in a handle. A plugin that does so
 * exports all three of these (a plugin exporting only some is used without them):
 *   void *attnfuzz_plugin_create(char *why, size_t cap);   NULL with why: cannot start
 *   void attnfuzz_plugin_destroy(void *instance);
 *   int attnfuzz_plugin_run_instance(void *instance, const af_plugin_problem *p,
 *                                    const af_plugin_tensors *t, char *why, size_t cap);
 * Then each attnfuzz backend over the plugin creates its own instance before its first
 * call, runs through run_instance, and destroys it with the backend; a fresh backend (the
 * history probe: a case run after another must give what it gives first) gets a fresh
 * instance. attnfuzz_plugin_run stays required. These symbols are optional, so adding
 * them changes no meaning above and the ABI version stays. */
typedef void *(*af_plugin_create_fn)(char *why, size_t cap);
typedef void (*af_plugin_destroy_fn)(void *instance);
typedef int (*af_plugin_run_instance_fn)(void *instance, const af_plugin_problem *p, const af_plugin_tensors *t,
                                         char *why, size_t cap);

#define AF_PLUGIN_SYM_CREATE       "attnfuzz_plugin_create"
#define AF_PLUGIN_SYM_DESTROY      "attnfuzz_plugin_destroy"
#define AF_PLUGIN_SYM_RUN_INSTANCE "attnfuzz_plugin_run_instance"

#define AF_PLUGIN_SYM_ABI_VERSION "attnfuzz_plugin_abi_version"
#define AF_PLUGIN_SYM_INFO        "attnfuzz_plugin_info"
#define AF_PLUGIN_SYM_SUPPORTS    "attnfuzz_plugin_supports"
#define AF_PLUGIN_SYM_RUN         "attnfuzz_plugin_run"

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void);
AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void);
AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap);
AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
