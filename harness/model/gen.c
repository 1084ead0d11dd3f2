/* gen.c — deterministic inputs: fill the laid-out buffers and the dense logical copy.
 * The value recipe is in harness/model/gen_core.h (shared with the GPU generator). Rows past
 * a sequence's length in padded (non-ragged) buffers get generated values too, so a
 * backend that reads them is caught by the visibility probe; stride and thd gaps in
 * input buffers hold poison NaNs, so a backend that reads them produces NaN.
 */
#include "model/gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parfor.h"

void af_gen_params_of_case(const af_case *c, af_gen_params *g) {
    memset(g, 0, sizeof *g);
    g->seed = c->seed;
    g->scale = (double)af_case_scale(c);
    g->n_terms = c->n_data;
    for (int i = 0; i < c->n_data && i < AF_GEN_MAX_TERMS; i++) {
        g->kind[i] = (int)c->data[i].kind;
        g->p0[i] = c->data[i].p0;
        g->p1[i] = c->data[i].p1;
    }
}

float af_gen_element(const af_case *c, af_tensor_id t, int b, int h, int s, int d) {
    af_gen_params g;
    af_gen_params_of_case(c, &g);
    int H = t == AF_T_K ? c->heads_kv : t == AF_T_V ? af_case_heads_v(c) : c->heads_q;
    int S = (t == AF_T_K || t == AF_T_V) ? c->seqlen_kv : c->seqlen_q;
    int D = (t == AF_T_Q || t == AF_T_K) ? c->head_dim_qk : c->head_dim_v;
    return af_gen_element_core(&g, (int)t, H, S, D, b, h, s, d);
}

static void poison_input(af_tensors *t, af_buffer_id b) {
    if (!t->buf[b]) return;
    af_storage st = t->plan.buffer_storage[b];
    int64_t n = t->plan.buffer_elems[b];
    uint8_t nan_bits[4]; /* NaN as the storage holds it: every element the same bytes */
    af_storage_store(st, nan_bits, 0, NAN);
    size_t size = (size_t)af_storage_bytes(st);
    af_par_fill(t->buf[b], nan_bits, size, (size_t)n * size);
}

static int64_t dense_index(const af_tensor_view *v, int b, int h, int s, int d) {
    return (((int64_t)b * v->H + h) * v->S + s) * v->D + d;
}

static double pow2i(int e) { return ldexp(1.0, e); }

/* The scale for values of amax in fp8 storage st: current scaling max / amax (a power of
 * two, the largest with amax * scale <= max, for kv_dtype's K and V), then headroom binades. */
static float fp8_scale_for(const af_case *c, af_storage st, float amax, int headroom) {
    float scale = amax > 0 ? af_storage_fp8_max(st) / amax : 1.0f;
    /* kv_dtype (an fp8 KV cache under fp16 / bf16 queries): a power of two, so that stored *
     * descale is exact in fp32, fp16 (normal range) and bf16 whether a kernel dequantises on
     * load or folds the descale into its scores and output (docs/fp8.md) */
    if (c->kv_dtype != AF_KV_SAME) scale = af_fp8_output_scale_for(st, amax);
    return ldexpf(scale, -headroom); /* headroom: max / 2^h of the range used */
}

/* fp8 per-tensor current scaling: scale = max / amax, stored = fp8(x * scale), max and
 * fp8 the tensor's storage's (E4M3 448, E5M2 57344). descale = head (Q, K, V): one scale
 * per (b, kv head) slice, from the slice's amax (Q's slice: its kv head's query heads). */
static void quantise_per_tensor(const af_case *c, af_tensors *t, af_tensor_id id, const float *vals, float *descale) {
    const af_tensor_view *v = &t->plan.view[id];
    int slot = id == AF_T_Q ? 0 : id == AF_T_K ? 1 : id == AF_T_V ? 2 : 3; /* case.h: q, k, v, do */
    bool per_head = t->descale_head && id != AF_T_DO;
    int group = per_head ? v->H / c->heads_kv : v->H; /* heads of one slice (all of them per tensor) */
    int slices = per_head ? c->heads_kv : 1;
    for (int b = 0; b < (per_head ? v->B : 1); b++)
        for (int hk = 0; hk < slices; hk++) {
            float amax = 0;
            for (int bb = per_head ? b : 0; bb < (per_head ? b + 1 : v->B); bb++)
                for (int h = hk * group; h < (hk + 1) * group; h++)
                    for (int s = 0; s < v->S; s++)
                        for (int d = 0; d < v->D; d++) {
                            float x = fabsf(vals[dense_index(v, bb, h, s, d)]);
                            if (x > amax) amax = x;
                        }
            float scale = fp8_scale_for(c, v->storage, amax, c->fp8_headroom[slot]);
            if (per_head)
                t->descale_head[((size_t)(slot)*c->batch + b) * c->heads_kv + hk] = 1.0f / scale;
            else
                *descale = 1.0f / scale;
            for (int bb = per_head ? b : 0; bb < (per_head ? b + 1 : v->B); bb++)
                for (int h = hk * group; h < (hk + 1) * group; h++)
                    for (int s = 0; s < af_tensor_rows_in_buffer(c, v, id, bb); s++)
                        for (int d = 0; d < v->D; d++)
                            af_storage_store(v->storage, t->buf[v->buffer], af_layout_offset(&t->plan, id, bb, h, s, d),
                                             vals[dense_index(v, bb, h, s, d)] * scale);
        }
}

/* fp8 output scale (tensors.h): the largest power of two with
 * amax(dequantised stored V) * scale_o <= the O storage's max. Every stored V element counts (padding
 * rows too), which only makes the bound safer. */
static float fp8_output_scale_of(const af_case *c, const af_tensors *t) {
    const af_tensor_view *v = &t->plan.view[AF_T_V];
    double amax = 0;
    for (int b = 0; b < v->B; b++)
        for (int h = 0; h < v->H; h++)
            for (int s = 0; s < af_tensor_rows_in_buffer(c, v, AF_T_V, b); s++)
                for (int d = 0; d < v->D; d++) {
                    double x = fabs(af_storage_load(v->storage, t->buf[v->buffer],
                                                    af_layout_offset(&t->plan, AF_T_V, b, h, s, d))) *
                               af_input_descale(t, c, AF_T_V, b, h); /* the logical V */
                    if (x > amax) amax = x;
                }
    return af_fp8_output_scale_for(t->plan.view[AF_T_O].storage, amax);
}

/* mxfp8: one E8M0 exponent per 32 elements along the contraction axis (d for Q, K;
 * s for V). exponent e = floor(log2(amax)) - 8, stored = e4m3(x * 2^-e). */
static uint8_t *quantise_mx(const af_case *c, af_tensors *t, af_tensor_id id, const float *vals) {
    const af_tensor_view *v = &t->plan.view[id];
    bool along_s = id == AF_T_V;
    int nblk_d = along_s ? v->D : (v->D + 31) / 32;
    int nblk_s = along_s ? (v->S + 31) / 32 : v->S;
    uint8_t *scales = calloc(af_mx_scale_bytes(t, id), 1);
    if (!scales) return NULL;
    for (int b = 0; b < v->B; b++)
        for (int h = 0; h < v->H; h++)
            for (int bs = 0; bs < nblk_s; bs++)
                for (int bd = 0; bd < nblk_d; bd++) {
                    int s0 = along_s ? bs * 32 : bs, s1 = along_s ? bs * 32 + 32 : bs + 1;
                    int d0 = along_s ? bd : bd * 32, d1 = along_s ? bd + 1 : bd * 32 + 32;
                    int rows = af_tensor_rows_in_buffer(c, v, id, b);
                    if (s1 > rows) s1 = rows;
                    if (d1 > v->D) d1 = v->D;
                    float amax = 0;
                    for (int s = s0; s < s1; s++)
                        for (int d = d0; d < d1; d++) {
                            float a = fabsf(vals[dense_index(v, b, h, s, d)]);
                            if (a > amax) amax = a;
                        }
                    int e = 0;
                    if (amax > 0) {
                        int k;
                        frexp((double)amax, &k);
                        e = k - 1 - 8;
                    }
                    if (e < -127) e = -127;
                    if (e > 127) e = 127;
                    scales[(((size_t)b * v->H + h) * nblk_s + bs) * nblk_d + bd] = (uint8_t)(e + 127);
                    float inv = (float)pow2i(-e);
                    for (int s = s0; s < s1; s++)
                        for (int d = d0; d < d1; d++)
                            af_storage_store(AF_ST_E4M3, t->buf[v->buffer], af_layout_offset(&t->plan, id, b, h, s, d),
                                             vals[dense_index(v, b, h, s, d)] * inv);
                }
    return scales;
}

/* Exact logical value of a stored input element (dequantised). */
static double logical_value(const af_case *c, const af_tensors *t, af_tensor_id id, int b, int h, int s, int d) {
    const af_tensor_view *v = &t->plan.view[id];
    double x = af_storage_load(v->storage, t->buf[v->buffer], af_layout_offset(&t->plan, id, b, h, s, d));
    if (!af_storage_is_fp8(v->storage)) return x;
    if (af_dtype_is_fp8_tensor(c->dtype) || c->kv_dtype != AF_KV_SAME) return x * af_input_descale(t, c, id, b, h);
    /* mxfp8 */
    bool along_s = id == AF_T_V;
    int nblk_d = along_s ? v->D : (v->D + 31) / 32;
    int nblk_s = along_s ? (v->S + 31) / 32 : v->S;
    const uint8_t *sc = id == AF_T_Q ? t->mx_scale_q : id == AF_T_K ? t->mx_scale_k : t->mx_scale_v;
    int bs = along_s ? s / 32 : s, bd = along_s ? d : d / 32;
    return x * pow2i((int)sc[(((size_t)b * v->H + h) * nblk_s + bs) * nblk_d + bd] - 127);
}

/* One (b, h) of a tensor's passes below (parfor items: each writes that head's rows only,
 * so the bits do not depend on the thread count). */
typedef struct {
    const af_case *c;
    af_tensors *t;
    af_tensor_id id;
    const af_gen_params *g;
    float *vals; /* (B, H, S, D) dense: generated, or the GPU generator's */
    double *dst; /* af_inputs_read's dense destination */
} head_pass;

static void read_head(void *ctx, long bh) {
    const head_pass *x = ctx;
    const af_tensor_view *v = &x->t->plan.view[x->id];
    int b = (int)(bh / v->H), h = (int)(bh % v->H);
    for (int s = 0; s < af_tensor_valid_rows(x->c, x->id, b); s++)
        for (int d = 0; d < v->D; d++)
            x->dst[dense_index(v, b, h, s, d)] = logical_value(x->c, x->t, x->id, b, h, s, d);
}

static void generate_head(void *ctx, long bh) {
    const head_pass *x = ctx;
    const af_tensor_view *v = &x->t->plan.view[x->id];
    int b = (int)(bh / v->H), h = (int)(bh % v->H);
    int rows = af_tensor_rows_in_buffer(x->c, v, x->id, b);
    uint64_t base = af_gen_hash_base(x->g->seed, (uint32_t)x->id);
    for (int s = 0; s < rows; s++)
        for (int d = 0; d < v->D; d++)
            x->vals[dense_index(v, b, h, s, d)] =
                af_gen_element_based(x->g, base, (int)x->id, v->H, v->S, v->D, b, h, s, d);
}

/* The head's rows into the buffer, a row at a time; with x->dst (a storage read back as
 * itself: not fp8) the valid rows' stored values into the dense inputs too, as
 * af_inputs_read would read them back (the same bits, one pass instead of two). */
static void store_head(void *ctx, long bh) {
    const head_pass *x = ctx;
    const af_tensor_view *v = &x->t->plan.view[x->id];
    int b = (int)(bh / v->H), h = (int)(bh % v->H);
    int rows = af_tensor_rows_in_buffer(x->c, v, x->id, b), valid = x->dst ? af_tensor_valid_rows(x->c, x->id, b) : 0;
    for (int s = 0; s < rows; s++) {
        int64_t off = af_layout_offset(&x->t->plan, x->id, b, h, s, 0); /* + d: model/layout.h */
        af_storage_store_row(v->storage, x->t->buf[v->buffer], off, v->D, x->vals + dense_index(v, b, h, s, 0),
                             s < valid ? x->dst + dense_index(v, b, h, s, 0) : NULL);
    }
}

static int head_threads(const af_tensor_view *v) { return af_parfor_threads((double)v->B * v->H * v->S * v->D); }

/* af_inputs_read of the tensors whose bit (1u << i, i into Q, K, V, dO) is set in which. */
static void inputs_read_some(const af_case *c, const af_tensors *t, af_inputs *in, unsigned which) {
    af_tensor_id ids[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    double *dst[4] = {in->q, in->k, in->v, in->dout};
    for (int i = 0; i < 4; i++) {
        if (!dst[i] || !(which & (1u << i))) continue;
        const af_tensor_view *v = &t->plan.view[ids[i]];
        af_par_memset(dst[i], 0, sizeof(double) * (size_t)v->B * v->H * v->S * v->D);
        head_pass x = {c, (af_tensors *)t, ids[i], NULL, NULL, dst[i]};
        af_parfor((long)v->B * v->H, head_threads(v), read_head, &x);
    }
}

void af_inputs_read(const af_case *c, const af_tensors *t, af_inputs *in) { inputs_read_some(c, t, in, 0xFu); }

int af_inputs_generate(const af_case *c, af_tensors *t, af_inputs *in) {
    return af_inputs_generate_from(c, t, in, NULL);
}

int af_inputs_of_case_file(const char *path, af_case *c, af_tensors *t, af_inputs *in, char *why, size_t cap) {
    af_error err;
    if (af_case_load(path, c, &err) != 0) {
        af_error_format(&err, why, cap);
        return -1;
    }
    char tw[256] = "";
    if (af_tensors_alloc(t, c, tw, sizeof tw) != 0 || af_inputs_alloc(in, c) != 0 ||
        af_inputs_generate(c, t, in) != 0) {
        snprintf(why, cap, "%s: cannot generate the inputs (%s)", path, tw[0] ? tw : "out of memory");
        return -1;
    }
    return 0;
}

int af_inputs_generate_from(const af_case *c, af_tensors *t, af_inputs *in, float *const pregen[4]) {
    af_gen_params g;
    af_gen_params_of_case(c, &g);
    af_buffer_id in_bufs[4] = {AF_BUF_Q, AF_BUF_K, AF_BUF_V, AF_BUF_DO};
    for (int i = 0; i < 4; i++) poison_input(t, in_bufs[i]);
    af_tensor_id ids[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    unsigned read_back = 0xFu; /* the dense inputs still to read from the buffers */
    for (int i = 0; i < 4; i++) {
        af_tensor_id id = ids[i];
        if (id == AF_T_DO && !c->backward) continue;
        const af_tensor_view *v = &t->plan.view[id];
        int64_t n = (int64_t)v->B * v->H * v->S * v->D;
        bool given = pregen && pregen[i]; /* the caller's values (GPU generator), not ours */
        float *vals = given ? pregen[i] : calloc((size_t)n, sizeof(float));
        if (!vals) return -1;
        head_pass x = {c, t, id, &g, vals, NULL};
        if (!given) af_parfor((long)v->B * v->H, head_threads(v), generate_head, &x);
        /* fp16 / bf16 / fp32: the dense input read back while storing (store_head) */
        double *dst[4] = {in->q, in->k, in->v, in->dout};
        if (!af_storage_is_fp8(v->storage) && dst[i]) {
            af_par_memset(dst[i], 0, sizeof(double) * (size_t)n);
            x.dst = dst[i];
            read_back &= ~(1u << i);
        }
        if (v->paged && !c->page_tail_nan) {
            /* unused slots of each sequence's last page: finite stale values, as in a
             * reused KV cache (page_tail = nan leaves the NaN poison there) */
            for (int b = 0; b < v->B; b++)
                for (int h = 0; h < v->H; h++)
                    for (int s = v->S; s < t->plan.pages_per_seq * t->plan.page_size; s++)
                        for (int d = 0; d < v->D; d++)
                            af_storage_store(v->storage, t->buf[v->buffer], af_layout_offset(&t->plan, id, b, h, s, d),
                                             af_gen_element_core(&g, (int)id + 16, v->H, v->S, v->D, b, h, s, d));
        }
        if (!af_storage_is_fp8(v->storage)) {
            af_parfor((long)v->B * v->H, head_threads(v), store_head, &x);
        } else if (af_dtype_is_fp8_tensor(c->dtype) || c->kv_dtype != AF_KV_SAME) {
            float *descale = id == AF_T_Q   ? &t->descale_q
                             : id == AF_T_K ? &t->descale_k
                             : id == AF_T_V ? &t->descale_v
                                            : &t->descale_do;
            quantise_per_tensor(c, t, id, vals, descale);
        } else {
            uint8_t *sc = quantise_mx(c, t, id, vals);
            if (!sc) {
                if (!given) free(vals);
                return -1;
            }
            if (id == AF_T_Q)
                t->mx_scale_q = sc;
            else if (id == AF_T_K)
                t->mx_scale_k = sc;
            else
                t->mx_scale_v = sc;
        }
        if (!given) free(vals);
    }
    if (af_storage_is_fp8(t->plan.view[AF_T_O].storage)) /* out_dtype fp16 / bf16: no output scale */
        t->descale_o = ldexpf(1.0f / fp8_output_scale_of(c, t), c->fp8_headroom[4]);
    inputs_read_some(c, t, in, read_back);
    return 0;
}
