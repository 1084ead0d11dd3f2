/* test_case_bias_alibi.c — the query-broadcast bias shapes (111s, b11s, 1h1s, bh1s), ALiBi's
 * conventions (alibi = yes | abs | signed) and its slopes (alibi_slopes = standard | random
 * | random_batch): parsing, printing (round trip, printed only when set), the errors with
 * their file:line: field, the old alibi spellings, and the generated inputs (one bias row
 * per (b, h) for every query; the ALiBi paper's slopes for a non-power-of-two head count;
 * drawn slopes reproducible from the seed, per head or per (batch, head)). */
#include <math.h>
#include <string.h>

#include "model/case.h"
#include "model/features.h"
#include "model/tensors.h"
#include "util/check.h"
#include "model/tests/case_text_fixture.h"

static void test_fields(void) {
    roundtrip("bias = 111s\n", "bias = 111s\n");
    roundtrip("batch = 2\nheads = 2\nbias = bh1s\n", "bias = bh1s\n");
    roundtrip("alibi = signed\n", "alibi = signed\n");
    roundtrip("alibi = abs\nalibi_slopes = random_batch\n", "alibi_slopes = random_batch\n");
    af_case c;
    af_error e;
    char out[8192];
    CHECK(parse("alibi = true\n", &c, &e) == 0 && c.alibi == AF_ALIBI_YES); /* the bool spellings stay */
    CHECK(parse("alibi = 0\n", &c, &e) == 0 && c.alibi == AF_ALIBI_NO);
    CHECK(parse("alibi = yes\n", &c, &e) == 0);
    af_case_print(&c, out, sizeof out);
    CHECK_MSG(strstr(out, "alibi = yes\n") && !strstr(out, "alibi_slopes"), "%s", out);
    CHECK(parse("alibi = signed\nalibi_slopes = standard\n", &c, &e) == 0);
    af_case_print(&c, out, sizeof out);
    CHECK_MSG(!strstr(out, "alibi_slopes"), "standard slopes printed:\n%s", out);
    char feat[256];
    CHECK(parse("bias = 1h1s\nalibi = signed\n", &c, &e) == 0);
    af_case_features_text(&c, feat, sizeof feat);
    CHECK_MSG(strstr(feat, "bias(1h1s)") && strstr(feat, "alibi(signed)"), "features '%s'", feat);

    expect_error("seqlen = 4\nbias = 11s1\n", 2, "bias", "111s");
    expect_error("alibi = sign\n", 1, "alibi", "signed");
    expect_error("alibi_slopes = fixed\n", 1, "alibi_slopes", "random_batch");
    expect_error("alibi = yes\nalibi_slopes = random\n", 2, "alibi_slopes", "needs alibi = abs or signed");
    expect_error("alibi_slopes = random_batch\n", 1, "alibi_slopes", "needs alibi = abs or signed");
    expect_error("dtype = fp8_e4m3\nbias = 111s\n", 2, "bias", "");
}

static void test_bias_rows(void) {
    af_case c;
    af_error e;
    CHECK(parse("batch = 2\nheads = 3\nseqlen_q = 5\nseqlen_kv = 7\nbias = b11s\nseed = 4\n", &c, &e) == 0);
    int bb, bh;
    af_feature_bias_dims(&c, &bb, &bh);
    CHECK(bb == 2 && bh == 1 && af_feature_bias_rows(&c) == 1);
    for (int i = 1; i < 5; i++) /* one row for every query and head */
        CHECK(af_feature_bias(&c, 1, 2, i, 3) == af_feature_bias(&c, 1, 0, 0, 3));
    CHECK(af_feature_bias(&c, 0, 0, 0, 3) != af_feature_bias(&c, 1, 0, 0, 3)); /* not over batch */
    CHECK(af_feature_bias(&c, 0, 0, 0, 3) != af_feature_bias(&c, 0, 0, 0, 4));
    af_inputs in;
    CHECK(af_inputs_alloc(&in, &c) == 0);
    CHECK(in.feat.bias_b == 2 && in.feat.bias_h == 1 && in.feat.bias_q == 1);
    CHECK(in.bias[1 * 7 + 6] == (double)af_feature_bias(&c, 1, 0, 0, 6)); /* (2, 1, 1, 7) dense */
    af_inputs_free(&in);
    c.bias = AF_BIAS_B1SS; /* the full shape keeps its query axis */
    CHECK(af_feature_bias_rows(&c) == 5 && af_feature_bias(&c, 0, 0, 1, 3) != af_feature_bias(&c, 0, 0, 2, 3));
    CHECK(af_bias_query_broadcast(AF_BIAS_1HSS) == AF_BIAS_1H1S && af_bias_full_query(AF_BIAS_BH1S) == AF_BIAS_BHSS);
}

static void test_slopes(void) {
    af_case c;
    af_error e;
    /* the ALiBi paper's recipe for 6 heads: 2^-2, 2^-4, 2^-6, 2^-8 (4 heads), then every
     * other slope of 8 heads: 2^-1, 2^-3 */
    CHECK(parse("heads = 6\nalibi = abs\n", &c, &e) == 0);
    const float want6[6] = {0x1p-2f, 0x1p-4f, 0x1p-6f, 0x1p-8f, 0x1p-1f, 0x1p-3f};
    for (int h = 0; h < 6; h++)
        CHECK_MSG(af_feature_alibi_slope(&c, 0, h) == want6[h], "abs slope[%d] = %g, want %g", h,
                  af_feature_alibi_slope(&c, 0, h), want6[h]);
    c.alibi = AF_ALIBI_YES; /* yes keeps 2^(-8 (h + 1) / heads_q) */
    CHECK(af_feature_alibi_slope(&c, 0, 2) == (float)exp2(-8.0 * 3 / 6));
    CHECK(parse("heads = 8\nalibi = signed\n", &c, &e) == 0); /* power of two: the two recipes agree */
    for (int h = 0; h < 8; h++) {
        af_case y = c;
        y.alibi = AF_ALIBI_YES;
        CHECK(af_feature_alibi_slope(&c, 0, h) == af_feature_alibi_slope(&y, 0, h));
    }
    CHECK(parse("batch = 3\nheads = 4\nalibi = signed\nalibi_slopes = random_batch\nseed = 7\n", &c, &e) == 0);
    CHECK(af_feature_alibi_batch(&c) == 3);
    for (int b = 0; b < 3; b++)
        for (int h = 0; h < 4; h++) {
            float m = af_feature_alibi_slope(&c, b, h);
            CHECK_MSG(m > 0.0f && m <= 1.0f && m == af_feature_alibi_slope(&c, b, h), "slope(%d, %d) = %g", b, h, m);
            CHECK(ldexpf(m, 24) == floorf(ldexpf(m, 24))); /* on the 2^-24 grid */
        }
    CHECK(af_feature_alibi_slope(&c, 0, 1) != af_feature_alibi_slope(&c, 1, 1)); /* per batch */
    af_case other = c;
    other.seed = 8;
    CHECK(af_feature_alibi_slope(&c, 0, 1) != af_feature_alibi_slope(&other, 0, 1)); /* from the seed */
    af_inputs in;
    CHECK(af_inputs_alloc(&in, &c) == 0);
    CHECK(in.feat.alibi && in.feat.alibi_signed && in.feat.alibi_b == 3);
    CHECK(in.alibi_slope[2 * 4 + 3] == (double)af_feature_alibi_slope(&c, 2, 3));
    af_inputs_free(&in);
    c.alibi_slopes = AF_SLOPES_RANDOM; /* per head: every sequence the same */
    CHECK(af_feature_alibi_batch(&c) == 1 && af_feature_alibi_slope(&c, 0, 1) == af_feature_alibi_slope(&c, 2, 1));
}

int main(void) {
    test_fields();
    test_bias_rows();
    test_slopes();
    printf("test_case_bias_alibi: ok\n");
    return 0;
}
