/* test_cudnn_feature_declines.c — which features the cudnn backend's graph description
 * serves and which it declines, with which reason (cudnn_sdpa_desc.c; no GPU needed):
 *   served (fp16/bf16): bias 11ss/1hss/b1ss/bhss with the right extents, ALiBi,
 *   softcap, sinks off_by_one / learnable on cuDNN >= 9.13 (dsink only for learnable
 *   with backward), dropout forward and backward (the keep mask as a tensor: scale
 *   1 / (1 - p), keep 1 - p in the description); none of them on the unified SDPA_FWD path;
 *   declined: stats = log2, dlse, score_mod (each form), fp8_e4m3 with any feature (dropout included), sinks
 *   before cuDNN 9.13 and with seqlen_q = 1, dropout whose keep mask would exceed 1 GiB
 *   (and such a case is not bucketed into a larger padded case) — each with its own
 *   reason text; fp8_e4m3 and fp8_e5m2 map to CUDNN_DATA_FP8_E4M3 / _E5M2 on the FP8 graphs,
 *   out_dtype fp16 / bf16 to O's HALF / BFLOAT16 (forward; declined with backward); kv_dtype
 *   (fp8 K, V under fp16 / bf16 Q) declined; dropout_rng = kernel (cuDNN's own RNG node is
 *   not wired) declined.
 * The description is CUDA-only code (it fills cuDNN data types), so a build without
 * CUDA prints SKIP and exits 77; CI's CUDA build runs it on any machine.
 */
#include <stdio.h>
#include <string.h>

#include "util/check.h"

#ifndef ATTNFUZZ_HAVE_CUDA
int main(void) {
    printf("SKIP test_cudnn_feature_declines: built without CUDA (the SDPA description is CUDA-only code)\n");
    return CHECK_SKIP_CODE;
}
#else

#include "backends/cudnn/cudnn_bucket.h"
#include "backends/cudnn/cudnn_sdpa.h"
#include "model/layout.h"

/* The case: bf16 (fp8_e4m3 / fp16 when extra starts with "#fp8" / "#fp16"), batch 2,
 * GQA 4:2, s_q 64 (1 with "#sq1"), s_kv 96, head dim 64 (128 for fp8), then extra. */
static void case_text(const char *extra, char *text, size_t cap) {
    bool fp8 = strstr(extra, "#fp8") != NULL, fp16 = strstr(extra, "#fp16") != NULL;
    snprintf(text, cap,
             "dtype = %s\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = %d\nseqlen_kv = 96\nhead_dim = %d\n%s",
             fp8    ? "fp8_e4m3"
             : fp16 ? "fp16"
                    : "bf16",
             strstr(extra, "#sq1") ? 1 : 64, fp8 ? 128 : 64, extra);
}

/* The description of that case on cuDNN `version`, after tweak (may be NULL) edits the
 * parsed case: 0, or -1 with why. */
static int desc_of_tweaked(const char *extra, void (*tweak)(af_case *), size_t version, af_sdpa_desc *d, char *why,
                           size_t cap) {
    char text[1024];
    case_text(extra, text, sizeof text);
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, "test_cudnn_feature_declines", &c, &e) == 0, "%s: %s: %s", extra, e.field, e.message);
    if (tweak) tweak(&c);
    static af_layout_plan p; /* large: not on the stack */
    CHECK_MSG(af_layout_plan_make(&c, &p, why, cap) == 0, "%s: %s", extra, why);
    why[0] = 0;
    return af_sdpa_desc_make(&c, &p, version, d, why, cap);
}

static int desc_of(const char *extra, size_t version, af_sdpa_desc *d, char *why, size_t cap) {
    return desc_of_tweaked(extra, NULL, version, d, why, cap);
}

/* extra on one line, for the report */
static const char *one_line(const char *extra) {
    static char buf[256];
    snprintf(buf, sizeof buf, "%s", extra);
    for (char *q = buf; *q; q++)
        if (*q == '\n') *q = ';';
    return buf;
}

static void served(const char *extra, size_t version, af_sdpa_desc *d) {
    char why[768];
    CHECK_MSG(desc_of(extra, version, d, why, sizeof why) == 0, "'%s' on %zu declined: %s", extra, version, why);
    CHECK_MSG(af_sdpa_has_features(d), "'%s': served without a feature in the description", extra);
    CHECK_MSG(!af_sdpa_unified_applies(d), "'%s': the unified SDPA_FWD path must not take features", extra);
}

static void declined(const char *extra, size_t version, const char *reason_part) {
    af_sdpa_desc d;
    char why[768];
    CHECK_MSG(desc_of(extra, version, &d, why, sizeof why) != 0, "'%s' on %zu served", extra, version);
    CHECK_MSG(strstr(why, reason_part) != NULL, "'%s': reason '%s' lacks '%s'", extra, why, reason_part);
    printf("declined %-40s on %zu: %s\n", one_line(extra), version, why);
}

/* fp8_e4m3 with a feature: the case model rejects it (model/case.c: features are fp16 /
 * bf16 only), so the description's own decline is reached by editing a parsed case. */
static void to_e5m2(af_case *c) { c->dtype = AF_DT_FP8_E5M2; }
static void fp8_bias(af_case *c) { c->bias = AF_BIAS_11SS; }
static void fp8_softcap(af_case *c) { c->softcap = 30; }
static void fp8_alibi(af_case *c) { c->alibi = true; }
static void fp8_sinks(af_case *c) { c->softmax = AF_SOFTMAX_OFF_BY_ONE; }
static void fp8_dropout(af_case *c) {
    c->dropout_p = 0.1;
    c->dropout_seed = 7;
}

static void fp8_declined(void (*tweak)(af_case *), const char *reason_part) {
    af_sdpa_desc d;
    char why[768];
    CHECK_MSG(desc_of_tweaked("#fp8\n", tweak, 91900, &d, why, sizeof why) != 0, "fp8 + %s served", reason_part);
    CHECK_MSG(strstr(why, reason_part) != NULL, "reason '%s' lacks '%s'", why, reason_part);
    printf("declined %-40s on 91900: %s\n", "fp8_e4m3 (edited case)", why);
}

int main(void) {
    af_sdpa_desc d;
    /* plain: no features, the unified path applies (no mask) */
    char why[768];
    CHECK(desc_of("", 91900, &d, why, sizeof why) == 0);
    CHECK(!af_sdpa_has_features(&d) && af_sdpa_unified_applies(&d));
    CHECK(d.bias_b == 0 && d.bias_h == 0 && !d.alibi && d.softcap == 0.0f && !d.sink && !d.dsink);

    /* ragged queries over paged K/V: served (ragged offsets on Q, O, Stats; K and V through
     * the page table), forward only; FP8 declines it (thd is not served by FP8 on SM90) */
    {
        const char *thd_paged = "layout = thd\nseqlens_q = 64,7\nseqlens_kv = 96,40\nthd_gap = 2\npage_size = 16\n"
                                "mask = causal\nalign = bottom_right\n";
        CHECK_MSG(desc_of(thd_paged, 91900, &d, why, sizeof why) == 0, "%s", why);
        CHECK(d.ragged && d.paged && d.padding && d.page_size == 16 && d.pages_per_seq == 6 && d.n_pages == 12);
        CHECK(!af_sdpa_unified_applies(&d));
        char fp8[512];
        snprintf(fp8, sizeof fp8, "#fp8\n%s", thd_paged);
        CHECK(desc_of(fp8, 91900, &d, why, sizeof why) == -1 && strstr(why, "thd"));
    }

    /* the score scale and dropout's 1 / (1 - p) go by value with each run: cases that differ
     * only in them have one description (the graph cache's key), and their run scalars differ */
    {
        af_sdpa_desc a, b;
        CHECK(desc_of("backward = yes\n", 91900, &a, why, sizeof why) == 0);
        CHECK(desc_of("backward = yes\nscale = 0.3\n", 91900, &b, why, sizeof why) == 0);
        CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "another scale gave another graph description");
        CHECK(desc_of("backward = yes\ndropout = 0.1 7 0\n", 91900, &a, why, sizeof why) == 0);
        CHECK(desc_of("backward = yes\ndropout = 0.25 7 0\n", 91900, &b, why, sizeof why) == 0);
        CHECK_MSG(a.dropout && memcmp(&a, &b, sizeof a) == 0, "another dropout rate gave another graph description");
        af_case c;
        af_error e;
        CHECK(af_case_parse("dtype = bf16\nseqlen = 8\nhead_dim = 64\nscale = 0.3\ndropout = 0.25 7 0\n", "t", &c,
                            &e) == 0);
        float s, ds;
        af_sdpa_run_scalars(&c, &s, &ds);
        CHECK_MSG(s == 0.3f && ds == (float)(1.0 / 0.75), "run scalars %g %g", s, ds);
        c.has_scale = false, c.dropout_p = 0; /* the default scale, no dropout */
        af_sdpa_run_scalars(&c, &s, &ds);
        CHECK_MSG(s == (float)af_case_scale(&c) && s == 0.125f && ds == 1.0f, "run scalars %g %g", s, ds);
    }

    static const struct {
        const char *line;
        int64_t bb, bh, bq;
    } shapes[] = {{"bias = 11ss\n", 1, 1, 64}, {"bias = 1hss\n", 1, 4, 64}, {"bias = b1ss\n", 2, 1, 64},
                  {"bias = bhss\n", 2, 4, 64}, {"bias = 111s\n", 1, 1, 1},  {"bias = bh1s\n", 2, 4, 1}};
    for (int k = 0; k < 6; k++) { /* the query extent is the case's s_q (64) unless it broadcasts */
        served(shapes[k].line, 91400, &d);
        CHECK_MSG(d.bias_b == shapes[k].bb && d.bias_h == shapes[k].bh && d.bias_q == shapes[k].bq && d.skv == 96,
                  "%s: extents %lld x %lld x %lld x %lld", shapes[k].line, (long long)d.bias_b, (long long)d.bias_h,
                  (long long)d.bias_q, (long long)d.skv);
    }
    served("alibi = signed\nalibi_slopes = random_batch\n", 91400, &d); /* slopes FLOAT [b, hq] */
    CHECK_MSG(d.alibi && d.alibi_signed && d.alibi_b == 2, "alibi_b %lld", (long long)d.alibi_b);
    served("alibi = yes\n", 91400, &d);
    CHECK(d.alibi && !d.alibi_signed && d.alibi_b == 1);
    served("alibi = yes\nmask = causal\nalign = bottom_right\nbackward = yes\n", 91400, &d);
    CHECK(d.alibi && d.has_right && d.bottom_right);
    served("softcap = 30\nbackward = yes\n", 91900, &d);
    CHECK(d.softcap == 30.0f);
    served("softmax = off_by_one\nbackward = yes\n", 91300, &d);
    CHECK(d.sink && !d.dsink);
    served("softmax = learnable\n", 91400, &d);
    CHECK(d.sink && !d.dsink);
    served("softmax = learnable\nbackward = yes\n", 91900, &d);
    CHECK(d.sink && d.dsink);
    served("#fp16\nsoftcap = 20\nbias = 1hss\nalibi = yes\nsoftmax = learnable\nbackward = yes\n", 91900, &d);
    CHECK(d.softcap == 20.0f && d.bias_h == 4 && d.alibi && d.dsink);

    declined("stats = log2\n", 91900, "natural-log stats");
    declined("score_mod = squared\n", 91900, "score_mod = squared: the SDPA graphs here build no score modifier");
    declined("score_mod = trig2\nbackward = yes\n", 91900, "score_mod = trig2");
    declined("dlse = yes\nbackward = yes\n", 91900, "no incoming LSE gradient");
    declined("dropout = 0.5 7 9\ndropout_rng = kernel\n", 91900, "dropout_rng = kernel: cuDNN's own RNG");
    /* dropout: served in fp16 and bf16, forward and backward, with GQA, causal, padding */
    served("dropout = 0.1 7 0\n", 91900, &d);
    CHECK(d.dropout);
    CHECK(!d.sink && !d.bias_b && !d.alibi && d.softcap == 0.0f);
    served("#fp16\ndropout = 0.5 1234 99\nmask = causal\nbackward = yes\n", 91400, &d);
    CHECK(d.dropout && d.has_right);
    served("dropout = 0.25 5 0\nseqlens_q = 40,64\nseqlens_kv = 96,17\nmask = padding\nbackward = yes\n", 91900, &d);
    CHECK(d.dropout && d.padding);
    served("#fp16\ndropout = 0.1 3 0\nsoftcap = 30\nsoftmax = learnable\nbackward = yes\n", 91900, &d);
    CHECK(d.dropout && d.softcap == 30.0f && d.dsink);
    /* a case differing only in seed / offset shares the description (the mask is run data),
     * and so does one with another p (1 / (1 - p) goes by value with each run) */
    af_sdpa_desc d2, d3;
    served("dropout = 0.1 8 12345\n", 91900, &d2);
    served("dropout = 0.2 7 0\n", 91900, &d3);
    served("dropout = 0.1 7 0\n", 91900, &d);
    CHECK(memcmp(&d, &d2, sizeof d) == 0 && memcmp(&d, &d3, sizeof d) == 0);
    /* the mask limit: b 8, hq 16, s 2048 x 2048 = exactly 1 GiB is served; one more key over */
    CHECK(af_cudnn_dropout_mask_bytes(0.5, 8, 16, 2048, 2048) == AF_CUDNN_DROPOUT_MASK_MAX);
    CHECK(af_cudnn_dropout_mask_bytes(0.0, 8, 16, 2048, 2048) == 0);
    {
        const char *big = "dtype = bf16\nbatch = 8\nheads = 16\nseqlen_q = 2048\nseqlen_kv = 2049\nhead_dim = 64\n"
                          "dropout = 0.5 1 0\n";
        af_case c;
        af_error e;
        CHECK_MSG(af_case_parse(big, "big", &c, &e) == 0, "%s: %s", e.field, e.message);
        char w[256];
        CHECK(!af_cudnn_bucket_applies(&c, w, sizeof w) && strstr(w, "1 GiB"));
        static af_layout_plan p;
        CHECK_MSG(af_layout_plan_make(&c, &p, why, sizeof why) == 0, "%s", why);
        CHECK(af_sdpa_desc_make(&c, &p, 91900, &d, why, sizeof why) != 0);
        CHECK_MSG(strstr(why, "over 1 GiB") && strstr(why, "dropout = 0.5"), "reason: %s", why);
        printf("declined %-40s on 91900: %s\n", "dropout b8 h16 2048x2049", why);
        c.seqlen_kv = 2048; /* exactly the limit: served, and a bucket of itself */
        CHECK_MSG(af_layout_plan_make(&c, &p, why, sizeof why) == 0, "%s", why);
        CHECK_MSG(af_sdpa_desc_make(&c, &p, 91900, &d, why, sizeof why) == 0, "declined: %s", why);
        CHECK(d.dropout);
        /* a small case stays bucketed (2 MiB per head in the 1024 x 1024 padded case) */
        c.batch = 1, c.heads_q = c.heads_kv = 2, c.seqlen_q = 100, c.seqlen_kv = 300;
        CHECK(af_cudnn_bucket_applies(&c, NULL, 0));
    }
    declined("softmax = learnable\n", 91200, "needs cuDNN >= 9.13");
    declined("#sq1\nsoftmax = off_by_one\n", 91900, "s_q == 1");
    fp8_declined(fp8_bias, "fp8_e4m3 with bias");
    fp8_declined(fp8_softcap, "fp8_e4m3 with softcap");
    fp8_declined(fp8_alibi, "fp8_e4m3 with alibi");
    fp8_declined(fp8_sinks, "off_by_one with fp8_e4m3: cudnn-frontend's FP8 SDPA node");
    /* fp8 sinks now parse: the description declines the parsed case itself */
    CHECK(desc_of("#fp8\nsoftmax = learnable\n", 91900, &d, why, sizeof why) != 0 && strstr(why, "no sink_token"));
    fp8_declined(fp8_dropout, "fp8_e4m3 with dropout");
    /* a served feature does not hide a declined one */
    declined("bias = 11ss\nstats = log2\n", 91900, "natural-log stats");
    /* fp8 kinds map to their cuDNN data type, on the same FP8 graphs */
    CHECK(desc_of("#fp8\n", 91900, &d, why, sizeof why) == 0 && d.fp8 && d.io == CUDNN_DATA_FP8_E4M3);
    CHECK_MSG(desc_of_tweaked("#fp8\nbackward = yes\n", to_e5m2, 91900, &d, why, sizeof why) == 0, "declined: %s", why);
    CHECK(d.fp8 && d.io == CUDNN_DATA_FP8_E5M2 && d.o_type == CUDNN_DATA_FP8_E5M2);
    /* out_dtype: O's data type (forward); the FP8 backward graph is declined with it */
    CHECK(desc_of("#fp8\nout_dtype = bf16\n", 91900, &d, why, sizeof why) == 0 && d.io == CUDNN_DATA_FP8_E4M3 &&
          d.o_type == CUDNN_DATA_BFLOAT16);
    CHECK(desc_of("#fp8\nout_dtype = fp16\n", 91900, &d, why, sizeof why) == 0 && d.o_type == CUDNN_DATA_HALF);
    CHECK(desc_of("#fp8\nout_dtype = fp16\nbackward = yes\n", 91900, &d, why, sizeof why) != 0 &&
          strstr(why, "out_dtype = fp16 with backward"));
    /* kv_dtype: an fp8 KV cache under fp16 / bf16 Q is declined (one data type for Q, K, V) */
    CHECK(desc_of("#fp16\nkv_dtype = fp8_e4m3\n", 91900, &d, why, sizeof why) != 0 &&
          strstr(why, "kv_dtype = fp8_e4m3: cuDNN's SDPA graphs take Q, K and V of one data type"));
    CHECK(desc_of("kv_dtype = fp8_e5m2\n", 91900, &d, why, sizeof why) != 0 && strstr(why, "under bf16 Q"));
    CHECK_DONE("test_cudnn_feature_declines");
}

#endif /* ATTNFUZZ_HAVE_CUDA */
