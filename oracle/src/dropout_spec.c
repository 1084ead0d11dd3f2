/* dropout_spec.c — oracle/dropout_spec.h: Philox4x32-10 with 16-bit-limb products. */
#include "oracle/dropout_spec.h"

#include <math.h>

/* hi:lo = a * b from four 16 x 16-bit partial products (no 64-bit multiply). */
static void mul_wide(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint32_t a_lo = a & 0xFFFFu, a_hi = a >> 16, b_lo = b & 0xFFFFu, b_hi = b >> 16;
    uint32_t ll = a_lo * b_lo, lh = a_lo * b_hi, hl = a_hi * b_lo, hh = a_hi * b_hi;
    uint32_t mid = (ll >> 16) + (lh & 0xFFFFu) + (hl & 0xFFFFu); /* < 3 * 2^16 */
    *lo = (ll & 0xFFFFu) | (mid << 16);
    *hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16);
}

void af_oracle_philox(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    static const uint32_t multiplier[2] = {0xD2511F53u, 0xCD9E8D57u};
    static const uint32_t weyl[2] = {0x9E3779B9u, 0xBB67AE85u};
    uint32_t x[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int r = 1; r <= 10; r++) {
        uint32_t hi0, lo0, hi1, lo1;
        mul_wide(multiplier[0], x[0], &hi0, &lo0);
        mul_wide(multiplier[1], x[2], &hi1, &lo1);
        uint32_t y[4] = {hi1 ^ x[1] ^ k[0], lo1, hi0 ^ x[3] ^ k[1], lo0};
        for (int w = 0; w < 4; w++) x[w] = y[w];
        k[0] += weyl[0]; /* bumped after every round; the last bump is unused */
        k[1] += weyl[1];
    }
    for (int w = 0; w < 4; w++) out[w] = x[w];
}

/* The threshold as an integer-valued double: round(p 2^32), capped at 2^32 - 1. */
static double threshold_of(double p) {
    if (!(p > 0)) return 0;
    double t = nearbyint(ldexp(p, 32));
    return fmin(t, 4294967295.0);
}

double af_oracle_dropout_rate(double p) { return ldexp(threshold_of(p), -32); }

bool af_oracle_dropout_dropped(uint64_t seed, uint64_t offset, double p, int Hq, int Sq, int Skv, int b, int h, int i,
                               int j) {
    uint64_t n =
        (((uint64_t)b * (uint64_t)Hq + (uint64_t)h) * (uint64_t)Sq + (uint64_t)i) * (uint64_t)Skv + (uint64_t)j;
    uint64_t block = offset + (n >> 2);
    uint32_t counter[4] = {(uint32_t)(block & 0xFFFFFFFFu), (uint32_t)(block >> 32), 0, 0};
    uint32_t key[2] = {(uint32_t)(seed & 0xFFFFFFFFu), (uint32_t)(seed >> 32)};
    uint32_t word[4];
    af_oracle_philox(counter, key, word);
    return (double)word[n & 3u] < threshold_of(p);
}
