/* model/features.c — the generated feature inputs (features.h). Counter-based like
 * gen_core.h: each value is a function of (seed, tag, logical index), integer and IEEE
 * arithmetic only, so every machine gets the same bits. */
#include "model/features.h"
#include "model/gen_core.h"
#include "model/numeric.h"

#include <math.h>
#include <stdlib.h>

/* Tags of the feature inputs (distinct from the tensor ids gen_core.h uses). */
enum { TAG_SINK = 0x5101, TAG_BIAS = 0x5102, TAG_DLSE = 0x5103, TAG_ALIBI = 0x5104 };

/* Uniform in [0, 1) from 53 bits of a hash. */
static double unit_uniform(uint64_t seed, uint32_t tag, uint64_t index) {
    return (double)(af_gen_hash(seed, tag, index) >> 11) * 0x1p-53;
}

/* About normal(0, 1): Irwin-Hall of four uniforms, centred, variance 1. */
static double near_normal(uint64_t seed, uint32_t tag, uint64_t index) {
    double sum = 0.0;
    for (uint64_t k = 0; k < 4; k++) sum += unit_uniform(seed, tag, 4 * index + k);
    return (sum - 2.0) * 1.7320508075688772;
}

static float round_to_case(const af_case *c, float x) {
    return c->dtype == AF_DT_BF16 ? af_bf16_to_f32(af_f32_to_bf16(x)) : af_f16_to_f32(af_f32_to_f16(x));
}

float af_feature_sink(const af_case *c, int h) {
    if (c->softmax == AF_SOFTMAX_VANILLA) return -INFINITY;
    if (c->softmax == AF_SOFTMAX_OFF_BY_ONE) return 0.0f;
    return (float)(6.0 * unit_uniform(c->seed, TAG_SINK, (uint64_t)h) - 3.0);
}

void af_feature_bias_dims(const af_case *c, int *bb, int *bh) {
    *bb = *bh = 0;
    af_bias_shape full = af_bias_full_query(c->bias);
    if (full == AF_BIAS_NONE) return;
    *bb = (full == AF_BIAS_B1SS || full == AF_BIAS_BHSS) ? c->batch : 1;
    *bh = (full == AF_BIAS_1HSS || full == AF_BIAS_BHSS) ? c->heads_q : 1;
}

int af_feature_bias_rows(const af_case *c) {
    if (c->bias == AF_BIAS_NONE) return 0;
    return af_bias_broadcasts_query(c->bias) ? 1 : c->seqlen_q;
}

float af_feature_bias(const af_case *c, int b, int h, int i, int j) {
    int bb, bh, bq = af_feature_bias_rows(c);
    af_feature_bias_dims(c, &bb, &bh);
    if (!bb) return 0.0f;
    uint64_t index = (((uint64_t)(bb == 1 ? 0 : b) * (uint64_t)bh + (uint64_t)(bh == 1 ? 0 : h)) * (uint64_t)bq +
                      (uint64_t)(bq == 1 ? 0 : i)) *
                         (uint64_t)c->seqlen_kv +
                     (uint64_t)j;
    return round_to_case(c, (float)near_normal(c->seed, TAG_BIAS, index));
}

int af_feature_alibi_batch(const af_case *c) {
    if (c->alibi == AF_ALIBI_NO) return 0;
    return c->alibi_slopes == AF_SLOPES_RANDOM_BATCH ? c->batch : 1;
}

/* The ALiBi paper's recipe: with n the largest power of two <= heads, head h < n takes
 * 2^(-8 (h + 1) / n) and head n + k takes 2^(-8 (2k + 1) / (2n)), every other slope of
 * the 2n-head sequence. */
static double standard_slope(int h, int heads) {
    int n = 1;
    while (2 * n <= heads) n *= 2;
    if (h < n) return exp2(-8.0 * (double)(h + 1) / (double)n);
    return exp2(-8.0 * (double)(2 * (h - n) + 1) / (double)(2 * n));
}

float af_feature_alibi_slope(const af_case *c, int b, int h) {
    if (c->alibi == AF_ALIBI_NO) return 0.0f;
    if (c->alibi == AF_ALIBI_YES) return (float)exp2(-8.0 * (double)(h + 1) / (double)c->heads_q);
    if (c->alibi_slopes == AF_SLOPES_STANDARD) return (float)standard_slope(h, c->heads_q);
    /* random: (m + 1) 2^-24 for a 24-bit m, exact in fp32 and uniform over (0, 1] */
    uint64_t index = (uint64_t)(c->alibi_slopes == AF_SLOPES_RANDOM_BATCH ? b : 0) * (uint64_t)c->heads_q + (uint64_t)h;
    return (float)((double)((af_gen_hash(c->seed, TAG_ALIBI, index) >> 40) + 1) * 0x1p-24);
}

float af_feature_dlse(const af_case *c, int b, int h, int i) {
    if (!c->dlse) return 0.0f;
    uint64_t index = ((uint64_t)b * (uint64_t)c->heads_q + (uint64_t)h) * (uint64_t)c->seqlen_q + (uint64_t)i;
    return (float)(unit_uniform(c->seed, TAG_DLSE, index) - 0.5);
}

void af_features_free(af_inputs *in) {
    free(in->sink);
    free(in->bias);
    free(in->alibi_slope);
    free(in->dlse);
    in->sink = in->bias = in->alibi_slope = in->dlse = NULL;
}

void af_features_of_case(const af_case *c, af_features *f) {
    f->softcap = c->softcap;
    f->score_mod = c->score_mod;
    f->sink = c->softmax == AF_SOFTMAX_VANILLA ? 0 : c->softmax == AF_SOFTMAX_OFF_BY_ONE ? 1 : 2;
    af_feature_bias_dims(c, &f->bias_b, &f->bias_h);
    f->bias_q = af_feature_bias_rows(c);
    f->alibi = c->alibi != AF_ALIBI_NO;
    f->alibi_signed = c->alibi == AF_ALIBI_SIGNED;
    f->alibi_b = af_feature_alibi_batch(c);
    f->lse_base2 = c->lse_base2;
    f->dropout_p = c->dropout_p;
    f->dropout_seed = c->dropout_seed;
    f->dropout_offset = c->dropout_offset;
    f->outputs = (int)c->outputs;
}

int af_features_fill(const af_case *c, af_inputs *in) {
    af_features *f = &in->feat;
    af_features_of_case(c, f);
    if (f->sink) {
        if (!(in->sink = malloc((size_t)c->heads_q * sizeof *in->sink))) return -1;
        for (int h = 0; h < c->heads_q; h++) in->sink[h] = (double)af_feature_sink(c, h);
    }
    if (f->bias_b) {
        size_t n = (size_t)f->bias_b * (size_t)f->bias_h * (size_t)f->bias_q * (size_t)c->seqlen_kv;
        if (!(in->bias = malloc(n * sizeof *in->bias))) return -1;
        size_t k = 0;
        for (int b = 0; b < f->bias_b; b++)
            for (int h = 0; h < f->bias_h; h++)
                for (int i = 0; i < f->bias_q; i++)
                    for (int j = 0; j < c->seqlen_kv; j++) in->bias[k++] = (double)af_feature_bias(c, b, h, i, j);
    }
    if (f->alibi) {
        size_t n = (size_t)f->alibi_b * (size_t)c->heads_q;
        if (!(in->alibi_slope = malloc(n * sizeof *in->alibi_slope))) return -1;
        for (int b = 0; b < f->alibi_b; b++)
            for (int h = 0; h < c->heads_q; h++)
                in->alibi_slope[(size_t)b * (size_t)c->heads_q + (size_t)h] = (double)af_feature_alibi_slope(c, b, h);
    }
    if (c->dlse) {
        size_t n = (size_t)c->batch * (size_t)c->heads_q * (size_t)c->seqlen_q;
        if (!(in->dlse = malloc(n * sizeof *in->dlse))) return -1;
        size_t k = 0;
        for (int b = 0; b < c->batch; b++)
            for (int h = 0; h < c->heads_q; h++)
                for (int i = 0; i < c->seqlen_q; i++) in->dlse[k++] = (double)af_feature_dlse(c, b, h, i);
    }
    return 0;
}
