/* tensors.c — host buffers with guard margins, poison, dense logical views. */
#include "model/tensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/features.h"
#include "model/numeric.h"
#include "util/parfor.h"

int af_tensors_alloc(af_tensors *t, const af_case *c, char *why, size_t cap) {
    af_tensors_mem mem = {NULL, NULL, true};
    return af_tensors_alloc_from(t, c, &mem, why, cap);
}

int af_tensors_alloc_from(af_tensors *t, const af_case *c, const af_tensors_mem *mem, char *why, size_t cap) {
    memset(t, 0, sizeof *t);
    if (af_layout_plan_make(c, &t->plan, why, cap)) return -1;
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        int64_t n = t->plan.buffer_elems[i];
        if (n <= 0) continue;
        size_t bytes = (size_t)n * (size_t)af_storage_bytes(t->plan.buffer_storage[i]);
        t->alloc[i] = mem->take ? mem->take(mem->ctx, bytes + 2 * AF_GUARD_BYTES) : NULL;
        if (!t->alloc[i]) t->alloc[i] = malloc(bytes + 2 * AF_GUARD_BYTES);
        if (!t->alloc[i]) {
            snprintf(why, cap, "out of host memory for buffer %s (%zu bytes)", af_buffer_name((af_buffer_id)i), bytes);
            af_tensors_free(t);
            return -1;
        }
        if (mem->fill) af_par_memset(t->alloc[i], (int)AF_GUARD_BYTE, bytes + 2 * AF_GUARD_BYTES);
        t->buf[i] = t->alloc[i] + AF_GUARD_BYTES;
        t->bytes[i] = bytes;
    }
    if (af_case_has_dsink(c) && !(t->dsink = malloc((size_t)c->heads_q * sizeof *t->dsink))) {
        snprintf(why, cap, "out of host memory for dsink");
        af_tensors_free(t);
        return -1;
    }
    size_t n_row = af_case_row_stats_elems(c), n_logit = af_case_max_logit_elems(c);
    if ((n_row &&
         (!(t->row_max = malloc(n_row * sizeof(float))) || !(t->row_sumexp = malloc(n_row * sizeof(float))))) ||
        (n_logit && !(t->max_logit = malloc(n_logit * sizeof(float))))) {
        snprintf(why, cap, "out of host memory for the score statistics");
        af_tensors_free(t);
        return -1;
    }
    size_t n_keep = af_case_dropout_keep_elems(c);
    t->dropout_keep_elems = n_keep;
    if (n_keep && !(t->dropout_keep = malloc(n_keep))) {
        snprintf(why, cap, "out of host memory for the dropout mask (%zu bytes)", n_keep);
        af_tensors_free(t);
        return -1;
    }
    if (c->descale_head) {
        size_t n = (size_t)3 * c->batch * c->heads_kv;
        if (!(t->descale_head = malloc(n * sizeof *t->descale_head))) {
            snprintf(why, cap, "out of host memory for the per-head descales");
            af_tensors_free(t);
            return -1;
        }
        for (size_t i = 0; i < n; i++) t->descale_head[i] = 1.0f;
    }
    t->descale_q = t->descale_k = t->descale_v = t->descale_do = t->descale_o = 1.0f;
    t->descale_dq = t->descale_dk = t->descale_dv = t->descale_dp = 1.0f;
    return 0;
}

size_t af_mx_scale_bytes(const af_tensors *t, af_tensor_id id) {
    const af_tensor_view *v = &t->plan.view[id];
    bool along_s = id == AF_T_V; /* V's blocks run along s, Q's and K's along d */
    size_t nblk_d = along_s ? (size_t)v->D : (size_t)(v->D + 31) / 32;
    size_t nblk_s = along_s ? (size_t)(v->S + 31) / 32 : (size_t)v->S;
    return (size_t)v->B * (size_t)v->H * nblk_s * nblk_d;
}

void af_tensors_free(af_tensors *t) {
    for (int i = 0; i < AF_BUF_COUNT; i++) free(t->alloc[i]);
    free(t->mx_scale_q);
    free(t->mx_scale_k);
    free(t->mx_scale_v);
    free(t->dsink);
    free(t->row_max);
    free(t->row_sumexp);
    free(t->max_logit);
    free(t->dropout_keep);
    free(t->descale_head);
    free(t->bias_given);
    memset(t, 0, sizeof *t);
}

float *af_tensors_bias_alloc(af_tensors *t, const af_case *c) {
    int bb, bh, rows = af_feature_bias_rows(c);
    af_feature_bias_dims(c, &bb, &bh);
    size_t n = (size_t)bb * (size_t)bh * (size_t)rows * (size_t)c->seqlen_kv;
    free(t->bias_given);
    t->bias_given = n ? calloc(n, sizeof *t->bias_given) : NULL;
    t->bias_given_elems = t->bias_given ? n : 0;
    return t->bias_given;
}

float af_tensors_bias_at(const af_case *c, const af_tensors *t, int b, int h, int i, int j) {
    if (!t || !t->bias_given) return af_feature_bias(c, b, h, i, j);
    int bb, bh, rows = af_feature_bias_rows(c);
    af_feature_bias_dims(c, &bb, &bh);
    size_t k = (((size_t)(bb == 1 ? 0 : b) * (size_t)bh + (size_t)(bh == 1 ? 0 : h)) * (size_t)rows +
                (size_t)(rows == 1 ? 0 : i)) *
                   (size_t)c->seqlen_kv +
               (size_t)j;
    return k < t->bias_given_elems ? t->bias_given[k] : 0.0f;
}

static void fill_poison(void *buf, size_t bytes, af_storage st) {
    switch (st) {
        case AF_ST_F16:
        case AF_ST_BF16: {
            uint16_t v = st == AF_ST_F16 ? AF_POISON_F16 : AF_POISON_BF16;
            af_par_fill(buf, &v, 2, bytes);
            break;
        }
        case AF_ST_E4M3:
            af_par_memset(buf, AF_POISON_E4M3, bytes);
            break;
        case AF_ST_E5M2:
            af_par_memset(buf, AF_POISON_E5M2, bytes);
            break;
        case AF_ST_F32: {
            uint32_t v = AF_POISON_F32;
            af_par_fill(buf, &v, 4, bytes);
            break;
        }
    }
}

unsigned af_tensors_output_buffers(const af_tensors *t, const af_case *c) {
    static const af_buffer_id outs[] = {AF_BUF_O, AF_BUF_LSE, AF_BUF_DQ, AF_BUF_DK, AF_BUF_DV};
    unsigned w = 0;
    for (int i = 0; i < (c->backward ? 5 : 2); i++)
        if (t->buf[outs[i]]) w |= 1u << outs[i];
    return w;
}

void af_tensors_poison_outputs(af_tensors *t, const af_case *c) {
    unsigned outs = af_tensors_output_buffers(t, c);
    for (int b = 0; b < AF_BUF_COUNT; b++)
        if (outs & (1u << b)) fill_poison(t->buf[b], t->bytes[b], t->plan.buffer_storage[b]);
    if (t->dsink) fill_poison(t->dsink, (size_t)c->heads_q * sizeof *t->dsink, AF_ST_F32);
    if (t->row_max) fill_poison(t->row_max, af_case_row_stats_elems(c) * sizeof(float), AF_ST_F32);
    if (t->row_sumexp) fill_poison(t->row_sumexp, af_case_row_stats_elems(c) * sizeof(float), AF_ST_F32);
    if (t->max_logit) fill_poison(t->max_logit, af_case_max_logit_elems(c) * sizeof(float), AF_ST_F32);
    if (t->dropout_keep) memset(t->dropout_keep, (int)AF_GUARD_BYTE, t->dropout_keep_elems);
    t->dropout_keep_returned = false;
}

bool af_case_has_dsink(const af_case *c) { return c->softmax == AF_SOFTMAX_LEARNABLE && c->backward; }

size_t af_case_row_stats_elems(const af_case *c) {
    return c->outputs == AF_OUTPUTS_MAX_SUMEXP ? (size_t)c->batch * (size_t)c->heads_q * (size_t)c->seqlen_q : 0;
}
size_t af_case_dropout_keep_elems(const af_case *c) {
    return c->dropout_rng == AF_DROPOUT_RNG_KERNEL && c->dropout_p != 0.0
               ? (size_t)c->batch * (size_t)c->heads_q * (size_t)c->seqlen_q * (size_t)c->seqlen_kv
               : 0;
}
size_t af_case_max_logit_elems(const af_case *c) {
    return c->outputs == AF_OUTPUTS_MAX_LOGIT ? (size_t)c->batch * (size_t)c->heads_q : 0;
}

void af_tensors_copy(af_tensors *dst, const af_tensors *src) {
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (src->alloc[i] && dst->alloc[i])
            af_par_memcpy(dst->alloc[i], src->alloc[i], src->bytes[i] + 2 * AF_GUARD_BYTES);
    dst->descale_q = src->descale_q;
    dst->descale_k = src->descale_k;
    dst->descale_v = src->descale_v;
    dst->descale_do = src->descale_do;
    dst->descale_dq = src->descale_dq;
    dst->descale_dk = src->descale_dk;
    dst->descale_dv = src->descale_dv;
    dst->descale_dp = src->descale_dp;
    dst->descale_o = src->descale_o;
    if (src->descale_head && dst->descale_head) /* the same case: (3, B, Hkv) both */
        memcpy(dst->descale_head, src->descale_head,
               (size_t)3 * src->plan.view[AF_T_K].B * src->plan.view[AF_T_K].H * sizeof *dst->descale_head);
    if (src->dsink && dst->dsink) memcpy(dst->dsink, src->dsink, (size_t)src->plan.view[AF_T_O].H * sizeof *dst->dsink);
    const af_tensor_view *o = &src->plan.view[AF_T_O];
    size_t n_row = (size_t)o->B * (size_t)o->H * (size_t)o->S, n_logit = (size_t)o->B * (size_t)o->H;
    if (src->row_max && dst->row_max) memcpy(dst->row_max, src->row_max, n_row * sizeof(float));
    if (src->row_sumexp && dst->row_sumexp) memcpy(dst->row_sumexp, src->row_sumexp, n_row * sizeof(float));
    if (src->max_logit && dst->max_logit) memcpy(dst->max_logit, src->max_logit, n_logit * sizeof(float));
    if (src->dropout_keep && dst->dropout_keep) /* the same case: (B, Hq, Sq, Skv) both */
        memcpy(dst->dropout_keep, src->dropout_keep, src->dropout_keep_elems);
    dst->dropout_keep_returned = src->dropout_keep_returned;
    if (src->bias_given && dst->bias_given && src->bias_given_elems == dst->bias_given_elems)
        memcpy(dst->bias_given, src->bias_given, src->bias_given_elems * sizeof *dst->bias_given);
}

static double *dense(int64_t n) { return n > 0 ? calloc((size_t)n, sizeof(double)) : NULL; }

#define SHAPE_FROM_CASE(x, c)                                                                                          \
    do {                                                                                                               \
        (x)->B = (c)->batch;                                                                                           \
        (x)->Hq = (c)->heads_q;                                                                                        \
        (x)->Hkv = (c)->heads_kv;                                                                                      \
        (x)->Hv = af_case_heads_v(c);                                                                                  \
        (x)->Sq = (c)->seqlen_q;                                                                                       \
        (x)->Skv = (c)->seqlen_kv;                                                                                     \
        (x)->Dqk = (c)->head_dim_qk;                                                                                   \
        (x)->Dv = (c)->head_dim_v;                                                                                     \
    } while (0)

int af_inputs_alloc(af_inputs *in, const af_case *c) {
    memset(in, 0, sizeof *in);
    SHAPE_FROM_CASE(in, c);
    int64_t B = c->batch;
    in->q = dense(B * c->heads_q * c->seqlen_q * c->head_dim_qk);
    in->k = dense(B * c->heads_kv * c->seqlen_kv * c->head_dim_qk);
    in->v = dense(B * af_case_heads_v(c) * c->seqlen_kv * c->head_dim_v);
    if (c->backward) in->dout = dense(B * c->heads_q * c->seqlen_q * c->head_dim_v);
    if (!in->q || !in->k || !in->v || (c->backward && !in->dout) || af_features_fill(c, in) != 0) {
        af_inputs_free(in);
        return -1;
    }
    return 0;
}

void af_inputs_free(af_inputs *in) {
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->dout);
    af_features_free(in);
    memset(in, 0, sizeof *in);
}

int af_outputs_alloc(af_outputs *out, const af_case *c) {
    memset(out, 0, sizeof *out);
    SHAPE_FROM_CASE(out, c);
    int64_t B = c->batch;
    out->o = dense(B * c->heads_q * c->seqlen_q * c->head_dim_v);
    out->lse = dense(B * c->heads_q * c->seqlen_q);
    if (c->backward) {
        out->dq = dense(B * c->heads_q * c->seqlen_q * c->head_dim_qk);
        out->dk = dense(B * c->heads_kv * c->seqlen_kv * c->head_dim_qk);
        out->dv = dense(B * af_case_heads_v(c) * c->seqlen_kv * c->head_dim_v);
    }
    if (af_case_has_dsink(c)) out->dsink = dense(c->heads_q);
    int64_t n_row = (int64_t)af_case_row_stats_elems(c), n_logit = (int64_t)af_case_max_logit_elems(c);
    if (n_row) out->row_max = dense(n_row), out->row_sumexp = dense(n_row);
    if (n_logit) out->max_logit = dense(n_logit);
    if (!out->o || !out->lse || (c->backward && (!out->dq || !out->dk || !out->dv)) ||
        (af_case_has_dsink(c) && !out->dsink) || (n_row && (!out->row_max || !out->row_sumexp)) ||
        (n_logit && !out->max_logit)) {
        af_outputs_free(out);
        return -1;
    }
    return 0;
}

void af_outputs_free(af_outputs *out) {
    free(out->o);
    free(out->lse);
    free(out->dq);
    free(out->dk);
    free(out->dv);
    free(out->dsink);
    free(out->row_max);
    free(out->row_sumexp);
    free(out->max_logit);
    memset(out, 0, sizeof *out);
}

double af_storage_load(af_storage s, const void *buf, int64_t offset) {
    const uint8_t *p = buf;
    switch (s) {
        case AF_ST_F16: {
            uint16_t v;
            memcpy(&v, p + offset * 2, 2);
            return (double)af_f16_to_f32(v);
        }
        case AF_ST_BF16: {
            uint16_t v;
            memcpy(&v, p + offset * 2, 2);
            return (double)af_bf16_to_f32(v);
        }
        case AF_ST_E4M3:
            return (double)af_e4m3_to_f32(p[offset]);
        case AF_ST_E5M2:
            return (double)af_e5m2_to_f32(p[offset]);
        case AF_ST_F32: {
            float v;
            memcpy(&v, p + offset * 4, 4);
            return (double)v;
        }
    }
    return NAN;
}

void af_storage_load_row(af_storage s, const void *buf, int64_t offset, int n, double scale, double *dst) {
    const uint8_t *p = buf;
    switch (s) { /* the switch once per row, not per element (a loop per type) */
        case AF_ST_F16:
            for (int k = 0; k < n; k++) {
                uint16_t v;
                memcpy(&v, p + (offset + k) * 2, 2);
                dst[k] = scale * (double)af_f16_to_f32(v);
            }
            return;
        case AF_ST_BF16:
            for (int k = 0; k < n; k++) {
                uint16_t v;
                memcpy(&v, p + (offset + k) * 2, 2);
                dst[k] = scale * (double)af_bf16_to_f32(v);
            }
            return;
        case AF_ST_E4M3:
            for (int k = 0; k < n; k++) dst[k] = scale * (double)af_e4m3_to_f32(p[offset + k]);
            return;
        case AF_ST_E5M2:
            for (int k = 0; k < n; k++) dst[k] = scale * (double)af_e5m2_to_f32(p[offset + k]);
            return;
        case AF_ST_F32:
            for (int k = 0; k < n; k++) {
                float v;
                memcpy(&v, p + (offset + k) * 4, 4);
                dst[k] = scale * (double)v;
            }
            return;
    }
    for (int k = 0; k < n; k++) dst[k] = NAN;
}

void af_storage_store(af_storage s, void *buf, int64_t offset, float value) {
    af_storage_store_row(s, buf, offset, 1, &value, NULL);
}

bool af_storage_row_finite(af_storage s, const void *buf, int64_t offset, int n) {
    const af_storage_facts *f = af_storage_facts_of(s);
    const uint8_t *p = buf;
    uint32_t m = f->nonfinite_bits, bad = 0; /* every bit of m set: Inf or NaN */
    switch (f->bytes) {                      /* a loop per width, each element read with a fixed-size copy */
        case 1:
            for (int k = 0; k < n; k++) bad |= (uint32_t)((p[offset + k] & m) == m);
            break;
        case 2:
            for (int k = 0; k < n; k++) {
                uint16_t v;
                memcpy(&v, p + (offset + k) * 2, 2);
                bad |= (uint32_t)((v & m) == m);
            }
            break;
        default:
            for (int k = 0; k < n; k++) {
                uint32_t v;
                memcpy(&v, p + (offset + k) * 4, 4);
                bad |= (uint32_t)((v & m) == m);
            }
    }
    return !bad;
}

void af_storage_store_row(af_storage s, void *buf, int64_t offset, int n, const float *src, double *back) {
    uint8_t *p = buf;
    switch (s) { /* the switch once per row, not per element (a loop per type) */
        case AF_ST_F16:
            for (int k = 0; k < n; k++) {
                uint16_t v = af_f32_to_f16(src[k]);
                memcpy(p + (offset + k) * 2, &v, 2);
                if (back) back[k] = (double)af_f16_to_f32(v);
            }
            return;
        case AF_ST_BF16:
            for (int k = 0; k < n; k++) {
                uint16_t v = af_f32_to_bf16(src[k]);
                memcpy(p + (offset + k) * 2, &v, 2);
                if (back) back[k] = (double)af_bf16_to_f32(v);
            }
            return;
        case AF_ST_E4M3:
            for (int k = 0; k < n; k++) {
                p[offset + k] = af_f32_to_e4m3(src[k]);
                if (back) back[k] = (double)af_e4m3_to_f32(p[offset + k]);
            }
            return;
        case AF_ST_E5M2:
            for (int k = 0; k < n; k++) {
                p[offset + k] = af_f32_to_e5m2(src[k]);
                if (back) back[k] = (double)af_e5m2_to_f32(p[offset + k]);
            }
            return;
        case AF_ST_F32:
            memcpy(p + offset * 4, src, (size_t)n * 4);
            for (int k = 0; back && k < n; k++) back[k] = (double)src[k];
            return;
    }
}

/* dense (b, h, s, d) index */
static int64_t di(int H, int S, int D, int b, int h, int s, int d) { return (((int64_t)b * H + h) * S + s) * D + d; }

/* One (b, h) of read_tensor (a parfor item: its rows only). */
typedef struct {
    const af_tensors *t;
    const af_case *c;
    af_tensor_id id;
    double scale, *dst; /* dst: (B, H, S, D) dense */
} read_ctx;

static void read_head(void *ctx, long bh) {
    const read_ctx *x = ctx;
    const af_tensor_view *v = &x->t->plan.view[x->id];
    bool kv = x->id == AF_T_DK || x->id == AF_T_DV;
    int b = (int)(bh / v->H), h = (int)(bh % v->H);
    int len = kv ? af_case_len_kv(x->c, b) : af_case_len_q(x->c, b);
    for (int s = 0; s < len; s++)
        af_storage_load_row(v->storage, x->t->buf[v->buffer], af_layout_offset(&x->t->plan, x->id, b, h, s, 0), v->D,
                            x->scale, x->dst + di(v->H, v->S, v->D, b, h, s, 0));
}

static void read_tensor(const af_tensors *t, const af_case *c, af_tensor_id id, double *dst) {
    const af_tensor_view *v = &t->plan.view[id];
    read_ctx x = {t, c, id, af_output_descale(t, id) /* E4M3 outputs: a power of two, exact */, dst};
    /* (b, h) pairs write disjoint rows: the same values whatever the thread count */
    af_parfor((long)v->B * v->H, af_parfor_threads((double)v->B * v->H * v->S * v->D), read_head, &x);
}

void af_outputs_read(const af_tensors *t, const af_case *c, af_outputs *out) { af_outputs_read_only(t, c, out, ~0u); }

void af_outputs_read_only(const af_tensors *t, const af_case *c, af_outputs *out, unsigned tensors) {
    if (tensors & (1u << AF_T_O)) read_tensor(t, c, AF_T_O, out->o);
    if (tensors & (1u << AF_T_LSE)) read_tensor(t, c, AF_T_LSE, out->lse);
    if ((tensors & (1u << AF_T_LSE)) &&
        c->lse_base2) { /* stats = log2: compared in the natural base (x ln 2, one rounding) */
        size_t rows = (size_t)c->batch * (size_t)c->heads_q * (size_t)c->seqlen_q;
        for (size_t k = 0; k < rows; k++)
            if (isfinite(out->lse[k])) out->lse[k] *= 0.69314718055994530942;
    }
    if (out->dsink && t->dsink)
        for (int h = 0; h < c->heads_q; h++) out->dsink[h] = (double)t->dsink[h];
    /* the score statistics are always read, as dsink */
    size_t n_row = af_case_row_stats_elems(c), n_logit = af_case_max_logit_elems(c);
    if (out->row_max && t->row_max)
        for (size_t k = 0; k < n_row; k++) out->row_max[k] = (double)t->row_max[k];
    if (out->row_sumexp && t->row_sumexp)
        for (size_t k = 0; k < n_row; k++) out->row_sumexp[k] = (double)t->row_sumexp[k];
    if (out->max_logit && t->max_logit)
        for (size_t k = 0; k < n_logit; k++) out->max_logit[k] = (double)t->max_logit[k];
    if (c->backward) {
        if (tensors & (1u << AF_T_DQ)) read_tensor(t, c, AF_T_DQ, out->dq);
        if (tensors & (1u << AF_T_DK)) read_tensor(t, c, AF_T_DK, out->dk);
        if (tensors & (1u << AF_T_DV)) read_tensor(t, c, AF_T_DV, out->dv);
    }
}

double af_output_descale(const af_tensors *t, af_tensor_id id) {
    if (!af_storage_is_fp8(t->plan.view[id].storage)) return 1.0;
    switch (id) {
        case AF_T_O:
            return (double)t->descale_o;
        case AF_T_DQ:
            return (double)t->descale_dq;
        case AF_T_DK:
            return (double)t->descale_dk;
        case AF_T_DV:
            return (double)t->descale_dv;
        default:
            return 1.0; /* inputs are not outputs */
    }
}

double af_input_descale(const af_tensors *t, const af_case *c, af_tensor_id id, int b, int h) {
    bool kv = id == AF_T_K || id == AF_T_V;
    if (!af_dtype_is_fp8_tensor(c->dtype) && !(kv && c->kv_dtype != AF_KV_SAME)) return 1.0;
    if (t->descale_head && id != AF_T_DO) /* V's heads are K's (validate) */
        return (double)af_head_descale(t, c, id, b, id == AF_T_Q ? h / (c->heads_q / c->heads_kv) : h);
    return (double)(id == AF_T_Q   ? t->descale_q
                    : id == AF_T_K ? t->descale_k
                    : id == AF_T_V ? t->descale_v
                                   : t->descale_do);
}

float af_fp8_output_scale(double amax_v) { return af_fp8_output_scale_for(AF_ST_E4M3, amax_v); }

float af_fp8_output_scale_for(af_storage st, double amax_v) {
    if (!(amax_v > 0) || !isfinite(amax_v)) return 1.0f;
    int e;
    frexp((double)af_storage_fp8_max(st) / amax_v, &e); /* max / amax = m * 2^e, m in [0.5, 1) */
    e -= 1;                                             /* 2^e <= max / amax < 2^(e+1) */
    if (e > 126) e = 126;
    if (e < -126) e = -126;
    return (float)ldexp(1.0, e);
}

float af_fp8_round(af_storage st, float x) {
    return st == AF_ST_E5M2 ? af_e5m2_to_f32(af_f32_to_e5m2(x)) : af_e4m3_to_f32(af_f32_to_e4m3(x));
}
