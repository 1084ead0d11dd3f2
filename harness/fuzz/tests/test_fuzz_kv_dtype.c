/* test_fuzz_kv_dtype.c — the fuzzer and kv_dtype (an fp8 KV cache under fp16 / bf16 queries;
 * docs/fp8.md), as a specification:
 *   - along a chain of mutations from a plain fp16 case, kv_dtype is drawn (both fp8 kinds),
 *     every mutated case validates and round-trips through the fuzz bytes, and every case
 *     that holds it is fp16 / bf16, forward only, without qkv packing;
 *   - repair drops it on an fp8 dtype, with backward and with qkv packing, and keeps it
 *     otherwise;
 *   - an input older than the KV-types byte (every input before it: nothing written after
 *     the mask-drops item) decodes with kv_dtype = same;
 *   - descale = head (the same byte's bit 2): drawn along a walk from an fp8_e4m3 case,
 *     every case that holds it fp8_e4m3 / fp8_e5m2 forward with heads_v == heads_kv;
 *     repair drops it on fp16 and with backward.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/check.h"

#include "fuzz/tests/fuzz_walk.h"

static void parse_ok(const char *text, af_case *c) {
    af_error e;
    CHECK_MSG(af_case_parse(text, "test", c, &e) == 0, "does not parse: %s: %s\n%s", e.field, e.message, text);
}

static void test_walk(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_case c;
    parse_ok("heads_q = 4\nheads_kv = 2\nseqlen = 40\nhead_dim = 32\nmask = causal\nseed = 6\n", &c);
    uint64_t rng = 4242;
    int seen[3] = {0}, wide = 0;
    for (int k = 0; k < 3000; k++) {
        fz_walk_step(&c, &lim, &rng, k);
        seen[c.kv_dtype]++;
        if (c.kv_dtype != AF_KV_SAME)
            CHECK_MSG((c.dtype == AF_DT_FP16 || c.dtype == AF_DT_BF16) && !c.backward && c.packing != AF_PACK_QKV,
                      "step %d: kv_dtype %s on dtype %s backward %d packing %s", k, af_kv_dtype_name(c.kv_dtype),
                      af_dtype_name(c.dtype), c.backward, af_packing_name(c.packing));
        if (c.dtype != AF_DT_FP16 && c.dtype != AF_DT_BF16) { /* stay where the field lives */
            c.dtype = AF_DT_FP16;
            CHECK(af_fuzz_repair(&c, &lim) == 0);
        } else {
            wide++;
        }
    }
    printf("fp16 / bf16 steps %d; steps with kv_dtype same / fp8_e4m3 / fp8_e5m2: %d %d %d\n", wide, seen[0], seen[1],
           seen[2]);
    CHECK_MSG(seen[AF_KV_FP8_E4M3] > 0 && seen[AF_KV_FP8_E5M2] > 0, "kv_dtype never drawn (%d, %d)",
              seen[AF_KV_FP8_E4M3], seen[AF_KV_FP8_E5M2]);
}

static void test_repair(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_case c;
    parse_ok("kv_dtype = fp8_e5m2\nseqlen = 32\nhead_dim = 32\n", &c);
    af_case t = c;
    CHECK(af_fuzz_repair(&t, &lim) == 0 && t.kv_dtype == AF_KV_FP8_E5M2);
    t = c;
    t.dtype = AF_DT_FP8_E4M3;
    CHECK(af_fuzz_repair(&t, &lim) == 0 && t.kv_dtype == AF_KV_SAME);
    t = c;
    t.backward = true;
    CHECK(af_fuzz_repair(&t, &lim) == 0 && t.kv_dtype == AF_KV_SAME);
    t = c;
    t.packing = AF_PACK_QKV;
    CHECK(af_fuzz_repair(&t, &lim) == 0 && t.kv_dtype == AF_KV_SAME);
    /* the encoding: kv_dtype is its last byte; cut it and the case decodes with same */
    uint8_t bytes[AF_FUZZ_MAX_ENCODED];
    size_t n = af_fuzz_encode(&c, bytes, sizeof bytes);
    af_case back;
    CHECK(n > 1 && af_fuzz_decode(bytes, n, &lim, &back) == 0 && back.kv_dtype == AF_KV_FP8_E5M2);
    CHECK_MSG(bytes[n - 1] == AF_KV_FP8_E5M2, "last byte %u", bytes[n - 1]);
    CHECK(af_fuzz_decode(bytes, n - 1, &lim, &back) == 0 && back.kv_dtype == AF_KV_SAME);
}

static void test_descale_head(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_case c;
    parse_ok("dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 40\nhead_dim = 32\nseed = 8\n", &c);
    uint64_t rng = 99;
    int held = 0, fp8 = 0;
    for (int k = 0; k < 3000; k++) {
        fz_walk_step(&c, &lim, &rng, k);
        if (c.descale_head) {
            held++;
            CHECK_MSG(af_dtype_is_fp8_tensor(c.dtype) && !c.backward && af_case_heads_v(&c) == c.heads_kv,
                      "step %d: descale = head on %s backward %d heads_v %d", k, af_dtype_name(c.dtype), c.backward,
                      c.heads_v);
        }
        if (!af_dtype_is_fp8_tensor(c.dtype)) { /* stay where the field lives */
            c.dtype = AF_DT_FP8_E4M3;
            CHECK(af_fuzz_repair(&c, &lim) == 0);
        } else {
            fp8++;
        }
    }
    printf("fp8 steps %d; steps with descale = head: %d\n", fp8, held);
    CHECK_MSG(held > 0, "descale = head never drawn");
    af_case t;
    parse_ok("dtype = fp8_e5m2\ndescale = head\nseqlen = 32\nhead_dim = 32\n", &t);
    af_case u = t;
    CHECK(af_fuzz_repair(&u, &lim) == 0 && u.descale_head);
    u = t;
    u.dtype = AF_DT_FP16;
    CHECK(af_fuzz_repair(&u, &lim) == 0 && !u.descale_head);
    u = t;
    u.backward = true;
    CHECK(af_fuzz_repair(&u, &lim) == 0 && !u.descale_head);
}

int main(void) {
    test_walk();
    test_repair();
    test_descale_head();
    CHECK_DONE("test_fuzz_kv_dtype");
}
