/* test_fuzz_reach.c — how long the cases a campaign generates are, under the two work
 * budgets a campaign picks (af_fuzz_campaign_work, fuzz.h).
 *
 * The campaign's in-process engine (campaign/inprocess.c) runs every seed once, then
 * queue entries with 1-3 stacked mutations (one in eight a single-bit flip, the others
 * af_fuzz_mutate). This test draws N such cases from the default seeds (corpora/seed and
 * corpora/seed-recent, encoded as the campaign encodes them, plus the empty input) and
 * counts what they reach; it also decodes N random byte strings (what libFuzzer's own
 * byte mutations feed the decoder).
 *
 * Under the GPU budget (a backend flagged AF_BACKEND_NEEDS_GPU): >= 20 % of the cases
 * with s_kv > 1024 and >= 1 % above 16384, lengths on the 32/64/128 tile boundaries
 * (k*128 - 1, k*128, k*128 + 1, k*64 + 1, k*32 - 1) among the long ones, long-KV decode
 * shapes (s_q <= 16, s_kv > 1024), with GQA too, and split-KV regimes (s_kv >= 8 s_q,
 * s_kv > 1024, batch * heads_q <= 8); every case valid, within the work budget and the
 * memory bound (AF_FUZZ_WIDE_MAX_ELEMENTS). Under the cpu budget the share of long cases
 * stays what it was (the cpu campaign keeps its speed). Both draws are deterministic:
 * the same seed gives the same cases. Run from the source root (the seed corpora). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/check.h"

#define N_DRAWS   20000
#define MAX_SEEDS 256

/* The share of cpu-budget mutation draws with s_kv > 1024 before the GPU reach draws
 * (measured on the code they were added to: 393 of 20000). The cpu budget's draws must
 * not move: only a wide budget takes the new draws. */
#define CPU_LONG_OLD       393
#define CPU_LONG_TOLERANCE 100 /* 0.5 % of the draws */

typedef struct {
    uint8_t data[AF_FUZZ_MAX_ENCODED];
    size_t size;
} input;

typedef struct {
    input items[MAX_SEEDS];
    int count;
} seeds;

typedef struct {
    int n, kv_over_1k, kv_over_16k, q_over_1k;
    int decode_long, decode_long_gqa, split_kv;
    int res_128m1, res_128, res_128p1, res_64p1, res_32m1, on_boundary;
    double max_elements;
    uint64_t hash; /* of every (s_q, s_kv, batch, heads_q) in draw order */
} reach_counts;

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every .case of dir, encoded (af_fuzz_encode, as the campaign's af_seed_corpus does). */
static void load_dir(const char *dir, seeds *s) {
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s (run from the source root)", dir);
    char *names[MAX_SEEDS];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_SEEDS) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".case")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_name);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        af_case c;
        af_error err;
        CHECK_MSG(af_case_load(path, &c, &err) == 0, "%s does not load", path);
        CHECK(s->count < MAX_SEEDS);
        input *in = &s->items[s->count];
        in->size = af_fuzz_encode(&c, in->data, sizeof in->data);
        CHECK_MSG(in->size > 0, "%s does not encode", path);
        s->count++;
    }
}

static void note(reach_counts *k, const af_case *c, const af_fuzz_limits *lim) {
    af_error err;
    char txt[8192];
    if (af_case_validate(c, &err) != 0 || af_case_work(c) > lim->max_work) {
        af_case_print(c, txt, sizeof txt);
        CHECK_MSG(0, "draw %d: invalid or over the work budget %.3g:\n%s", k->n, lim->max_work, txt);
    }
    double el = af_case_elements(c);
    if (lim->wide && el > lim->max_elements) {
        af_case_print(c, txt, sizeof txt);
        CHECK_MSG(0, "draw %d: %.3g elements, bound %.3g:\n%s", k->n, el, lim->max_elements, txt);
    }
    if (el > k->max_elements) k->max_elements = el;
    k->n++;
    int sq = c->seqlen_q, skv = c->seqlen_kv;
    bool long_kv = skv > 1024;
    k->kv_over_1k += long_kv;
    k->kv_over_16k += skv > 16384;
    k->q_over_1k += sq > 1024;
    k->decode_long += sq <= 16 && long_kv;
    k->decode_long_gqa += sq <= 16 && long_kv && c->heads_q > c->heads_kv;
    k->split_kv += long_kv && skv >= 8 * sq && c->batch * c->heads_q <= 8;
    if (long_kv) {
        k->res_128m1 += skv % 128 == 127;
        k->res_128 += skv % 128 == 0;
        k->res_128p1 += skv % 128 == 1;
        k->res_64p1 += skv % 128 == 65;
        k->res_32m1 += skv % 64 == 31;
        int r = skv % 32;
        k->on_boundary += r == 0 || r == 1 || r == 31;
    }
    uint64_t v[4] = {(uint64_t)sq, (uint64_t)skv, (uint64_t)c->batch, (uint64_t)c->heads_q};
    for (int i = 0; i < 4; i++) k->hash = (k->hash ^ v[i]) * 0x100000001b3ull;
}

/* N campaign-like draws (campaign/inprocess.c's mutate_input on a queue of the seeds). */
static reach_counts mutation_draws(const seeds *s, const af_fuzz_limits *lim, uint64_t rng, int n) {
    reach_counts k;
    memset(&k, 0, sizeof k);
    k.hash = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) {
        input in = s->items[af_fuzz_rand(&rng) % (uint64_t)s->count];
        int stack = 1 + (int)(af_fuzz_rand(&rng) % 3);
        for (int j = 0; j < stack; j++) {
            uint64_t r = af_fuzz_rand(&rng);
            if (r % 8 == 0 && in.size > 0)
                in.data[(r >> 8) % in.size] ^= (uint8_t)(1u << ((r >> 40) % 8));
            else
                in.size = af_fuzz_mutate(in.data, in.size, sizeof in.data, (unsigned)(r >> 16), lim);
        }
        af_case c;
        CHECK(af_fuzz_decode(in.data, in.size, lim, &c) == 0);
        note(&k, &c, lim);
    }
    return k;
}

/* N random byte strings of 1..200 bytes, decoded. */
static reach_counts byte_draws(const af_fuzz_limits *lim, uint64_t rng, int n) {
    reach_counts k;
    memset(&k, 0, sizeof k);
    k.hash = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) {
        uint8_t buf[200];
        size_t len = 1 + (size_t)(af_fuzz_rand(&rng) % sizeof buf);
        for (size_t j = 0; j < len; j++) buf[j] = (uint8_t)(af_fuzz_rand(&rng) >> 56);
        af_case c;
        CHECK(af_fuzz_decode(buf, len, lim, &c) == 0);
        note(&k, &c, lim);
    }
    return k;
}

static void print_counts(const char *what, const reach_counts *k) {
    printf("%s: %d cases: s_kv > 1024 %d (%.1f %%), > 16384 %d (%.2f %%), s_q > 1024 %d; decode shapes %d (GQA %d), "
           "split-KV %d; long s_kv at k*128-1 %d, k*128 %d, k*128+1 %d, k*64+1 %d, k*32-1 %d, within 1 of a 32 "
           "multiple %d; largest %.3g elements\n",
           what, k->n, k->kv_over_1k, 100.0 * k->kv_over_1k / k->n, k->kv_over_16k, 100.0 * k->kv_over_16k / k->n,
           k->q_over_1k, k->decode_long, k->decode_long_gqa, k->split_kv, k->res_128m1, k->res_128, k->res_128p1,
           k->res_64p1, k->res_32m1, k->on_boundary, k->max_elements);
}

/* The reach a GPU campaign needs. The campaign's cases (mutations) must reach it in
 * full; random bytes (libFuzzer's byte mutations) take most of their lengths from the fine
 * section's exact offsets, so only the shares and the presence of each shape are asked
 * of them. */
static void check_gpu_reach(const char *what, const reach_counts *k, bool mutations) {
    CHECK_MSG(k->kv_over_1k * 5 >= k->n, "%s: s_kv > 1024 in %d of %d (< 20 %%)", what, k->kv_over_1k, k->n);
    /* a campaign runs its ~70 seeds (short cases) first: 70 of 570 cases in a 250 s
     * GPU campaign; 25 % of the mutants leaves 22 % of all cases */
    CHECK_MSG(!mutations || k->kv_over_1k * 4 >= k->n, "%s: s_kv > 1024 in %d of %d (< 25 %%)", what, k->kv_over_1k,
              k->n);
    CHECK_MSG(k->kv_over_16k * 100 >= k->n, "%s: s_kv > 16384 in %d of %d (< 1 %%)", what, k->kv_over_16k, k->n);
    CHECK_MSG(k->res_128m1 && k->res_128 && k->res_128p1 && k->res_64p1 && k->res_32m1,
              "%s: a tile residue of the long s_kv is missing", what);
    CHECK_MSG(k->decode_long && k->decode_long_gqa && k->split_kv, "%s: a long shape is missing", what);
    if (!mutations) return;
    /* a length drawn at random is within 1 of a 32 multiple 3 times in 32 */
    CHECK_MSG(k->on_boundary * 4 >= k->kv_over_1k, "%s: %d of %d long s_kv on a tile boundary (< 25 %%)", what,
              k->on_boundary, k->kv_over_1k);
    CHECK_MSG(k->decode_long * 20 >= k->n, "%s: long-KV decode shapes in %d of %d (< 5 %%)", what, k->decode_long,
              k->n);
    CHECK_MSG(k->decode_long_gqa * 50 >= k->n, "%s: GQA long-KV decode shapes in %d of %d (< 2 %%)", what,
              k->decode_long_gqa, k->n);
    CHECK_MSG(k->split_kv * 20 >= k->n, "%s: split-KV regimes in %d of %d (< 5 %%)", what, k->split_kv, k->n);
}

static af_backend fake_backend(unsigned flags) {
    af_backend be;
    memset(&be, 0, sizeof be);
    be.name = "fake";
    be.flags = flags;
    return be;
}

int main(void) {
    unsetenv("ATTNFUZZ_MAX_WORK");

    /* The budget a campaign picks: the GPU one for a backend that needs a GPU, the
     * default one otherwise; --max-work (>= 1024) over both; the environment over the
     * flag; values below 1024 ignored. */
    af_backend gpu_be = fake_backend(AF_BACKEND_NEEDS_GPU | AF_BACKEND_DETERMINISTIC), cpu_be = fake_backend(0);
    CHECK(af_fuzz_campaign_work(&gpu_be, 0) == AF_FUZZ_GPU_DEFAULT_WORK);
    CHECK(af_fuzz_campaign_work(&cpu_be, 0) == AF_FUZZ_DEFAULT_WORK);
    CHECK(af_fuzz_campaign_work(&gpu_be, 65536) == 65536 && af_fuzz_campaign_work(&cpu_be, 1e9) == 1e9);
    CHECK(af_fuzz_campaign_work(&gpu_be, 100) == AF_FUZZ_GPU_DEFAULT_WORK);
    setenv("ATTNFUZZ_MAX_WORK", "4096", 1);
    CHECK(af_fuzz_campaign_work(&gpu_be, 0) == 4096 && af_fuzz_campaign_work(&cpu_be, 0) == 4096);
    CHECK(af_fuzz_campaign_work(&gpu_be, 8192) == 8192);
    setenv("ATTNFUZZ_MAX_WORK", "12", 1);
    CHECK(af_fuzz_campaign_work(&gpu_be, 0) == AF_FUZZ_GPU_DEFAULT_WORK);
    unsetenv("ATTNFUZZ_MAX_WORK");

    /* The GPU budget bounds host memory too: a case's inputs and outputs in doubles
     * (af_case_elements x 8 bytes) stay within AF_FUZZ_WIDE_MAX_HOST_BYTES (4 GiB). */
    af_fuzz_limits gpu, cpu;
    af_fuzz_limits_default(&gpu);
    af_fuzz_limits_set_work(&gpu, af_fuzz_campaign_work(&gpu_be, 0));
    CHECK(gpu.wide && gpu.max_elements == AF_FUZZ_WIDE_MAX_ELEMENTS);
    af_fuzz_limits_default(&cpu);
    af_fuzz_limits_set_work(&cpu, af_fuzz_campaign_work(&cpu_be, 0));
    CHECK(!cpu.wide && cpu.max_work == AF_FUZZ_DEFAULT_WORK);
    {
        af_case big;
        af_case_defaults(&big); /* b1 h16 s131072 d128 backward: 2.7e9 elements, 21 GB in doubles */
        big.heads_q = big.heads_kv = 16;
        big.seqlen_q = big.seqlen_kv = 131072;
        big.head_dim_qk = big.head_dim_v = 128;
        big.backward = true;
        big.dtype = AF_DT_BF16;
        CHECK(af_fuzz_repair(&big, &gpu) == 0);
        CHECK_MSG(af_case_elements(&big) * 8 <= AF_FUZZ_WIDE_MAX_HOST_BYTES, "%.3g elements after repair",
                  af_case_elements(&big));
        /* heads go first, the length stays */
        CHECK(big.seqlen_kv == 131072 && big.seqlen_q == 131072 && big.heads_q == 2 && big.head_dim_qk == 128);
    }

    seeds *s = calloc(1, sizeof *s);
    CHECK(s != NULL);
    s->count = 1; /* the empty input: the default case */
    load_dir("corpora/seed", s);
    load_dir("corpora/seed-recent", s);
    printf("%d seeds\n", s->count);

    reach_counts g = mutation_draws(s, &gpu, 7, N_DRAWS);
    print_counts("GPU budget, mutations", &g);
    check_gpu_reach("GPU budget, mutations", &g, true);
    reach_counts gb = byte_draws(&gpu, 8, N_DRAWS);
    print_counts("GPU budget, random bytes", &gb);
    check_gpu_reach("GPU budget, random bytes", &gb, false);
    CHECK(g.max_elements <= AF_FUZZ_WIDE_MAX_ELEMENTS && gb.max_elements <= AF_FUZZ_WIDE_MAX_ELEMENTS);

    /* what the mutator draws is what the campaign runs: the mutated case (repaired)
     * encodes to bytes that decode back to it, long shapes included */
    int long_round_trips = 0;
    uint64_t rt_rng = 9;
    for (int i = 0; i < 5000; i++) {
        const input *in = &s->items[af_fuzz_rand(&rt_rng) % (uint64_t)s->count];
        af_case c, d;
        af_fuzz_decode(in->data, in->size, &gpu, &c);
        af_fuzz_mutate_case(&c, &gpu, &rt_rng);
        uint8_t enc[AF_FUZZ_MAX_ENCODED];
        size_t m = af_fuzz_encode(&c, enc, sizeof enc);
        CHECK(m > 0 && af_fuzz_decode(enc, m, &gpu, &d) == 0);
        if (!af_case_equal(&c, &d)) {
            char a[8192], b[8192];
            af_case_print(&c, a, sizeof a);
            af_case_print(&d, b, sizeof b);
            CHECK_MSG(0, "mutant %d does not round-trip:\n%s---\n%s", i, a, b);
        }
        long_round_trips += c.seqlen_kv > 65536;
    }
    CHECK_MSG(long_round_trips > 0, "no mutant past 65536 keys among 5000");

    /* deterministic: the same seed draws the same cases */
    reach_counts again = mutation_draws(s, &gpu, 7, 2000), first = mutation_draws(s, &gpu, 7, 2000);
    CHECK(again.hash == first.hash && again.kv_over_1k == first.kv_over_1k);
    reach_counts gb_again = byte_draws(&gpu, 8, N_DRAWS);
    CHECK(gb_again.hash == gb.hash);

    /* The cpu budget: the long share is what it was (the cpu campaign keeps its speed). */
    reach_counts cm = mutation_draws(s, &cpu, 7, N_DRAWS);
    print_counts("cpu budget, mutations", &cm);
    CHECK_MSG(abs(cm.kv_over_1k - CPU_LONG_OLD) <= CPU_LONG_TOLERANCE, "cpu budget: s_kv > 1024 in %d of %d, was %d",
              cm.kv_over_1k, cm.n, CPU_LONG_OLD);
    CHECK(cm.kv_over_16k == 0);

    free(s);
    CHECK_DONE("test_fuzz_reach");
}
