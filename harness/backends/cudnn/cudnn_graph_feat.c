/* cudnn_graph_feat.c — the score features of oracle/feature_spec.h as composite-graph
 * nodes, shared by the forward and backward graphs (cudnn_graph_fwd.c, cudnn_graph_bwd.c).
 *
 * Order (feature_spec.h, and cudnn-frontend's CompositeSDPANode: attn_scale, score_mod,
 * bias, alibi, then the masks): r = scale * Q K^T; softcap t = c * tanh(r / c) (FE's
 * Softcap score modifier: DIV c, TANH_FWD, MUL c; ATTNFUZZ_CUDNN_SOFTCAP=exp builds the
 * tanh from EXP instead, tanh_exp below); bias s = t + bias (a real tensor in
 * the io type, [bias_b, bias_h, sq, skv] with extent 1 on a broadcast axis: FE's bias
 * ADD; a bias row seen by every query has extent 1 on the query axis, cuDNN's broadcast);
 * ALiBi s += -slope_h * |j - (i + len_kv - len_q)| (FE's alibi_mask is slope * (col -
 * row), valid under top-left causal with s_q = s_kv; the bottom-right distance and the
 * |.| of feature_spec.h are added here), or signed (alibi = signed: slope_h * (j - (i +
 * len_kv - len_q)), FE's own signed form with the bottom-right shift), slopes per head
 * [1, hq, 1, 1] or per (batch, head) [b, hq, 1, 1]. All score tensors are FLOAT
 * [b, hq, sq, skv], packed; index tensors INT32.
 *
 * Dropout acts on P after the softmax (feature_spec.h; the stats stay the undropped row's):
 * cudnn-frontend's dropout-with-mask form, P * scale then * M, with the case's own keep
 * mask M as a real tensor (cudnn.c builds it from model/dropout.c). cuDNN's RNG node is
 * not used: which Philox word it gives which element is cuDNN's choice, not
 * model/dropout.h's, so the oracle could not regenerate its mask.
 */
#include "backends/cudnn/cudnn_sdpa.h"

#ifdef ATTNFUZZ_HAVE_CUDA

bool af_sdpa_has_features(const af_sdpa_desc *d) {
    return d->softcap != 0.0f || d->bias_b || d->alibi || d->sink || d->dropout;
}

static cg_t vs(af_cg *g, const af_sdpa_desc *d, cudnnDataType_t dt) {
    return cg_virtual_packed(g, dt, d->b, d->hq, d->sq, d->skv);
}

/* Real FLOAT [nb,hq,1,1] per-head tensor bound to slot (ALiBi slopes with nb = 1 or b,
 * sink logits with nb = 1). */
static cg_t per_head(af_cg *g, const af_sdpa_desc *d, int slot, int64_t nb) {
    int64_t dims[4] = {nb, d->hq, 1, 1}, str[4] = {d->hq, 1, 1, 1};
    return cg_tensor(g, CUDNN_DATA_FLOAT, dims, str, slot, NULL);
}

/* dist = col - (row + len_kv - len_q) (INT32), with the actual lengths when padded. */
static cg_t alibi_distance(af_cg *g, const af_sdpa_desc *d, cg_t score, cg_t seq_q, cg_t seq_kv) {
    cg_t row = vs(g, d, CUDNN_DATA_INT32), col = vs(g, d, CUDNN_DATA_INT32);
    cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, score, NULL, NULL, row, 2);
    cg_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, score, NULL, NULL, col, 3);
    cg_t diff = vs(g, d, CUDNN_DATA_INT32);
    cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, col, row, NULL, diff, -1);
    if (seq_q && seq_kv) { /* per sequence: diff - len_kv[b] + len_q[b] */
        cg_t a = vs(g, d, CUDNN_DATA_INT32), b = vs(g, d, CUDNN_DATA_INT32);
        cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, diff, seq_kv, NULL, a, -1);
        cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, a, seq_q, NULL, b, -1);
        return b;
    }
    if (d->skv != d->sq) {
        cg_t a = vs(g, d, CUDNN_DATA_INT32);
        cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, diff, cg_scalar_i32(g, (int32_t)(d->skv - d->sq)), NULL,
                     a, -1);
        return a;
    }
    return diff;
}

/* tanh(x) = (e - 1) / (e + 1), e = exp(2 x), x clamped to [-15, 15] first (tanh(15)
 * rounds to 1 in fp32; exp(30) stays finite): from EXP, the node the softmax itself
 * uses, so that a run with it tells whether TANH_FWD / TANH_BWD carry F9
 * (docs/cudnn-findings.md). FLOAT [b, hq, sq, skv]. */
static cg_t tanh_exp(af_cg *g, const af_sdpa_desc *d, cg_t x) {
    cg_t lo = vs(g, d, CUDNN_DATA_FLOAT), xc = vs(g, d, CUDNN_DATA_FLOAT), x2 = vs(g, d, CUDNN_DATA_FLOAT);
    cg_t e = vs(g, d, CUDNN_DATA_FLOAT), num = vs(g, d, CUDNN_DATA_FLOAT), den = vs(g, d, CUDNN_DATA_FLOAT);
    cg_t th = vs(g, d, CUDNN_DATA_FLOAT), one = cg_scalar_f32(g, 1.0f);
    cg_pointwise(g, CUDNN_POINTWISE_MIN, CUDNN_DATA_FLOAT, x, cg_scalar_f32(g, 15.0f), NULL, lo, -1);
    cg_pointwise(g, CUDNN_POINTWISE_MAX, CUDNN_DATA_FLOAT, lo, cg_scalar_f32(g, -15.0f), NULL, xc, -1);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, xc, cg_scalar_f32(g, 2.0f), NULL, x2, -1);
    cg_pointwise(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, x2, NULL, NULL, e, -1);
    cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, e, one, NULL, num, -1);
    cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, e, one, NULL, den, -1);
    cg_pointwise(g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, num, den, NULL, th, -1);
    return th;
}

cg_t af_sdpa_score_features(af_cg *g, const af_sdpa_desc *d, cg_t score, cg_t seq_q, cg_t seq_kv, cg_t *r_over_c) {
    if (r_over_c) *r_over_c = NULL;
    if (d->softcap != 0.0f) {
        cg_t cap = cg_scalar_f32(g, d->softcap);
        cg_t x = vs(g, d, CUDNN_DATA_FLOAT), th = vs(g, d, CUDNN_DATA_FLOAT), t = vs(g, d, CUDNN_DATA_FLOAT);
        cg_pointwise(g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, score, cap, NULL, x, -1);
        if (d->softcap_exp)
            th = tanh_exp(g, d, x);
        else
            cg_pointwise(g, CUDNN_POINTWISE_TANH_FWD, CUDNN_DATA_FLOAT, x, NULL, NULL, th, -1);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, th, cap, NULL, t, -1);
        if (r_over_c) *r_over_c = x;
        score = t;
    }
    if (d->bias_b) {
        int64_t dims[4] = {d->bias_b, d->bias_h, d->bias_q, d->skv}, str[4];
        cg_packed_strides(dims, str);
        if (d->bias_row_stride0) { /* bias_q 1: the same buffer, every query reading row 0 */
            dims[2] = d->sq;
            str[2] = 0;
        }
        cg_t bias = cg_tensor(g, d->io, dims, str, CG_SLOT_BIAS, NULL);
        cg_t s = vs(g, d, CUDNN_DATA_FLOAT);
        cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, score, bias, NULL, s, -1);
        score = s;
    }
    if (d->alibi) {
        cg_t dist = alibi_distance(g, d, score, seq_q, seq_kv);
        /* Under a causal bottom-right band with no right shift every visible key has
         * dist <= 0, so -|dist| = dist (FE's form); otherwise -|dist| explicitly. */
        if (!d->alibi_signed && !(d->has_right && d->right == 0 && d->bottom_right)) {
            cg_t a = vs(g, d, CUDNN_DATA_INT32), n = vs(g, d, CUDNN_DATA_INT32);
            cg_pointwise(g, CUDNN_POINTWISE_ABS, CUDNN_DATA_INT32, dist, NULL, NULL, a, -1);
            cg_pointwise(g, CUDNN_POINTWISE_NEG, CUDNN_DATA_INT32, a, NULL, NULL, n, -1);
            dist = n;
        }
        cg_t add = vs(g, d, CUDNN_DATA_FLOAT), s = vs(g, d, CUDNN_DATA_FLOAT);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, dist, per_head(g, d, CG_SLOT_ALIBI_SLOPES, d->alibi_b),
                     NULL, add, -1);
        cg_pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, score, add, NULL, s, -1);
        score = s;
    }
    return score;
}

cg_t af_sdpa_dropout_mask(af_cg *g, const af_sdpa_desc *d) {
    int64_t dims[4] = {d->b, d->hq, d->sq, d->skv}, str[4];
    cg_packed_strides(dims, str);
    return cg_tensor(g, d->io, dims, str, CG_SLOT_DROPOUT_MASK, NULL);
}

cg_t af_sdpa_dropout_fwd(af_cg *g, const af_sdpa_desc *d, cg_t p, cudnnDataType_t out_dt) {
    if (!d->dropout) return p;
    /* FE's custom-mask order: MUL(P, scale) then MUL(., mask); the last output takes the
     * dtype the P x V matmul reads (Q's, as P without dropout) */
    cg_t scaled = vs(g, d, CUDNN_DATA_FLOAT), dropped = vs(g, d, out_dt);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, p, cg_run_scalar_f32(g, CG_SLOT_DROPOUT_SCALE), NULL, scaled,
                 -1);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, scaled, af_sdpa_dropout_mask(g, d), NULL, dropped, -1);
    return dropped;
}

cg_t af_sdpa_softcap_bwd(af_cg *g, const af_sdpa_desc *d, cg_t ds, cg_t r_over_c) {
    if (d->softcap == 0.0f || !r_over_c) return ds;
    if (d->softcap_exp) { /* dS - dS th^2, th recomputed from r / c by the same EXP form */
        cg_t th = tanh_exp(g, d, r_over_c), t2 = vs(g, d, CUDNN_DATA_FLOAT), dt2 = vs(g, d, CUDNN_DATA_FLOAT);
        cg_t out = vs(g, d, CUDNN_DATA_FLOAT);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, th, th, NULL, t2, -1);
        cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, ds, t2, NULL, dt2, -1);
        cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, ds, dt2, NULL, out, -1);
        return out;
    }
    cg_t cap = cg_scalar_f32(g, d->softcap);
    cg_t a = vs(g, d, CUDNN_DATA_FLOAT), b = vs(g, d, CUDNN_DATA_FLOAT), out = vs(g, d, CUDNN_DATA_FLOAT);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, ds, cap, NULL, a, -1);
    cg_pointwise_bwd(g, CUDNN_POINTWISE_TANH_BWD, CUDNN_DATA_FLOAT, a, r_over_c, b); /* a * (1 - tanh^2(r/c)) */
    cg_pointwise(g, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, b, cap, NULL, out, -1);
    return out;
}

cg_t af_sdpa_sink_tensor(af_cg *g, const af_sdpa_desc *d) { return per_head(g, d, CG_SLOT_SINK, 1); }

void af_sdpa_dsink(af_cg *g, const af_sdpa_desc *d, cg_t stats, cg_t softmax_rowsum) {
    /* cudnn-frontend's lowering (CompositeSDPABackwardNode, cuDNN >= 9.13): dsink =
     * reduce_{b, sq}(exp(sink - Stats) * rowsum(dO * O)) into [1,hq,1,1]; FE's tests
     * check the result against the true gradient -sum P_sink D (feature_spec.h): the
     * engine owns the sign, the graph is the pattern it recognises. */
    cg_t sink = per_head(g, d, CG_SLOT_SINK, 1);
    cg_t sub = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, 1);
    cg_t e = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, 1);
    cg_t m = cg_virtual_packed(g, CUDNN_DATA_FLOAT, d->b, d->hq, d->sq, 1);
    cg_pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, sink, stats, NULL, sub, -1);
    cg_pointwise(g, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, sub, NULL, NULL, e, -1);
    cg_pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, e, softmax_rowsum, NULL, m, -1);
    cg_reduction(g, CUDNN_REDUCE_TENSOR_ADD, m, per_head(g, d, CG_SLOT_DSINK, 1));
}

#endif /* ATTNFUZZ_HAVE_CUDA */
