/* test_storage_facts.c — the one table of storage facts (model/layout.h) against the
 * storage codecs themselves (af_storage_store / af_storage_load, model/numeric.h): for each
 * type, its bytes; 1 + unit stored and read back exactly while 1 + unit / 2 rounds to 1
 * (ties to even); the largest finite value read back exactly and the next step up
 * overflowing (fp16, bf16, fp32: to Inf; E4M3, E5M2: saturating, as their codecs
 * document); the smallest normal exact and half of it still exact (a subnormal) while a
 * quarter of the subnormal step rounds to 0 or to the step (round to nearest); and the
 * wrappers (af_storage_unit, af_storage_min_normal, af_storage_subnormal_half_step,
 * af_storage_fp8_max) reading the same rows.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/layout.h"
#include "model/tensors.h"
#include "util/check.h"

static double roundtrip(af_storage s, double x) {
    unsigned char buf[8];
    memset(buf, 0, sizeof buf);
    af_storage_store(s, buf, 0, (float)x);
    return af_storage_load(s, buf, 0);
}

/* af_storage_row_finite, decided on the bits, against isfinite(af_storage_load) element by
 * element: every 16-bit and 8-bit pattern (alone, and as the last of a finite row), float
 * patterns around the exponent's edges, and each storage's poison (a NaN: not finite). */
static void row_finite(void) {
    static const af_storage st[5] = {AF_ST_F16, AF_ST_BF16, AF_ST_E4M3, AF_ST_E5M2, AF_ST_F32};
    uint8_t row[8 * 4];
    for (int i = 0; i < 5; i++) {
        int size = af_storage_bytes(st[i]);
        uint32_t patterns = size == 1 ? 256u : size == 2 ? 65536u : 0u;
        long mismatches = 0, nonfinite = 0;
        for (uint32_t u = 0; u < patterns; u++) {
            memset(row, 0, sizeof row); /* zeros: finite in every storage */
            memcpy(row + 7 * size, &u, (size_t)size);
            bool want = isfinite(af_storage_load(st[i], row, 7));
            nonfinite += !want;
            mismatches += af_storage_row_finite(st[i], row, 7, 1) != want;
            mismatches += af_storage_row_finite(st[i], row, 0, 8) != want;
        }
        if (size == 4) {
            static const uint32_t f32[8] = {0,           0x3F800000u, 0x7F7FFFFFu, 0x7F800000u,
                                            0xFF800000u, 0x7F800001u, 0x00000001u, 0xFFC00000u};
            for (int k = 0; k < 8; k++) {
                memset(row, 0, sizeof row);
                memcpy(row + 28, &f32[k], 4);
                bool want = isfinite(af_storage_load(st[i], row, 7));
                nonfinite += !want;
                mismatches += af_storage_row_finite(st[i], row, 0, 8) != want;
            }
        }
        CHECK_MSG(mismatches == 0, "storage %d: %ld row_finite answers differ from isfinite(load)", i, mismatches);
        CHECK(nonfinite > 0);
        uint32_t poison = st[i] == AF_ST_F16    ? AF_POISON_F16
                          : st[i] == AF_ST_BF16 ? AF_POISON_BF16
                          : st[i] == AF_ST_E4M3 ? AF_POISON_E4M3
                          : st[i] == AF_ST_E5M2 ? AF_POISON_E5M2
                                                : AF_POISON_F32;
        memset(row, 0, sizeof row);
        memcpy(row, &poison, (size_t)size);
        CHECK_MSG(!af_storage_row_finite(st[i], row, 0, 8) && isnan(af_storage_load(st[i], row, 0)),
                  "storage %d: its poison is not a NaN", i);
        printf("row_finite: storage %d, %u patterns, %ld not finite: the same as isfinite(load)\n", i,
               patterns ? patterns : 8u, nonfinite);
    }
}

int main(void) {
    row_finite();
    static const struct {
        af_storage s;
        const char *name;
        bool saturates;
    } types[] = {{AF_ST_F16, "fp16", false},
                 {AF_ST_BF16, "bf16", false},
                 {AF_ST_E4M3, "e4m3", true},
                 {AF_ST_E5M2, "e5m2", true},
                 {AF_ST_F32, "fp32", false}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        af_storage s = types[i].s;
        const af_storage_facts *f = af_storage_facts_of(s);
        const char *n = types[i].name;
        CHECK_MSG(af_storage_bytes(s) == f->bytes && f->bytes > 0, "%s: bytes", n);
        if (s != AF_ST_F32) { /* fp32's spacing at 1 is below what a float argument can miss */
            CHECK_MSG(roundtrip(s, 1.0 + f->unit) == 1.0 + f->unit, "%s: 1 + unit not exact", n);
            CHECK_MSG(roundtrip(s, 1.0 + f->unit / 2) == 1.0, "%s: 1 + unit/2 does not round to 1", n);
            CHECK_MSG(roundtrip(s, 1.0 + 0.75 * f->unit) == 1.0 + f->unit, "%s: 1 + 3/4 unit does not round up", n);
        } else {
            CHECK(f->unit == (double)FLT_EPSILON);
        }
        CHECK_MSG(roundtrip(s, f->max_finite) == f->max_finite, "%s: max %g not exact", n, f->max_finite);
        /* the next step above the largest finite value (its exponent's ulp) */
        double step = ldexp(f->unit, ilogb(f->max_finite));
        if (s != AF_ST_F32 && s != AF_ST_BF16) {
            double up = roundtrip(s, f->max_finite + step);
            CHECK_MSG(types[i].saturates ? up == f->max_finite : isinf(up), "%s: max + step read %g", n, up);
        }
        CHECK_MSG(roundtrip(s, f->min_normal) == f->min_normal, "%s: min normal not exact", n);
        CHECK_MSG(roundtrip(s, f->min_normal / 2) == f->min_normal / 2, "%s: min normal / 2 not a subnormal", n);
        double sub = 2 * f->subnormal_half_step; /* the smallest subnormal */
        if (s != AF_ST_F32) {
            CHECK_MSG(roundtrip(s, sub) == sub, "%s: the smallest subnormal %g not exact", n, sub);
            CHECK_MSG(roundtrip(s, sub / 4) == 0.0, "%s: a quarter of the smallest subnormal does not flush", n);
            CHECK_MSG(roundtrip(s, 0.75 * sub) == sub, "%s: 3/4 of the smallest subnormal does not round up", n);
        }
        printf("%s: %d B, unit %a, max %g, min normal %a, subnormal half step %a\n", n, f->bytes, f->unit,
               f->max_finite, f->min_normal, f->subnormal_half_step);
    }
    CHECK(af_storage_fp8_max(AF_ST_E4M3) == 448.0f && af_storage_fp8_max(AF_ST_E5M2) == 57344.0f);
    CHECK(af_storage_fp8_max(AF_ST_F16) == 0.0f && af_storage_fp8_max(AF_ST_BF16) == 0.0f);
    CHECK_DONE("test_storage_facts");
}
