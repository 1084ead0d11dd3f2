/* harness/backends/cpu.c — the "cpu" backend: attention computed the plain
 * Longer than 600 lines on purpose: this file is the reference's recipe (forward, backward,
 * fp8), one specification read top to bottom; the loops and the orders they keep stay together.
 * low-precision way.
 *
 * Two jobs: a backend users can fuzz like any other, and THE low-precision reference
 * whose error against the oracle sets every case's floor
 * (err(kernel) <= 2 * err(cpu) + floor). So it computes what a straightforward
 * fp16/bf16 kernel computes, no better and no worse:
 *
 *   forward, per query row i (visible keys only):
 *     S_j  = (sum_d q_d * k_jd, fp32, d ascending) * scale          fp32
 *     m    = max_j S_j;  P_j = expf(S_j - m);  l = sum_j P_j          fp32, j ascending
 *     O    = (sum_j round_dt(P_j) * v_j, fp32, j ascending) / l      stored rounded (RNE)
 *     LSE  = m + logf(l)                                              stored fp32
 *   backward (flash formulas, fp32 accumulators, P recomputed from the stored LSE):
 *     D_i   = sum_d dO_id * O_id        (O as stored, i.e. rounded)
 *     P_ij  = expf(S_ij - LSE_i);  dP_ij = dO_i . v_j;  dS_ij = P_ij * (dP_ij - D_i)
 *     dV_j  = sum_i round_dt(P_ij) dO_i
 *     dK_j  = scale * sum_i round_dt(dS_ij) q_i
 *     dQ_i  = scale * sum_j round_dt(dS_ij) k_j
 *   round_dt rounds to the case dtype (fp16 or bf16), as a kernel does when it feeds
 *   P or dS to a tensor-core GEMM. dS is rounded for dQ as well as for dK because
 *   FlashAttention and cuDNN feed the same low-precision dS to both GEMMs; a sharper
 *   reference would make the floor too tight for them.
 *   GQA/MQA: query head h reads kv head h / (heads_q / heads_kv); dK and dV sum over the
 *   query heads of the group in one fp32 accumulator (heads ascending, then rows).
 *   heads_v != heads_kv (cuDNN's h_v): query head h reads V head h / (heads_q / heads_v);
 *   dV then sums over the query heads of the V group, in items of its own.
 *   expf and logf are af_expf / af_logf (harness/model/mathf.h: IEEE double arithmetic,
 *   rounded once), not libm's, so that the GPU reference (kernels/ref_gpu.cu) that
 *   serves long sequences gives these very bits.
 *
 * fp8_e4m3 forward follows cuDNN's FP8 graph (cudnn-frontend sdpa_fp8), the
 * recipe written down in model/tensors.h and docs/fp8.md, per query row:
 *     S_j  = (((sum_d q8_d * k8_jd, fp32) * scale) * descale_q) * descale_k     stored E4M3
 *            values q8, k8 (exact products), fp32
 *     m, E_j = expf(S_j - m), Z = sum_j E_j (j ascending), LSE = m + logf(Z)
 *     P8_j = e4m3(E_j / Z * AF_FP8_SCALE_S)                normalised before the cast
 *     O    = e4m3((((sum_j P8_j * v8_j, fp32) * AF_FP8_DESCALE_S) * descale_v) * scale_o)
 *   with scale_o = 1 / t->descale_o (a power of two chosen by the harness).
 * fp8_e4m3 backward follows cuDNN's FP8 backward graph (cudnn-frontend sdpa_fp8_bwd +
 * matmul_fp8; tensors.h), fp32, with the forward's stored E4M3 O and fp32 LSE:
 *     D_i   = ((sum_d do8_d * o8_d) * descale_do) * descale_o
 *     P_ij  = expf(S_ij - LSE_i);  P8 = e4m3(P * AF_FP8_SCALE_S)
 *     dP_ij = ((do8_i . v8_j) * descale_do) * descale_v
 *     dS8   = e4m3((((dP_ij - D_i) * P_ij) * scale) * scale_dp)
 *     dV_j  = e4m3((((sum_i P8_ij do8_i) * AF_FP8_DESCALE_S) * descale_do) * scale_dv)
 *     dK_j  = e4m3((((sum_i dS8_ij q8_i) * descale_dp) * descale_q) * scale_dk)
 *     dQ_i  = e4m3((((sum_j dS8_ij k8_j) * descale_dp) * descale_k) * scale_dq)
 *   the last cast being the E4M3 store; scale_dX = 1 / t->descale_dX, scale_dp = 1 /
 *   t->descale_dp (powers of two chosen by the harness before the run).
 * descale = head (forward): descale_q, descale_k, descale_v are those of (b, kv head).
 * fp8_e5m2 is the same with E5M2 in place of E4M3 for every stored tensor and for dS8;
 * P8 stays E4M3 (model/tensors.h).
 * Features (oracle/feature_spec.h states them; fp16/bf16, sinks fp8 too), in fp32 in this order:
 *     S_j  = softcap * tanhf(S_j / softcap)   then   S_j += bias_ij + (-slope_bh * |j - diag_br|)
 *     (score_mod in place of softcap: S_j = S_j * S_j, sinf(cosf(S_j)) + tanf(b) or
 *     cosf(S_j) * sinf(S_j) + tanf(b), with the factor f' for the backward)
 *     (signed ALiBi: + slope_bh * (j - diag_br); a ..1s bias reads its one row for every i)
 *     sinks: m = max(m, a_h); l += expf(a_h - m) (no value row; fp8: in Z, never in P8); a row that sees no key
 *     stores O = 0 and LSE = a_h (its denominator holds the sink alone)
 *     stats = log2: LSE stored as (m + logf(l)) * log2(e), read back times ln 2
 *     outputs = max_sumexp / max_logit: M_i = max_j S_j (the sink's logit is not a score;
 *     -inf for a row that sees no key), E_i = (sum_j expf(S_j - m)) * expf(m - M_i)
 *     (0 for such a row), max_logit[b, h] = max_i M_i
 *     backward: D_i = dO_i . O_i - g_i (g_i times log2(e) for log2 stats); dS_ij carries
 *     the softcap factor 1 - (tanh)^2 or the score_mod's f' (2 S, -sinf(S) cosf(cosf(S)),
 *     cosf(S)^2 - sinf(S)^2); dsink_h = -sum_(b,i) expf(a_h - LSE_i) D_i (fp32,
 *     sequences then rows ascending, after the dQ pass).
 *     dropout (model/dropout.h's mask M, keep = 1 / (1 - p) in fp32; FlashAttention-2's
 *     order: the dropped P feeds the GEMM, the scale comes at the end, the stats are
 *     the undropped row's): O = (sum_j round_dt(M_j P_j) v_j) / l * keep;
 *     backward dS_ij = P_ij (M_ij keep dP_ij - D_i) (dt), dV_j = keep * sum_i
 *     round_dt(M_ij P_ij) dO_i.
 *     dropout_rng = kernel: the same with the seed XOR AF_CPU_KERNEL_STREAM_KEY as the Philox
 *     key (its own stream), the keep flags of the elements rows see written to
 *     t->dropout_keep and dropout_keep_returned set.
 * kv_dtype (fp8 K, V under fp16 / bf16; forward only): K and V are dequantised on load
 * (stored * descale_k / descale_v, exact: powers of two), then the fp16 / bf16 recipe above.
 * mxfp8: inputs are dequantised to fp32 on load (stored * 2^(E8M0-127)); P is rounded to
 * bf16 before P*V and O stored bf16; the backward is the bf16 recipe above on the
 * dequantised Q, K, V with a bf16 dO (P and dS rounded to bf16 for their GEMMs, bf16
 * gradients), as cudnn-frontend's MXFP8 backward runs dS K, dS^T Q and P^T dO in BF16
 * (cuDNN's MXFP8 is Blackwell-only; this is a plain recipe, somewhat sharper than an
 * mxfp8 kernel).
 *
 * The mask is this file's own code (visible_keys_for_row): backends must not call the
 * oracle's mask_spec, so that an oracle bug and a kernel bug cannot agree.
 *
 * Every element is read from and written to the real laid-out buffers through
 * af_layout_offset / af_storage_load / af_storage_store, so every layout (bshd, sbhd,
 * bhsd, thd, packing, stride gaps, thd gaps, paged KV) is served by the same code and no
 * element outside the tensors' own positions is touched.
 *
 * Determinism: work is split into items whose outputs are disjoint; each output
 * element is computed by one item in a fixed order, whichever thread runs it.
 * Threads: ATTNFUZZ_CPU_THREADS (read when the backend is created), default = cores.
 */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "util/config.h"
#include "util/clock.h"
#include "util/hot.h"
#include "util/parfor.h"
#include "model/dropout.h"
#include "model/features.h"
#include "model/layout.h"
#include "model/tensors.h"
#include "model/mathf.h"
#include "model/numeric.h"

#define CPU_MAX_THREADS 64
#define CPU_ROW_BLOCK   32 /* query rows per work item (forward, dQ) */
#define CPU_KEY_BLOCK   64 /* keys per work item (dK, dV) */
/* dropout_rng = kernel: the cpu backend's own Philox key is the seed XOR this (a fixed odd
 * constant, the 64-bit golden ratio), never attnfuzz's stream */
#define AF_CPU_KERNEL_STREAM_KEY 0x9E3779B97F4A7C15ull

typedef struct {
    int threads;
} cpu_state;

/* One run's problem: sizes, the mask rule and dense fp32 copies of the inputs. */
typedef struct {
    const af_case *c;
    af_tensors *t;
    int B, Hq, Hkv, Hv, Sq, Skv, Dqk, Dv;
    int group;                                      /* heads_q / heads_kv */
    int group_v;                                    /* heads_q / heads_v */
    float scale;                                    /* af_case_scale: fp32 */
    bool round_fp16;                                /* round P and dS to fp16 (else bf16) */
    bool fp8;                                       /* fp8_e4m3: inputs kept as stored E4M3 values, the fp8 recipe */
    af_storage grad_storage;                        /* fp8: the gradients' and dS8's storage (E4M3 or E5M2) */
    float descale_q, descale_k, descale_v, scale_o; /* fp8 only */
    float descale_do, descale_o, descale_dp, scale_dp, scale_dq, scale_dk, scale_dv; /* fp8 backward */
    bool backward;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    /* Dense logical inputs in fp32 (exact for fp16/bf16/mxfp8 within range; for
     * fp8_e4m3 the stored E4M3 values, descales applied by the recipe); rows past a
     * sequence's length are 0 and never read. */
    float *q;     /* (B, Hq,  Sq,  Dqk) */
    float *kt;    /* (B, Hkv, Dqk, Skv)  K transposed: scores become axpy over keys */
    float *v;     /* (B, Hv,  Skv, Dv)  */
    float *k;     /* (B, Hkv, Skv, Dqk)  backward only */
    float *vt;    /* (B, Hv,  Dv,  Skv)  backward only */
    float *dout;  /* (B, Hq,  Sq,  Dv)   backward only (fp8: stored E4M3 values) */
    float *lse;   /* (B, Hq,  Sq)        backward: LSE as stored (-inf: fully masked) */
    float *delta; /* (B, Hq,  Sq)        backward: D_i = dO_i . O_i (- dLSE term) */
    /* Features (model/features.h values), NULL when the case lacks them: */
    float softcap;          /* 0 = none */
    af_score_mod score_mod; /* none, or the nonlinear score_mod (never with softcap) */
    float *sink;            /* (Hq) sink logits */
    float *alibi_slope;     /* (alibi_b, Hq) */
    int alibi_b;            /* 1 or B */
    bool alibi_signed;      /* slope * (j - diag) in place of -slope * |j - diag| */
    float *bias;            /* (bias_b, bias_h, bias_q, Skv) */
    int bias_b, bias_h, bias_q;
    float *dlse; /* (B, Hq, Sq) incoming LSE gradient, in the output's base */
    /* (B, Hq, Sq) each row's score statistics (outputs = max_sumexp / max_logit; NULL
     * otherwise): the max of its visible scores (the sink's logit is not one) and the sum
     * of expf(s_j - max); the forward's rows write them, run_forward copies or reduces. */
    float *stat_max, *stat_sumexp;
    /* Dropout (model/dropout.h): threshold 0 = none */
    uint32_t dropout_threshold;
    uint64_t dropout_seed, dropout_offset;
    float keep_scale; /* 1 / (1 - p) in fp32; 1 without dropout */
    /* dropout_rng = kernel: the (B, Hq, Sq, Skv) keep mask returned (t->dropout_keep),
     * written as the rows draw it; NULL otherwise */
    uint8_t *keep_out;
} cpu_problem;

/* Per-thread scratch, sized for the largest row or block. */
typedef struct {
    float *s;      /* (Skv) scores of one row */
    float *p;      /* (Skv) probabilities (the dV GEMM's operand, see gemm_operand) */
    float *dp;     /* (Skv) dO . v_j, then dS (the dQ/dK GEMMs' operand) */
    float *dt;     /* (Skv) dt/dr of each score: softcap's 1 - tanh^2, a score_mod's f'(r) */
    uint8_t *keep; /* (Skv) dropout keep flags of one row's visible keys (1 without dropout) */
    float *acc;    /* (max(Dqk, Dv)) one output row */
    float *acc_k;  /* (CPU_KEY_BLOCK, Dqk) dK accumulators */
    float *acc_v;  /* (CPU_KEY_BLOCK, Dv)  dV accumulators */
} cpu_scratch;

/* ---- rounding to the case dtype (P and dS before their GEMMs) ------------------- */

/* Round to nearest even through the storage conversions every host and device
 * component shares (harness/model/numeric.h), so "rounded to fp16" means one thing. */
static inline float round_dt(const cpu_problem *pb, float x) {
    return pb->round_fp16 ? af_f16_to_f32(af_f32_to_f16(x)) : af_bf16_to_f32(af_f32_to_bf16(x));
}

/* P or dS as the GEMMs after it see them: rounded to the case dtype, or for fp8_e4m3
 * already the E4M3 value (row_probs_and_dscores casts them with their scales). */
static inline float gemm_operand(const cpu_problem *pb, float x) { return pb->fp8 ? x : round_dt(pb, x); }

static inline float e4m3(float x) { return af_e4m3_to_f32(af_f32_to_e4m3(x)); }

/* ---- the mask (this backend's own copy) ------------------------------------------ */

/* Keys [*first, *last] seen by query row i of a sequence with lengths (len_q, len_kv).
 * Returns the count; 0 when the row is fully masked. The visible set is an interval:
 * [0, len_kv) cut by causal (j <= diag), window_left (j >= diag - L) and window_right
 * (j <= diag + R), attention_chunk N (keys of diag's chunk: N floor(diag / N) .. + N - 1)
 * and the documents (keys of diag's document: none when diag < 0, the keys past the
 * listed documents being one more), with diag = i (top left) or i + len_kv - len_q
 * (bottom right). The global keys come on top (visible_segments). */
static int visible_keys_for_row(const af_case *c, int len_q, int len_kv, int i, int *first, int *last) {
    long long diag = c->align == AF_ALIGN_TOP_LEFT ? (long long)i : (long long)i + len_kv - len_q;
    long long lo = 0, hi = (long long)len_kv - 1;
    if (c->mask == AF_MASK_CAUSAL && diag < hi) hi = diag;
    if (c->window_left != -1 && diag - c->window_left > lo) lo = diag - c->window_left;
    if (c->window_right != -1 && diag + c->window_right < hi) hi = diag + c->window_right;
    if (c->attention_chunk > 0) {
        long long n = c->attention_chunk, start = (diag >= 0 ? diag : diag - n + 1) / n * n;
        if (start > lo) lo = start;
        if (start + n - 1 < hi) hi = start + n - 1;
    }
    if (c->n_documents > 0) {
        long long start = 0, end = 1LL << 40; /* the tail document, unless diag is in a listed one */
        for (int k = 0; k < c->n_documents; k++) {
            if (diag < start + c->documents[k]) {
                end = start + c->documents[k];
                break;
            }
            start += c->documents[k];
        }
        if (diag < 0) hi = -1; /* before key 0: in no document */
        if (start > lo) lo = start;
        if (end - 1 < hi) hi = end - 1;
    }
    if (i < 0 || i >= len_q || lo > hi) {
        *first = 0;
        *last = -1;
        return 0;
    }
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* The drops (block_mask, custom_mask), this backend's own copy: a keep test per element
 * from a splitmix64 hash of (seed, tag, x, y), kept iff its top 32 bits < floor(P 2^32);
 * block: tag 1, (i / BQ, j / BK); element: tag 2, (b 2^32 + i, j). */
static uint64_t drop_hash(uint64_t seed, uint64_t tag, uint64_t x, uint64_t y) {
    uint64_t z = seed + tag * 0x9E3779B97F4A7C15ULL + x * 0xD1B54A32D192ED03ULL + y * 0xABC98388FB8FAC03ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (z ^ (z >> 31)) >> 32;
}

static uint64_t drop_threshold(double p) { return p >= 1.0 ? 1ULL << 32 : (uint64_t)(p * 4294967296.0); }

static bool has_drops(const af_case *c) { return c->block_mask_q > 0 || c->custom_mask_p != 0.0; }

static bool kept(const af_case *c, int b, int i, int j) {
    if (c->block_mask_q > 0 && drop_hash(c->seed, 1, (uint64_t)(i / c->block_mask_q),
                                         (uint64_t)(j / c->block_mask_k)) >= drop_threshold(c->block_mask_p))
        return false;
    if (c->custom_mask_p != 0.0 &&
        drop_hash(c->seed, 2, ((uint64_t)b << 32) | (uint32_t)i, (uint64_t)j) >= drop_threshold(c->custom_mask_p))
        return false;
    return true;
}

/* Scores of keys [first, first + n) of row i that the drops take become -inf: P = 0. */
static void drop_scores(const af_case *c, int b, int i, int first, int n, float *s /* (n) */) {
    if (!has_drops(c)) return;
    for (int j = 0; j < n; j++)
        if (!kept(c, b, i, first + j)) s[j] = -INFINITY;
}

/* Row i's visible keys as up to two segments [first[s], first[s] + count[s]), ascending:
 * the global keys 0 .. min(G, len_kv) - 1 (seen by every row that exists), then the row's
 * own interval, merged when they touch. Returns the number of segments. */
typedef struct {
    int ns, n; /* segments, keys in all */
    int first[2], count[2];
} cpu_keys;

static int visible_segments(const af_case *c, int len_q, int len_kv, int i, cpu_keys *k) {
    int f, l, n = visible_keys_for_row(c, len_q, len_kv, i, &f, &l);
    int g = c->global_keys < len_kv ? c->global_keys : len_kv;
    k->ns = k->n = 0;
    if (i < 0 || i >= len_q) return 0;
    if (g > 0) {
        k->first[0] = 0;
        k->count[0] = g;
        k->ns = 1;
        if (n > 0 && f <= g) { /* touching or overlapping */
            if (l + 1 > g) k->count[0] = l + 1;
            n = 0;
        }
    }
    if (n > 0) {
        k->first[k->ns] = f;
        k->count[k->ns] = n;
        k->ns++;
    }
    for (int s = 0; s < k->ns; s++) k->n += k->count[s];
    return k->ns;
}

/* visible_segments of row i of sequence b, with none when the drops take every key (the
 * row is then fully masked); else the segments hold dropped keys too (drop_scores). */
static int row_segments(const af_case *c, int b, int len_q, int len_kv, int i, cpu_keys *k) {
    visible_segments(c, len_q, len_kv, i, k);
    if (!has_drops(c) || k->n == 0) return k->ns;
    for (int sg = 0; sg < k->ns; sg++)
        for (int j = k->first[sg]; j < k->first[sg] + k->count[sg]; j++)
            if (kept(c, b, i, j)) return k->ns;
    k->ns = k->n = 0;
    return 0;
}

/* The key of the row's j-th visible key. */
static inline int key_at(const cpu_keys *k, int j) {
    return j < k->count[0] ? k->first[0] + j : k->first[1] + (j - k->count[0]);
}

/* ---- inner loops (fixed order; the 8-wide body lets -O2 vectorise them) --------- */

/* out[j] += a * x[j] for j < n.   x, out: (n) */
AF_HOT static void axpy(int n, float a, const float *restrict x, float *restrict out) {
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int u = 0; u < 8; u++) out[j + u] += a * x[j + u];
    for (; j < n; j++) out[j] += a * x[j];
}

/* out[j] = sum_d x[d] * mt[d * ld + j] for j < n, d ascending, fp32.
 * x: (D); mt: (D, ld) with the wanted columns starting at mt; out: (n). */
static void row_times_columns(int D, const float *restrict x, const float *restrict mt, int64_t ld, int n,
                              float *restrict out) {
    for (int j = 0; j < n; j++) out[j] = 0.0f;
    for (int d = 0; d < D; d++) axpy(n, x[d], mt + (int64_t)d * ld, out);
}

/* sum_d x[d] * y[d], d ascending, fp32.  x, y: (D) */
static float dot(int D, const float *x, const float *y) {
    float acc = 0.0f;
    for (int d = 0; d < D; d++) acc += x[d] * y[d];
    return acc;
}

/* ---- dense views of the problem ------------------------------------------------- */

static inline const float *q_row(const cpu_problem *pb, int b, int h, int i) {
    return pb->q + (((int64_t)b * pb->Hq + h) * pb->Sq + i) * pb->Dqk;
}
static inline const float *do_row(const cpu_problem *pb, int b, int h, int i) {
    return pb->dout + (((int64_t)b * pb->Hq + h) * pb->Sq + i) * pb->Dv;
}
static inline const float *kt_head(const cpu_problem *pb, int b, int hk) { /* (Dqk, Skv) */
    return pb->kt + ((int64_t)b * pb->Hkv + hk) * pb->Dqk * pb->Skv;
}
static inline const float *vt_head(const cpu_problem *pb, int b, int hv) { /* (Dv, Skv) */
    return pb->vt + ((int64_t)b * pb->Hv + hv) * pb->Dv * pb->Skv;
}
static inline const float *v_row(const cpu_problem *pb, int b, int hv, int j) {
    return pb->v + (((int64_t)b * pb->Hv + hv) * pb->Skv + j) * pb->Dv;
}
static inline const float *k_row(const cpu_problem *pb, int b, int hk, int j) {
    return pb->k + (((int64_t)b * pb->Hkv + hk) * pb->Skv + j) * pb->Dqk;
}
static inline int64_t row_index(const cpu_problem *pb, int b, int h, int i) { /* (B,Hq,Sq) */
    return ((int64_t)b * pb->Hq + h) * pb->Sq + i;
}

/* Store one row of D values into tensor tid at (b, h, s, 0..D-1). vals: (D) or NULL = 0. */
static void store_row(const cpu_problem *pb, af_tensor_id tid, int b, int h, int s, int D, const float *vals,
                      float mult) {
    const af_tensor_view *view = &pb->t->plan.view[tid];
    void *buf = pb->t->buf[view->buffer];
    for (int d = 0; d < D; d++) {
        int64_t off = af_layout_offset(&pb->t->plan, tid, b, h, s, d);
        af_storage_store(view->storage, buf, off, vals ? vals[d] * mult : 0.0f);
    }
}

static void store_lse(const cpu_problem *pb, int b, int h, int s, float value) {
    const af_tensor_view *view = &pb->t->plan.view[AF_T_LSE];
    int64_t off = af_layout_offset(&pb->t->plan, AF_T_LSE, b, h, s, 0);
    af_storage_store(view->storage, pb->t->buf[view->buffer], off, value);
}

/* Rows a tensor has in memory for sequence b: the actual length when ragged (thd: the
 * rows past it do not exist), else the padded maximum (written with 0 / -inf). */
static int rows_in_memory(const cpu_problem *pb, af_tensor_id tid, int len) {
    const af_tensor_view *view = &pb->t->plan.view[tid];
    return view->ragged ? len : view->S;
}

/* ---- loading inputs ------------------------------------------------------------- */

/* Logical fp32 value of stored input element (b, h, s, d) of Q, K or V. */
static float load_input(const cpu_problem *pb, af_tensor_id tid, int b, int h, int s, int d, int64_t off) {
    const af_tensors *t = pb->t;
    const af_tensor_view *view = &t->plan.view[tid];
    double stored = af_storage_load(view->storage, t->buf[view->buffer], off);
    switch (pb->c->dtype) {
        case AF_DT_FP8_E4M3:
        case AF_DT_FP8_E5M2: /* the stored value; the recipe multiplies the descales in */
            return (float)stored;
        case AF_DT_MXFP8: {
            /* E8M0 scale blocks of 32 along the contraction axis (see tensors.h):
         * Q, K: (b, h, s, ceil(D/32)) along d;  V: (b, h, ceil(S/32), D) along s. */
            const uint8_t *scales = NULL;
            int64_t idx = 0;
            if (tid == AF_T_Q || tid == AF_T_K) {
                int H = tid == AF_T_Q ? pb->Hq : pb->Hkv, S = tid == AF_T_Q ? pb->Sq : pb->Skv;
                int nblk = (pb->Dqk + 31) / 32;
                scales = tid == AF_T_Q ? t->mx_scale_q : t->mx_scale_k;
                idx = (((int64_t)b * H + h) * S + s) * nblk + d / 32;
            } else if (tid == AF_T_V) {
                int nblk = (pb->Skv + 31) / 32;
                scales = t->mx_scale_v;
                idx = (((int64_t)b * pb->Hv + h) * nblk + s / 32) * pb->Dv + d;
            }
            if (!scales) return (float)stored;
            return (float)ldexp(stored, (int)scales[idx] - 127);
        }
        default:
            /* kv_dtype: K, V stored fp8, dequantised on load (vLLM's scaled_convert); the
             * descales are powers of two (gen.c), so the product is exact in fp32 and in the
             * dtype, as the fp16 / bf16 K, V it stands for */
            if (tid == AF_T_K && pb->c->kv_dtype != AF_KV_SAME) return (float)stored * t->descale_k;
            if (tid == AF_T_V && pb->c->kv_dtype != AF_KV_SAME) return (float)stored * t->descale_v;
            return (float)stored;
    }
}

/* Dense copy of row (b, h, s) of tensor tid into out[0..D-1]. */
static void load_row(const cpu_problem *pb, af_tensor_id tid, int b, int h, int s, int D, float *out /* (D) */) {
    for (int d = 0; d < D; d++) {
        int64_t off = af_layout_offset(&pb->t->plan, tid, b, h, s, d);
        out[d] = load_input(pb, tid, b, h, s, d, off);
    }
}

/* ---- work items ----------------------------------------------------------------- */

typedef void (*cpu_item_fn)(const cpu_problem *pb, cpu_scratch *scr, int64_t item);

/* Gather item: items [0, B*Hq) load Q (and dO) of head (b, h); items [B*Hq, B*Hq + B*Hkv)
 * load K of kv head (b, hk) into its dense forms, the next B*Hv items V of V head (b, hv). */
static void gather_item(const cpu_problem *pb, cpu_scratch *scr, int64_t item) {
    if (item < (int64_t)pb->B * pb->Hq) {
        int b = (int)(item / pb->Hq), h = (int)(item % pb->Hq);
        for (int i = 0; i < pb->len_q[b]; i++) {
            load_row(pb, AF_T_Q, b, h, i, pb->Dqk, (float *)q_row(pb, b, h, i));
            if (pb->backward) load_row(pb, AF_T_DO, b, h, i, pb->Dv, (float *)do_row(pb, b, h, i));
        }
        return;
    }
    item -= (int64_t)pb->B * pb->Hq;
    if (item < (int64_t)pb->B * pb->Hkv) {
        int b = (int)(item / pb->Hkv), hk = (int)(item % pb->Hkv);
        float *kt = (float *)kt_head(pb, b, hk);
        for (int j = 0; j < pb->len_kv[b]; j++) {
            float *krow = scr->acc; /* (Dqk) */
            load_row(pb, AF_T_K, b, hk, j, pb->Dqk, krow);
            for (int d = 0; d < pb->Dqk; d++) kt[(int64_t)d * pb->Skv + j] = krow[d];
            if (pb->backward) memcpy((float *)k_row(pb, b, hk, j), krow, sizeof(float) * pb->Dqk);
        }
        return;
    }
    item -= (int64_t)pb->B * pb->Hkv;
    int b = (int)(item / pb->Hv), hv = (int)(item % pb->Hv);
    for (int j = 0; j < pb->len_kv[b]; j++) {
        float *vrow = (float *)v_row(pb, b, hv, j);
        load_row(pb, AF_T_V, b, hv, j, pb->Dv, vrow);
        if (pb->backward) {
            float *vt = (float *)vt_head(pb, b, hv);
            for (int d = 0; d < pb->Dv; d++) vt[(int64_t)d * pb->Skv + j] = vrow[d];
        }
    }
}

/* fp8: the descale of input id (Q, K, V) for sequence b and kv head hk: the case's per
 * (batch, kv head) one with descale = head (FlashAttention 3's q/k/v_descale), else the
 * tensor's. */
static float fp8_descale(const cpu_problem *pb, af_tensor_id id, int b, int hk) {
    if (pb->t->descale_head) return af_head_descale(pb->t, pb->c, id, b, hk);
    return id == AF_T_Q ? pb->descale_q : id == AF_T_K ? pb->descale_k : pb->descale_v;
}

/* A score_mod on n fp32 scores s of sequence b (oracle/feature_spec.h), in fp32 with
 * glibc's sinf, cosf, tanf (as a compiled score_mod evaluates them; judge/verdict.h has
 * their allowance): s = f(s) and dt (n, or NULL) = f'(s). */
static void score_mod_f32(af_score_mod mod, int b, int n, float *s /* (n) */, float *dt /* (n) or NULL */) {
    float tan_b = tanf((float)b); /* one constant per sequence */
    for (int j = 0; j < n; j++) {
        float r = s[j], d;
        if (mod == AF_SCORE_MOD_SQUARED) {
            s[j] = r * r;
            d = 2.0f * r;
        } else if (mod == AF_SCORE_MOD_TRIG) {
            float cr = cosf(r);
            s[j] = sinf(cr) + tan_b;
            d = -sinf(r) * cosf(cr);
        } else {
            float cr = cosf(r), sr = sinf(r);
            s[j] = cr * sr + tan_b;
            d = cr * cr - sr * sr;
        }
        if (dt) dt[j] = d;
    }
}

/* Scores of row q (Dqk) of query (b, h, i) against keys [first, first + n) of kv head
 * (b, hk): s[j] = (q . k_{first+j}) * scale, fp32, then the features (softcap, bias,
 * ALiBi); dt (n, or NULL) gets the softcap factor. The same function serves forward and
 * backward, so the backward's P is recomputed from bit-identical scores. */
static void scores(const cpu_problem *pb, const float *q, int b, int h, int i, int first, int n, float *s /* (n) */,
                   float *dt /* (n) or NULL */) {
    int hk = h / pb->group;
    row_times_columns(pb->Dqk, q, kt_head(pb, b, hk) + first, pb->Skv, n, s);
    for (int j = 0; j < n; j++) s[j] *= pb->scale;
    if (pb->fp8) { /* cudnn-frontend's order: attn_scale, then descale_q, then descale_k */
        float dq = fp8_descale(pb, AF_T_Q, b, hk), dk = fp8_descale(pb, AF_T_K, b, hk);
        for (int j = 0; j < n; j++) s[j] = (s[j] * dq) * dk;
    }
    if (pb->softcap != 0.0f)
        for (int j = 0; j < n; j++) {
            float th = tanhf(s[j] / pb->softcap);
            s[j] = pb->softcap * th;
            if (dt) dt[j] = 1.0f - th * th;
        }
    else if (pb->score_mod != AF_SCORE_MOD_NONE)
        score_mod_f32(pb->score_mod, b, n, s, dt);
    else if (dt)
        for (int j = 0; j < n; j++) dt[j] = 1.0f;
    if (pb->bias) {
        int bb = pb->bias_b == 1 ? 0 : b, hb = pb->bias_h == 1 ? 0 : h, ib = pb->bias_q == 1 ? 0 : i;
        const float *brow = pb->bias + (((int64_t)bb * pb->bias_h + hb) * pb->bias_q + ib) * pb->Skv + first; /* (n) */
        for (int j = 0; j < n; j++) s[j] += brow[j];
    }
    if (pb->alibi_slope) {
        int diag = i + pb->len_kv[b] - pb->len_q[b];
        float slope = pb->alibi_slope[(pb->alibi_b == 1 ? 0 : b) * pb->Hq + h];
        if (pb->alibi_signed)
            for (int j = 0; j < n; j++) s[j] += slope * (float)(first + j - diag);
        else
            for (int j = 0; j < n; j++) s[j] += -slope * (float)abs(first + j - diag);
    }
}

/* The sink logit of head h, -inf without sinks. */
static inline float sink_of(const cpu_problem *pb, int h) { return pb->sink ? pb->sink[h] : -INFINITY; }

/* LSE as stored: natural, or base 2 with stats = log2; and back. */
static inline float lse_to_stored(const cpu_problem *pb, float lse) {
    return pb->c->lse_base2 ? lse * 1.44269504088896340736f : lse;
}
static inline float lse_from_stored(const cpu_problem *pb, float lse) {
    return pb->c->lse_base2 ? lse * 0.69314718055994530942f : lse;
}

/* fp8_e4m3 forward of one row whose scores s (n) are computed: P normalised, scaled by
 * AF_FP8_SCALE_S and cast to E4M3; O from the E4M3 P and stored V, descaled, scaled by
 * scale_o and stored E4M3 (the cast is the store). Returns Z (the row sum, the sink's
 * exp(a_h - m) included: P_j = E_j / Z, the sink has no value row). */
static float forward_row_fp8(const cpu_problem *pb, cpu_scratch *scr, int b, int hv, int first, int n, float m,
                             float sink, float *acc /* (Dv) */) {
    float *e = scr->p, z = 0.0f;
    for (int j = 0; j < n; j++) {
        e[j] = af_expf(scr->s[j] - m);
        z += e[j];
    }
    if (sink > -INFINITY) z += af_expf(sink - m); /* the sink's term: in Z only, never cast to P8 */
    for (int d = 0; d < pb->Dv; d++) acc[d] = 0.0f;
    for (int j = 0; j < n; j++) {
        float p8 = af_e4m3_to_f32(af_f32_to_e4m3((e[j] / z) * AF_FP8_SCALE_S));
        axpy(pb->Dv, p8, v_row(pb, b, hv, first + j), acc);
    }
    float dv = fp8_descale(pb, AF_T_V, b, hv);
    for (int d = 0; d < pb->Dv; d++) acc[d] = ((acc[d] * AF_FP8_DESCALE_S) * dv) * pb->scale_o;
    return z;
}

/* Work item -> (sequence b, query head h, first row r0 of its block of CPU_ROW_BLOCK rows);
 * items run over (b, h, row block) in that order (forward_item and dq_item). */
static void row_block_of(const cpu_problem *pb, int64_t item, int *b, int *h, int *r0) {
    int nrb = (pb->Sq + CPU_ROW_BLOCK - 1) / CPU_ROW_BLOCK;
    *b = (int)(item / ((int64_t)pb->Hq * nrb));
    *h = (int)(item / nrb % pb->Hq);
    *r0 = (int)(item % nrb) * CPU_ROW_BLOCK;
}

/* keep[j] for keys [first, first + n) of row (b, h, i): model/dropout.h's mask (the
 * element index uses the maximum lengths Sq, Skv), all 1 without dropout. */
static void dropout_run(const cpu_problem *pb, unsigned char *keep, int b, int h, int i, int first, int n) {
    if (!pb->dropout_threshold) {
        memset(keep, 1, (size_t)n);
        return;
    }
    uint64_t n0 =
        (((uint64_t)b * (uint64_t)pb->Hq + (uint64_t)h) * (uint64_t)pb->Sq + (uint64_t)i) * (uint64_t)pb->Skv +
        (uint64_t)first;
    af_dropout_keep_run(pb->dropout_seed, pb->dropout_offset, pb->dropout_threshold, n0, n, keep);
    if (pb->keep_out) memcpy(pb->keep_out + n0, keep, (size_t)n); /* the rows' draws: disjoint per item */
}
static void dropout_row(const cpu_problem *pb, cpu_scratch *scr, int b, int h, int i, int first, int n) {
    dropout_run(pb, scr->keep, b, h, i, first, n);
}

/* The score statistics into the outputs the case has: row_max and row_sumexp as the rows
 * left them (rows < len_q), max_logit[b, h] the max over the rows < len_q (-inf when none
 * sees a key). Serial: the row blocks of one head ran on different threads. */
static void score_statistics(const cpu_problem *pb, af_tensors *t) {
    for (int b = 0; b < pb->B; b++)
        for (int h = 0; h < pb->Hq; h++) {
            float ml = -INFINITY;
            for (int i = 0; i < pb->len_q[b]; i++) {
                int64_t r = row_index(pb, b, h, i);
                if (t->row_max) t->row_max[r] = pb->stat_max[r], t->row_sumexp[r] = pb->stat_sumexp[r];
                ml = pb->stat_max[r] > ml ? pb->stat_max[r] : ml;
            }
            if (t->max_logit) t->max_logit[(int64_t)b * pb->Hq + h] = ml;
        }
}

/* Forward item: query rows [r0, r0 + CPU_ROW_BLOCK) of head (b, h): O and LSE. */
static void forward_item(const cpu_problem *pb, cpu_scratch *scr, int64_t item) {
    int b, h, r0;
    row_block_of(pb, item, &b, &h, &r0);
    int hv = h / pb->group_v;
    int len_q = pb->len_q[b], len_kv = pb->len_kv[b];
    int rows_o = rows_in_memory(pb, AF_T_O, len_q), rows_lse = rows_in_memory(pb, AF_T_LSE, len_q);
    for (int i = r0; i < r0 + CPU_ROW_BLOCK && i < pb->Sq; i++) {
        cpu_keys ks;
        row_segments(pb->c, b, len_q, len_kv, i, &ks);
        int n = ks.n, first = ks.ns ? ks.first[0] : 0; /* fp8 has no features: one segment */
        if (n == 0) {                                  /* fully masked, or a padding row past len_q */
            if (i < rows_o) store_row(pb, AF_T_O, b, h, i, pb->Dv, NULL, 1.0f);
            /* a fully masked row's denominator holds the sink alone: LSE = a_h */
            float empty = pb->sink && i < len_q ? lse_to_stored(pb, pb->sink[h]) : -INFINITY;
            if (i < rows_lse) store_lse(pb, b, h, i, empty);
            if (pb->stat_max)
                pb->stat_max[row_index(pb, b, h, i)] = -INFINITY, pb->stat_sumexp[row_index(pb, b, h, i)] = 0;
            continue;
        }
        float *s = scr->s, *acc = scr->acc;
        for (int sg = 0, off = 0; sg < ks.ns; off += ks.count[sg++]) {
            scores(pb, q_row(pb, b, h, i), b, h, i, ks.first[sg], ks.count[sg], s + off, NULL);
            drop_scores(pb->c, b, i, ks.first[sg], ks.count[sg], s + off);
        }
        float m_scores = -INFINITY; /* the scores' max: the sink's logit is not a score */
        for (int j = 0; j < n; j++) m_scores = s[j] > m_scores ? s[j] : m_scores;
        float m = sink_of(pb, h) > m_scores ? sink_of(pb, h) : m_scores;
        if (pb->fp8) {
            float z = forward_row_fp8(pb, scr, b, hv, first, n, m, sink_of(pb, h), acc);
            store_row(pb, AF_T_O, b, h, i, pb->Dv, acc, 1.0f); /* E4M3 store = the cast */
            store_lse(pb, b, h, i, m + af_logf(z));
            continue;
        }
        float l = 0.0f;
        for (int j = 0; j < pb->Dv; j++) acc[j] = 0.0f;
        for (int sg = 0, off = 0; sg < ks.ns; off += ks.count[sg++])
            dropout_run(pb, scr->keep + off, b, h, i, ks.first[sg], ks.count[sg]);
        for (int j = 0; j < n; j++) {
            float p = af_expf(s[j] - m);
            l += p; /* the undropped denominator: the stats ignore the mask */
            if (scr->keep[j]) axpy(pb->Dv, round_dt(pb, p), v_row(pb, b, hv, key_at(&ks, j)), acc);
        }
        if (pb->stat_max) { /* the keys' sum from the scores' own max: not l rescaled from m, whose
                             * terms a sink far above the scores leaves without bits (l 0, the
                             * factor exp(m - m_scores) inf) */
            float se = 0.0f;
            for (int j = 0; m_scores != -INFINITY && j < n; j++) se += af_expf(s[j] - m_scores);
            pb->stat_max[row_index(pb, b, h, i)] = m_scores;
            pb->stat_sumexp[row_index(pb, b, h, i)] = se;
        }
        if (pb->sink) l += af_expf(pb->sink[h] - m); /* in the denominator only */
        for (int d = 0; d < pb->Dv; d++) acc[d] /= l;
        if (pb->dropout_threshold)
            for (int d = 0; d < pb->Dv; d++) acc[d] *= pb->keep_scale;
        store_row(pb, AF_T_O, b, h, i, pb->Dv, acc, 1.0f);
        store_lse(pb, b, h, i, lse_to_stored(pb, m + af_logf(l)));
    }
}

/* What cuDNN's fp8 conversions (satfinite) make of an fp32 value before they round it: an
 * overflowed one (a scale of up to 2^126, chosen for a tensor whose exact values are ~0,
 * times the rounding noise the fp8 recipe leaves) becomes the largest finite, which the
 * fp8 rounding then saturates; never inf (E4M3 has none, E5M2 would keep it). */
static float satfinite(float x) { return isinf(x) ? copysignf(FLT_MAX, x) : x; }

/* x rounded to fp8 storage st as cuDNN's conversions do. */
static float fp8_satfinite(af_storage st, float x) { return af_fp8_round(st, satfinite(x)); }

/* P_ij and dS_ij of row i (head (b, h)) for keys [first, first + n), as the GEMMs use
 * them: p[j] = expf(S - LSE_i), dp[j] = P (dO_i . v_j - D_i) (dS; unrounded, scale
 * applied by the caller). fp8_e4m3 (tensors.h): dP descaled by descale_do, descale_v;
 * dS = ((dP - D) * P) * scale; p[j] = e4m3(P * 448), dp[j] = e4m3(dS * scale_dp). */
static void row_probs_and_dscores(const cpu_problem *pb, cpu_scratch *scr, int b, int h, int i, int first, int n) {
    int hv = h / pb->group_v;
    float lse = pb->lse[row_index(pb, b, h, i)], delta = pb->delta[row_index(pb, b, h, i)];
    scores(pb, q_row(pb, b, h, i), b, h, i, first, n, scr->s, scr->dt);
    drop_scores(pb->c, b, i, first, n, scr->s);
    row_times_columns(pb->Dv, do_row(pb, b, h, i), vt_head(pb, b, hv) + first, pb->Skv, n, scr->dp);
    if (pb->fp8) {
        for (int j = 0; j < n; j++) {
            float p = af_expf(scr->s[j] - lse);
            float dp = (scr->dp[j] * pb->descale_do) * pb->descale_v;
            float ds = ((dp - delta) * p) * pb->scale;
            scr->p[j] = e4m3(p * AF_FP8_SCALE_S);
            scr->dp[j] = fp8_satfinite(pb->grad_storage, ds * pb->scale_dp); /* dS8 in the gradients' fp8 */
        }
        return;
    }
    dropout_row(pb, scr, b, h, i, first, n);
    for (int j = 0; j < n; j++) {
        float p = af_expf(scr->s[j] - lse);
        float dp = scr->keep[j] ? (pb->dropout_threshold ? scr->dp[j] * pb->keep_scale : scr->dp[j]) : 0.0f;
        scr->p[j] = scr->keep[j] ? p : 0.0f; /* the dV GEMM's operand: the dropped P (keep applied at the store) */
        scr->dp[j] = p * (dp - delta) * scr->dt[j];
    }
}

/* fp8_e4m3: a gradient row accumulated from E4M3 operands, descaled by the two operand
 * descales and scaled to its output scale, in that order (matmul_fp8); the E4M3 cast is
 * the store. acc: (D), in place. */
static void fp8_grad_row(int D, float *acc, float descale_a, float descale_b, float scale_c) {
    for (int d = 0; d < D; d++) acc[d] = satfinite(((acc[d] * descale_a) * descale_b) * scale_c); /* stored fp8 */
}

/* Backward item 1: rows [r0, r0 + CPU_ROW_BLOCK) of head (b, h): LSE and D into the
 * problem (needed by item 2), and dQ. */
static void dq_item(const cpu_problem *pb, cpu_scratch *scr, int64_t item) {
    int b, h, r0;
    row_block_of(pb, item, &b, &h, &r0);
    int hk = h / pb->group;
    int len_q = pb->len_q[b], len_kv = pb->len_kv[b];
    int rows_dq = rows_in_memory(pb, AF_T_DQ, len_q);
    const af_tensors *t = pb->t;
    const af_tensor_view *ov = &t->plan.view[AF_T_O], *lv = &t->plan.view[AF_T_LSE];
    for (int i = r0; i < r0 + CPU_ROW_BLOCK && i < pb->Sq; i++) {
        cpu_keys ks;
        row_segments(pb->c, b, len_q, len_kv, i, &ks);
        int n = ks.n;
        float *lse = &pb->lse[row_index(pb, b, h, i)];
        float *delta = &pb->delta[row_index(pb, b, h, i)];
        *lse = -INFINITY;
        *delta = 0.0f;
        if (n == 0) { /* contributes nothing; dQ row = 0 */
            if (i < rows_dq) store_row(pb, AF_T_DQ, b, h, i, pb->Dqk, NULL, 1.0f);
            continue;
        }
        *lse = lse_from_stored(pb, (float)af_storage_load(lv->storage, t->buf[lv->buffer],
                                                          af_layout_offset(&t->plan, AF_T_LSE, b, h, i, 0)));
        float *o = scr->acc; /* (Dv) O as stored */
        for (int d = 0; d < pb->Dv; d++)
            o[d] =
                (float)af_storage_load(ov->storage, t->buf[ov->buffer], af_layout_offset(&t->plan, AF_T_O, b, h, i, d));
        *delta = dot(pb->Dv, do_row(pb, b, h, i), o);
        if (pb->fp8) *delta = (*delta * pb->descale_do) * pb->descale_o; /* E4M3 dO and O */
        if (pb->dlse) /* the incoming LSE gradient, turned into the natural base's */
            *delta -= pb->dlse[row_index(pb, b, h, i)] * (pb->c->lse_base2 ? 1.44269504088896340736f : 1.0f);
        float *acc = scr->acc; /* (Dqk) */
        for (int d = 0; d < pb->Dqk; d++) acc[d] = 0.0f;
        for (int sg = 0; sg < ks.ns; sg++) { /* per key, given LSE and D: segment by segment */
            int first = ks.first[sg];
            row_probs_and_dscores(pb, scr, b, h, i, first, ks.count[sg]);
            for (int j = 0; j < ks.count[sg]; j++)
                axpy(pb->Dqk, gemm_operand(pb, scr->dp[j]), k_row(pb, b, hk, first + j), acc);
        }
        if (pb->fp8) {
            fp8_grad_row(pb->Dqk, acc, pb->descale_dp, pb->descale_k, pb->scale_dq);
            store_row(pb, AF_T_DQ, b, h, i, pb->Dqk, acc, 1.0f);
        } else {
            store_row(pb, AF_T_DQ, b, h, i, pb->Dqk, acc, pb->scale);
        }
    }
}

/* Keys [j0, j0 + CPU_KEY_BLOCK) of head (b, hk) of `heads`: dK (want_k) and / or dV
 * (want_v), summed over the `group` query heads that read it (ascending) and their rows. */
static void key_block(const cpu_problem *pb, cpu_scratch *scr, int64_t item, int heads, int group, bool want_k,
                      bool want_v) {
    int nkb = (pb->Skv + CPU_KEY_BLOCK - 1) / CPU_KEY_BLOCK;
    int b = (int)(item / ((int64_t)heads * nkb));
    int hk = (int)(item / nkb % heads); /* the K head (want_k) or the V head (V alone) */
    int j0 = (int)(item % nkb) * CPU_KEY_BLOCK;
    int len_q = pb->len_q[b], len_kv = pb->len_kv[b];
    int j_end = j0 + CPU_KEY_BLOCK < len_kv ? j0 + CPU_KEY_BLOCK : len_kv; /* exclusive */
    float *acc_k = scr->acc_k, *acc_v = scr->acc_v;                        /* (KEY_BLOCK, Dqk), (KEY_BLOCK, Dv) */
    memset(acc_k, 0, sizeof(float) * CPU_KEY_BLOCK * pb->Dqk);
    memset(acc_v, 0, sizeof(float) * CPU_KEY_BLOCK * pb->Dv);
    for (int h = hk * group; h < (hk + 1) * group && j0 < j_end; h++) {
        for (int i = 0; i < len_q; i++) {
            cpu_keys ks;
            row_segments(pb->c, b, len_q, len_kv, i, &ks);
            for (int sg = 0; sg < ks.ns; sg++) {
                int first = ks.first[sg], last = ks.first[sg] + ks.count[sg] - 1;
                if (first < j0) first = j0;
                if (last > j_end - 1) last = j_end - 1;
                if (first > last) continue;
                int n = last - first + 1;
                row_probs_and_dscores(pb, scr, b, h, i, first, n);
                for (int j = 0; j < n; j++) {
                    int jj = first + j - j0;
                    if (want_v)
                        axpy(pb->Dv, gemm_operand(pb, scr->p[j]), do_row(pb, b, h, i), acc_v + (int64_t)jj * pb->Dv);
                    if (want_k)
                        axpy(pb->Dqk, gemm_operand(pb, scr->dp[j]), q_row(pb, b, h, i), acc_k + (int64_t)jj * pb->Dqk);
                }
            }
        }
    }
    int rows_dk = rows_in_memory(pb, AF_T_DK, len_kv), rows_dv = rows_in_memory(pb, AF_T_DV, len_kv);
    float mult_k = pb->scale;
    if (pb->fp8) { /* descales and output scales, in matmul_fp8's order (tensors.h) */
        mult_k = 1.0f;
        for (int j = j0; j < j_end; j++) {
            fp8_grad_row(pb->Dqk, acc_k + (int64_t)(j - j0) * pb->Dqk, pb->descale_dp, pb->descale_q, pb->scale_dk);
            fp8_grad_row(pb->Dv, acc_v + (int64_t)(j - j0) * pb->Dv, AF_FP8_DESCALE_S, pb->descale_do, pb->scale_dv);
        }
    }
    for (int j = j0; j < j0 + CPU_KEY_BLOCK && j < pb->Skv; j++) {
        bool valid = j < len_kv; /* keys past len_kv of padded layouts get 0 */
        if (want_k && j < rows_dk)
            store_row(pb, AF_T_DK, b, hk, j, pb->Dqk, valid ? acc_k + (int64_t)(j - j0) * pb->Dqk : NULL, mult_k);
        if (want_v && j < rows_dv)
            store_row(pb, AF_T_DV, b, hk, j, pb->Dv, valid ? acc_v + (int64_t)(j - j0) * pb->Dv : NULL,
                      pb->fp8 ? 1.0f : pb->keep_scale);
    }
}

/* Backward item 2: keys [j0, j0 + CPU_KEY_BLOCK) of kv head (b, hk): dK and dV, summed
 * over the query heads of the group (ascending) and their rows (ascending); dK alone when
 * V has its own heads (dv_item then). */
static void dkdv_item(const cpu_problem *pb, cpu_scratch *scr, int64_t item) {
    key_block(pb, scr, item, pb->Hkv, pb->group, true, pb->Hv == pb->Hkv);
}

/* Backward item 3 (heads_v != heads_kv): keys of V head (b, hv): dV over its query heads. */
static void dv_item(const cpu_problem *pb, cpu_scratch *scr, int64_t item) {
    key_block(pb, scr, item, pb->Hv, pb->group_v, false, true);
}

/* ---- deterministic parallel-for (util/parfor.h) ---------------------------------- */

typedef struct {
    const cpu_problem *pb;
    cpu_scratch *scr; /* one per thread, handed out as the threads start */
    cpu_item_fn fn;
    atomic_int next_scratch;
} cpu_pass;

static void *pass_thread_init(void *ctx) {
    cpu_pass *x = ctx;
    return &x->scr[atomic_fetch_add(&x->next_scratch, 1)];
}

static void pass_item(void *ctx, void *state, long i) {
    const cpu_pass *x = ctx;
    x->fn(x->pb, state, (int64_t)i);
}

/* Run fn on items [0, n) with up to n_threads threads, each with a scratch of scr. Which
 * thread takes an item does not matter: items write disjoint outputs. */
static void parallel_for(const cpu_problem *pb, cpu_scratch *scr, int n_threads, cpu_item_fn fn, int64_t n) {
    static const af_parfor_job job = {pass_thread_init, pass_item, NULL};
    cpu_pass x = {pb, scr, fn, 0};
    atomic_init(&x.next_scratch, 0);
    af_parfor_run(&job, &x, (long)n, n_threads);
}

/* ---- the backend ---------------------------------------------------------------- */

static int cpu_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    if (why && cap) why[0] = '\0';
    return 0;
}

static af_run_status cpu_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    if (why && cap) why[0] = '\0';
    if (c->batch < 1 || c->batch > AF_MAX_BATCH || c->heads_kv < 1 || c->heads_q < 1 || c->heads_q % c->heads_kv != 0 ||
        c->heads_q % af_case_heads_v(c) != 0 || c->head_dim_qk < 1 || c->head_dim_v < 1 || c->seqlen_q < 0 ||
        c->seqlen_kv < 0) {
        snprintf(why, cap, "cpu backend: invalid shape (batch %d, heads %d/%d, head dims %d/%d)", c->batch, c->heads_q,
                 c->heads_kv, c->head_dim_qk, c->head_dim_v);
        return AF_RUN_DECLINED;
    }
    if (c->cp_size > 1) {
        snprintf(why, cap, "cpu backend: context parallelism (cp %d) needs a CP wrapper backend", c->cp_size);
        return AF_RUN_DECLINED;
    }
    return AF_RUN_OK;
}

static void scratch_free(cpu_scratch *s) {
    free(s->s);
    free(s->p);
    free(s->dp);
    free(s->dt);
    free(s->keep);
    free(s->acc);
    free(s->acc_k);
    free(s->acc_v);
    memset(s, 0, sizeof *s);
}

static int scratch_alloc(cpu_scratch *s, const cpu_problem *pb) {
    size_t skv = (size_t)(pb->Skv > 0 ? pb->Skv : 1);
    size_t dmax = (size_t)(pb->Dqk > pb->Dv ? pb->Dqk : pb->Dv);
    s->s = malloc(sizeof(float) * skv);
    s->p = malloc(sizeof(float) * skv);
    s->dp = malloc(sizeof(float) * skv);
    s->dt = malloc(sizeof(float) * skv);
    s->keep = malloc(skv);
    s->acc = malloc(sizeof(float) * dmax);
    s->acc_k = malloc(sizeof(float) * CPU_KEY_BLOCK * (size_t)pb->Dqk);
    s->acc_v = malloc(sizeof(float) * CPU_KEY_BLOCK * (size_t)pb->Dv);
    return s->s && s->p && s->dp && s->dt && s->keep && s->acc && s->acc_k && s->acc_v ? 0 : -1;
}

static void problem_free(cpu_problem *pb) {
    free(pb->q);
    free(pb->kt);
    free(pb->v);
    free(pb->k);
    free(pb->vt);
    free(pb->dout);
    free(pb->lse);
    free(pb->delta);
    free(pb->sink);
    free(pb->alibi_slope);
    free(pb->bias);
    free(pb->dlse);
    free(pb->stat_max);
    free(pb->stat_sumexp);
}

static float *floats(int64_t n);

/* The feature inputs of the case as fp32 arrays (model/features.h). 0 or -1 (memory). */
static int load_features(cpu_problem *pb, const af_case *c) {
    pb->softcap = (float)c->softcap;
    pb->score_mod = c->score_mod;
    pb->dropout_threshold = af_dropout_threshold(c->dropout_p);
    pb->dropout_seed = c->dropout_seed;
    pb->dropout_offset = c->dropout_offset;
    /* dropout_rng = kernel: the cpu backend's own stream, model/dropout.h's mapping under
     * another Philox key (AF_CPU_KERNEL_STREAM_KEY), so no element follows attnfuzz's
     * stream by design; it returns the mask (tensors.h) */
    if (c->dropout_rng == AF_DROPOUT_RNG_KERNEL) {
        pb->dropout_seed ^= AF_CPU_KERNEL_STREAM_KEY;
        pb->keep_out = pb->t->dropout_keep;
    }
    pb->keep_scale = pb->dropout_threshold ? (float)(1.0 / (1.0 - c->dropout_p)) : 1.0f;
    if (c->softmax != AF_SOFTMAX_VANILLA) {
        if (!(pb->sink = floats(pb->Hq))) return -1;
        for (int h = 0; h < pb->Hq; h++) pb->sink[h] = af_feature_sink(c, h);
    }
    if (c->alibi) {
        pb->alibi_b = af_feature_alibi_batch(c);
        pb->alibi_signed = c->alibi == AF_ALIBI_SIGNED;
        if (!(pb->alibi_slope = floats((int64_t)pb->alibi_b * pb->Hq))) return -1;
        for (int b = 0; b < pb->alibi_b; b++)
            for (int h = 0; h < pb->Hq; h++) pb->alibi_slope[b * pb->Hq + h] = af_feature_alibi_slope(c, b, h);
    }
    af_feature_bias_dims(c, &pb->bias_b, &pb->bias_h);
    pb->bias_q = af_feature_bias_rows(c);
    if (pb->bias_b) {
        if (!(pb->bias = floats((int64_t)pb->bias_b * pb->bias_h * pb->bias_q * pb->Skv))) return -1;
        float *x = pb->bias;
        for (int b = 0; b < pb->bias_b; b++)
            for (int h = 0; h < pb->bias_h; h++)
                for (int i = 0; i < pb->bias_q; i++)
                    for (int j = 0; j < pb->Skv; j++) *x++ = af_tensors_bias_at(c, pb->t, b, h, i, j);
    }
    if (c->dlse && c->backward) {
        if (!(pb->dlse = floats((int64_t)pb->B * pb->Hq * pb->Sq))) return -1;
        for (int b = 0; b < pb->B; b++)
            for (int h = 0; h < pb->Hq; h++)
                for (int i = 0; i < pb->Sq; i++) pb->dlse[row_index(pb, b, h, i)] = af_feature_dlse(c, b, h, i);
    }
    return 0;
}

/* dsink_h = -sum over sequences, then rows (ascending) of expf(a_h - LSE_i) D_i, fp32,
 * from the dQ pass's LSE and D; rows that see no key contribute nothing. */
static void sink_gradient(const cpu_problem *pb, float *dsink /* (Hq) */) {
    for (int h = 0; h < pb->Hq; h++) {
        float acc = 0.0f;
        for (int b = 0; b < pb->B; b++)
            for (int i = 0; i < pb->len_q[b]; i++) {
                float lse = pb->lse[row_index(pb, b, h, i)];
                if (lse == -INFINITY) continue;
                acc += af_expf(pb->sink[h] - lse) * pb->delta[row_index(pb, b, h, i)];
            }
        dsink[h] = -acc;
    }
}

/* calloc of n floats; NULL on overflow or failure. Zeroed: padding rows stay 0. */
static float *floats(int64_t n) {
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(float)) return NULL;
    return calloc(n > 0 ? (size_t)n : 1, sizeof(float));
}

/* forward: compute O and LSE first (a normal run); false: backward only, from the O and
 * LSE already in t (backward_given). */
static af_run_status cpu_compute(af_backend *be, const af_case *c, af_tensors *t, af_run_info *info, bool forward,
                                 char *why, size_t cap) {
    double t0 = af_clock_mono();
    if (info) {
        memset(info, 0, sizeof *info);
        info->engine[0] = '\0';
        info->workspace_bytes = 0;
    }
    af_run_status st = cpu_supports(be, c, why, cap);
    if (st != AF_RUN_OK) return st;

    cpu_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.c = c;
    pb.t = t;
    pb.B = c->batch;
    pb.Hq = c->heads_q;
    pb.Hkv = c->heads_kv;
    pb.Sq = c->seqlen_q;
    pb.Skv = c->seqlen_kv;
    pb.Dqk = c->head_dim_qk;
    pb.Dv = c->head_dim_v;
    pb.group = c->heads_q / c->heads_kv;
    pb.Hv = af_case_heads_v(c);
    pb.group_v = c->heads_q / pb.Hv;
    pb.scale = af_case_scale(c);
    pb.round_fp16 = c->dtype == AF_DT_FP16;
    pb.fp8 = af_dtype_is_fp8_tensor(c->dtype);
    pb.grad_storage = af_tensor_storage(c->dtype, AF_T_DQ);
    pb.descale_q = t->descale_q;
    pb.descale_k = t->descale_k;
    pb.descale_v = t->descale_v;
    pb.scale_o = 1.0f / t->descale_o;
    pb.descale_do = t->descale_do;
    pb.descale_o = t->descale_o;
    pb.descale_dp = t->descale_dp;
    pb.scale_dp = 1.0f / t->descale_dp;
    pb.scale_dq = 1.0f / t->descale_dq;
    pb.scale_dk = 1.0f / t->descale_dk;
    pb.scale_dv = 1.0f / t->descale_dv;
    pb.backward = c->backward;
    for (int b = 0; b < pb.B; b++) {
        pb.len_q[b] = af_case_len_q(c, b);
        pb.len_kv[b] = af_case_len_kv(c, b);
    }
    int64_t nq = (int64_t)pb.B * pb.Hq * pb.Sq, nkv = (int64_t)pb.B * pb.Hkv * pb.Skv;
    int64_t nv = (int64_t)pb.B * pb.Hv * pb.Skv;
    pb.q = floats(nq * pb.Dqk);
    pb.kt = floats(nkv * pb.Dqk);
    pb.v = floats(nv * pb.Dv);
    bool ok = pb.q && pb.kt && pb.v && load_features(&pb, c) == 0;
    if (forward && (t->row_max || t->max_logit)) {
        pb.stat_max = floats(nq);
        pb.stat_sumexp = floats(nq);
        ok = ok && pb.stat_max && pb.stat_sumexp;
    }
    if (pb.backward) {
        pb.k = floats(nkv * pb.Dqk);
        pb.vt = floats(nv * pb.Dv);
        pb.dout = floats(nq * pb.Dv);
        pb.lse = floats(nq);
        pb.delta = floats(nq);
        ok = ok && pb.k && pb.vt && pb.dout && pb.lse && pb.delta;
    }
    cpu_state *state = be->state;
    int n_threads = state && state->threads > 0 ? state->threads : 1;
    cpu_scratch scr[CPU_MAX_THREADS];
    memset(scr, 0, sizeof scr);
    for (int k = 0; k < n_threads && ok; k++) ok = scratch_alloc(&scr[k], &pb) == 0;
    if (!ok) {
        snprintf(why, cap, "cpu backend: out of host memory for %lld query and %lld key rows", (long long)nq,
                 (long long)nkv);
        for (int k = 0; k < n_threads; k++) scratch_free(&scr[k]);
        problem_free(&pb);
        return AF_RUN_RESOURCE;
    }

    int64_t n_row_items = (int64_t)pb.B * pb.Hq * ((pb.Sq + CPU_ROW_BLOCK - 1) / CPU_ROW_BLOCK);
    int64_t n_key_items = (int64_t)pb.B * pb.Hkv * ((pb.Skv + CPU_KEY_BLOCK - 1) / CPU_KEY_BLOCK);
    parallel_for(&pb, scr, n_threads, gather_item, (int64_t)pb.B * (pb.Hq + pb.Hkv + pb.Hv));
    if (forward) parallel_for(&pb, scr, n_threads, forward_item, n_row_items);
    if (pb.stat_max) score_statistics(&pb, t);
    if (pb.backward) {
        parallel_for(&pb, scr, n_threads, dq_item, n_row_items); /* also fills lse, delta */
        parallel_for(&pb, scr, n_threads, dkdv_item, n_key_items);
        if (pb.Hv != pb.Hkv)
            parallel_for(&pb, scr, n_threads, dv_item,
                         (int64_t)pb.B * pb.Hv * ((pb.Skv + CPU_KEY_BLOCK - 1) / CPU_KEY_BLOCK));
        if (t->dsink && pb.sink) sink_gradient(&pb, t->dsink);
    }

    for (int k = 0; k < n_threads; k++) scratch_free(&scr[k]);
    if (pb.keep_out) t->dropout_keep_returned = true;
    problem_free(&pb);
    if (info) info->seconds = af_clock_mono() - t0;
    return AF_RUN_OK;
}

static af_run_status cpu_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                             char *why, size_t cap) {
    (void)engine;
    if (af_layout_metadata_check(c, &t->plan, why, cap)) return AF_RUN_ERROR;
    return cpu_compute(be, c, t, info, true, why, cap);
}

static af_run_status cpu_backward_given(af_backend *be, const af_case *c, const char *engine, af_tensors *t,
                                        af_run_info *info, char *why, size_t cap) {
    (void)engine;
    if (!c->backward) {
        snprintf(why, cap, "cpu backend: backward_given on a forward-only case");
        return AF_RUN_ERROR;
    }
    if (af_layout_metadata_check(c, &t->plan, why, cap)) return AF_RUN_ERROR;
    return cpu_compute(be, c, t, info, false, why, cap);
}

static void cpu_destroy(af_backend *be) {
    if (!be) return;
    free(be->state);
    free(be);
}

static af_backend *cpu_fresh(af_backend *be, char *why, size_t cap) {
    (void)be;
    af_backend *nb = af_backend_cpu_new();
    if (!nb) snprintf(why, cap, "cpu backend: out of memory for a fresh instance");
    return nb;
}

af_backend *af_backend_cpu_new(void) {
    af_backend *be = calloc(1, sizeof *be);
    cpu_state *state = calloc(1, sizeof *state);
    if (!be || !state) {
        free(be);
        free(state);
        return NULL;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = af_config_get(AF_CFG_CPU_THREADS);
    if (env && *env) cores = strtol(env, NULL, 10);
    state->threads = cores < 1 ? 1 : cores > CPU_MAX_THREADS ? CPU_MAX_THREADS : (int)cores;
    be->name = "cpu";
    be->description = "plain low-precision attention on the host (the reference that sets the "
                      "error floor); deterministic";
    be->flags = AF_BACKEND_DETERMINISTIC;
    be->state = state;
    be->available = cpu_available;
    be->supports = cpu_supports;
    be->engines = NULL;
    be->run = cpu_run;
    be->backward_given = cpu_backward_given;
    be->destroy = cpu_destroy;
    be->fresh = cpu_fresh;
    return be;
}
