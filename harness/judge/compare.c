/* compare.c — buffer integrity checks and the numeric criterion (per tensor; fp16/bf16
 * per row, element and bias through criterion.c). */
#include "judge/compare.h"
#include "judge/problem.h"
#include "judge/criterion/criterion_gpu.h"
#include "judge/criterion/row_terms.h"
#include "judge/tolerance.h"
#include "model/features.h"
#include "util/clock.h"
#include "util/parfor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef ATTNFUZZ_HAVE_CUDA
#include "kernels/af_gpu.h"
#include "kernels/compare_gpu.h"
#endif

bool af_row_fully_masked(const af_case *c, int b, int i) {
    af_mask_rule r = af_mask_rule_of_case(c);
    af_mask_keys keys;
    return af_mask_visible_keys(&r, b, af_case_len_q(c, b), af_case_len_kv(c, b), i, &keys) == 0;
}

double af_masked_row_lse(const af_case *c, int h) {
    double a = af_feature_sink(c, h); /* -inf without sinks */
    if (!(a > -INFINITY)) return -INFINITY;
    return c->lse_base2 ? a * 1.44269504088896340736 : a;
}

bool af_masked_row_lse_ok(const af_case *c, int h, double x) {
    double want = af_masked_row_lse(c, h);
    if (isinf(want)) return isinf(x) && x < 0;
    return fabs(x - want) <= 0x1p-21 * (1.0 + fabs(want)); /* false for NaN and +-inf */
}

static bool is_poison(af_storage st, const void *buf, int64_t off) {
    const uint8_t *p = buf;
    switch (st) {
        case AF_ST_F16:
        case AF_ST_BF16: {
            uint16_t v;
            memcpy(&v, p + off * 2, 2);
            return v == (st == AF_ST_F16 ? AF_POISON_F16 : AF_POISON_BF16);
        }
        case AF_ST_E4M3:
            return p[off] == AF_POISON_E4M3;
        case AF_ST_E5M2:
            return p[off] == AF_POISON_E5M2;
        case AF_ST_F32: {
            uint32_t v;
            memcpy(&v, p + off * 4, 4);
            return v == AF_POISON_F32;
        }
    }
    return false;
}

static void finding(af_verdict *v, af_verdict_kind kind, af_tensor_id t, int b, int h, int r, int col,
                    const char *detail) {
    af_finding f = af_finding_at(kind, t, b, h, r, col, detail);
    af_verdict_add(v, &f);
}

static af_tensor_id main_tensor(af_buffer_id b) {
    static const af_tensor_id m[AF_BUF_COUNT] = {AF_T_Q,  AF_T_K,  AF_T_V,  AF_T_O, AF_T_LSE,
                                                 AF_T_DO, AF_T_DQ, AF_T_DK, AF_T_DV};
    return m[b];
}

/* The oracle's value of output element (b, h, s, d) of tensor id, or NAN without one. */
/* Dense index of (b, h, s, d) in af_outputs order (B, H, S, D) for tensor id. */
static size_t dense_index(const af_case *c, af_tensor_id id, int b, int h, int s, int d) {
    bool kv = id == AF_T_DK || id == AF_T_DV;
    int H = af_tensor_heads(c, id), S = kv ? c->seqlen_kv : c->seqlen_q;
    int D = id == AF_T_LSE ? 1 : (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
    return (((size_t)b * H + h) * S + s) * D + d;
}

static const double *output_array(const af_outputs *o, af_tensor_id id) {
    return id == AF_T_O ? o->o : id == AF_T_LSE ? o->lse : id == AF_T_DQ ? o->dq : id == AF_T_DK ? o->dk : o->dv;
}

static double oracle_value(const af_case *c, const af_outputs *o, af_tensor_id id, int b, int h, int s, int d) {
    if (!o) return NAN;
    const double *a = output_array(o, id);
    return a ? a[dense_index(c, id, b, h, s, d)] : NAN;
}

bool af_overflow_within(af_storage st, double exact, double reach, double x) {
    if (!isinf(x) || !isfinite(exact) || !(reach >= 0)) return false;
    double edge = exact + (x > 0 ? reach : -reach); /* the value of the allowance nearest x */
    uint8_t tmp[4];
    af_storage_store(st, tmp, 0, (float)edge);
    double r = af_storage_load(st, tmp, 0);
    return isinf(r) && (r > 0) == (x > 0);
}

double af_element_reach(const af_case *c, af_tensor_id id, const af_criterion_terms *terms, const af_outputs *ref,
                        size_t e, double exact, double extra) {
    if (id == AF_T_LSE || !af_criterion_terms_have(terms, id) || !terms->mass[id]) return 0.0;
    if (af_criterion_terms_gpu_host_budgets(terms) != 0) return 0.0; /* left on the device, unreadable */
    const double *r = ref ? output_array(ref, id) : NULL;
    double er = r && isfinite(r[e]) ? fabs(r[e] - exact) : 0.0;
    return af_element_allowed(exact, terms->kappa[id][e] + extra, terms->mass[id][e], af_output_unit(c, id), r != NULL,
                              er);
}

/* The kernel's stored O's and LSE's shares of a gradient's element budgets (the dterm of
 * af_criterion_row_summaries), built when the first infinity of the run is met:
 * af_criterion_extra_terms needs the kernel's dense O and LSE, read from the run here. */
typedef struct {
    bool read, have;
    af_outputs k;              /* the run's O and LSE, dense */
    bool tried[AF_T_COUNT];    /* dterm[id] asked for */
    double *dterm[AF_T_COUNT]; /* dense like tensor id, or NULL */
} overflow_extra;

static double extra_at(overflow_extra *ox, const af_case *c, const af_tensors *t, const af_criterion_terms *terms,
                       af_tensor_id id, size_t e) {
    if ((id != AF_T_DQ && id != AF_T_DK && id != AF_T_DV) || !af_criterion_terms_have(terms, id)) return 0.0;
    if (!ox->read) {
        ox->read = true;
        ox->have = af_outputs_alloc(&ox->k, c) == 0;
        if (ox->have) af_outputs_read_only(t, c, &ox->k, (1u << AF_T_O) | (1u << AF_T_LSE));
    }
    if (!ox->have) return 0.0;
    if (!ox->tried[id]) {
        ox->tried[id] = true;
        ox->dterm[id] = af_criterion_extra_terms(c, id, terms, ox->k.o, ox->k.lse);
    }
    return ox->dterm[id] ? ox->dterm[id][e] : 0.0;
}

static void overflow_extra_free(overflow_extra *ox) {
    for (int i = 0; i < AF_T_COUNT; i++) free(ox->dterm[i]);
    if (ox->have) af_outputs_free(&ox->k);
}

/* Rows and keys whose gradients an ABI kernel may legitimately overflow (criterion.h:
 * the stored LSE's growth), from the LSE the kernel wrote; *rows and *keys NULL when
 * there are none (or without budgets). */
static void unresolved_of_run(const af_case *c, const af_tensors *t, const af_criterion_terms *terms,
                              unsigned char **rows, unsigned char **keys) {
    *rows = *keys = NULL;
    if (!c->backward || !terms || !terms->ready || !terms->log_f) return;
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    double *lse = malloc((nq + 1) * sizeof(double)); /* (B, Hq, Sq) dense, NaN where not written */
    unsigned char *r = malloc(nq + 1), *k = malloc(nk + 1);
    if (lse && r && k) {
        const af_tensor_view *w = &t->plan.view[AF_T_LSE];
        for (size_t e = 0; e < nq; e++) lse[e] = NAN;
        for (int b = 0; b < c->batch; b++)
            for (int h = 0; h < c->heads_q; h++)
                for (int s = 0; s < af_case_len_q(c, b); s++) {
                    int64_t off = af_layout_offset(&t->plan, AF_T_LSE, b, h, s, 0);
                    if (!is_poison(w->storage, t->buf[w->buffer], off))
                        lse[((size_t)b * c->heads_q + h) * c->seqlen_q + s] =
                            af_storage_load(w->storage, t->buf[w->buffer], off);
                }
        if (af_criterion_unresolved(c, terms, lse, r, k) > 0) {
            *rows = r;
            *keys = k;
            r = k = NULL;
        }
    }
    free(lse);
    free(r);
    free(k);
}

int af_check_guards(const af_tensors *t, unsigned buffers, af_verdict *v) {
    int before = v->n_findings;
    char msg[256];
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!t->alloc[i] || !(buffers & (1u << i))) continue;
        const uint8_t *lo = t->alloc[i], *hi = t->alloc[i] + AF_GUARD_BYTES + t->bytes[i];
        for (int k = 0; k < AF_GUARD_BYTES; k++) {
            if (lo[k] != AF_GUARD_BYTE) {
                snprintf(msg, sizeof msg, "guard before buffer %s changed at byte -%d", af_buffer_name((af_buffer_id)i),
                         AF_GUARD_BYTES - k);
                finding(v, AF_V_OUT_OF_BOUNDS, main_tensor((af_buffer_id)i), -1, -1, -1, -1, msg);
                break;
            }
            if (hi[k] != AF_GUARD_BYTE) {
                snprintf(msg, sizeof msg, "guard after buffer %s changed at byte +%d", af_buffer_name((af_buffer_id)i),
                         k);
                finding(v, AF_V_OUT_OF_BOUNDS, main_tensor((af_buffer_id)i), -1, -1, -1, -1, msg);
                break;
            }
        }
    }
    return v->n_findings - before;
}

/* The buffer checks' element walks on af_parfor threads, each item writing only its own
 * slot, so the findings (the first of each kind, in element order) are the serial walk's:
 *   owned_head   marks the rows of one (b, h) of tensor id as owned (rows of one tensor never
 *                share bytes; tensors sharing a buffer run one after the other)
 *   gap_chunk    the first element of chunk i that is neither owned nor poison (or -1)
 *   screen_head  whether the rows of one (b, h) hold anything the serial walk reports or
 *                excuses (poison, a value that is not finite, a fully masked row): the walk
 *                then visits only those (b, h), in order. */
typedef struct {
    const af_case *c;
    const af_tensors *t;
    af_tensor_id id; /* owned_head, screen_head */
    uint8_t *owned;
    int64_t n;           /* gap_chunk: the buffer's elements */
    af_buffer_id bid;    /* gap_chunk */
    int64_t *first_gap;  /* gap_chunk: (chunks) */
    unsigned char *flag; /* screen_head: (B H) */
} buffer_pass;

#define GAP_CHUNK (1L << 20)

static int rows_of(const af_case *c, af_tensor_id id, int b) {
    return id == AF_T_DK || id == AF_T_DV ? af_case_len_kv(c, b) : af_case_len_q(c, b);
}

static void owned_head(void *ctx, long bh) {
    const buffer_pass *x = ctx;
    const af_tensor_view *w = &x->t->plan.view[x->id];
    int b = (int)(bh / w->H), h = (int)(bh % w->H);
    int rows = w->ragged ? rows_of(x->c, x->id, b) : w->S;
    for (int s = 0; s < rows; s++) /* a row: D contiguous elements (layout.h) */
        memset(x->owned + af_layout_offset(&x->t->plan, x->id, b, h, s, 0), 1, (size_t)w->D);
}

static void gap_chunk(void *ctx, long i) {
    const buffer_pass *x = ctx;
    int64_t e0 = (int64_t)i * GAP_CHUNK, e1 = e0 + GAP_CHUNK < x->n ? e0 + GAP_CHUNK : x->n;
    x->first_gap[i] = -1;
    for (int64_t e = e0; e < e1; e++)
        if (!x->owned[e] && !is_poison(x->t->plan.buffer_storage[x->bid], x->t->buf[x->bid], e)) {
            x->first_gap[i] = e;
            return;
        }
}

static void screen_head(void *ctx, long bh) {
    const buffer_pass *x = ctx;
    const af_tensor_view *w = &x->t->plan.view[x->id];
    int b = (int)(bh / w->H), h = (int)(bh % w->H);
    bool kv = x->id == AF_T_DK || x->id == AF_T_DV;
    unsigned char f = 0;
    int rows = rows_of(x->c, x->id, b);
    for (int s = 0; s < rows && !f; s++) {
        if (!kv && af_row_fully_masked(x->c, b, s)) {
            f = 1;
            break;
        }
        /* a poisoned element is a NaN (model/tensors.h): the row's bits say both */
        int64_t off0 = af_layout_offset(&x->t->plan, x->id, b, h, s, 0);
        f = !af_storage_row_finite(w->storage, x->t->buf[w->buffer], off0, w->D);
    }
    x->flag[bh] = f;
}

int af_check_buffers(const af_case *c, const af_tensors *t, const af_outputs *oracle, const af_outputs *ref,
                     const af_criterion_terms *terms, af_verdict *v) {
    return af_check_buffers_of(c, t, oracle, ref, terms, ~0u, v);
}

int af_check_buffers_of(const af_case *c, const af_tensors *t, const af_outputs *oracle, const af_outputs *ref,
                        const af_criterion_terms *terms, unsigned buffers, af_verdict *v) {
    int before = v->n_findings;
    char msg[256];
    unsigned char *lost_rows, *lost_keys; /* (B, Hq, Sq), (B, Hkv, Skv) or NULL */
    unresolved_of_run(c, t, terms, &lost_rows, &lost_keys);
    overflow_extra ox;
    memset(&ox, 0, sizeof ox);
    /* 1. guard margins of every buffer */
    af_check_guards(t, buffers, v);
    /* 2. output buffers: owned elements (all rows of padded layouts, valid tokens of
     *    ragged ones) vs gaps that must stay poisoned */
    af_tensor_id outs[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    int nouts = c->backward ? 5 : 2;
    af_buffer_id seen_bufs[AF_BUF_COUNT];
    int nseen = 0;
    for (int oi = 0; oi < nouts; oi++) {
        af_buffer_id bid = t->plan.view[outs[oi]].buffer;
        if (!(buffers & (1u << bid))) continue;
        bool dup = false;
        for (int k = 0; k < nseen; k++) dup |= seen_bufs[k] == bid;
        if (dup) continue;
        seen_bufs[nseen++] = bid;
        int64_t n = t->plan.buffer_elems[bid];
        long chunks = (long)((n + GAP_CHUNK - 1) / GAP_CHUNK);
        uint8_t *owned = calloc((size_t)n, 1);
        int64_t *first_gap = calloc((size_t)(chunks > 0 ? chunks : 1), sizeof *first_gap);
        if (!owned || !first_gap) {
            free(owned);
            free(first_gap);
            continue;
        }
        int threads = af_parfor_threads((double)n);
        for (int tj = 0; tj < nouts; tj++) {
            const af_tensor_view *w = &t->plan.view[outs[tj]];
            if (w->buffer != bid) continue;
            buffer_pass x = {c, t, outs[tj], owned, n, bid, NULL, NULL};
            af_parfor((long)w->B * w->H, threads, owned_head, &x);
        }
        buffer_pass g = {c, t, AF_T_NONE, owned, n, bid, first_gap, NULL};
        af_parfor(chunks, threads, gap_chunk, &g);
        for (long i = 0; i < chunks; i++)
            if (first_gap[i] >= 0) {
                snprintf(msg, sizeof msg, "write into a gap of buffer %s at element %lld", af_buffer_name(bid),
                         (long long)first_gap[i]);
                finding(v, AF_V_OUT_OF_BOUNDS, main_tensor(bid), -1, -1, -1, -1, msg);
                break;
            }
        free(owned);
        free(first_gap);
    }
    /* 3. judged elements: written, finite; fully masked rows follow the convention */
    for (int oi = 0; oi < nouts; oi++) {
        af_tensor_id id = outs[oi];
        const af_tensor_view *w = &t->plan.view[id];
        if (!(buffers & (1u << w->buffer))) continue;
        bool kv = id == AF_T_DK || id == AF_T_DV;
        bool reported_unwritten = false, reported_nan = false, reported_conv = false;
        double *row = malloc((size_t)w->D * sizeof *row);             /* (D) one row's stored values */
        unsigned char *flag = calloc((size_t)w->B * (size_t)w->H, 1); /* (B, H) what the walk visits */
        if (!row || !flag) {
            free(row);
            free(flag);
            continue;
        }
        buffer_pass x = {c, t, id, NULL, 0, w->buffer, NULL, flag};
        af_parfor((long)w->B * w->H, af_parfor_threads((double)w->B * w->H * w->S * w->D), screen_head, &x);
        for (int b = 0; b < w->B; b++) {
            int rows = kv ? af_case_len_kv(c, b) : af_case_len_q(c, b);
            for (int h = 0; h < w->H; h++)
                for (int s = 0; s < rows && flag[(size_t)b * w->H + h]; s++) {
                    bool masked = !kv && af_row_fully_masked(c, b, s);
                    int64_t off0 = af_layout_offset(&t->plan, id, b, h, s, 0); /* + d (layout.h) */
                    af_storage_load_row(w->storage, t->buf[w->buffer], off0, w->D, 1.0, row);
                    for (int d = 0; d < w->D; d++) {
                        int64_t off = off0 + d;
                        if (is_poison(w->storage, t->buf[w->buffer], off)) {
                            if (!reported_unwritten) {
                                snprintf(msg, sizeof msg, "poison survived in %s", af_tensor_name(id));
                                finding(v, AF_V_UNWRITTEN, id, b, h, s, id == AF_T_LSE ? -1 : d, msg);
                                reported_unwritten = true;
                            }
                            continue;
                        }
                        double x = row[d];
                        if (masked && (id == AF_T_LSE)) {
                            double want = af_masked_row_lse(c, h);
                            if (!af_masked_row_lse_ok(c, h, x) && !reported_conv) {
                                if (isinf(want))
                                    snprintf(msg, sizeof msg,
                                             "fully masked row: LSE = %g, expected -inf (the log of an empty sum); "
                                             "fix: store -inf for rows that see no key",
                                             x);
                                else
                                    snprintf(msg, sizeof msg,
                                             "fully masked row: LSE = %.9g, expected %.9g (the sink alone in the "
                                             "softmax denominator); fix: store the sink logit%s for rows that see "
                                             "no key",
                                             x, want, c->lse_base2 ? " / ln 2" : "");
                                finding(v, isnan(x) ? AF_V_NAN_INF : AF_V_CONVENTION, id, b, h, s, -1, msg);
                                reported_conv = true;
                            }
                            continue;
                        }
                        if (!isfinite(x)) {
                            double o = oracle_value(c, oracle, id, b, h, s, d);
                            if (isfinite(o)) {
                                size_t e = dense_index(c, id, b, h, s, d);
                                double extra = extra_at(&ox, c, t, terms, id, e); /* read on the first inf */
                                if (af_overflow_within(w->storage, o, af_element_reach(c, id, terms, ref, e, o, extra),
                                                       x))
                                    continue;
                            }
                            /* a gradient of a row (key) whose recomputed P may overflow fp32 */
                            size_t rk = ((size_t)b * w->H + h) * (size_t)(kv ? c->seqlen_kv : c->seqlen_q) + s;
                            if (id == AF_T_DQ && lost_rows && lost_rows[rk]) continue;
                            if ((id == AF_T_DK || (id == AF_T_DV && w->H == c->heads_kv)) && lost_keys && lost_keys[rk])
                                continue;
                            if (!reported_nan) {
                                snprintf(msg, sizeof msg, "%s = %g%s", af_tensor_name(id), x,
                                         masked ? " in a fully masked row" : "");
                                finding(v, AF_V_NAN_INF, id, b, h, s, id == AF_T_LSE ? -1 : d, msg);
                                reported_nan = true;
                            }
                            continue;
                        }
                        if (masked && x != 0.0 && !reported_conv) {
                            snprintf(msg, sizeof msg, "fully masked row: %s = %g, expected 0", af_tensor_name(id), x);
                            finding(v, AF_V_CONVENTION, id, b, h, s, d, msg);
                            reported_conv = true;
                        }
                    }
                }
        }
        free(row);
        free(flag);
    }
    free(lost_rows);
    free(lost_keys);
    overflow_extra_free(&ox);
    return v->n_findings - before;
}

/* fp8_e4m3 and mxfp8 LSE, judged row by row: each score of row i may be off by up to
 * unit * A_i, A_i = max_j scale * sum_d |q_d k_jd| (oracle->score_abs), and LSE,
 * 1-Lipschitz in the scores' max norm, by as much. fp8_e4m3: unit = AF_FP8_ACC_UNIT (FP8
 * tensor cores accumulate with fewer bits than fp32; Hopper, docs/cudnn-findings.md F5);
 * mxfp8: af_score_acc_unit(Dqk) (the decoded operands' fp32 accumulation, verdict.h). Row
 * i passes iff |LSE_i - exact| <= allowed + unit * A_i; st gets the worst row's ratio and
 * allowance. */
static void fp8_lse_rows(const af_case *c, const double *kernel, const double *oracle, const double *score_abs,
                         double allowed, double unit, af_tensor_stats *st, int *wb, int *wh, int *ws, double *wk,
                         double *wo, double *werr) {
    double worst = -1;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++)
            for (int s = 0; s < af_case_len_q(c, b); s++) {
                if (af_row_fully_masked(c, b, s)) continue;
                size_t k = ((size_t)b * c->heads_q + h) * c->seqlen_q + s;
                if (!isfinite(kernel[k])) continue;
                double a = allowed + unit * score_abs[k];
                double e = fabs(kernel[k] - oracle[k]);
                double r = a > 0 ? e / a : 0;
                if (r > worst) {
                    worst = r;
                    st->allowed = a;
                    *wb = b;
                    *wh = h;
                    *ws = s;
                    *wk = kernel[k];
                    *wo = oracle[k];
                    *werr = e;
                }
            }
    if (worst >= 0) st->ratio = worst;
}

/* Tensor slot i (O, LSE, dQ, dK, dV) of a device copy; NULL: none kept. */
static const double *dev_slot(const af_outputs_dev *d, int i) {
    if (!d) return NULL;
    const double *a[5] = {d->o, d->lse, d->dq, d->dk, d->dv};
    return a[i];
}

#ifdef ATTNFUZZ_HAVE_CUDA
/* Tensor id as run stored it, for the device's decode (kernels/compare_gpu.h); false when
 * the device does not read it (paged views, fp8 storage: the dense doubles go up then). */
static bool stored_of(const af_case *c, const af_tensors *run, af_tensor_id id, af_gpu_stored *k) {
    const af_tensor_view *v = &run->plan.view[id];
    if (v->paged || !af_gpu_stored_served(v->storage) || !run->buf[v->buffer]) return false;
    memset(k, 0, sizeof *k);
    bool kv = id == AF_T_DK || id == AF_T_DV;
    k->buf = run->buf[v->buffer];
    k->bytes = run->bytes[v->buffer];
    k->storage = v->storage;
    k->scale = af_output_descale(run, id);
    k->B = v->B, k->H = v->H, k->S = v->S, k->D = v->D;
    k->base = v->base, k->stride_b = v->stride_b, k->stride_h = v->stride_h, k->stride_s = v->stride_s;
    k->ragged = v->ragged;
    const int64_t *ts = kv ? run->plan.token_start_kv : run->plan.token_start_q;
    for (int b = 0; b < c->batch && b < AF_MAX_BATCH; b++) {
        k->token_start[b] = ts[b];
        k->len[b] = kv ? af_case_len_kv(c, b) : af_case_len_q(c, b);
    }
    return true;
}
#endif

/* Row summaries of one tensor (slot i) on the device when it is large and a GPU is
 * usable, reading the reference's and the oracle's arrays where they are kept on the
 * device (dev_ref, dev_exact; NULL: the host arrays are uploaded) and the kernel's from
 * its stored buffer when run is given (else its dense doubles go up); false (nothing
 * written) otherwise or on a device error, and the host summarises. */
static bool gpu_summaries(const af_case *c, af_tensor_id id, const af_tensors *run, const double *kernel,
                          const double *ref, const double *exact, const double *dev_ref, const double *dev_exact,
                          long long rows, int D, af_row_summary *out) {
#ifdef ATTNFUZZ_HAVE_CUDA
    if ((double)rows * D < (double)AF_COMPARE_GPU_MIN_ELEMS) return false;
    char why[256];
    if (af_gpu_available(why, sizeof why, NULL, 0, NULL) != 0) return false;
    unsigned on = (ref && dev_ref ? AF_ROWS_REF_ON_DEVICE : 0u) | (dev_exact ? AF_ROWS_EXACT_ON_DEVICE : 0u);
    const double *r_at = on & AF_ROWS_REF_ON_DEVICE ? dev_ref : ref, *e_at = dev_exact ? dev_exact : exact;
    af_gpu_stored *k = run && id != AF_T_LSE ? malloc(sizeof *k) : NULL;
    bool stored = k && stored_of(c, run, id, k);
    bool ok = stored ? af_gpu_row_summaries_stored(k, r_at, e_at, on, out, why, sizeof why) == AF_RUN_OK
                     : af_gpu_row_summaries_at(kernel, r_at, e_at, on, rows, D, out, why, sizeof why) == AF_RUN_OK;
    free(k);
    return ok;
#else
    (void)c, (void)id, (void)run, (void)kernel, (void)ref, (void)exact, (void)dev_ref, (void)dev_exact, (void)rows;
    (void)D, (void)out;
    return false;
#endif
}

int af_compare_outputs(const af_case *c, const af_outputs *kernel, const af_outputs *ref,
                       const af_oracle_result *oracle, const af_criterion_terms *terms, af_verdict *v) {
    return af_compare_outputs_only(c, kernel, ref, oracle, terms, ~0u, v);
}

int af_compare_outputs_only(const af_case *c, const af_outputs *kernel, const af_outputs *ref,
                            const af_oracle_result *oracle, const af_criterion_terms *terms, unsigned tensors,
                            af_verdict *v) {
    return af_compare_outputs_run(c, kernel, NULL, ref, oracle, terms, tensors, v);
}

int af_compare_outputs_run(const af_case *c, const af_outputs *kernel, const af_tensors *run, const af_outputs *ref,
                           const af_oracle_result *oracle, const af_criterion_terms *terms, unsigned tensors,
                           af_verdict *v) {
    int before = v->n_findings;
    af_tensor_id ids[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    const double *kv_[5] = {kernel->o, kernel->lse, kernel->dq, kernel->dk, kernel->dv};
    const double *rv_[5] = {ref ? ref->o : NULL, ref ? ref->lse : NULL, ref ? ref->dq : NULL, ref ? ref->dk : NULL,
                            ref ? ref->dv : NULL};
    const double *ov_[5] = {oracle->out.o, oracle->out.lse, oracle->out.dq, oracle->out.dk, oracle->out.dv};
    int n = c->backward ? 5 : 2;
    for (int i = 0; i < n; i++) {
        af_tensor_id id = ids[i];
        if (!(tensors & (1u << id))) continue;
        bool kvside = id == AF_T_DK || id == AF_T_DV;
        int H = af_tensor_heads(c, id);
        int S = kvside ? c->seqlen_kv : c->seqlen_q;
        int D = id == AF_T_LSE ? 1 : (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
        af_tensor_stats *st = &v->stats[id];
        memset(st, 0, sizeof *st);
        double err = 0, err_ref = 0, maxmag = 0;
        int wb = 0, wh = 0, ws = 0, wd = 0;
        double wk = 0, wo = 0;
        long long count = 0;
        bool fp16_bf16 = c->dtype == AF_DT_FP16 || c->dtype == AF_DT_BF16;
        bool have = fp16_bf16 && af_criterion_terms_have(terms, id);
        size_t nrows = (size_t)c->batch * H * S;
        af_row_summary *sums = malloc((nrows ? nrows : 1) * sizeof *sums);
        if (!sums) {
            af_finding f = af_finding_at(AF_V_RESOURCE, id, -1, -1, -1, -1, "out of host memory for row summaries");
            af_verdict_add(v, &f);
            continue;
        }
        /* the stored O's and the stored LSE's shares of the element budgets (criterion.h) */
        double t0 = af_clock_mono();
        double *dterm = have ? af_criterion_extra_terms(c, id, terms, kernel->o, kernel->lse) : NULL;
        double t1 = af_clock_mono();
        if (have || !gpu_summaries(c, id, run, kv_[i], rv_[i], ov_[i], dev_slot(ref ? ref->dev : NULL, i),
                                   dev_slot(oracle->out.dev, i), (long long)nrows, D, sums))
            af_criterion_row_summaries_at(c, id, kv_[i], rv_[i], dev_slot(ref ? ref->dev : NULL, i), ov_[i],
                                          dev_slot(oracle->out.dev, i), have ? terms : NULL, dterm,
                                          af_output_unit(c, id), sums);
        free(dterm);
        double t2 = af_clock_mono();
        /* without element budgets: the stored O's share of the gradients' row floors
         * (criterion_large.c); every row's field set here, the device's included */
        double *extra = !have && fp16_bf16 ? af_criterion_stored_o_row_floor(c, id, terms, kernel->o) : NULL;
        for (size_t r = 0; r < nrows; r++) sums[r].floor_extra = extra ? extra[r] : 0.0;
        free(extra);
        v->judge.check_terms_s += (t1 - t0) + (af_clock_mono() - t2);
        v->judge.check_rows_s += t2 - t1;
        /* the per-tensor figures: the first element of the largest error over the
         * judged rows (the same walk as the criterion's) */
        for (int b = 0; b < c->batch; b++) {
            int rows = kvside ? af_case_len_kv(c, b) : af_case_len_q(c, b);
            for (int h = 0; h < H; h++)
                for (int s = 0; s < rows; s++) {
                    if (!kvside && af_row_fully_masked(c, b, s)) continue; /* judged by af_check_buffers */
                    const af_row_summary *rs = &sums[((size_t)b * H + h) * S + s];
                    if (rs->n == 0) continue;
                    if (rs->maxo > maxmag) maxmag = rs->maxo;
                    if (rs->err_ref > err_ref) err_ref = rs->err_ref;
                    if (rs->err > err || count == 0) {
                        if (rs->err > err) err = rs->err;
                        wb = b;
                        wh = h;
                        ws = s;
                        wd = rs->worst_d;
                        wk = rs->kernel_at;
                        wo = rs->exact_at;
                    }
                    count += rs->n;
                }
        }
        st->judged = count > 0;
        st->elements = count;
        st->err = err;
        st->err_ref = err_ref;
        st->floor = fmax(af_output_unit(c, id) * maxmag, 0x1p-24); /* tolerance.h */
        if (id == AF_T_DQ || id == AF_T_DK || id == AF_T_DV)       /* cancellation: verdict.h */
            st->floor = fmax(st->floor, AF_GRAD_CANCEL_UNIT * (id == AF_T_DQ   ? oracle->grad.dq
                                                               : id == AF_T_DK ? oracle->grad.dk
                                                                               : oracle->grad.dv));
        st->allowed = rv_[i] ? 2.0 * err_ref + st->floor : 8.0 * st->floor;
        st->ratio = st->allowed > 0 ? err / st->allowed : 0;
        if (id == AF_T_LSE && af_dtype_is_fp8(c->dtype) && oracle->score_abs && count)
            fp8_lse_rows(c, kv_[i], ov_[i], oracle->score_abs, st->allowed,
                         af_dtype_is_fp8_tensor(c->dtype) ? AF_FP8_ACC_UNIT : af_score_acc_unit(c->head_dim_qk), st,
                         &wb, &wh, &ws, &wk, &wo, &err);
        const char *check = "";
        double shown_ref = err_ref; /* the reference error the failing check used */
        double tensor_ratio = -1;   /* fp8: the per-tensor rule's ratio, shown beside the row rule's */
        af_criterion_result cr;
        bool per_row = false;
        if (count && af_dtype_is_fp8_tensor(c->dtype) && id != AF_T_LSE) { /* per row: criterion_fp8.c */
            double gm = id == AF_T_DQ ? oracle->grad.dq : id == AF_T_DK ? oracle->grad.dk : oracle->grad.dv;
            double *stored_o = (id == AF_T_DQ || id == AF_T_DK) && terms && terms->ready
                                   ? af_criterion_stored_o_term(c, id, terms, kernel->o)
                                   : NULL;
            /* each row's allowance is at most the per-tensor one plus the ABI's stored-O and
             * E4M3-cast shares (criterion_fp8.c): dS's in dQ and dK, P's in O and dV */
            const double *cast_sq = terms && terms->ready ? terms->cast_sq[id] : NULL;
            const double *score_o = id == AF_T_O && terms && terms->ready ? terms->fp8_score_o : NULL;
            const double *cast_mass =
                (stored_o || cast_sq) && af_criterion_terms_gpu_host_budgets(terms) == 0 ? terms->mass[id] : NULL;
            af_criterion_fp8_decide(c, id, sums, rv_[i] != NULL, st->allowed, af_output_unit(c, id),
                                    terms ? terms->e4m3_step[id] : 0.0, id == AF_T_O ? 0.0 : gm, stored_o, cast_mass,
                                    cast_sq, score_o, &cr);
            free(stored_o);
            tensor_ratio = st->ratio;
            per_row = true;
        }
        if (count && fp16_bf16) { /* per row: criterion.h */
            double gm = id == AF_T_DQ ? oracle->grad.dq : id == AF_T_DK ? oracle->grad.dk : oracle->grad.dv;
            af_criterion_decide(c, id, sums, rv_[i] != NULL, have ? terms : NULL, af_output_unit(c, id), gm, &cr);
            per_row = true;
        }
        if (per_row) { /* the row rule's decision replaces the per-tensor figures */
            st->ratio = cr.ratio;
            st->allowed = cr.allowed;
            st->floor = cr.floor;
            err = cr.err;
            wb = cr.b;
            wh = cr.h;
            ws = cr.row;
            wd = cr.col;
            wk = cr.kernel_value;
            wo = cr.oracle_value;
            check = af_check_name(cr.check);
            shown_ref = cr.err_ref;
        }
        st->err = err; /* the error of the check that gave the ratio (row rules: that row's) */
        st->b = wb;
        st->h = wh;
        st->row = ws;
        st->col = id == AF_T_LSE ? -1 : wd;
        if (count && st->ratio > 1.0) {
            af_finding f = af_finding_at(AF_V_MISMATCH, id, wb, wh, ws, st->col, NULL);
            f.error = err;
            f.allowed = st->allowed;
            f.ratio = st->ratio;
            f.kernel_value = wk;
            f.baseline_value = wo;
            int len = snprintf(f.detail, sizeof f.detail, "%s%skernel %.6g oracle %.6g reference err %.3g", check,
                               check[0] ? ": " : "", wk, wo, shown_ref);
            if (tensor_ratio >= 0 && len > 0 && (size_t)len < sizeof f.detail)
                snprintf(f.detail + len, sizeof f.detail - (size_t)len, " (per-tensor rule ratio %.3g)", tensor_ratio);
            af_verdict_add(v, &f);
        }
        free(sums);
    }
    return v->n_findings - before;
}
