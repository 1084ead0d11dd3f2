/* test_fuzz_heads_v.c — the fuzzer draws heads_v (V's own head count, cuDNN's h_v): along a
 * chain of 3000 mutations from the default case some cases have heads_v != heads_kv, both
 * below and above heads_kv, every one valid (a divisor of heads_q, separate K and V) and
 * encoding to bytes that decode back to it. Repair keeps the rule: a case decoded with a
 * heads_v that does not divide heads_q, or with packed K/V, comes back valid. */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/check.h"

#include "fuzz/tests/fuzz_walk.h"

int main(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_case c;
    af_case_defaults(&c);
    uint64_t rng = 777;
    int split = 0, below = 0, above = 0;
    for (int k = 0; k < 3000; k++) {
        fz_walk_step(&c, &lim, &rng, k);
        if (af_case_heads_v(&c) != c.heads_kv) {
            split++;
            below += c.heads_v < c.heads_kv;
            above += c.heads_v > c.heads_kv;
            CHECK(c.heads_q % c.heads_v == 0 && c.packing == AF_PACK_SEPARATE);
        }
        if (k % 50 == 49) af_case_defaults(&c);
    }
    printf("heads_v != heads_kv in %d of 3000 cases (%d below heads_kv, %d above)\n", split, below, above);
    CHECK_MSG(split >= 30 && split <= 1500, "heads_v drawn in %d of 3000 cases", split);
    CHECK_MSG(below > 0 && above > 0, "heads_v only %s heads_kv", below ? "below" : "above");

    /* repair: heads_v = 3 with heads_q = 8 becomes a divisor (gcd 1); with kv packing it goes */
    af_case bad;
    af_case_defaults(&bad);
    bad.heads_q = 8;
    bad.heads_kv = 2;
    bad.heads_v = 3;
    bad.packing = AF_PACK_SEPARATE;
    uint8_t bytes[AF_FUZZ_MAX_ENCODED];
    size_t n = af_fuzz_encode(&bad, bytes, sizeof bytes);
    af_case back;
    CHECK(n > 0 && af_fuzz_decode(bytes, n, &lim, &back) == 0);
    af_error e;
    CHECK_MSG(af_case_validate(&back, &e) == 0, "repaired case invalid: %s: %s", e.field, e.message);
    CHECK_MSG(back.heads_v == 1 && back.heads_q == 8, "heads_v %d heads_q %d after repair", back.heads_v, back.heads_q);
    bad.heads_v = 4;
    bad.packing = AF_PACK_KV;
    n = af_fuzz_encode(&bad, bytes, sizeof bytes);
    CHECK(n > 0 && af_fuzz_decode(bytes, n, &lim, &back) == 0);
    CHECK(af_case_validate(&back, &e) == 0);
    CHECK_MSG(back.packing != AF_PACK_SEPARATE ? back.heads_v == 0 : back.heads_v == 4, "heads_v %d packing %d",
              back.heads_v, (int)back.packing);
    printf("test_fuzz_heads_v: ok\n");
    return 0;
}
