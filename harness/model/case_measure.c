/* case_measure.c — the work, cost and features of a case (model/case_measure.h). */
#include "model/case_measure.h"
#include "model/case_fields.h"

double af_attention_work(double passes, int batch, int heads_q, int seqlen_q, int seqlen_kv, int head_dim_sum) {
    return passes * batch * (double)heads_q * seqlen_q * (double)seqlen_kv * (double)head_dim_sum;
}

double af_case_work(const af_case *c) {
    return af_attention_work(c->backward ? 3.0 : 1.0, c->batch, c->heads_q, c->seqlen_q, c->seqlen_kv,
                             c->head_dim_qk + c->head_dim_v);
}

double af_case_elements(const af_case *c) {
    double gap = c->stride_gap, tq = (double)c->batch * c->seqlen_q, tk = (double)c->batch * c->seqlen_kv;
    if (c->layout == AF_LAYOUT_THD) { /* packed tokens plus the pad tokens after each sequence */
        tq = tk = (double)c->batch * c->thd_gap;
        for (int b = 0; b < c->batch; b++) {
            tq += af_case_len_q(c, b);
            tk += af_case_len_kv(c, b);
        }
        if (tq < (double)c->batch * c->seqlen_q) tq = (double)c->batch * c->seqlen_q; /* dense copies */
        if (tk < (double)c->batch * c->seqlen_kv) tk = (double)c->batch * c->seqlen_kv;
    }
    /* gap_h, gap_s, gap_b: a head block's, a token's and a batch's tail, bounded per
     * tensor by (gap_s + gap_h) per (token, head) plus gap_b per batch or page (layout.c) */
    gap += c->gap_h + c->gap_s;
    double elems = c->heads_q * tq * (c->head_dim_qk + 2.0 * c->head_dim_v + 3 * gap) +
                   tk * (c->heads_kv * (c->head_dim_qk + gap) + af_case_heads_v(c) * (c->head_dim_v + gap)) +
                   5.0 * c->batch * c->gap_b + (c->page_size ? 2.0 * tk * c->gap_b : 0.0); /* gap_b per page */
    return elems * (c->backward ? 2 : 1);
}

double af_case_cost(const af_case *c) {
    double cost =
        af_attention_work(1.0, c->batch, c->heads_q, c->seqlen_q, c->seqlen_kv, c->head_dim_qk + c->head_dim_v);
    /* K/V traffic of extra kv heads counts too, then one unit per non-default feature */
    cost += (double)c->batch * c->seqlen_kv *
            ((double)c->heads_kv * c->head_dim_qk + (double)af_case_heads_v(c) * c->head_dim_v);
    cost += c->n_data + (c->has_seqlens ? 1 : 0) + (c->stride_gap ? 1 : 0) + (c->gap_h ? 1 : 0) + (c->gap_s ? 1 : 0) +
            (c->gap_b ? 1 : 0) + (c->page_size ? 1 : 0) + (c->packing != AF_PACK_SEPARATE ? 1 : 0) +
            (af_packing_per_head(c->packing) ? 1 : 0) + (c->layout_kv != AF_SIDE_SAME ? 1 : 0) +
            (c->layout_do != AF_SIDE_SAME ? 1 : 0) + (c->cp_size > 1 ? c->cp_size : 0) + (c->backward ? 1 : 0);
    /* features: one unit each (so the minimiser drops one whenever the finding survives) */
    int features = 0;
    for (int f = 0; f < AF_CF_COUNT; f++)
        features += af_case_field_row((af_case_field)f)->feature_text && af_case_field_printed(c, (af_case_field)f);
    cost += features;
    return cost;
}

int af_case_features(const af_case *c) {
    int n = 0;
    n += c->dtype != AF_DT_FP16;
    n += c->dtype == AF_DT_FP8_E5M2; /* the rarer fp8 kind: fp8_e4m3 is the simpler case */
    n += c->out_dtype != AF_OUT_SAME;
    n += c->kv_dtype != AF_KV_SAME;
    n += c->descale_head;
    n += c->has_seqlens;
    n += c->layout != AF_LAYOUT_BSHD;
    n += c->packing != AF_PACK_SEPARATE;
    n += af_packing_per_head(c->packing);
    n += c->layout_kv != AF_SIDE_SAME;
    n += c->layout_do != AF_SIDE_SAME;
    n += c->stride_gap != 0;
    n += c->gap_h != 0;
    n += c->gap_s != 0;
    n += c->gap_b != 0;
    n += c->thd_gap != 0;
    n += c->page_size != 0;
    n += c->mask != AF_MASK_NONE;
    n += c->align != AF_ALIGN_TOP_LEFT;
    n += c->window_left >= 0;
    n += c->window_right >= 0;
    n += c->has_scale;
    n += c->backward;
    n += c->cp_size > 1;
    n += c->n_data - 1;
    n += !(c->data[0].kind == AF_DATA_NORMAL && c->data[0].p0 == 1.0);
    n += c->seed != 1;
    n += af_case_has_fp8_headroom(c);  /* fp8 scales other than current scaling */
    n += c->outputs != AF_OUTPUTS_LSE; /* extra score statistics */
    /* dropout: a probability other than 1/2, a seed other than 1, an offset other than 0
     * (one each, so the minimiser takes each simplification on its own) */
    if (c->dropout_p != 0.0) n += (c->dropout_p != 0.5) + (c->dropout_seed != 1) + (c->dropout_offset != 0);
    n += c->dropout_rng == AF_DROPOUT_RNG_KERNEL; /* the kernel's own stream over attnfuzz's */
    /* the heavier variants: learnable sinks, a bias with more axes than 11ss (or 111s),
     * ALiBi in another convention than yes, slopes other than standard */
    af_bias_shape full = af_bias_full_query(c->bias);
    n += (c->softmax == AF_SOFTMAX_LEARNABLE) + (full == AF_BIAS_1HSS || full == AF_BIAS_B1SS) +
         2 * (full == AF_BIAS_BHSS);
    n += (c->alibi == AF_ALIBI_ABS || c->alibi == AF_ALIBI_SIGNED) + (c->alibi_slopes != AF_SLOPES_STANDARD);
    return n;
}
