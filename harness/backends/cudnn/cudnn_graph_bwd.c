/* cudnn_graph_bwd.c — SDPA backward as cudnn-frontend's composite graph.
 *
 * Shapes: S = [b,hq,sq,skv], S^T = [b,hq,skv,sq] (a transposed view of S), R =
 * [b,hq,sq,1]. Inputs Q, K^T, V^T, O, dO, Stats (from the forward), outputs dQ dK dV.
 * Scratch (device, allocated by the caller from g->scratch_bytes): softmax_sum R fp32
 * and, nondeterministic variant, dQ_accum [b,hq,sq,dqk] fp32. GQA/MQA: dK, dV are
 * computed per q head and reduced over each group of hq/hk heads. Features
 * (cudnn_graph_feat.c): the scores are recomputed with softcap, bias and ALiBi; the
 * softcap derivative scales dS; learnable sinks add the dsink reduction.
 *
 * Dropout (oracle/feature_spec.h, w_ij = M_ij / (1 - p), M the case's keep mask as a real
 * tensor, CG_SLOT_DROPOUT_MASK): with X = dO V^T and D_i = dO_i . O_i (O the dropped
 * forward output),
 *   dV = (P o w)^T dO,   dP = X o w,   dS = P o (dP - D).
 * The graph applies w on the dP path itself: dS = P o (X o M * 1 / (1 - p) - D), softmax_sum
 * = D, and for dV P o M then * 1/(1-p) before the P^T reshape. M and 1/(1-p) are applied
 * exactly once on each path. cudnn-frontend's form (softmax_sum = (1 - p) D, the
 * 1/(1-p) MUL after the MUL by P) is the same algebra, but built here it gave dQ and dK
 * off by 60-1568 x the allowance on every engine of cuDNN 9.14 and 9.19 on the H200 while
 * dV passed (2026-12-02, docs/dropout.md); this form passes there. The learnable sinks'
 * dsink = -sum P_sink D reads the unscaled rowsum D, not softmax_sum.
 */
#include "backends/cudnn/cudnn_sdpa.h"

#ifdef ATTNFUZZ_HAVE_CUDA

static void set4(int64_t a[4], int64_t x0, int64_t x1, int64_t x2, int64_t x3) {
    a[0] = x0;
    a[1] = x1;
    a[2] = x2;
    a[3] = x3;
}

static cg_t ragged(af_cg *g, const af_sdpa_desc *d, int slot) {
    return d->ragged ? cg_index_tensor(g, d->b + 1, slot) : NULL;
}
/* The same for K, V, dK, dV: none over padded (layout_kv) or paged K/V. */
static cg_t ragged_kv(af_cg *g, const af_sdpa_desc *d, int slot) {
    return d->ragged_kv ? cg_index_tensor(g, d->b + 1, slot) : NULL;
}

cg_t af_sdpa_scores_t(af_cg *g, const af_sdpa_desc *d, cudnnDataType_t dt) {
    int64_t dims[4], str[4];
    set4(dims, d->b, d->hq, d->skv, d->sq);
    set4(str, d->hq * d->sq * d->skv, d->sq * d->skv, 1, d->skv);
    return cg_virtual(g, dt, dims, str);
}

void af_sdpa_build_bwd(af_cg *g, const af_sdpa_desc *d, bool deterministic) {
    int64_t dims[4], str[4];
    const int64_t *ks = d->str[AF_T_K], *vst = d->str[AF_T_V];
    /* real tensors */
    set4(dims, d->b, d->hq, d->sq, d->dqk);
    cg_t q = cg_tensor(g, d->io, dims, d->str[AF_T_Q], CG_SLOT_Q, ragged(g, d, CG_SLOT_RAG_Q));
    cg_t rag_k = ragged_kv(g, d, CG_SLOT_RAG_K);
    set4(dims, d->b, d->hk, d->dqk, d->skv);
    set4(str, ks[0], ks[1], ks[3], ks[2]);
    cg_t kt = cg_tensor(g, d->io, dims, str, CG_SLOT_K, rag_k);
    set4(dims, d->b, d->hk, d->dv, d->skv);
    set4(str, vst[0], vst[1], vst[3], vst[2]);
    cg_t vt = cg_tensor(g, d->io, dims, str, CG_SLOT_V, ragged_kv(g, d, CG_SLOT_RAG_V));
    set4(dims, d->b, d->hq, d->sq, d->dv);
    cg_t o = cg_tensor(g, d->io, dims, d->str[AF_T_O], CG_SLOT_O, ragged(g, d, CG_SLOT_RAG_O));
    cg_t dout = cg_tensor(g, d->io, dims, d->str[AF_T_DO], CG_SLOT_DO, ragged(g, d, CG_SLOT_RAG_DO));
    set4(dims, d->b, d->hq, d->sq, 1);
    cg_t stats = cg_tensor(g, CUDNN_DATA_FLOAT, dims, d->str[AF_T_LSE], CG_SLOT_STATS, ragged(g, d, CG_SLOT_RAG_STATS));
    set4(dims, d->b, d->hq, d->sq, d->dqk);
    cg_t dq = cg_tensor(g, d->io, dims, d->str[AF_T_DQ], CG_SLOT_DQ, ragged(g, d, CG_SLOT_RAG_DQ));
    set4(dims, d->b, d->hk, d->skv, d->dqk);
    cg_t dk = cg_tensor(g, d->io, dims, d->str[AF_T_DK], CG_SLOT_DK, ragged_kv(g, d, CG_SLOT_RAG_DK));
    set4(dims, d->b, d->hk, d->skv, d->dv);
    cg_t dv = cg_tensor(g, d->io, dims, d->str[AF_T_DV], CG_SLOT_DV, ragged_kv(g, d, CG_SLOT_RAG_DV));
    cg_t seq_q = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_Q) : NULL;
    cg_t seq_kv = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_KV) : NULL;
    cg_t scale = cg_run_scalar_f32(g, CG_SLOT_ATTN_SCALE);

    /* softmax_sum = rowsum(dO * O) (real, scratch) */
    cg_t dot = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->dv);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dout, o, NULL, dot, -1);
    cg_t rowsum = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, 1);
    cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, dot, rowsum);
    set4(dims, d->b, d->hq, d->sq, 1);
    cg_packed_strides(dims, str);
    cg_t softmax_sum = cg_tensor(g, CUDNN_DATA_FLOAT, dims, str, CG_SLOT_SOFTMAX_SUM, NULL);
    g->scratch_bytes[CG_SLOT_SOFTMAX_SUM] = (size_t)(d->b * d->hq * d->sq) * 4;
    /* x 1 (FE's node; with dropout too: 1 / (1 - p) goes on the dP path, see the top) */
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, rowsum, cg_scalar_f32(g, 1.0f), NULL, softmax_sum, -1);
    if (d->dsink) af_sdpa_dsink(g, d, stats, rowsum); /* learnable sinks (FE: from the same rowsum) */

    /* P = exp(mask(features(scale * Q K^T)) - Stats); the sink is inside Stats already */
    cg_t s0 = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    cg_matmul(g, q, kt, s0, seq_q, seq_kv, NULL);
    cg_t s = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s0, scale, NULL, s, -1);
    cg_t r_over_c; /* softcap: r / c, read again by the dS chain's TANH_BWD */
    s = af_sdpa_score_features(g, d, s, seq_q, seq_kv, &r_over_c);
    if (d->padding) s = af_sdpa_padding_mask(g, d, s, seq_q, seq_kv);
    cg_t sm = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s, stats, NULL, sm, -1);
    sm = af_sdpa_band_mask(g, d, sm, seq_q, seq_kv);
    cg_t p = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, sm, NULL, NULL, p, -1);

    /* dropout: P o w = (P o M) * 1 / (1 - p) for dV; P itself stays for dS */
    cg_t mask = d->dropout ? af_sdpa_dropout_mask(g, d) : NULL, p_dv = p;
    if (mask) {
        cg_t pm = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
        p_dv = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, p, mask, NULL, pm, -1);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, pm, cg_run_scalar_f32(g, CG_SLOT_DROPOUT_SCALE), NULL,
                     p_dv, -1);
    }

    /* dV = (P o w)^T dO (per q head, reduced over the group for GQA) */
    cg_t pt = af_sdpa_scores_t(g, d, d->io);
    cg_reshape(g, p_dv, pt);
    if (d->hq == d->hk) {
        cg_matmul(g, pt, dout, dv, seq_kv, NULL, seq_q);
    } else {
        cg_t dv_full = cg_virtual_packed(g, d->io, d->b, d->hq, d->skv, d->dv);
        cg_matmul(g, pt, dout, dv_full, seq_kv, NULL, seq_q);
        cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, dv_full, dv);
    }

    /* dS = scale * [softcap'] * P * (dO V^T - softmax_sum); dropout:
     * scale * [softcap'] * P * ((dO V^T) o M * 1 / (1 - p) - D) */
    cg_t dp = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    cg_matmul(g, dout, vt, dp, seq_q, seq_kv, NULL);
    if (mask) {
        cg_t dpm = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
        cg_t dpw = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dp, mask, NULL, dpm, -1);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dpm, cg_run_scalar_f32(g, CG_SLOT_DROPOUT_SCALE), NULL,
                     dpw, -1);
        dp = dpw;
    }
    cg_t t1 = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, dp, softmax_sum, NULL, t1, -1);
    cg_t t2 = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t1, p, NULL, t2, -1);
    cg_t ds = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, d->skv);
    t2 = af_sdpa_softcap_bwd(g, d, t2, r_over_c); /* dR = dS (1 - tanh^2(r / c)) */
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t2, scale, NULL, ds, -1);

    /* dK = dS^T Q */
    cg_t dst = af_sdpa_scores_t(g, d, d->io);
    cg_reshape(g, ds, dst);
    if (d->hq == d->hk) {
        cg_matmul(g, dst, q, dk, seq_kv, NULL, seq_q);
    } else {
        cg_t dk_full = cg_virtual_packed(g, d->io, d->b, d->hq, d->skv, d->dqk);
        cg_matmul(g, dst, q, dk_full, seq_kv, NULL, seq_q);
        cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, dk_full, dk);
    }

    /* dQ = dS K, K being a reshape of K^T back to [b,hk,skv,dqk] (fp32 typed, as FE) */
    set4(dims, d->b, d->hk, d->skv, d->dqk);
    cg_t k_view = cg_tensor(g, CUDNN_DATA_FLOAT, dims, ks, -1, rag_k);
    cg_reshape(g, kt, k_view);
    if (deterministic) {
        cg_matmul(g, ds, k_view, dq, seq_q, NULL, seq_kv);
    } else {
        set4(dims, d->b, d->hq, d->sq, d->dqk);
        cg_packed_strides(dims, str);
        cg_t dq_accum = cg_tensor(g, CUDNN_DATA_FLOAT, dims, str, CG_SLOT_DQ_ACCUM, NULL);
        g->scratch_bytes[CG_SLOT_DQ_ACCUM] = (size_t)(d->b * d->hq * d->sq * d->dqk) * 4;
        cg_matmul(g, ds, k_view, dq_accum, seq_q, NULL, seq_kv);
        cg_pointwise(g, CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, dq_accum, NULL, NULL, dq, -1);
    }
    cg_finalize(g);
}

#endif /* ATTNFUZZ_HAVE_CUDA */
