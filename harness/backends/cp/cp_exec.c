/* cp_exec.c — virtual ranks: each call of the plan is a separate inner backend run on
 * its sub-case; partial outputs are merged by their LSE, gradients summed to their owner.
 *
 * Forward, per query row (fp32, as TransformerEngine's CP merge):
 *   lse = m + log(sum_i exp(lse_i - m) + exp(a_h - m)),  m = max(max_i lse_i, a_h)
 *   O   = sum_i exp(lse_i - lse) o_i       (o_i: each call's O as stored, dtype-rounded)
 * The calls run without sinks (af_cp_sub_case); the sink logit a_h (-inf without sinks)
 * joins the merged denominator once per row, as feature_spec.h's Z_i = sum_j exp(s_ij) +
 * exp(a_h) holds it once whatever the split. A row no call reaches keeps O = 0, LSE = a_h.
 * Backward: each call's backward runs from the global O (as stored) and LSE
 * (backward_given), so its P and D are the global ones; dQ, dK, dV partials (as stored)
 * are summed in fp32 into their global positions (dK/dV: the owner rank's reduction; a
 * K/V head replicated to several a2a ranks: the sum over its replicas, the replication's
 * backward) and stored once. Learnable sinks: dsink_h = -sum_(b,i) exp(a_h - lse_i) D_i
 * with D_i = dO_i . O_i from the global O as stored (fp32, rows ascending), once, by the
 * wrapper: no call sees the sink. Bias: each call is given its slice of the global bias
 * (the rows of its queries, the columns of its keys, its heads: fill_bias), which it reads
 * in place of one generated from its own sub-case (model/tensors.h bias_given).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cp/cp_exec.h"
#include "model/features.h"
#include "model/layout.h"
#include "model/tensors.h"
#include "util/clock.h"

/* One run's dense global problem and accumulators. */
typedef struct {
    const af_case *c;
    af_tensors *t;
    af_cp_plant plant;
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    float *q, *k, *v, *dout;    /* (B,Hq,Sq,Dqk) (B,Hkv,Skv,Dqk) (B,Hkv,Skv,Dv) (B,Hq,Sq,Dv) */
    float *lse_max, *lse_sum;   /* (B,Hq,Sq) merge: running max, then sum of exp */
    float *lse;                 /* (B,Hq,Sq) merged LSE */
    float *o;                   /* (B,Hq,Sq,Dv) merged O (fp32) */
    float *dq, *dk, *dv;        /* (B,Hq,Sq,Dqk) (B,Hkv,Skv,Dqk) (B,Hkv,Skv,Dv) gradient sums */
    float **part_o, **part_lse; /* per run: (B, heads_q, seqlen_q of the sub-case, Dv) / (.., 1) */
    float *sink;                /* (Hq) sink logits joined once per merged row; NULL without sinks or
                                   when the calls keep them (sink_per_rank) */
} cp_ctx;

static float *floats(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static size_t qi(const cp_ctx *x, int b, int h, int s) { return ((size_t)b * x->Hq + h) * x->Sq + s; }
static size_t ki(const cp_ctx *x, int b, int h, int s) { return ((size_t)b * x->Hkv + h) * x->Skv + s; }

static void ctx_free(cp_ctx *x, int runs) {
    free(x->q), free(x->k), free(x->v), free(x->dout);
    free(x->lse_max), free(x->lse_sum), free(x->lse), free(x->o);
    free(x->dq), free(x->dk), free(x->dv);
    for (int r = 0; x->part_o && r < runs; r++) free(x->part_o[r]);
    for (int r = 0; x->part_lse && r < runs; r++) free(x->part_lse[r]);
    free(x->part_o), free(x->part_lse);
    free(x->sink);
}

/* Dense copy of input tensor tid of the global case (valid rows only). */
static void read_input(const cp_ctx *x, af_tensor_id tid, float *dst, int H, int S, int D, bool kv) {
    const af_tensor_view *view = &x->t->plan.view[tid];
    for (int b = 0; b < x->B; b++) {
        int len = kv ? af_case_len_kv(x->c, b) : af_case_len_q(x->c, b);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < len; s++)
                for (int d = 0; d < D; d++)
                    dst[(((size_t)b * H + h) * S + s) * D + d] = (float)af_storage_load(
                        view->storage, x->t->buf[view->buffer], af_layout_offset(&x->t->plan, tid, b, h, s, d));
    }
}

static int ctx_init(cp_ctx *x, const af_case *c, af_tensors *t, af_cp_plant plant, int runs) {
    memset(x, 0, sizeof *x);
    x->c = c, x->t = t, x->plant = plant;
    x->B = c->batch, x->Hq = c->heads_q, x->Hkv = c->heads_kv, x->Sq = c->seqlen_q, x->Skv = c->seqlen_kv;
    x->Dqk = c->head_dim_qk, x->Dv = c->head_dim_v;
    size_t nq = (size_t)x->B * x->Hq * x->Sq, nk = (size_t)x->B * x->Hkv * x->Skv;
    x->q = floats(nq * x->Dqk), x->k = floats(nk * x->Dqk), x->v = floats(nk * x->Dv);
    x->lse_max = floats(nq), x->lse_sum = floats(nq), x->lse = floats(nq), x->o = floats(nq * x->Dv);
    x->part_o = calloc((size_t)runs + 1, sizeof *x->part_o);
    x->part_lse = calloc((size_t)runs + 1, sizeof *x->part_lse);
    bool ok = x->q && x->k && x->v && x->lse_max && x->lse_sum && x->lse && x->o && x->part_o && x->part_lse;
    if (c->backward) {
        x->dout = floats(nq * x->Dv), x->dq = floats(nq * x->Dqk), x->dk = floats(nk * x->Dqk);
        x->dv = floats(nk * x->Dv);
        ok = ok && x->dout && x->dq && x->dk && x->dv;
    }
    if (!ok) return -1;
    read_input(x, AF_T_Q, x->q, x->Hq, x->Sq, x->Dqk, false);
    read_input(x, AF_T_K, x->k, x->Hkv, x->Skv, x->Dqk, true);
    read_input(x, AF_T_V, x->v, x->Hkv, x->Skv, x->Dv, true);
    if (c->backward) read_input(x, AF_T_DO, x->dout, x->Hq, x->Sq, x->Dv, false);
    for (size_t i = 0; i < nq; i++) x->lse_max[i] = -INFINITY;
    if (c->softmax != AF_SOFTMAX_VANILLA && plant != AF_CP_PLANT_SINK_PER_RANK) {
        if (!(x->sink = floats((size_t)x->Hq))) return -1;
        for (int h = 0; h < x->Hq; h++) x->sink[h] = af_feature_sink(c, h);
        for (size_t i = 0; i < nq; i++) x->lse_max[i] = x->sink[i / x->Sq % x->Hq]; /* m starts at a_h */
    }
    return 0;
}

static void put(af_tensors *st, af_tensor_id tid, int b, int h, int s, int d, float value) {
    const af_tensor_view *view = &st->plan.view[tid];
    af_storage_store(view->storage, st->buf[view->buffer], af_layout_offset(&st->plan, tid, b, h, s, d), value);
}

static double get(const af_tensors *st, af_tensor_id tid, int b, int h, int s, int d) {
    const af_tensor_view *view = &st->plan.view[tid];
    return af_storage_load(view->storage, st->buf[view->buffer], af_layout_offset(&st->plan, tid, b, h, s, d));
}

/* Rows tensor tid has in memory for a sequence of valid length len (thd: only those). */
static int rows_in_memory(const af_tensors *t, af_tensor_id tid, int len) {
    const af_tensor_view *view = &t->plan.view[tid];
    return view->ragged ? len : view->S;
}

/* Copy one side's rows (Q and dO, or K and V) of the run into the sub-case's tensors;
 * rows past the valid ones (padding) get 0. */
static void fill_inputs(const cp_ctx *x, const af_cp_run *run, const af_case *sub, af_tensors *st) {
    int hk0 = run->hk0;
    for (int b = 0; b < x->B; b++) {
        for (int hl = 0; hl < sub->heads_q; hl++) {
            int rows = rows_in_memory(st, AF_T_Q, sub->seqlens_q[b]);
            for (int l = 0; l < rows; l++) {
                int g = l < sub->seqlens_q[b] ? af_cp_local_to_global(run->q[b], run->nseg_q, l) : -1;
                size_t row = g >= 0 ? qi(x, b, run->h0 + hl, g) : 0;
                for (int d = 0; d < x->Dqk; d++) put(st, AF_T_Q, b, hl, l, d, g >= 0 ? x->q[row * x->Dqk + d] : 0.0f);
                if (sub->backward)
                    for (int d = 0; d < x->Dv; d++)
                        put(st, AF_T_DO, b, hl, l, d, g >= 0 ? x->dout[row * x->Dv + d] : 0.0f);
            }
        }
        for (int hl = 0; hl < sub->heads_kv; hl++) {
            int rows = rows_in_memory(st, AF_T_K, sub->seqlens_kv[b]);
            for (int l = 0; l < rows; l++) {
                int g = l < sub->seqlens_kv[b] ? af_cp_local_to_global(run->kv[b], run->nseg_kv, l) : -1;
                size_t row = g >= 0 ? ki(x, b, hk0 + hl, g) : 0;
                for (int d = 0; d < x->Dqk; d++) put(st, AF_T_K, b, hl, l, d, g >= 0 ? x->k[row * x->Dqk + d] : 0.0f);
                for (int d = 0; d < x->Dv; d++) put(st, AF_T_V, b, hl, l, d, g >= 0 ? x->v[row * x->Dv + d] : 0.0f);
            }
        }
    }
}

/* The run's slice of the global bias as the call's given bias (model/tensors.h), in the
 * sub-case's extents: local row i and key j of bias sequence b take the global bias at
 * their global positions (af_cp_bias_position; the query-broadcast shapes' one row is
 * row 0), local head h global head h0 + h (per-head shapes); positions valid in no sequence get 0 (masked).
 * The plant bias_local leaves it unset, so the call generates its own. 0, or -1 when out
 * of memory. */
static int fill_bias(const cp_ctx *x, const af_cp_run *run, const af_case *sub, af_tensors *st) {
    if (sub->bias == AF_BIAS_NONE || x->plant == AF_CP_PLANT_BIAS_LOCAL) return 0;
    float *given = af_tensors_bias_alloc(st, sub); /* (bb, bh, rows, sub's Skv) */
    if (!given) return -1;
    int bb, bh, rows = af_feature_bias_rows(sub);
    af_feature_bias_dims(sub, &bb, &bh);
    /* broadcasts by the shape, not by an extent of 1 (a2a+p2p's group of 2 may hold one head) */
    bool row_broadcast = af_bias_broadcasts_query(sub->bias);
    af_bias_shape full = af_bias_full_query(sub->bias);
    bool per_head = full == AF_BIAS_1HSS || full == AF_BIAS_BHSS;
    size_t k = 0;
    for (int b = 0; b < bb; b++)
        for (int h = 0; h < bh; h++)
            for (int i = 0; i < rows; i++) {
                int gi = row_broadcast ? 0 : af_cp_bias_position(run, x->B, bb, b, false, i);
                for (int j = 0; j < sub->seqlen_kv; j++, k++) {
                    int gj = af_cp_bias_position(run, x->B, bb, b, true, j);
                    if (gi >= 0 && gj >= 0) given[k] = af_feature_bias(x->c, b, per_head ? run->h0 + h : 0, gi, gj);
                }
            }
    return 0;
}

/* "cp p2p rank 1 step 2: " */
static void prefix(char *buf, size_t cap, const af_case *c, const af_cp_run *run) {
    snprintf(buf, cap, "cp %s rank %d %s %d", af_cp_comm_name(c->cp_comm), run->rank, run->what, run->step);
}

/* Build the run's sub-case and tensors. 1: no work; -1: error in why (prefixed). */
static int make_sub(const cp_ctx *x, const af_cp_run *run, bool backward, af_case *sub, af_tensors *st, char *why,
                    size_t cap) {
    char msg[700] = "", pre[96];
    prefix(pre, sizeof pre, x->c, run);
    int rc = af_cp_sub_case(x->c, run, backward, sub, msg, sizeof msg);
    if (rc) {
        if (rc < 0) snprintf(why, cap, "%s: %s", pre, msg);
        return rc;
    }
    if (x->plant == AF_CP_PLANT_SINK_PER_RANK) sub->softmax = x->c->softmax; /* the bug: each call keeps the sink */
    if (af_tensors_alloc(st, sub, msg, sizeof msg)) {
        snprintf(why, cap, "%s: %s", pre, msg);
        return -1;
    }
    if (fill_bias(x, run, sub, st)) {
        af_tensors_free(st);
        snprintf(why, cap, "%s: out of host memory for the call's bias", pre);
        return -1;
    }
    fill_inputs(x, run, sub, st);
    af_tensors_poison_outputs(st, sub);
    return 0;
}

static af_run_status inner_failed(const cp_ctx *x, const af_cp_run *run, af_run_status st, const char *inner_why,
                                  char *why, size_t cap) {
    char pre[96];
    prefix(pre, sizeof pre, x->c, run);
    snprintf(why, cap, "%s: %s", pre, inner_why);
    return st;
}

/* Forward of one run: its O and LSE rows kept in part_o / part_lse[ri]. */
static af_run_status forward_run(cp_ctx *x, af_backend *inner, const char *engine, int ri, const af_cp_run *run,
                                 af_run_info *info, char *why, size_t cap) {
    af_case sub;
    af_tensors st;
    int rc = make_sub(x, run, false, &sub, &st, why, cap);
    if (rc) return rc > 0 ? AF_RUN_OK : AF_RUN_ERROR;
    char iw[512] = "";
    af_run_info ii;
    memset(&ii, 0, sizeof ii);
    af_run_status s = inner->run(inner, &sub, engine, &st, &ii, iw, sizeof iw);
    snprintf(info->engine, sizeof info->engine, "%s", ii.engine);
    if (s != AF_RUN_OK) {
        af_tensors_free(&st);
        return inner_failed(x, run, s, iw, why, cap);
    }
    size_t rows = (size_t)x->B * sub.heads_q * sub.seqlen_q;
    x->part_o[ri] = floats(rows * x->Dv);
    x->part_lse[ri] = floats(rows);
    if (!x->part_o[ri] || !x->part_lse[ri]) {
        af_tensors_free(&st);
        snprintf(why, cap, "cp: out of host memory keeping partial outputs");
        return AF_RUN_RESOURCE;
    }
    /* A sequence with no keys in this call contributes nothing (LSE -inf, O 0), whatever
     * the kernel left in its rows: a CP merge must not read them (cuDNN leaves O and Stats
     * of such a sequence unwritten: docs/cudnn-findings.md F6, reported without CP). */
    for (int b = 0; b < x->B; b++)
        for (int h = 0; h < sub.heads_q; h++)
            for (int l = 0; l < sub.seqlens_q[b]; l++) {
                size_t r = ((size_t)b * sub.heads_q + h) * sub.seqlen_q + l;
                if (sub.seqlens_kv[b] == 0) {
                    x->part_lse[ri][r] = -INFINITY;
                    continue; /* part_o stays 0 (calloc) */
                }
                x->part_lse[ri][r] = (float)get(&st, AF_T_LSE, b, h, l, 0);
                for (int d = 0; d < x->Dv; d++) x->part_o[ri][r * x->Dv + d] = (float)get(&st, AF_T_O, b, h, l, d);
            }
    af_tensors_free(&st);
    return AF_RUN_OK;
}

/* Calls fn(x, run, ri, b, local head, local row, global row index) for every valid
 * query row of every forward run that ran. */
typedef void (*row_fn)(cp_ctx *x, int ri, size_t part_row, size_t global_row);
static void each_row(cp_ctx *x, const af_cp_plan *plan, row_fn fn) {
    for (int ri = 0; ri < plan->count; ri++) {
        const af_cp_run *run = &plan->runs[ri];
        af_case sub;
        char msg[600];
        if (!x->part_lse[ri] || af_cp_sub_case(x->c, run, false, &sub, msg, sizeof msg)) continue;
        for (int b = 0; b < x->B; b++)
            for (int h = 0; h < sub.heads_q; h++)
                for (int l = 0; l < sub.seqlens_q[b]; l++) {
                    int g = af_cp_local_to_global(run->q[b], run->nseg_q, l);
                    if (g >= 0) fn(x, ri, ((size_t)b * sub.heads_q + h) * sub.seqlen_q + l, qi(x, b, run->h0 + h, g));
                }
    }
}

static void merge_max(cp_ctx *x, int ri, size_t pr, size_t gr) {
    float l = x->part_lse[ri][pr];
    if (x->plant == AF_CP_PLANT_LSE_NO_MAX) {
        x->lse_max[gr] = 0.0f; /* the bug: no max is subtracted */
        return;
    }
    if (l > x->lse_max[gr]) x->lse_max[gr] = l;
}

static void merge_sum(cp_ctx *x, int ri, size_t pr, size_t gr) {
    float l = x->part_lse[ri][pr];
    if (l != -INFINITY) x->lse_sum[gr] += expf(l - x->lse_max[gr]);
}

static void merge_out(cp_ctx *x, int ri, size_t pr, size_t gr) {
    float l = x->part_lse[ri][pr];
    if (l == -INFINITY || !(x->lse[gr] > -INFINITY)) return;
    float w = expf(l - x->lse[gr]);
    for (int d = 0; d < x->Dv; d++) x->o[gr * x->Dv + d] += w * x->part_o[ri][pr * x->Dv + d];
}

/* Store the merged O and LSE into the global tensors (every row in memory). */
static void write_forward(cp_ctx *x) {
    for (int b = 0; b < x->B; b++) {
        int len = af_case_len_q(x->c, b);
        for (int h = 0; h < x->Hq; h++) {
            for (int s = 0; s < rows_in_memory(x->t, AF_T_LSE, len); s++)
                put(x->t, AF_T_LSE, b, h, s, 0, s < len ? x->lse[qi(x, b, h, s)] : -INFINITY);
            for (int s = 0; s < rows_in_memory(x->t, AF_T_O, len); s++)
                for (int d = 0; d < x->Dv; d++)
                    put(x->t, AF_T_O, b, h, s, d, s < len ? x->o[qi(x, b, h, s) * x->Dv + d] : 0.0f);
        }
    }
}

/* Does the run's rank own global key g of sequence b (dkdv_not_reduced keeps only those)? */
static bool owns_key(const cp_ctx *x, const af_cp_run *run, int b, int g) {
    if (run->ring_rank == -1) return true;
    if (run->ring_rank >= 0) return run->ring_rank == run->self_ring;
    int n2 = run->ring_chunks, n = n2 / 2;
    int size = x->c->layout == AF_LAYOUT_THD ? af_case_len_kv(x->c, b) / n2 : x->Skv / n2;
    int k = size > 0 ? g / size : 0;
    return (k < n ? k : n2 - 1 - k) == run->rank;
}

/* Backward of one run from the global O and LSE; its gradients summed into dq, dk, dv. */
static af_run_status backward_run(cp_ctx *x, af_backend *inner, const char *engine, const af_cp_run *run, char *why,
                                  size_t cap) {
    af_case sub;
    af_tensors st;
    int rc = make_sub(x, run, true, &sub, &st, why, cap);
    if (rc) return rc > 0 ? AF_RUN_OK : AF_RUN_ERROR;
    for (int b = 0; b < x->B; b++)
        for (int h = 0; h < sub.heads_q; h++) {
            int rows = rows_in_memory(&st, AF_T_O, sub.seqlens_q[b]);
            for (int l = 0; l < rows; l++) {
                int g = l < sub.seqlens_q[b] ? af_cp_local_to_global(run->q[b], run->nseg_q, l) : -1;
                put(&st, AF_T_LSE, b, h, l, 0, g >= 0 ? (float)get(x->t, AF_T_LSE, b, run->h0 + h, g, 0) : -INFINITY);
                for (int d = 0; d < x->Dv; d++)
                    put(&st, AF_T_O, b, h, l, d, g >= 0 ? (float)get(x->t, AF_T_O, b, run->h0 + h, g, d) : 0.0f);
            }
        }
    char iw[512] = "";
    af_run_info ii;
    memset(&ii, 0, sizeof ii);
    af_run_status s = inner->backward_given(inner, &sub, engine, &st, &ii, iw, sizeof iw);
    if (s != AF_RUN_OK) {
        af_tensors_free(&st);
        return inner_failed(x, run, s, iw, why, cap);
    }
    int hk0 = run->hk0;
    /* A sequence with no keys in this call adds nothing to dQ, one with no queries nothing
     * to dK, dV, whatever the kernel left there (cuDNN leaves them unwritten). */
    for (int b = 0; b < x->B; b++) {
        for (int h = 0; h < sub.heads_q && sub.seqlens_kv[b] > 0; h++)
            for (int l = 0; l < sub.seqlens_q[b]; l++) {
                int g = af_cp_local_to_global(run->q[b], run->nseg_q, l);
                if (g < 0) continue;
                float *acc = &x->dq[qi(x, b, run->h0 + h, g) * x->Dqk];
                for (int d = 0; d < x->Dqk; d++) acc[d] += (float)get(&st, AF_T_DQ, b, h, l, d);
            }
        for (int h = 0; h < sub.heads_kv && sub.seqlens_q[b] > 0; h++)
            for (int l = 0; l < sub.seqlens_kv[b]; l++) {
                int g = af_cp_local_to_global(run->kv[b], run->nseg_kv, l);
                if (g < 0) continue;
                if (x->plant == AF_CP_PLANT_DKDV_NOT_REDUCED && !owns_key(x, run, b, g)) continue;
                float *ak = &x->dk[ki(x, b, hk0 + h, g) * x->Dqk], *av = &x->dv[ki(x, b, hk0 + h, g) * x->Dv];
                for (int d = 0; d < x->Dqk; d++) ak[d] += (float)get(&st, AF_T_DK, b, h, l, d);
                for (int d = 0; d < x->Dv; d++) av[d] += (float)get(&st, AF_T_DV, b, h, l, d);
            }
    }
    af_tensors_free(&st);
    return AF_RUN_OK;
}

static void write_grad(cp_ctx *x, af_tensor_id tid, const float *acc, int H, int S, int D, bool kv) {
    for (int b = 0; b < x->B; b++) {
        int len = kv ? af_case_len_kv(x->c, b) : af_case_len_q(x->c, b);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < rows_in_memory(x->t, tid, len); s++)
                for (int d = 0; d < D; d++)
                    put(x->t, tid, b, h, s, d, s < len ? acc[(((size_t)b * H + h) * S + s) * D + d] : 0.0f);
    }
}

/* dsink_h = -sum over sequences, then rows (ascending) of exp(a_h - lse_i) D_i, D_i = dO_i .
 * O_i from the global O and LSE as stored (fp32); a row that sees no key has no share. */
static void sink_gradient(const cp_ctx *x, float *dsink /* (Hq) */) {
    for (int h = 0; h < x->Hq; h++) {
        float a = af_feature_sink(x->c, h), acc = 0.0f;
        for (int b = 0; b < x->B; b++)
            for (int s = 0; s < af_case_len_q(x->c, b); s++) {
                float lse = (float)get(x->t, AF_T_LSE, b, h, s, 0), d = 0.0f;
                if (!(lse > -INFINITY) || x->lse_sum[qi(x, b, h, s)] == 0.0f) continue;
                for (int k = 0; k < x->Dv; k++)
                    d += x->dout[qi(x, b, h, s) * x->Dv + k] * (float)get(x->t, AF_T_O, b, h, s, k);
                acc += expf(a - lse) * d;
            }
        dsink[h] = -acc;
    }
}

af_run_status af_cp_supports(af_backend *inner, af_cp_plant plant, const af_case *c, char *why, size_t cap) {
    af_cp_plan plan;
    af_run_status st = af_cp_plan_make(c, plant, &plan, why, cap);
    if (st != AF_RUN_OK) return st;
    if (c->backward && !inner->backward_given) {
        snprintf(why, cap,
                 "cp %s backward over %s: the backend offers no backward from given O and LSE (backward_given), "
                 "which the ranks' backward needs",
                 af_cp_comm_name(c->cp_comm), inner->name);
        af_cp_plan_free(&plan);
        return AF_RUN_DECLINED;
    }
    for (int ri = 0; ri < plan.count && st == AF_RUN_OK; ri++) {
        const af_cp_run *run = &plan.runs[ri];
        af_case sub;
        char msg[600] = "", pre[96];
        prefix(pre, sizeof pre, c, run);
        int rc = af_cp_sub_case(c, run, c->backward, &sub, msg, sizeof msg);
        if (rc > 0) continue;
        if (rc < 0) {
            snprintf(why, cap, "%s: %s", pre, msg);
            st = AF_RUN_DECLINED;
        } else if ((st = inner->supports(inner, &sub, msg, sizeof msg)) != AF_RUN_OK) {
            snprintf(why, cap, "%s: %s", pre, msg);
        }
    }
    af_cp_plan_free(&plan);
    return st;
}

af_run_status af_cp_execute(af_backend *inner, af_cp_plant plant, const af_case *c, const char *engine, af_tensors *t,
                            af_run_info *info, char *why, size_t cap) {
    double t0 = af_clock_mono();
    af_cp_plan plan;
    af_run_status st = af_cp_supports(inner, plant, c, why, cap);
    if (st != AF_RUN_OK) return st;
    if ((st = af_cp_plan_make(c, plant, &plan, why, cap)) != AF_RUN_OK) return st;
    cp_ctx x;
    if (ctx_init(&x, c, t, plant, plan.count)) {
        ctx_free(&x, plan.count);
        af_cp_plan_free(&plan);
        snprintf(why, cap, "cp: out of host memory for the global tensors");
        return AF_RUN_RESOURCE;
    }
    for (int ri = 0; ri < plan.count && st == AF_RUN_OK; ri++)
        st = forward_run(&x, inner, engine, ri, &plan.runs[ri], info, why, cap);
    if (st == AF_RUN_OK) {
        each_row(&x, &plan, merge_max);
        each_row(&x, &plan, merge_sum);
        size_t nq = (size_t)x.B * x.Hq * x.Sq;
        for (size_t i = 0; x.sink && i < nq; i++) x.lse_sum[i] += expf(x.sink[i / x.Sq % x.Hq] - x.lse_max[i]);
        for (size_t i = 0; i < nq; i++) x.lse[i] = x.lse_sum[i] > 0 ? x.lse_max[i] + logf(x.lse_sum[i]) : -INFINITY;
        each_row(&x, &plan, merge_out);
        write_forward(&x);
    }
    if (st == AF_RUN_OK && c->backward) {
        for (int ri = 0; ri < plan.count && st == AF_RUN_OK; ri++)
            st = backward_run(&x, inner, engine, &plan.runs[ri], why, cap);
        if (st == AF_RUN_OK) {
            write_grad(&x, AF_T_DQ, x.dq, x.Hq, x.Sq, x.Dqk, false);
            write_grad(&x, AF_T_DK, x.dk, x.Hkv, x.Skv, x.Dqk, true);
            write_grad(&x, AF_T_DV, x.dv, x.Hkv, x.Skv, x.Dv, true);
            if (t->dsink) sink_gradient(&x, t->dsink);
        }
    }
    ctx_free(&x, plan.count);
    af_cp_plan_free(&plan);
    info->seconds = af_clock_mono() - t0;
    return st;
}
