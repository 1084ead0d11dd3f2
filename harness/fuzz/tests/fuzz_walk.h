/* fuzz_walk.h — shared by the fuzz tests that walk the mutator: one step of the walk. */
#ifndef ATTNFUZZ_FUZZ_WALK_H
#define ATTNFUZZ_FUZZ_WALK_H

#include <stdint.h>

#include "fuzz/fuzz.h"
#include "util/check.h"

/* Step k: mutate c; the case must stay valid and come back equal through the fuzz
 * encoding (decode(encode(c)) == c). */
static void fz_walk_step(af_case *c, const af_fuzz_limits *lim, uint64_t *rng, int k) {
    af_fuzz_mutate_case(c, lim, rng);
    af_error e;
    CHECK_MSG(af_case_validate(c, &e) == 0, "step %d: invalid case: %s: %s", k, e.field, e.message);
    uint8_t bytes[AF_FUZZ_MAX_ENCODED];
    size_t n = af_fuzz_encode(c, bytes, sizeof bytes);
    af_case back;
    CHECK(n > 0 && af_fuzz_decode(bytes, n, lim, &back) == 0);
    CHECK_MSG(af_case_equal(c, &back), "step %d: the encoding does not decode back", k);
}

#endif
