/* test_fuzz_decode.c — properties of the fuzz input decoder, encoder and mutator. */
#include <string.h>

#include "fuzz/fuzz.h"
#include <math.h>
#include "model/gen.h"
#include "model/tensors.h"
#include "util/check.h"
#include "util/clock.h"

static uint64_t rng_state = 12345;
static uint8_t rnd_byte(void) { return (uint8_t)(af_fuzz_rand(&rng_state) >> 56); }

/* The test runs minutes: a progress line at a stage's start and end and at most every
 * 10 s in between. */
static void progress(const char *stage, int done, int total) {
    static double last;
    double now = af_clock_mono();
    if (done > 0 && done < total - 1 && now - last < 10) return;
    last = now;
    printf("test_fuzz_decode: %s %d / %d\n", stage, done + 1, total);
    fflush(stdout);
}

static bool valid(const af_case *c) {
    af_error err;
    return af_case_validate(c, &err) == 0;
}

/* Number of keys whose canonical lines differ between two cases. */
static int keys_differing(const af_case *a, const af_case *b) {
    char x[8192], y[8192];
    af_case_print(a, x, sizeof x);
    af_case_print(b, y, sizeof y);
    int diff = 0;
    /* every line of x missing from y, plus every key of y missing from x */
    char *save = NULL;
    char xcopy[8192];
    strcpy(xcopy, x);
    for (char *l = strtok_r(xcopy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "page_tail", 9)) continue; /* printed with page_size: part of that field */
        char line[512];
        snprintf(line, sizeof line, "%s\n", l);
        if (!strstr(y, line)) diff++;
    }
    save = NULL;
    for (char *l = strtok_r(y, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(l, "page_tail", 9)) continue;
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(l, "="), l);
        if (!strstr(x, key)) diff++;
    }
    return diff;
}

/* Buffers cost memory, not work: every case within the default work bound must stay
 * within MAX_BUFFER_ELEMS elements over all its buffers (gaps and pages included; the
 * probes hold ~10 copies), or libFuzzer's 4 GB RSS limit is hit (an input with a
 * 65536-token page on 64 sequences did). */
#define MAX_BUFFER_ELEMS (64LL << 20)
static int64_t max_elems = 0;

static int64_t buffer_elems(const af_case *c) {
    af_layout_plan *pl = malloc(sizeof *pl);
    CHECK(pl != NULL);
    char why[256];
    int64_t el = 0;
    if (af_layout_plan_make(c, pl, why, sizeof why) == 0)
        for (int i = 0; i < AF_BUF_COUNT; i++) el += pl->buffer_elems[i];
    free(pl);
    return el;
}

/* Every generated input of a decoded case is finite (fp16 overflow would make the case
 * unjudgeable: the oracle refuses it, a campaign counts an "error"). */
static int finite_checked = 0;
static void finite_inputs(const af_case *c, int iter) {
    af_tensors t;
    af_inputs in;
    char why[256];
    if (af_tensors_alloc(&t, c, why, sizeof why)) return;
    CHECK(af_inputs_alloc(&in, c) == 0 && af_inputs_generate(c, &t, &in) == 0);
    size_t nq = (size_t)in.B * in.Hq * in.Sq, nk = (size_t)in.B * in.Hkv * in.Skv;
    bool ok = true;
    for (size_t i = 0; i < nq * in.Dqk; i++) ok &= isfinite(in.q[i]) != 0;
    for (size_t i = 0; i < nk * in.Dqk; i++) ok &= isfinite(in.k[i]) != 0;
    for (size_t i = 0; i < nk * in.Dv; i++) ok &= isfinite(in.v[i]) != 0;
    if (!ok) {
        char txt[8192];
        af_case_print(c, txt, sizeof txt);
        CHECK_MSG(0, "input %d generates a non-finite Q/K/V value:\n%s", iter, txt);
    }
    finite_checked++;
    af_inputs_free(&in);
    af_tensors_free(&t);
}

int main(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_case c, d, def;

    /* The empty input is the default case. */
    af_case_defaults(&def);
    CHECK(af_fuzz_decode(NULL, 0, &lim, &c) == 0);
    CHECK(af_case_equal(&c, &def));

    /* A one-byte zero input is the smallest case: b1 h1 s1 d8. */
    uint8_t zero = 0;
    CHECK(af_fuzz_decode(&zero, 1, &lim, &c) == 0);
    CHECK(c.batch == 1 && c.heads_q == 1 && c.seqlen_q == 1 && c.seqlen_kv == 1 && c.head_dim_qk == 8);

    /* the libFuzzer input that took 4 GB: page_size 65536 on 64 sequences of 6 keys */
    {
        static const uint8_t oom[] = {
            0x01, 0x00, 0x02, 0x03, 0x00, 0x11, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x06, 0x01, 0x08, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
            0x00, 0x03, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x85, 0x00, 0x82};
        CHECK(af_fuzz_decode(oom, sizeof oom, &lim, &c) == 0 || valid(&c));
        CHECK_MSG(c.page_size <= 16 && buffer_elems(&c) <= MAX_BUFFER_ELEMS, "page_size %d, %lld elements", c.page_size,
                  (long long)buffer_elems(&c));
    }

    /* 10k random byte strings: all valid, within the budget; round trip; prefixes. */
    int fallbacks = 0;
    for (int iter = 0; iter < 10000; iter++) {
        progress("random inputs", iter, 10000);
        uint8_t buf[AF_FUZZ_MAX_ENCODED];
        size_t n = 1 + (size_t)(af_fuzz_rand(&rng_state) % 160);
        for (size_t i = 0; i < n; i++) buf[i] = rnd_byte();
        fallbacks += af_fuzz_decode(buf, n, &lim, &c);
        CHECK_MSG(valid(&c), "input %d does not decode to a valid case", iter);
        CHECK(af_case_work(&c) <= lim.max_work);
        if (iter % 5 == 0) finite_inputs(&c, iter);
        int64_t el = buffer_elems(&c);
        if (el > max_elems) max_elems = el;
        if (el > MAX_BUFFER_ELEMS) {
            char txt[8192];
            af_case_print(&c, txt, sizeof txt);
            CHECK_MSG(0, "input %d: %lld buffer elements for work %g:\n%s", iter, (long long)el, af_case_work(&c), txt);
        }

        uint8_t enc[AF_FUZZ_MAX_ENCODED];
        size_t m = af_fuzz_encode(&c, enc, sizeof enc);
        CHECK(m > 0);
        af_fuzz_decode(enc, m, &lim, &d);
        if (!af_case_equal(&c, &d)) {
            char a[8192], b[8192];
            af_case_print(&c, a, sizeof a);
            af_case_print(&d, b, sizeof b);
            CHECK_MSG(0, "round trip differs:\n%s---\n%s", a, b);
        }

        /* shorter prefixes never give a bigger case */
        if (iter % 10 == 0) {
            double prev = af_case_work(&c);
            for (size_t k = n - 1; k >= 1; k--) {
                af_fuzz_decode(buf, k, &lim, &d);
                double w = af_case_work(&d);
                CHECK_MSG(w <= prev, "prefix %zu of input %d: work %g > %g", k, iter, w, prev);
                prev = w;
            }
        }
    }
    CHECK_MSG(fallbacks == 0, "%d inputs fell back to the default case", fallbacks);

    /* The encoder reproduces hand-written cases exactly. */
    af_case_defaults(&c);
    c.dtype = AF_DT_BF16;
    c.batch = 3;
    c.heads_q = 12;
    c.heads_kv = 4;
    c.seqlen_q = 100;
    c.seqlen_kv = 77;
    c.head_dim_qk = 72;
    c.head_dim_v = 40;
    c.has_seqlens = true;
    c.layout = AF_LAYOUT_THD;
    c.thd_gap = 5;
    int lq[3] = {100, 0, 13}, lk[3] = {77, 1, 50};
    memcpy(c.seqlens_q, lq, sizeof lq);
    memcpy(c.seqlens_kv, lk, sizeof lk);
    c.mask = AF_MASK_CAUSAL;
    c.align = AF_ALIGN_BOTTOM_RIGHT;
    c.window_left = 45;
    c.window_right = 0;
    c.has_scale = true;
    c.scale = 0.3f;
    c.seed = 0xdeadbeefcafeull;
    c.n_data = 2;
    c.data[0] = (af_data_term){AF_DATA_NORMAL, 0.7, 0};
    c.data[1] = (af_data_term){AF_DATA_SINK, 11, 0};
    CHECK(valid(&c));
    af_fuzz_limits big = lim;
    big.max_work = 1e9; /* this case is bigger than the default budget */
    uint8_t enc[AF_FUZZ_MAX_ENCODED];
    size_t m = af_fuzz_encode(&c, enc, sizeof enc);
    CHECK(m > 0);
    af_fuzz_decode(enc, m, &big, &d);
    if (!af_case_equal(&c, &d)) {
        char a[8192], b[8192];
        af_case_print(&c, a, sizeof a);
        af_case_print(&d, b, sizeof b);
        CHECK_MSG(0, "hand case round trip differs:\n%s---\n%s", a, b);
    }
    /* within the default budget it decodes clamped, still valid */
    af_fuzz_decode(enc, m, &lim, &d);
    CHECK(valid(&d) && af_case_work(&d) <= lim.max_work);
    /* ... and the default case */
    m = af_fuzz_encode(&def, enc, sizeof enc);
    CHECK(m > 0);
    af_fuzz_decode(enc, m, &lim, &d);
    CHECK(af_case_equal(&def, &d));

    /* Mutator: output valid, always different, usually in exactly one field (the boundary
     * draws, fuzz.h AF_FUZZ_BOUNDARY_ONE_IN, set several fields by design: counted apart). */
    int one_line = 0, few = 0, total = 0, boundary = 0;
    int used[AF_MUT_COUNT] = {0};
    for (int iter = 0; iter < 3000; iter++) {
        progress("mutations", iter, 3000);
        uint8_t buf[AF_FUZZ_MAX_ENCODED];
        size_t n = (size_t)(af_fuzz_rand(&rng_state) % 40);
        for (size_t i = 0; i < n; i++) buf[i] = rnd_byte();
        af_fuzz_decode(buf, n, &lim, &c);
        size_t n2 = af_fuzz_mutate(buf, n, sizeof buf, (unsigned)iter, &lim);
        af_fuzz_decode(buf, n2, &lim, &d);
        CHECK(valid(&d));
        CHECK_MSG(keys_differing(&c, &d) >= 1, "mutation %d left the case unchanged", iter);
        uint64_t r = (uint64_t)iter;
        af_case e = c;
        int which = af_fuzz_mutate_case(&e, &lim, &r);
        used[which]++;
        CHECK(valid(&e) && !af_case_equal(&e, &c));
        if (which == AF_MUT_BOUNDARY) {
            boundary++;
            continue;
        }
        int diff = keys_differing(&c, &e);
        one_line += diff == 1;
        few += diff <= 3;
        total++;
    }
    /* Dependent fields move with the one changed (lengths lists with seqlens, a
     * smaller batch when a size grows past the budget), so not always exactly one. */
    printf("mutations: %d of %d changed one field, %d at most three (and %d boundary draws)\n", one_line, total, few,
           boundary);
    CHECK_MSG(boundary * 5 >= 3000 && boundary * 2 <= 3000, "%d boundary draws of 3000", boundary);
    CHECK_MSG(one_line * 2 >= total, "only %d of %d mutations changed one field", one_line, total);
    CHECK_MSG(few * 10 >= total * 8, "only %d of %d mutations changed at most three fields", few, total);
    for (int m2 = 0; m2 < AF_MUT_COUNT; m2++)
        CHECK_MSG(m2 == AF_MUT_SEED || used[m2] > 0, "mutation %s never used", af_fuzz_mutation_name(m2));

    /* Same seed, same mutation. */
    uint8_t a1[AF_FUZZ_MAX_ENCODED] = {1, 2, 3, 4, 5, 6, 7, 8}, a2[AF_FUZZ_MAX_ENCODED] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t s1 = af_fuzz_mutate(a1, 8, sizeof a1, 77, &lim), s2 = af_fuzz_mutate(a2, 8, sizeof a2, 77, &lim);
    CHECK(s1 == s2 && memcmp(a1, a2, s1) == 0);

    /* Feedback: a case reaches its cell and, with stats, a ratio bucket. */
    static uint8_t counters[AF_FUZZ_COUNTERS];
    af_verdict v;
    af_verdict_init(&v, "cpu");
    v.stats[AF_T_O].judged = true;
    v.stats[AF_T_O].ratio = 0.5;
    af_fuzz_feedback(&def, &v, counters, sizeof counters);
    CHECK(counters[af_fuzz_config_cell(&def)] == 1);
    CHECK(counters[AF_FUZZ_CELLS + AF_T_O * AF_FUZZ_RATIO_BUCKETS + af_fuzz_ratio_bucket(0.5)] == 1);
    CHECK(af_fuzz_ratio_bucket(0) == 0 && af_fuzz_ratio_bucket(1) == 24 && af_fuzz_ratio_bucket(4) == 26);
    CHECK(af_fuzz_ratio_bucket(1e30) == AF_FUZZ_RATIO_BUCKETS - 1);

    /* The GPU budget (wide draws): valid, within work and memory (every buffer of the
     * layout, pages and LSE included, under twice AF_FUZZ_WIDE_MAX_HOST_BYTES in doubles:
     * 8 GiB), and it reaches what the default tables never draw: long sequences, long-KV
     * decode shapes, odd head dims. */
    {
        af_fuzz_limits gpu;
        af_fuzz_limits_default(&gpu);
        af_fuzz_limits_set_work(&gpu, AF_FUZZ_GPU_DEFAULT_WORK);
        int long_kv = 0, decode_long = 0, odd_dim = 0, over_64k = 0, small = 0, n_gpu = 3000;
        int64_t gpu_max_elems = 0;
        for (int iter = 0; iter < n_gpu; iter++) {
            progress("GPU budget inputs", iter, n_gpu);
            uint8_t buf[AF_FUZZ_MAX_ENCODED];
            size_t n = 1 + (size_t)(af_fuzz_rand(&rng_state) % 160);
            for (size_t i = 0; i < n; i++) buf[i] = rnd_byte();
            CHECK(af_fuzz_decode(buf, n, &gpu, &c) == 0);
            CHECK_MSG(valid(&c), "GPU-budget input %d does not decode to a valid case", iter);
            CHECK(af_case_work(&c) <= gpu.max_work && af_case_elements(&c) <= AF_FUZZ_WIDE_MAX_ELEMENTS);
            int64_t el = buffer_elems(&c);
            if (el > gpu_max_elems) gpu_max_elems = el;
            CHECK_MSG(el * 8.0 <= 2 * AF_FUZZ_WIDE_MAX_HOST_BYTES, "GPU-budget input %d: %lld buffer elements", iter,
                      (long long)el);
            long_kv += c.seqlen_kv > 256;
            over_64k += c.seqlen_kv > 65536 || c.seqlen_q > 65536;
            decode_long += c.seqlen_q <= 16 && c.seqlen_kv > 1024;
            odd_dim += (c.head_dim_qk | c.head_dim_v) & 1;
            small += af_case_work(&c) <= AF_FUZZ_DEFAULT_WORK;
            uint8_t wide_enc[AF_FUZZ_MAX_ENCODED];
            size_t m = af_fuzz_encode(&c, wide_enc, sizeof wide_enc);
            af_fuzz_decode(wide_enc, m, &gpu, &d);
            CHECK_MSG(af_case_equal(&c, &d), "GPU-budget input %d: round trip differs", iter);
        }
        printf("GPU budget: %d cases: %d s_kv > 256, %d past 65536, %d decode shapes, %d odd head dims, %d within "
               "the default budget; largest %lld buffer elements\n",
               n_gpu, long_kv, over_64k, decode_long, odd_dim, small, (long long)gpu_max_elems);
        CHECK(long_kv > n_gpu / 20 && over_64k > 0 && decode_long > 0 && odd_dim > n_gpu / 20);
    }

    printf("largest case: %lld buffer elements (bound %lld); %d cases' inputs all finite\n", (long long)max_elems,
           MAX_BUFFER_ELEMS, finite_checked);
    CHECK_DONE("test_fuzz_decode");
}
