/* fuzz_tables.c — the curated value tables of the fuzz codec and mutator (fuzz_tables.h):
 * where kernels tend to break (tile boundaries, awkward head dims, window edges ...). */
#include "fuzz/fuzz_tables.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "util/rng.h"

const int af_fz_batch_table[AF_FZ_N_BATCH] = {1, 2, 3, 4, 5, 8};
const double af_fz_dropout_table[AF_FZ_N_DROPOUT] = {0.1, 0.25, 0.5, 0.9, 1.0 / 3.0, 0.05};
const int af_fz_ratio_table[AF_FZ_N_RATIO] = {1, 2, 3, 4, 8, 16, 6};
const int af_fz_hkv_table[AF_FZ_N_HKV] = {1, 2, 4, 3, 8};
const int af_fz_seqlen_values[AF_FZ_N_SEQLEN] = {1,  2,   3,   16,  17,  31,  32,  33,  63, 64,
                                                 65, 100, 127, 128, 129, 200, 255, 256, 257};
const int af_fz_head_dims[AF_FZ_N_HEAD_DIM] = {8, 16, 24, 32, 40, 48, 64, 72, 80, 96, 104, 128, 160, 192, 256, 512};
const int af_fz_stride_gaps[AF_FZ_N_STRIDE_GAP] = {0, 1, 8, 3, 64};
const int af_fz_axis_gaps[AF_FZ_N_AXIS_GAP] = {1, 2, 8, 3, 1, 5, 16, 67};
const int af_fz_thd_gaps[AF_FZ_N_THD_GAP] = {0, 1, 7, 32};
const int af_fz_page_sizes[AF_FZ_N_PAGE] = {0, 16, 32, 64, 1, 256, 8};
const int af_fz_odd_page_sizes[AF_FZ_N_ODD_PAGE] = {3, 5, 12, 48, 100};
const int af_fz_cp_sizes[AF_FZ_N_CP] = {1, 2, 2, 2, 2, 4, 4, 4, 4};
const af_cp_comm af_fz_cp_comms[AF_FZ_N_CP] = {AF_CP_NONE,       AF_CP_P2P,     AF_CP_ALL_GATHER,
                                               AF_CP_A2A,        AF_CP_A2A_P2P, AF_CP_P2P,
                                               AF_CP_ALL_GATHER, AF_CP_A2A,     AF_CP_A2A_P2P};
/* base distributions: kind, p0 */
static const af_data_term data_bases[AF_FZ_N_DATA_BASE] = {{AF_DATA_NORMAL, 1.0, 0},  {AF_DATA_NORMAL, 0.25, 0},
                                                           {AF_DATA_NORMAL, 4.0, 0},  {AF_DATA_UNIFORM, 1.0, 0},
                                                           {AF_DATA_UNIFORM, 8.0, 0}, {AF_DATA_NORMAL, 16.0, 0}};
/* modifier presets: [preset][modifier] with modifiers outlier, sink, low_lse,
 * block_range, zeros (bits 0..4 of core byte 18) */
static const af_data_term data_presets[AF_FZ_N_DATA_PRESET][5] = {{{AF_DATA_OUTLIER_CHANNELS, 2, 20},
                                                                   {AF_DATA_SINK, 30, 0},
                                                                   {AF_DATA_LOW_LSE, 0.25, 20},
                                                                   {AF_DATA_BLOCK_RANGE, 16, 0},
                                                                   {AF_DATA_ZEROS, 0.5, 0}},
                                                                  {{AF_DATA_OUTLIER_CHANNELS, 1, 100},
                                                                   {AF_DATA_SINK, 8, 0},
                                                                   {AF_DATA_LOW_LSE, 0.5, 60},
                                                                   {AF_DATA_BLOCK_RANGE, 30, 0},
                                                                   {AF_DATA_ZEROS, 0.9, 0}},
                                                                  {{AF_DATA_OUTLIER_CHANNELS, 4, 8},
                                                                   {AF_DATA_SINK, 100, 0},
                                                                   {AF_DATA_LOW_LSE, 1.0, 5},
                                                                   {AF_DATA_BLOCK_RANGE, 8, 0},
                                                                   {AF_DATA_ZEROS, 0.1, 0}},
                                                                  {{AF_DATA_OUTLIER_CHANNELS, 8, -50},
                                                                   {AF_DATA_SINK, -30, 0},
                                                                   {AF_DATA_LOW_LSE, 0.125, 200},
                                                                   {AF_DATA_BLOCK_RANGE, 40, 0},
                                                                   {AF_DATA_ZEROS, 0.99, 0}}};

const af_data_term *af_fz_data_base(int i) { return &data_bases[i]; }
const af_data_term *af_fz_data_preset(int preset, int modifier) { return &data_presets[preset][modifier]; }

/* (seqlen_q, seqlen_kv) and (head_dim_qk, head_dim_v) pair tables, built once and
 * sorted by work (product / sum) so that index 0 is the smallest. */
static af_fz_pair seq_pairs[AF_FZ_MAX_PAIRS], dim_pairs[AF_FZ_MAX_PAIRS];
static int n_seq_pairs, n_dim_pairs;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void pair_add(af_fz_pair *t, int *n, int a, int b) {
    if (a < 1 || b < 1 || *n >= AF_FZ_MAX_PAIRS) return;
    for (int i = 0; i < *n; i++)
        if (t[i].a == a && t[i].b == b) return;
    t[(*n)++] = (af_fz_pair){a, b};
}

static int cmp_seq_pair(const void *x, const void *y) {
    const af_fz_pair *p = x, *q = y;
    long long wp = (long long)p->a * p->b, wq = (long long)q->a * q->b;
    if (wp != wq) return wp < wq ? -1 : 1;
    return p->a != q->a ? (p->a < q->a ? -1 : 1) : (p->b < q->b ? -1 : p->b > q->b);
}

static int cmp_dim_pair(const void *x, const void *y) {
    const af_fz_pair *p = x, *q = y;
    int wp = p->a + p->b, wq = q->a + q->b;
    if (wp != wq) return wp < wq ? -1 : 1;
    return p->a != q->a ? (p->a < q->a ? -1 : 1) : (p->b < q->b ? -1 : p->b > q->b);
}

/* ---- wide draws (sorted in build_tables) ---- */
static af_fz_pair wide_seq_pairs[AF_FZ_N_WIDE] = {
    {1, 257},        {65537, 1},     {1, 1025},      {65537, 65537},  {1, 4097},    {2, 8193},     {64, 257},
    {7, 16383},      {128, 1025},    {1, 65537},     {32, 4097},      {1, 131072},  {511, 511},    {4, 32768},
    {8, 131071},     {16, 65536},    {1024, 1024},   {16, 131072},    {256, 16385}, {2047, 2047},  {127, 65537},
    {1023, 4096},    {129, 131072},  {4096, 4096},   {4097, 16384},   {8191, 8191}, {8192, 32768}, {16384, 16384},
    {16384, 131072}, {32769, 32769}, {65536, 65536}, {131072, 131072}};
static af_fz_pair wide_dim_pairs[AF_FZ_N_WIDE] = {
    {1, 1},     {3, 3},     {5, 5},     {7, 7},     {9, 9},     {12, 12},   {15, 15},     {17, 17},
    {20, 20},   {31, 31},   {33, 33},   {36, 36},   {63, 63},   {64, 65},   {65, 65},     {100, 100},
    {128, 127}, {127, 128}, {127, 127}, {129, 128}, {129, 129}, {192, 130}, {191, 191},   {255, 255},
    {257, 257}, {320, 320}, {384, 384}, {511, 511}, {513, 513}, {768, 768}, {1023, 1023}, {1024, 1024}};
const int af_fz_wide_hkv[8] = {16, 32, 64, 128, 12, 24, 48, 96};
const int af_fz_wide_pages[8] = {512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};

static void build_tables(void) {
    /* seqlens: equal lengths on every boundary, then sq vs skv relations around it */
    for (int i = 0; i < AF_FZ_N_SEQLEN; i++)
        pair_add(seq_pairs, &n_seq_pairs, af_fz_seqlen_values[i], af_fz_seqlen_values[i]);
    for (int i = 0; i < AF_FZ_N_SEQLEN; i++) {
        int s = af_fz_seqlen_values[i];
        pair_add(seq_pairs, &n_seq_pairs, s, s + 1);
        pair_add(seq_pairs, &n_seq_pairs, s + 1, s);
        pair_add(seq_pairs, &n_seq_pairs, s, 2 * s);
        pair_add(seq_pairs, &n_seq_pairs, 2 * s, s);
        pair_add(seq_pairs, &n_seq_pairs, 1, s);
        pair_add(seq_pairs, &n_seq_pairs, s, 1);
        pair_add(seq_pairs, &n_seq_pairs, s, 128);
    }
    qsort(seq_pairs, (size_t)n_seq_pairs, sizeof seq_pairs[0], cmp_seq_pair);
    for (int i = 0; i < AF_FZ_N_HEAD_DIM; i++)
        pair_add(dim_pairs, &n_dim_pairs, af_fz_head_dims[i], af_fz_head_dims[i]);
    static const int asym[][2] = {{192, 128}, {128, 192}, {64, 128},  {128, 64},  {96, 64},
                                  {32, 64},   {64, 32},   {256, 128}, {40, 72},   {8, 64},
                                  {64, 8},    {24, 40},   {72, 64},   {576, 512}, {128, 256}};
    for (size_t i = 0; i < sizeof asym / sizeof asym[0]; i++) pair_add(dim_pairs, &n_dim_pairs, asym[i][0], asym[i][1]);
    qsort(dim_pairs, (size_t)n_dim_pairs, sizeof dim_pairs[0], cmp_dim_pair);
    qsort(wide_seq_pairs, AF_FZ_N_WIDE, sizeof wide_seq_pairs[0], cmp_seq_pair);
    qsort(wide_dim_pairs, AF_FZ_N_WIDE, sizeof wide_dim_pairs[0], cmp_dim_pair);
}

const af_fz_pair *af_fz_wide_seq_pairs(void) {
    pthread_once(&tables_once, build_tables);
    return wide_seq_pairs;
}
const af_fz_pair *af_fz_wide_dim_pairs(void) {
    pthread_once(&tables_once, build_tables);
    return wide_dim_pairs;
}

/* log-uniform in [lo, max]: lo (max / lo)^u with u uniform in [0, 1) from 32 bits of r */
static int log_uniform_in(uint64_t r, int lo, int max) {
    double u = (double)(r & 0xffffffffu) / 4294967296.0;
    int v = (int)floor(lo * pow((double)max / lo, u));
    return v < lo ? lo : v > max ? max : v;
}

static int log_uniform(uint64_t r, int max) { return log_uniform_in(r, 1, max); }

int af_fz_long_length(uint64_t r, int lo, int max) {
    if (lo < 1) lo = 1;
    if (max < lo) max = lo;
    int v = log_uniform_in(r, lo, max);
    int tile = 32 << ((r >> 32) % 3); /* 32, 64, 128 */
    int step = (int)((r >> 40) % 6);  /* 0: k*tile, 1: k*tile - 1, 2: k*tile + 1, else as drawn */
    if (step < 3 && v >= tile) v = v / tile * tile + (step == 1 ? -1 : step == 2 ? 1 : 0);
    return v < 1 ? 1 : v > max ? max : v;
}

int af_fz_wide_length(uint64_t r, int max) { return af_fz_long_length(r, 1, max); }

int af_fz_wide_head_dim(uint64_t r) { return log_uniform(r, AF_MAX_HEAD_DIM); }

const af_fz_pair *af_fz_seq_pairs(int *n) {
    pthread_once(&tables_once, build_tables);
    *n = n_seq_pairs;
    return seq_pairs;
}

const af_fz_pair *af_fz_dim_pairs(int *n) {
    pthread_once(&tables_once, build_tables);
    *n = n_dim_pairs;
    return dim_pairs;
}

int af_fz_document_len(int idx, int skv) {
    static const int fixed[] = {1, 1, 2, 3, 4, 7, 8, 16, 31, 64};
    int v = idx < 10 ? fixed[idx] : idx == 10 ? skv / 2 : idx == 11 ? skv / 3 : skv - 1;
    return v < 1 ? 1 : v;
}

int af_fz_global_value(int idx, int skv) {
    static const int fixed[] = {1, 1, 2, 3, 4, 8, 31};
    int v = idx < 7 ? fixed[idx] : idx == 7 ? skv - 1 : skv;
    return v < 1 ? 1 : v;
}

int af_fz_block_size(int idx, int len) {
    static const int fixed[] = {1, 2, 4, 8, 16, 32, 64, 128, 3, 5, 7, 13, 31};
    int v = idx < 13 ? fixed[idx] : len;
    return v < 1 ? 1 : v;
}

double af_fz_keep_value(int idx) { return (30 + 5 * idx) / 100.0; }

int af_fz_chunk_value(int idx, int skv) {
    static const int fixed[] = {1, 2, 3, 4, 7, 8, 16, 31, 64, 128};
    int v = idx < 10 ? fixed[idx] : idx == 10 ? skv / 2 : idx == 11 ? skv - 1 : idx == 12 ? skv : skv + 1;
    return v < 1 ? 1 : v;
}

/* Window edges relative to the lengths; index 0 = unbounded. */
int af_fz_window_value(int idx, int sq, int skv) {
    int d = skv > sq ? skv - sq : sq - skv;
    static const int fixed[] = {-1, 0, 1, 2, 31, 32, 33};
    if (idx < 7) return fixed[idx];
    switch (idx) {
        case 7:
            return sq - 1;
        case 8:
            return sq;
        case 9:
            return skv - 1;
        case 10:
            return skv;
        case 11:
            return d;
        case 12:
            return 63;
        case 13:
            return 64;
        case 14:
            return 127;
        case 15:
            return 128;
        case 16:
            return 3;
        case 17:
            return 8;
        default:
            return 16;
    }
}

/* Scale presets; index 0 = the default 1/sqrt(d_qk). */
bool af_fz_scale_value(int idx, int dqk, float *out) {
    double inv = 1.0 / sqrt((double)dqk);
    switch (idx) {
        case 0:
            return false;
        case 1:
            *out = 1.0f;
            return true;
        case 2:
            *out = (float)(0.5 * inv);
            return true;
        case 3:
            *out = (float)(2.0 * inv);
            return true;
        case 4:
            *out = 0.01f;
            return true;
        default:
            *out = 30.0f;
            return true;
    }
}

/* Length of sequence b of B under a ragged pattern; max = the padded maximum. */
int af_fz_pattern_len(int pattern, int max, int b, int B, uint64_t seed, int salt) {
    switch (pattern) {
        case 1:
            return b == B - 1 ? max / 2 : max;
        case 2:
            return b == 0 && B > 1 ? 0 : max;
        case 3:
            return b == 0 ? 1 : max;
        case 4:
            return (int)(af_rng_mix64(seed * 0x9e3779b97f4a7c15ull + (uint64_t)b * 131 + (uint64_t)salt) %
                         (uint64_t)(max + 1));
        case 5:
            return max - (int)(((long long)b * max) / B);
        case 6:
            return max > 1 ? max - 1 : max;
        case 7:
            return b % 2 ? 1 : max;
        default:
            return max;
    }
}
