/* test_triage_signature.c — signatures name the bug, never the numbers.
 *
 * Same verdict kind, backend, tensor and config class -> same signature and bucket,
 * whatever the seed, errors, ratios, sizes inside one class. Each change of class
 * (mask, alignment, window side, padding, GQA, head-dim class, layout, fwd/bwd,
 * sq vs skv, kind, tensor, engine) -> a different bucket.
 */
#include <string.h>

#include "judge/signature.h"
#include "util/hash.h"
#include "model/case_measure.h"
#include "util/check.h"

static af_case base_case(void) {
    af_case c;
    af_case_defaults(&c);
    c.mask = AF_MASK_CAUSAL;
    c.window_left = 8;
    c.window_right = -1;
    c.seed = 1234;
    return c;
}

static af_verdict finding(af_verdict_kind kind, af_tensor_id t, double error, double ratio) {
    af_verdict v;
    af_verdict_init(&v, "planted");
    snprintf(v.info.engine, sizeof v.info.engine, "window_off_by_one");
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor = t;
    f.row = 5;
    f.col = 3;
    f.error = error;
    f.ratio = ratio;
    f.allowed = error / ratio;
    af_verdict_add(&v, &f);
    return v;
}

static void sig(const af_case *c, const af_verdict *v, char *buf) {
    size_t n = af_signature(c, v, buf, AF_SIGNATURE_MAX);
    CHECK(n > 0 && n < AF_SIGNATURE_MAX && strlen(buf) == n);
}

static void bucket(const af_case *c, const af_verdict *v, char *out) {
    char s[AF_SIGNATURE_MAX];
    sig(c, v, s);
    af_bucket_id(s, out);
}

/* Each variant must land in a bucket of its own. */
#define MAX_VARIANTS 32
static char seen[MAX_VARIANTS][AF_BUCKET_ID_LEN + 1];
static char seen_sig[MAX_VARIANTS][AF_SIGNATURE_MAX];
static int n_seen = 0;

static void expect_new_bucket(const af_case *c, const af_verdict *v, const char *what) {
    char s[AF_SIGNATURE_MAX], b[AF_BUCKET_ID_LEN + 1];
    sig(c, v, s);
    af_bucket_id(s, b);
    for (int i = 0; i < n_seen; i++)
        CHECK_MSG(strcmp(seen[i], b) != 0 && strcmp(seen_sig[i], s) != 0, "%s: '%s' same bucket as '%s'", what, s,
                  seen_sig[i]);
    CHECK(n_seen < MAX_VARIANTS);
    memcpy(seen[n_seen], b, sizeof b);
    memcpy(seen_sig[n_seen], s, sizeof s);
    n_seen++;
}

int main(void) {
    /* the documented example, byte for byte */
    af_case c = base_case();
    af_verdict v = finding(AF_V_LEAK, AF_T_O, 0.25, 37.5);
    char s[AF_SIGNATURE_MAX];
    sig(&c, &v, s);
    CHECK_MSG(strcmp(s, "leak|planted:window_off_by_one|O|fp16,causal-tl,win(L),pad:none,mha,d<=64,bshd,fwd,sq=skv") ==
                  0,
              "%s", s);
    char cls[256];
    CHECK(af_config_class(&c, cls, sizeof cls) == strlen("fp16,causal-tl,win(L),pad:none,mha,d<=64,bshd,fwd,sq=skv"));
    { /* features join the class only when present */
        af_case f = c;
        f.softcap = 30;
        f.softmax = AF_SOFTMAX_LEARNABLE;
        char fc[512];
        af_config_class(&f, fc, sizeof fc);
        CHECK_MSG(!strcmp(fc, "fp16,causal-tl,win(L),pad:none,mha,d<=64,bshd,fwd,feat:sinks(learnable)+softcap,sq=skv"),
                  "%s", fc);
    }
    { /* head / token / batch gaps: a class of their own beside stride_gap's */
        af_case g = c;
        char gc[512], gc2[512];
        g.gap_s = 3;
        af_config_class(&g, gc, sizeof gc);
        CHECK_MSG(!strcmp(gc, "fp16,causal-tl,win(L),pad:none,mha,d<=64,bshd+axis_gap,fwd,sq=skv"), "%s", gc);
        g.stride_gap = 1;
        af_config_class(&g, gc2, sizeof gc2);
        CHECK_MSG(strstr(gc2, "bshd+gap+axis_gap,") != NULL, "%s", gc2);
    }
    CHECK(strstr(s, cls) != NULL);
    /* truncation reports the full length like snprintf */
    char tiny[8];
    CHECK(af_signature(&c, &v, tiny, sizeof tiny) == strlen(s));
    CHECK(strlen(tiny) == 7);

    /* bucket ids: 12 hex digits, the top 48 bits of FNV-1a 64 */
    char b[AF_BUCKET_ID_LEN + 1];
    af_bucket_id("", b);
    CHECK(strcmp(b, "cbf29ce48422") == 0); /* FNV-1a 64 of "" = cbf29ce484222325 */
    af_bucket_id("a", b);
    CHECK(strcmp(b, "af63dc4c8601") == 0); /* FNV-1a 64 of "a" = af63dc4c8601ec8c */
    CHECK(af_fnv1a64("foobar", 6) == 0x85944171f73967e8ull);

    /* numbers do not matter: seed, error, ratio, worst position, sizes within a class */
    char b0[AF_BUCKET_ID_LEN + 1], b1[AF_BUCKET_ID_LEN + 1];
    bucket(&c, &v, b0);
    af_case c2 = base_case();
    c2.seed = 987654321;
    c2.batch = 3;
    c2.heads_q = c2.heads_kv = 4;
    c2.seqlen_q = c2.seqlen_kv = 300;    /* sq = skv still */
    c2.head_dim_qk = c2.head_dim_v = 48; /* still d<=64, multiple of 16 */
    c2.window_left = 100;                /* still a bounded left side only */
    c2.data[0].kind = AF_DATA_UNIFORM;
    c2.n_data = 1;
    af_verdict v2 = finding(AF_V_LEAK, AF_T_O, 1e-3, 1e6);
    v2.findings[0].row = 299;
    v2.findings[0].b = 2;
    v2.stats[AF_T_O].judged = true;
    v2.stats[AF_T_O].ratio = 1e6;
    v2.info.seconds = 3.5;
    bucket(&c2, &v2, b1);
    CHECK(strcmp(b0, b1) == 0);
    char s2[AF_SIGNATURE_MAX];
    sig(&c2, &v2, s2);
    CHECK(strcmp(s, s2) == 0);
    CHECK(strstr(s2, "987654321") == NULL && strstr(s2, "300") == NULL);
    /* the backend may come from the case when the verdict does not name one */
    af_verdict v3 = v;
    v3.backend[0] = 0;
    af_case c3 = c;
    snprintf(c3.backend, sizeof c3.backend, "planted");
    bucket(&c3, &v3, b1);
    CHECK(strcmp(b0, b1) == 0);
    /* engine "all" in the case and no engine reported: no engine part */
    af_verdict v4 = v;
    v4.info.engine[0] = 0;
    snprintf(c3.engine, sizeof c3.engine, "all");
    sig(&c3, &v4, s2);
    CHECK(strncmp(s2, "leak|planted|O|", 15) == 0);

    /* every change of class is a different bucket */
    expect_new_bucket(&c, &v, "base");
    af_case x;
    af_verdict y, z;
    x = c;
    x.mask = AF_MASK_NONE;
    expect_new_bucket(&x, &v, "mask none");
    x = c;
    x.align = AF_ALIGN_BOTTOM_RIGHT;
    expect_new_bucket(&x, &v, "bottom right");
    x = c;
    x.window_left = -1;
    expect_new_bucket(&x, &v, "no window");
    x = c;
    x.window_right = 0;
    expect_new_bucket(&x, &v, "window both sides");
    x = c;
    x.window_left = -1;
    x.window_right = 4;
    expect_new_bucket(&x, &v, "window right");
    x = c;
    x.dtype = AF_DT_BF16;
    expect_new_bucket(&x, &v, "bf16");
    x = c;
    x.has_seqlens = true;
    x.seqlens_q[0] = 10;
    x.seqlens_kv[0] = 12;
    expect_new_bucket(&x, &v, "padding");
    x = c;
    x.layout = AF_LAYOUT_THD;
    x.has_seqlens = true;
    x.seqlens_q[0] = 10;
    x.seqlens_kv[0] = 12;
    expect_new_bucket(&x, &v, "thd");
    x = c;
    x.heads_q = 8;
    x.heads_kv = 2;
    expect_new_bucket(&x, &v, "gqa");
    x = c;
    x.heads_q = 8;
    x.heads_kv = 1;
    expect_new_bucket(&x, &v, "mqa");
    x = c;
    x.head_dim_qk = x.head_dim_v = 72;
    expect_new_bucket(&x, &v, "d=72 (<=128, multiple of 8 only)");
    x = c;
    x.head_dim_qk = x.head_dim_v = 128;
    expect_new_bucket(&x, &v, "d=128");
    x = c;
    x.head_dim_qk = x.head_dim_v = 60;
    expect_new_bucket(&x, &v, "d=60 (not a multiple of 8)");
    x = c;
    x.head_dim_qk = x.head_dim_v = 512;
    expect_new_bucket(&x, &v, "d=512");
    x = c;
    x.head_dim_v = 32;
    expect_new_bucket(&x, &v, "dv < dqk");
    x = c;
    x.layout = AF_LAYOUT_SBHD;
    expect_new_bucket(&x, &v, "sbhd");
    x = c;
    x.packing = AF_PACK_KV;
    expect_new_bucket(&x, &v, "kv packed");
    x = c;
    x.backward = true;
    expect_new_bucket(&x, &v, "backward");
    x = c;
    x.seqlen_q = 8;
    expect_new_bucket(&x, &v, "sq < skv");
    x = c;
    x.seqlen_kv = 8;
    expect_new_bucket(&x, &v, "sq > skv");
    x = c;
    x.cp_size = 2;
    x.cp_comm = AF_CP_P2P;
    expect_new_bucket(&x, &v, "cp");
    y = finding(AF_V_MISMATCH, AF_T_O, 0.25, 37.5);
    expect_new_bucket(&c, &y, "kind mismatch");
    y = finding(AF_V_LEAK, AF_T_LSE, 0.25, 37.5);
    expect_new_bucket(&c, &y, "tensor LSE");
    y = v;
    snprintf(y.info.engine, sizeof y.info.engine, "eng3_k2=1");
    expect_new_bucket(&c, &y, "engine");
    y = v;
    snprintf(y.info.engine_forward, sizeof y.info.engine_forward, "main");
    snprintf(y.info.engine_backward, sizeof y.info.engine_backward, "fallback");
    expect_new_bucket(&c, &y, "the backward's own engine");
    /* a backward engine the engine's name already carries adds nothing */
    y = v;
    snprintf(y.info.engine, sizeof y.info.engine, "eng3+bwd_eng6");
    z = y;
    snprintf(z.info.engine_backward, sizeof z.info.engine_backward, "bwd_eng6");
    {
        char a[AF_SIGNATURE_MAX], b[AF_SIGNATURE_MAX];
        af_signature(&c, &y, a, sizeof a);
        af_signature(&c, &z, b, sizeof b);
        CHECK_MSG(!strcmp(a, b), "a backward engine inside the engine's name changed the signature: %s vs %s", a, b);
    }
    y = v;
    snprintf(y.backend, sizeof y.backend, "cpu");
    expect_new_bucket(&c, &y, "backend");

    /* a crash has no tensor */
    af_verdict crash;
    af_verdict_init(&crash, "cudnn");
    crash.kind = AF_V_CRASH;
    snprintf(crash.reason, sizeof crash.reason, "illegal address at 0x7f0012345678");
    sig(&c, &crash, s);
    CHECK_MSG(strncmp(s, "crash|cudnn|-|fp16,", 19) == 0, "%s", s);
    CHECK(strstr(s, "0x7f") == NULL);

    /* case cost orders reproducers by size */
    af_case small = c, big = c;
    big.seqlen_q = big.seqlen_kv = 64;
    CHECK(af_case_cost(&small) < af_case_cost(&big));
    big = c;
    big.heads_q = big.heads_kv = 2;
    CHECK(af_case_cost(&small) < af_case_cost(&big));

    CHECK_DONE("test_triage_signature");
}
