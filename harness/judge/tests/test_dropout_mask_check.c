/* test_dropout_mask_check.c — judge/dropout_mask.h, the statistical check of a kernel's
 * returned dropout mask (dropout_rng = kernel):
 *  - the bound is Hoeffding's t(n) = sqrt(n ln(2 m / 1e-9) / 2), recomputed here;
 *  - fair masks (Philox draws of model/dropout.c under 200 keys) pass, every test counted;
 *  - a mask whose keep rate is 0.4 at p = 0.5 fails the whole-mask test, one row always
 *    kept fails the row test, one column always dropped the column test;
 *  - a byte other than 0 / 1 where a row sees the key is unwritten; where the causal mask
 *    hides the key, or past the sequence's length, it is not read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judge/dropout_mask.h"
#include "model/dropout.h"
#include "util/check.h"

enum { S = 64 };

static void fair_mask(uint64_t key, double p, uint8_t *keep) {
    af_dropout_keep_run(key, 0, af_dropout_threshold(p), 0, (int64_t)S * S, keep);
}

static bool has_finding(const af_verdict *v, af_verdict_kind kind, const char *needle) {
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        if (v->findings[i].kind == kind && strstr(v->findings[i].detail, needle)) return true;
    return false;
}

int main(void) {
    af_case c;
    af_case_defaults(&c);
    c.seqlen_q = c.seqlen_kv = S;
    c.dropout_p = 0.5, c.dropout_seed = 1, c.dropout_rng = AF_DROPOUT_RNG_KERNEL;
    uint8_t *keep = malloc((size_t)S * S);
    CHECK(keep != NULL);

    /* the bound: m = 1 + 64 rows + 64 columns */
    double t64 = sqrt(64.0 * log(2.0 * 129.0 / 1e-9) / 2.0);
    CHECK_MSG(fabs(af_dropout_mask_bound(64, 129) - t64) < 1e-12 && t64 > 28.9 && t64 < 29.1, "t(64) = %g", t64);

    /* fair masks pass (a false alarm is below 1e-9 a case) */
    af_verdict v;
    af_dropout_mask_stats st;
    int failed = 0;
    for (uint64_t key = 1; key <= 200; key++) {
        fair_mask(key * 0x9E3779B97F4A7C15ull, 0.5, keep);
        af_verdict_init(&v, "t");
        failed += af_dropout_mask_check(&c, keep, &v, &st) != 0;
    }
    CHECK_MSG(failed == 0, "%d of 200 fair masks failed", failed);
    CHECK_MSG(st.counted == S * S && st.tests == 129 && st.failed == 0, "counted %lld tests %lld failed %lld",
              st.counted, st.tests, st.failed);

    /* keep rate 0.4 at p = 0.5: 410 below n q = 2048 of 4096, over 232 + 16 */
    fair_mask(7, 0.6, keep);
    af_verdict_init(&v, "t");
    CHECK(af_dropout_mask_check(&c, keep, &v, &st) >= 1);
    CHECK_MSG(has_finding(&v, AF_V_FEATURE_IGNORED, "of the whole mask"), "%s", v.findings[0].detail);

    /* one row always kept: 32 above its mean against 29.3 */
    fair_mask(7, 0.5, keep);
    memset(keep + 7 * S, 1, S);
    af_verdict_init(&v, "t");
    CHECK(af_dropout_mask_check(&c, keep, &v, &st) == 1);
    CHECK_MSG(has_finding(&v, AF_V_FEATURE_IGNORED, "of a row (b 0, h 0, 7)"), "%s", v.findings[0].detail);

    /* one column always dropped */
    fair_mask(7, 0.5, keep);
    for (int i = 0; i < S; i++) keep[i * S + 5] = 0;
    af_verdict_init(&v, "t");
    CHECK(af_dropout_mask_check(&c, keep, &v, &st) == 1);
    CHECK_MSG(has_finding(&v, AF_V_FEATURE_IGNORED, "of a column (b 0, h 0, 5)"), "%s", v.findings[0].detail);

    /* a byte the kernel left (the poison) where a row sees the key: unwritten */
    fair_mask(7, 0.5, keep);
    keep[3 * S + 2] = 0xA5;
    af_verdict_init(&v, "t");
    CHECK(af_dropout_mask_check(&c, keep, &v, NULL) == 1 && has_finding(&v, AF_V_UNWRITTEN, "row 3, key 2 = 165"));

    /* causal: bytes above the diagonal are not read (nor counted) */
    c.mask = AF_MASK_CAUSAL;
    fair_mask(7, 0.5, keep);
    for (int i = 0; i < S; i++)
        for (int j = i + 1; j < S; j++) keep[i * S + j] = 0xA5;
    af_verdict_init(&v, "t");
    CHECK(af_dropout_mask_check(&c, keep, &v, &st) == 0 && st.counted == S * (S + 1) / 2);

    free(keep);
    CHECK_DONE("test_dropout_mask_check");
}
