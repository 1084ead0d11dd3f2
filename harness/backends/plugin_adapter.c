/* backends/plugin_adapter.c — the af_backend over a loaded plugin (the ABI adapter).
 * The plugin is opened in this process on the first call that needs it (supports, run:
 * af_plugin_state_open), so a process that only forks the runs never loads it.
 * Each call translates the case and the laid-out buffers into the plain structs of
 * attnfuzz/plugin.h: host pointers by default; for a plugin that declares
 * AF_PLUGIN_WANTS_DEVICE, device copies of every buffer (guards included, so the guard
 * and poison checks still apply), copied back after the run (kernels/af_gpu.h). Without
 * CUDA such a plugin is declined.
 */
#include "backends/plugin_adapter.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/features.h"
#include "model/layout.h"
#include "util/clock.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include "kernels/af_gpu.h"
#endif

/* The ABI's tensor order and storage codes are attnfuzz's own, by construction. */
_Static_assert(AF_PLUGIN_Q == AF_T_Q && AF_PLUGIN_K == AF_T_K && AF_PLUGIN_V == AF_T_V && AF_PLUGIN_O == AF_T_O &&
                   AF_PLUGIN_LSE == AF_T_LSE && AF_PLUGIN_DO == AF_T_DO && AF_PLUGIN_DQ == AF_T_DQ &&
                   AF_PLUGIN_DK == AF_T_DK && AF_PLUGIN_DV == AF_T_DV && AF_PLUGIN_TENSORS == AF_T_COUNT,
               "plugin tensor indices follow af_tensor_id");
_Static_assert(AF_PLUGIN_STORAGE_F16 == AF_ST_F16 && AF_PLUGIN_STORAGE_BF16 == AF_ST_BF16 &&
                   AF_PLUGIN_STORAGE_E4M3 == AF_ST_E4M3 && AF_PLUGIN_STORAGE_F32 == AF_ST_F32 &&
                   AF_PLUGIN_STORAGE_E5M2 == AF_ST_E5M2,
               "plugin storage codes follow af_storage");
_Static_assert(AF_PLUGIN_KV_SAME == AF_KV_SAME && AF_PLUGIN_KV_FP8_E4M3 == AF_KV_FP8_E4M3 &&
                   AF_PLUGIN_KV_FP8_E5M2 == AF_KV_FP8_E5M2,
               "plugin kv_dtype codes follow af_kv_dtype");
_Static_assert(AF_PLUGIN_DROPOUT_RNG_ATTNFUZZ == AF_DROPOUT_RNG_ATTNFUZZ &&
                   AF_PLUGIN_DROPOUT_RNG_KERNEL == AF_DROPOUT_RNG_KERNEL,
               "plugin dropout_rng codes follow af_dropout_rng");
_Static_assert(AF_PLUGIN_SCORE_MOD_NONE == AF_SCORE_MOD_NONE && AF_PLUGIN_SCORE_MOD_SQUARED == AF_SCORE_MOD_SQUARED &&
                   AF_PLUGIN_SCORE_MOD_TRIG == AF_SCORE_MOD_TRIG && AF_PLUGIN_SCORE_MOD_TRIG2 == AF_SCORE_MOD_TRIG2,
               "plugin score_mod codes follow af_score_mod");
_Static_assert(AF_PLUGIN_DTYPE_FP16 == AF_DT_FP16 && AF_PLUGIN_DTYPE_BF16 == AF_DT_BF16 &&
                   AF_PLUGIN_DTYPE_FP8_E4M3 == AF_DT_FP8_E4M3 && AF_PLUGIN_DTYPE_MXFP8 == AF_DT_MXFP8 &&
                   AF_PLUGIN_DTYPE_FP8_E5M2 == AF_DT_FP8_E5M2,
               "plugin dtype codes follow af_dtype");

/* The plain-C view of one case (the arrays the problem points into live here). */
typedef struct {
    af_plugin_problem problem;
    int32_t seqlens_q[AF_MAX_BATCH];
    int32_t seqlens_kv[AF_MAX_BATCH];
    float sink[AF_MAX_HEADS]; /* (heads_q) */
    float *alibi_slopes;      /* (alibi_b, heads_q), malloc'd */
    float *bias;              /* (bias_b, bias_h, bias_q, seqlen_kv), malloc'd */
    float *dlse;              /* (batch, heads_q, seqlen_q), malloc'd */
} plugin_problem_buf;

static void problem_buf_free(plugin_problem_buf *pb) {
    free(pb->bias);
    free(pb->alibi_slopes);
    free(pb->dlse);
    pb->bias = pb->alibi_slopes = pb->dlse = NULL;
}

/* The features of the case into the problem (ABI 2; model/features.h values; the bias
 * t's given one when it has one: model/tensors.h; t NULL for a supports() check). 0, or
 * -1 when out of memory (the arrays are freed by problem_buf_free). */
static int features_from_case(const af_case *c, const af_tensors *t, plugin_problem_buf *pb) {
    af_plugin_problem *p = &pb->problem;
    p->softmax = (int32_t)c->softmax;
    p->softcap = (float)c->softcap;
    if (c->softcap != 0.0) p->features |= AF_PLUGIN_FEAT_SOFTCAP;
    p->score_mod = (int32_t)c->score_mod; /* ABI 8: the same numbers as af_score_mod */
    if (c->score_mod != AF_SCORE_MOD_NONE) p->features |= AF_PLUGIN_FEAT_SCORE_MOD;
    if (c->softmax != AF_SOFTMAX_VANILLA) {
        p->features |= AF_PLUGIN_FEAT_SINK;
        for (int h = 0; h < c->heads_q; h++) pb->sink[h] = af_feature_sink(c, h);
        p->sink = pb->sink;
        if (af_case_has_dsink(c)) p->features |= AF_PLUGIN_FEAT_DSINK;
    }
    if (c->alibi) {
        p->features |= AF_PLUGIN_FEAT_ALIBI;
        p->alibi_b = af_feature_alibi_batch(c);
        p->alibi_signed = c->alibi == AF_ALIBI_SIGNED;
        if (p->alibi_signed) p->features |= AF_PLUGIN_FEAT_ALIBI_SIGNED;
        if (c->alibi_slopes == AF_SLOPES_RANDOM_BATCH) p->features |= AF_PLUGIN_FEAT_ALIBI_BATCH;
        pb->alibi_slopes = malloc((size_t)p->alibi_b * (size_t)c->heads_q * sizeof(float));
        if (!pb->alibi_slopes) return -1;
        for (int b = 0; b < p->alibi_b; b++)
            for (int h = 0; h < c->heads_q; h++) pb->alibi_slopes[b * c->heads_q + h] = af_feature_alibi_slope(c, b, h);
        p->alibi_slopes = pb->alibi_slopes;
    }
    int bb, bh, bq = af_feature_bias_rows(c);
    af_feature_bias_dims(c, &bb, &bh);
    if (bb) {
        p->features |= AF_PLUGIN_FEAT_BIAS;
        if (bq == 1 && af_bias_broadcasts_query(c->bias)) p->features |= AF_PLUGIN_FEAT_BIAS_ROW;
        p->bias_b = bb, p->bias_h = bh, p->bias_q = bq;
        pb->bias = malloc((size_t)bb * (size_t)bh * (size_t)bq * (size_t)c->seqlen_kv * sizeof(float));
        if (!pb->bias) return -1;
        float *x = pb->bias;
        for (int b = 0; b < bb; b++)
            for (int h = 0; h < bh; h++)
                for (int i = 0; i < bq; i++)
                    for (int j = 0; j < c->seqlen_kv; j++) *x++ = af_tensors_bias_at(c, t, b, h, i, j);
        p->bias = pb->bias;
    }
    if (c->lse_base2) p->features |= AF_PLUGIN_FEAT_LSE_BASE2;
    if (c->dlse) {
        p->features |= AF_PLUGIN_FEAT_DLSE;
        pb->dlse = malloc((size_t)c->batch * (size_t)c->heads_q * (size_t)c->seqlen_q * sizeof(float));
        if (!pb->dlse) return -1;
        float *x = pb->dlse;
        for (int b = 0; b < c->batch; b++)
            for (int h = 0; h < c->heads_q; h++)
                for (int i = 0; i < c->seqlen_q; i++) *x++ = af_feature_dlse(c, b, h, i);
        p->dlse = pb->dlse;
    }
    if (c->dropout_p != 0.0) { /* ABI 3 */
        p->features |= AF_PLUGIN_FEAT_DROPOUT;
        p->dropout_p = c->dropout_p;
        p->dropout_seed = c->dropout_seed;
        p->dropout_offset = c->dropout_offset;
    }
    if (c->attention_chunk > 0) { /* ABI 4 */
        p->features |= AF_PLUGIN_FEAT_CHUNK;
        p->attention_chunk = c->attention_chunk;
    }
    if (c->n_documents > 0) { /* ABI 5: the lengths as exclusive ends (they sum to <= seqlen_kv) */
        p->features |= AF_PLUGIN_FEAT_DOCUMENTS;
        p->n_documents = c->n_documents;
        for (int k = 0, end = 0; k < c->n_documents; k++) p->document_ends[k] = end += c->documents[k];
    }
    if (c->global_keys > 0) { /* ABI 5 */
        p->features |= AF_PLUGIN_FEAT_GLOBAL;
        p->global_keys = c->global_keys;
    }
    if (c->block_mask_q > 0 || c->custom_mask_p != 0.0) p->mask_seed = c->seed; /* ABI 6 */
    if (c->block_mask_q > 0) {
        p->features |= AF_PLUGIN_FEAT_BLOCK_MASK;
        p->block_mask_q = c->block_mask_q;
        p->block_mask_k = c->block_mask_k;
        p->block_mask_p = c->block_mask_p;
    }
    if (c->custom_mask_p != 0.0) {
        p->features |= AF_PLUGIN_FEAT_CUSTOM_MASK;
        p->custom_mask_p = c->custom_mask_p;
    }
    p->outputs = (int32_t)c->outputs; /* ABI 7; the pointers are set for run() only */
    if (c->outputs != AF_OUTPUTS_LSE) p->features |= AF_PLUGIN_FEAT_OUTPUTS;
    return 0;
}

static void problem_from_case(const af_case *c, plugin_problem_buf *pb) {
    memset(pb, 0, sizeof *pb);
    af_plugin_problem *p = &pb->problem;
    p->dtype = (int32_t)c->dtype;
    p->batch = c->batch;
    p->heads_q = c->heads_q;
    p->heads_kv = c->heads_kv;
    p->heads_v = af_case_heads_v(c); /* ABI 6 */
    p->seqlen_q = c->seqlen_q;
    p->seqlen_kv = c->seqlen_kv;
    p->head_dim_qk = c->head_dim_qk;
    p->head_dim_v = c->head_dim_v;
    for (int b = 0; b < c->batch && b < AF_MAX_BATCH; b++) {
        pb->seqlens_q[b] = af_case_len_q(c, b);
        pb->seqlens_kv[b] = af_case_len_kv(c, b);
        if (pb->seqlens_q[b] != c->seqlen_q || pb->seqlens_kv[b] != c->seqlen_kv) p->flags |= AF_PLUGIN_PADDED;
    }
    p->seqlens_q = pb->seqlens_q;
    p->seqlens_kv = pb->seqlens_kv;
    p->mask = c->mask == AF_MASK_CAUSAL ? AF_PLUGIN_MASK_CAUSAL : AF_PLUGIN_MASK_NONE;
    p->align = c->align == AF_ALIGN_BOTTOM_RIGHT ? AF_PLUGIN_ALIGN_BOTTOM_RIGHT : AF_PLUGIN_ALIGN_TOP_LEFT;
    p->window_left = c->window_left;
    p->window_right = c->window_right;
    p->scale = af_case_scale(c);
    if (c->backward) p->flags |= AF_PLUGIN_BACKWARD;
    if (c->layout == AF_LAYOUT_THD) p->flags |= AF_PLUGIN_RAGGED;
    if (c->page_size > 0) p->flags |= AF_PLUGIN_PAGED;
    p->layout = af_layout_name(c->layout);
    p->packing = af_packing_name(c->packing);
    p->kv_dtype = (int32_t)c->kv_dtype;                                          /* ABI 7 */
    p->descale_per_head = c->descale_head;                                       /* ABI 7; the arrays are set in run */
    p->page_layout = c->page_hnd ? AF_PLUGIN_PAGE_HND : AF_PLUGIN_PAGE_NHD;      /* ABI 7 */
    p->page_kv = c->page_kv_joint ? AF_PLUGIN_PAGE_JOINT : AF_PLUGIN_PAGE_SPLIT; /* ABI 7 */
    p->dropout_rng = (int32_t)c->dropout_rng; /* ABI 7; the mask pointers are set in run */
}

/* Where the buffers, the ragged token starts, the page table and the mxfp8 scales
 * live for this call: the host af_tensors, or their device copies. */
typedef struct {
    uint8_t *buffer[AF_BUF_COUNT]; /* start of data of each buffer (NULL: unused) */
    const int64_t *token_start_q, *token_start_kv;
    const int32_t *page_table;
    const uint8_t *mx_scale[3]; /* Q, K, V */
} plugin_memory;

static void tensors_from_plan(const af_case *c, const af_tensors *t, const plugin_memory *mem, af_plugin_tensors *out) {
    memset(out, 0, sizeof *out);
    const af_layout_plan *plan = &t->plan;
    for (int i = 0; i < AF_T_COUNT; i++) {
        const af_tensor_view *v = &plan->view[i];
        af_plugin_tensor *pt = &out->t[i];
        uint8_t *buf = mem->buffer[v->buffer];
        pt->storage = (int32_t)v->storage;
        pt->B = v->B;
        pt->H = v->H;
        pt->S = v->S;
        pt->D = v->D;
        pt->descale = 1.0f;
        if (!buf || plan->buffer_elems[v->buffer] <= 0) continue; /* absent (forward only) */
        pt->buffer = buf;
        pt->buffer_elems = plan->buffer_elems[v->buffer];
        pt->data = buf + v->base * af_storage_bytes(v->storage);
        pt->stride_b = v->stride_b;
        pt->stride_h = v->stride_h;
        pt->stride_s = v->stride_s;
        if (v->ragged) {
            bool kv = af_tensor_is_kv(i);
            pt->token_start = kv ? mem->token_start_kv : mem->token_start_q;
        }
        if (v->paged) {
            pt->page_table = mem->page_table;
            pt->page_size = plan->page_size;
            pt->pages_per_seq = plan->pages_per_seq;
        }
    }
    if (af_dtype_is_fp8_tensor(c->dtype)) {
        out->t[AF_T_Q].descale = t->descale_q;
        out->t[AF_T_K].descale = t->descale_k;
        out->t[AF_T_V].descale = t->descale_v;
        out->t[AF_T_DO].descale = t->descale_do;
        out->t[AF_T_O].descale = t->descale_o;   /* O is E4M3: store e4m3(O / descale) */
        out->t[AF_T_DQ].descale = t->descale_dq; /* so are the gradients (tensors.h) */
        out->t[AF_T_DK].descale = t->descale_dk;
        out->t[AF_T_DV].descale = t->descale_dv;
    }
    if (c->kv_dtype != AF_KV_SAME) { /* ABI 7: the fp8 KV cache's descales */
        out->t[AF_T_K].descale = t->descale_k;
        out->t[AF_T_V].descale = t->descale_v;
    }
    if (c->dtype == AF_DT_MXFP8) {
        out->t[AF_T_Q].mx_scale = mem->mx_scale[0];
        out->t[AF_T_K].mx_scale = mem->mx_scale[1];
        out->t[AF_T_V].mx_scale = mem->mx_scale[2];
    }
}

static af_run_status status_from_plugin(int rc) {
    switch (rc) {
        case AF_PLUGIN_OK:
            return AF_RUN_OK;
        case AF_PLUGIN_DECLINE:
            return AF_RUN_DECLINED;
        case AF_PLUGIN_CRASH:
            return AF_RUN_CRASH;
        case AF_PLUGIN_RESOURCE:
            return AF_RUN_RESOURCE;
        default:
            return AF_RUN_ERROR;
    }
}

/* ---- the af_backend over a plugin ------------------------------------------------ */

static int plugin_available(af_backend *be, char *why, size_t cap) {
    af_plugin_state *st = be->state;
    if (why && cap) why[0] = '\0';
    if (st->plugin_flags & AF_PLUGIN_WANTS_DEVICE) {
#ifdef ATTNFUZZ_HAVE_CUDA
        char dev[256];
        if (af_gpu_available(dev, sizeof dev, NULL, 0, NULL)) {
            snprintf(why, cap, "plugin '%s' wants GPU buffers: %s", st->path, dev);
            return -1;
        }
#else
        snprintf(why, cap, "plugin '%s' wants GPU buffers, but this attnfuzz was built without CUDA", st->path);
        return -1;
#endif
    }
    return 0;
}

/* Declines that belong to the loader, whatever the plugin says. */
static af_run_status loader_declines(const af_plugin_state *st, const af_case *c, char *why, size_t cap) {
    if (c->cp_size > 1) {
        snprintf(why, cap,
                 "plugin '%s': context parallelism (cp %d) is not part of the plugin ABI; "
                 "use a CP wrapper backend",
                 st->path, c->cp_size);
        return AF_RUN_DECLINED;
    }
#ifndef ATTNFUZZ_HAVE_CUDA
    if (st->plugin_flags & AF_PLUGIN_WANTS_DEVICE) {
        snprintf(why, cap, "plugin '%s' wants GPU buffers, but this attnfuzz was built without CUDA", st->path);
        return AF_RUN_DECLINED;
    }
#endif
    return AF_RUN_OK;
}

static af_run_status plugin_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    af_plugin_state *st = be->state;
    if (why && cap) why[0] = '\0';
    af_run_status ls = loader_declines(st, c, why, cap);
    if (ls != AF_RUN_OK) return ls;
    if (af_plugin_state_open(st, why, cap)) return AF_RUN_ERROR; /* first call: dlopen here */
    plugin_problem_buf pb;
    problem_from_case(c, &pb);
    if (features_from_case(c, NULL, &pb) != 0) {
        problem_buf_free(&pb);
        snprintf(why, cap, "plugin '%s': out of host memory for the feature inputs", st->path);
        return AF_RUN_RESOURCE;
    }
    int rc = st->supports(&pb.problem, why, cap);
    problem_buf_free(&pb);
    if (rc == AF_PLUGIN_OK) return AF_RUN_OK;
    if (why && cap && !why[0]) snprintf(why, cap, "plugin '%s' declined without a reason", st->path);
    return rc == AF_PLUGIN_DECLINE ? AF_RUN_DECLINED : status_from_plugin(rc);
}

static af_run_status call_plugin(af_plugin_state *st, const af_plugin_problem *p, const af_plugin_tensors *pt,
                                 char *why, size_t cap) {
    if (why && cap) why[0] = '\0';
    int rc = st->instance ? st->run_instance(st->instance, p, pt, why, cap) : st->run(p, pt, why, cap);
    af_run_status s = status_from_plugin(rc);
    if (s != AF_RUN_OK && why && cap && !why[0])
        snprintf(why, cap, "plugin '%s' returned status %d without a reason", st->path, rc);
    return s;
}

static af_run_status run_on_host(af_plugin_state *st, const af_case *c, af_tensors *t, const af_plugin_problem *p,
                                 char *why, size_t cap) {
    plugin_memory mem;
    memset(&mem, 0, sizeof mem);
    for (int i = 0; i < AF_BUF_COUNT; i++) mem.buffer[i] = t->buf[i];
    mem.token_start_q = t->plan.token_start_q;
    mem.token_start_kv = t->plan.token_start_kv;
    mem.page_table = t->plan.page_table;
    mem.mx_scale[0] = t->mx_scale_q;
    mem.mx_scale[1] = t->mx_scale_k;
    mem.mx_scale[2] = t->mx_scale_v;
    af_plugin_tensors pt;
    tensors_from_plan(c, t, &mem, &pt);
    return call_plugin(st, p, &pt, why, cap);
}

#ifdef ATTNFUZZ_HAVE_CUDA
/* Bytes of the mxfp8 scale arrays of Q, K, V (see tensors.h). */
static size_t mx_scale_bytes(const af_case *c, int which) {
    size_t B = (size_t)c->batch;
    if (which == 0) return B * c->heads_q * c->seqlen_q * ((c->head_dim_qk + 31) / 32);
    if (which == 1) return B * c->heads_kv * c->seqlen_kv * ((c->head_dim_qk + 31) / 32);
    return B * af_case_heads_v(c) * ((c->seqlen_kv + 31) / 32) * c->head_dim_v;
}

/* Copy a host array to a fresh device allocation; *dev stays NULL when host is NULL. */
static af_run_status upload_array(void **dev, const void *host, size_t bytes, char *why, size_t cap) {
    *dev = NULL;
    if (!host || bytes == 0) return AF_RUN_OK;
    af_run_status s = af_gpu_malloc(dev, bytes, why, cap);
    if (s == AF_RUN_OK) s = af_gpu_h2d(*dev, host, bytes, why, cap);
    return s;
}

/* The device copy of a host array, read back after the run and compared with the host
 * array it was made from (the judge sees only host memory): a change is reported in info
 * (judge/mutation.h). A failed read-back leaves it unchecked. */
static void compare_device_input(af_run_info *info, af_tensor_id tensor, const void *dev, const void *host,
                                 size_t bytes, size_t elem, const char *where) {
    if (!info || !dev || !host || bytes == 0) return;
    uint8_t *back = malloc(bytes);
    char why[256];
    if (back && af_gpu_d2h(back, dev, bytes, why, sizeof why) == AF_RUN_OK && memcmp(back, host, bytes) != 0) {
        size_t k = 0;
        while (back[k] == ((const uint8_t *)host)[k]) k++;
        af_run_info_input_write(info, tensor, (long long)(k / elem), where);
    }
    free(back);
}

static af_run_status run_on_device(af_plugin_state *st, const af_case *c, af_tensors *t, const af_plugin_problem *p,
                                   af_run_info *info, char *why, size_t cap) {
    af_gpu_tensors g;
    memset(&g, 0, sizeof g);
    void *dev_ts_q = NULL, *dev_ts_kv = NULL, *dev_pages = NULL, *dev_mx[3] = {NULL, NULL, NULL};
    af_run_status s = af_gpu_tensors_upload(&g, t, why, cap);
    size_t starts = sizeof(int64_t) * (size_t)(c->batch + 1);
    if (s == AF_RUN_OK && c->layout == AF_LAYOUT_THD)
        s = upload_array(&dev_ts_q, t->plan.token_start_q, starts, why, cap);
    if (s == AF_RUN_OK && c->layout == AF_LAYOUT_THD)
        s = upload_array(&dev_ts_kv, t->plan.token_start_kv, starts, why, cap);
    if (s == AF_RUN_OK && t->plan.page_size)
        s = upload_array(&dev_pages, t->plan.page_table, sizeof(int32_t) * (size_t)t->plan.n_pages, why, cap);
    const uint8_t *host_mx[3] = {t->mx_scale_q, t->mx_scale_k, t->mx_scale_v};
    for (int k = 0; k < 3 && s == AF_RUN_OK; k++)
        s = upload_array(&dev_mx[k], host_mx[k], mx_scale_bytes(c, k), why, cap);
    if (s == AF_RUN_OK) {
        plugin_memory mem;
        memset(&mem, 0, sizeof mem);
        for (int i = 0; i < AF_BUF_COUNT; i++) mem.buffer[i] = g.alloc[i] ? g.alloc[i] + AF_GUARD_BYTES : NULL;
        mem.token_start_q = dev_ts_q;
        mem.token_start_kv = dev_ts_kv;
        mem.page_table = dev_pages;
        for (int k = 0; k < 3; k++) mem.mx_scale[k] = dev_mx[k];
        af_plugin_tensors pt;
        tensors_from_plan(c, t, &mem, &pt);
        s = call_plugin(st, p, &pt, why, cap);
        if (s == AF_RUN_OK) s = af_gpu_sync("plugin run", why, cap);
        if (s == AF_RUN_OK) s = af_gpu_tensors_download(&g, t, why, cap);
        if (s == AF_RUN_OK) { /* the metadata the plugin got on the device (the buffers came back above) */
            compare_device_input(info, AF_T_SEQ_OFFSETS, dev_ts_q, t->plan.token_start_q, starts, sizeof(int64_t),
                                 "the device copy of token_start (queries)");
            compare_device_input(info, AF_T_SEQ_OFFSETS, dev_ts_kv, t->plan.token_start_kv, starts, sizeof(int64_t),
                                 "the device copy of token_start (keys)");
            compare_device_input(info, AF_T_PAGE_TABLE, dev_pages, t->plan.page_table,
                                 sizeof(int32_t) * (size_t)t->plan.n_pages, sizeof(int32_t),
                                 "the device copy of the page table");
            for (int k = 0; k < 3; k++)
                compare_device_input(info, AF_T_MX_SCALE, dev_mx[k], host_mx[k], mx_scale_bytes(c, k), 1,
                                     "the device copy of an mxfp8 scale array");
        }
    }
    if (s != AF_RUN_CRASH) { /* after a sticky error nothing more is asked of the device */
        af_gpu_free(dev_ts_q);
        af_gpu_free(dev_ts_kv);
        af_gpu_free(dev_pages);
        for (int k = 0; k < 3; k++) af_gpu_free(dev_mx[k]);
        af_gpu_tensors_free(&g);
    }
    return s;
}
#endif

/* n elements of elem bytes: given (what the plugin got) against fresh (built again from
 * the case); a difference is reported in info with its first element. */
static void compare_input(af_run_info *info, af_tensor_id tensor, const void *given, const void *fresh, size_t n,
                          size_t elem, const char *where) {
    if (!given || !fresh || n == 0 || memcmp(given, fresh, n * elem) == 0) return;
    const uint8_t *a = given, *b = fresh;
    size_t k = 0;
    while (a[k] == b[k]) k++;
    af_run_info_input_write(info, tensor, (long long)(k / elem), where);
}

/* The inputs only the adapter holds (the lengths and the feature arrays it built for
 * this call, const in plugin.h) against a fresh build from the case: a plugin that wrote
 * one is reported in info (judge/mutation.h). The buffers, page table and token starts
 * are af_tensors' own, which the judge compares. */
static void check_problem_inputs(const af_case *c, const af_tensors *t, const plugin_problem_buf *given,
                                 af_run_info *info) {
    plugin_problem_buf fresh;
    problem_from_case(c, &fresh);
    if (features_from_case(c, t, &fresh) != 0) { /* out of memory: not checked */
        problem_buf_free(&fresh);
        return;
    }
    size_t B = (size_t)c->batch, Hq = (size_t)c->heads_q;
    compare_input(info, AF_T_SEQLENS, given->seqlens_q, fresh.seqlens_q, B, sizeof(int32_t), "the plugin's seqlens_q");
    compare_input(info, AF_T_SEQLENS, given->seqlens_kv, fresh.seqlens_kv, B, sizeof(int32_t),
                  "the plugin's seqlens_kv");
    compare_input(info, AF_T_SINK, given->problem.sink, fresh.problem.sink, Hq, sizeof(float), "the plugin's sink");
    compare_input(info, AF_T_ALIBI, given->problem.alibi_slopes, fresh.problem.alibi_slopes,
                  (size_t)fresh.problem.alibi_b * Hq, sizeof(float), "the plugin's alibi_slopes");
    size_t bias = (size_t)fresh.problem.bias_b * (size_t)fresh.problem.bias_h * (size_t)fresh.problem.bias_q *
                  (size_t)c->seqlen_kv;
    compare_input(info, AF_T_BIAS, given->problem.bias, fresh.problem.bias, bias, sizeof(float), "the plugin's bias");
    compare_input(info, AF_T_DLSE, given->problem.dlse, fresh.problem.dlse, B * Hq * (size_t)c->seqlen_q, sizeof(float),
                  "the plugin's dlse");
    problem_buf_free(&fresh);
}

static af_run_status plugin_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                char *why, size_t cap) {
    af_plugin_state *st = be->state;
    double t0 = af_clock_mono();
    (void)engine;
    if (info) {
        memset(info, 0, sizeof *info);
        info->workspace_bytes = -1;
        info->nondeterministic = !(st->plugin_flags & AF_PLUGIN_DETERMINISTIC);
    }
    af_run_status s = loader_declines(st, c, why, cap);
    if (s != AF_RUN_OK) return s;
    if (af_plugin_state_open(st, why, cap)) return AF_RUN_ERROR; /* first call: dlopen here */
    plugin_problem_buf pb;
    problem_from_case(c, &pb);
    if (features_from_case(c, t, &pb) != 0) {
        problem_buf_free(&pb);
        snprintf(why, cap, "plugin '%s': out of host memory for the feature inputs", st->path);
        return AF_RUN_RESOURCE;
    }
    pb.problem.dsink = t->dsink;                                            /* host memory, poisoned before the run */
    pb.problem.row_max = t->row_max, pb.problem.row_sumexp = t->row_sumexp; /* the same (ABI 7) */
    pb.problem.max_logit = t->max_logit;
    pb.problem.dsink = t->dsink; /* host memory, poisoned before the run */
    int32_t keep_returned = 0;   /* ABI 7: dropout_rng = kernel's returned mask (host memory) */
    if (t->dropout_keep) pb.problem.dropout_keep = t->dropout_keep, pb.problem.dropout_keep_returned = &keep_returned;
    if (t->descale_head) { /* ABI 7: (3, B, Hkv) host floats, Q's then K's then V's */
        size_t slice = (size_t)c->batch * c->heads_kv;
        pb.problem.q_descale = t->descale_head;
        pb.problem.k_descale = t->descale_head + slice;
        pb.problem.v_descale = t->descale_head + 2 * slice;
    }
#ifdef ATTNFUZZ_HAVE_CUDA
    if (st->plugin_flags & AF_PLUGIN_WANTS_DEVICE)
        s = run_on_device(st, c, t, &pb.problem, info, why, cap);
    else
#endif
        s = run_on_host(st, c, t, &pb.problem, why, cap);
    if (s == AF_RUN_OK && info) check_problem_inputs(c, t, &pb, info);
    t->dropout_keep_returned = s == AF_RUN_OK && t->dropout_keep && keep_returned == 1;
    problem_buf_free(&pb);
    if (info) info->seconds = af_clock_mono() - t0;
    return s;
}

static void plugin_destroy(af_backend *be) {
    if (!be) return;
    af_plugin_state *st = be->state;
    /* The handle stays open: a plugin may have registered atexit handlers or threads
     * (CUDA runtimes do), and unloading under them crashes at exit. The instance goes. */
    if (st->instance && st->destroy_instance) st->destroy_instance(st->instance);
    free(st);
    free(be);
}

/* ---- the backend ------------------------------------------------------------------- */

/* A new backend over the same plugin with nothing of be's history: its own state, opened
 * (and its instance created) on its first call. */
static af_backend *plugin_fresh(af_backend *be, char *why, size_t cap) {
    const af_plugin_state *st = be->state;
    af_backend *nb = calloc(1, sizeof *nb);
    af_plugin_state *ns = calloc(1, sizeof *ns);
    if (!nb || !ns) {
        free(nb);
        free(ns);
        snprintf(why, cap, "plugin '%s': out of memory for a fresh instance", st->path);
        return NULL;
    }
    memcpy(ns->path, st->path, sizeof ns->path);
    memcpy(ns->name, st->name, sizeof ns->name);
    memcpy(ns->description, st->description, sizeof ns->description);
    ns->plugin_flags = st->plugin_flags;
    af_plugin_backend_init(nb, ns);
    return nb;
}

void af_plugin_backend_init(af_backend *be, af_plugin_state *st) {
    be->name = st->name;
    be->description = st->description;
    be->flags = AF_BACKEND_PLUGIN;
    if (st->plugin_flags & AF_PLUGIN_DETERMINISTIC) be->flags |= AF_BACKEND_DETERMINISTIC;
    if (st->plugin_flags & AF_PLUGIN_PLANTED) be->flags |= AF_BACKEND_PLANTED;
    if (st->plugin_flags & AF_PLUGIN_WANTS_DEVICE) be->flags |= AF_BACKEND_NEEDS_GPU;
    if (st->plugin_flags & AF_PLUGIN_CHECKS_METADATA) be->flags |= AF_BACKEND_CHECKS_METADATA;
    be->state = st;
    be->available = plugin_available;
    be->supports = plugin_supports;
    be->engines = NULL;
    be->run = plugin_run;
    be->destroy = plugin_destroy;
    be->fresh = plugin_fresh;
}
