/* test_mathf.c — af_expf / af_logf (harness/model/mathf.h) against libm.
 *
 * Inputs: every float exponent (both signs, 4096 mantissas each, the extremes
 * included), a stride through all 2^32 bit patterns, and the special values. For each
 * finite result the error is measured in float ulps against double libm (exp, log:
 * far more accurate than a float ulp) and must stay <= 0.5 + 1e-6 (i.e. correctly
 * rounded but for midpoint cases); the distance to float libm (expf, logf) must be at
 * most 1 ulp. Special values: NaN -> NaN, +-inf, overflow to inf, underflow through the
 * subnormals to 0, log of 0, of negatives and of subnormals. Prints the maxima.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model/mathf.h"
#include "util/check.h"

typedef struct {
    double max_ulp_exact;   /* vs double libm, in float ulps */
    uint32_t max_ulp_libmf; /* vs float libm, in representable steps */
    long long n_differ;     /* results other than float libm's */
    float worst_x;
    long long n;
} err_stats;

/* Integer key of a float whose order is the numeric order (-0 and +0 adjacent). */
static int64_t ordered(float f) {
    uint32_t u = af_f32_bits(f);
    return (u & 0x80000000u) ? -(int64_t)(u & 0x7FFFFFFFu) : (int64_t)u;
}

/* |f - ref| in units of the float ulp at ref (subnormal ulp below 2^-126). */
static double ulp_error(float f, double ref) {
    int e;
    frexp(ref, &e); /* ref = m 2^e, m in [0.5, 1) */
    if (e - 1 < -126) e = -125;
    double ulp = ldexp(1.0, e - 1 - 23);
    return fabs((double)f - ref) / ulp;
}

static void check_one(err_stats *st, const char *name, float x, float mine, float libm_f, double exact) {
    st->n++;
    if (isnan(exact)) {
        CHECK_MSG(isnan(mine), "%s(%a) = %a, want NaN", name, (double)x, (double)mine);
        return;
    }
    if (fabs(exact) >= 3.4028235677973366e+38) { /* rounds to +-inf */
        CHECK_MSG(isinf(mine) && (mine > 0) == (exact > 0), "%s(%a) = %a, want inf", name, (double)x, (double)mine);
        return;
    }
    CHECK_MSG(!isnan(mine) && !isinf(mine), "%s(%a) = %a, want %a", name, (double)x, (double)mine, exact);
    double u = ulp_error(mine, exact);
    if (u > st->max_ulp_exact) {
        st->max_ulp_exact = u;
        st->worst_x = x;
    }
    CHECK_MSG(u <= 0.5 + 1e-6, "%s(%a) = %a, exact %a: %.9f ulp", name, (double)x, (double)mine, exact, u);
    int64_t d = ordered(mine) - ordered(libm_f);
    uint32_t ad = (uint32_t)(d < 0 ? -d : d);
    if (ad > st->max_ulp_libmf) st->max_ulp_libmf = ad;
    if (ad) st->n_differ++;
    CHECK_MSG(ad <= 1, "%s(%a) = %a, libm %a: %u ulp apart", name, (double)x, (double)mine, (double)libm_f, ad);
}

static void test_input(err_stats *se, err_stats *sl, float x) {
    check_one(se, "af_expf", x, af_expf(x), expf(x), exp((double)x));
    check_one(sl, "af_logf", x, af_logf(x), logf(x), log((double)x));
}

static void specials(void) {
    const float inf = af_bits_f32(0x7F800000u), ninf = af_bits_f32(0xFF800000u);
    CHECK(af_expf(inf) == inf);
    CHECK(af_expf(ninf) == 0.0f && !signbit(af_expf(ninf)));
    CHECK(af_expf(0.0f) == 1.0f && af_expf(-0.0f) == 1.0f);
    CHECK(af_expf(88.72283172607421875f) == expf(88.72283172607421875f)); /* largest finite */
    CHECK(!isinf(af_expf(88.72283172607421875f)));
    CHECK(isinf(af_expf(88.7228394f)) && isinf(af_expf(89.0f)) && isinf(af_expf(1e30f)));
    CHECK(af_expf(-87.5f) > 0.0f && af_expf(-87.5f) < 1.17549435e-38f); /* subnormal */
    CHECK(af_expf(-103.9f) == 1.40129846e-45f);                         /* smallest subnormal */
    CHECK(af_expf(-104.0f) == 0.0f && af_expf(-1e30f) == 0.0f);
    CHECK(af_logf(0.0f) == ninf && af_logf(-0.0f) == ninf);
    CHECK(af_logf(inf) == inf && af_logf(1.0f) == 0.0f && !signbit(af_logf(1.0f)));
    CHECK(isnan(af_logf(-1.0f)) && isnan(af_logf(ninf)) && isnan(af_logf(-1e-45f)));
    CHECK(af_logf(1.40129846e-45f) == logf(1.40129846e-45f)); /* log of the smallest subnormal */
    /* NaN in, quiet NaN out with the payload kept (bit operations only) */
    uint32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FC0DEADu, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        float n = af_bits_f32(nans[i]);
        CHECK(af_f32_bits(af_expf(n)) == (nans[i] | 0x00400000u));
        CHECK(af_f32_bits(af_logf(n)) == (nans[i] | 0x00400000u));
    }
}

int main(void) {
    err_stats se, sl;
    memset(&se, 0, sizeof se);
    memset(&sl, 0, sizeof sl);
    specials();
    /* every exponent, both signs: the extremes and a spread of mantissas */
    for (uint32_t sign = 0; sign < 2; sign++)
        for (uint32_t exp = 0; exp < 255; exp++)
            for (uint32_t k = 0; k < 4096; k++) {
                uint32_t mant = k == 4095 ? 0x7FFFFFu : (k * 2049u) & 0x7FFFFFu;
                test_input(&se, &sl, af_bits_f32((sign << 31) | (exp << 23) | mant));
            }
    /* a stride through every bit pattern (NaNs and infinities included) */
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 251) test_input(&se, &sl, af_bits_f32((uint32_t)u));
    /* dense around the interesting places: exp near overflow/underflow, log near 1 */
    for (uint32_t i = 0; i < 1u << 20; i++) {
        test_input(&se, &sl, af_bits_f32(0x42B00000u + i)); /* [88, 88.7..) */
        test_input(&se, &sl, af_bits_f32(0xC2AE0000u + i)); /* (-87 .. -104) */
        test_input(&se, &sl, af_bits_f32(0x3F800000u - i)); /* just below 1 */
        test_input(&se, &sl, af_bits_f32(0x3F800000u + i)); /* just above 1 */
    }
    printf("af_expf: %lld inputs, max error %.9f ulp vs double exp (at %a), max %u ulp from expf (%lld differ)\n", se.n,
           se.max_ulp_exact, (double)se.worst_x, se.max_ulp_libmf, se.n_differ);
    printf("af_logf: %lld inputs, max error %.9f ulp vs double log (at %a), max %u ulp from logf (%lld differ)\n", sl.n,
           sl.max_ulp_exact, (double)sl.worst_x, sl.max_ulp_libmf, sl.n_differ);
    CHECK_DONE("test_mathf");
}
