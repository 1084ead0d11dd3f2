/* cudnn_graph_fwd.c — SDPA forward graphs: composite (cudnn-frontend's lowering) and
 * the unified SDPA_FWD operation (features: composite only). Shapes: S = [b,hq,sq,skv] scores, R = [b,hq,sq,1]
 * row statistics, both fp32 and packed. */
#include "backends/cudnn/cudnn_sdpa.h"

#ifdef ATTNFUZZ_HAVE_CUDA

#include <math.h>

/* Real Q, K^T (or the paged load into a virtual K^T), V, O and Stats. */
typedef struct {
    cg_t q, kt, v, o, stats, seq_q, seq_kv;
} fwd_io;

static void set4(int64_t a[4], int64_t x0, int64_t x1, int64_t x2, int64_t x3) {
    a[0] = x0;
    a[1] = x1;
    a[2] = x2;
    a[3] = x3;
}

/* Ragged offset tensors ([b+1,1,1,1] INT32), one per tensor, NULL when not ragged. */
static cg_t ragged(af_cg *g, const af_sdpa_desc *d, int slot) {
    return d->ragged ? cg_index_tensor(g, d->b + 1, slot) : NULL;
}
/* The same for K, V, dK, dV: none over padded (layout_kv) or paged K/V. */
static cg_t ragged_kv(af_cg *g, const af_sdpa_desc *d, int slot) {
    return d->ragged_kv ? cg_index_tensor(g, d->b + 1, slot) : NULL;
}

static void fwd_inputs(af_cg *g, const af_sdpa_desc *d, fwd_io *io) {
    int64_t dims[4], str[4];
    set4(dims, d->b, d->hq, d->sq, d->dqk);
    io->q = cg_tensor(g, d->io, dims, d->str[AF_T_Q], CG_SLOT_Q, ragged(g, d, CG_SLOT_RAG_Q));
    io->seq_q = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_Q) : NULL;
    io->seq_kv = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_KV) : NULL;
    if (d->paged) {
        /* containers [n_pages, hk, page_size, d] (bshd inside a page), one page table */
        int64_t pt_dims[4], pt_str[4];
        set4(pt_dims, d->b, 1, d->pages_per_seq, 1);
        set4(pt_str, d->pages_per_seq, d->pages_per_seq, 1, 1);
        cg_t pt_k = cg_tensor(g, CUDNN_DATA_INT32, pt_dims, pt_str, CG_SLOT_PAGE_TABLE, NULL);
        cg_t pt_v = cg_tensor(g, CUDNN_DATA_INT32, pt_dims, pt_str, CG_SLOT_PAGE_TABLE, NULL);
        set4(dims, d->n_pages, d->hk, d->page_size, d->dqk);
        cg_t kc = cg_tensor(g, d->io, dims, d->str[AF_T_K], CG_SLOT_K, NULL);
        set4(dims, d->n_pages, d->hk, d->page_size, d->dv);
        cg_t vc = cg_tensor(g, d->io, dims, d->str[AF_T_V], CG_SLOT_V, NULL);
        /* K^T virtual [b,hk,dqk,skv] (bhds), V virtual [b,hk,skv,dv] (bhsd), as FE */
        set4(dims, d->b, d->hk, d->dqk, d->skv);
        set4(str, d->dqk * d->skv * d->hk, d->dqk * d->skv, 1, d->dqk);
        io->kt = cg_virtual(g, d->io, dims, str);
        cg_paged_cache_load(g, kc, pt_k, io->seq_kv, io->kt);
        set4(dims, d->b, d->hk, d->skv, d->dv);
        cg_packed_strides(dims, str);
        io->v = cg_virtual(g, d->io, dims, str);
        cg_paged_cache_load(g, vc, pt_v, io->seq_kv, io->v);
    } else {
        /* K enters as K^T: same memory, dims and strides 2 <-> 3 swapped */
        const int64_t *ks = d->str[AF_T_K];
        set4(dims, d->b, d->hk, d->dqk, d->skv);
        set4(str, ks[0], ks[1], ks[3], ks[2]);
        io->kt = cg_tensor(g, d->io, dims, str, CG_SLOT_K, ragged_kv(g, d, CG_SLOT_RAG_K));
        set4(dims, d->b, d->hk, d->skv, d->dv);
        io->v = cg_tensor(g, d->io, dims, d->str[AF_T_V], CG_SLOT_V, ragged_kv(g, d, CG_SLOT_RAG_V));
    }
    set4(dims, d->b, d->hq, d->sq, d->dv);
    io->o = cg_tensor(g, d->o_type, dims, d->str[AF_T_O], CG_SLOT_O, ragged(g, d, CG_SLOT_RAG_O));
    set4(dims, d->b, d->hq, d->sq, 1);
    io->stats = cg_tensor(g, CUDNN_DATA_FLOAT, dims, d->str[AF_T_LSE], CG_SLOT_STATS, ragged(g, d, CG_SLOT_RAG_STATS));
}

/* Score-shaped virtual tensor of type dt. */
static cg_t vs(af_cg *g, const af_sdpa_desc *d, cudnnDataType_t dt) {
    int64_t dims[4] = {d->b, d->hq, d->sq, d->skv}, str[4];
    cg_packed_strides(dims, str);
    return cg_virtual(g, dt, dims, str);
}

/* Row-statistic-shaped virtual tensor [b,hq,sq,1]. */
static cg_t vr(af_cg *g, const af_sdpa_desc *d) {
    int64_t dims[4] = {d->b, d->hq, d->sq, 1}, str[4];
    cg_packed_strides(dims, str);
    return cg_virtual(g, CUDNN_DATA_FLOAT, dims, str);
}

/* keep = (row < seq_q) && (col < seq_kv); score = keep ? score : -inf */
cg_t af_sdpa_padding_mask(af_cg *g, const af_sdpa_desc *d, cg_t score, cg_t seq_q, cg_t seq_kv) {
    cg_t row = vs(g, d, CUDNN_DATA_INT32), col = vs(g, d, CUDNN_DATA_INT32);
    cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, score, NULL, NULL, row, 2);
    cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, score, NULL, NULL, col, 3);
    cg_t row_ok = vs(g, d, CUDNN_DATA_BOOLEAN), col_ok = vs(g, d, CUDNN_DATA_BOOLEAN),
         keep = vs(g, d, CUDNN_DATA_BOOLEAN);
    cg_pointwise(g, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, row, seq_q, NULL, row_ok, -1);
    cg_pointwise(g, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, col, seq_kv, NULL, col_ok, -1);
    cg_pointwise(g, CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, row_ok, col_ok, NULL, keep, -1);
    cg_t out = vs(g, d, CUDNN_DATA_FLOAT);
    cg_pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, score, cg_scalar_f32(g, -INFINITY), keep, out, -1);
    return out;
}

/* Diagonal band: right bound keeps row' >= col with row' = row [+ s_kv - s_q] [+ R];
 * left bound keeps col' > row with col' = col + Lc [- s_kv + s_q] (Lc = L + 1). The
 * dtypes follow FE: index generators compute in FLOAT and output INT32. */
cg_t af_sdpa_band_mask(af_cg *g, const af_sdpa_desc *d, cg_t score, cg_t seq_q, cg_t seq_kv) {
    if (d->has_right) {
        cg_t row = vs(g, d, CUDNN_DATA_INT32), col = vs(g, d, CUDNN_DATA_INT32);
        cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, score, NULL, NULL, row, 2);
        cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, score, NULL, NULL, col, 3);
        if (d->bottom_right) {
            cg_t skv = seq_kv ? seq_kv : cg_scalar_i32(g, (int32_t)d->skv);
            cg_t sq = seq_q ? seq_q : cg_scalar_i32(g, (int32_t)d->sq);
            cg_t r1 = vs(g, d, CUDNN_DATA_INT32), r2 = vs(g, d, CUDNN_DATA_INT32);
            cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, skv, NULL, r1, -1);
            cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, r1, sq, NULL, r2, -1);
            row = r2;
        }
        if (d->right != 0) {
            cg_t r3 = vs(g, d, CUDNN_DATA_INT32);
            cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, cg_scalar_i32(g, d->right), NULL, r3, -1);
            row = r3;
        }
        cg_t keep = vs(g, d, CUDNN_DATA_BOOLEAN);
        cg_pointwise(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, keep, -1);
        cg_t out = vs(g, d, CUDNN_DATA_FLOAT);
        cg_pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, score, cg_scalar_f32(g, -INFINITY), keep, out,
                     -1);
        score = out;
    }
    if (d->has_left) {
        cg_t row = vs(g, d, CUDNN_DATA_INT32), col = vs(g, d, CUDNN_DATA_INT32);
        cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, score, NULL, NULL, row, 2);
        cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, score, NULL, NULL, col, 3);
        cg_t c1;
        if (!d->bottom_right || (!seq_q && !seq_kv)) {
            float shift = d->bottom_right ? (float)(d->left_cudnn - d->skv + d->sq) : (float)d->left_cudnn;
            c1 = vs(g, d, CUDNN_DATA_FLOAT);
            cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, col, cg_scalar_f32(g, shift), NULL, c1, -1);
        } else {
            cg_t a = vs(g, d, CUDNN_DATA_INT32), b = vs(g, d, CUDNN_DATA_INT32);
            c1 = vs(g, d, CUDNN_DATA_INT32);
            cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, col, cg_scalar_i32(g, d->left_cudnn), NULL, a, -1);
            cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, a, seq_kv, NULL, b, -1);
            cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, b, seq_q, NULL, c1, -1);
        }
        cg_t keep = vs(g, d, CUDNN_DATA_BOOLEAN);
        cg_pointwise(g, CUDNN_POINTWISE_CMP_GT, CUDNN_DATA_BOOLEAN, c1, row, NULL, keep, -1);
        cg_t out = vs(g, d, CUDNN_DATA_FLOAT);
        cg_pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, score, cg_scalar_f32(g, -INFINITY), keep, out,
                     -1);
        score = out;
    }
    return score;
}

/* y = x * k (FLOAT math) into a new score-shaped FLOAT virtual tensor. */
static cg_t mul_s(af_cg *g, const af_sdpa_desc *d, cg_t x, cg_t k) {
    cg_t y = vs(g, d, CUDNN_DATA_FLOAT);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, x, k, NULL, y, -1);
    return y;
}

/* O-shaped [b,hq,sq,dv] FLOAT virtual tensor (fp8: P V before its scales). */
static cg_t vo(af_cg *g, const af_sdpa_desc *d) {
    int64_t dims[4] = {d->b, d->hq, d->sq, d->dv}, str[4];
    cg_packed_strides(dims, str);
    return cg_virtual(g, CUDNN_DATA_FLOAT, dims, str);
}

/* The composite forward. fp16/bf16: cudnn-frontend's CompositeSDPANode. fp8_e4m3 (its
 * sdpa_fp8 + matmul_fp8 lowering, per-tensor scales as device FLOAT [1,1,1,1]):
 *   S = Q8 K8^T (FLOAT) * attn_scale (by value) * descale_q * descale_k -> masks ->
 *   softmax (Stats = max + log sum exp; P = E / Z, FLOAT) -> Amax_S = AMAX(P) ->
 *   P8 = P * scale_s (virtual FP8_E4M3) -> A = P8 V8 (FLOAT) -> A * descale_s * descale_v
 *   -> Amax_O = AMAX(that) and O8 = that * scale_o (real FP8_E4M3). */
void af_sdpa_build_fwd(af_cg *g, const af_sdpa_desc *d) {
    fwd_io io;
    fwd_inputs(g, d, &io);
    cg_t descale_q = NULL, descale_k = NULL, descale_v = NULL, descale_s = NULL, scale_s = NULL, scale_o = NULL;
    cg_t amax_s = NULL, amax_o = NULL;
    if (d->fp8) {
        descale_q = cg_device_scalar(g, CG_SLOT_DESCALE_Q);
        descale_k = cg_device_scalar(g, CG_SLOT_DESCALE_K);
        descale_v = cg_device_scalar(g, CG_SLOT_DESCALE_V);
        descale_s = cg_device_scalar(g, CG_SLOT_DESCALE_S);
        scale_s = cg_device_scalar(g, CG_SLOT_SCALE_S);
        scale_o = cg_device_scalar(g, CG_SLOT_SCALE_O);
        amax_s = cg_device_scalar(g, CG_SLOT_AMAX_S);
        amax_o = cg_device_scalar(g, CG_SLOT_AMAX_O);
    }
    /* S0 = Q K^T (M, N overridden by the actual lengths when padded) */
    cg_t s0 = vs(g, d, CUDNN_DATA_FLOAT);
    cg_matmul(g, io.q, io.kt, s0, io.seq_q, io.seq_kv, NULL);
    cg_t s = mul_s(g, d, s0, cg_run_scalar_f32(g, CG_SLOT_ATTN_SCALE));
    if (d->fp8) { /* FE: attn_scale, then descale_q, then descale_k */
        s = mul_s(g, d, s, descale_q);
        s = mul_s(g, d, s, descale_k);
    }
    s = af_sdpa_score_features(g, d, s, io.seq_q, io.seq_kv, NULL); /* softcap, bias, ALiBi */
    if (d->padding) s = af_sdpa_padding_mask(g, d, s, io.seq_q, io.seq_kv);
    s = af_sdpa_band_mask(g, d, s, io.seq_q, io.seq_kv);
    /* softmax with Stats = max + log(sum exp(s - max)); with a sink (FE's composite
     * softmax, cuDNN >= 9.13): max = MAX(row max, sink), sum += exp(sink - max) */
    cg_t m = vr(g, d), z = vr(g, d), logz = vr(g, d);
    /* P takes the io type (fp16/bf16) except for fp8, where P stays FLOAT until scale_s,
     * and with dropout, where the last dropout MUL's output takes the io type (as FE) */
    cg_t t = vs(g, d, CUDNN_DATA_FLOAT), e = vs(g, d, CUDNN_DATA_FLOAT),
         p = vs(g, d, d->fp8 || d->dropout ? CUDNN_DATA_FLOAT : d->io);
    cg_t sink = d->sink ? af_sdpa_sink_tensor(g, d) : NULL;
    if (sink) {
        cg_t row_max = vr(g, d);
        cg_reduction(g, CUDNN_REDUCE_TENSOR_MAX, s, row_max);
        cg_pointwise(g, CUDNN_POINTWISE_MAX, CUDNN_DATA_FLOAT, row_max, sink, NULL, m, -1);
    } else {
        cg_reduction(g, CUDNN_REDUCE_TENSOR_MAX, s, m);
    }
    cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s, m, NULL, t, -1);
    cg_pointwise(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, t, NULL, NULL, e, -1);
    if (sink) {
        cg_t sub_sink = vr(g, d), exp_sink = vr(g, d), z_keys = vr(g, d);
        cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, sink, m, NULL, sub_sink, -1);
        cg_pointwise(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, sub_sink, NULL, NULL, exp_sink, -1);
        cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, e, z_keys);
        cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, z_keys, exp_sink, NULL, z, -1);
    } else {
        cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, e, z);
    }
    cg_pointwise(g, CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, z, NULL, NULL, logz, -1);
    cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, m, logz, NULL, io.stats, -1);
    cg_pointwise(g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, z, NULL, p, -1);
    if (!d->fp8) {
        /* dropout (feature_spec.h, after the softmax; Stats above stay the undropped LSE):
         * P_d = (P * 1 / (1 - p)) * M in the io type; no dropout: P itself */
        p = af_sdpa_dropout_fwd(g, d, p, d->io);
        /* O = P_d V (M = actual s_q, K = actual s_kv when padded) */
        cg_matmul(g, p, io.v, io.o, io.seq_q, NULL, io.seq_kv);
        cg_finalize(g);
        return;
    }
    /* fp8: Amax_S of P, then P8 = P * scale_s in E4M3 (the bmm2 A operand takes the io type) */
    cg_reduction(g, CUDNN_REDUCE_TENSOR_AMAX, p, amax_s);
    cg_t p8 = vs(g, d, CUDNN_DATA_FP8_E4M3);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, p, scale_s, NULL, p8, -1);
    /* matmul_fp8: A = P8 V8 (FLOAT), * descale_s, * descale_v, Amax_O, * scale_o -> O8 */
    cg_t a = vo(g, d), a1 = vo(g, d), a2 = vo(g, d);
    cg_matmul(g, p8, io.v, a, io.seq_q, NULL, io.seq_kv);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, a, descale_s, NULL, a1, -1);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, a1, descale_v, NULL, a2, -1);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, a2, scale_o, NULL, io.o, -1);
    cg_reduction(g, CUDNN_REDUCE_TENSOR_AMAX, a2, amax_o);
    cg_finalize(g);
}

void af_sdpa_build_fwd_unified(af_cg *g, const af_sdpa_desc *d) {
    int64_t dims[4];
    set4(dims, d->b, d->hq, d->sq, d->dqk);
    cg_t q = cg_tensor(g, d->io, dims, d->str[AF_T_Q], CG_SLOT_Q, ragged(g, d, CG_SLOT_RAG_Q));
    set4(dims, d->b, d->hk, d->skv, d->dqk); /* the literal K, not K^T */
    cg_t k = cg_tensor(g, d->io, dims, d->str[AF_T_K], CG_SLOT_K, ragged_kv(g, d, CG_SLOT_RAG_K));
    set4(dims, d->b, d->hk, d->skv, d->dv);
    cg_t v = cg_tensor(g, d->io, dims, d->str[AF_T_V], CG_SLOT_V, ragged_kv(g, d, CG_SLOT_RAG_V));
    set4(dims, d->b, d->hq, d->sq, d->dv);
    cg_t o = cg_tensor(g, d->io, dims, d->str[AF_T_O], CG_SLOT_O, ragged(g, d, CG_SLOT_RAG_O));
    set4(dims, d->b, d->hq, d->sq, 1);
    cg_t stats = cg_tensor(g, CUDNN_DATA_FLOAT, dims, d->str[AF_T_LSE], CG_SLOT_STATS, ragged(g, d, CG_SLOT_RAG_STATS));
    cg_t scale = cg_run_scalar_f32(g, CG_SLOT_ATTN_SCALE);
    cg_t seq_q = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_Q) : NULL;
    cg_t seq_kv = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_KV) : NULL;
    cg_sdpa_fwd_op(g, q, k, v, o, stats, scale, seq_q, seq_kv);
    cg_finalize(g);
}

#endif /* ATTNFUZZ_HAVE_CUDA */
