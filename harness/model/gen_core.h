/* gen_core.h — the counter-based input generator, shared by host C (harness/model/gen.c)
 * and CUDA (kernels/gen.cu). Pure integer hashing and IEEE +,-,*,/ in double, with no
 * contraction (-ffp-contract=off on the host, -fmad=false on the device), so both
 * produce the same bits for the same (seed, tensor, logical element).
 *
 * Recipe for element (b, h, s, d) of tensor t with maximum shape (B, H, S, D):
 *   idx = ((b * H + h) * S + s) * D + d,  u = af_gen_hash(seed, t, idx)
 *   base normal(sigma):  x = (sum of the four 16-bit fields of u - 131070) / 65536
 *                        * sqrt(3) * sigma        (Irwin-Hall, unit variance)
 *   base uniform(a):     x = ((u >> 11) * 2^-53 * 2 - 1) * a
 *   outlier_channels(k, m)  Q, K: channels d with (d + seed) % D < k are scaled by m
 *   sink(m)              K, V: token s = 0 scaled by m
 *   low_lse(f, shift)    K: channel 0 = k0 (1 up to shift 1e4, af_gen_low_lse_k0
 *                        beyond); Q: a fraction f of rows get channel 0 =
 *                        -shift / (scale k0), so their scores drop by shift
 *   block_range(E)       K, V: token s scaled by 2^(r % (E + 1) - E / 2), r a hash of
 *                        (b, h, s): wide dynamic range inside every 32-token block
 *   zeros(f)             every tensor: a fraction f of elements is 0
 *   dO uses the base distribution and zeros only.
 * The result is rounded to float (round to nearest) and then to the case dtype.
 */
#ifndef AF_GEN_CORE_H
#define AF_GEN_CORE_H

#include <stdint.h>
#include "model/numeric.h"

#define AF_GEN_MAX_TERMS 8

/* Tensor tags (match af_tensor_id for Q, K, V, dO). */
enum { AF_GEN_Q = 0, AF_GEN_K = 1, AF_GEN_V = 2, AF_GEN_DO = 5 };
/* Term kinds (match af_data_kind). */
enum {
    AF_GEN_NORMAL = 0,
    AF_GEN_UNIFORM,
    AF_GEN_OUTLIER_CHANNELS,
    AF_GEN_SINK,
    AF_GEN_LOW_LSE,
    AF_GEN_BLOCK_RANGE,
    AF_GEN_ZEROS
};

/* Everything the generator needs, as plain data (copyable to the device). */
typedef struct {
    uint64_t seed;
    double scale; /* the case's fp32 scale, as a double */
    int n_terms;
    int kind[AF_GEN_MAX_TERMS];
    double p0[AF_GEN_MAX_TERMS], p1[AF_GEN_MAX_TERMS];
} af_gen_params;

AF_HD uint64_t af_gen_mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* af_gen_hash's part that depends on the seed and the tag only (a loop over one tensor's
 * elements computes it once) */
AF_HD uint64_t af_gen_hash_base(uint64_t seed, uint32_t tag) {
    return af_gen_mix(seed ^ ((uint64_t)tag * 0xD1B54A32D192ED03ull));
}

AF_HD uint64_t af_gen_hash(uint64_t seed, uint32_t tag, uint64_t index) {
    return af_gen_mix(af_gen_hash_base(seed, tag) ^ index);
}

/* Is a hash below fraction f of its range? f in [0, 1]. */
AF_HD int af_gen_below(uint64_t u, double f) {
    if (f >= 1.0) return 1;
    if (f <= 0.0) return 0;
    /* compare the top 53 bits: exact in double */
    return (double)(u >> 11) < f * 9007199254740992.0;
}

AF_HD double af_gen_pow2(int e) {
    double r = 1.0;
    while (e > 0) {
        r *= 2.0;
        e--;
    }
    while (e < 0) {
        r *= 0.5;
        e++;
    }
    return r;
}

/* low_lse's K channel 0: 1 for shifts up to 1e4; beyond (logits far below -1e4, down to
 * -1e6: flashinfer #4267 needs every logit of a row below -5e4) the smallest power of two
 * that keeps Q's channel 0, -shift / (scale k0), within 2048 in magnitude, so fp16 holds
 * both (k0 <= 2^16 for |scale| >= 2^-4 at shift 1e6). */
AF_HD double af_gen_low_lse_k0(double shift, double scale) {
    double k0 = 1.0, s = scale < 0 ? -scale : scale;
    if (shift <= 1e4 || !(s > 0)) return k0;
    while (shift / (s * k0) > 2048.0 && k0 < 1073741824.0) k0 *= 2.0;
    return k0;
}

/* Value of element (b, h, s, d) of tensor `tensor` with maximum shape (H, S, D). */
/* af_gen_element_core with base = af_gen_hash_base(g->seed, tensor) given: the same value */
AF_HD float af_gen_element_based(const af_gen_params *g, uint64_t base, int tensor, int H, int S, int D, int b, int h,
                                 int s, int d) {
    uint64_t row = ((uint64_t)b * (uint64_t)H + (uint64_t)h) * (uint64_t)S + (uint64_t)s;
    uint64_t idx = row * (uint64_t)D + (uint64_t)d;
    uint64_t u = af_gen_mix(base ^ idx);
    double x;
    if (g->kind[0] == AF_GEN_UNIFORM) {
        x = ((double)(u >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0) * g->p0[0];
    } else {
        uint64_t sum = (u & 0xFFFFu) + ((u >> 16) & 0xFFFFu) + ((u >> 32) & 0xFFFFu) + (u >> 48);
        x = ((double)sum - 131070.0) / 65536.0 * 1.7320508075688772 * g->p0[0];
    }
    for (int i = 1; i < g->n_terms; i++) {
        double p0 = g->p0[i], p1 = g->p1[i];
        switch (g->kind[i]) {
            case AF_GEN_OUTLIER_CHANNELS:
                if ((tensor == AF_GEN_Q || tensor == AF_GEN_K) &&
                    (int)(((uint64_t)d + g->seed) % (uint64_t)D) < (int)p0)
                    x = x * p1;
                break;
            case AF_GEN_SINK:
                if ((tensor == AF_GEN_K || tensor == AF_GEN_V) && s == 0) x = x * p0;
                break;
            case AF_GEN_LOW_LSE: {
                double k0 = af_gen_low_lse_k0(p1, g->scale);
                if (d == 0 && tensor == AF_GEN_K) x = k0;
                if (d == 0 && tensor == AF_GEN_Q && af_gen_below(af_gen_hash(g->seed, 0x4C4F57u, row), p0))
                    x = -(p1 / (g->scale * k0));
                break;
            }
            case AF_GEN_BLOCK_RANGE:
                if (tensor == AF_GEN_K || tensor == AF_GEN_V) {
                    int E = (int)p0;
                    uint64_t r = af_gen_hash(g->seed, 0x42524Eu + (uint32_t)tensor, row);
                    int e = (int)(r % (uint64_t)(E + 1)) - E / 2;
                    x = x * af_gen_pow2(e);
                }
                break;
            case AF_GEN_ZEROS:
                if (af_gen_below(af_gen_hash(g->seed, 0x5A45524Fu + (uint32_t)tensor, idx), p0)) x = 0.0;
                break;
            default:
                break;
        }
    }
    return (float)x;
}

AF_HD float af_gen_element_core(const af_gen_params *g, int tensor, int H, int S, int D, int b, int h, int s, int d) {
    return af_gen_element_based(g, af_gen_hash_base(g->seed, (uint32_t)tensor), tensor, H, S, D, b, h, s, d);
}

#endif
