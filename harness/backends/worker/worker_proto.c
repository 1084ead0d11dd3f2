/* backends/worker/worker_proto.c — JSON messages of the worker protocol
 * (backends/worker/worker_proto.h, docs/worker-protocol.md). */
#include "backends/worker/worker_proto.h"

#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "model/features.h"
#include "model/layout.h"
#include "util/json.h"

static const char *const tensor_names[AF_T_COUNT] = {"q", "k", "v", "o", "lse", "do", "dq", "dk", "dv"};
static const char *const storage_names[] = {"f16", "bf16", "e4m3", "f32", "e5m2"}; /* af_storage order */

_Static_assert((int)AF_BUF_COUNT == (int)AF_T_COUNT,
               "one buffer slot per tensor id (packed tensors leave theirs unused)");

const char *af_worker_tensor_name(int i) { return i >= 0 && i < AF_T_COUNT ? tensor_names[i] : "?"; }

static json_t *int_array(const int32_t *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

int af_worker_case_features(const af_case *c, const char *out[], int cap) {
    int n = 0;
#define ADD(cond, name)                                                                                                \
    do {                                                                                                               \
        if ((cond) && n < cap) out[n++] = (name);                                                                      \
    } while (0)
    bool padded = false;
    for (int b = 0; b < c->batch; b++)
        if (af_case_len_q(c, b) != c->seqlen_q || af_case_len_kv(c, b) != c->seqlen_kv) padded = true;
    ADD(c->backward, "backward");
    ADD(c->heads_q != c->heads_kv, "gqa");
    ADD(c->head_dim_qk != c->head_dim_v, "head_dim_v");
    ADD(c->mask == AF_MASK_CAUSAL, "causal");
    ADD(c->window_left >= 0 || c->window_right >= 0, "window");
    ADD(c->align == AF_ALIGN_BOTTOM_RIGHT && (c->mask == AF_MASK_CAUSAL || c->window_left >= 0 || c->window_right >= 0),
        "bottom_right");
    ADD(padded, "padded");
    ADD(c->layout == AF_LAYOUT_THD, "ragged");
    ADD(c->page_size > 0, "paged");
    ADD(c->page_hnd, "paged_hnd");        /* page_layout = hnd: the descriptors' strides say it */
    ADD(c->page_kv_joint, "paged_joint"); /* page_kv = joint: V's buffer and offset say it */
    ADD(c->packing != AF_PACK_SEPARATE, "packed");
    ADD(c->stride_gap > 0 || c->gap_h > 0 || c->gap_s > 0 || c->gap_b > 0, "stride_gap"); /* any gap */
    ADD(c->cp_size > 1, "cp");
    ADD(c->dropout_p != 0.0, "dropout");
    ADD(c->softcap > 0, "softcap");
    ADD(c->score_mod != AF_SCORE_MOD_NONE, "score_mod");
    ADD(c->softmax != AF_SOFTMAX_VANILLA, "sinks");
#undef ADD
    return n;
}

json_t *af_worker_problem_json(const af_case *c) {
    json_t *p = json_object();
    int32_t lq[AF_MAX_BATCH], lkv[AF_MAX_BATCH];
    bool padded = false;
    for (int b = 0; b < c->batch && b < AF_MAX_BATCH; b++) {
        lq[b] = af_case_len_q(c, b);
        lkv[b] = af_case_len_kv(c, b);
        if (lq[b] != c->seqlen_q || lkv[b] != c->seqlen_kv) padded = true;
    }
    json_object_set_new(p, "dtype", json_string(af_dtype_name(c->dtype)));
    json_object_set_new(p, "batch", json_integer(c->batch));
    json_object_set_new(p, "heads_q", json_integer(c->heads_q));
    json_object_set_new(p, "heads_kv", json_integer(c->heads_kv));
    json_object_set_new(p, "seqlen_q", json_integer(c->seqlen_q));
    json_object_set_new(p, "seqlen_kv", json_integer(c->seqlen_kv));
    json_object_set_new(p, "head_dim_qk", json_integer(c->head_dim_qk));
    json_object_set_new(p, "head_dim_v", json_integer(c->head_dim_v));
    json_object_set_new(p, "seqlens_q", int_array(lq, c->batch));
    json_object_set_new(p, "seqlens_kv", int_array(lkv, c->batch));
    json_object_set_new(p, "mask", json_string(c->mask == AF_MASK_CAUSAL ? "causal" : "none"));
    json_object_set_new(p, "align", json_string(c->align == AF_ALIGN_BOTTOM_RIGHT ? "bottom_right" : "top_left"));
    json_object_set_new(p, "window_left", json_integer(c->window_left));
    json_object_set_new(p, "window_right", json_integer(c->window_right));
    /* fp32 as the kernel gets it; a double holds it exactly and jansson prints %.17g */
    json_object_set_new(p, "scale", json_real((double)af_case_scale(c)));
    json_object_set_new(p, "backward", json_boolean(c->backward));
    json_object_set_new(p, "padded", json_boolean(padded));
    json_object_set_new(p, "ragged", json_boolean(c->layout == AF_LAYOUT_THD));
    json_object_set_new(p, "paged", json_boolean(c->page_size > 0));
    json_object_set_new(p, "layout", json_string(af_layout_name(c->layout)));
    json_object_set_new(p, "packing", json_string(af_packing_name(c->packing)));
    json_object_set_new(p, "cp_size", json_integer(c->cp_size));
    /* dropout (plugin.h, ABI 3): p, and the Philox seed and offset as decimal strings
     * (64-bit unsigned: beyond a JSON number's exact range) */
    char seed_text[24], offset_text[24];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)c->dropout_seed);
    snprintf(offset_text, sizeof offset_text, "%llu", (unsigned long long)c->dropout_offset);
    json_object_set_new(p, "dropout_p", json_real(c->dropout_p));
    json_object_set_new(p, "dropout_seed", json_string(seed_text));
    json_object_set_new(p, "dropout_offset", json_string(offset_text));
    /* score features: the soft cap c (scores s -> c tanh(s / c); 0 = none), and the sinks:
     * their kind and one logit per query head in the softmax's denominator (off_by_one: 0) */
    json_object_set_new(p, "softcap", json_real(c->softcap));
    /* a score_mod by name (none | squared | trig | trig2; oracle/feature_spec.h): a worker
     * maps the name to its own function, never code from the case */
    json_object_set_new(p, "score_mod", json_string(af_score_mod_name(c->score_mod)));
    json_object_set_new(p, "sinks",
                        json_string(c->softmax == AF_SOFTMAX_LEARNABLE    ? "learnable"
                                    : c->softmax == AF_SOFTMAX_OFF_BY_ONE ? "off_by_one"
                                                                          : "none"));
    if (c->softmax != AF_SOFTMAX_VANILLA) {
        json_t *sink = json_array();
        for (int h = 0; h < c->heads_q; h++) json_array_append_new(sink, json_real((double)af_feature_sink(c, h)));
        json_object_set_new(p, "sink", sink);
    }
    const char *feat[32];
    int nf = af_worker_case_features(c, feat, 32);
    json_t *fa = json_array();
    for (int i = 0; i < nf; i++) json_array_append_new(fa, json_string(feat[i]));
    json_object_set_new(p, "features", fa);
    char text[8192];
    size_t need = af_case_print(c, text, sizeof text);
    if (need < sizeof text) json_object_set_new(p, "case", af_json_text(text));
    return p;
}

json_t *af_worker_tensors_json(const af_case *c, const af_tensors *t, const af_worker_slots *sl) {
    json_t *all = json_object();
    const af_layout_plan *plan = &t->plan;
    float descale[AF_T_COUNT];
    for (int i = 0; i < AF_T_COUNT; i++) descale[i] = 1.0f;
    if (af_dtype_is_fp8_tensor(c->dtype)) {
        descale[AF_T_Q] = t->descale_q;
        descale[AF_T_K] = t->descale_k;
        descale[AF_T_V] = t->descale_v;
        descale[AF_T_DO] = t->descale_do;
        descale[AF_T_O] = t->descale_o;
        descale[AF_T_DQ] = t->descale_dq;
        descale[AF_T_DK] = t->descale_dk;
        descale[AF_T_DV] = t->descale_dv;
    }
    for (int i = 0; i < AF_T_COUNT; i++) {
        const af_tensor_view *v = &plan->view[i];
        if (!t->alloc[v->buffer] || plan->buffer_elems[v->buffer] <= 0) continue; /* absent */
        json_t *d = json_object();
        int elem = af_storage_bytes(v->storage);
        json_object_set_new(d, "buffer", json_string(tensor_names[v->buffer]));
        json_object_set_new(d, "storage", json_string(storage_names[v->storage]));
        json_t *shape = json_array();
        json_array_append_new(shape, json_integer(v->B));
        json_array_append_new(shape, json_integer(v->H));
        json_array_append_new(shape, json_integer(v->S));
        json_array_append_new(shape, json_integer(v->D));
        json_object_set_new(d, "shape", shape);
        json_t *strides = json_array();
        json_array_append_new(strides, json_integer(v->stride_b));
        json_array_append_new(strides, json_integer(v->stride_h));
        json_array_append_new(strides, json_integer(v->stride_s));
        json_array_append_new(strides, json_integer(1));
        json_object_set_new(d, "strides", strides);
        /* bytes from the buffer's first guard byte to element (0,0,0,0) */
        json_object_set_new(d, "offset", json_integer(AF_GUARD_BYTES + v->base * elem));
        json_object_set_new(d, "buffer_elems", json_integer(plan->buffer_elems[v->buffer]));
        json_object_set_new(d, "descale", json_real(descale[i]));
        if (v->ragged) {
            bool kv = af_tensor_is_kv(i);
            const int64_t *ts = kv ? plan->token_start_kv : plan->token_start_q;
            json_t *a = json_array();
            for (int b = 0; b <= c->batch; b++) json_array_append_new(a, json_integer(ts[b]));
            json_object_set_new(d, "token_start", a);
        }
        if (v->paged) {
            json_object_set_new(d, "page_table", int_array(plan->page_table, c->batch * plan->pages_per_seq));
            json_object_set_new(d, "page_size", json_integer(plan->page_size));
            json_object_set_new(d, "pages_per_seq", json_integer(plan->pages_per_seq));
        }
        int mx = i == AF_T_Q ? 0 : i == AF_T_K ? 1 : i == AF_T_V ? 2 : -1;
        if (mx >= 0 && sl->mx_bytes[mx]) {
            json_t *m = json_object();
            json_object_set_new(m, "offset", json_integer((json_int_t)sl->mx_offset[mx]));
            json_object_set_new(m, "bytes", json_integer((json_int_t)sl->mx_bytes[mx]));
            json_t *ms = json_array();
            int H = mx == 0 ? c->heads_q : c->heads_kv;
            int S = mx == 0 ? c->seqlen_q : c->seqlen_kv;
            int D = mx == 2 ? c->head_dim_v : c->head_dim_qk;
            json_array_append_new(ms, json_integer(c->batch));
            json_array_append_new(ms, json_integer(H));
            json_array_append_new(ms, json_integer(mx == 2 ? (S + 31) / 32 : S));
            json_array_append_new(ms, json_integer(mx == 2 ? D : (D + 31) / 32));
            json_object_set_new(m, "shape", ms);
            json_object_set_new(d, "mx_scale", m);
        }
        json_object_set_new(all, tensor_names[i], d);
    }
    return all;
}

static const struct {
    const char *name;
    af_worker_reply_type type;
} reply_types[] = {
    {"ok", AF_WR_OK},
    {"decline", AF_WR_DECLINE},
    {"error", AF_WR_ERROR},
    {"resource", AF_WR_RESOURCE},
    {"engines", AF_WR_ENGINES},
    {"hello", AF_WR_HELLO},
    {"unavailable", AF_WR_UNAVAILABLE},
};

int af_worker_reply_parse(const char *line, long long id, af_worker_reply *r, char *why, size_t cap) {
    memset(r, 0, sizeof *r);
    char sub[256];
    json_t *o = af_json_parse_object(line, "reply", sub, sizeof sub);
    if (!o) {
        snprintf(why, cap, "malformed reply (%s): '%.120s'", sub, line);
        return -1;
    }
    char type[32] = "";
    if (af_json_get_text(o, "type", type, sizeof type)) {
        snprintf(why, cap, "reply without a \"type\": '%.120s'", line);
        json_decref(o);
        return -1;
    }
    int found = -1;
    for (size_t k = 0; k < sizeof reply_types / sizeof reply_types[0]; k++)
        if (!strcmp(type, reply_types[k].name)) found = (int)k;
    if (found < 0) {
        snprintf(why, cap, "reply of unknown type '%s' (ok, decline, error, resource, engines, hello, unavailable)",
                 type);
        json_decref(o);
        return -1;
    }
    r->type = reply_types[found].type;
    json_t *jid = json_object_get(o, "id");
    /* the first reply (hello, or unavailable instead of it) answers no numbered request */
    bool first = r->type == AF_WR_HELLO || (r->type == AF_WR_UNAVAILABLE && id == 0);
    if (!first && (!json_is_integer(jid) || json_integer_value(jid) != id)) {
        snprintf(why, cap, "reply '%s' does not carry the request's id %lld: '%.120s'", type, id, line);
        json_decref(o);
        return -1;
    }
    const char *key = r->type == AF_WR_DECLINE || r->type == AF_WR_UNAVAILABLE ? "reason" : "message";
    if (af_json_get_text(o, key, r->text, sizeof r->text) &&
        (r->type == AF_WR_DECLINE || r->type == AF_WR_ERROR || r->type == AF_WR_RESOURCE ||
         r->type == AF_WR_UNAVAILABLE))
        snprintf(r->text, sizeof r->text, "(the worker gave no %s)", key);
    const char *where = json_string_value(json_object_get(o, "where"));
    r->adapter = r->type == AF_WR_ERROR && where && !strcmp(where, "adapter");
    af_json_get_text(o, "engine", r->engine, sizeof r->engine);
    json_t *passes = json_object_get(o, "engines");
    r->engine_forward[0] = r->engine_backward[0] = 0;
    if (json_is_object(passes)) {
        af_json_get_text(passes, "forward", r->engine_forward, sizeof r->engine_forward);
        af_json_get_text(passes, "backward", r->engine_backward, sizeof r->engine_backward);
    }
    r->nondeterministic = json_is_true(json_object_get(o, "nondeterministic"));
    r->body = o;
    return 0;
}

void af_worker_reply_free(af_worker_reply *r) {
    if (r->body) json_decref(r->body);
    r->body = NULL;
}

int af_worker_inputs_written(const af_worker_reply *r, af_run_info *info, char *why, size_t cap) {
    json_t *list = r->body ? json_object_get(r->body, "inputs_written") : NULL;
    if (!list) return 0;
    if (!json_is_array(list)) {
        snprintf(why, cap, "reply 'ok': \"inputs_written\" is not a list");
        return -1;
    }
    static const af_tensor_id inputs[] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO, AF_T_O, AF_T_LSE};
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *e = json_array_get(list, i), *jindex = json_object_get(e, "index");
        const char *name = json_string_value(json_object_get(e, "tensor"));
        int found = -1;
        for (size_t k = 0; name && k < sizeof inputs / sizeof inputs[0]; k++)
            if (!strcmp(name, tensor_names[inputs[k]])) found = (int)k;
        if (found < 0 || (jindex && !json_is_integer(jindex))) {
            snprintf(why, cap,
                     "reply 'ok': \"inputs_written\" entry %zu is not {\"tensor\": q|k|v|do|o|lse, \"index\": N}", i);
            return -1;
        }
        long long index = jindex ? (long long)json_integer_value(jindex) : -1;
        af_run_info_input_write(info, inputs[found], index < 0 ? -1 : index, "the worker's kernel argument");
    }
    return 0;
}
