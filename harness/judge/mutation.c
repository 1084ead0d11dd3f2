/* mutation.c — the input-mutation check (judge/mutation.h). */
#include "judge/mutation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int af_input_snapshot_take(af_input_snapshot *s, const af_case *c, const af_tensors *t) {
    (void)c;
    memset(s, 0, sizeof *s);
    const uint8_t *mx[3] = {t->mx_scale_q, t->mx_scale_k, t->mx_scale_v};
    const af_tensor_id ids[3] = {AF_T_Q, AF_T_K, AF_T_V};
    for (int k = 0; k < 3; k++) {
        if (!mx[k]) continue;
        s->mx_bytes[k] = af_mx_scale_bytes(t, ids[k]);
        s->mx_scale[k] = malloc(s->mx_bytes[k] ? s->mx_bytes[k] : 1);
        if (!s->mx_scale[k]) {
            af_input_snapshot_free(s);
            return -1;
        }
        memcpy(s->mx_scale[k], mx[k], s->mx_bytes[k]);
    }
    return 0;
}

void af_input_snapshot_restore(const af_input_snapshot *s, af_tensors *t) {
    uint8_t *mx[3] = {t->mx_scale_q, t->mx_scale_k, t->mx_scale_v};
    for (int k = 0; k < 3; k++)
        if (s->mx_scale[k] && mx[k] && memcmp(mx[k], s->mx_scale[k], s->mx_bytes[k]))
            memcpy(mx[k], s->mx_scale[k], s->mx_bytes[k]);
}

void af_input_snapshot_free(af_input_snapshot *s) {
    for (int k = 0; k < 3; k++) free(s->mx_scale[k]);
    memset(s, 0, sizeof *s);
}

/* Index of the first byte where a and b differ, or n when they are equal. Whole blocks
 * first (memcmp is the fast path: almost every run writes nothing). */
static size_t first_difference(const uint8_t *a, const uint8_t *b, size_t n) {
    enum { BLOCK = 4096 };
    size_t at = 0;
    while (at < n) {
        size_t len = n - at < BLOCK ? n - at : BLOCK;
        if (memcmp(a + at, b + at, len) != 0) {
            while (a[at] == b[at]) at++;
            return at;
        }
        at += len;
    }
    return n;
}

/* Has v an input_mutation finding on tensor already (a repeat writing it again)? */
static bool reported(const af_verdict *v, af_tensor_id tensor) {
    int n = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < n; i++)
        if (v->findings[i].kind == AF_V_INPUT_MUTATION && v->findings[i].tensor == tensor) return true;
    return false;
}

static int add(af_verdict *v, af_finding *f, int repeat) {
    if (reported(v, f->tensor)) return 0;
    f->repeat = repeat;
    if (repeat > 0) {
        char d[sizeof f->detail];
        snprintf(d, sizeof d, "run %d of the unperturbed case: %s", repeat, f->detail);
        snprintf(f->detail, sizeof f->detail, "%s", d);
    }
    af_verdict_add(v, f);
    return 1;
}

/* The logical element (tensor, b, h, s, d) of an input tensor living at element e of
 * buffer bid; false when e is none of them (a stride or thd gap). Only called for a
 * changed buffer, so a scan of its elements is fine. */
static bool element_at(const af_case *c, const af_tensors *t, af_buffer_id bid, int64_t e, af_tensor_id *tid,
                       int coord[4]) {
    const af_tensor_id inputs[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    for (int i = 0; i < 4; i++) {
        const af_tensor_view *w = &t->plan.view[inputs[i]];
        if (w->buffer != bid || (inputs[i] == AF_T_DO && !c->backward)) continue;
        for (int b = 0; b < w->B; b++) {
            int rows = af_tensor_rows_in_buffer(c, w, inputs[i], b);
            for (int h = 0; h < w->H; h++)
                for (int s = 0; s < rows; s++)
                    for (int d = 0; d < w->D; d++)
                        if (af_layout_offset(&t->plan, inputs[i], b, h, s, d) == e) {
                            *tid = inputs[i];
                            coord[0] = b, coord[1] = h, coord[2] = s, coord[3] = d;
                            return true;
                        }
        }
    }
    return false;
}

/* The first input tensor packed into buffer bid (what a gap write is filed under). */
static af_tensor_id first_input_of(const af_tensors *t, af_buffer_id bid) {
    const af_tensor_id inputs[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    for (int i = 0; i < 4; i++)
        if (t->plan.view[inputs[i]].buffer == bid) return inputs[i];
    return AF_T_NONE;
}

static int check_buffer(const af_case *c, const af_tensors *before, const af_tensors *run, af_buffer_id bid, int repeat,
                        af_verdict *v) {
    if (!before->buf[bid] || !run->buf[bid] || before->bytes[bid] != run->bytes[bid]) return 0;
    size_t k = first_difference(before->buf[bid], run->buf[bid], run->bytes[bid]);
    if (k == run->bytes[bid]) return 0;
    af_storage st = run->plan.buffer_storage[bid];
    int64_t e = (int64_t)(k / (size_t)af_storage_bytes(st));
    double was = af_storage_load(st, before->buf[bid], e), now = af_storage_load(st, run->buf[bid], e);
    af_tensor_id tid;
    int at[4];
    char msg[256];
    af_finding f;
    if (element_at(c, run, bid, e, &tid, at)) {
        snprintf(msg, sizeof msg,
                 "the run wrote its input %s: element %lld of buffer %s (b%d h%d s%d d%d) was %.9g, now %.9g",
                 af_tensor_name(tid), (long long)e, af_buffer_name(bid), at[0], at[1], at[2], at[3], was, now);
        f = af_finding_at(AF_V_INPUT_MUTATION, tid, at[0], at[1], at[2], at[3], msg);
    } else {
        tid = first_input_of(run, bid);
        snprintf(msg, sizeof msg,
                 "the run wrote input buffer %s outside its tensors' elements (a stride or thd gap): element %lld",
                 af_buffer_name(bid), (long long)e);
        f = af_finding_at(AF_V_INPUT_MUTATION, tid, -1, -1, -1, -1, msg);
    }
    f.kernel_value = now;
    f.baseline_value = was;
    f.error = isnan(now - was) ? INFINITY : fabs(now - was);
    return add(v, &f, repeat);
}

/* An array of n elements of elem bytes each: a finding naming tensor and the first
 * changed element when a and b differ. */
static int check_array(const void *before, const void *run, size_t n, size_t elem, af_tensor_id tensor,
                       const char *what, int repeat, af_verdict *v) {
    if (!before || !run || n == 0) return 0;
    size_t k = first_difference(before, run, n * elem);
    if (k == n * elem) return 0;
    char msg[256];
    snprintf(msg, sizeof msg, "the run wrote its input %s: element %zu changed", what, k / elem);
    af_finding f = af_finding_at(AF_V_INPUT_MUTATION, tensor, -1, -1, -1, -1, msg);
    return add(v, &f, repeat);
}

/* (b, h, s, d) of element index of the dense logical (B, H, S, D) tensor (Q, K, V, dO;
 * S the maximum length), row-major: how af_input_write indexes them. */
static void logical_coords(const af_case *c, af_tensor_id tensor, long long index, int at[4]) {
    bool kv = tensor == AF_T_K || tensor == AF_T_V;
    if (tensor != AF_T_Q && tensor != AF_T_DO && !kv) return;
    long long H = af_tensor_heads(c, tensor), S = kv ? c->seqlen_kv : c->seqlen_q;
    long long D = tensor == AF_T_Q || tensor == AF_T_K ? c->head_dim_qk : c->head_dim_v;
    if (index >= (long long)c->batch * H * S * D) return;
    at[3] = (int)(index % D);
    at[2] = (int)(index / D % S);
    at[1] = (int)(index / D / S % H);
    at[0] = (int)(index / D / S / H);
}

int af_check_input_mutation(const af_case *c, const af_tensors *before, const af_input_snapshot *snap,
                            const af_tensors *run, const af_run_info *info, int repeat, af_verdict *v) {
    int added = 0;
    const af_buffer_id inputs[4] = {AF_BUF_Q, AF_BUF_K, AF_BUF_V, AF_BUF_DO};
    for (int i = 0; i < 4; i++) added += check_buffer(c, before, run, inputs[i], repeat, v);
    const af_layout_plan *pb = &before->plan, *pr = &run->plan;
    if (pb->page_size > 0)
        added += check_array(pb->page_table, pr->page_table, (size_t)c->batch * (size_t)pb->pages_per_seq,
                             sizeof(int32_t), AF_T_PAGE_TABLE, "page_table", repeat, v);
    if (c->layout == AF_LAYOUT_THD) {
        added += check_array(pb->token_start_q, pr->token_start_q, (size_t)c->batch + 1, sizeof(int64_t),
                             AF_T_SEQ_OFFSETS, "seq_offsets (queries)", repeat, v);
        added += check_array(pb->token_start_kv, pr->token_start_kv, (size_t)c->batch + 1, sizeof(int64_t),
                             AF_T_SEQ_OFFSETS, "seq_offsets (keys)", repeat, v);
    }
    /* the fp8 per-tensor scales, in this order (tensors.h): all are the kernel's inputs */
    const float sb[9] = {before->descale_q,  before->descale_k,  before->descale_v,
                         before->descale_do, before->descale_o,  before->descale_dq,
                         before->descale_dk, before->descale_dv, before->descale_dp};
    const float sr[9] = {run->descale_q,  run->descale_k,  run->descale_v,  run->descale_do, run->descale_o,
                         run->descale_dq, run->descale_dk, run->descale_dv, run->descale_dp};
    added += check_array(sb, sr, 9, sizeof(float), AF_T_DESCALE, "descale (q k v do o dq dk dv dp)", repeat, v);
    if (snap) {
        const uint8_t *mx[3] = {run->mx_scale_q, run->mx_scale_k, run->mx_scale_v};
        const char *names[3] = {"mx_scale of Q", "mx_scale of K", "mx_scale of V"};
        for (int k = 0; k < 3; k++)
            if (snap->mx_scale[k] && mx[k])
                added +=
                    check_array(snap->mx_scale[k], mx[k], snap->mx_bytes[k], 1, AF_T_MX_SCALE, names[k], repeat, v);
    }
    int nw = info ? (info->n_input_writes < AF_MAX_INPUT_WRITES ? info->n_input_writes : AF_MAX_INPUT_WRITES) : 0;
    for (int i = 0; i < nw; i++) {
        const af_input_write *w = &info->input_writes[i];
        char msg[256];
        if (w->index >= 0)
            snprintf(msg, sizeof msg, "the run wrote its input %s (%s): element %lld changed",
                     af_tensor_name(w->tensor), w->where, w->index);
        else
            snprintf(msg, sizeof msg, "the run wrote its input %s (%s)", af_tensor_name(w->tensor), w->where);
        int at[4] = {-1, -1, -1, -1};
        if (w->index >= 0) logical_coords(c, w->tensor, w->index, at);
        af_finding f = af_finding_at(AF_V_INPUT_MUTATION, w->tensor, at[0], at[1], at[2], at[3], msg);
        added += add(v, &f, repeat);
    }
    return added;
}
