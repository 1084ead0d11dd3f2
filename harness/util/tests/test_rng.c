/* test_rng.c — util/rng.h: af_rng_splitmix64 is splitmix64 (the published generator's
 * outputs from state 0), and af_rng_mix64 is its finaliser without the increment. The
 * callers (page permutation, shards, probes, the oracle's sampled rows) depend on these
 * exact words: a different word changes which pages, cells and rows they pick. */
#include <stdint.h>

#include "util/check.h"
#include "util/rng.h"

int main(void) {
    const uint64_t golden = 0x9e3779b97f4a7c15ull;
    /* the splitmix64 generator seeded with 0: state += golden, then the finaliser */
    CHECK(af_rng_splitmix64(0) == 0xe220a8397b1dcdafull);
    CHECK(af_rng_splitmix64(golden) == 0x6e789e6aa1b965f4ull);
    CHECK(af_rng_splitmix64(12345) == 0x22118258a9d111a0ull);
    /* the step is the finaliser of the incremented state (wrapping at 2^64) */
    for (uint64_t x = 0; x < 64; x++) {
        uint64_t v = x * 0x0123456789abcdefull ^ (x << 58);
        CHECK(af_rng_splitmix64(v) == af_rng_mix64(v + golden));
    }
    CHECK(af_rng_splitmix64(UINT64_MAX) == af_rng_mix64(golden - 1));
    CHECK(af_rng_mix64(0) == 0); /* the finaliser alone fixes 0: why callers add the increment */
    CHECK_DONE("test_rng");
}
