/* planted_common.c — the planted-bug plugins: one correct attention with ONE bug
 * switched on at build time (-DPLANTED_BUG=PLANTED_<BUG>), each built as its own .so
 * through the public plugin ABI (attnfuzz/plugin.h) and named planted:<bug>.
 *
 * One file (about 650 lines) on purpose: each bug is a BUG(x) switch inside the one
 * attention it corrupts, so the correct code and every deviation from it read side by
 * side; split into files, a bug's #if would sit apart from the line it changes.
 *
 * attnfuzz must catch every one of them; they are its self-test. With the bug off
 * (PLANTED_NONE, the plugin "planted:none") the code computes what the cpu reference
 * computes, rounding for rounding, so that on cases a bug does not touch, a planted
 * plugin passes the comparison err <= 2 * err(reference) + floor:
 *
 *   forward, row i of head (b, h), visible keys j ascending, fp32:
 *     S_j = (sum_d q_d k_jd, d ascending) * scale;  m = max S_j;  P_j = expf(S_j - m)
 *     l = sum_j P_j;  O = (sum_j round_dt(P_j) v_j) / l  (stored rounded);  LSE = m + logf(l)
 *   backward (P recomputed from the stored LSE, O as stored):
 *     D_i = dO_i . O_i;  dP_ij = dO_i . v_j;  dS_ij = P_ij (dP_ij - D_i)
 *     dV_j = sum_(h, i ascending) round_dt(P_ij) dO_i
 *     dK_j = scale * sum_(h, i ascending) round_dt(dS_ij) q_i
 *     dQ_i = scale * sum_(j ascending) round_dt(dS_ij) k_j
 *
 * The mask is this file's own code (visible_keys_of_row), never the oracle's
 * mask_spec, and nothing here calls into attnfuzz: a plugin only sees plugin.h. The
 * fp16/bf16 conversions are the shared storage-format header (af_numeric.h), the one
 * definition of "rounded to fp16" in the project; expf and logf are the cpu reference's
 * af_expf / af_logf (af_mathf.h), not libm's.
 *
 * The bugs (each imitates a real defect class; docs/plugins.md lists what catches each):
 *   PLANTED_FP8_V_BLOCK_SCALE       V re-quantised with one scale per 32 tokens along the
 *                                   sequence (amax / 448, E4M3 current scaling), shared
 *                                   across the causal boundary: future V moves past O
 *                                   (TE #3248, cudnn-frontend FROST MXFP8). The values keep
 *                                   the case dtype's mantissa, so O stays within tolerance
 *                                   and only the visibility probe sees it.
 *   PLANTED_WINDOW_OFF_BY_ONE       left window bound exclusive: keys j > diag - L
 *                                   (cuDNN's (i - L, i] taken for [i - L, i], TE #1197)
 *   PLANTED_MASKED_ROW_NAN          fully masked row: O = 0/0 = NaN (pytorch #109517)
 *   PLANTED_RAGGED_OFFSETS_IGNORED  thd inputs read at b * max_seqlen instead of the
 *                                   ragged token starts (cudnn-frontend #737)
 *   PLANTED_GQA_HEAD_MOD            GQA kv head h % heads_kv instead of h / group
 *   PLANTED_V_HEAD_KV               V read at K's head h / (heads_q / heads_kv) (wrapped
 *                                   into heads_v) instead of h / (heads_q / heads_v): a
 *                                   kernel that assumes one K/V head count (cuDNN h_v)
 *   PLANTED_CONTIGUOUS_STRIDES      inputs read with dense bshd strides whatever the
 *                                   real layout (FA #2665)
 *   PLANTED_WINDOW_DROPPED          the sliding window silently ignored (TE PR #3527)
 *   PLANTED_SCALE_IGNORED           softmax scale 1/sqrt(d_qk) always
 *   PLANTED_NONDETERMINISTIC_REDUCTION  the forward's sum over keys starts at a key that
 *                                   changes every call: different low bits run to run,
 *                                   while the plugin claims to be deterministic
 *   PLANTED_IGNORES_SOFTCAP         softcap accepted and ignored (a softcap passed to a
 *                                   deprecated call that drops it)
 *   PLANTED_IGNORES_SINKS           sink logits accepted and left out of the denominator
 *   PLANTED_IGNORES_BIAS            the additive bias tensor accepted and not added
 *   PLANTED_DSINK_DROPPED           learnable sinks treated as constants in the backward:
 *                                   dsink written 0 (dQ, dK, dV stay right)
 *   PLANTED_DROPOUT_IGNORED         dropout accepted and not applied (no mask, no scale)
 *   PLANTED_DROPOUT_OFFSET_IGNORED  the Philox offset taken as 0 (the RNG state a caller
 *                                   advanced past an earlier kernel is not honoured)
 *   PLANTED_DROPOUT_NO_RESCALE      the mask applied, the kept P not scaled by 1 / (1 - p)
 *   PLANTED_DROPOUT_RNG_ADVANCES    the kernel advances the Philox offset itself on every
 *                                   call (call n uses offset + n - 1): the first run is
 *                                   right, a replay of the same seed and offset is not
 *   PLANTED_DROPOUT_MASK_LIES       dropout_rng = kernel: the kernel's own stream applied,
 *                                   and attnfuzz's Philox stream returned as "the mask it
 *                                   applied" (a returned mask that is not the applied one)
 *   PLANTED_IGNORES_ALIBI           ALiBi accepted and no position bias added
 *   PLANTED_LSE_BASE2_IGNORED       log2 statistics requested, the natural-log LSE written
 *                                   (cuDNN's log2 stats read as natural, or the reverse)
 *   PLANTED_DLSE_DROPPED            dLSE accepted and left out of D_i in the backward
 *   PLANTED_WRITES_K                every output correct, then K smoothed in place: each key
 *                                   head's mean over the sequence's keys subtracted from its
 *                                   keys in the caller's buffer (SageAttention 1.0.6's
 *                                   `k -= km`; research C26): an input_mutation naming K
 *   PLANTED_PAD_TO_TILE             the key loop padded to 64-key tiles and bounded by the
 *                                   allocation, not the length: keys [len_kv, min(len_kv
 *                                   rounded up to 64, capacity)) join the softmax unmasked
 *                                   (capacity: S rows padded or paged, the sequence's
 *                                   tokens and the gap after them in thd). Right while the
 *                                   allocation is tight (research C25: the capacity probe)
 *   PLANTED_MAX_LOGIT_MASKED        outputs = max_sumexp / max_logit: each row's max taken
 *                                   over every key of the sequence, the causal / window /
 *                                   drop mask not applied (a QK-clip statistic computed on
 *                                   the unmasked score tile); O and LSE stay right
 *   PLANTED_PAGE_INDEX_128          paged K/V read in 128-token tiles, a page larger than a
 *                                   tile addressed as if it held 128 tokens (page-table entry
 *                                   s / 128, row s % 128): wrong only with page_size > 128
 *                                   (any size, not only powers of two: 200 too) and a key at
 *                                   128 or more (into its page, or in a later one)
 *   PLANTED_SPLIT_KV_STRIDE         past 1024 keys the forward splits them (1024 per split)
 *                                   and combines the partials, written [split][head] per
 *                                   query row and read back [head][split]: wrong only with
 *                                   s_kv > 1024 and heads_q > 1 (one head: the same slots)
 *   PLANTED_KERNEL_CACHE_SCALE      the instance's cache of compiled kernels keyed by shape
 *                                   alone (batch, heads, lengths, head dims, dtype, layout,
 *                                   direction): the score scale is baked in at the first
 *                                   compile and replayed for a later case of that shape
 *                                   with another scale (research C18: FA PR #2402, #2745,
 *                                   flashinfer #4014; the history probe)
 *   PLANTED_IGNORES_CHUNK           attention_chunk accepted and ignored: every row attends
 *                                   across chunk boundaries (plain causal / window attention)
 *   PLANTED_FINITE_MAX_INIT         the running max of a row starts at -5e4, a finite
 *                                   stand-in for -inf: a row whose every logit is below
 *                                   -5e4 gets exp(s - m) = 0 for every key, O = 0 / 0
 *                                   (flashinfer #4267; only logits far below -1e4 reach it:
 *                                   the low_lse data term's far shifts)
 *   PLANTED_METADATA_UNCHECKED      the metadata taken on trust: token starts, page-table
 *                                   entries and lengths become addresses without the checks
 *                                   every other planted plugin makes first
 *                                   (plugins/metadata_check.h): a thd sequence placed past
 *                                   the buffer's end writes its O rows into the guard
 *                                   (research C21: pytorch PR #194818, flashinfer #5095; the
 *                                   metadata probe)
 *   PLANTED_IGNORES_DOCUMENTS       the document mask accepted and ignored: every row attends
 *                                   across document boundaries (one packed sequence)
 *   PLANTED_IGNORES_GLOBAL          global_keys accepted and ignored: the first keys are
 *                                   hidden wherever the rest of the mask hides them
 *   PLANTED_BLOCK_MASK_TRANSPOSED   the block mask read with its axes swapped: the key
 *                                   block's draw looked up as (key block, query block)
 *   PLANTED_KV_SCALE_SWAP           an fp8 KV cache (kv_dtype) whose V is dequantised with K's
 *                                   descale (k_scale applied to V, v_scale unused): right
 *                                   while K's and V's descales agree (the same power of two),
 *                                   wrong when their amax lie in different binades (K's
 *                                   outlier channels, V's sink row)
 *   PLANTED_PAGED_RAGGED_OFFSET     ragged queries over paged K/V (thd + page_size): the page
 *                                   table indexed by the query's packed token (entry
 *                                   (token_start_q[b] + s) / page_size of the flat table, row
 *                                   its remainder) instead of sequence b's own row: a varlen
 *                                   kernel that reuses cu_seqlens_q for the KV cache; right
 *                                   for the first sequence only (its start is 0)
 *   PLANTED_PAGE_FORM_ASSUMED       paged K/V strides recomputed for the common form (NHD
 *                                   pages, K and V split): head stride one vector, token
 *                                   stride H vectors, page stride page_size rows; right for
 *                                   nhd / split, wrong for page_layout = hnd (heads read as
 *                                   tokens) and page_kv = joint (the split page stride)
 *   PLANTED_LAYOUT_ASSUMED          the peers' common layouts assumed: packed Q/K/V read with
 *                                   the blocked packing's head stride (one vector, the token's
 *                                   row / (n tensors x H): right for kv / qkv, wrong for the
 *                                   per-head kv_h / qkv_h, whose heads are n vectors apart),
 *                                   and dO read with O's strides (wrong with layout_do)
 *   PLANTED_AXIS_GAPS_IGNORED       the inputs' strides above the head vector taken dense:
 *                                   each axis's stride derived from the next inner one's
 *                                   (extent x stride, in the view's own axis order), as a
 *                                   kernel that is handed only the innermost stride; right
 *                                   for every order and stride_gap, wrong with gap_h /
 *                                   gap_s / gap_b (separate packing, padded views only)
 *   PLANTED_SCORE_MOD_UNSCALED      a score_mod handed the unscaled q.k and the scale applied
 *                                   to its result, f(q.k) * scale, where Flex hands the
 *                                   modifier the already-scaled score, f(scale q.k) (torch's
 *                                   FlexAttention contract; right without a score_mod; squared
 *                                   comes out 1 / scale times too large)
 *
 * Every planted plugin but that one refuses malformed metadata (AF_PLUGIN_ERROR, the
 * reason in why) before it runs (plugins/metadata_check.h).
 *
 * The instance (plugin.h's optional handle): every planted plugin keeps a small cache
 * of "compiled kernels" in it, as kernel libraries do, keyed by the shape and the scale's
 * bits; a kernel carries the scale it was compiled for and the run uses that one.
 *
 * Features (plugin.h, ABI 2) are served in the forward: softcap, sinks, bias, ALiBi and
 * log2 stats, in the cpu reference's fp32 order (softcap, then bias, then ALiBi; the sink
 * joins max and sum after the keys). The backward serves sinks (with dsink, in the
 * cpu's order: dsink_h = -sum over sequences, then rows ascending, of expf(a_h - LSE_i)
 * D_i) and natural-base dLSE (D_i = dO_i . O_i - dlse_i); other feature problems with
 * backward are declined. Dropout (ABI 3,
 * forward) uses the backends' mask (model/dropout.c, linked in) in the cpu's order: the
 * dropped P feeds the sum, the denominator is the undropped one, O is scaled at the end.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/plugin.h"
#include "model/dropout.h"
#include "model/mathf.h"
#include "model/numeric.h"
#include "plugins/metadata_check.h"

#define PLANTED_NONE                       0
#define PLANTED_FP8_V_BLOCK_SCALE          1
#define PLANTED_WINDOW_OFF_BY_ONE          2
#define PLANTED_MASKED_ROW_NAN             3
#define PLANTED_RAGGED_OFFSETS_IGNORED     4
#define PLANTED_GQA_HEAD_MOD               5
#define PLANTED_CONTIGUOUS_STRIDES         6
#define PLANTED_WINDOW_DROPPED             7
#define PLANTED_SCALE_IGNORED              8
#define PLANTED_NONDETERMINISTIC_REDUCTION 9
#define PLANTED_IGNORES_SOFTCAP            10
#define PLANTED_IGNORES_SINKS              11
#define PLANTED_IGNORES_BIAS               12
#define PLANTED_DSINK_DROPPED              13
#define PLANTED_DROPOUT_IGNORED            14
#define PLANTED_DROPOUT_OFFSET_IGNORED     15
#define PLANTED_DROPOUT_NO_RESCALE         16
#define PLANTED_DROPOUT_RNG_ADVANCES       17
#define PLANTED_IGNORES_ALIBI              18
#define PLANTED_LSE_BASE2_IGNORED          19
#define PLANTED_DLSE_DROPPED               20
#define PLANTED_WRITES_K                   21
#define PLANTED_PAD_TO_TILE                22
#define PLANTED_PAGE_INDEX_128             23
#define PLANTED_SPLIT_KV_STRIDE            24
#define PLANTED_KERNEL_CACHE_SCALE         25
#define PLANTED_IGNORES_CHUNK              26
#define PLANTED_METADATA_UNCHECKED         27
#define PLANTED_FINITE_MAX_INIT            28
#define PLANTED_IGNORES_DOCUMENTS          29
#define PLANTED_IGNORES_GLOBAL             30
#define PLANTED_V_HEAD_KV                  31
#define PLANTED_BLOCK_MASK_TRANSPOSED      32
#define PLANTED_PAGED_RAGGED_OFFSET        33
#define PLANTED_MAX_LOGIT_MASKED           34
#define PLANTED_ALIBI_UNSIGNED             35
#define PLANTED_KV_SCALE_SWAP              36
#define PLANTED_LAYOUT_ASSUMED             37
#define PLANTED_PAGE_FORM_ASSUMED          38
#define PLANTED_AXIS_GAPS_IGNORED          41
#define PLANTED_DROPOUT_MASK_LIES          40
#define PLANTED_SCORE_MOD_UNSCALED         42
/* dropout_rng = kernel: the planted plugins' own Philox key is the seed XOR this */
#define PLANTED_KERNEL_STREAM_KEY 0xD1B54A32D192ED03ull

#ifndef PLANTED_BUG
#error "build with -DPLANTED_BUG=PLANTED_<BUG> (see harness/plugins/CMakeLists.txt)"
#endif

#define BUG(x) (PLANTED_BUG == PLANTED_##x)

#define V_SCALE_BLOCK 32   /* tokens sharing one V scale (MXFP8's block) */
#define KV_TILE       128  /* PLANTED_PAGE_INDEX_128: the kernel's K/V tile along the sequence */
#define SPLIT_KEYS    1024 /* PLANTED_SPLIT_KV_STRIDE: keys per split; one split up to 1024 keys */
#define E4M3_MAX      448.0f

static const struct {
    const char *name;
    const char *description;
} planted_names[] = {
    {"planted:none", "control: the planted plugins' shared attention without a bug"},
    {"planted:fp8_v_block_scale", "V quantised with a scale shared by 32 tokens across the causal boundary"},
    {"planted:window_off_by_one", "left window bound exclusive (one key too few)"},
    {"planted:masked_row_nan", "fully masked rows give NaN instead of O = 0"},
    {"planted:ragged_offsets_ignored", "thd ragged offsets ignored (sequence b read at b * max_seqlen)"},
    {"planted:gqa_head_mod", "GQA head mapping h % heads_kv instead of h / group"},
    {"planted:contiguous_strides", "input strides assumed dense bshd whatever the layout"},
    {"planted:window_dropped", "the sliding window silently dropped"},
    {"planted:scale_ignored", "softmax scale ignored (1/sqrt(d_qk) always)"},
    {"planted:nondeterministic_reduction", "sum order over keys changes run to run"},
    {"planted:ignores_softcap", "logit softcap accepted and ignored"},
    {"planted:ignores_sinks", "attention sinks accepted and left out of the softmax denominator"},
    {"planted:ignores_bias", "additive bias accepted and not added to the scores"},
    {"planted:dsink_dropped", "learnable sinks' gradient dropped in the backward (dsink = 0)"},
    {"planted:dropout_ignored", "dropout accepted and not applied"},
    {"planted:dropout_offset_ignored", "dropout's Philox offset taken as 0"},
    {"planted:dropout_no_rescale", "dropout mask applied, kept P not scaled by 1 / (1 - p)"},
    {"planted:dropout_rng_advances", "dropout's Philox offset advanced by the kernel on every call (replay differs)"},
    {"planted:ignores_alibi", "ALiBi slopes accepted and no position bias added"},
    {"planted:lse_base2_ignored", "log2 statistics requested, natural-log LSE written"},
    {"planted:dlse_dropped", "the incoming LSE gradient (dLSE) accepted and left out of the backward"},
    {"planted:writes_k", "correct outputs, then K smoothed in place (k -= mean(k), the caller's input)"},
    {"planted:pad_to_tile", "keys up to len_kv rounded to a 64-key tile read unmasked, cut at the allocation"},
    {"planted:page_index_128",
     "paged K/V: pages over 128 tokens addressed as if they held 128 (entry s / 128, row s % 128)"},
    {"planted:split_kv_stride", "split-KV (s_kv > 1024): partials combined with the wrong stride across heads"},
    {"planted:kernel_cache_scale",
     "compiled-kernel cache keyed by shape only: the first case's scale replayed for a later one of that shape"},
    {"planted:ignores_chunk", "attention_chunk accepted and ignored (keys of other chunks attended)"},
    {"planted:metadata_unchecked", "thd token starts, page-table entries and lengths used as addresses unchecked"},
    {"planted:finite_max_init", "a row's running max starts at -5e4 (a finite -inf): rows of logits below it are 0/0"},
    {"planted:ignores_documents", "the document mask accepted and ignored (keys of other documents attended)"},
    {"planted:ignores_global", "global_keys accepted and ignored (the global keys masked as any other)"},
    {"planted:v_head_kv", "V read at K's head (heads_kv's group) when heads_v != heads_kv"},
    {"planted:block_mask_transposed", "the block mask looked up as (key block, query block): its transpose"},
    {"planted:paged_ragged_offset", "thd + paged K/V: the page table read at the query's packed token offset"},
    {"planted:max_logit_masked", "max_logit taken over every key of the sequence, masked (invisible) ones too"},
    {"planted:alibi_unsigned", "signed ALiBi accepted and applied as -slope * |distance|"},
    [PLANTED_KV_SCALE_SWAP] = {"planted:kv_scale_swap",
                               "fp8 KV cache: V dequantised with k_scale (K's descale) in place of v_scale"},
    [PLANTED_LAYOUT_ASSUMED] =
        {"planted:layout_assumed",
         "packed K/V read with the blocked packing's head stride (kv_h as kv), dO with O's strides"},
    [PLANTED_PAGE_FORM_ASSUMED] = {"planted:page_form_assumed",
                                   "paged K/V read as NHD pages split into K and V (HND pages and joint K/V "
                                   "pages misaddressed)"},
    [PLANTED_AXIS_GAPS_IGNORED] = {"planted:axis_gaps_ignored",
                                   "input strides above the head vector taken dense (gap_h, gap_s, gap_b ignored)"},
    [PLANTED_DROPOUT_MASK_LIES] =
        {"planted:dropout_mask_lies",
         "dropout_rng = kernel: its own stream applied, attnfuzz's stream returned as the mask"},
    [PLANTED_SCORE_MOD_UNSCALED] = {"planted:score_mod_unscaled",
                                    "score_mod applied to the unscaled q.k, the scale after it"},
};

/* The features this plugin serves (forward only). */
#define PLANTED_FEATURES                                                                                               \
    (AF_PLUGIN_FEAT_SOFTCAP | AF_PLUGIN_FEAT_SINK | AF_PLUGIN_FEAT_BIAS | AF_PLUGIN_FEAT_ALIBI |                       \
     AF_PLUGIN_FEAT_LSE_BASE2 | AF_PLUGIN_FEAT_DSINK | AF_PLUGIN_FEAT_DROPOUT | AF_PLUGIN_FEAT_DLSE |                  \
     AF_PLUGIN_FEAT_CHUNK | AF_PLUGIN_FEAT_DOCUMENTS | AF_PLUGIN_FEAT_GLOBAL | AF_PLUGIN_FEAT_BLOCK_MASK |             \
     AF_PLUGIN_FEAT_CUSTOM_MASK | AF_PLUGIN_FEAT_BIAS_ROW | AF_PLUGIN_FEAT_ALIBI_SIGNED | AF_PLUGIN_FEAT_ALIBI_BATCH | \
     AF_PLUGIN_FEAT_OUTPUTS | AF_PLUGIN_FEAT_SCORE_MOD)
/* The features the backward serves (the chunk, documents and global keys are part of the
 * mask, which both share). */
#define PLANTED_BWD_FEATURES                                                                                           \
    (AF_PLUGIN_FEAT_SINK | AF_PLUGIN_FEAT_DSINK | AF_PLUGIN_FEAT_DLSE | AF_PLUGIN_FEAT_CHUNK |                         \
     AF_PLUGIN_FEAT_DOCUMENTS | AF_PLUGIN_FEAT_GLOBAL | AF_PLUGIN_FEAT_BLOCK_MASK | AF_PLUGIN_FEAT_CUSTOM_MASK |       \
     AF_PLUGIN_FEAT_OUTPUTS)

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static af_plugin_info info;
    info.abi_version = ATTNFUZZ_PLUGIN_ABI_VERSION;
    /* every one claims determinism; the nondeterministic one lies, as real ones do */
    info.flags =
        AF_PLUGIN_DETERMINISTIC | AF_PLUGIN_CHECKS_METADATA | (PLANTED_BUG != PLANTED_NONE ? AF_PLUGIN_PLANTED : 0u);
    info.name = planted_names[PLANTED_BUG].name;
    info.description = planted_names[PLANTED_BUG].description;
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    if (p->dtype != AF_PLUGIN_DTYPE_FP16 && p->dtype != AF_PLUGIN_DTYPE_BF16) {
        snprintf(why, cap, "%s serves fp16 and bf16 only", planted_names[PLANTED_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->batch < 1 || p->heads_q < 1 || p->heads_kv < 1 || p->heads_q % p->heads_kv || p->heads_v < 1 ||
        p->heads_q % p->heads_v || p->head_dim_qk < 1 || p->head_dim_v < 1 || p->seqlen_q < 0 || p->seqlen_kv < 0) {
        snprintf(why, cap, "%s: invalid shape", planted_names[PLANTED_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->features & ~(uint32_t)PLANTED_FEATURES) {
        snprintf(why, cap, "%s: features 0x%x not implemented", planted_names[PLANTED_BUG].name,
                 (unsigned)(p->features & ~(uint32_t)PLANTED_FEATURES));
        return AF_PLUGIN_DECLINE;
    }
    if ((p->features & ~(uint32_t)PLANTED_BWD_FEATURES) && (p->flags & AF_PLUGIN_BACKWARD)) {
        snprintf(why, cap, "%s: features other than sinks, dLSE and the mask's are served in the forward only",
                 planted_names[PLANTED_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    return AF_PLUGIN_OK;
}

/* ---- one run's problem ------------------------------------------------------------ */

typedef struct {
    const af_plugin_problem *p;
    const af_plugin_tensors *t;
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv, group;
    int Hv, group_v; /* V's heads (ABI 6), heads_q / Hv */
    float scale;
    bool fp16; /* round P and dS to fp16 (else bf16) */
    /* dense fp32 copies; rows past a sequence's length stay 0 */
    float *q;                   /* (B, Hq,  Sq,  Dqk) */
    float *k;                   /* (B, Hkv, Skv, Dqk) */
    float *v;                   /* (B, Hv,  Skv, Dv)  */
    float *dout;                /* (B, Hq,  Sq,  Dv)  backward only */
    float *dk_acc;              /* (B, Hkv, Skv, Dqk) backward only */
    float *dv_acc;              /* (B, Hv,  Skv, Dv)  backward only */
    float *row_lse, *row_delta; /* (B, Hq, Sq) backward with dsink: stored LSE, D_i */
    /* scratch for one row */
    float *s, *prob, *dp; /* (Skv) */
    float *acc;           /* (max(Dqk, Dv)) */
#if BUG(SPLIT_KV_STRIDE)
    /* split-KV partials (n_splits > 1 only): per query row position (b, i), n_splits x Hq
     * of them laid out [split][head] */
    int n_splits;     /* ceil(Skv / SPLIT_KEYS) */
    float *split_acc; /* (B, Sq, n_splits, Hq, Dv) sum of round_dt(P_j) v_j over the split */
    float *split_l;   /* (B, Sq, n_splits, Hq)     sum of P_j over the split */
    float *split_m;   /* (B, Hq, Sq)               the row's max (shared by its splits) */
#endif
} planted_run;

static inline float round_dt(const planted_run *r, float x) {
    return r->fp16 ? af_f16_to_f32(af_f32_to_f16(x)) : af_bf16_to_f32(af_f32_to_bf16(x));
}

static inline float *row_of(float *base, int H, int S, int D, int b, int h, int s) {
    return base + (((int64_t)b * H + h) * S + s) * D;
}

static int elem_bytes(int32_t storage) {
    return storage == AF_PLUGIN_STORAGE_F32                                         ? 4
           : storage == AF_PLUGIN_STORAGE_E4M3 || storage == AF_PLUGIN_STORAGE_E5M2 ? 1
                                                                                    : 2;
}

/* Element offset of (b, h, s, d) from x->data, as plugin.h defines it. The two layout
 * bugs live here and only touch the reads of inputs (is_input). */
static int64_t elem_offset(const af_plugin_tensor *x, int b, int h, int s, int d, bool is_input) {
    int64_t stride_b = x->stride_b, stride_h = x->stride_h, stride_s = x->stride_s;
#if BUG(CONTIGUOUS_STRIDES)
    if (is_input) { /* dense bshd, whatever the real layout */
        stride_h = x->D;
        stride_s = (int64_t)x->H * x->D;
        stride_b = x->page_table ? (int64_t)x->page_size * stride_s : (int64_t)x->S * stride_s;
    }
#endif
    if (x->page_table) {
        int64_t slot = s / x->page_size, row = s % x->page_size; /* page-table entry, row in the page */
#if BUG(PAGE_FORM_ASSUMED)
        if (is_input) { /* [pages, page_size, H, vec] per tensor, whatever the form */
            int64_t vec = stride_h < stride_s ? stride_h : stride_s;
            stride_h = vec;
            stride_s = (int64_t)x->H * vec;
            stride_b = (int64_t)x->page_size * stride_s;
        }
#endif
#if BUG(PAGE_INDEX_128)
        /* K/V walked in KV_TILE-token tiles: a page larger than a tile addressed as if it
         * held KV_TILE tokens (entry s / 128, row s % 128); an entry past the sequence's
         * reads its last one (so the plugin stays within the table) */
        if (is_input && x->page_size > KV_TILE) {
            slot = s / KV_TILE;
            row = s % KV_TILE;
            if (slot >= x->pages_per_seq) slot = x->pages_per_seq - 1;
        }
#endif
        int64_t page = x->page_table[(int64_t)b * x->pages_per_seq + slot];
        return page * stride_b + row * stride_s + (int64_t)h * stride_h + d;
    }
    if (x->token_start) {
        int64_t token = x->token_start[b] + s;
#if BUG(RAGGED_OFFSETS_IGNORED)
        if (is_input) token = (int64_t)b * x->S + s; /* as if every sequence had max length */
#endif
        return token * stride_s + (int64_t)h * stride_h + d;
    }
    (void)is_input;
    return (int64_t)b * stride_b + (int64_t)s * stride_s + (int64_t)h * stride_h + d;
}

#if BUG(LAYOUT_ASSUMED)
/* The views a kernel that knows only the blocked packings and a dO shaped like O would use:
 * each packed input's head stride is one vector of the token's row (the smaller of its
 * token and batch strides, over n tensors of H heads; bhsd, whose heads are outside the
 * token, is left alone), and dO takes O's strides. Only the reads change. */
static void assume_common_layouts(const af_plugin_problem *p, af_plugin_tensors *t) {
    int n = !strncmp(p->packing, "qkv", 3) ? 3 : !strncmp(p->packing, "kv", 2) ? 2 : 0;
    for (int i = n == 3 ? AF_PLUGIN_Q : AF_PLUGIN_K; n && i <= AF_PLUGIN_V; i++) {
        af_plugin_tensor *x = &t->t[i];
        if (x->stride_h > x->stride_s) continue; /* bhsd */
        int64_t row = x->token_start || x->stride_b <= 0 || x->stride_s < x->stride_b ? x->stride_s : x->stride_b;
        x->stride_h = row / ((int64_t)n * x->H);
    }
    af_plugin_tensor *dout = &t->t[AF_PLUGIN_DO];
    const af_plugin_tensor *o = &t->t[AF_PLUGIN_O];
    if (dout->data) {
        dout->stride_b = o->stride_b;
        dout->stride_h = o->stride_h;
        dout->stride_s = o->stride_s;
    }
}
#endif

#if BUG(AXIS_GAPS_IGNORED)
/* The strides a kernel handed only the innermost one would use: the axes (b, h, s) in
 * the view's order (ascending stride; an axis of extent 1 first among equals), each
 * outer stride the inner axis's extent times its stride. Padded inputs of the separate
 * packing only (ragged and paged views, packed buffers left alone). */
static void assume_dense_axes(const af_plugin_problem *p, af_plugin_tensors *t) {
    if (strcmp(p->packing, "separate") != 0) return;
    const int ids[4] = {AF_PLUGIN_Q, AF_PLUGIN_K, AF_PLUGIN_V, AF_PLUGIN_DO};
    for (int i = 0; i < 4; i++) {
        af_plugin_tensor *x = &t->t[ids[i]];
        if (!x->data || x->token_start || x->page_table) continue;
        int64_t *stride[3] = {&x->stride_b, &x->stride_h, &x->stride_s};
        int64_t extent[3] = {x->B, x->H, x->S};
        int order[3] = {0, 1, 2};
        for (int a = 0; a < 3; a++) /* sort by (stride, extent) */
            for (int b = a + 1; b < 3; b++) {
                int64_t sa = *stride[order[a]], sb = *stride[order[b]];
                if (sb < sa || (sb == sa && extent[order[b]] < extent[order[a]])) {
                    int tmp = order[a];
                    order[a] = order[b];
                    order[b] = tmp;
                }
            }
        for (int a = 1; a < 3; a++) *stride[order[a]] = extent[order[a - 1]] * *stride[order[a - 1]];
    }
}
#endif

/* Read one element; 0 outside the tensor's buffer (a wrong offset from a planted bug
 * reads garbage, never memory that is not ours). */
static float load(const af_plugin_tensor *x, int b, int h, int s, int d, bool is_input) {
    int64_t off = elem_offset(x, b, h, s, d, is_input);
    int bytes = elem_bytes(x->storage);
    int64_t abs = ((const uint8_t *)x->data - (const uint8_t *)x->buffer) / bytes + off;
    if (abs < 0 || abs >= x->buffer_elems) return 0.0f;
    const uint8_t *ptr = (const uint8_t *)x->buffer + abs * bytes;
    uint16_t u16;
    switch (x->storage) {
        case AF_PLUGIN_STORAGE_F16:
            memcpy(&u16, ptr, 2);
            return af_f16_to_f32(u16);
        case AF_PLUGIN_STORAGE_BF16:
            memcpy(&u16, ptr, 2);
            return af_bf16_to_f32(u16);
        case AF_PLUGIN_STORAGE_E4M3: /* fp8 K, V (kv_dtype): stored * descale, exact (a power of two) */
            return af_e4m3_to_f32(*ptr) * x->descale;
        case AF_PLUGIN_STORAGE_E5M2:
            return af_e5m2_to_f32(*ptr) * x->descale;
        default: {
            float f;
            memcpy(&f, ptr, 4);
            return f;
        }
    }
}

/* Store one output element rounded to the tensor's storage (round to nearest even). */
static void store(const af_plugin_tensor *x, int b, int h, int s, int d, float value) {
    uint8_t *ptr = (uint8_t *)x->data + elem_offset(x, b, h, s, d, false) * elem_bytes(x->storage);
    uint16_t u16;
    switch (x->storage) {
        case AF_PLUGIN_STORAGE_F16:
            u16 = af_f32_to_f16(value);
            memcpy(ptr, &u16, 2);
            break;
        case AF_PLUGIN_STORAGE_BF16:
            u16 = af_f32_to_bf16(value);
            memcpy(ptr, &u16, 2);
            break;
        case AF_PLUGIN_STORAGE_E4M3:
            *ptr = af_f32_to_e4m3(value);
            break;
        default:
            memcpy(ptr, &value, 4);
            break;
    }
}

/* Rows a tensor has in memory for a sequence of length len: ragged tensors hold
 * exactly len rows, padded ones the maximum (written 0 / -inf past len). */
static int rows_in_memory(const af_plugin_tensor *x, int len) { return x->token_start ? len : x->S; }

/* ---- the mask (this plugin's own) ------------------------------------------------- */

#define PAD_TILE 64 /* PLANTED_PAD_TO_TILE's key tile */

/* One past the last key the key loop of sequence b reads: len_kv; with
 * PLANTED_PAD_TO_TILE len_kv rounded up to the tile, cut at what the allocation holds
 * for the sequence (S rows; thd: its tokens and the gap up to the next sequence). */
static int key_end(const planted_run *r, int b) {
    int len = r->p->seqlens_kv[b];
#if BUG(PAD_TO_TILE)
    const af_plugin_tensor *k = &r->t->t[AF_PLUGIN_K];
    long long room = r->Skv, end = ((long long)len + PAD_TILE - 1) / PAD_TILE * PAD_TILE;
    if (k->token_start && k->token_start[b + 1] - k->token_start[b] < room)
        room = k->token_start[b + 1] - k->token_start[b];
    if (end > room) end = room;
    if (end > len) return (int)end;
#endif
    return len;
}

/* Row i's own keys [*first, *last] (all but the global keys); returns their count (0:
 * none, or the row is past len_q). [0, len_kv) cut by causal (j <= diag), window left
 * (j >= diag - L), window right (j <= diag + R), the chunk (keys N floor(diag / N) ..
 * N floor(diag / N) + N - 1) and the document of diag (none when diag < 0; the keys past
 * the last end are one more). */
static int own_keys_of_row(const planted_run *r, int b, int i, int *first, int *last) {
    const af_plugin_problem *p = r->p;
    int len_q = p->seqlens_q[b], len_kv = p->seqlens_kv[b];
    long long diag = p->align == AF_PLUGIN_ALIGN_BOTTOM_RIGHT ? (long long)i + len_kv - len_q : (long long)i;
    long long lo = 0, hi = (long long)key_end(r, b) - 1;
    int window_left = p->window_left, window_right = p->window_right;
#if BUG(WINDOW_DROPPED)
    window_left = window_right = -1;
#endif
    if (p->mask == AF_PLUGIN_MASK_CAUSAL && diag < hi) hi = diag;
#if BUG(WINDOW_OFF_BY_ONE)
    if (window_left >= 0 && diag - window_left + 1 > lo) lo = diag - window_left + 1; /* (diag - L, diag] */
#else
    if (window_left >= 0 && diag - window_left > lo) lo = diag - window_left;
#endif
    if (window_right >= 0 && diag + window_right < hi) hi = diag + window_right;
    long long chunk = p->attention_chunk;
#if BUG(IGNORES_CHUNK)
    chunk = 0;
#endif
    if (chunk > 0) {
        long long start = (diag >= 0 ? diag : diag - chunk + 1) / chunk * chunk;
        if (start > lo) lo = start;
        if (start + chunk - 1 < hi) hi = start + chunk - 1;
    }
    int n_docs = p->n_documents;
#if BUG(IGNORES_DOCUMENTS)
    n_docs = 0;
#endif
    if (n_docs > 0) {
        int d = 0;
        while (d < n_docs && p->document_ends[d] <= diag) d++;
        long long start = d == 0 ? 0 : p->document_ends[d - 1], end = d < n_docs ? p->document_ends[d] : 1LL << 40;
        if (diag < 0) end = 0; /* before key 0: in no document */
        if (start > lo) lo = start;
        if (end - 1 < hi) hi = end - 1;
    }
    *first = 0;
    *last = -1;
    if (i < 0 || i >= len_q || lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* The global keys of sequence b: 0 .. G-1, cut at len_kv. */
static int global_keys_of(const planted_run *r, int b) {
    int g = r->p->global_keys, len_kv = r->p->seqlens_kv[b];
#if BUG(IGNORES_GLOBAL)
    g = 0;
#endif
    return g < len_kv ? g : len_kv;
}

/* The drops (ABI 6, plugin.h): splitmix64's top 32 bits against floor(P 2^32). */
static uint64_t drop_hash(uint64_t seed, uint64_t tag, uint64_t x, uint64_t y) {
    uint64_t z = seed + tag * 0x9E3779B97F4A7C15ULL + x * 0xD1B54A32D192ED03ULL + y * 0xABC98388FB8FAC03ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (z ^ (z >> 31)) >> 32;
}

static uint64_t drop_threshold(double p) { return p >= 1.0 ? 1ULL << 32 : (uint64_t)(p * 4294967296.0); }

/* Do the block and element masks keep (b, i, j)? */
static bool drops_keep(const planted_run *r, int b, int i, int j) {
    const af_plugin_problem *p = r->p;
    if (p->features & AF_PLUGIN_FEAT_BLOCK_MASK) {
        uint64_t qb = (uint64_t)(i / p->block_mask_q), kb = (uint64_t)(j / p->block_mask_k);
#if BUG(BLOCK_MASK_TRANSPOSED)
        uint64_t t = qb;
        qb = kb;
        kb = t;
#endif
        if (drop_hash(p->mask_seed, 1, qb, kb) >= drop_threshold(p->block_mask_p)) return false;
    }
    if ((p->features & AF_PLUGIN_FEAT_CUSTOM_MASK) &&
        drop_hash(p->mask_seed, 2, ((uint64_t)b << 32) | (uint32_t)i, (uint64_t)j) >= drop_threshold(p->custom_mask_p))
        return false;
    return true;
}

static bool key_seen(const planted_run *r, int b, int i, int j) {
    int first, last;
    if (!drops_keep(r, b, i, j)) return false;
    if (j < global_keys_of(r, b)) return true;
    return own_keys_of_row(r, b, i, &first, &last) > 0 && j >= first && j <= last;
}

/* The hull [*first, *last] of the keys row i sees: its own keys and the global keys
 * 0 .. G-1; returns its size (0: fully masked or past len_q; also when the drops take
 * every key of the hull). Inside the hull a key is seen iff key_seen (the gap between
 * the global keys and the row's own is not, nor a dropped key). */
static int visible_keys_of_row(const planted_run *r, int b, int i, int *first, int *last) {
    int n = own_keys_of_row(r, b, i, first, last), g = global_keys_of(r, b);
    if (!(i < 0 || i >= r->p->seqlens_q[b] || g == 0)) {
        if (n == 0 || *last < g - 1) *last = g - 1;
        *first = 0;
        n = *last + 1;
    }
    if (n > 0 && (r->p->features & (AF_PLUGIN_FEAT_BLOCK_MASK | AF_PLUGIN_FEAT_CUSTOM_MASK))) {
        bool any = false;
        for (int j = *first; j <= *last && !any; j++) any = key_seen(r, b, i, j);
        if (!any) {
            *first = 0;
            *last = -1;
            return 0;
        }
    }
    return n;
}

static int kv_head_of(const planted_run *r, int h) {
#if BUG(GQA_HEAD_MOD)
    return h % r->Hkv;
#else
    return h / r->group;
#endif
}

static int v_head_of(const planted_run *r, int h) {
#if BUG(V_HEAD_KV)
    return kv_head_of(r, h) % r->Hv;
#else
    return h / r->group_v;
#endif
}

/* ---- inputs ----------------------------------------------------------------------- */

#if BUG(PAGED_RAGGED_OFFSET)
/* Paged K/V of a ragged problem read at the query's packed token: flat entry
 * (token_start_q[b] + s) / page_size of the whole table (cut at its end), row the
 * remainder, as if the table were indexed by cu_seqlens_q. Other tensors: load. */
static float load_kv(const planted_run *r, const af_plugin_tensor *x, int b, int h, int s, int d) {
    const int64_t *q_start = r->t->t[AF_PLUGIN_Q].token_start;
    if (!q_start || !x->page_table) return load(x, b, h, s, d, true);
    int64_t span = (int64_t)x->pages_per_seq * x->page_size; /* one sequence's table row, in tokens */
    int64_t flat = q_start[b] + s;
    if (flat >= (int64_t)r->B * span) flat = (int64_t)r->B * span - 1;
    return load(x, (int)(flat / span), h, (int)(flat % span), d, true);
}
#elif BUG(KV_SCALE_SWAP)
/* An fp8 KV cache's V read with K's descale (k_scale where v_scale belongs). */
static float load_kv(const planted_run *r, const af_plugin_tensor *x, int b, int h, int s, int d) {
    if (x != &r->t->t[AF_PLUGIN_V] || r->p->kv_dtype == AF_PLUGIN_KV_SAME) return load(x, b, h, s, d, true);
    af_plugin_tensor v = *x;
    v.descale = r->t->t[AF_PLUGIN_K].descale;
    return load(&v, b, h, s, d, true);
}
#else
static float load_kv(const planted_run *r, const af_plugin_tensor *x, int b, int h, int s, int d) {
    (void)r;
    return load(x, b, h, s, d, true);
}
#endif

static void gather(planted_run *r, int tid, float *dense, int H, int S, int D, const int32_t *lens) {
    const af_plugin_tensor *x = &r->t->t[tid];
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < lens[b]; s++) {
                float *row = row_of(dense, H, S, D, b, h, s);
                for (int d = 0; d < D; d++) row[d] = load_kv(r, x, b, h, s, d);
            }
}

#if BUG(PAD_TO_TILE)
/* The keys and values past each sequence's length that the padded key loop reads. */
static void gather_tile_tails(planted_run *r) {
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < (r->Hkv > r->Hv ? r->Hkv : r->Hv); h++)
            for (int s = r->p->seqlens_kv[b]; s < key_end(r, b); s++) {
                if (h < r->Hkv) {
                    float *k = row_of(r->k, r->Hkv, r->Skv, r->Dqk, b, h, s);
                    for (int d = 0; d < r->Dqk; d++) k[d] = load(&r->t->t[AF_PLUGIN_K], b, h, s, d, true);
                }
                if (h < r->Hv) {
                    float *v = row_of(r->v, r->Hv, r->Skv, r->Dv, b, h, s);
                    for (int d = 0; d < r->Dv; d++) v[d] = load(&r->t->t[AF_PLUGIN_V], b, h, s, d, true);
                }
            }
}
#endif

#if BUG(FP8_V_BLOCK_SCALE)
/* Re-quantise V (B, Hkv, Skv, Dv) block by block: one scale per V_SCALE_BLOCK tokens,
 * sc = amax / 448 over the whole block, which straddles the causal boundary of the rows
 * inside it. v <- round_dt(v / sc) * sc. */
static void quantise_v_blocks(planted_run *r) {
    for (int b = 0; b < r->B; b++) {
        int len_kv = r->p->seqlens_kv[b];
        for (int hk = 0; hk < r->Hv; hk++)
            for (int j0 = 0; j0 < len_kv; j0 += V_SCALE_BLOCK) {
                int j1 = j0 + V_SCALE_BLOCK < len_kv ? j0 + V_SCALE_BLOCK : len_kv;
                float amax = 0.0f;
                for (int j = j0; j < j1; j++) {
                    const float *row = row_of(r->v, r->Hv, r->Skv, r->Dv, b, hk, j);
                    for (int d = 0; d < r->Dv; d++) amax = fabsf(row[d]) > amax ? fabsf(row[d]) : amax;
                }
                if (!(amax > 0.0f) || !isfinite(amax)) continue;
                float sc = amax / E4M3_MAX;
                for (int j = j0; j < j1; j++) {
                    float *row = row_of(r->v, r->Hv, r->Skv, r->Dv, b, hk, j);
                    for (int d = 0; d < r->Dv; d++) row[d] = round_dt(r, row[d] / sc) * sc;
                }
            }
    }
}
#endif

/* ---- forward ---------------------------------------------------------------------- */

#if BUG(DROPOUT_RNG_ADVANCES)
static uint64_t dropout_calls; /* forward calls with dropout so far: the bug's own RNG state */
#endif

/* Is P element (b, h, i, j) kept by dropout (plugin.h, ABI 3)? true without dropout.
 * `call` is the bug's offset advance (0 but for PLANTED_DROPOUT_RNG_ADVANCES). */
static bool dropout_kept(const planted_run *r, uint64_t call, int b, int h, int i, int j) {
    const af_plugin_problem *p = r->p;
    if (!(p->features & AF_PLUGIN_FEAT_DROPOUT)) return true;
#if BUG(DROPOUT_IGNORED)
    (void)call, (void)b, (void)h, (void)i, (void)j;
    return true;
#else
    /* dropout_rng = kernel (ABI 7): the plugin's own stream, the Philox mapping under another key */
    uint64_t seed = p->dropout_seed ^ (p->dropout_rng == AF_PLUGIN_DROPOUT_RNG_KERNEL ? PLANTED_KERNEL_STREAM_KEY : 0);
    uint64_t offset = p->dropout_offset + call;
#if BUG(DROPOUT_OFFSET_IGNORED)
    offset = 0;
#endif
    uint64_t n = (((uint64_t)b * (uint64_t)r->Hq + (uint64_t)h) * (uint64_t)r->Sq + (uint64_t)i) * (uint64_t)r->Skv +
                 (uint64_t)j;
    return !af_dropout_dropped(seed, offset, af_dropout_threshold(p->dropout_p), n);
#endif
}

/* dropout_rng = kernel (ABI 7): the keep mask of every element into p->dropout_keep, as the
 * forward applies it (PLANTED_DROPOUT_MASK_LIES: attnfuzz's stream instead), and say so. */
static void return_dropout_mask(const planted_run *r, uint64_t call) {
    const af_plugin_problem *p = r->p;
    if (!(p->features & AF_PLUGIN_FEAT_DROPOUT) || p->dropout_rng != AF_PLUGIN_DROPOUT_RNG_KERNEL || !p->dropout_keep ||
        !p->dropout_keep_returned)
        return;
    size_t n = 0;
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < r->Hq; h++)
            for (int i = 0; i < r->Sq; i++)
                for (int j = 0; j < r->Skv; j++, n++) {
#if BUG(DROPOUT_MASK_LIES)
                    p->dropout_keep[n] =
                        !af_dropout_dropped(p->dropout_seed, p->dropout_offset, af_dropout_threshold(p->dropout_p), n);
                    (void)call;
#else
                    p->dropout_keep[n] = dropout_kept(r, call, b, h, i, j);
#endif
                }
    *p->dropout_keep_returned = 1;
}

/* The factor kept P is scaled by: 1 / (1 - p) in fp32, 1 without dropout. */
static float dropout_scale(const planted_run *r) {
    if (!(r->p->features & AF_PLUGIN_FEAT_DROPOUT)) return 1.0f;
#if BUG(DROPOUT_IGNORED) || BUG(DROPOUT_NO_RESCALE)
    return 1.0f;
#else
    return (float)(1.0 / (1.0 - r->p->dropout_p));
#endif
}

/* torch Flex's named score_mods (plugin.h, ABI 8) on the scaled score r of sequence b,
 * fp32 with sinf / cosf / tanf: r^2; sin(cos r) + tan b; cos r sin r + tan b. */
static float score_mod_of(int32_t mod, int b, float r) {
    if (mod == AF_PLUGIN_SCORE_MOD_SQUARED) return r * r;
    float cr = cosf(r);
    if (mod == AF_PLUGIN_SCORE_MOD_TRIG) return sinf(cr) + tanf((float)b);
    return cr * sinf(r) + tanf((float)b);
}

/* s[j] = (q . k_(first+j)) * scale for j < n, fp32, d ascending; then the features of
 * query row (b, h, i): softcap or score_mod (forward only), bias, ALiBi (plugin.h). */
static void scores(const planted_run *r, const float *q, int b, int h, int i, int hk, int first, int n, float *s) {
    const af_plugin_problem *p = r->p;
    for (int j = 0; j < n; j++) {
        const float *k = row_of(r->k, r->Hkv, r->Skv, r->Dqk, b, hk, first + j);
        float acc = 0.0f;
        for (int d = 0; d < r->Dqk; d++) acc += q[d] * k[d];
        s[j] = acc * r->scale;
        if (p->features & AF_PLUGIN_FEAT_SCORE_MOD) {
#if BUG(SCORE_MOD_UNSCALED)
            s[j] = score_mod_of(p->score_mod, b, acc) * r->scale;
#else
            s[j] = score_mod_of(p->score_mod, b, s[j]);
#endif
        }
#if !BUG(IGNORES_SOFTCAP)
        if (p->features & AF_PLUGIN_FEAT_SOFTCAP) s[j] = p->softcap * tanhf(s[j] / p->softcap);
#endif
#if !BUG(IGNORES_BIAS)
        if (p->features & AF_PLUGIN_FEAT_BIAS) {
            int bb = p->bias_b == 1 ? 0 : b, hb = p->bias_h == 1 ? 0 : h, ib = p->bias_q == 1 ? 0 : i;
            s[j] += p->bias[(((int64_t)bb * p->bias_h + hb) * p->bias_q + ib) * r->Skv + first + j];
        }
#endif
#if !BUG(IGNORES_ALIBI)
        if (p->features & AF_PLUGIN_FEAT_ALIBI) {
            int diag = i + p->seqlens_kv[b] - p->seqlens_q[b];
            float slope = p->alibi_slopes[(p->alibi_b == 1 ? 0 : b) * p->heads_q + h];
#if BUG(ALIBI_UNSIGNED)
            s[j] += -slope * (float)abs(first + j - diag);
#else
            s[j] += p->alibi_signed ? slope * (float)(first + j - diag) : -slope * (float)abs(first + j - diag);
#endif
        }
#endif
    }
}

/* The sink logit of head h joins the denominator (no value row); -inf without sinks. */
static float sink_of(const planted_run *r, int h) {
#if BUG(IGNORES_SINKS)
    (void)r, (void)h;
    return -INFINITY;
#else
    return (r->p->features & AF_PLUGIN_FEAT_SINK) ? r->p->sink[h] : -INFINITY;
#endif
}

#if BUG(NONDETERMINISTIC_REDUCTION)
static unsigned long run_counter; /* changes every call: the "scheduling" of the sum */
#endif

#if BUG(SPLIT_KV_STRIDE)
/* Partial slot of (b, i, split, h): [split][head] per query row position. */
static int64_t split_slot(const planted_run *r, int b, int i, int split, int h) {
    return (((int64_t)b * r->Sq + i) * r->n_splits + split) * r->Hq + h;
}

/* Row (b, h, i) of the split path: for each SPLIT_KEYS-key split of [0, Skv) the sums of
 * P_j = expf(s_j - m) (m: the row's max over all its keys, so the partials add without
 * rescaling) and of round_dt(P_j) v_j over its visible keys. */
static void split_partials(planted_run *r, uint64_t call, int b, int h, int i, int first, int n, float m) {
    r->split_m[((int64_t)b * r->Hq + h) * r->Sq + i] = m;
    for (int split = 0; split < r->n_splits; split++) {
        float *acc = r->split_acc + split_slot(r, b, i, split, h) * r->Dv;
        float l = 0.0f;
        for (int d = 0; d < r->Dv; d++) acc[d] = 0.0f;
        int lo = split * SPLIT_KEYS > first ? split * SPLIT_KEYS : first;
        int hi = (split + 1) * SPLIT_KEYS < first + n ? (split + 1) * SPLIT_KEYS : first + n;
        for (int j = lo; j < hi; j++) {
            if (!key_seen(r, b, i, j)) continue; /* the global keys' gap */
            float pj = af_expf(r->s[j - first] - m);
            l += pj;
            if (!dropout_kept(r, call, b, h, i, j)) continue; /* in l, not in the sum */
            float pr = round_dt(r, pj);
            const float *v = row_of(r->v, r->Hv, r->Skv, r->Dv, b, v_head_of(r, h), j);
            for (int d = 0; d < r->Dv; d++) acc[d] += pr * v[d];
        }
        r->split_l[split_slot(r, b, i, split, h)] = l;
    }
}

/* The combine: O and LSE of every row that sees a key, from its splits' partials in
 * split order. The bug: split s of head h read at h * n_splits + s of the row's
 * [split][head] block (written at s * Hq + h), the stride across splits 1 instead of Hq:
 * the same slot with one head, another head's partials with more. */
static void split_combine(planted_run *r) {
    const af_plugin_tensor *to = &r->t->t[AF_PLUGIN_O], *tl = &r->t->t[AF_PLUGIN_LSE];
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < r->Hq; h++)
            for (int i = 0; i < r->Sq; i++) {
                int first, last;
                if (visible_keys_of_row(r, b, i, &first, &last) == 0) continue; /* written already */
                float sink = sink_of(r, h), m = r->split_m[((int64_t)b * r->Hq + h) * r->Sq + i];
                float l = 0.0f, *acc = r->acc;
                for (int d = 0; d < r->Dv; d++) acc[d] = 0.0f;
                for (int split = 0; split < r->n_splits; split++) {
                    /* written at split_slot(r, b, i, split, h): row + split * Hq + h */
                    int64_t slot = split_slot(r, b, i, 0, 0) + (int64_t)h * r->n_splits + split;
                    l += r->split_l[slot];
                    for (int d = 0; d < r->Dv; d++) acc[d] += r->split_acc[slot * r->Dv + d];
                }
                if (sink > -INFINITY) l += af_expf(sink - m);
                float keep = dropout_scale(r);
                for (int d = 0; d < r->Dv; d++) store(to, b, h, i, d, keep == 1.0f ? acc[d] / l : acc[d] / l * keep);
                float lse = m + af_logf(l);
                if (r->p->features & AF_PLUGIN_FEAT_LSE_BASE2) lse *= 1.44269504088896340736f;
                store(tl, b, h, i, 0, lse);
            }
}
#endif

/* The score statistics of row (b, h, i) < len_q (plugin.h, ABI 7): M_i = m_scores (the
 * max of its visible scores; the sink is not one), E_i = sumexp; max_logit[b, h] the max
 * of its rows' M_i. Rows come in ascending order per head: row 0 starts the head's max. */
static void row_statistics(planted_run *r, int b, int h, int i, float m_scores, float sumexp) {
    const af_plugin_problem *p = r->p;
    int64_t row = ((int64_t)b * r->Hq + h) * r->Sq + i, head = (int64_t)b * r->Hq + h;
    if (p->row_max) p->row_max[row] = m_scores;
    if (p->row_sumexp) p->row_sumexp[row] = sumexp;
    if (p->max_logit) p->max_logit[head] = i == 0 || m_scores > p->max_logit[head] ? m_scores : p->max_logit[head];
}

static void forward(planted_run *r) {
    const af_plugin_tensor *to = &r->t->t[AF_PLUGIN_O], *tl = &r->t->t[AF_PLUGIN_LSE];
    unsigned long rotation = 0;
#if BUG(NONDETERMINISTIC_REDUCTION)
    rotation = ++run_counter;
#endif
    uint64_t call = 0; /* the planted RNG advance (dropout_kept) */
#if BUG(DROPOUT_RNG_ADVANCES)
    if (r->p->features & AF_PLUGIN_FEAT_DROPOUT) call = dropout_calls++;
#endif
    return_dropout_mask(r, call);
    for (int b = 0; b < r->B; b++) {
        int len_q = r->p->seqlens_q[b];
        int rows_o = rows_in_memory(to, len_q), rows_lse = rows_in_memory(tl, len_q);
        for (int h = 0; h < r->Hq; h++) {
            int hk = kv_head_of(r, h);
            for (int i = 0; i < r->Sq; i++) {
                int first, last;
                int n = visible_keys_of_row(r, b, i, &first, &last);
                float *acc = r->acc;
                if (n == 0) {
                    float fill = 0.0f;
#if BUG(MASKED_ROW_NAN)
                    /* no guard for an empty row: O = (sum of nothing) / (sum of nothing) */
                    volatile float zero_sum = 0.0f;
                    if (i < len_q) fill = zero_sum / zero_sum;
#endif
                    if (i < rows_o)
                        for (int d = 0; d < r->Dv; d++) store(to, b, h, i, d, fill);
                    /* a fully masked row's denominator holds the sink alone: LSE = a_h */
                    float empty = i < len_q ? sink_of(r, h) : -INFINITY;
#if !BUG(LSE_BASE2_IGNORED)
                    if (r->p->features & AF_PLUGIN_FEAT_LSE_BASE2) empty *= 1.44269504088896340736f;
#endif
                    if (i < rows_lse) store(tl, b, h, i, 0, empty);
                    if (i < len_q) row_statistics(r, b, h, i, -INFINITY, 0.0f);
                    continue;
                }
                scores(r, row_of(r->q, r->Hq, r->Sq, r->Dqk, b, h, i), b, h, i, hk, first, n, r->s);
                float sink = sink_of(r, h), m = sink, m_scores = -INFINITY;
#if BUG(FINITE_MAX_INIT)
                if (m < -5e4f) m = -5e4f; /* "-inf" as a finite number */
#endif
                for (int j = 0; j < n; j++)
                    if (key_seen(r, b, i, first + j)) m_scores = r->s[j] > m_scores ? r->s[j] : m_scores;
                m = m_scores > m ? m_scores : m;
#if BUG(SPLIT_KV_STRIDE)
                if (r->n_splits > 1) { /* O and LSE in split_combine, once every head's partials are in */
                    split_partials(r, call, b, h, i, first, n, m);
                    continue;
                }
#endif
                float l = 0.0f;
                for (int d = 0; d < r->Dv; d++) acc[d] = 0.0f;
                for (int step = 0; step < n; step++) {
                    int j = (int)((step + rotation) % (unsigned long)n);
                    if (!key_seen(r, b, i, first + j)) continue; /* the global keys' gap */
                    float pj = af_expf(r->s[j] - m);
                    l += pj;
                    if (!dropout_kept(r, call, b, h, i, first + j)) continue; /* in l, not in the sum */
                    float pr = round_dt(r, pj);
                    const float *v = row_of(r->v, r->Hv, r->Skv, r->Dv, b, v_head_of(r, h), first + j);
                    for (int d = 0; d < r->Dv; d++) acc[d] += pr * v[d];
                }
                if (i < len_q && r->p->outputs != AF_PLUGIN_OUTPUTS_LSE) {
                    /* the seen keys' sum from their own max (not l from m: a sink far above
                     * the scores leaves l no bits), before the bug below reuses r->s */
                    float m_true = m_scores, se = 0.0f;
                    for (int j = 0; m_true != -INFINITY && j < n; j++)
                        if (key_seen(r, b, i, first + j)) se += af_expf(r->s[j] - m_true);
#if BUG(MAX_LOGIT_MASKED)
                    /* the max over every key of the sequence, the mask not applied */
                    int len_kv = r->p->seqlens_kv[b];
                    scores(r, row_of(r->q, r->Hq, r->Sq, r->Dqk, b, h, i), b, h, i, hk, 0, len_kv, r->s);
                    for (int j = 0; j < len_kv; j++) m_scores = r->s[j] > m_scores ? r->s[j] : m_scores;
#endif
#if BUG(MAX_LOGIT_MASKED)
                    if (m_true != -INFINITY) se *= af_expf(m_true - m_scores); /* to the max it reports */
#endif
                    row_statistics(r, b, h, i, m_scores, m_scores == -INFINITY ? 0.0f : se);
                }
                if (sink > -INFINITY) l += af_expf(sink - m);
                float keep = dropout_scale(r);
                for (int d = 0; d < r->Dv; d++) store(to, b, h, i, d, keep == 1.0f ? acc[d] / l : acc[d] / l * keep);
                float lse = m + af_logf(l);
#if !BUG(LSE_BASE2_IGNORED)
                if (r->p->features & AF_PLUGIN_FEAT_LSE_BASE2) lse *= 1.44269504088896340736f;
#endif
                store(tl, b, h, i, 0, lse);
            }
        }
    }
#if BUG(SPLIT_KV_STRIDE)
    if (r->n_splits > 1) split_combine(r);
#endif
}

/* ---- backward --------------------------------------------------------------------- */

static void run_backward(planted_run *r) {
    const af_plugin_tensors *t = r->t;
    const af_plugin_tensor *to = &t->t[AF_PLUGIN_O], *tl = &t->t[AF_PLUGIN_LSE];
    const af_plugin_tensor *tdq = &t->t[AF_PLUGIN_DQ], *tdk = &t->t[AF_PLUGIN_DK], *tdv = &t->t[AF_PLUGIN_DV];
    for (int b = 0; b < r->B; b++) {
        int len_q = r->p->seqlens_q[b], len_kv = r->p->seqlens_kv[b];
        int rows_dq = rows_in_memory(tdq, len_q);
        for (int h = 0; h < r->Hq; h++) { /* heads ascending, then rows: dK dV's order */
            int hk = kv_head_of(r, h);
            for (int i = 0; i < r->Sq; i++) {
                int first, last;
                int n = visible_keys_of_row(r, b, i, &first, &last);
                float *acc = r->acc;
                if (n == 0) {
                    if (i < rows_dq)
                        for (int d = 0; d < r->Dqk; d++) store(tdq, b, h, i, d, 0.0f);
                    continue;
                }
                const float *q = row_of(r->q, r->Hq, r->Sq, r->Dqk, b, h, i);
                const float *dout = row_of(r->dout, r->Hq, r->Sq, r->Dv, b, h, i);
                float lse = load(tl, b, h, i, 0, false);
                float delta = 0.0f;
                for (int d = 0; d < r->Dv; d++) delta += dout[d] * load(to, b, h, i, d, false);
#if !BUG(DLSE_DROPPED)
                if (r->p->features & AF_PLUGIN_FEAT_DLSE) /* D_i = dO_i . O_i - g_i (natural base) */
                    delta -= r->p->dlse[((int64_t)b * r->Hq + h) * r->Sq + i];
#endif
                if (r->row_lse) {
                    r->row_lse[((int64_t)b * r->Hq + h) * r->Sq + i] = lse;
                    r->row_delta[((int64_t)b * r->Hq + h) * r->Sq + i] = delta;
                }
                scores(r, q, b, h, i, hk, first, n, r->s); /* sinks at most: the rest declined */
                for (int j = 0; j < n; j++) {
                    if (!key_seen(r, b, i, first + j)) { /* the global keys' gap: no term */
                        r->prob[j] = r->dp[j] = 0.0f;
                        continue;
                    }
                    const float *v = row_of(r->v, r->Hv, r->Skv, r->Dv, b, v_head_of(r, h), first + j);
                    float dp = 0.0f;
                    for (int d = 0; d < r->Dv; d++) dp += dout[d] * v[d];
                    r->prob[j] = af_expf(r->s[j] - lse);
                    r->dp[j] = r->prob[j] * (dp - delta); /* dS */
                }
                for (int d = 0; d < r->Dqk; d++) acc[d] = 0.0f;
                for (int j = 0; j < n; j++) {
                    if (!key_seen(r, b, i, first + j)) continue;
                    float ds = round_dt(r, r->dp[j]), pr = round_dt(r, r->prob[j]);
                    const float *k = row_of(r->k, r->Hkv, r->Skv, r->Dqk, b, hk, first + j);
                    float *dk = row_of(r->dk_acc, r->Hkv, r->Skv, r->Dqk, b, hk, first + j);
                    float *dv = row_of(r->dv_acc, r->Hv, r->Skv, r->Dv, b, v_head_of(r, h), first + j);
                    for (int d = 0; d < r->Dqk; d++) acc[d] += ds * k[d];
                    for (int d = 0; d < r->Dqk; d++) dk[d] += ds * q[d];
                    for (int d = 0; d < r->Dv; d++) dv[d] += pr * dout[d];
                }
                for (int d = 0; d < r->Dqk; d++) store(tdq, b, h, i, d, acc[d] * r->scale);
            }
        }
        int rows_dk = rows_in_memory(tdk, len_kv), rows_dv = rows_in_memory(tdv, len_kv);
        for (int hk = 0; hk < r->Hkv; hk++)
            for (int j = 0; j < r->Skv; j++) {
                bool valid = j < len_kv; /* keys past len_kv of padded layouts get 0 */
                const float *dk = row_of(r->dk_acc, r->Hkv, r->Skv, r->Dqk, b, hk, j);
                if (j < rows_dk)
                    for (int d = 0; d < r->Dqk; d++) store(tdk, b, hk, j, d, valid ? dk[d] * r->scale : 0.0f);
            }
        for (int hv = 0; hv < r->Hv; hv++)
            for (int j = 0; j < r->Skv; j++) {
                bool valid = j < len_kv;
                const float *dv = row_of(r->dv_acc, r->Hv, r->Skv, r->Dv, b, hv, j);
                if (j < rows_dv)
                    for (int d = 0; d < r->Dv; d++) store(tdv, b, hv, j, d, valid ? dv[d] : 0.0f);
            }
    }
}

/* dsink_h = -sum over sequences, then rows ascending, of expf(a_h - LSE_i) D_i (fp32);
 * rows that see no key add nothing. */
static void sink_gradient(const planted_run *r) {
    for (int h = 0; h < r->Hq; h++) {
        float acc = 0.0f;
        for (int b = 0; b < r->B; b++)
            for (int i = 0; i < r->p->seqlens_q[b]; i++) {
                int first, last;
                if (visible_keys_of_row(r, b, i, &first, &last) == 0) continue;
                int64_t row = ((int64_t)b * r->Hq + h) * r->Sq + i;
                acc += af_expf(r->p->sink[h] - r->row_lse[row]) * r->row_delta[row];
            }
#if BUG(DSINK_DROPPED)
        acc = 0.0f; /* the sink logit taken for a constant: no gradient */
#endif
        r->p->dsink[h] = -acc;
    }
}

/* ---- the entry point -------------------------------------------------------------- */

static float *floats(int64_t n) { return calloc(n > 0 ? (size_t)n : 1, sizeof(float)); }

static void run_free(planted_run *r) {
    free(r->q);
    free(r->k);
    free(r->v);
    free(r->dout);
    free(r->dk_acc);
    free(r->dv_acc);
    free(r->row_lse);
    free(r->row_delta);
    free(r->s);
    free(r->prob);
    free(r->dp);
    free(r->acc);
#if BUG(SPLIT_KV_STRIDE)
    free(r->split_acc);
    free(r->split_l);
    free(r->split_m);
#endif
}

#if BUG(WRITES_K)
/* SageAttention 1.0.6's key smoothing, in place: per (b, kv head, d) the mean of the
 * sequence's keys (fp32, s ascending) is subtracted from each key and stored back into
 * the caller's K (softmax is invariant to it, so the outputs stay right). */
static void smooth_k_in_place(planted_run *r) {
    const af_plugin_tensor *k = &r->t->t[AF_PLUGIN_K];
    for (int b = 0; b < r->B; b++) {
        int n = r->p->seqlens_kv[b];
        for (int h = 0; h < r->Hkv && n > 0; h++)
            for (int d = 0; d < r->Dqk; d++) {
                float mean = 0.0f;
                for (int s = 0; s < n; s++) mean += row_of(r->k, r->Hkv, r->Skv, r->Dqk, b, h, s)[d];
                mean /= (float)n;
                for (int s = 0; s < n; s++)
                    store(k, b, h, s, d, row_of(r->k, r->Hkv, r->Skv, r->Dqk, b, h, s)[d] - mean);
            }
    }
}
#endif

/* One run with the scale the kernel was compiled for (the problem's when stateless). */
static int run_planted(const af_plugin_problem *p, const af_plugin_tensors *t, float scale, char *why, size_t cap) {
    int rc = attnfuzz_plugin_supports(p, why, cap);
    if (rc != AF_PLUGIN_OK) return rc;
#if !BUG(METADATA_UNCHECKED)
    if (af_md_check(p, t, why, cap)) return AF_PLUGIN_ERROR;
#endif
    planted_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.t = t;
#if BUG(LAYOUT_ASSUMED)
    af_plugin_tensors assumed = *t;
    assume_common_layouts(p, &assumed);
    r.t = &assumed;
#endif
#if BUG(AXIS_GAPS_IGNORED)
    af_plugin_tensors dense = *t;
    assume_dense_axes(p, &dense);
    r.t = &dense;
#endif
    r.B = p->batch;
    r.Hq = p->heads_q;
    r.Hkv = p->heads_kv;
    r.Sq = p->seqlen_q;
    r.Skv = p->seqlen_kv;
    r.Dqk = p->head_dim_qk;
    r.Dv = p->head_dim_v;
    r.group = p->heads_q / p->heads_kv;
    r.Hv = p->heads_v;
    r.group_v = p->heads_q / p->heads_v;
    r.scale = scale;
#if BUG(SCALE_IGNORED)
    r.scale = (float)(1.0 / sqrt((double)p->head_dim_qk));
#endif
    r.fp16 = p->dtype == AF_PLUGIN_DTYPE_FP16;
    bool backward = (p->flags & AF_PLUGIN_BACKWARD) != 0;
    int64_t nq = (int64_t)r.B * r.Hq * r.Sq, nkv = (int64_t)r.B * r.Hkv * r.Skv;
    r.q = floats(nq * r.Dqk);
    r.k = floats(nkv * r.Dqk);
    int64_t nv = (int64_t)r.B * r.Hv * r.Skv;
    r.v = floats(nv * r.Dv);
    r.s = floats(r.Skv);
    r.prob = floats(r.Skv);
    r.dp = floats(r.Skv);
    r.acc = floats(r.Dqk > r.Dv ? r.Dqk : r.Dv);
    bool ok = r.q && r.k && r.v && r.s && r.prob && r.dp && r.acc;
#if BUG(SPLIT_KV_STRIDE)
    r.n_splits = (r.Skv + SPLIT_KEYS - 1) / SPLIT_KEYS;
    if (r.n_splits > 1) {
        int64_t partials = (int64_t)r.B * r.Sq * r.n_splits * r.Hq;
        r.split_acc = floats(partials * r.Dv);
        r.split_l = floats(partials);
        r.split_m = floats(nq);
        ok = ok && r.split_acc && r.split_l && r.split_m;
    }
#endif
    if (backward) {
        r.dout = floats(nq * r.Dv);
        r.dk_acc = floats(nkv * r.Dqk);
        r.dv_acc = floats(nv * r.Dv);
        ok = ok && r.dout && r.dk_acc && r.dv_acc;
        if (p->dsink && (p->features & AF_PLUGIN_FEAT_DSINK)) {
            r.row_lse = floats(nq);
            r.row_delta = floats(nq);
            ok = ok && r.row_lse && r.row_delta;
        }
    }
    if (!ok) {
        snprintf(why, cap, "%s: out of host memory", planted_names[PLANTED_BUG].name);
        run_free(&r);
        return AF_PLUGIN_RESOURCE;
    }
    gather(&r, AF_PLUGIN_Q, r.q, r.Hq, r.Sq, r.Dqk, p->seqlens_q);
    gather(&r, AF_PLUGIN_K, r.k, r.Hkv, r.Skv, r.Dqk, p->seqlens_kv);
    gather(&r, AF_PLUGIN_V, r.v, r.Hv, r.Skv, r.Dv, p->seqlens_kv);
#if BUG(PAD_TO_TILE)
    gather_tile_tails(&r);
#endif
    if (backward) gather(&r, AF_PLUGIN_DO, r.dout, r.Hq, r.Sq, r.Dv, p->seqlens_q);
#if BUG(FP8_V_BLOCK_SCALE)
    quantise_v_blocks(&r);
#endif
    forward(&r);
    if (backward) run_backward(&r);
    if (r.row_lse) sink_gradient(&r);
#if BUG(WRITES_K)
    smooth_k_in_place(&r);
#endif
    run_free(&r);
    return AF_PLUGIN_OK;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    return run_planted(p, t, p->scale, why, cap);
}

/* ---- the instance: a cache of compiled kernels ---------------------------------------- */

#define KERNEL_CACHE_SLOTS 16

/* A "compiled kernel": what it was compiled for (its key) and the scale baked into it. */
typedef struct {
    bool used;
    int32_t dtype, batch, heads_q, heads_kv, seqlen_q, seqlen_kv, head_dim_qk, head_dim_v;
    char layout[8];
    bool backward;
    uint32_t scale_bits; /* part of the key, except with the planted bug */
    float scale;         /* baked in at compile time */
} planted_kernel;

typedef struct {
    planted_kernel slot[KERNEL_CACHE_SLOTS];
    int next; /* the slot the next compile replaces (round robin) */
} planted_instance;

static planted_kernel kernel_key(const af_plugin_problem *p) {
    planted_kernel k;
    memset(&k, 0, sizeof k);
    k.used = true;
    k.dtype = p->dtype;
    k.batch = p->batch;
    k.heads_q = p->heads_q;
    k.heads_kv = p->heads_kv;
    k.seqlen_q = p->seqlen_q;
    k.seqlen_kv = p->seqlen_kv;
    k.head_dim_qk = p->head_dim_qk;
    k.head_dim_v = p->head_dim_v;
    snprintf(k.layout, sizeof k.layout, "%s", p->layout ? p->layout : "");
    k.backward = (p->flags & AF_PLUGIN_BACKWARD) != 0;
    memcpy(&k.scale_bits, &p->scale, sizeof k.scale_bits);
#if BUG(KERNEL_CACHE_SCALE)
    k.scale_bits = 0; /* the scale left out of the key */
#endif
    k.scale = p->scale;
    return k;
}

static bool same_key(const planted_kernel *a, const planted_kernel *b) {
    return a->used && b->used && a->dtype == b->dtype && a->batch == b->batch && a->heads_q == b->heads_q &&
           a->heads_kv == b->heads_kv && a->seqlen_q == b->seqlen_q && a->seqlen_kv == b->seqlen_kv &&
           a->head_dim_qk == b->head_dim_qk && a->head_dim_v == b->head_dim_v && !strcmp(a->layout, b->layout) &&
           a->backward == b->backward && a->scale_bits == b->scale_bits;
}

/* The cached kernel for p, compiled (into the next slot) on a miss. */
static const planted_kernel *kernel_for(planted_instance *in, const af_plugin_problem *p) {
    planted_kernel want = kernel_key(p);
    for (int i = 0; i < KERNEL_CACHE_SLOTS; i++)
        if (same_key(&in->slot[i], &want)) return &in->slot[i];
    planted_kernel *k = &in->slot[in->next];
    in->next = (in->next + 1) % KERNEL_CACHE_SLOTS;
    *k = want;
    return k;
}

AF_PLUGIN_EXPORT void *attnfuzz_plugin_create(char *why, size_t cap) {
    planted_instance *in = calloc(1, sizeof *in);
    if (!in) snprintf(why, cap, "%s: out of host memory", planted_names[PLANTED_BUG].name);
    return in;
}

AF_PLUGIN_EXPORT void attnfuzz_plugin_destroy(void *instance) { free(instance); }

AF_PLUGIN_EXPORT int attnfuzz_plugin_run_instance(void *instance, const af_plugin_problem *p,
                                                  const af_plugin_tensors *t, char *why, size_t cap) {
    int rc = attnfuzz_plugin_supports(p, why, cap);
    if (rc != AF_PLUGIN_OK) return rc; /* a declined problem compiles nothing */
    return run_planted(p, t, kernel_for(instance, p)->scale, why, cap);
}
