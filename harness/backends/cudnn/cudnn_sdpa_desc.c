/* cudnn_sdpa_desc.c — from a case and its layout plan to the SDPA graph description. */
#include "backends/cudnn/cudnn_sdpa.h"

#ifdef ATTNFUZZ_HAVE_CUDA

#include "backends/cudnn/cudnn_bucket.h"
#include "model/tensors.h"

#include <stdio.h>
#include <string.h>

/* [b,h,s,d] strides of a view; ragged views get a nominal batch stride (ignored by
 * cuDNN once a ragged offset is attached), paged views the page stride. */
static void view_strides(const af_tensor_view *v, int64_t out[4]) {
    out[0] = v->ragged ? (int64_t)v->S * v->stride_s : v->stride_b;
    out[1] = v->stride_h;
    out[2] = v->stride_s;
    out[3] = 1;
}

/* What the fp8_e4m3 graphs serve on Hopper (cudnn-frontend's sdpa_fp8 and sdpa_fp8_bwd
 * support checks, TransformerEngine's SM90 gate; research notes section 3.3): d_qk = d_v,
 * d % 16 == 0, d <= 256 (backward: d_qk = d_v = 128), masks none / causal / padding /
 * padding_causal (top-left), bshd or sbhd, no thd, no paging, no window. The rest is
 * declined with the reason. */
static int fp8_declines(const af_case *c, size_t cudnn_version, char *why, size_t cap) {
    bool windowed = c->window_left >= 0 || c->window_right >= 0;
    bool aligned_matters = c->mask == AF_MASK_CAUSAL || windowed;
    if (cudnn_version < 90100 || (cudnn_version >= 91000 && cudnn_version < 91001))
        snprintf(why, cap, "fp8_e4m3: cuDNN %zu has no FP8 SDPA (needs >= 9.1.0, not 9.10.0)", cudnn_version);
    else if (c->backward && (c->head_dim_qk != 128 || c->head_dim_v != 128))
        snprintf(why, cap,
                 "fp8_e4m3 backward: head_dim_qk = head_dim_v = 128 required on SM90 (cudnn-frontend "
                 "sdpa_fp8_bwd.h; got %d, %d)",
                 c->head_dim_qk, c->head_dim_v);
    else if (c->head_dim_qk != c->head_dim_v)
        snprintf(why, cap, "fp8_e4m3: cuDNN FP8 SDPA on SM90 needs head_dim_qk = head_dim_v (got %d, %d)",
                 c->head_dim_qk, c->head_dim_v);
    else if (c->head_dim_qk % 16 || c->head_dim_qk > 256)
        snprintf(why, cap, "fp8_e4m3: cuDNN FP8 SDPA needs head dim %% 16 == 0 and <= 256 (got %d)", c->head_dim_qk);
    else if (c->layout == AF_LAYOUT_THD)
        snprintf(why, cap, "fp8_e4m3: layout thd (ragged) is not served by cuDNN FP8 SDPA on SM90");
    else if (c->layout != AF_LAYOUT_BSHD && c->layout != AF_LAYOUT_SBHD)
        snprintf(why, cap, "fp8_e4m3: layout %s not enabled (TE serves FP8 only for bshd/sbhd before cuDNN 9.21)",
                 af_layout_name(c->layout));
    else if (c->page_size)
        snprintf(why, cap, "fp8_e4m3: paged KV not enabled for the FP8 graph");
    else if (windowed)
        snprintf(why, cap,
                 "fp8_e4m3: sliding windows not enabled for the FP8 graph (TE's SM90 FP8 masks: none, "
                 "causal, padding, padding_causal)");
    else if (aligned_matters && c->align == AF_ALIGN_BOTTOM_RIGHT)
        snprintf(why, cap, "fp8_e4m3: bottom-right causal FP8 SDPA is Blackwell-only in cuDNN");
    else
        return 0;
    return -1;
}

/* The features of oracle/feature_spec.h: what the composite fp16/bf16 graphs serve
 * (softcap, bias of every broadcast shape, ALiBi, sinks off_by_one / learnable with
 * dsink, dropout through the case's keep mask as a tensor; cudnn_graph_feat.c) and what
 * is declined, each with its own reason, never accepted and ignored. Declines come first
 * so a case with several features names the one cuDNN cannot serve. docs/cudnn.md
 * "Features" has the table. c is the serving case (cudnn_bucket.h): the mask is uploaded
 * in its extents. */
static int feature_declines(const af_case *c, size_t cudnn_version, char *why, size_t cap) {
    bool sinks = c->softmax != AF_SOFTMAX_VANILLA, dropout = c->dropout_p != 0.0;
    long long mask_bytes = af_cudnn_dropout_mask_bytes(c->dropout_p, c->batch, c->heads_q, c->seqlen_q, c->seqlen_kv);
    if (af_case_heads_v(c) != c->heads_kv)
        snprintf(why, cap,
                 "heads_v: these graphs give V, dV and the backward's group reduction one K/V head count (hk); "
                 "cuDNN's h_v (h_k != h_v) is not mapped yet; not served");
    else if (c->attention_chunk > 0)
        snprintf(why, cap, "attention_chunk: cuDNN's SDPA has no chunked (block-local) mask; not served");
    else if (c->score_mod != AF_SCORE_MOD_NONE) /* cudnn-frontend's score_mod is a graph callback */
        snprintf(why, cap,
                 "score_mod = %s: the SDPA graphs here build no score modifier (cudnn-frontend's score_mod takes "
                 "a graph callback; the sin, cos, tan pointwise nodes are not wired); not served",
                 af_score_mod_name(c->score_mod));
    else if (c->n_documents > 0)
        snprintf(why, cap,
                 "documents: the document mask is not wired into the cuDNN graphs (its block masks would need a "
                 "mask tensor); not served");
    else if (c->global_keys > 0)
        snprintf(why, cap,
                 "global_keys: cuDNN's SDPA masks (causal, sliding window, padding) have no global keys; "
                 "not served");
    else if (c->block_mask_q > 0)
        snprintf(why, cap,
                 "block_mask: cuDNN's block mask is the frontend's flex graph (a score_mod over a block tensor), "
                 "not wired into the SDPA graphs here; not served");
    else if (c->custom_mask_p != 0.0)
        snprintf(why, cap,
                 "custom_mask: an element mask needs a bias / mask tensor in the cuDNN graph, not wired here; "
                 "not served");
    else if (c->dropout_rng == AF_DROPOUT_RNG_KERNEL && dropout)
        snprintf(why, cap,
                 "dropout_rng = kernel: cuDNN's own RNG (the frontend's set_dropout(p, seed, offset) with its "
                 "rng_dump output) is not wired into these graphs, which take attnfuzz's mask as a tensor; not "
                 "served");
    else if (c->outputs == AF_OUTPUTS_MAX_SUMEXP)
        snprintf(why, cap,
                 "outputs = max_sumexp: the SDPA node's Max and Sum_exp outputs are not mapped into the backend "
                 "graph here (only Stats); not served");
    else if (c->outputs == AF_OUTPUTS_MAX_LOGIT)
        snprintf(why, cap,
                 "outputs = max_logit: cuDNN's SDPA has no per-head max-logit output (TransformerEngine reduces "
                 "its own); not served");
    else if (c->lse_base2)
        snprintf(why, cap, "stats = log2: cuDNN's SDPA writes natural-log stats (max + log sum exp); not served");
    else if (c->dlse)
        snprintf(why, cap, "dlse: cuDNN's SDPA backward takes no incoming LSE gradient (its inputs are O, dO, Stats)");
    else if (af_dtype_is_fp8_tensor(c->dtype) && sinks)
        snprintf(why, cap,
                 "softmax = %s with %s: cudnn-frontend's FP8 SDPA node (sdpa_fp8.h: attn_scale, descales, mask, "
                 "softmax, scale_S, bmm2) takes no sink_token input; not served",
                 af_softmax_name(c->softmax), af_dtype_name(c->dtype));
    else if (af_dtype_is_fp8_tensor(c->dtype) &&
             (c->softcap != 0.0 || sinks || c->bias != AF_BIAS_NONE || c->alibi || dropout))
        snprintf(why, cap,
                 "fp8_e4m3 with %s: not wired into the FP8 graphs (cudnn-frontend: SDPA FP8 does not support "
                 "bias; softcap, ALiBi, sinks and dropout are fp16/bf16 only here)",
                 c->softcap != 0.0 ? "softcap"
                 : sinks           ? "sinks"
                 : c->alibi        ? "alibi"
                 : dropout         ? "dropout"
                                   : "bias");
    else if (mask_bytes > AF_CUDNN_DROPOUT_MASK_MAX) /* the mask is a real input tensor */
        snprintf(why, cap,
                 "dropout = %g: the keep mask (b %d, hq %d, s_q %d, s_kv %d) would take %lld bytes, over 1 GiB",
                 c->dropout_p, c->batch, c->heads_q, c->seqlen_q, c->seqlen_kv, mask_bytes);
    else if (sinks && cudnn_version < 91300)
        snprintf(why, cap, "softmax = %s: cuDNN %zu has no SDPA sink token (cudnn-frontend: needs cuDNN >= 9.13)",
                 af_softmax_name(c->softmax), cudnn_version);
    else if (sinks && c->seqlen_q == 1)
        snprintf(why, cap,
                 "softmax = %s with seqlen_q = 1: cudnn-frontend: decode only mode (s_q == 1) not supported with "
                 "sink_token",
                 af_softmax_name(c->softmax));
    else
        return 0;
    return -1;
}

/* The served features into the description (after feature_declines). */
static void feature_desc(const af_case *c, af_sdpa_desc *d) {
    d->softcap = (float)c->softcap;
    if (c->bias != AF_BIAS_NONE) { /* a broadcast axis is extent 1 (stride 0 in effect) */
        af_bias_shape full = af_bias_full_query(c->bias);
        d->bias_b = (full == AF_BIAS_B1SS || full == AF_BIAS_BHSS) ? c->batch : 1;
        d->bias_h = (full == AF_BIAS_1HSS || full == AF_BIAS_BHSS) ? c->heads_q : 1;
        d->bias_q = af_bias_broadcasts_query(c->bias) ? 1 : d->sq;
    }
    d->alibi = c->alibi != AF_ALIBI_NO;
    d->alibi_signed = c->alibi == AF_ALIBI_SIGNED;
    d->alibi_b = c->alibi_slopes == AF_SLOPES_RANDOM_BATCH ? d->b : 1;
    d->sink = c->softmax != AF_SOFTMAX_VANILLA;
    d->dsink = c->softmax == AF_SOFTMAX_LEARNABLE && c->backward;
    if (c->dropout_p != 0.0) { /* the mask itself is data of the run (cudnn.c), not of the graph */
        d->dropout = true;
    }
}

int af_sdpa_desc_make(const af_case *c, const af_layout_plan *p, size_t cudnn_version, af_sdpa_desc *d, char *why,
                      size_t cap) {
    memset(d, 0, sizeof *d);
    if (c->kv_dtype != AF_KV_SAME) {
        snprintf(why, cap,
                 "kv_dtype = %s: cuDNN's SDPA graphs take Q, K and V of one data type (the fp16 / bf16 graph or the "
                 "FP8 graph with fp8 Q); an fp8 KV cache under %s Q is not served",
                 af_kv_dtype_name(c->kv_dtype), af_dtype_name(c->dtype));
        return -1;
    }
    if (c->dtype == AF_DT_FP16)
        d->io = CUDNN_DATA_HALF;
    else if (c->dtype == AF_DT_BF16)
        d->io = CUDNN_DATA_BFLOAT16;
    else if (af_dtype_is_fp8_tensor(c->dtype)) { /* E5M2: the same graphs with E5M2 real tensors and dS8 */
        d->io = c->dtype == AF_DT_FP8_E5M2 ? CUDNN_DATA_FP8_E5M2 : CUDNN_DATA_FP8_E4M3;
        d->fp8 = true;
        if (fp8_declines(c, cudnn_version, why, cap)) return -1;
        if (c->descale_head) {
            snprintf(why, cap,
                     "descale = head: the FP8 graphs here take one (1, 1, 1, 1) descale per tensor; a per-(batch, kv "
                     "head) descale tensor is not mapped");
            return -1;
        }
        if (c->out_dtype != AF_OUT_SAME && c->backward) {
            snprintf(why, cap,
                     "out_dtype = %s with backward: the FP8 backward graph here reads an FP8 O with its descale "
                     "(cuDNN's SM90 FP8 backward also takes FP8 gradients only); forward only",
                     af_out_dtype_name(c->out_dtype));
            return -1;
        }
    } else {
        snprintf(why, cap, "dtype %s: cuDNN's MXFP8 attention is Blackwell-only (cuDNN >= 9.21); cpu/plugin only",
                 af_dtype_name(c->dtype));
        return -1;
    }
    d->o_type = c->out_dtype == AF_OUT_FP16   ? CUDNN_DATA_HALF
                : c->out_dtype == AF_OUT_BF16 ? CUDNN_DATA_BFLOAT16
                                              : d->io; /* no output scale: scale_o is 1 (gen.c) */
    if (c->cp_size > 1) {
        snprintf(why, cap, "cp = %d: context parallelism is the cp wrapper's job, not the cudnn backend's", c->cp_size);
        return -1;
    }
    if (feature_declines(c, cudnn_version, why, cap)) return -1;
    d->b = c->batch;
    d->hq = c->heads_q;
    d->hk = c->heads_kv;
    d->sq = c->seqlen_q;
    d->skv = c->seqlen_kv;
    feature_desc(c, d); /* after the extents: the bias rows and the slopes' batch are them */
    d->dqk = c->head_dim_qk;
    d->dv = c->head_dim_v;
    for (int t = 0; t < AF_T_COUNT; t++) {
        view_strides(&p->view[t], d->str[t]);
        /* the pointer af_gpu_tensor_ptr gives: the allocation (256-byte aligned) plus the guard */
        int64_t off = AF_GUARD_BYTES + p->view[t].base * af_storage_bytes(p->view[t].storage), a = 16;
        while (a > 1 && off % a) a /= 2;
        d->base_align[t] = a;
    }
    d->ragged = c->layout == AF_LAYOUT_THD;
    d->ragged_kv = p->view[AF_T_K].ragged; /* thd K/V; not paged, nor padded by layout_kv */
    d->paged = p->view[AF_T_K].paged || p->view[AF_T_V].paged;
    if (d->paged) {
        if (c->backward) {
            snprintf(why, cap, "paged KV with backward: cuDNN has no paged backward");
            return -1;
        }
        if (!(p->view[AF_T_K].paged && p->view[AF_T_V].paged)) {
            snprintf(why, cap, "paged KV needs separate K and V buffers");
            return -1;
        }
        d->n_pages = p->n_pages;
        d->page_size = p->page_size;
        d->pages_per_seq = p->pages_per_seq;
    }
    d->padding = c->has_seqlens || d->ragged || d->paged;
    /* cudnn-frontend turns the padding mask on for the backward of cuDNN <= 9.15.0 when
     * s_kv % 128 != 0 (a known cuDNN bug); do what FE users get. */
    if (c->backward && !d->fp8 && !d->padding && !d->ragged && d->skv % 128 != 0 && cudnn_version <= 91500) {
        d->padding = true;
        d->workaround_padding = true;
    }
    bool causal = c->mask == AF_MASK_CAUSAL;
    if (causal || c->window_right >= 0) {
        d->has_right = true;
        d->right = causal ? 0 : c->window_right;
    }
    if (c->window_left >= 0) {
        d->has_left = true;
        d->left_cudnn = c->window_left + 1; /* cuDNN's left bound counts the diagonal */
    }
    d->bottom_right = c->align == AF_ALIGN_BOTTOM_RIGHT;
    return 0;
}

void af_sdpa_run_scalars(const af_case *c, float *attn_scale, float *dropout_scale) {
    *attn_scale = af_case_scale(c);
    *dropout_scale = c->dropout_p != 0.0 ? (float)(1.0 / (1.0 - c->dropout_p)) : 1.0f;
}

bool af_sdpa_unified_applies(const af_sdpa_desc *d) {
    return !d->fp8 && !d->has_left && !d->has_right && !d->paged && !d->workaround_padding && !af_sdpa_has_features(d);
}

int af_sdpa_frontend_alignment(const af_sdpa_desc *d, bool backward, char *why, size_t cap) {
    static const af_tensor_id ids[] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_O, AF_T_DO, AF_T_DQ, AF_T_DK, AF_T_DV};
    static const char *const names[] = {"Q", "K", "V", "O", "dO", "dQ", "dK", "dV"};
    for (int i = 0; i < (backward ? 8 : 4); i++) {
        af_tensor_id t = ids[i];
        bool kv_side = af_tensor_is_kv(t);
        int64_t dd = t == AF_T_V || t == AF_T_O || t == AF_T_DO || t == AF_T_DV ? d->dv : d->dqk;
        int64_t dims[4] = {d->b, kv_side ? d->hk : d->hq, kv_side ? d->skv : d->sq, dd};
        if (kv_side && d->paged) dims[0] = d->n_pages, dims[2] = d->page_size; /* the page containers */
        cudnnDataType_t dt = t == AF_T_O ? d->o_type : d->io;
        if (cg_alignment(dt, dims, d->str[t], d->base_align[t]) == 16) continue;
        if (d->base_align[t] < 16) {
            snprintf(why, cap,
                     "%s: its pointer keeps %lld-byte alignment, not 16; cudnn-frontend refuses a misaligned "
                     "SDPA operand (ATTNFUZZ_CUDNN_ALIGN=frontend)",
                     names[i], (long long)d->base_align[t]);
            return -1;
        }
        for (int k = 0; k < 4; k++) {
            int64_t only[4] = {1, 1, 1, 1}; /* dimension k alone */
            only[k] = dims[k];
            if (cg_alignment(dt, only, d->str[t], 16) < 16) {
                snprintf(why, cap,
                         "%s: stride %lld of dimension %d is not a multiple of 16 bytes; cudnn-frontend "
                         "refuses a misaligned SDPA operand (ATTNFUZZ_CUDNN_ALIGN=frontend)",
                         names[i], (long long)d->str[t][k], k);
                return -1;
            }
        }
    }
    return 0;
}
#endif /* ATTNFUZZ_HAVE_CUDA */
