/* test_fuzz_fp8_headroom.c — fp8_e4m3 scales the fuzzer draws (case field fp8_headroom,
 * docs/fp8.md), as a specification:
 *   - the field parses, prints canonically (only when set), and is refused with its
 *     field named for a dtype other than fp8_e4m3 and for a binade outside [0, 8];
 *   - generation: headroom h on a tensor multiplies its descale by exactly 2^h (q, k, v,
 *     do: the stored values then reach 448 / 2^h at most, and exactly that at the largest
 *     element; o: descale_o x 2^h), the logical values otherwise the same up to E4M3
 *     rounding;
 *   - the fuzzer: along a chain of mutations from an fp8_e4m3 case, headroom is drawn on
 *     every tensor, each mutated case validates and round-trips through the fuzz bytes;
 *     repair clears headroom when the dtype is not fp8_e4m3.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "model/gen.h"
#include "model/tensors.h"
#include "util/check.h"

#include "fuzz/tests/fuzz_walk.h"

static const char *const base_text =
    "dtype = fp8_e4m3\nheads = 2\nseqlen = 40\nhead_dim = 32\nmask = causal\nbackward = yes\nseed = 6\n";

static void parse_ok(const char *text, af_case *c) {
    af_error e;
    CHECK_MSG(af_case_parse(text, "test", c, &e) == 0, "does not parse: %s: %s\n%s", e.field, e.message, text);
}

static void parse_fails(const char *text, const char *field) {
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, "test", &c, &e) != 0, "parses but must not:\n%s", text);
    char msg[1024];
    af_error_format(&e, msg, sizeof msg);
    printf("refused: %s\n", msg);
    CHECK_MSG(strcmp(e.field, field) == 0 && e.line > 0, "error names field '%s' line %d", e.field, e.line);
}

/* largest stored |E4M3| value of input id (no descale) */
static double stored_amax(const af_tensors *t, const af_case *c, af_tensor_id id) {
    const af_tensor_view *v = &t->plan.view[id];
    double m = 0;
    for (int b = 0; b < v->B; b++)
        for (int h = 0; h < v->H; h++)
            for (int s = 0; s < (id == AF_T_K || id == AF_T_V ? af_case_len_kv(c, b) : af_case_len_q(c, b)); s++)
                for (int d = 0; d < v->D; d++)
                    m = fmax(m, fabs(af_storage_load(v->storage, t->buf[v->buffer],
                                                     af_layout_offset(&t->plan, id, b, h, s, d))));
    return m;
}

static void generate(const af_case *c, af_tensors *t) {
    char why[256] = "";
    af_inputs in;
    CHECK_MSG(af_tensors_alloc(t, c, why, sizeof why) == 0, "%s", why);
    CHECK(af_inputs_alloc(&in, c) == 0);
    CHECK(af_inputs_generate(c, t, &in) == 0);
    af_inputs_free(&in);
}

static void test_generation(void) {
    af_case plain, scaled;
    parse_ok(base_text, &plain);
    char text[1024];
    snprintf(text, sizeof text, "%sfp8_headroom = 1,2,3,4,5\n", base_text);
    parse_ok(text, &scaled);
    af_tensors a, b;
    generate(&plain, &a);
    generate(&scaled, &b);
    const float da[5] = {a.descale_q, a.descale_k, a.descale_v, a.descale_do, a.descale_o};
    const float db[5] = {b.descale_q, b.descale_k, b.descale_v, b.descale_do, b.descale_o};
    for (int k = 0; k < 5; k++) {
        printf("descale %d: %.9g -> %.9g\n", k, da[k], db[k]);
        CHECK_MSG(db[k] == ldexpf(da[k], k + 1), "descale %d: %g is not %g x 2^%d", k, db[k], da[k], k + 1);
    }
    const af_tensor_id ids[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    for (int k = 0; k < 4; k++) {
        double ma = stored_amax(&a, &plain, ids[k]), mb = stored_amax(&b, &scaled, ids[k]);
        printf("%s stored amax %g -> %g\n", af_tensor_name(ids[k]), ma, mb);
        CHECK_MSG(ma == 448.0 && mb == ldexp(448.0, -(k + 1)), "%s: stored amax %g, %g", af_tensor_name(ids[k]), ma,
                  mb);
    }
    af_tensors_free(&a);
    af_tensors_free(&b);
}

static void test_field(void) {
    af_case c;
    char text[1024], printed[8192];
    parse_ok(base_text, &c);
    af_case_print(&c, printed, sizeof printed);
    CHECK_MSG(!strstr(printed, "fp8_headroom"), "printed without being set:\n%s", printed);
    snprintf(text, sizeof text, "%sfp8_headroom = 0,8,1,0,2\n", base_text);
    parse_ok(text, &c);
    af_case_print(&c, printed, sizeof printed);
    CHECK_MSG(strstr(printed, "\nfp8_headroom = 0,8,1,0,2\n"), "canonical form:\n%s", printed);
    af_case back;
    parse_ok(printed, &back);
    CHECK(af_case_equal(&c, &back));
    snprintf(text, sizeof text, "%sfp8_headroom = 0,9,1,0,2\n", base_text);
    parse_fails(text, "fp8_headroom");
    snprintf(text, sizeof text, "%sfp8_headroom = 0,1,0,2\n", base_text);
    parse_fails(text, "fp8_headroom");
    parse_fails("dtype = bf16\nfp8_headroom = 1,0,0,0,0\n", "fp8_headroom");
}

static void test_fuzzer(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_case c;
    parse_ok(base_text, &c);
    uint64_t rng = 777;
    int seen[AF_FP8_SCALED] = {0}, fp8_steps = 0;
    for (int k = 0; k < 3000; k++) {
        fz_walk_step(&c, &lim, &rng, k);
        if (!af_dtype_is_fp8_tensor(c.dtype)) { /* fp8_e4m3 and fp8_e5m2 hold per-tensor scales */
            CHECK_MSG(!af_case_has_fp8_headroom(&c), "step %d: headroom on dtype %s", k, af_dtype_name(c.dtype));
            c.dtype = AF_DT_FP8_E4M3; /* stay where the field lives */
            CHECK(af_fuzz_repair(&c, &lim) == 0);
            continue;
        }
        fp8_steps++;
        for (int t = 0; t < AF_FP8_SCALED; t++) seen[t] += c.fp8_headroom[t] != 0;
    }
    printf("fp8 steps %d; steps with headroom on q k v do o: %d %d %d %d %d\n", fp8_steps, seen[0], seen[1], seen[2],
           seen[3], seen[4]);
    for (int t = 0; t < AF_FP8_SCALED; t++) CHECK_MSG(seen[t] > 0, "headroom of tensor %d never drawn", t);
    /* repair: another dtype drops it */
    c.fp8_headroom[2] = 3;
    c.dtype = AF_DT_BF16;
    af_fuzz_repair(&c, &lim);
    CHECK(!af_case_has_fp8_headroom(&c));
}

int main(void) {
    test_field();
    test_generation();
    test_fuzzer();
    CHECK_DONE("test_fuzz_fp8_headroom");
}
