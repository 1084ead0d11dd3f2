/* test_numeric.c — storage conversions (af_numeric.h), exhaustively where possible. */
#include <math.h>
#include <string.h>

#include "model/numeric.h"
#include "util/check.h"

/* Reference rounding: nearest representable value among a sorted table of finite
 * values, ties to the even encoding. */
static double table_round(const double *vals, const int *codes, int n, double x, int *code) {
    int best = 0;
    for (int i = 1; i < n; i++) {
        double di = fabs(vals[i] - x), db = fabs(vals[best] - x);
        if (di < db || (di == db && (codes[i] & 1) == 0 && (codes[best] & 1))) best = i;
    }
    *code = codes[best];
    return vals[best];
}

int main(void) {
    /* fp16: decode every pattern, re-encode finite ones exactly */
    for (unsigned u = 0; u < 65536; u++) {
        float f = af_f16_to_f32((uint16_t)u);
        if (isnan(f)) {
            CHECK(isnan(af_f16_to_f32(af_f32_to_f16(f))));
            continue;
        }
        CHECK_MSG(af_f32_to_f16(f) == u, "fp16 0x%04x -> %g -> 0x%04x", u, f, af_f32_to_f16(f));
    }
#ifdef __FLT16_MAX__
    /* fp16 rounding against the compiler's _Float16 conversion on many floats */
    {
        uint32_t x = 12345;
        for (int i = 0; i < 2000000; i++) {
            x = x * 1664525u + 1013904223u;
            float f = af_bits_f32(x);
            if (isnan(f)) continue;
            _Float16 h = (_Float16)f;
            uint16_t ref;
            memcpy(&ref, &h, 2);
            CHECK_MSG(af_f32_to_f16(f) == ref, "fp16(%a) = 0x%04x, compiler 0x%04x", (double)f, af_f32_to_f16(f), ref);
        }
    }
#endif
    /* fp16 known values */
    CHECK(af_f32_to_f16(1.0f) == 0x3C00 && af_f32_to_f16(-2.0f) == 0xC000);
    CHECK(af_f32_to_f16(65504.0f) == 0x7BFF && af_f32_to_f16(65520.0f) == 0x7C00 && af_f32_to_f16(65519.0f) == 0x7BFF);
    CHECK(af_f32_to_f16(0x1p-24f) == 0x0001 && af_f32_to_f16(0x1p-25f) == 0x0000 &&
          af_f32_to_f16(0x1.8p-25f) == 0x0001);
    CHECK(af_f32_to_f16(1.0f + 0x1p-11f) == 0x3C00);            /* tie -> even */
    CHECK(af_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01); /* above tie */
    CHECK(af_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3C02);        /* tie -> even (up) */

    /* bf16: decode every pattern; rounding by the definition */
    for (unsigned u = 0; u < 65536; u++) {
        float f = af_bf16_to_f32((uint16_t)u);
        if (isnan(f)) continue;
        CHECK(af_f32_to_bf16(f) == u);
    }
    CHECK(af_f32_to_bf16(1.0f + 0x1p-8f) == 0x3F80);     /* tie -> even */
    CHECK(af_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82); /* tie -> even (up) */
    CHECK(af_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3F81);

    /* e4m3: the finite table, then rounding of many values against it */
    double vals[256];
    int codes[256], n = 0;
    for (int b = 0; b < 256; b++) {
        float f = af_e4m3_to_f32((uint8_t)b);
        if ((b & 0x7F) == 0x7F) {
            CHECK(isnan(f));
            continue;
        }
        CHECK(!isnan(f));
        CHECK_MSG(af_f32_to_e4m3(f) == b || (f == 0 && (b & 0x7F) == 0), "e4m3 0x%02x -> %g -> 0x%02x", b, f,
                  af_f32_to_e4m3(f));
        if (b & 0x80) continue; /* positive half; sign handled symmetrically */
        vals[n] = f;
        codes[n] = b;
        n++;
    }
    CHECK(n == 127);
    CHECK(af_e4m3_to_f32(0x7E) == 448.0f && af_e4m3_to_f32(0x01) == 0x1p-9f && af_e4m3_to_f32(0x08) == 0x1p-6f);
    {
        uint32_t x = 99;
        for (int i = 0; i < 200000; i++) {
            x = x * 1664525u + 1013904223u;
            float f = ldexpf((float)(x >> 8) / 16777216.0f, (int)(x % 24) - 12);
            int code;
            double ref = table_round(vals, codes, n, f, &code);
            uint8_t got = af_f32_to_e4m3(f);
            if (f >= 464.0f) {
                CHECK(got == 0x7E);
                continue;
            }
            CHECK_MSG(got == code, "e4m3(%a) = 0x%02x (%g), expected 0x%02x (%g)", (double)f, got, af_e4m3_to_f32(got),
                      code, ref);
            CHECK(af_f32_to_e4m3(-f) == (got | 0x80) || (got == 0));
        }
    }
    CHECK(af_f32_to_e4m3(1e9f) == 0x7E && af_f32_to_e4m3(-1e9f) == 0xFE); /* saturating */
    CHECK(af_f32_to_e4m3(NAN) == 0x7F);

    /* e5m2: every code against its definition (bias 15, 2 mantissa bits, exponent 31 is
     * Inf / NaN), re-encoded exactly; rounding of many values against the finite table;
     * overflow saturates at 57344 (not E4M3's 448), Inf stays Inf */
    n = 0;
    for (int b = 0; b < 256; b++) {
        float f = af_e5m2_to_f32((uint8_t)b);
        int e = (b >> 2) & 31, m = b & 3;
        double def = e == 0 ? m * 0x1p-16 : ldexp(1.0 + m / 4.0, e - 15);
        if (b & 0x80) def = -def;
        if (e == 31) {
            CHECK_MSG(m == 0 ? isinf(f) && (f > 0) == !(b & 0x80) : isnan(f), "e5m2 0x%02x -> %g", b, f);
            continue;
        }
        CHECK_MSG((double)f == def, "e5m2 0x%02x -> %g, defined %g", b, f, def);
        CHECK_MSG(af_f32_to_e5m2(f) == b || (f == 0 && (b & 0x7F) == 0), "e5m2 0x%02x -> %g -> 0x%02x", b, f,
                  af_f32_to_e5m2(f));
        if (b & 0x80) continue;
        vals[n] = f;
        codes[n] = b;
        n++;
    }
    CHECK(n == 124);
    CHECK(af_e5m2_to_f32(0x7B) == 57344.0f && af_e5m2_to_f32(0x01) == 0x1p-16f && af_e5m2_to_f32(0x04) == 0x1p-14f);
    {
        uint32_t x = 4321;
        for (int i = 0; i < 200000; i++) {
            x = x * 1664525u + 1013904223u;
            float f = ldexpf((float)(x >> 8) / 16777216.0f, (int)(x % 36) - 20);
            int code;
            double ref = table_round(vals, codes, n, f, &code);
            uint8_t got = af_f32_to_e5m2(f);
            if (f >= 61440.0f) { /* the midpoint between 57344 and 65536 (where Inf would be) */
                CHECK(got == 0x7B);
                continue;
            }
            CHECK_MSG(got == code, "e5m2(%a) = 0x%02x (%g), expected 0x%02x (%g)", (double)f, got, af_e5m2_to_f32(got),
                      code, ref);
            CHECK(af_f32_to_e5m2(-f) == (got | 0x80) || (got == 0));
        }
    }
    CHECK(af_f32_to_e5m2(448.0f) == 0x5F && af_f32_to_e5m2(1000.0f) == 0x64); /* no E4M3 saturation */
    CHECK(af_f32_to_e5m2(1.0f + 0x1p-3f) == 0x3C);                            /* tie -> even (down) */
    CHECK(af_f32_to_e5m2(1.0f + 3 * 0x1p-3f) == 0x3E);                        /* tie -> even (up) */
    CHECK(af_f32_to_e5m2(0x1p-17f) == 0x00 && af_f32_to_e5m2(0x1.8p-17f) == 0x01);
    CHECK(af_f32_to_e5m2(1e9f) == 0x7B && af_f32_to_e5m2(-1e9f) == 0xFB); /* saturating */
    CHECK(af_f32_to_e5m2(INFINITY) == 0x7C && af_f32_to_e5m2(-INFINITY) == 0xFC);
    CHECK(isnan(af_e5m2_to_f32(af_f32_to_e5m2(NAN))));
    CHECK_DONE("test_numeric");
}
