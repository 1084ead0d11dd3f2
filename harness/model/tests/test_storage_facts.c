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

int main(void) {
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
