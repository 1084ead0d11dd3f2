/* flash_fp8.c — a correct flash-style fp8_e4m3 / fp8_e5m2 attention (the plugin "flash_fp8") and,
 * built from the same source with -DFP8_BUG=FP8_<BUG>, small defects the fp8 per-row
 * criterion (judge/verdict.h) must catch ("flash_fp8_bug:<bug>").
 *
 * The ABI (plugin.h, docs/fp8.md): Q, K, V, dO are stored E4M3 with a per-tensor descale
 * (logical = stored * descale); O, dQ, dK, dV are E4M3 outputs written e4m3(X / descale).
 * flash_fp8 follows docs/fp8.md's recipe where the ABI fixes it and rounds the way an
 * FA3-style fp8 kernel does where it does not:
 *   forward, row i of head (b, h): s_j = ((q8 . k8_j, fp32, 16-wide chunks) * scale)
 *     * descale_q * descale_k; x_j = s_j log2 e (exp2 domain); keys split in 256s above
 *     256 (split-KV), each split walked in 64-key tiles (online softmax):
 *       m' = max(m, max_tile x); acc, l *= exp2(m - m');
 *       p_j = exp2f(x_j - m') (fp32, unnormalised); l += p_j; acc += e4m3(448 p_j) v8_j
 *     split s: O_s = acc / l / 448 * descale_v, lse2_s = m + log2 l; merged in log-sum-exp
 *     O stored e4m3(O / descale_o); LSE = lse2 ln 2 (fp32)
 *   backward, from the O8 and LSE as stored:
 *     D_i = (do8_i . o8_i) * descale_do * descale_o; P_ij = exp2f(x_ij - LSE_i log2 e)
 *     dP_ij = (do8_i . v8_j) * descale_do * descale_v; dS_ij = P_ij (dP_ij - D_i) scale
 *     dS8 = e4m3(dS * scale_i), scale_i the kernel's own per row (the ABI gives no dS
 *     scale): the largest power of two with 2 max_j |dS_ij| scale_i <= 448
 *     dV_j = sum_i e4m3(448 P_ij) do8_i / 448 * descale_do;  dQ_i = sum_j dS8_ij k8_j /
 *     scale_i * descale_k;  dK_j = sum_i (dS8_ij / scale_i) q8_i * descale_q (fp32 sums
 *     per 64-key / 64-row tile, tile sums then added); stored e4m3(dX / descale_dX)
 *   GQA: query head h reads kv head h / (heads_q / heads_kv).
 *   fp8_e5m2: the same with every stored tensor and dS8 in E5M2 (dS's row scale up to
 *     57344 in place of 448); P stays E4M3 at 448, as in cuDNN's FP8 graphs.
 *
 * The bugs (each passes the per-tensor fp8 rule on the cases of
 * ci/tests/test_criterion_fp8.sh; the test shows it):
 *   FP8_ROW_SCALE     the last query row of (b 0, h 0): O and dQ x 1.5
 *   FP8_HEAD_DESCALE  the last query head's dQ descaled for E4M3FNUZ (max 240) instead of
 *                     E4M3FN (max 448): x 448/240
 *   FP8_LAST_KEY_DK   dK of the last key of every sequence and kv head x 2
 *   FP8_E5M2_SAT_448  fp8_e5m2 outputs saturated at E4M3's 448 before the E5M2 cast (an
 *                     E4M3 clamp left in a kernel that gained E5M2; a campaign finds it)
 *   FP8_O_AS_FP8      out_dtype ignored: an fp16 / bf16 O written as E4M3 bytes (one
 *                     byte per element, at the element's index), as a kernel that
 *                     assumes fp8 in, fp8 out (or a version-5 plugin) would
 *   FP8_DESCALE_BATCH0  per-head descales (descale = head, FA3's (batch, heads_kv) arrays)
 *                     read at sequence 0 for every sequence: an array indexed by head alone
 * O of storage fp16 / bf16 (out_dtype) is written as is (descale 1, no output scale).
 * descale = head (ABI 7, forward): Q's, K's, V's descale of (b, kv head) in place of the
 * tensor's in the scores and O above.
 * and one plumbing bug, which the comparison sees wherever descale_v != 1 and the scale
 * probe (judge/probes/scales.c) sees without an oracle:
 *   FP8_DESCALE_V_IGNORED  descale_v fixed at 1.0 (scales fixed at 1.0, never plumbed:
 *                     research/anchors-2026-12-01.md, flashinfer #4979, vLLM PR #42580)
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/plugin.h"
#include "model/numeric.h"

#define FP8_NONE              0
#define FP8_ROW_SCALE         1
#define FP8_HEAD_DESCALE      2
#define FP8_LAST_KEY_DK       3
#define FP8_DESCALE_V_IGNORED 4
#define FP8_E5M2_SAT_448      5
#define FP8_O_AS_FP8          6
#define FP8_DESCALE_BATCH0    7

#ifndef FP8_BUG
#error "build with -DFP8_BUG=FP8_<BUG> (see harness/plugins/CMakeLists.txt)"
#endif
#define BUG(x) (FP8_BUG == FP8_##x)

#define TILE    64     /* keys per online-softmax tile, rows / keys per backward tile */
#define SPLIT   256    /* keys per split-KV split */
#define MMA_K   16     /* chunk of the contractions */
#define SCALE_S 448.0f /* P in [0, 1] -> [0, 448] before the E4M3 cast */

static const struct {
    const char *name;
    const char *description;
} fp8_names[] = {
    {"flash_fp8", "correct flash-style fp8_e4m3 / fp8_e5m2 attention: online softmax, split-KV, E4M3 P, fp8 dS"},
    {"flash_fp8_bug:row_scale", "flash_fp8 with the last query row of O and dQ x 1.5"},
    {"flash_fp8_bug:head_descale", "flash_fp8 with the last head's dQ descaled for E4M3FNUZ (x 448/240)"},
    {"flash_fp8_bug:last_key_dk", "flash_fp8 with dK of each sequence's last key x 2"},
    {"flash_fp8_bug:descale_v_ignored", "flash_fp8 with descale_v fixed at 1.0"},
    {"flash_fp8_bug:e5m2_sat_448", "flash_fp8 with fp8_e5m2 outputs saturated at E4M3's 448"},
    {"flash_fp8_bug:o_as_fp8", "flash_fp8 writing an fp16 / bf16 O (out_dtype) as E4M3 bytes"},
    {"flash_fp8_bug:descale_batch0", "flash_fp8 reading the per-head descales of sequence 0 for every sequence"},
};

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static af_plugin_info info;
    info.abi_version = ATTNFUZZ_PLUGIN_ABI_VERSION;
    info.flags = AF_PLUGIN_DETERMINISTIC | (FP8_BUG != FP8_NONE ? AF_PLUGIN_PLANTED : 0u);
    info.name = fp8_names[FP8_BUG].name;
    info.description = fp8_names[FP8_BUG].description;
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    if (p->dtype != AF_PLUGIN_DTYPE_FP8_E4M3 && p->dtype != AF_PLUGIN_DTYPE_FP8_E5M2) {
        snprintf(why, cap, "%s serves fp8_e4m3 and fp8_e5m2 only", fp8_names[FP8_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->batch < 1 || p->heads_q < 1 || p->heads_kv < 1 || p->heads_q % p->heads_kv || p->head_dim_qk < 1 ||
        p->head_dim_v < 1 || p->seqlen_q < 0 || p->seqlen_kv < 0) {
        snprintf(why, cap, "%s: invalid shape", fp8_names[FP8_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->heads_v != p->heads_kv) { /* declined, never ignored: V is indexed by K's head */
        snprintf(why, cap, "%s: heads_v != heads_kv (V's own head count) is not implemented", fp8_names[FP8_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->features) { /* declined, never ignored (plugin.h) */
        snprintf(why, cap, "%s: features are not implemented", fp8_names[FP8_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->descale_per_head && (p->flags & AF_PLUGIN_BACKWARD)) { /* FlashAttention 3's are forward only */
        snprintf(why, cap, "%s: per-head descales with backward are not implemented", fp8_names[FP8_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    return AF_PLUGIN_OK;
}

/* ---- memory access (plugin.h's element addressing) ----------------------------- */

static int64_t offset_of(const af_plugin_tensor *x, int b, int h, int s, int d) {
    if (x->page_table) {
        int64_t page = x->page_table[(int64_t)b * x->pages_per_seq + s / x->page_size];
        return page * x->stride_b + (int64_t)(s % x->page_size) * x->stride_s + (int64_t)h * x->stride_h + d;
    }
    if (x->token_start) return (x->token_start[b] + s) * x->stride_s + (int64_t)h * x->stride_h + d;
    return (int64_t)b * x->stride_b + (int64_t)s * x->stride_s + (int64_t)h * x->stride_h + d;
}

/* The stored value as fp32: an E4M3 / E5M2 code as its value (no descale), fp32 as is. */
static float load_stored(const af_plugin_tensor *x, int b, int h, int s, int d) {
    int64_t off = offset_of(x, b, h, s, d);
    if (x->storage == AF_PLUGIN_STORAGE_E4M3) return af_e4m3_to_f32(((const uint8_t *)x->data)[off]);
    if (x->storage == AF_PLUGIN_STORAGE_E5M2) return af_e5m2_to_f32(((const uint8_t *)x->data)[off]);
    if (x->storage == AF_PLUGIN_STORAGE_F16 || x->storage == AF_PLUGIN_STORAGE_BF16) { /* out_dtype: O */
        uint16_t u;
        memcpy(&u, (const uint16_t *)x->data + off, 2);
        return x->storage == AF_PLUGIN_STORAGE_F16 ? af_f16_to_f32(u) : af_bf16_to_f32(u);
    }
    float f;
    memcpy(&f, (const float *)x->data + off, 4);
    return f;
}

/* Store logical value v: e4m3(v / descale) for E4M3 tensors (the ABI), fp32 as is. */
static void store_logical(const af_plugin_tensor *x, int b, int h, int s, int d, float v) {
    int64_t off = offset_of(x, b, h, s, d);
    if (x->storage == AF_PLUGIN_STORAGE_E4M3) {
        ((uint8_t *)x->data)[off] = af_f32_to_e4m3(v / x->descale);
        return;
    }
    if (x->storage == AF_PLUGIN_STORAGE_F16 || x->storage == AF_PLUGIN_STORAGE_BF16) { /* out_dtype: O */
#if BUG(O_AS_FP8)
        ((uint8_t *)x->data)[off] = af_f32_to_e4m3(v / x->descale); /* out_dtype ignored */
        return;
#endif
        uint16_t u = x->storage == AF_PLUGIN_STORAGE_F16 ? af_f32_to_f16(v) : af_f32_to_bf16(v);
        memcpy((uint16_t *)x->data + off, &u, 2);
        return;
    }
    if (x->storage == AF_PLUGIN_STORAGE_E5M2) {
        float stored = v / x->descale;
#if BUG(E5M2_SAT_448)
        stored = stored > 448.0f ? 448.0f : stored < -448.0f ? -448.0f : stored; /* E4M3's clamp */
#endif
        ((uint8_t *)x->data)[off] = af_f32_to_e5m2(stored);
        return;
    }
    memcpy((float *)x->data + off, &v, 4);
}

static float e4m3_round(float x) { return af_e4m3_to_f32(af_f32_to_e4m3(x)); }
static float e5m2_round(float x) { return af_e5m2_to_f32(af_f32_to_e5m2(x)); }

/* ---- one run -------------------------------------------------------------------- */

typedef struct {
    const af_plugin_problem *p;
    const af_plugin_tensors *t;
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv, group;
    float dsc_q, dsc_k, dsc_v, dsc_do, dsc_o; /* the ABI's descales */
    bool e5m2;                                /* fp8_e5m2: dS8 in E5M2, its row scale up to 57344 */
    float *q8, *k8, *v8, *do8, *o8;           /* dense (B, H, S, D) stored E4M3 values as fp32 */
    float *o, *lse;                           /* (B, Hq, Sq, Dv), (B, Hq, Sq) before the store */
    float *dq, *dk, *dv;                      /* dense gradients before the store */
    float *x;                                 /* (Skv) one row's exp2-domain scores */
    float *split_o, *split_lse2;              /* (Skv / SPLIT + 1, Dv), (Skv / SPLIT + 1) */
} fp8_run;

static float *at(float *base, int H, int S, int D, int b, int h, int s) {
    return base + (((int64_t)b * H + h) * S + s) * D;
}

/* Keys [*first, *last] row i of sequence b sees (plugin.h's mask); the count. */
static int visible(const fp8_run *r, int b, int i, int *first, int *last) {
    const af_plugin_problem *p = r->p;
    int len_q = p->seqlens_q[b], len_kv = p->seqlens_kv[b];
    long long diag = p->align == AF_PLUGIN_ALIGN_BOTTOM_RIGHT ? (long long)i + len_kv - len_q : i;
    long long lo = 0, hi = (long long)len_kv - 1;
    if (p->mask == AF_PLUGIN_MASK_CAUSAL && diag < hi) hi = diag;
    if (p->window_left >= 0 && diag - p->window_left > lo) lo = diag - p->window_left;
    if (p->window_right >= 0 && diag + p->window_right < hi) hi = diag + p->window_right;
    *first = 0;
    *last = -1;
    if (i >= len_q || lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

static float dot_chunked(const float *a, const float *b, int D) {
    float total = 0.0f;
    for (int d0 = 0; d0 < D; d0 += MMA_K) {
        float part = 0.0f;
        for (int d = d0; d < d0 + MMA_K && d < D; d++) part += a[d] * b[d];
        total += part;
    }
    return total;
}

/* The descale of (b, kv head hk) from a per-head array (ABI 7: (batch, heads_kv), FA3's
 * q/k/v_descale), or the tensor's when the problem has none. */
static float head_dsc(const fp8_run *r, const float *per_head, float tensor_dsc, int b, int hk) {
    if (!r->p->descale_per_head || !per_head) return tensor_dsc;
#if BUG(DESCALE_BATCH0)
    b = 0; /* the array indexed by head alone: sequence 0's descales for every sequence */
#endif
    return per_head[(int64_t)b * r->Hkv + hk];
}

/* The exp2-domain score of (b, h, i) and key j (hk = h's kv head). */
static float score2(const fp8_run *r, int b, int h, int hk, int i, int j) {
    float t =
        dot_chunked(at(r->q8, r->Hq, r->Sq, r->Dqk, b, h, i), at(r->k8, r->Hkv, r->Skv, r->Dqk, b, hk, j), r->Dqk);
    float dq = head_dsc(r, r->p->q_descale, r->dsc_q, b, hk), dk = head_dsc(r, r->p->k_descale, r->dsc_k, b, hk);
    return ((t * r->p->scale) * dq) * dk * (float)M_LOG2E;
}

/* One split [j0, j1]: online softmax over 64-key tiles; out: O_s (Dv); returns lse2_s. */
static float split_forward(fp8_run *r, int b, int hk, int first, int j0, int j1, float *out) {
    float m = -INFINITY, l = 0.0f;
    for (int d = 0; d < r->Dv; d++) out[d] = 0.0f;
    for (int t0 = j0; t0 <= j1; t0 = (t0 / TILE + 1) * TILE) {
        int t1 = (t0 / TILE + 1) * TILE - 1;
        if (t1 > j1) t1 = j1;
        float mt = m;
        for (int j = t0; j <= t1; j++) mt = r->x[j - first] > mt ? r->x[j - first] : mt;
        float rescale = m == -INFINITY ? 0.0f : exp2f(m - mt);
        l *= rescale;
        for (int d = 0; d < r->Dv; d++) out[d] *= rescale;
        m = mt;
        for (int j = t0; j <= t1; j++) {
            float pj = exp2f(r->x[j - first] - m);
            l += pj;
            float p8 = e4m3_round(pj * SCALE_S);
            const float *v = at(r->v8, r->Hkv, r->Skv, r->Dv, b, hk, j);
            for (int d = 0; d < r->Dv; d++) out[d] += p8 * v[d];
        }
    }
    float dv = head_dsc(r, r->p->v_descale, r->dsc_v, b, hk);
    for (int d = 0; d < r->Dv; d++) out[d] = out[d] / l / SCALE_S * dv;
    return m + log2f(l);
}

static void forward(fp8_run *r) {
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < r->Hq; h++) {
            int hk = h / r->group;
            for (int i = 0; i < r->p->seqlens_q[b]; i++) {
                float *o = at(r->o, r->Hq, r->Sq, r->Dv, b, h, i), *lse = at(r->lse, r->Hq, r->Sq, 1, b, h, i);
                int first, last, n = visible(r, b, i, &first, &last);
                if (n == 0) {
                    for (int d = 0; d < r->Dv; d++) o[d] = 0.0f;
                    *lse = -INFINITY;
                    continue;
                }
                for (int j = first; j <= last; j++) r->x[j - first] = score2(r, b, h, hk, i, j);
                if (n <= SPLIT) {
                    *lse = split_forward(r, b, hk, first, first, last, o) * (float)M_LN2;
                    continue;
                }
                int n_splits = (n + SPLIT - 1) / SPLIT, per = (n + n_splits - 1) / n_splits;
                float big = -INFINITY, wsum = 0.0f;
                for (int s = 0; s < n_splits; s++) {
                    int j0 = first + s * per, j1 = j0 + per - 1 < last ? j0 + per - 1 : last;
                    r->split_lse2[s] = split_forward(r, b, hk, first, j0, j1, r->split_o + (int64_t)s * r->Dv);
                    big = r->split_lse2[s] > big ? r->split_lse2[s] : big;
                }
                for (int s = 0; s < n_splits; s++) wsum += exp2f(r->split_lse2[s] - big);
                float lse2 = big + log2f(wsum);
                for (int d = 0; d < r->Dv; d++) o[d] = 0.0f;
                for (int s = 0; s < n_splits; s++) {
                    float w = exp2f(r->split_lse2[s] - lse2);
                    for (int d = 0; d < r->Dv; d++) o[d] += w * r->split_o[(int64_t)s * r->Dv + d];
                }
                *lse = lse2 * (float)M_LN2;
            }
        }
}

/* Row (b, h, i)'s D_i and its exp2-domain LSE from the stored O8 and LSE. */
static void row_stats(const fp8_run *r, int b, int h, int i, float *delta, float *lse2) {
    float t = dot_chunked(at(r->do8, r->Hq, r->Sq, r->Dv, b, h, i), at(r->o8, r->Hq, r->Sq, r->Dv, b, h, i), r->Dv);
    *delta = (t * r->dsc_do) * r->dsc_o;
    *lse2 = load_stored(&r->t->t[AF_PLUGIN_LSE], b, h, i, 0) * (float)M_LOG2E;
}

/* dS_ij (fp32, scaled) and P_ij of row (b, h, i) and key j. */
static float dscore(const fp8_run *r, int b, int h, int hk, int i, int j, float delta, float lse2, float *prob) {
    float pj = exp2f(score2(r, b, h, hk, i, j) - lse2);
    float dp = dot_chunked(at(r->do8, r->Hq, r->Sq, r->Dv, b, h, i), at(r->v8, r->Hkv, r->Skv, r->Dv, b, hk, j), r->Dv);
    dp = (dp * r->dsc_do) * r->dsc_v;
    *prob = pj;
    return ((dp - delta) * pj) * r->p->scale;
}

/* Row (b, h, i)'s dS scale (row-wise current scaling): the largest power of two with
 * 2 amax_j |dS_ij| scale <= 448 (57344 for E5M2; 1 for a row whose dS is all 0). Only what the row sees
 * sets it, so hidden inputs cannot move it (the visibility probe). */
static float row_ds_scale(const fp8_run *r, int b, int h, int i, int first, int last, float delta, float lse2) {
    float amax = 0.0f, prob;
    for (int j = first; j <= last; j++) {
        float ds = fabsf(dscore(r, b, h, h / r->group, i, j, delta, lse2, &prob));
        amax = ds > amax ? ds : amax;
    }
    float s = 1.0f;
    if (!(amax > 0.0f) || !isfinite(amax)) return s;
    float top = r->e5m2 ? 57344.0f : 448.0f; /* dS8's largest finite */
    while (2.0f * amax * s > top && s > 0x1p-126f) s *= 0.5f;
    while (2.0f * amax * (2.0f * s) <= top && s < 0x1p126f) s *= 2.0f;
    return s;
}

static void backward(fp8_run *r) {
    float *tile_dq = r->split_o; /* (Dqk): split_o is at least max(Dqk, Dv) long */
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < r->Hq; h++) {
            int hk = h / r->group;
            for (int i = 0; i < r->p->seqlens_q[b]; i++) {
                float *dq = at(r->dq, r->Hq, r->Sq, r->Dqk, b, h, i);
                int first, last;
                if (visible(r, b, i, &first, &last) == 0) continue;
                const float *q = at(r->q8, r->Hq, r->Sq, r->Dqk, b, h, i);
                const float *dO = at(r->do8, r->Hq, r->Sq, r->Dv, b, h, i);
                float delta, lse2, prob;
                row_stats(r, b, h, i, &delta, &lse2);
                float scale_ds = row_ds_scale(r, b, h, i, first, last, delta, lse2), inv_ds = 1.0f / scale_ds;
                for (int t0 = first; t0 <= last; t0 = (t0 / TILE + 1) * TILE) {
                    int t1 = (t0 / TILE + 1) * TILE - 1;
                    if (t1 > last) t1 = last;
                    for (int d = 0; d < r->Dqk; d++) tile_dq[d] = 0.0f;
                    for (int j = t0; j <= t1; j++) {
                        float ds = dscore(r, b, h, hk, i, j, delta, lse2, &prob);
                        float ds8 = r->e5m2 ? e5m2_round(ds * scale_ds) : e4m3_round(ds * scale_ds);
                        float p8 = e4m3_round(prob * SCALE_S);
                        const float *k = at(r->k8, r->Hkv, r->Skv, r->Dqk, b, hk, j);
                        float *dk = at(r->dk, r->Hkv, r->Skv, r->Dqk, b, hk, j);
                        float *dv = at(r->dv, r->Hkv, r->Skv, r->Dv, b, hk, j);
                        for (int d = 0; d < r->Dqk; d++) tile_dq[d] += ds8 * k[d];
                        for (int d = 0; d < r->Dqk; d++) dk[d] += (ds8 * inv_ds) * q[d];
                        for (int d = 0; d < r->Dv; d++) dv[d] += p8 * dO[d];
                    }
                    for (int d = 0; d < r->Dqk; d++) dq[d] += tile_dq[d];
                }
                float dq_descale = r->dsc_k;
#if BUG(HEAD_DESCALE)
                if (h == r->Hq - 1) dq_descale *= 448.0f / 240.0f; /* E4M3FNUZ's max */
#endif
                for (int d = 0; d < r->Dqk; d++) dq[d] = dq[d] * inv_ds * dq_descale;
            }
        }
    for (int64_t e = 0; e < (int64_t)r->B * r->Hkv * r->Skv * r->Dqk; e++) r->dk[e] *= r->dsc_q;
    for (int64_t e = 0; e < (int64_t)r->B * r->Hkv * r->Skv * r->Dv; e++) r->dv[e] = r->dv[e] / SCALE_S * r->dsc_do;
}

/* ---- perturbations and the store ------------------------------------------------ */

/* Perturb dense tensor base (B, H, S, D) of kind id (AF_PLUGIN_O, DQ, DK, DV) in place. */
static void perturb(const fp8_run *r, int id, float *base, int H, int S, int D) {
#if BUG(ROW_SCALE)
    int last = r->p->seqlens_q[0] - 1;
    if ((id == AF_PLUGIN_O || id == AF_PLUGIN_DQ) && last >= 0)
        for (int d = 0; d < D; d++) at(base, H, S, D, 0, 0, last)[d] *= 1.5f;
#elif BUG(LAST_KEY_DK)
    if (id == AF_PLUGIN_DK)
        for (int b = 0; b < r->B; b++)
            for (int h = 0; h < H && r->p->seqlens_kv[b] > 0; h++)
                for (int d = 0; d < D; d++) at(base, H, S, D, b, h, r->p->seqlens_kv[b] - 1)[d] *= 2.0f;
#endif
    (void)r, (void)id, (void)base, (void)H, (void)S, (void)D;
}

static void store_all(fp8_run *r, int id, float *base, int H, int S, int D, const int32_t *lens) {
    perturb(r, id, base, H, S, D);
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < lens[b]; s++)
                for (int d = 0; d < D; d++) store_logical(&r->t->t[id], b, h, s, d, at(base, H, S, D, b, h, s)[d]);
}

static void gather(fp8_run *r, int id, float *dense, int H, int S, int D, const int32_t *lens) {
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < lens[b]; s++)
                for (int d = 0; d < D; d++) at(dense, H, S, D, b, h, s)[d] = load_stored(&r->t->t[id], b, h, s, d);
}

static float *floats(int64_t n) { return calloc(n > 0 ? (size_t)n : 1, sizeof(float)); }

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    int rc = attnfuzz_plugin_supports(p, why, cap);
    if (rc != AF_PLUGIN_OK) return rc;
    fp8_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.t = t;
    r.B = p->batch;
    r.Hq = p->heads_q;
    r.Hkv = p->heads_kv;
    r.Sq = p->seqlen_q;
    r.Skv = p->seqlen_kv;
    r.Dqk = p->head_dim_qk;
    r.Dv = p->head_dim_v;
    r.group = p->heads_q / p->heads_kv;
    r.e5m2 = p->dtype == AF_PLUGIN_DTYPE_FP8_E5M2;
    r.dsc_q = t->t[AF_PLUGIN_Q].descale;
    r.dsc_k = t->t[AF_PLUGIN_K].descale;
    r.dsc_v = t->t[AF_PLUGIN_V].descale;
#if BUG(DESCALE_V_IGNORED)
    r.dsc_v = 1.0f; /* the scale never reaches the kernel */
#endif
    r.dsc_o = t->t[AF_PLUGIN_O].descale;
    bool bwd = (p->flags & AF_PLUGIN_BACKWARD) != 0;
    int64_t nq = (int64_t)r.B * r.Hq * r.Sq, nk = (int64_t)r.B * r.Hkv * r.Skv;
    int dmax = r.Dqk > r.Dv ? r.Dqk : r.Dv;
    int64_t n_splits = (int64_t)r.Skv / SPLIT + 1;
    r.q8 = floats(nq * r.Dqk);
    r.k8 = floats(nk * r.Dqk);
    r.v8 = floats(nk * r.Dv);
    r.o = floats(nq * r.Dv);
    r.lse = floats(nq);
    r.x = floats(r.Skv);
    r.split_o = floats(n_splits * dmax);
    r.split_lse2 = floats(n_splits);
    bool ok = r.q8 && r.k8 && r.v8 && r.o && r.lse && r.x && r.split_o && r.split_lse2;
    if (bwd) {
        r.dsc_do = t->t[AF_PLUGIN_DO].descale;
        r.do8 = floats(nq * r.Dv);
        r.o8 = floats(nq * r.Dv);
        r.dq = floats(nq * r.Dqk);
        r.dk = floats(nk * r.Dqk);
        r.dv = floats(nk * r.Dv);
        ok = ok && r.do8 && r.o8 && r.dq && r.dk && r.dv;
    }
    if (ok) {
        gather(&r, AF_PLUGIN_Q, r.q8, r.Hq, r.Sq, r.Dqk, p->seqlens_q);
        gather(&r, AF_PLUGIN_K, r.k8, r.Hkv, r.Skv, r.Dqk, p->seqlens_kv);
        gather(&r, AF_PLUGIN_V, r.v8, r.Hkv, r.Skv, r.Dv, p->seqlens_kv);
        forward(&r);
        store_all(&r, AF_PLUGIN_O, r.o, r.Hq, r.Sq, r.Dv, p->seqlens_q);
        for (int b = 0; b < r.B; b++)
            for (int h = 0; h < r.Hq; h++)
                for (int i = 0; i < p->seqlens_q[b]; i++)
                    store_logical(&t->t[AF_PLUGIN_LSE], b, h, i, 0, *at(r.lse, r.Hq, r.Sq, 1, b, h, i));
        if (bwd) { /* from the O8 and LSE as stored (the ABI) */
            gather(&r, AF_PLUGIN_DO, r.do8, r.Hq, r.Sq, r.Dv, p->seqlens_q);
            gather(&r, AF_PLUGIN_O, r.o8, r.Hq, r.Sq, r.Dv, p->seqlens_q);
            backward(&r);
            store_all(&r, AF_PLUGIN_DQ, r.dq, r.Hq, r.Sq, r.Dqk, p->seqlens_q);
            store_all(&r, AF_PLUGIN_DK, r.dk, r.Hkv, r.Skv, r.Dqk, p->seqlens_kv);
            store_all(&r, AF_PLUGIN_DV, r.dv, r.Hkv, r.Skv, r.Dv, p->seqlens_kv);
        }
    } else {
        snprintf(why, cap, "%s: out of host memory", fp8_names[FP8_BUG].name);
    }
    float *bufs[] = {r.q8, r.k8, r.v8, r.do8, r.o8, r.o, r.lse, r.dq, r.dk, r.dv, r.x, r.split_o, r.split_lse2};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) free(bufs[k]);
    return ok ? AF_PLUGIN_OK : AF_PLUGIN_RESOURCE;
}
