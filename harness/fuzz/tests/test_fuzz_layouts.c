/* test_fuzz_layouts.c — the fuzzer draws the per-head packings (kv_h, qkv_h) and the
 * tensors' own layouts (layout_kv, layout_do): along a chain of 3000 mutations from the
 * default case each shows up, every case valid and decoding back from its bytes. Repair
 * keeps the rules: a case decoded with per-head packing in bhsd, a layout_kv that is the
 * layout itself or a layout_do without backward comes back valid. The head / token / batch
 * gaps (gap_h, gap_s, gap_b) show up too, small and odd ones; they survive the bytes, repair
 * bounds them and drops them where validate refuses them (fp8, gap_b in all-thd). */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/check.h"

#include "fuzz/tests/fuzz_walk.h"

static af_case through_bytes(const af_case *c, const af_fuzz_limits *lim) {
    uint8_t bytes[AF_FUZZ_MAX_ENCODED];
    size_t n = af_fuzz_encode(c, bytes, sizeof bytes);
    af_case back;
    CHECK(n > 0 && af_fuzz_decode(bytes, n, lim, &back) == 0);
    af_error e;
    CHECK_MSG(af_case_validate(&back, &e) == 0, "repaired case invalid: %s: %s", e.field, e.message);
    return back;
}

int main(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_case c;
    af_case_defaults(&c);
    uint64_t rng = 4242;
    int kv_h = 0, qkv_h = 0, own_kv = 0, own_do = 0, thd_padded_kv = 0, gap_h = 0, gap_s = 0, gap_b = 0, odd = 0,
        orders = 0;
    for (int k = 0; k < 3000; k++) {
        fz_walk_step(&c, &lim, &rng, k);
        kv_h += c.packing == AF_PACK_KV_H;
        qkv_h += c.packing == AF_PACK_QKV_H;
        own_kv += c.layout_kv != AF_SIDE_SAME;
        own_do += c.layout_do != AF_SIDE_SAME;
        thd_padded_kv += c.layout == AF_LAYOUT_THD && c.layout_kv != AF_SIDE_SAME;
        gap_h += c.gap_h != 0;
        gap_s += c.gap_s != 0;
        gap_b += c.gap_b != 0;
        odd += (c.gap_h | c.gap_s | c.gap_b) & 1;
        orders += !af_layout_is_classic(c.layout) || !af_layout_is_classic(af_case_layout_kv(&c)) ||
                  !af_layout_is_classic(af_case_layout_do(&c));
        if (k % 50 == 49) af_case_defaults(&c);
    }
    printf("of 3000 cases: kv_h %d, qkv_h %d, layout_kv %d (thd over padded K/V %d), layout_do %d\n", kv_h, qkv_h,
           own_kv, thd_padded_kv, own_do);
    CHECK(kv_h > 0 && qkv_h > 0 && own_kv > 0 && own_do > 0);
    printf("gap_h %d, gap_s %d, gap_b %d (an odd one in %d)\n", gap_h, gap_s, gap_b, odd);
    CHECK(gap_h > 0 && gap_s > 0 && gap_b > 0 && odd > 0);
    printf("shbd / hbsd / hsbd somewhere in %d\n", orders);
    CHECK(orders > 0);

    /* repair */
    af_case bad;
    af_case_defaults(&bad);
    bad.layout = AF_LAYOUT_BHSD;
    bad.packing = AF_PACK_KV_H;
    bad.layout_kv = AF_SIDE_BHSD; /* the layout itself */
    bad.layout_do = AF_SIDE_SBHD; /* without backward */
    af_case back = through_bytes(&bad, &lim);
    CHECK(back.packing == AF_PACK_KV && back.layout_kv == AF_SIDE_SAME && back.layout_do == AF_SIDE_SAME);
    /* what validate allows comes back as it was */
    af_case_defaults(&bad);
    bad.layout = AF_LAYOUT_SBHD;
    bad.packing = AF_PACK_QKV_H;
    bad.backward = true;
    bad.layout_do = AF_SIDE_BHSD;
    back = through_bytes(&bad, &lim);
    CHECK(af_case_equal(&back, &bad));
    bad.packing = AF_PACK_KV_H;
    bad.layout_kv = AF_SIDE_BSHD;
    back = through_bytes(&bad, &lim);
    CHECK(af_case_equal(&back, &bad));
    /* gaps: through the bytes as they are; bounded; dropped where refused */
    af_case_defaults(&bad);
    bad.layout = AF_LAYOUT_BHSD;
    bad.gap_h = 3;
    bad.gap_s = 1;
    bad.gap_b = 4096;
    back = through_bytes(&bad, &lim);
    CHECK(af_case_equal(&back, &bad));
    bad.gap_h = 4000; /* a head block's tail above the head dim (64): no more than the vector */
    back = through_bytes(&bad, &lim);
    CHECK(back.gap_h == 64 && back.gap_s == 1 && back.gap_b == 4096);
    bad.dtype = AF_DT_FP8_E4M3;
    back = through_bytes(&bad, &lim);
    CHECK(back.gap_h == 0 && back.gap_s == 0 && back.gap_b == 0);
    af_case_defaults(&bad);
    bad.layout = AF_LAYOUT_THD;
    bad.has_seqlens = true;
    bad.seqlens_q[0] = 5;
    bad.seqlens_kv[0] = 16;
    bad.gap_b = 9;
    bad.gap_s = 2;
    back = through_bytes(&bad, &lim);
    CHECK_MSG(back.gap_b == 0 && back.gap_s == 2, "layout %d gap_b %d gap_s %d", (int)back.layout, back.gap_b,
              back.gap_s);
    /* the other orders: through the orders byte; packed ones back to a classic order */
    af_case_defaults(&bad);
    bad.layout = AF_LAYOUT_HSBD;
    bad.layout_kv = AF_SIDE_SHBD;
    bad.layout_do = AF_SIDE_HBSD;
    bad.backward = true;
    back = through_bytes(&bad, &lim);
    CHECK(af_case_equal(&back, &bad));
    bad.gap_s = 5;
    back = through_bytes(&bad, &lim);
    CHECK(af_case_equal(&back, &bad));
    bad.packing = AF_PACK_KV;
    back = through_bytes(&bad, &lim);
    CHECK(back.packing == AF_PACK_KV && back.layout == AF_LAYOUT_BSHD && back.layout_kv == AF_SIDE_SAME);
    printf("test_fuzz_layouts: ok\n");
    return 0;
}
