/* fuzz_decoder.c — libFuzzer target for the fuzz decoder alone (harness/fuzz): bytes ->
 * case, no backend run, so it runs at parser speed (ci/fuzz_long.sh).
 *
 * Any bytes under the default limits: decoding must not crash (ASan/UBSan watch), must
 * not fall back to the default case (af_fuzz_decode returns 1: a decoder bug), must give
 * a case af_case_validate accepts, and encoding that case must give bytes that decode
 * back to the same case (fuzz.h: a case within the limits round-trips). A violation
 * aborts with the case printed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz/fuzz.h"

static void dump_case(const char *what, const af_case *c) {
    static char text[1 << 16];
    af_case_print(c, text, sizeof text);
    fprintf(stderr, "%s:\n%s", what, text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static af_fuzz_limits lim;
    static int have_limits;
    if (!have_limits) {
        af_fuzz_limits_default(&lim);
        have_limits = 1;
    }
    af_case c, d;
    af_error err;
    if (af_fuzz_decode(data, size, &lim, &c) != 0) {
        fprintf(stderr, "ASSERTION FAILED: the decoder fell back to the default case (repair failed)\n");
        abort();
    }
    if (af_case_validate(&c, &err) != 0) {
        fprintf(stderr, "ASSERTION FAILED: decoded case does not validate: %s: %s\n", err.field, err.message);
        dump_case("decoded", &c);
        abort();
    }
    static uint8_t enc[AF_FUZZ_MAX_ENCODED]; /* [AF_FUZZ_MAX_ENCODED] bytes: the encoding of c */
    size_t n = af_fuzz_encode(&c, enc, sizeof enc);
    if (n == 0) {
        fprintf(stderr, "ASSERTION FAILED: a decoded case does not fit AF_FUZZ_MAX_ENCODED bytes\n");
        dump_case("decoded", &c);
        abort();
    }
    if (af_fuzz_decode(enc, n, &lim, &d) != 0 || !af_case_equal(&c, &d)) {
        fprintf(stderr, "ASSERTION FAILED: encode -> decode changed the case\n");
        dump_case("decoded", &c);
        dump_case("after encode -> decode", &d);
        abort();
    }
    return 0;
}
