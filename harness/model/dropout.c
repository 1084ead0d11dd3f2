/* dropout.c — Philox4x32-10 and the dropout mask of model/dropout.h. */
#include "model/dropout.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u /* round multipliers */
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* key schedule: golden ratio, sqrt(3) - 1 */
#define PHILOX_W1 0xBB67AE85u

void af_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round > 0) { /* the key is bumped between rounds */
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

uint32_t af_dropout_threshold(double p) {
    if (!(p > 0)) return 0;
    double t = nearbyint(p * 4294967296.0);
    return t >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)t;
}

static void block_of(uint64_t seed, uint64_t offset, uint64_t block, uint32_t out[4]) {
    uint64_t c = offset + block;
    const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    af_philox4x32_10(ctr, key, out);
}

bool af_dropout_dropped(uint64_t seed, uint64_t offset, uint32_t threshold, uint64_t n) {
    uint32_t w[4];
    block_of(seed, offset, n / 4, w);
    return w[n % 4] < threshold;
}

void af_dropout_keep_run(uint64_t seed, uint64_t offset, uint32_t threshold, uint64_t n0, int64_t count,
                         uint8_t *keep) {
    uint32_t w[4];
    uint64_t have = UINT64_MAX; /* the block in w */
    for (int64_t k = 0; k < count; k++) {
        uint64_t n = n0 + (uint64_t)k;
        if (n / 4 != have) {
            have = n / 4;
            block_of(seed, offset, have, w);
        }
        keep[k] = w[n % 4] >= threshold;
    }
}
