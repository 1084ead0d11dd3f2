/* example_plugin.c — the smallest useful attnfuzz plugin: naive attention, forward only,
 * fp16 and bf16, host buffers. Copy it as the start of a plugin for your own kernel.
 *
 *   cc -O2 -fPIC -shared -I attnfuzz/harness/include -I attnfuzz/harness example_plugin.c -o example_plugin.so -lm
 *   attnfuzz run corpora/seed/CASE.case --backend plugin:./example_plugin.so
 *
 * It only includes attnfuzz/plugin.h and plugins/metadata_check.h (the checks of token
 * starts, page table and lengths it makes first: attnfuzz's metadata probe hands it
 * malformed ones; the header uses the ABI alone) and never links attnfuzz. Per query row it computes
 * O = softmax(scale * q K^T) V over the visible keys in fp32 and LSE = log-sum-exp,
 * reading every element through the strides, ragged token starts and page table that
 * the descriptors give, so every layout attnfuzz generates works.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/plugin.h"
#include "plugins/metadata_check.h"

AF_PLUGIN_EXPORT uint32_t attnfuzz_plugin_abi_version(void) { return ATTNFUZZ_PLUGIN_ABI_VERSION; }

AF_PLUGIN_EXPORT const af_plugin_info *attnfuzz_plugin_info(void) {
    static const af_plugin_info info = {
        ATTNFUZZ_PLUGIN_ABI_VERSION,
        AF_PLUGIN_DETERMINISTIC | AF_PLUGIN_CHECKS_METADATA,
        "example",
        "naive fp32 attention on the host, forward only (the plugin ABI example)",
    };
    return &info;
}

AF_PLUGIN_EXPORT int attnfuzz_plugin_supports(const af_plugin_problem *p, char *why, size_t cap) {
    if (p->dtype != AF_PLUGIN_DTYPE_FP16 && p->dtype != AF_PLUGIN_DTYPE_BF16) {
        snprintf(why, cap, "example plugin: only fp16 and bf16");
        return AF_PLUGIN_DECLINE;
    }
    if (p->flags & AF_PLUGIN_BACKWARD) {
        snprintf(why, cap, "example plugin: forward only");
        return AF_PLUGIN_DECLINE;
    }
    if (p->kv_dtype != AF_PLUGIN_KV_SAME) { /* K and V are read as the dtype */
        snprintf(why, cap, "example plugin: kv_dtype (fp8 K and V) not implemented");
        return AF_PLUGIN_DECLINE;
    }
    if (p->features) { /* a kernel that lacks a feature declines it; accepting and ignoring is the bug */
        snprintf(why, cap,
                 "example plugin: features (sinks, softcap, score_mod, bias, ALiBi, log2 stats, dLSE, dropout) not "
                 "implemented");
        return AF_PLUGIN_DECLINE;
    }
    if (p->heads_v < 1 || p->heads_q % p->heads_v || p->heads_kv < 1 || p->heads_q % p->heads_kv) {
        snprintf(why, cap, "example plugin: heads_q must be a multiple of heads_kv and heads_v");
        return AF_PLUGIN_DECLINE;
    }
    return AF_PLUGIN_OK;
}

/* ---- fp16 / bf16 <-> fp32, round to nearest even ---------------------------------- */

static float half_to_float(uint16_t h) {
    int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    float v = exp == 0    ? ldexpf((float)mant, -24)
              : exp == 31 ? (mant ? NAN : INFINITY)
                          : ldexpf((float)(mant | 0x400), exp - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t float_to_half(float f) {
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    float a = fabsf(f);
    if (isnan(f)) return 0x7E00;
    if (a >= 65520.0f) return sign | 0x7C00; /* rounds to infinity */
    int e;
    frexpf(a, &e);                       /* a = m * 2^e, m in [0.5, 1) */
    int exp = e - 1 < -14 ? -14 : e - 1; /* subnormals share the exponent -14 */
    /* units of the last place: 2^(exp - 10); rintf rounds half to even */
    float units = rintf(ldexpf(a, 10 - exp));
    if (units >= 2048.0f) {
        units /= 2;
        exp++;
    }                                                   /* carried into the next binade */
    if (units < 1024.0f) return sign | (uint16_t)units; /* subnormal (or zero) */
    return sign | (uint16_t)(((exp + 15) << 10) | ((int)units - 1024));
}

static float bf16_to_float(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t float_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- addressing (plugin.h: "Where logical element (b, h, s, d) lives") ------------ */

static int64_t offset_of(const af_plugin_tensor *x, int b, int h, int s, int d) {
    int64_t hd = (int64_t)h * x->stride_h + d;
    if (x->page_table) {
        int64_t page = x->page_table[(int64_t)b * x->pages_per_seq + s / x->page_size];
        return page * x->stride_b + (int64_t)(s % x->page_size) * x->stride_s + hd;
    }
    if (x->token_start) return (x->token_start[b] + s) * x->stride_s + hd;
    return (int64_t)b * x->stride_b + (int64_t)s * x->stride_s + hd;
}

static float get(const af_plugin_tensor *x, int b, int h, int s, int d) {
    int64_t off = offset_of(x, b, h, s, d);
    if (x->storage == AF_PLUGIN_STORAGE_F32) return ((const float *)x->data)[off];
    uint16_t v = ((const uint16_t *)x->data)[off];
    return x->storage == AF_PLUGIN_STORAGE_F16 ? half_to_float(v) : bf16_to_float(v);
}

static void put(const af_plugin_tensor *x, int b, int h, int s, int d, float value) {
    int64_t off = offset_of(x, b, h, s, d);
    if (x->storage == AF_PLUGIN_STORAGE_F32) {
        ((float *)x->data)[off] = value;
        return;
    }
    ((uint16_t *)x->data)[off] = x->storage == AF_PLUGIN_STORAGE_F16 ? float_to_half(value) : float_to_bf16(value);
}

/* ---- attention --------------------------------------------------------------------- */

AF_PLUGIN_EXPORT int attnfuzz_plugin_run(const af_plugin_problem *p, const af_plugin_tensors *t, char *why,
                                         size_t cap) {
    if (attnfuzz_plugin_supports(p, why, cap) != AF_PLUGIN_OK) return AF_PLUGIN_DECLINE;
    if (af_md_check(p, t, why, cap)) return AF_PLUGIN_ERROR; /* malformed metadata: refused */
    const af_plugin_tensor *Q = &t->t[AF_PLUGIN_Q], *K = &t->t[AF_PLUGIN_K], *V = &t->t[AF_PLUGIN_V];
    const af_plugin_tensor *O = &t->t[AF_PLUGIN_O], *LSE = &t->t[AF_PLUGIN_LSE];
    int group = p->heads_q / p->heads_kv, group_v = p->heads_q / p->heads_v; /* K's and V's heads */
    float *score = malloc(sizeof(float) * (size_t)(p->seqlen_kv > 0 ? p->seqlen_kv : 1));
    float *out = malloc(sizeof(float) * (size_t)p->head_dim_v);
    if (!score || !out) {
        free(score);
        free(out);
        snprintf(why, cap, "example plugin: out of memory");
        return AF_PLUGIN_RESOURCE;
    }
    for (int b = 0; b < p->batch; b++) {
        int len_q = p->seqlens_q[b], len_kv = p->seqlens_kv[b];
        for (int h = 0; h < p->heads_q; h++) {
            int hk = h / group, hv = h / group_v;
            for (int i = 0; i < len_q; i++) {
                /* the visible keys: an interval [lo, hi] */
                long diag = p->align == AF_PLUGIN_ALIGN_BOTTOM_RIGHT ? (long)i + len_kv - len_q : i;
                long lo = 0, hi = len_kv - 1;
                if (p->mask == AF_PLUGIN_MASK_CAUSAL && diag < hi) hi = diag;
                if (p->window_left >= 0 && diag - p->window_left > lo) lo = diag - p->window_left;
                if (p->window_right >= 0 && diag + p->window_right < hi) hi = diag + p->window_right;
                if (lo > hi) { /* fully masked: O = 0, LSE = -inf */
                    for (int d = 0; d < p->head_dim_v; d++) put(O, b, h, i, d, 0.0f);
                    put(LSE, b, h, i, 0, -INFINITY);
                    continue;
                }
                float m = -INFINITY;
                for (long j = lo; j <= hi; j++) {
                    float s = 0.0f;
                    for (int d = 0; d < p->head_dim_qk; d++) s += get(Q, b, h, i, d) * get(K, b, hk, (int)j, d);
                    score[j] = s * p->scale;
                    if (score[j] > m) m = score[j];
                }
                float l = 0.0f;
                for (int d = 0; d < p->head_dim_v; d++) out[d] = 0.0f;
                for (long j = lo; j <= hi; j++) {
                    float w = expf(score[j] - m);
                    l += w;
                    for (int d = 0; d < p->head_dim_v; d++) out[d] += w * get(V, b, hv, (int)j, d);
                }
                for (int d = 0; d < p->head_dim_v; d++) put(O, b, h, i, d, out[d] / l);
                put(LSE, b, h, i, 0, m + logf(l));
            }
        }
    }
    free(score);
    free(out);
    return AF_PLUGIN_OK;
}
