/* test_dropout_mask.c — the backends' dropout mask (model/dropout.h), as a specification:
 *   - Philox4x32-10 gives the published known answers (Random123, tests/kat_vectors:
 *     the all-zero, all-ones and pi-digits counter / key);
 *   - the mask replays bitwise: the same (seed, offset, p) give the same mask, by element
 *     and by run; another offset or seed gives another mask;
 *   - the row walk (af_dropout_keep_run) agrees with the element rule, across Philox
 *     block boundaries and the carry of the block counter into its high word;
 *   - the keep rate is binomial: over N elements, kept K satisfies
 *     |K - N q| <= 6 sqrt(N q (1 - q)), q = 1 - threshold / 2^32 (6 sigma: a correct
 *     generator fails one run in ~5e8); p = 0 keeps everything.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dropout.h"
#include "util/check.h"

static void test_kat(void) {
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[3] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
         {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
         {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (int k = 0; k < 3; k++) {
        uint32_t out[4];
        af_philox4x32_10(kat[k].ctr, kat[k].key, out);
        printf("kat %d: %08x %08x %08x %08x\n", k, out[0], out[1], out[2], out[3]);
        CHECK_MSG(!memcmp(out, kat[k].out, sizeof out), "Philox4x32-10 known answer %d", k);
    }
}

static void test_threshold(void) {
    CHECK(af_dropout_threshold(0.0) == 0);
    CHECK(af_dropout_threshold(0.5) == 0x80000000u);
    CHECK(af_dropout_threshold(0.25) == 0x40000000u);
    CHECK(af_dropout_threshold(0.9999999999999) == 0xFFFFFFFFu);
    CHECK(af_dropout_threshold(NAN) == 0);
}

static void test_replay_and_walk(void) {
    enum { N = 4099 };
    uint8_t a[N], b[N], c[N];
    uint32_t th = af_dropout_threshold(0.3);
    const uint64_t offsets[2] = {7, 0xFFFFFFFFull - 100}; /* the second crosses into c1 */
    for (int o = 0; o < 2; o++) {
        af_dropout_keep_run(0x123456789abcdefull, offsets[o], th, 3, N, a);
        af_dropout_keep_run(0x123456789abcdefull, offsets[o], th, 3, N, b);
        CHECK_MSG(!memcmp(a, b, N), "the mask does not replay (offset %llu)", (unsigned long long)offsets[o]);
        for (int k = 0; k < N; k++)
            CHECK_MSG(a[k] == !af_dropout_dropped(0x123456789abcdefull, offsets[o], th, 3 + (uint64_t)k),
                      "row walk and element rule differ at %d", k);
    }
    af_dropout_keep_run(0x123456789abcdefull, 8, th, 3, N, c); /* offset + 1 block */
    int same_shifted = 0, same = 0;
    af_dropout_keep_run(0x123456789abcdefull, 7, th, 3, N, a);
    for (int k = 0; k + 4 < N; k++) same_shifted += c[k] == a[k + 4], same += c[k] == a[k];
    CHECK_MSG(same_shifted == N - 4, "offset + 1 is the mask 4 elements on (%d of %d)", same_shifted, N - 4);
    CHECK_MSG(same < N * 0.7, "offset + 1 gives nearly the same mask (%d of %d equal)", same, N);
    af_dropout_keep_run(0x123456789abcdeeull, 7, th, 3, N, b);
    same = 0;
    for (int k = 0; k < N; k++) same += a[k] == b[k];
    CHECK_MSG(same < N * 0.7, "another seed gives nearly the same mask (%d of %d)", same, N);
}

static void test_keep_rate(void) {
    const int64_t n = 1 << 20;
    uint8_t *keep = malloc((size_t)n);
    CHECK(keep);
    const double ps[4] = {0.0, 0.1, 0.5, 0.875};
    for (int k = 0; k < 4; k++) {
        uint32_t th = af_dropout_threshold(ps[k]);
        af_dropout_keep_run(1000 + (uint64_t)k, 3 * (uint64_t)k, th, 0, n, keep);
        long long kept = 0;
        for (int64_t e = 0; e < n; e++) kept += keep[e];
        double q = 1.0 - th / 4294967296.0, mean = n * q, sigma = sqrt(n * q * (1 - q));
        printf("p %.3f: kept %lld of %lld, expected %.1f +- %.1f (%.2f sigma)\n", ps[k], kept, (long long)n, mean,
               sigma, sigma > 0 ? (kept - mean) / sigma : 0.0);
        CHECK_MSG(fabs(kept - mean) <= 6 * sigma, "keep rate of p %.3f outside 6 sigma", ps[k]);
        if (ps[k] == 0.0) CHECK(kept == n);
    }
    free(keep);
}

int main(void) {
    test_kat();
    test_threshold();
    test_replay_and_walk();
    test_keep_rate();
    CHECK_DONE("test_dropout_mask");
}
