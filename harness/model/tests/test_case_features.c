/* test_case_features.c — the feature fields of the .case format (softmax, softcap, bias,
 * alibi, stats, dlse): parsing, canonical printing (printed only when set, round trip),
 * every error path with its file:line: field, and the generated feature inputs. */
#include <math.h>
#include <string.h>

#include "model/case.h"
#include "model/features.h"
#include "model/numeric.h"
#include "model/tensors.h"
#include "util/check.h"
#include "model/tests/case_text_fixture.h"

int main(void) {
    af_case c;
    af_error e;
    char text[8192];

    /* defaults: no feature, and none printed */
    CHECK(parse("", &c, &e) == 0);
    CHECK(!af_case_has_features(&c) && c.softmax == AF_SOFTMAX_VANILLA && c.softcap == 0.0 && c.bias == AF_BIAS_NONE);
    af_case_print(&c, text, sizeof text);
    CHECK_MSG(!strstr(text, "softmax") && !strstr(text, "softcap") && !strstr(text, "bias") && !strstr(text, "alibi") &&
                  !strstr(text, "stats") && !strstr(text, "dlse"),
              "a plain case prints feature lines:\n%s", text);

    /* each feature parses, prints and round-trips */
    CHECK(parse("softmax = learnable\nsoftcap = 30\nbias = 1hss\nalibi = yes\nstats = log2\nbackward = yes\n"
                "dlse = yes\nheads = 4\n",
                &c, &e) == 0);
    CHECK(c.softmax == AF_SOFTMAX_LEARNABLE && c.softcap == 30.0 && c.bias == AF_BIAS_1HSS && c.alibi && c.lse_base2 &&
          c.dlse && af_case_has_features(&c));
    af_case_features_text(&c, text, sizeof text);
    CHECK_MSG(!strcmp(text, "sinks(learnable) softcap bias(1hss) alibi stats=log2 dlse"), "features text '%s'", text);
    roundtrip("softmax = off_by_one\n", "softmax = off_by_one\n");
    roundtrip("softmax = learnable\nbackward = yes\n", "softmax = learnable\n");
    roundtrip("softcap = 0.0625\n", "softcap = 0.0625\n");
    roundtrip("softcap = 50\ndtype = bf16\n", "softcap = 5e+01\n"); /* shortest round-trip form */
    roundtrip("bias = bhss\nbatch = 2\nheads = 2\n", "bias = bhss\n");
    roundtrip("bias = b1ss\n", "bias = b1ss\n");
    roundtrip("bias = 11ss\nalibi = yes\n", "alibi = yes\n");
    roundtrip("stats = log2\n", "stats = log2\n");
    roundtrip("backward = yes\ndlse = yes\nstats = log2\n", "dlse = yes\n");
    roundtrip("softcap = 0\nalibi = no\nstats = natural\nsoftmax = vanilla\nbias = none\n", "dtype = fp16\n");

    /* errors name file:line: field */
    expect_error("softmax = sink\n", 1, "softmax", "vanilla, off_by_one, learnable");
    expect_error("seed = 3\nsoftcap = -1\n", 2, "softcap", "0 (none) or a number");
    expect_error("softcap = 1e5\n", 1, "softcap", "[0.001, 10000]");
    expect_error("softcap = 0.0001\n", 1, "softcap", "[0.001, 10000]");
    expect_error("softcap = nan\n", 1, "softcap", "0 (none)");
    expect_error("bias = 2hss\n", 1, "bias", "none, 11ss, 1hss, b1ss, bhss");
    expect_error("alibi = maybe\n", 1, "alibi", "no, yes, abs, signed");
    expect_error("stats = log10\n", 1, "stats", "natural or log2");
    expect_error("dlse = 2\n", 1, "dlse", "yes or no");
    expect_error("seed = 1\ndlse = yes\n", 2, "dlse", "needs backward = yes");
    expect_error("dtype = fp8_e4m3\nsoftcap = 20\n", 2, "softcap", "fp16 and bf16 only");
    expect_error("dtype = mxfp8\nbias = 11ss\n", 2, "bias", "fp16 and bf16 only");
    expect_error("seqlen = 16\ncp = 2 p2p\nalibi = yes\n", 3, "alibi", "context parallelism carries sinks and bias");
    /* sinks with fp8_e4m3 / fp8_e5m2 and with cp, bias with cp: valid; sinks with mxfp8 not */
    roundtrip("dtype = fp8_e4m3\nsoftmax = learnable\nbackward = yes\n", "softmax = learnable\n");
    roundtrip("dtype = fp8_e5m2\nsoftmax = off_by_one\n", "softmax = off_by_one\n");
    roundtrip("seqlen = 16\ncp = 2 p2p\nsoftmax = learnable\n", "softmax = learnable\n");
    roundtrip("seqlen = 16\ncp = 2 a2a\nbias = 11ss\nheads = 2\n", "bias = 11ss\n");
    expect_error("dtype = mxfp8\nsoftmax = off_by_one\n", 2, "softmax", "sinks are defined for fp16, bf16, fp8_e4m3");
    expect_error("dtype = fp8_e5m2\nsoftmax = off_by_one\nbias = 11ss\n", 3, "bias", "fp16 and bf16 only");
    expect_error("softmax = learnable\nsoftmax = learnable\n", 2, "softmax", "repeated");
    /* score_mod: a named form, printed when set, a feature with its form in the text; one
     * score modifier (not with softcap), fp16 / bf16 only, no cp, no score statistics */
    roundtrip("score_mod = trig2\nbackward = yes\n", "score_mod = trig2\n");
    roundtrip("score_mod = none\n", "dtype = fp16\n");
    CHECK(parse("score_mod = squared\n", &c, &e) == 0 && c.score_mod == AF_SCORE_MOD_SQUARED &&
          af_case_has_features(&c));
    af_case_features_text(&c, text, sizeof text);
    CHECK_MSG(!strcmp(text, "score_mod(squared)"), "features text '%s'", text);
    expect_error("score_mod = cube\n", 1, "score_mod", "none, squared, trig, trig2");
    expect_error("score_mod = lambda s: s\n", 1, "score_mod", "none, squared, trig, trig2");
    expect_error("softcap = 30\nscore_mod = trig\n", 2, "score_mod", "a score takes one modifier");
    expect_error("dtype = fp8_e4m3\nscore_mod = trig\n", 2, "score_mod", "fp16 and bf16 only");
    expect_error("seqlen = 16\ncp = 2 p2p\nscore_mod = squared\n", 3, "score_mod",
                 "context parallelism carries sinks and bias");
    expect_error("outputs = max_logit\nscore_mod = trig\n", 2, "score_mod", "score statistics");
    /* block_mask and custom_mask: print, parse, round trip; errors name the field */
    roundtrip("block_mask = 8 16 0.6\nmask = causal\nseqlen = 40\n", "block_mask = 8 16 0.6\n");
    roundtrip("custom_mask = 0.7\nbatch = 2\n", "custom_mask = 0.7\n");
    roundtrip("block_mask = 0\ncustom_mask = 0\n", "dtype = fp16\n");
    CHECK(parse("block_mask = 4 8 0.5\n", &c, &e) == 0 && c.block_mask_q == 4 && c.block_mask_k == 8 &&
          c.block_mask_p == 0.5 && af_case_has_features(&c));
    af_case_print(&c, text, sizeof text);
    CHECK_MSG(strstr(text, "block_mask = 4 8 0.5\n") && !strstr(text, "custom_mask"), "%s", text);
    expect_error("block_mask = 8 16\n", 1, "block_mask", "'BQ BK P'");
    expect_error("block_mask = 0 16 0.5\n", 1, "block_mask", "BQ, BK in [1,");
    expect_error("block_mask = 8 16 0\n", 1, "block_mask", "P in (0, 1]");
    expect_error("block_mask = 8 16 1.5\n", 1, "block_mask", "P in (0, 1]");
    expect_error("block_mask = 8 x 0.5\n", 1, "block_mask", "'BQ BK P'");
    expect_error("custom_mask = 1.5\n", 1, "custom_mask", "(0, 1]");
    expect_error("custom_mask = -0.1\n", 1, "custom_mask", "(0, 1]");
    /* below 2^-32 the keep threshold would be 0, which the mask rule reads as no mask */
    expect_error("custom_mask = 1e-12\n", 1, "custom_mask", "at least 2^-32");
    /* a tiny keep probability on a 1x1 case drops its one key: the drop field is named */
    expect_error("seqlen_q = 1\nseqlen_kv = 1\nseed = 1\ncustom_mask = 0.000001\n", 4, "custom_mask",
                 "drop every visible key");
    /* af_case_validate without lines still names the field */
    af_case_defaults(&c);
    c.dtype = AF_DT_MXFP8; /* sinks are defined for fp8_e4m3 and fp8_e5m2, not mxfp8 */
    c.softmax = AF_SOFTMAX_OFF_BY_ONE;
    CHECK(af_case_validate(&c, &e) == -1 && !strcmp(e.field, "softmax"));

    /* the generated feature inputs: deterministic, in range, broadcast as declared */
    CHECK(parse("batch = 2\nheads = 4\nseqlen = 8\nsoftmax = learnable\nbias = 1hss\nalibi = yes\nbackward = yes\n"
                "dlse = yes\nseed = 9\n",
                &c, &e) == 0);
    int bb, bh;
    af_feature_bias_dims(&c, &bb, &bh);
    CHECK(bb == 1 && bh == 4);
    CHECK(af_feature_bias(&c, 0, 2, 3, 5) == af_feature_bias(&c, 1, 2, 3, 5)); /* broadcast over batch */
    CHECK(af_feature_bias(&c, 0, 1, 3, 5) != af_feature_bias(&c, 0, 2, 3, 5)); /* not over heads */
    float bias_val = af_feature_bias(&c, 0, 1, 3, 5);
    CHECK_MSG(bias_val == af_f16_to_f32(af_f32_to_f16(bias_val)), "bias %g is not an fp16 value", bias_val);
    for (int h = 0; h < 4; h++) {
        float a = af_feature_sink(&c, h);
        CHECK_MSG(a >= -3.0f && a <= 3.0f && a == af_feature_sink(&c, h), "sink[%d] = %g", h, a);
        CHECK_MSG(af_feature_alibi_slope(&c, 0, h) == (float)exp2(-2.0 * (h + 1)), "slope[%d] = %g", h,
                  af_feature_alibi_slope(&c, 0, h));
    }
    CHECK(af_feature_sink(&c, 0) != af_feature_sink(&c, 1));
    CHECK(fabsf(af_feature_dlse(&c, 1, 3, 7)) <= 0.5f && af_feature_dlse(&c, 1, 3, 7) != 0.0f);
    af_inputs in;
    CHECK(af_inputs_alloc(&in, &c) == 0);
    CHECK(in.feat.sink == 2 && in.feat.bias_b == 1 && in.feat.bias_h == 4 && in.feat.alibi && in.sink && in.bias &&
          in.alibi_slope && in.dlse);
    CHECK(in.bias[((size_t)(0 * 4 + 1) * 8 + 3) * 8 + 5] == (double)bias_val);
    af_inputs_free(&in);
    c.softmax = AF_SOFTMAX_OFF_BY_ONE;
    CHECK(af_feature_sink(&c, 2) == 0.0f);
    c.softmax = AF_SOFTMAX_VANILLA;
    CHECK(isinf(af_feature_sink(&c, 2)) && af_feature_sink(&c, 2) < 0);
    printf("test_case_features: ok\n");
    return 0;
}
