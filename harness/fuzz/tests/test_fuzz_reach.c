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
 * memory bound (AF_FUZZ_WIDE_MAX_ELEMENTS). Under the cpu budget the boundary draws
 * (fuzz.h AF_FUZZ_BOUNDARY_ONE_IN) reach pages up to 1024 with keys past every power of
 * two in a page, s_kv past 256 / 1024 / 4096 / 16384 with several heads, head dims
 * of every residue mod 32, batch == heads_kv with GQA, window sides at 0 / 1 / >= s with
 * either alignment and s_q > s_kv bottom-right, while the long share and the mean work
 * stay small (the cpu campaign keeps its speed); from the trivial seed alone each narrow
 * trigger comes within a few hundred draws. Both draws are deterministic: the same seed
 * gives the same cases. Run from the source root (the seed corpora). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "judge/problem.h"
#include "util/check.h"

#define N_DRAWS   20000
#define MAX_SEEDS 256

/* The cpu budget's draws with s_kv > 1024: 393 of 20000 before the boundary draws; with
 * them a few percent more (s_kv past 1024, 4096 and 16384 with several heads, 1024-token
 * pages), at most 10 %. The mean work of a draw: 5.6e5 before the boundary draws (their
 * cases are small first), at most 0.6 of the budget (6.3e5). */
#define CPU_LONG_MAX      (N_DRAWS / 10)
#define CPU_MEAN_WORK_MAX (AF_FUZZ_DEFAULT_WORK * 0.6)
/* Draws from the trivial seed within which each narrow trigger must come. */
#define TRIVIAL_SEED_DRAWS 400

typedef struct {
    uint8_t data[AF_FUZZ_MAX_ENCODED];
    size_t size;
} input;

typedef struct {
    input items[MAX_SEEDS];
    int count;
} seeds;

/* The boundaries the default budget's boundary draws (fuzz.h AF_FUZZ_BOUNDARY_ONE_IN)
 * reach, counted over the cpu budget's draws. */
#define PAGE_LOG2_MAX 10 /* pages up to 1024 tokens */
typedef struct {
    int paged_past[PAGE_LOG2_MAX];             /* [m]: a page > 2^m tokens holding a key at row >= 2^m */
    int big_page_past_128;                     /* page_size >= 256 and a key at 128 or more */
    int kv_heads_over[4];                      /* s_kv > 256, > 1024, > 4096, > 16384, with heads_q > 1 */
    int dim_residue_qk[32], dim_residue_v[32]; /* head dims mod 32 */
    int batch_eq_hkv_gqa;                      /* batch == heads_kv > 1, heads_q > heads_kv */
    int window_edge[2][3];                     /* [align][edge]: a window side at 0, at 1, >= max(s_q, s_kv) */
    int sq_over_skv_br;                        /* s_q > s_kv, causal bottom-right */
    int thd_paged;                             /* layout thd with page_size > 0 (ragged Q, paged K/V) */
    double work;                               /* sum of af_case_work */
} boundary_counts;

typedef struct {
    int n, kv_over_1k, kv_over_16k, q_over_1k;
    int decode_long, decode_long_gqa, split_kv;
    int res_128m1, res_128, res_128p1, res_64p1, res_32m1, on_boundary;
    double max_elements;
    int host_judged, host_judged_over_1k; /* cases the device path does not judge (af_problem_device_judged) */
    uint64_t hash;                        /* of every (s_q, s_kv, batch, heads_q) in draw order */
    boundary_counts bd;
} reach_counts;

static void note_boundaries(boundary_counts *k, const af_case *c) {
    int sq = c->seqlen_q, skv = c->seqlen_kv, page = c->page_size;
    if (page > 0) {
        int last_row = (skv < page ? skv : page) - 1; /* the deepest row a page holds */
        for (int m = 0; m < PAGE_LOG2_MAX; m++) k->paged_past[m] += page > (1 << m) && last_row >= (1 << m);
        k->big_page_past_128 += page >= 256 && skv > 128;
        k->thd_paged += c->layout == AF_LAYOUT_THD;
    }
    if (c->heads_q > 1) {
        k->kv_heads_over[0] += skv > 256;
        k->kv_heads_over[1] += skv > 1024;
        k->kv_heads_over[2] += skv > 4096;
        k->kv_heads_over[3] += skv > 16384;
    }
    k->dim_residue_qk[c->head_dim_qk % 32]++;
    k->dim_residue_v[c->head_dim_v % 32]++;
    k->batch_eq_hkv_gqa += c->batch == c->heads_kv && c->heads_kv > 1 && c->heads_q > c->heads_kv;
    int big = sq > skv ? sq : skv, br = c->align == AF_ALIGN_BOTTOM_RIGHT;
    int sides[2] = {c->window_left, c->window_right};
    for (int w = 0; w < 2; w++) {
        k->window_edge[br][0] += sides[w] == 0;
        k->window_edge[br][1] += sides[w] == 1;
        k->window_edge[br][2] += sides[w] >= big;
    }
    k->sq_over_skv_br += sq > skv && br && c->mask == AF_MASK_CAUSAL;
    k->work += af_case_work(c);
}

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
    /* a case the host judges (a feature, a block mask, head dims above 256) keeps the
     * host's budget under a wide one: the CPU fp64 tier judges it in seconds */
    if (lim->wide && !af_problem_device_judged(c)) {
        k->host_judged++;
        k->host_judged_over_1k += c->seqlen_kv > 1024;
        if (af_fuzz_budget_work(c) > lim->host_work) {
            af_case_print(c, txt, sizeof txt);
            CHECK_MSG(0, "draw %d: judged on the host, work %.3g over the host budget %.3g:\n%s", k->n,
                      af_fuzz_budget_work(c), lim->host_work, txt);
        }
    }
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
    note_boundaries(&k->bd, c);
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
           "multiple %d; largest %.3g elements; judged on the host %d (s_kv > 1024: %d)\n",
           what, k->n, k->kv_over_1k, 100.0 * k->kv_over_1k / k->n, k->kv_over_16k, 100.0 * k->kv_over_16k / k->n,
           k->q_over_1k, k->decode_long, k->decode_long_gqa, k->split_kv, k->res_128m1, k->res_128, k->res_128p1,
           k->res_64p1, k->res_32m1, k->on_boundary, k->max_elements, k->host_judged, k->host_judged_over_1k);
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

/* The boundaries under the cpu budget (shares of the campaign-like draws). */
static void check_cpu_boundaries(const reach_counts *k) {
    const boundary_counts *b = &k->bd;
    printf("cpu boundaries: pages >= 256 with a key past 128 %d; keys past 2^m in a page (m = 0..9):",
           b->big_page_past_128);
    for (int m = 0; m < PAGE_LOG2_MAX; m++) printf(" %d", b->paged_past[m]);
    printf("; s_kv > 256 / 1024 / 4096 / 16384 with heads_q > 1: %d %d %d %d; batch == heads_kv (GQA) %d; "
           "s_q > s_kv causal bottom-right %d; windows (top-left 0 1 >=s, bottom-right 0 1 >=s) %d %d %d %d %d %d; "
           "mean work %.0f\n",
           b->kv_heads_over[0], b->kv_heads_over[1], b->kv_heads_over[2], b->kv_heads_over[3], b->batch_eq_hkv_gqa,
           b->sq_over_skv_br, b->window_edge[0][0], b->window_edge[0][1], b->window_edge[0][2], b->window_edge[1][0],
           b->window_edge[1][1], b->window_edge[1][2], b->work / k->n);
    /* the two shapes no cpu campaign met in 150 s: >= 1 % of the draws each */
    CHECK_MSG(b->big_page_past_128 * 100 >= k->n, "pages >= 256 with a key past 128 in %d of %d (< 1 %%)",
              b->big_page_past_128, k->n);
    printf("cpu boundaries: thd with pages (ragged queries over paged K/V) %d of %d\n", b->thd_paged, k->n);
    CHECK_MSG(b->thd_paged * 1000 >= k->n, "thd with pages in %d of %d (< 0.1 %%)", b->thd_paged, k->n);
    CHECK_MSG(b->kv_heads_over[1] * 100 >= k->n, "s_kv > 1024 with heads_q > 1 in %d of %d (< 1 %%)",
              b->kv_heads_over[1], k->n);
    for (int m = 0; m < PAGE_LOG2_MAX; m++)
        CHECK_MSG(b->paged_past[m] * 1000 >= k->n, "pages with a key past %d in a page: %d of %d (< 0.1 %%)", 1 << m,
                  b->paged_past[m], k->n);
    for (int e = 0; e < 4; e++) CHECK_MSG(b->kv_heads_over[e] > 0, "no s_kv past boundary %d with several heads", e);
    for (int r = 0; r < 32; r++)
        CHECK_MSG(b->dim_residue_qk[r] > 0 && b->dim_residue_v[r] > 0, "no head dim = %d mod 32", r);
    CHECK_MSG(b->batch_eq_hkv_gqa * 100 >= k->n, "batch == heads_kv with GQA in %d of %d (< 1 %%)", b->batch_eq_hkv_gqa,
              k->n);
    CHECK_MSG(b->sq_over_skv_br * 100 >= k->n, "s_q > s_kv causal bottom-right in %d of %d (< 1 %%)", b->sq_over_skv_br,
              k->n);
    for (int a = 0; a < 2; a++)
        for (int e = 0; e < 3; e++)
            CHECK_MSG(b->window_edge[a][e] * 200 >= k->n, "window edge %d with alignment %d in %d of %d (< 0.5 %%)", e,
                      a, b->window_edge[a][e], k->n);
}

/* Draw index (from 1) of the first case of a trigger, from the trivial seed alone
 * (`fp16 b1 h1 s16 d64`, the empty input); 0 if none within n draws. */
typedef bool (*trigger_fn)(const af_case *c);
static bool trig_page(const af_case *c) { return c->page_size >= 256 && c->seqlen_kv > 128; }
static bool trig_split(const af_case *c) { return c->seqlen_kv > 1024 && c->heads_q > 1; }
static bool trig_batch_hkv(const af_case *c) {
    return c->batch == c->heads_kv && c->heads_kv > 1 && c->heads_q > c->heads_kv;
}
static bool trig_window0_br(const af_case *c) {
    return c->align == AF_ALIGN_BOTTOM_RIGHT && c->seqlen_q != c->seqlen_kv &&
           (c->window_left == 0 || c->window_right == 0);
}
static bool trig_sq_over_skv(const af_case *c) {
    return c->seqlen_q > c->seqlen_kv && c->align == AF_ALIGN_BOTTOM_RIGHT && c->mask == AF_MASK_CAUSAL;
}
static bool trig_odd_dim(const af_case *c) { return c->head_dim_qk % 8 != 0 || c->head_dim_v % 8 != 0; }
static bool trig_dropout(const af_case *c) { return c->dropout_p > 0.0; }
static bool trig_dsink(const af_case *c) { return c->softmax == AF_SOFTMAX_LEARNABLE && c->backward; }

static int first_trigger(const af_fuzz_limits *lim, trigger_fn hit, int n) {
    input seed = {.size = 0};
    uint64_t rng = 11;
    for (int i = 1; i <= n; i++) {
        input in = seed;
        int stack = 1 + (int)(af_fuzz_rand(&rng) % 3);
        for (int j = 0; j < stack; j++)
            in.size = af_fuzz_mutate(in.data, in.size, sizeof in.data, (unsigned)(af_fuzz_rand(&rng) >> 16), lim);
        af_case c;
        CHECK(af_fuzz_decode(in.data, in.size, lim, &c) == 0);
        if (hit(&c)) return i;
    }
    return 0;
}

static af_backend fake_backend(unsigned flags) {
    af_backend be;
    memset(&be, 0, sizeof be);
    be.name = "fake";
    be.flags = flags;
    return be;
}

/* A backend that serves fp8_e4m3 only (as flash_fp8 does), backward and paging included. */
static af_run_status fp8_only_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    if (c->dtype == AF_DT_FP8_E4M3 && c->cp_size == 1 && !af_case_has_features(c)) return AF_RUN_OK;
    snprintf(why, cap, "fp8_e4m3 only");
    return AF_RUN_DECLINED;
}

/* The limits of a campaign ask the backend in a dtype it serves: an fp8-only backend
 * keeps its backward, paging and ragged lengths (asked in fp16 they were all switched off,
 * and no backward bug of such a backend could be met). */
static void test_limits_fp8_only(void) {
    af_backend be = fake_backend(0);
    be.supports = fp8_only_supports;
    af_fuzz_limits l;
    af_fuzz_limits_default(&l);
    af_fuzz_limits_for_backend(&l, &be);
    CHECK(l.dtype_mask == 1u << AF_DT_FP8_E4M3);
    CHECK_MSG(l.backward && l.fp8_backward && af_fuzz_backward_allowed(&l, AF_DT_FP8_E4M3),
              "an fp8-only backend lost its backward");
    CHECK(l.paged && l.ragged && l.max_cp == 1 && !l.features);
}

int main(void) {
    unsetenv("ATTNFUZZ_MAX_WORK");
    test_limits_fp8_only();

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

    /* What the device path judges (af_problem_device_judged), and the host's budget for the
     * rest: the shape of a campaign's case that ran 300 s on the host (fp16 thd, ALiBi abs,
     * s_q 2432 over s_kv 65536, backward: work 6.1e10, the CPU fp64 tier's) is shrunk to
     * AF_FUZZ_HOST_JUDGED_WORK; the same shape without ALiBi keeps its length. */
    CHECK(gpu.host_work == AF_FUZZ_HOST_JUDGED_WORK && cpu.host_work == cpu.max_work);
    {
        af_case c;
        af_case_defaults(&c);
        c.dtype = AF_DT_FP16;
        c.batch = 2;
        c.heads_q = 4;
        c.heads_kv = 2;
        c.seqlen_q = 2432;
        c.seqlen_kv = 65536;
        c.head_dim_qk = c.head_dim_v = 16;
        c.mask = AF_MASK_CAUSAL;
        c.align = AF_ALIGN_BOTTOM_RIGHT;
        c.backward = true;
        CHECK(af_problem_device_judged(&c));
        af_case plain = c;
        CHECK(af_fuzz_repair(&plain, &gpu) == 0 && plain.seqlen_kv == 65536 && plain.seqlen_q == 2432);
        af_case alibi = c;
        alibi.alibi = AF_ALIBI_ABS;
        CHECK(!af_problem_device_judged(&alibi));
        CHECK(af_fuzz_repair(&alibi, &gpu) == 0 && alibi.alibi == AF_ALIBI_ABS);
        CHECK_MSG(af_fuzz_budget_work(&alibi) <= AF_FUZZ_HOST_JUDGED_WORK &&
                      af_fuzz_budget_work(&alibi) * 4 > AF_FUZZ_HOST_JUDGED_WORK,
                  "ALiBi case after repair: work %.3g (b%d h%d s%dx%d d%d)", af_fuzz_budget_work(&alibi), alibi.batch,
                  alibi.heads_q, alibi.seqlen_q, alibi.seqlen_kv, alibi.head_dim_qk);
        /* each thing the GPU tier does not implement puts a case on the host */
        af_case t = c;
        t.softcap = 30.0;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.softmax = AF_SOFTMAX_LEARNABLE;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.bias = AF_BIAS_1HSS;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.dlse = true;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.dropout_p = 0.1;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.outputs = AF_OUTPUTS_MAX_SUMEXP;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.score_mod = AF_SCORE_MOD_SQUARED;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.global_keys = 4;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.block_mask_q = t.block_mask_k = 64, t.block_mask_p = 0.5;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.head_dim_qk = t.head_dim_v = 512;
        CHECK(!af_problem_device_judged(&t));
        t = c, t.head_dim_qk = t.head_dim_v = 256;
        CHECK(af_problem_device_judged(&t));
        /* under the cpu budget nothing changes: the host's budget is the budget */
        af_case small = alibi;
        CHECK(af_fuzz_repair(&small, &cpu) == 0 && af_fuzz_budget_work(&small) <= cpu.max_work);
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

    /* The cpu budget: the boundary draws reach every boundary, while the long share stays
     * small (the cpu campaign keeps its speed; the work budget bounds every case). */
    reach_counts cm = mutation_draws(s, &cpu, 7, N_DRAWS);
    print_counts("cpu budget, mutations", &cm);
    check_cpu_boundaries(&cm);
    CHECK_MSG(cm.kv_over_1k <= CPU_LONG_MAX, "cpu budget: s_kv > 1024 in %d of %d (at most %d)", cm.kv_over_1k, cm.n,
              CPU_LONG_MAX);
    CHECK_MSG(cm.bd.work / cm.n <= CPU_MEAN_WORK_MAX, "cpu budget: mean work %.0f (at most %.0f)", cm.bd.work / cm.n,
              CPU_MEAN_WORK_MAX);
    CHECK(cm.kv_over_16k > 0 && cm.max_elements <= AF_CASE_MAX_ELEMENTS);

    /* ... and what it draws is what the campaign runs: cpu mutants round-trip too */
    for (int i = 0; i < 5000; i++) {
        const input *in = &s->items[af_fuzz_rand(&rt_rng) % (uint64_t)s->count];
        af_case c, d;
        af_fuzz_decode(in->data, in->size, &cpu, &c);
        af_fuzz_mutate_case(&c, &cpu, &rt_rng);
        uint8_t enc[AF_FUZZ_MAX_ENCODED];
        size_t m = af_fuzz_encode(&c, enc, sizeof enc);
        CHECK(m > 0 && af_fuzz_decode(enc, m, &cpu, &d) == 0);
        if (!af_case_equal(&c, &d)) {
            char a[8192], b[8192];
            af_case_print(&c, a, sizeof a);
            af_case_print(&d, b, sizeof b);
            CHECK_MSG(0, "cpu mutant %d does not round-trip:\n%s---\n%s", i, a, b);
        }
    }

    /* Small first: from the trivial seed alone each narrow trigger comes within a few
     * hundred draws (seconds of a one-thread cpu campaign). */
    static const struct {
        const char *name;
        trigger_fn hit;
    } triggers[] = {{"page >= 256 with a key past 128", trig_page},
                    {"s_kv > 1024 with heads_q > 1", trig_split},
                    {"batch == heads_kv with GQA", trig_batch_hkv},
                    {"window side 0, bottom-right, s_q != s_kv", trig_window0_br},
                    {"s_q > s_kv causal bottom-right", trig_sq_over_skv},
                    {"head dim % 8 != 0", trig_odd_dim},
                    {"dropout", trig_dropout},
                    {"learnable sinks with a backward", trig_dsink}};
    for (size_t t = 0; t < sizeof triggers / sizeof triggers[0]; t++) {
        int at = first_trigger(&cpu, triggers[t].hit, TRIVIAL_SEED_DRAWS);
        printf("from the trivial seed: %s at draw %d\n", triggers[t].name, at);
        CHECK_MSG(at > 0, "from the trivial seed: no %s within %d draws", triggers[t].name, TRIVIAL_SEED_DRAWS);
    }

    free(s);
    CHECK_DONE("test_fuzz_reach");
}
