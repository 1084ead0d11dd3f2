/* fuzz_repair.c — make a case legal and fit the limits (af_fuzz_repair, fuzz.h): shrink
 * the sizes to the work budget, then repair combinations; the decoder relies on repair
 * never rejecting and never touching sizes after the budget step. */
#include "fuzz/fuzz.h"

#include <math.h>
#include <string.h>

#include "judge/problem.h"
#include "model/case_fields.h"
#include "model/case_measure.h"
#include "model/gen_core.h"

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static bool is_fp8(af_dtype d) { return af_dtype_is_fp8(d); }

static bool finite_in(double x, double lo, double hi) { return isfinite(x) && x >= lo && x <= hi; }

static void repair_data(af_case *c) {
    af_data_term in[AF_MAX_DATA_TERMS];
    int n_in = c->n_data < 0 ? 0 : c->n_data > AF_MAX_DATA_TERMS ? AF_MAX_DATA_TERMS : c->n_data;
    memcpy(in, c->data, sizeof in);
    af_data_term out[AF_MAX_DATA_TERMS];
    int n = 0;
    /* base first */
    if (n_in > 0 && (in[0].kind == AF_DATA_NORMAL || in[0].kind == AF_DATA_UNIFORM)) {
        out[0] = in[0];
        out[0].p1 = 0;
        if (!finite_in(out[0].p0, 1e-30, 1e4)) out[0].p0 = 1.0;
    } else {
        out[0] = (af_data_term){AF_DATA_NORMAL, 1.0, 0};
    }
    n = 1;
    for (int i = 0; i < n_in && n < AF_MAX_DATA_TERMS; i++) {
        af_data_term t = in[i];
        if ((unsigned)t.kind >= AF_DATA_KIND_COUNT || t.kind == AF_DATA_NORMAL || t.kind == AF_DATA_UNIFORM) continue;
        bool dup = false;
        for (int j = 0; j < n; j++) dup |= out[j].kind == t.kind;
        if (dup) continue;
        switch (t.kind) {
            case AF_DATA_OUTLIER_CHANNELS:
                t.p0 = isfinite(t.p0) ? floor(t.p0) : 1;
                if (t.p0 < 1) t.p0 = 1;
                if (t.p0 > c->head_dim_qk) t.p0 = c->head_dim_qk;
                if (!isfinite(t.p1) || t.p1 == 0 || fabs(t.p1) > 1e4) t.p1 = 20;
                break;
            case AF_DATA_SINK:
                if (!isfinite(t.p0) || t.p0 == 0 || fabs(t.p0) > 1e4) t.p0 = 30;
                t.p1 = 0;
                break;
            case AF_DATA_LOW_LSE:
                if (!(isfinite(t.p0) && t.p0 > 0 && t.p0 <= 1)) t.p0 = 0.25;
                if (!(isfinite(t.p1) && t.p1 > 0 && t.p1 <= 1e6)) t.p1 = 20;
                break;
            case AF_DATA_BLOCK_RANGE:
                t.p0 = isfinite(t.p0) ? floor(t.p0) : 16;
                if (t.p0 < 1) t.p0 = 1;
                if (t.p0 > 40) t.p0 = 40;
                t.p1 = 0;
                break;
            case AF_DATA_ZEROS:
                if (!(isfinite(t.p0) && t.p0 > 0 && t.p0 < 1)) t.p0 = 0.5;
                t.p1 = 0;
                break;
            default:
                continue;
        }
        out[n++] = t;
    }
    memset(c->data, 0, sizeof c->data);
    memcpy(c->data, out, (size_t)n * sizeof out[0]);
    c->n_data = n;
}

/* A bound on af_case_elements of the case after repair_combinations, which clamps the
 * gaps to the sizes and may set every per-sequence length to the full length (the
 * lengths may hold anything before): gaps clamped, lengths taken full. */
static double elements_after_clamps(const af_case *c) {
    af_case t = *c;
    int smax = t.seqlen_q > t.seqlen_kv ? t.seqlen_q : t.seqlen_kv;
    int dmax = t.head_dim_qk > t.head_dim_v ? t.head_dim_qk : t.head_dim_v;
    for (int b = 0; b < t.batch; b++) {
        t.seqlens_q[b] = t.seqlen_q;
        t.seqlens_kv[b] = t.seqlen_kv;
    }
    t.thd_gap = clampi(t.thd_gap, 0, smax > 8 ? smax : 8);
    t.stride_gap = clampi(t.stride_gap, 0, dmax > 8 ? dmax : 8);
    t.gap_h = clampi(t.gap_h, 0, dmax > 8 ? dmax : 8);
    t.gap_s = clampi(t.gap_s, 0, dmax > 8 ? dmax : 8);
    t.gap_b = clampi(t.gap_b, 0, 4096);
    return af_case_elements(&t);
}

double af_fuzz_budget_work(const af_case *c) {
    int dqk = c->head_dim_qk > 8 ? c->head_dim_qk : 8, dv = c->head_dim_v > 8 ? c->head_dim_v : 8;
    return af_attention_work(c->backward ? 3.0 : 1.0, c->batch, c->heads_q, c->seqlen_q, c->seqlen_kv, dqk + dv);
}

/* Shrink a case until it fits the budget (af_fuzz_budget_work, and elements with a wide budget: a
 * narrow one keeps what it did, af_case_validate's bound): batch, then heads, then head dims above
 * 64, then the longer sequence, then head dims down to 8. */
static void fit_budget(af_case *c, const af_fuzz_limits *l, double max_work) {
    for (int guard = 0;
         guard < 200 && (af_fuzz_budget_work(c) > max_work || (l->wide && elements_after_clamps(c) > l->max_elements));
         guard++) {
        if (c->batch > 1) {
            c->batch /= 2;
        } else if (c->heads_q > 1) {
            int ratio = c->heads_q / c->heads_kv;
            if (c->heads_kv > 1)
                c->heads_kv /= 2;
            else
                ratio = ratio / 2 > 0 ? ratio / 2 : 1;
            c->heads_q = c->heads_kv * ratio;
        } else if (c->head_dim_qk > 64 || c->head_dim_v > 64) {
            if (c->head_dim_qk >= c->head_dim_v)
                c->head_dim_qk = (c->head_dim_qk + 1) / 2;
            else
                c->head_dim_v = (c->head_dim_v + 1) / 2;
        } else if (c->seqlen_q > 1 || c->seqlen_kv > 1) {
            if (c->seqlen_q >= c->seqlen_kv)
                c->seqlen_q = (c->seqlen_q + 1) / 2;
            else
                c->seqlen_kv = (c->seqlen_kv + 1) / 2;
        } else if (c->head_dim_qk > 8 || c->head_dim_v > 8) {
            if (c->head_dim_qk >= c->head_dim_v)
                c->head_dim_qk = (c->head_dim_qk + 1) / 2;
            else
                c->head_dim_v = (c->head_dim_v + 1) / 2;
        } else {
            break;
        }
    }
}

/* Documents: at most AF_MAX_DOCUMENTS, each at least 1 key, the ones that fit in
 * seqlen_kv (the last cut to fit); none when none fits. */
static void repair_documents(af_case *c) {
    int n = clampi(c->n_documents, 0, AF_MAX_DOCUMENTS), room = c->seqlen_kv, kept = 0;
    for (int k = 0; k < n && room > 0; k++) {
        int len = clampi(c->documents[k], 1, room);
        c->documents[kept++] = len;
        room -= len;
    }
    for (int k = kept; k < AF_MAX_DOCUMENTS; k++) c->documents[k] = 0;
    c->n_documents = kept;
}

static int lengths_visible(const af_case *c) {
    af_error err;
    return af_case_validate(c, &err) == 0;
}

/* Largest |input| the data terms can generate (gen_core.h): the base (normal: 2 sqrt(3)
 * sigma, Irwin-Hall of four fields; uniform: a; low_lse: shift / scale) times every
 * multiplier (outlier channels, sink, block_range's 2^(E - E/2)). */
static double data_bound(const af_case *c) {
    double base = 0, mult = 1;
    for (int i = 0; i < c->n_data; i++) {
        const af_data_term *t = &c->data[i];
        switch (t->kind) {
            case AF_DATA_NORMAL:
                base = fmax(base, 2 * sqrt(3.0) * fabs(t->p0));
                break;
            case AF_DATA_UNIFORM:
                base = fmax(base, fabs(t->p0));
                break;
            case AF_DATA_LOW_LSE: { /* Q's channel 0 and K's (model/gen_core.h) */
                double scale = fabs((double)af_case_scale(c)), k0 = af_gen_low_lse_k0(fabs(t->p1), scale);
                base = fmax(base, fmax(fabs(t->p1) / (scale * k0), k0));
                break;
            }
            case AF_DATA_OUTLIER_CHANNELS:
                mult *= fmax(1, fabs(t->p1));
                break;
            case AF_DATA_SINK:
                mult *= fmax(1, fabs(t->p0));
                break;
            case AF_DATA_BLOCK_RANGE:
                mult *= ldexp(1, (int)t->p0 - (int)t->p0 / 2);
                break;
            default:
                break;
        }
    }
    return base * mult;
}

/* fp16 inputs that overflow become inf, and the oracle cannot judge such a case (it
 * would be counted in stats.json's "errors"): drop multiplier terms from the last one
 * until the largest generated value fits fp16 (65504). bf16 and fp32 cannot overflow
 * with the terms' ranges; fp8 and mxfp8 inputs are scaled to their range. */
static void repair_data_range(af_case *c) {
    while (c->dtype == AF_DT_FP16 && c->n_data > 1 && data_bound(c) > 65504.0) {
        int last = -1;
        for (int i = 1; i < c->n_data; i++) {
            af_data_kind k = c->data[i].kind;
            if (k == AF_DATA_OUTLIER_CHANNELS || k == AF_DATA_SINK || k == AF_DATA_BLOCK_RANGE || k == AF_DATA_LOW_LSE)
                last = i;
        }
        if (last < 0) break;
        for (int i = last; i + 1 < c->n_data; i++) c->data[i] = c->data[i + 1];
        c->n_data--;
    }
}

/* Packing and the per-tensor layouts (model/case.c validate): qkv(_h) without equal shapes
 * -> kv(_h) -> separate; per head not in bhsd (-> blocked); layout_kv / layout_do back to
 * same where they are the layout itself or not allowed. */
static void repair_packing(af_case *c) {
    if ((unsigned)c->packing > AF_PACK_QKV_H) c->packing = AF_PACK_SEPARATE;
    if ((unsigned)c->layout_kv > AF_SIDE_HSBD) c->layout_kv = AF_SIDE_SAME;
    if ((unsigned)c->layout_do > AF_SIDE_HSBD) c->layout_do = AF_SIDE_SAME;
    if (c->packing != AF_PACK_SEPARATE && !af_layout_is_classic(c->layout)) c->layout = AF_LAYOUT_BSHD;
    if (c->packing != AF_PACK_SEPARATE && !af_layout_is_classic(af_case_layout_kv(c))) c->layout_kv = AF_SIDE_SAME;
    if (af_packing_is_qkv(c->packing)) {
        bool ok = c->heads_q == c->heads_kv && c->seqlen_q == c->seqlen_kv && c->head_dim_qk == c->head_dim_v;
        if (ok && c->has_seqlens)
            for (int b = 0; b < c->batch; b++) ok &= c->seqlens_q[b] == c->seqlens_kv[b];
        if (!ok) c->packing = c->packing == AF_PACK_QKV_H ? AF_PACK_KV_H : AF_PACK_KV;
    }
    if (af_packing_is_kv(c->packing) && c->head_dim_qk != c->head_dim_v) c->packing = AF_PACK_SEPARATE;
    if (af_packing_per_head(c->packing) && c->layout == AF_LAYOUT_BHSD)
        c->packing = c->packing == AF_PACK_QKV_H ? AF_PACK_QKV : AF_PACK_KV;
    if (c->layout_kv != AF_SIDE_SAME && (af_case_layout_kv(c) == c->layout || af_packing_is_qkv(c->packing) ||
                                         (af_packing_per_head(c->packing) && af_case_layout_kv(c) == AF_LAYOUT_BHSD)))
        c->layout_kv = AF_SIDE_SAME;
    if (c->layout_do != AF_SIDE_SAME &&
        (!c->backward || c->layout == AF_LAYOUT_THD || af_case_layout_do(c) == c->layout))
        c->layout_do = AF_SIDE_SAME;
}

/* Repair combinations without touching the sizes (the decoder relies on that). */
static void repair_combinations(af_case *c, const af_fuzz_limits *l) {
    if (!af_fuzz_dtype_allowed(l, c->dtype)) c->dtype = af_fuzz_first_dtype(l);
    if (c->backward && !af_fuzz_backward_allowed(l, c->dtype)) c->backward = false;
    if (!l->ragged) {
        c->has_seqlens = false;
        if (c->layout == AF_LAYOUT_THD) c->layout = AF_LAYOUT_BSHD;
    }
    if ((unsigned)c->layout > AF_LAYOUT_HSBD) c->layout = AF_LAYOUT_BSHD;
    if ((unsigned)c->packing > AF_PACK_QKV_H) c->packing = AF_PACK_SEPARATE;
    if ((unsigned)c->mask > AF_MASK_CAUSAL) c->mask = AF_MASK_NONE;
    if ((unsigned)c->align > AF_ALIGN_BOTTOM_RIGHT) c->align = AF_ALIGN_TOP_LEFT;
    if (c->layout == AF_LAYOUT_THD && !c->has_seqlens) {
        c->has_seqlens = true;
        for (int b = 0; b < c->batch; b++) {
            c->seqlens_q[b] = c->seqlen_q;
            c->seqlens_kv[b] = c->seqlen_kv;
        }
    }
    if (c->has_seqlens) {
        for (int b = 0; b < c->batch; b++) {
            c->seqlens_q[b] = clampi(c->seqlens_q[b], 0, c->seqlen_q);
            c->seqlens_kv[b] = clampi(c->seqlens_kv[b], 0, c->seqlen_kv);
        }
    }
    for (int b = c->has_seqlens ? c->batch : 0; b < AF_MAX_BATCH; b++) c->seqlens_q[b] = c->seqlens_kv[b] = 0;
    if (c->layout != AF_LAYOUT_THD) c->thd_gap = 0;
    /* gaps cost memory, not work: keep them within the sizes they pad (a gap wider
     * than the sequence or the head vector exercises nothing more), so that memory
     * stays within a small factor of the work bound */
    {
        int smax = c->seqlen_q > c->seqlen_kv ? c->seqlen_q : c->seqlen_kv;
        int dmax = c->head_dim_qk > c->head_dim_v ? c->head_dim_qk : c->head_dim_v;
        c->thd_gap = clampi(c->thd_gap, 0, smax > 8 ? smax : 8);
        c->stride_gap = clampi(c->stride_gap, 0, dmax > 8 ? dmax : 8);
        c->gap_h = clampi(c->gap_h, 0, dmax > 8 ? dmax : 8); /* per (token, head) at most, as stride_gap */
        c->gap_s = clampi(c->gap_s, 0, dmax > 8 ? dmax : 8);
        c->gap_b = clampi(c->gap_b, 0, 4096); /* per batch (or page): cheap */
    }
    if (is_fp8(c->dtype)) {
        c->packing = AF_PACK_SEPARATE;
        c->stride_gap = c->gap_h = c->gap_s = c->gap_b = 0;
    }
    repair_packing(c);
    if (c->page_size) {
        /* thd + paged is the serving layout (ragged Q, paged K/V): kept */
        if (!l->paged || c->packing != AF_PACK_SEPARATE || c->backward || c->page_size < 0) {
            c->page_size = 0;
        } else {
            _Static_assert(AF_FUZZ_MAX_BATCH * 1024 <= AF_MAX_PAGES, "1024 pages per sequence fit");
            /* any size >= 1 (the format's sizes are powers of two; the trailing section's
             * exact size need not be); at most 1024 pages per sequence, so that 64 sequences
             * fit the page table (AF_MAX_PAGES) */
            int p = c->page_size < AF_FUZZ_NARROW_MAX_SEQLEN ? c->page_size : AF_FUZZ_NARROW_MAX_SEQLEN;
            while ((c->seqlen_kv + p - 1) / p > 1024 && p < AF_FUZZ_NARROW_MAX_SEQLEN)
                p = 2 * p < AF_FUZZ_NARROW_MAX_SEQLEN ? 2 * p : AF_FUZZ_NARROW_MAX_SEQLEN;
            /* pages cost memory, not work: a page beyond the next power of two of the KV
             * length (or 16) only adds unused tail slots, batch x heads_kv x d each (a
             * 65536-token page on 64 sequences took 4 GB under the probes) */
            int cap = 16;
            while (cap < c->seqlen_kv && cap < AF_FUZZ_NARROW_MAX_SEQLEN) cap *= 2;
            c->page_size = p < cap ? p : cap;
        }
    }
    if (!c->page_size) c->page_tail_nan = false;               /* the tail of a page needs pages */
    if (!c->page_size) c->page_hnd = c->page_kv_joint = false; /* so do the page forms */
    if (c->page_size) c->layout_kv = AF_SIDE_SAME;             /* pages have their own layout */
    if (c->layout == AF_LAYOUT_THD && af_case_layout_kv(c) == AF_LAYOUT_THD && !c->page_size)
        c->gap_b = 0; /* no batch stride to pad */
    if (c->cp_size > l->max_cp) c->cp_size = l->max_cp;
    if (c->cp_size > 64) c->cp_size = 64;
    while (c->cp_size > 1 && (c->seqlen_q % (2 * c->cp_size) || c->seqlen_kv % (2 * c->cp_size))) c->cp_size--;
    if (c->cp_size <= 1) {
        c->cp_size = 1;
        c->cp_comm = AF_CP_NONE;
    } else if (c->cp_comm == AF_CP_NONE || (unsigned)c->cp_comm > AF_CP_A2A_P2P) {
        c->cp_comm = AF_CP_P2P;
    }
    c->window_left = clampi(c->window_left, -1, AF_FUZZ_NARROW_MAX_SEQLEN);
    c->window_right = clampi(c->window_right, -1, AF_FUZZ_NARROW_MAX_SEQLEN);
    c->attention_chunk = clampi(c->attention_chunk, 0, AF_MAX_SEQLEN);
    c->global_keys = clampi(c->global_keys, 0, c->seqlen_kv);
    repair_documents(c);
    if (c->has_scale &&
        !(isfinite(c->scale) && c->scale != 0 && fabsf(c->scale) <= 1e6f && fabsf(c->scale) >= 1e-12f)) {
        c->has_scale = false;
        c->scale = 0;
    }
    if (!c->has_scale) c->scale = 0;
    repair_data(c);
    c->backend[AF_NAME_MAX - 1] = 0;
    c->engine[AF_NAME_MAX - 1] = 0;
    /* nothing visible anywhere: open the window, then the mask, then the lengths */
    if (!lengths_visible(c)) {
        c->window_left = c->window_right = -1;
        c->attention_chunk = 0;
        if (!lengths_visible(c) && c->has_seqlens) {
            c->seqlens_q[0] = c->seqlen_q;
            c->seqlens_kv[0] = c->seqlen_kv;
            repair_packing(c);
        }
    }
}

/* A drop mask's keep probability: |p|, 1 / |p| above 1; 0 (the mask off) when it is not a
 * positive finite number. */
static double keep_probability(double p) {
    p = fabs(p);
    if (!(isfinite(p) && p > 0.0)) return 0.0;
    return p > 1.0 ? 1.0 / p : p;
}

static void block_mask_off(af_case *c) {
    c->block_mask_q = c->block_mask_k = 0;
    c->block_mask_p = 0.0;
}

/* block_mask and custom_mask (fuzz_format.h's mask-drops item): block sizes in
 * [1, AF_MAX_SEQLEN], a keep probability in (0, 1] (custom_mask's at least
 * AF_CUSTOM_MASK_MIN_P); a mask that leaves no row a key goes (the element mask first). */
static void repair_drops(af_case *c) {
    if (c->block_mask_q > 0 || c->block_mask_k > 0) {
        c->block_mask_q = clampi(c->block_mask_q, 1, AF_MAX_SEQLEN);
        c->block_mask_k = clampi(c->block_mask_k, 1, AF_MAX_SEQLEN);
        c->block_mask_p = keep_probability(c->block_mask_p);
    }
    if (c->block_mask_q <= 0 || c->block_mask_k <= 0 || c->block_mask_p == 0.0) block_mask_off(c);
    c->custom_mask_p = keep_probability(c->custom_mask_p);
    if (c->custom_mask_p < AF_CUSTOM_MASK_MIN_P) c->custom_mask_p = 0.0; /* off below the smallest P */
    if (c->custom_mask_p != 0.0 && !lengths_visible(c)) c->custom_mask_p = 0.0;
    if (c->block_mask_q > 0 && !lengths_visible(c)) block_mask_off(c);
}

/* Features only where they are defined (fp16/bf16, no cp; sinks with fp8_e4m3 / fp8_e5m2
 * and with cp, bias with cp) and allowed; dLSE only with a
 * backward; a softcap outside the parser's range goes. */
static void repair_features(af_case *c, const af_fuzz_limits *l) {
    bool allowed = l->features && (c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16) && c->cp_size == 1;
    if (!allowed && l->features) { /* sinks also with fp8 tensors, sinks and bias also with cp */
        bool wide = c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16;
        if ((unsigned)c->softmax > AF_SOFTMAX_LEARNABLE) c->softmax = AF_SOFTMAX_VANILLA;
        if ((unsigned)c->bias >= AF_BIAS_COUNT || !wide) c->bias = AF_BIAS_NONE;
        af_softmax_kind keep_softmax = af_case_feature_dtype_ok(c, AF_CF_SOFTMAX) ? c->softmax : AF_SOFTMAX_VANILLA;
        af_bias_shape keep_bias = c->cp_size > 1 ? c->bias : AF_BIAS_NONE;
        for (int f = 0; f < AF_CF_COUNT; f++)
            if (af_case_field_row((af_case_field)f)->feature_text) af_case_field_reset(c, (af_case_field)f);
        c->softmax = keep_softmax;
        c->bias = keep_bias;
        c->outputs = AF_OUTPUTS_LSE;
        c->alibi_slopes = AF_SLOPES_STANDARD;
        return;
    }
    if (!allowed) {
        for (int f = 0; f < AF_CF_COUNT; f++) /* every score feature off (model/case_fields.h) */
            if (af_case_field_row((af_case_field)f)->feature_text) af_case_field_reset(c, (af_case_field)f);
        c->outputs = AF_OUTPUTS_LSE;          /* not a score feature, defined where they are */
        c->alibi_slopes = AF_SLOPES_STANDARD; /* slopes other than standard need ALiBi abs / signed */
        return;
    }
    if ((unsigned)c->outputs > AF_OUTPUTS_MAX_LOGIT) c->outputs = AF_OUTPUTS_LSE;
    if (!(c->dropout_p >= 0.0 && c->dropout_p < 1.0)) c->dropout_p = 0.0; /* NaN too */
    if (c->dropout_p == 0.0) c->dropout_seed = c->dropout_offset = 0;
    if ((unsigned)c->dropout_rng > AF_DROPOUT_RNG_KERNEL || c->dropout_p == 0.0)
        c->dropout_rng = AF_DROPOUT_RNG_ATTNFUZZ;                     /* the kernel's stream needs dropout */
    if (!(c->softcap >= 1e-3 && c->softcap <= 1e4)) c->softcap = 0.0; /* NaN too */
    if ((unsigned)c->score_mod > AF_SCORE_MOD_TRIG2 || c->softcap != 0.0)
        c->score_mod = AF_SCORE_MOD_NONE; /* one score modifier: softcap keeps its place */
    if (c->score_mod != AF_SCORE_MOD_NONE) c->outputs = AF_OUTPUTS_LSE; /* validate: no statistics with it */
    if ((unsigned)c->softmax > AF_SOFTMAX_LEARNABLE) c->softmax = AF_SOFTMAX_VANILLA;
    if ((unsigned)c->bias >= AF_BIAS_COUNT) c->bias = AF_BIAS_NONE;
    if ((unsigned)c->alibi > AF_ALIBI_SIGNED) c->alibi = AF_ALIBI_NO;
    if ((unsigned)c->alibi_slopes > AF_SLOPES_RANDOM_BATCH || (c->alibi != AF_ALIBI_ABS && c->alibi != AF_ALIBI_SIGNED))
        c->alibi_slopes = AF_SLOPES_STANDARD; /* validate: other slopes need abs or signed */
    if (!c->backward) c->dlse = false;
    repair_drops(c);
}

/* heads_v: the largest divisor of heads_q within it (validate's rule), none with packed K/V
 * (one buffer, one head count) or when it equals heads_kv. */
static void repair_heads_v(af_case *c) {
    if (c->heads_v <= 0) {
        c->heads_v = 0;
        return;
    }
    int a = c->heads_q, b = clampi(c->heads_v, 1, AF_MAX_HEADS);
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    c->heads_v = a == c->heads_kv || c->packing != AF_PACK_SEPARATE ? 0 : a;
}

/* Everything after the sizes, in order: the combinations the sizes allow, V's heads, the
 * data range (the dtype is final), the features. Running it again after a shrink keeps
 * the case valid. */
static void repair_settings(af_case *c, const af_fuzz_limits *l) {
    repair_combinations(c, l);
    repair_heads_v(c);
    repair_data_range(c);
    repair_features(c, l);
}

int af_fuzz_repair(af_case *c, const af_fuzz_limits *l) {
    c->batch = clampi(c->batch, 1, AF_FUZZ_MAX_BATCH);
    c->heads_kv = clampi(c->heads_kv, 1, AF_MAX_HEADS);
    c->heads_q = clampi(c->heads_q, 1, AF_MAX_HEADS);
    if (c->heads_q % c->heads_kv)
        c->heads_q = c->heads_kv * clampi(c->heads_q / c->heads_kv, 1, AF_MAX_HEADS / c->heads_kv);
    /* lengths past 65536 only with a wide budget, and never padded or thd (the fine
     * section's per-sequence lengths stop there) */
    int max_seqlen = af_fuzz_limits_wide(l) && !c->has_seqlens && c->layout != AF_LAYOUT_THD
                         ? AF_MAX_SEQLEN
                         : AF_FUZZ_NARROW_MAX_SEQLEN;
    c->seqlen_q = clampi(c->seqlen_q, 1, max_seqlen);
    c->seqlen_kv = clampi(c->seqlen_kv, 1, max_seqlen);
    c->head_dim_qk = clampi(c->head_dim_qk, 1, AF_MAX_HEAD_DIM);
    c->head_dim_v = clampi(c->head_dim_v, 1, AF_MAX_HEAD_DIM);
    if (c->backward && !af_fuzz_backward_allowed(l, c->dtype)) c->backward = false;
    fit_budget(c, l, l->max_work);
    repair_settings(c, l);
    /* what the host judges gets the host's budget (the features are final now) */
    if (l->wide && l->host_work < l->max_work && af_fuzz_budget_work(c) > l->host_work &&
        !af_problem_device_judged(c)) {
        fit_budget(c, l, l->host_work);
        repair_settings(c, l);
    }
    if (!af_dtype_is_fp8_tensor(c->dtype) || (unsigned)c->out_dtype > AF_OUT_BF16) c->out_dtype = AF_OUT_SAME;
    if (c->out_dtype != AF_OUT_SAME) c->fp8_headroom[4] = 0; /* O has no output scale */
    if ((c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16) || c->backward || c->packing == AF_PACK_QKV ||
        (unsigned)c->kv_dtype > AF_KV_FP8_E5M2)
        c->kv_dtype = AF_KV_SAME; /* an fp8 KV cache: fp16 / bf16 forward, K and V apart from Q */
    if (!af_dtype_is_fp8_tensor(c->dtype) || c->backward || af_case_heads_v(c) != c->heads_kv)
        c->descale_head = false; /* FlashAttention 3's per-(batch, kv head) descales: fp8 forward */
    /* per-tensor fp8 scales only, 0..max binades */
    for (int k = 0; k < AF_FP8_SCALED; k++)
        c->fp8_headroom[k] =
            af_dtype_is_fp8_tensor(c->dtype) ? (int)((unsigned)c->fp8_headroom[k] % (AF_FP8_HEADROOM_MAX + 1)) : 0;
    af_error err;
    if (af_case_validate(c, &err) == 0) return 0;
    af_case_defaults(c);
    return -1;
}
