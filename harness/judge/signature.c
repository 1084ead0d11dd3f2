/* signature.c — the number-free identity of a finding: kind | backend | tensor | class. */
#include "judge/signature.h"

#include "util/hash.h"
#include "util/strbuf.h"

#include <stdio.h>
#include <string.h>

/* Head dims that are multiples of 16 suit every tensor-core tiling; multiples of 8 suit
 * 16-byte vector loads only; others need a scalar tail. Class = worst of d_qk and d_v. */
static const char *head_dim_alignment(int dqk, int dv) {
    if (dqk % 8 || dv % 8) return ":odd";
    if (dqk % 16 || dv % 16) return ":m8";
    return "";
}

static const char *head_dim_size(int d) {
    if (d <= 64) return "d<=64";
    if (d <= 128) return "d<=128";
    if (d <= 256) return "d<=256";
    return "d>256";
}

size_t af_config_class(const af_case *c, char *buf, size_t cap) {
    af_strbuf s = {buf, cap, 0};
    if (cap) buf[0] = 0;
    bool window_left = c->window_left >= 0, window_right = c->window_right >= 0;
    bool aligned_matters = c->mask == AF_MASK_CAUSAL || window_left || window_right;
    const char *align = c->align == AF_ALIGN_BOTTOM_RIGHT ? "br" : "tl";

    af_strbuf_printf(&s, "%s", af_dtype_name(c->dtype));
    if (c->out_dtype != AF_OUT_SAME) af_strbuf_printf(&s, "->%s", af_out_dtype_name(c->out_dtype));
    if (c->kv_dtype != AF_KV_SAME) af_strbuf_printf(&s, ",kv=%s", af_kv_dtype_name(c->kv_dtype));
    if (c->descale_head) af_strbuf_printf(&s, ",descale=head");
    if (c->mask == AF_MASK_CAUSAL)
        af_strbuf_printf(&s, ",causal-%s", align);
    else if (aligned_matters)
        af_strbuf_printf(&s, ",none-%s", align);
    else
        af_strbuf_printf(&s, ",none");
    if (window_left || window_right)
        af_strbuf_printf(&s, ",win(%s%s)", window_left ? "L" : "", window_right ? "R" : "");
    else
        af_strbuf_printf(&s, ",nowin");
    if (c->layout == AF_LAYOUT_THD)
        af_strbuf_printf(&s, ",pad:thd");
    else if (c->has_seqlens)
        af_strbuf_printf(&s, ",pad:padding");
    else
        af_strbuf_printf(&s, ",pad:none");
    if (c->heads_q == c->heads_kv)
        af_strbuf_printf(&s, ",mha");
    else if (c->heads_kv == 1)
        af_strbuf_printf(&s, ",mqa");
    else
        af_strbuf_printf(&s, ",gqa");
    if (af_case_heads_v(c) != c->heads_kv) af_strbuf_printf(&s, "+hv"); /* V's own head count */
    int dmax = c->head_dim_qk > c->head_dim_v ? c->head_dim_qk : c->head_dim_v;
    af_strbuf_printf(&s, ",%s%s", head_dim_size(dmax), head_dim_alignment(c->head_dim_qk, c->head_dim_v));
    if (c->head_dim_qk != c->head_dim_v) af_strbuf_printf(&s, ",dv%sdqk", c->head_dim_v < c->head_dim_qk ? "<" : ">");
    af_strbuf_printf(&s, ",%s", af_layout_name(c->layout));
    if (c->packing != AF_PACK_SEPARATE) af_strbuf_printf(&s, "+%s", af_packing_name(c->packing));
    if (c->layout_kv != AF_SIDE_SAME) af_strbuf_printf(&s, "+kv:%s", af_layout_name(af_case_layout_kv(c)));
    if (c->layout_do != AF_SIDE_SAME) af_strbuf_printf(&s, "+do:%s", af_layout_name(af_case_layout_do(c)));
    if (c->stride_gap > 0 || (c->layout == AF_LAYOUT_THD && c->thd_gap > 0)) af_strbuf_printf(&s, "+gap");
    if (c->gap_h > 0 || c->gap_s > 0 || c->gap_b > 0) af_strbuf_printf(&s, "+axis_gap"); /* its own config cell */
    if (c->page_size > 0)
        af_strbuf_printf(&s, "+paged%s%s", c->page_hnd ? ":hnd" : "", c->page_kv_joint ? ":joint" : "");
    if (c->cp_size > 1) af_strbuf_printf(&s, ",cp:%s", af_cp_comm_name(c->cp_comm));
    af_strbuf_printf(&s, ",%s", c->backward ? "bwd" : "fwd");
    if (af_case_has_features(c)) { /* attention features: only when present (older classes unchanged) */
        char feats[160];
        af_case_features_text(c, feats, sizeof feats);
        for (char *p = feats; *p; p++)
            if (*p == ' ') *p = '+';
        af_strbuf_printf(&s, ",feat:%s", feats);
    }
    af_strbuf_printf(&s, ",sq%sskv", c->seqlen_q < c->seqlen_kv ? "<" : c->seqlen_q > c->seqlen_kv ? ">" : "=");
    return s.len;
}

/* A plugin named by its path ("plugin:/builds/a/k.so") is identified by its file name and
 * a hash of its bytes ("plugin:k.so#1a2b3c4d5e6f"), so the same .so at two paths gives one
 * bucket and a rebuilt one another. An unreadable file keeps only its name. */
static void plugin_identity(const char *backend, char *out, size_t cap) {
    const char *path = backend + 7;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(out, cap, "plugin:%s", base);
        return;
    }
    uint64_t h = af_fnv1a64("", 0);
    unsigned char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) h = af_fnv1a64_update(h, chunk, n);
    fclose(f);
    snprintf(out, cap, "plugin:%s#%012llx", base, (unsigned long long)(h >> 16));
}

size_t af_finding_identity(const af_case *c, const af_verdict *v, char *buf, size_t cap) {
    af_strbuf s = {buf, cap, 0};
    if (cap) buf[0] = 0;
    /* The backend that ran wins over the case's field (the case may say "" = from CLI). */
    const char *backend = v->backend[0] ? v->backend : c->backend[0] ? c->backend : "?";
    char plugin[AF_NAME_MAX + 32];
    if (strncmp(backend, "plugin:", 7) == 0) {
        plugin_identity(backend, plugin, sizeof plugin);
        backend = plugin;
    }
    const char *engine = v->info.engine[0] ? v->info.engine : c->engine;
    if (strcmp(engine, "all") == 0) engine = "";
    af_strbuf_printf(&s, "%s|%s%s%s", af_verdict_name(v->kind), backend, engine[0] ? ":" : "", engine);
    /* a backward the backend says ran on its own engine, unless the engine's name says it
     * already (cudnn's "eng3+bwd_eng6"): a dispatch that sends some backwards elsewhere
     * makes its own buckets */
    const char *bwd = v->info.engine_backward;
    if (bwd[0] && !strstr(engine, bwd)) af_strbuf_printf(&s, "+backward=%s", bwd);
    af_strbuf_printf(&s, "|%s", v->n_findings > 0 ? af_tensor_name(v->findings[0].tensor) : "-");
    return s.len;
}

size_t af_signature(const af_case *c, const af_verdict *v, char *buf, size_t cap) {
    af_strbuf s = {buf, cap, 0};
    if (cap) buf[0] = 0;
    char id[AF_SIGNATURE_MAX];
    af_finding_identity(c, v, id, sizeof id);
    af_strbuf_printf(&s, "%s|", id);
    char cls[256];
    af_config_class(c, cls, sizeof cls);
    af_strbuf_printf(&s, "%s", cls);
    return s.len;
}

void af_bucket_id(const char *signature, char out[AF_BUCKET_ID_LEN + 1]) {
    uint64_t h = af_fnv1a64(signature, strlen(signature));
    /* the top 48 bits: FNV's high bits mix the whole input best */
    snprintf(out, AF_BUCKET_ID_LEN + 1, "%012llx", (unsigned long long)(h >> 16));
}
