/* cudnn_graph_bwd_fp8.c — SDPA backward for fp8_e4m3 as cudnn-frontend lowers it
 * (include/cudnn_frontend/node/sdpa_fp8_bwd.h, SDPAFP8BackwardNode::expand_node, the
 * per-tensor-scaling path; matmul_fp8.h for each FP8 GEMM), built with our own cg_*
 * helpers. The numbers it computes are the recipe of model/tensors.h.
 *
 * Shapes: S = [b,hq,sq,skv] packed, S^T = [b,hq,skv,sq] (a transposed view of S), R =
 * [b,hq,sq,1]. Real tensors: Q, K^T, V^T, O, dO, dQ, dK, dV in FP8_E4M3 (K and V enter
 * transposed: same memory, dims and strides 2 <-> 3 swapped), Stats FLOAT R; device FLOAT
 * [1,1,1,1] scalars descale_{q,k,v,o,dO,s,dP}, scale_{s,dP,dQ,dK,dV} and the outputs
 * Amax_{dP,dQ,dK,dV}. Every virtual tensor is FLOAT except P8, P8^T, dS8, dS8^T (E4M3).
 * Unlike the fp16/bf16 backward there is no softmax_sum scratch and no dQ accumulator:
 * FE's FP8 node keeps softmax_sum virtual and has one graph shape.
 *
 *   D      = rowsum(dO8 * O8) * descale_dO * descale_O                      (R, virtual)
 *   S      = Q8 K8^T * attn_scale * descale_q * descale_k -> padding -> band (-inf)
 *   P      = exp(S - Stats);   P8 = P * scale_s (E4M3);   P8^T = reshape(P8)
 *   dV     = matmul_fp8(P8^T, dO8; descale_s, descale_dO, scale_dV) -> Amax_dV
 *   dS     = ((dO8 V8^T * descale_dO * descale_V) - D) * P * attn_scale -> Amax_dP
 *   dS8    = dS * scale_dP (E4M3)
 *   dQ     = matmul_fp8(dS8, K; descale_dP, descale_K, scale_dQ) -> Amax_dQ
 *   dK     = matmul_fp8(reshape(dS8) = dS8^T, Q8; descale_dP, descale_Q, scale_dK) -> Amax_dK
 * The op order is FE's (creation order of its nodes). Padding: M/N/K overrides by the
 * seq_len tensors on every matmul, as FE sets them.
 */
#include "backends/cudnn/cudnn_sdpa.h"

#ifdef ATTNFUZZ_HAVE_CUDA

static void set4(int64_t a[4], int64_t x0, int64_t x1, int64_t x2, int64_t x3) {
    a[0] = x0;
    a[1] = x1;
    a[2] = x2;
    a[3] = x3;
}

/* y = x * k into a new FLOAT virtual shaped [d0,d1,d2,d3]. */
static cg_t mul(af_cg *g, cg_t x, cg_t k, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    cg_t y = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d0, d1, d2, d3);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, x, k, NULL, y, -1);
    return y;
}

/* One FP8 GEMM as matmul_fp8.h expands it: T = A x B (FLOAT [b, hq, rows, cols]); when
 * the output has fewer heads (GQA dK, dV), T = ADD-reduction of T over each group
 * (FLOAT [b, heads_out, rows, cols]); U = (T * descale_a) * descale_b; C = U * scale_c
 * (the real E4M3 output); Amax_C = AMAX(U), the value before scale_c. */
static void matmul_fp8(af_cg *g, const af_sdpa_desc *d, cg_t a, cg_t b, cg_t descale_a, cg_t descale_b, cg_t scale_c,
                       cg_t c, cg_t amax_c, int64_t heads_out, int64_t rows, int64_t cols, cg_t m_override,
                       cg_t n_override, cg_t k_override) {
    cg_t t = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, rows, cols);
    cg_matmul(g, a, b, t, m_override, n_override, k_override);
    if (heads_out != d->hq) {
        cg_t red = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, heads_out, rows, cols);
        cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, t, red);
        t = red;
    }
    cg_t u = mul(g, mul(g, t, descale_a, d->b, heads_out, rows, cols), descale_b, d->b, heads_out, rows, cols);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, u, scale_c, NULL, c, -1);
    cg_reduction(g, CUDNN_REDUCE_TENSOR_AMAX, u, amax_c);
}

void af_sdpa_build_bwd_fp8(af_cg *g, const af_sdpa_desc *d) {
    /* f8: the real tensors' and dS8's type (E4M3, or E5M2 for fp8_e5m2); P8 stays E4M3 */
    const cudnnDataType_t f8 = d->io, p8_type = CUDNN_DATA_FP8_E4M3, f32 = CUDNN_DATA_FLOAT;
    int64_t dims[4], str[4];
    const int64_t *ks = d->str[AF_T_K], *vst = d->str[AF_T_V];
    /* real tensors (no ragged offsets: thd is declined for FP8 on Hopper) */
    set4(dims, d->b, d->hq, d->sq, d->dqk);
    cg_t q = cg_tensor(g, f8, dims, d->str[AF_T_Q], CG_SLOT_Q, NULL);
    set4(dims, d->b, d->hk, d->dqk, d->skv);
    set4(str, ks[0], ks[1], ks[3], ks[2]);
    cg_t kt = cg_tensor(g, f8, dims, str, CG_SLOT_K, NULL);
    set4(dims, d->b, d->hk, d->dv, d->skv);
    set4(str, vst[0], vst[1], vst[3], vst[2]);
    cg_t vt = cg_tensor(g, f8, dims, str, CG_SLOT_V, NULL);
    set4(dims, d->b, d->hq, d->sq, d->dv);
    cg_t o = cg_tensor(g, f8, dims, d->str[AF_T_O], CG_SLOT_O, NULL);
    cg_t dout = cg_tensor(g, f8, dims, d->str[AF_T_DO], CG_SLOT_DO, NULL);
    set4(dims, d->b, d->hq, d->sq, 1);
    cg_t stats = cg_tensor(g, f32, dims, d->str[AF_T_LSE], CG_SLOT_STATS, NULL);
    set4(dims, d->b, d->hq, d->sq, d->dqk);
    cg_t dq = cg_tensor(g, f8, dims, d->str[AF_T_DQ], CG_SLOT_DQ, NULL);
    set4(dims, d->b, d->hk, d->skv, d->dqk);
    cg_t dk = cg_tensor(g, f8, dims, d->str[AF_T_DK], CG_SLOT_DK, NULL);
    set4(dims, d->b, d->hk, d->skv, d->dv);
    cg_t dv = cg_tensor(g, f8, dims, d->str[AF_T_DV], CG_SLOT_DV, NULL);
    cg_t seq_q = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_Q) : NULL;
    cg_t seq_kv = d->padding ? cg_index_tensor(g, d->b, CG_SLOT_SEQ_KV) : NULL;
    cg_t attn_scale = cg_run_scalar_f32(g, CG_SLOT_ATTN_SCALE);
    cg_t descale_q = cg_device_scalar(g, CG_SLOT_DESCALE_Q), descale_k = cg_device_scalar(g, CG_SLOT_DESCALE_K);
    cg_t descale_v = cg_device_scalar(g, CG_SLOT_DESCALE_V), descale_o = cg_device_scalar(g, CG_SLOT_DESCALE_O);
    cg_t descale_do = cg_device_scalar(g, CG_SLOT_DESCALE_DO), descale_s = cg_device_scalar(g, CG_SLOT_DESCALE_S);
    cg_t descale_dp = cg_device_scalar(g, CG_SLOT_DESCALE_DP), scale_s = cg_device_scalar(g, CG_SLOT_SCALE_S);
    cg_t scale_dp = cg_device_scalar(g, CG_SLOT_SCALE_DP), scale_dq = cg_device_scalar(g, CG_SLOT_SCALE_DQ);
    cg_t scale_dk = cg_device_scalar(g, CG_SLOT_SCALE_DK), scale_dv = cg_device_scalar(g, CG_SLOT_SCALE_DV);
    cg_t amax_dp = cg_device_scalar(g, CG_SLOT_AMAX_DP), amax_dq = cg_device_scalar(g, CG_SLOT_AMAX_DQ);
    cg_t amax_dk = cg_device_scalar(g, CG_SLOT_AMAX_DK), amax_dv = cg_device_scalar(g, CG_SLOT_AMAX_DV);

    /* D = rowsum(dO8 * O8) * descale_dO * descale_O   (FE: mul_dO_O, reduce_dO,
     * descale_dO, descale_O; virtual, R-shaped) */
    cg_t prod = cg_virtual_packed(g, f32, d->b, d->hq, d->sq, d->dv);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, f32, dout, o, NULL, prod, -1);
    cg_t rowsum = cg_virtual_packed(g, f32, d->b, d->hq, d->sq, 1);
    cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, prod, rowsum);
    cg_t softmax_sum = mul(g, mul(g, rowsum, descale_do, d->b, d->hq, d->sq, 1), descale_o, d->b, d->hq, d->sq, 1);

    /* S = Q8 K8^T * attn_scale * descale_q * descale_k, masked (padding, then band) */
    cg_t s0 = cg_virtual_packed(g, f32, d->b, d->hq, d->sq, d->skv);
    cg_matmul(g, q, kt, s0, seq_q, seq_kv, NULL);
    cg_t s = mul(g, s0, attn_scale, d->b, d->hq, d->sq, d->skv);
    s = mul(g, s, descale_q, d->b, d->hq, d->sq, d->skv);
    s = mul(g, s, descale_k, d->b, d->hq, d->sq, d->skv);
    if (d->padding) s = af_sdpa_padding_mask(g, d, s, seq_q, seq_kv);
    s = af_sdpa_band_mask(g, d, s, seq_q, seq_kv);

    /* P = exp(S - Stats) (FLOAT, FE's exp_S); P8 = P * scale_s (E4M3); P8^T */
    cg_t sm = cg_virtual_packed(g, f32, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_SUB, f32, s, stats, NULL, sm, -1);
    cg_t p = cg_virtual_packed(g, f32, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_EXP, f32, sm, NULL, NULL, p, -1);
    cg_t p8 = cg_virtual_packed(g, p8_type, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, f32, p, scale_s, NULL, p8, -1);
    cg_t p8t = af_sdpa_scores_t(g, d, p8_type);
    cg_reshape(g, p8, p8t);

    /* dV = P8^T dO8 (per q head, reduced over the group), descaled, scaled, E4M3 */
    matmul_fp8(g, d, p8t, dout, descale_s, descale_do, scale_dv, dv, amax_dv, d->hk, d->skv, d->dv, seq_kv, NULL,
               seq_q);

    /* dS = ((dO8 V8^T * descale_dO * descale_V) - D) * P * attn_scale; Amax_dP; dS8 */
    cg_t dp0 = cg_virtual_packed(g, f32, d->b, d->hq, d->sq, d->skv);
    cg_matmul(g, dout, vt, dp0, seq_q, seq_kv, NULL);
    cg_t dp = mul(g, mul(g, dp0, descale_do, d->b, d->hq, d->sq, d->skv), descale_v, d->b, d->hq, d->sq, d->skv);
    cg_t t1 = cg_virtual_packed(g, f32, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_SUB, f32, dp, softmax_sum, NULL, t1, -1);
    cg_t ds = mul(g, mul(g, t1, p, d->b, d->hq, d->sq, d->skv), attn_scale, d->b, d->hq, d->sq, d->skv);
    cg_reduction(g, CUDNN_REDUCE_TENSOR_AMAX, ds, amax_dp);
    cg_t ds8 = cg_virtual_packed(g, f8, d->b, d->hq, d->sq, d->skv);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, f32, ds, scale_dp, NULL, ds8, -1);

    /* dQ = dS8 K: K a reshape of K^T back to [b,hk,skv,dqk] (FLOAT-typed: FE's reshape
     * output takes the graph's intermediate type when unset) */
    set4(dims, d->b, d->hk, d->skv, d->dqk);
    cg_t k_view = cg_tensor(g, f32, dims, ks, -1, NULL);
    cg_reshape(g, kt, k_view);
    matmul_fp8(g, d, ds8, k_view, descale_dp, descale_k, scale_dq, dq, amax_dq, d->hq, d->sq, d->dqk, seq_q, NULL,
               seq_kv);

    /* dK = dS8^T Q8 (per q head, reduced over the group) */
    cg_t ds8t = af_sdpa_scores_t(g, d, f8);
    cg_reshape(g, ds8, ds8t);
    matmul_fp8(g, d, ds8t, q, descale_dp, descale_q, scale_dk, dk, amax_dk, d->hk, d->skv, d->dqk, seq_kv, NULL, seq_q);
    cg_finalize(g);
}

#endif /* ATTNFUZZ_HAVE_CUDA */
