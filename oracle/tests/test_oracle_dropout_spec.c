/* test_oracle_dropout_spec.c — the oracle's own dropout mask (oracle/dropout_spec.h):
 *   - its Philox4x32-10 gives Random123's known answers (three published vectors);
 *   - it agrees element by element with the backends' mask (model/dropout.h, an
 *     independent implementation of the same text) on whole case-shaped P matrices:
 *     several seeds, offsets (one that carries into the counter's high word), drop
 *     probabilities and shapes whose rows straddle Philox blocks;
 *   - the rate it applies is round(p 2^32) / 2^32.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/dropout.h"
#include "oracle/dropout_spec.h"
#include "util/check.h"

int main(void) {
    static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                       {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                       {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    static const uint32_t key[3][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
    static const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    for (int k = 0; k < 3; k++) {
        uint32_t out[4];
        af_oracle_philox(ctr[k], key[k], out);
        CHECK_MSG(!memcmp(out, want[k], sizeof out), "oracle Philox known answer %d: %08x %08x %08x %08x", k, out[0],
                  out[1], out[2], out[3]);
    }
    CHECK(af_oracle_dropout_rate(0.5) == 0.5 && af_oracle_dropout_rate(0.0) == 0.0);
    CHECK(af_oracle_dropout_rate(0.1) == af_dropout_threshold(0.1) / 4294967296.0);

    static const struct {
        int B, Hq, Sq, Skv;
        uint64_t seed, offset;
        double p;
    } shapes[] = {
        {2, 3, 37, 53, 1, 0, 0.1},
        {1, 4, 64, 64, 0xdeadbeefcafef00dull, 12345, 0.5},
        {3, 2, 17, 129, 42, 0xFFFFFFFFull - 300, 0.25}, /* the counter carries into c1 */
        {1, 1, 5, 3, 7, 0, 0.875},
    };
    long long compared = 0, dropped = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        uint32_t th = af_dropout_threshold(shapes[s].p);
        uint8_t keep[129];
        for (int b = 0; b < shapes[s].B; b++)
            for (int h = 0; h < shapes[s].Hq; h++)
                for (int i = 0; i < shapes[s].Sq; i++) {
                    uint64_t n0 =
                        (((uint64_t)b * shapes[s].Hq + h) * shapes[s].Sq + i) * (uint64_t)shapes[s].Skv; /* row start */
                    af_dropout_keep_run(shapes[s].seed, shapes[s].offset, th, n0, shapes[s].Skv, keep);
                    for (int j = 0; j < shapes[s].Skv; j++) {
                        bool d = af_oracle_dropout_dropped(shapes[s].seed, shapes[s].offset, shapes[s].p, shapes[s].Hq,
                                                           shapes[s].Sq, shapes[s].Skv, b, h, i, j);
                        CHECK_MSG(d == !keep[j], "shape %zu b%d h%d i%d j%d: oracle %s, backends' mask %s", s, b, h, i,
                                  j, d ? "drops" : "keeps", keep[j] ? "keeps" : "drops");
                        compared++;
                        dropped += d;
                    }
                }
    }
    printf("oracle and backends' masks agree on %lld elements (%lld dropped)\n", compared, dropped);
    CHECK(dropped > 0 && dropped < compared);
    CHECK_DONE("test_oracle_dropout_spec");
}
