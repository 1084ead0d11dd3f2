/* flash_ref.c — a correct flash-style attention (the plugin "flash_ref") and, built from
 * the same source with -DFLASH_BUG=FLASH_<BUG>, small numerical defects that the
 * criterion (judge/verdict.h) must catch ("flash_bug:<bug>").
 *
 * flash_ref rounds differently from the cpu reference everywhere the plugin ABI lets
 * a kernel do so, the way FlashAttention-2 does, so a criterion that fails it on any
 * case is too tight:
 *   forward, row i of head (b, h), fp16/bf16 inputs read as fp32:
 *     t_j = q . k_j in fp32, summed in 16-wide chunks (d ascending inside a chunk, then
 *           the chunks), the MMA order; x_j = t_j * (scale * log2 e)   (exp2 domain)
 *     keys split into splits of 256 when the row sees more than 256 (split-KV), each
 *     split walked in 64-key tiles aligned to the key index (online softmax):
 *       m' = max(m, max_tile x);  acc *= exp2(m - m');  l *= exp2(m - m')
 *       p_j = exp2f(x_j - m') (fp32); l += p_j (fp32); acc += round_dt(p_j) v_j (fp32)
 *     split s: O_s = acc / l, lse2_s = m + log2f(l)  (fp32, base 2)
 *     merge:  lse2 = M + log2f(sum_s exp2f(lse2_s - M)), O = sum_s exp2f(lse2_s - lse2) O_s
 *     LSE = lse2 * ln 2 (stored fp32), O stored rounded to the dtype
 *   backward, from the O and LSE as stored (the ABI):
 *     D_i = dO_i . O_i (fp32);  P_ij = exp2f(x_ij - LSE_i log2 e);  dP_ij = dO_i . v_j
 *     dS_ij = P_ij (dP_ij - D_i);  rounded to the dtype (dS for dQ and dK, P for dV)
 *     dQ_i, dK_j, dV_j summed per 64-key (dQ) or 64-row (dK, dV) tile in fp32, the tile
 *     sums then added; times scale at the end (dQ, dK)
 *   GQA: query head h reads kv head h / (heads_q / heads_kv).
 *   Malformed metadata (token starts, page table, lengths) is refused with
 *   AF_PLUGIN_ERROR before anything runs (plugins/metadata_check.h).
 *
 * The bugs (each one a perturbation the per-tensor max-abs rule of attnfuzz <= 2026-12
 * passed on b1 h2 s128 d64; magnitudes are those that passed there):
 *   FLASH_UNIFORM_SCALE  every O, dQ, dK, dV element x(1 + eps): 0.15 % fp16, 1.0 % bf16
 *   FLASH_ROW_SCALE      one query row of O and dQ (b 0, h 0, i = len_q / 2) and one key
 *                        of dK and dV (b 0, hk 0, j = len_kv / 2) x(1 + eps): 0.4 % fp16,
 *                        2.6 % bf16
 *   FLASH_LAST_KEY_DK    dK of the last key of every sequence and kv head x(1 + 0.85)
 *   FLASH_ONE_ELEMENT    one O element x(1 + 0.46): row b 0, h 0, i = len_q / 2, the
 *                        element of median magnitude in that row
 *   FLASH_FLUSH_SMALL    every O, dQ, dK, dV element below 2 u max |tensor| flushed to 0
 *                        (about what the per-tensor rule allowed)
 *   FLASH_LSE_ROUNDED    the backward recomputes P from the LSE rounded to the dtype
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/plugin.h"
#include "model/numeric.h"
#include "plugins/metadata_check.h"

#define FLASH_NONE          0
#define FLASH_UNIFORM_SCALE 1
#define FLASH_ROW_SCALE     2
#define FLASH_LAST_KEY_DK   3
#define FLASH_ONE_ELEMENT   4
#define FLASH_FLUSH_SMALL   5
#define FLASH_LSE_ROUNDED   6

#ifndef FLASH_BUG
#error "build with -DFLASH_BUG=FLASH_<BUG> (see harness/plugins/CMakeLists.txt)"
#endif
#define BUG(x) (FLASH_BUG == FLASH_##x)

#define TILE  64  /* keys per online-softmax tile, rows / keys per backward tile */
#define SPLIT 256 /* keys per split-KV split */
#define MMA_K 16  /* chunk of the Q K^T contraction */

static const struct {
    const char *name;
    const char *description;
} flash_names[] = {
    {"flash_ref", "correct flash-style attention: online softmax in 64-key tiles, split-KV above 256 keys"},
    {"flash_bug:uniform_scale", "flash_ref with every output x(1 + 0.15 % fp16 / 1.0 % bf16)"},
    {"flash_bug:row_scale", "flash_ref with one row of O, dQ and one key of dK, dV x(1 + 0.4 % / 2.6 %)"},
    {"flash_bug:last_key_dk", "flash_ref with dK of each sequence's last key x 1.85"},
    {"flash_bug:one_element", "flash_ref with one O element x 1.46"},
    {"flash_bug:flush_small", "flash_ref with outputs below 2 units of the tensor maximum flushed to 0"},
    {"flash_bug:lse_rounded", "flash_ref whose backward recomputes P from the LSE rounded to the dtype"},
};

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static af_plugin_info info;
    info.abi_version = ATTNFUZZ_PLUGIN_ABI_VERSION;
    info.flags =
        AF_PLUGIN_DETERMINISTIC | AF_PLUGIN_CHECKS_METADATA | (FLASH_BUG != FLASH_NONE ? AF_PLUGIN_PLANTED : 0u);
    info.name = flash_names[FLASH_BUG].name;
    info.description = flash_names[FLASH_BUG].description;
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    if (p->dtype != AF_PLUGIN_DTYPE_FP16 && p->dtype != AF_PLUGIN_DTYPE_BF16) {
        snprintf(why, cap, "%s serves fp16 and bf16 only", flash_names[FLASH_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->batch < 1 || p->heads_q < 1 || p->heads_kv < 1 || p->heads_q % p->heads_kv || p->head_dim_qk < 1 ||
        p->head_dim_v < 1 || p->seqlen_q < 0 || p->seqlen_kv < 0) {
        snprintf(why, cap, "%s: invalid shape", flash_names[FLASH_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->heads_v != p->heads_kv) { /* declined, never ignored: V is indexed by K's head */
        snprintf(why, cap, "%s: heads_v != heads_kv (V's own head count) is not implemented",
                 flash_names[FLASH_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->kv_dtype != AF_PLUGIN_KV_SAME) { /* declined, never ignored: it reads K, V as the dtype */
        snprintf(why, cap, "%s: kv_dtype (fp8 K and V) is not implemented", flash_names[FLASH_BUG].name);
        return AF_PLUGIN_DECLINE;
    }
    if (p->features) { /* declined, never ignored (plugin.h) */
        snprintf(why, cap,
                 "%s: features (sinks, softcap, score_mod, bias, ALiBi, log2 stats, dLSE, dropout) are not implemented",
                 flash_names[FLASH_BUG].name);
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

static float load(const af_plugin_tensor *x, int b, int h, int s, int d) {
    int64_t off = offset_of(x, b, h, s, d);
    uint16_t u16;
    float f;
    switch (x->storage) {
        case AF_PLUGIN_STORAGE_F16:
            memcpy(&u16, (const uint16_t *)x->data + off, 2);
            return af_f16_to_f32(u16);
        case AF_PLUGIN_STORAGE_BF16:
            memcpy(&u16, (const uint16_t *)x->data + off, 2);
            return af_bf16_to_f32(u16);
        default:
            memcpy(&f, (const float *)x->data + off, 4);
            return f;
    }
}

static void store(const af_plugin_tensor *x, int b, int h, int s, int d, float value) {
    int64_t off = offset_of(x, b, h, s, d);
    uint16_t u16;
    switch (x->storage) {
        case AF_PLUGIN_STORAGE_F16:
            u16 = af_f32_to_f16(value);
            memcpy((uint16_t *)x->data + off, &u16, 2);
            break;
        case AF_PLUGIN_STORAGE_BF16:
            u16 = af_f32_to_bf16(value);
            memcpy((uint16_t *)x->data + off, &u16, 2);
            break;
        default:
            memcpy((float *)x->data + off, &value, 4);
            break;
    }
}

/* ---- one run -------------------------------------------------------------------- */

typedef struct {
    const af_plugin_problem *p;
    const af_plugin_tensors *t;
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv, group;
    bool fp16;
    float scale_log2;            /* scale * log2(e), fp32 */
    float *q, *k, *v, *dout;     /* dense (B, H, S, D) fp32 copies */
    float *o, *lse;              /* (B, Hq, Sq, Dv), (B, Hq, Sq): computed, before the store */
    float *dq, *dk, *dv;         /* dense gradients before the store */
    float *x;                    /* (Skv) one row's exp2-domain scores */
    float *acc;                  /* (max(Dqk, Dv)) */
    float *split_o, *split_lse2; /* (Skv / SPLIT + 1, Dv), (Skv / SPLIT + 1) split-KV workspace */
} flash_run;

static float round_dt(const flash_run *r, float x) {
    return r->fp16 ? af_f16_to_f32(af_f32_to_f16(x)) : af_bf16_to_f32(af_f32_to_bf16(x));
}

static float *at(float *base, int H, int S, int D, int b, int h, int s) {
    return base + (((int64_t)b * H + h) * S + s) * D;
}

/* Keys [*first, *last] row i of sequence b sees (plugin.h's mask); the count. */
static int visible(const flash_run *r, int b, int i, int *first, int *last) {
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

/* q . k in fp32, MMA_K-wide chunks summed after each other. */
static float dot_chunked(const float *a, const float *b, int D) {
    float total = 0.0f;
    for (int d0 = 0; d0 < D; d0 += MMA_K) {
        float part = 0.0f;
        for (int d = d0; d < d0 + MMA_K && d < D; d++) part += a[d] * b[d];
        total += part;
    }
    return total;
}

/* One split [j0, j1] of row (b, h, i): online softmax over 64-key tiles aligned to the
 * key index. out: O_s (Dv); returns lse2_s (base 2). x: the row's exp2-domain scores
 * indexed from first. */
static float split_forward(flash_run *r, int b, int hk, int first, int j0, int j1, float *out) {
    float m = -INFINITY, l = 0.0f;
    for (int d = 0; d < r->Dv; d++) out[d] = 0.0f;
    for (int t0 = j0; t0 <= j1; t0 = (t0 / TILE + 1) * TILE) {
        int t1 = (t0 / TILE + 1) * TILE - 1;
        if (t1 > j1) t1 = j1;
        float mt = m;
        for (int j = t0; j <= t1; j++) mt = r->x[j - first] > mt ? r->x[j - first] : mt;
        float rescale = exp2f(m - mt); /* 0 on the first tile (m = -inf) */
        if (m == -INFINITY) rescale = 0.0f;
        l *= rescale;
        for (int d = 0; d < r->Dv; d++) out[d] *= rescale;
        m = mt;
        for (int j = t0; j <= t1; j++) {
            float pj = exp2f(r->x[j - first] - m);
            l += pj;
            float pr = round_dt(r, pj);
            const float *v = at(r->v, r->Hkv, r->Skv, r->Dv, b, hk, j);
            for (int d = 0; d < r->Dv; d++) out[d] += pr * v[d];
        }
    }
    for (int d = 0; d < r->Dv; d++) out[d] /= l;
    return m + log2f(l);
}

static void forward(flash_run *r) {
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < r->Hq; h++) {
            int hk = h / r->group;
            for (int i = 0; i < r->p->seqlens_q[b]; i++) {
                float *o = at(r->o, r->Hq, r->Sq, r->Dv, b, h, i), *lse = at(r->lse, r->Hq, r->Sq, 1, b, h, i);
                int first, last;
                int n = visible(r, b, i, &first, &last);
                if (n == 0) {
                    for (int d = 0; d < r->Dv; d++) o[d] = 0.0f;
                    *lse = -INFINITY;
                    continue;
                }
                const float *q = at(r->q, r->Hq, r->Sq, r->Dqk, b, h, i);
                for (int j = first; j <= last; j++)
                    r->x[j - first] =
                        dot_chunked(q, at(r->k, r->Hkv, r->Skv, r->Dqk, b, hk, j), r->Dqk) * r->scale_log2;
                if (n <= SPLIT) {
                    *lse = split_forward(r, b, hk, first, first, last, o) * (float)M_LN2;
                    continue;
                }
                /* split-KV: each split's O_s and lse2_s (fp32, as a split kernel leaves them
                 * in its workspace), then the log-sum-exp merge */
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

static void backward(flash_run *r) {
    const af_plugin_tensor *to = &r->t->t[AF_PLUGIN_O], *tl = &r->t->t[AF_PLUGIN_LSE];
    float *tile_dq = r->acc; /* (Dqk) reuses acc: sized max(Dqk, Dv) */
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < r->Hq; h++) {
            int hk = h / r->group;
            for (int i = 0; i < r->p->seqlens_q[b]; i++) {
                float *dq = at(r->dq, r->Hq, r->Sq, r->Dqk, b, h, i);
                int first, last;
                if (visible(r, b, i, &first, &last) == 0) continue; /* dq stays 0 */
                const float *q = at(r->q, r->Hq, r->Sq, r->Dqk, b, h, i),
                            *dO = at(r->dout, r->Hq, r->Sq, r->Dv, b, h, i);
                float lse = load(tl, b, h, i, 0);
#if BUG(LSE_ROUNDED)
                lse = round_dt(r, lse);
#endif
                float lse2 = lse * (float)M_LOG2E, delta = 0.0f;
                for (int d = 0; d < r->Dv; d++) delta += dO[d] * load(to, b, h, i, d);
                for (int t0 = first; t0 <= last; t0 = (t0 / TILE + 1) * TILE) {
                    int t1 = (t0 / TILE + 1) * TILE - 1;
                    if (t1 > last) t1 = last;
                    for (int d = 0; d < r->Dqk; d++) tile_dq[d] = 0.0f;
                    for (int j = t0; j <= t1; j++) {
                        const float *k = at(r->k, r->Hkv, r->Skv, r->Dqk, b, hk, j);
                        const float *v = at(r->v, r->Hkv, r->Skv, r->Dv, b, hk, j);
                        float pj = exp2f(dot_chunked(q, k, r->Dqk) * r->scale_log2 - lse2);
                        float dp = dot_chunked(dO, v, r->Dv);
                        float ds = round_dt(r, pj * (dp - delta)), pr = round_dt(r, pj);
                        for (int d = 0; d < r->Dqk; d++) tile_dq[d] += ds * k[d];
                        /* dK, dV: per 64-row tile of queries into the key's fp32 sum */
                        float *dk = at(r->dk, r->Hkv, r->Skv, r->Dqk, b, hk, j);
                        float *dv = at(r->dv, r->Hkv, r->Skv, r->Dv, b, hk, j);
                        for (int d = 0; d < r->Dqk; d++) dk[d] += ds * q[d];
                        for (int d = 0; d < r->Dv; d++) dv[d] += pr * dO[d];
                    }
                    for (int d = 0; d < r->Dqk; d++) dq[d] += tile_dq[d];
                }
                for (int d = 0; d < r->Dqk; d++) dq[d] *= r->p->scale;
            }
        }
    float scale = r->p->scale;
    for (int64_t e = 0; e < (int64_t)r->B * r->Hkv * r->Skv * r->Dqk; e++) r->dk[e] *= scale;
}

/* ---- perturbations and the store ------------------------------------------------ */

static float eps_of(const flash_run *r, float fp16_eps, float bf16_eps) { return r->fp16 ? fp16_eps : bf16_eps; }

/* Perturb dense tensor base (B, H, S, D) of kind id (AF_PLUGIN_O, DQ, DK, DV) in place. */
static void perturb(flash_run *r, int id, float *base, int H, int S, int D) {
    (void)eps_of;
    const int32_t *lens = id == AF_PLUGIN_DK || id == AF_PLUGIN_DV ? r->p->seqlens_kv : r->p->seqlens_q;
    int64_t n = (int64_t)r->B * H * S * D;
    (void)lens;
    (void)n;
#if BUG(UNIFORM_SCALE)
    float eps = eps_of(r, 0.0015f, 0.010f);
    for (int64_t e = 0; e < n; e++) base[e] *= 1.0f + eps;
#elif BUG(ROW_SCALE)
    float eps = eps_of(r, 0.004f, 0.026f);
    int s = lens[0] / 2;
    if (lens[0] > 0)
        for (int d = 0; d < D; d++) at(base, H, S, D, 0, 0, s)[d] *= 1.0f + eps;
#elif BUG(LAST_KEY_DK)
    if (id == AF_PLUGIN_DK)
        for (int b = 0; b < r->B; b++)
            for (int h = 0; h < H && lens[b] > 0; h++)
                for (int d = 0; d < D; d++) at(base, H, S, D, b, h, lens[b] - 1)[d] *= 1.85f;
#elif BUG(ONE_ELEMENT)
    if (id == AF_PLUGIN_O && lens[0] > 0) {
        float *row = at(base, H, S, D, 0, 0, lens[0] / 2);
        int best = 0; /* the element of median magnitude: as many larger as smaller */
        for (int d = 0; d < D; d++) {
            int below = 0;
            for (int e = 0; e < D; e++) below += fabsf(row[e]) < fabsf(row[d]);
            if (below == D / 2) {
                best = d;
                break;
            }
        }
        row[best] *= 1.46f;
    }
#elif BUG(FLUSH_SMALL)
    float maxabs = 0.0f;
    for (int64_t e = 0; e < n; e++) maxabs = fabsf(base[e]) > maxabs ? fabsf(base[e]) : maxabs;
    float cut = 2.0f * (r->fp16 ? 0x1p-10f : 0x1p-7f) * maxabs;
    for (int64_t e = 0; e < n; e++)
        if (fabsf(base[e]) < cut) base[e] = 0.0f;
#endif
    (void)r;
    (void)id;
    (void)base;
    (void)H;
    (void)S;
    (void)D;
}

static void store_all(flash_run *r, int id, float *base, int H, int S, int D, const int32_t *lens) {
    perturb(r, id, base, H, S, D);
    const af_plugin_tensor *x = &r->t->t[id];
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < lens[b]; s++)
                for (int d = 0; d < D; d++) store(x, b, h, s, d, at(base, H, S, D, b, h, s)[d]);
}

static void gather(flash_run *r, int id, float *dense, int H, int S, int D, const int32_t *lens) {
    for (int b = 0; b < r->B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < lens[b]; s++)
                for (int d = 0; d < D; d++) at(dense, H, S, D, b, h, s)[d] = load(&r->t->t[id], b, h, s, d);
}

static float *floats(int64_t n) { return calloc(n > 0 ? (size_t)n : 1, sizeof(float)); }

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    int rc = attnfuzz_plugin_supports(p, why, cap);
    if (rc != AF_PLUGIN_OK) return rc;
    if (af_md_check(p, t, why, cap)) return AF_PLUGIN_ERROR; /* malformed metadata: refused */
    flash_run r = {p,
                   t,
                   p->batch,
                   p->heads_q,
                   p->heads_kv,
                   p->seqlen_q,
                   p->seqlen_kv,
                   p->head_dim_qk,
                   p->head_dim_v,
                   p->heads_q / p->heads_kv,
                   p->dtype == AF_PLUGIN_DTYPE_FP16,
                   p->scale * (float)M_LOG2E,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL,
                   NULL};
    bool bwd = (p->flags & AF_PLUGIN_BACKWARD) != 0;
    int64_t nq = (int64_t)r.B * r.Hq * r.Sq, nk = (int64_t)r.B * r.Hkv * r.Skv;
    int dmax = r.Dqk > r.Dv ? r.Dqk : r.Dv;
    r.q = floats(nq * r.Dqk);
    r.k = floats(nk * r.Dqk);
    r.v = floats(nk * r.Dv);
    r.o = floats(nq * r.Dv);
    r.lse = floats(nq);
    int64_t n_splits = (int64_t)r.Skv / SPLIT + 1;
    r.x = floats(r.Skv);
    r.acc = floats(dmax);
    r.split_o = floats(n_splits * r.Dv);
    r.split_lse2 = floats(n_splits);
    bool ok = r.q && r.k && r.v && r.o && r.lse && r.x && r.acc && r.split_o && r.split_lse2;
    if (bwd) {
        r.dout = floats(nq * r.Dv);
        r.dq = floats(nq * r.Dqk);
        r.dk = floats(nk * r.Dqk);
        r.dv = floats(nk * r.Dv);
        ok = ok && r.dout && r.dq && r.dk && r.dv;
    }
    if (ok) {
        gather(&r, AF_PLUGIN_Q, r.q, r.Hq, r.Sq, r.Dqk, p->seqlens_q);
        gather(&r, AF_PLUGIN_K, r.k, r.Hkv, r.Skv, r.Dqk, p->seqlens_kv);
        gather(&r, AF_PLUGIN_V, r.v, r.Hkv, r.Skv, r.Dv, p->seqlens_kv);
        forward(&r);
        store_all(&r, AF_PLUGIN_O, r.o, r.Hq, r.Sq, r.Dv, p->seqlens_q);
        for (int b = 0; b < r.B; b++)
            for (int h = 0; h < r.Hq; h++)
                for (int i = 0; i < p->seqlens_q[b]; i++)
                    store(&t->t[AF_PLUGIN_LSE], b, h, i, 0, *at(r.lse, r.Hq, r.Sq, 1, b, h, i));
        if (bwd) {
            gather(&r, AF_PLUGIN_DO, r.dout, r.Hq, r.Sq, r.Dv, p->seqlens_q);
            backward(&r);
            store_all(&r, AF_PLUGIN_DQ, r.dq, r.Hq, r.Sq, r.Dqk, p->seqlens_q);
            store_all(&r, AF_PLUGIN_DK, r.dk, r.Hkv, r.Skv, r.Dqk, p->seqlens_kv);
            store_all(&r, AF_PLUGIN_DV, r.dv, r.Hkv, r.Skv, r.Dv, p->seqlens_kv);
        }
    } else {
        snprintf(why, cap, "%s: out of host memory", flash_names[FLASH_BUG].name);
    }
    free(r.q);
    free(r.k);
    free(r.v);
    free(r.dout);
    free(r.o);
    free(r.lse);
    free(r.dq);
    free(r.dk);
    free(r.dv);
    free(r.x);
    free(r.acc);
    free(r.split_o);
    free(r.split_lse2);
    return ok ? AF_PLUGIN_OK : AF_PLUGIN_RESOURCE;
}
