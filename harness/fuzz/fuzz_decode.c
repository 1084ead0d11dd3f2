/* fuzz_decode.c — fuzz bytes <-> cases (format in fuzz/fuzz.h), repair, feedback.
 *
 * The mutator lives in fuzz_mutate.c; both share the curated value tables below
 * through fuzz_tables.h.
 */
#include "fuzz/fuzz.h"
#include "util/config.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "judge/signature.h"
#include "util/hash.h"
#include "fuzz/fuzz_tables.h"

/* ---- curated tables ------------------------------------------------------------ */

const int af_fz_batch_table[AF_FZ_N_BATCH] = {1, 2, 3, 4, 5, 8};
const int af_fz_ratio_table[AF_FZ_N_RATIO] = {1, 2, 3, 4, 8, 16, 6};
const int af_fz_hkv_table[AF_FZ_N_HKV] = {1, 2, 4, 3, 8};
const int af_fz_seqlen_values[AF_FZ_N_SEQLEN] = {1, 2, 3, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 200, 255, 256, 257};
const int af_fz_head_dims[AF_FZ_N_HEAD_DIM] = {8, 16, 24, 32, 40, 48, 64, 72, 80, 96, 104, 128, 160, 192, 256, 512};
const int af_fz_stride_gaps[AF_FZ_N_STRIDE_GAP] = {0, 1, 8, 3, 64};
const int af_fz_thd_gaps[AF_FZ_N_THD_GAP] = {0, 1, 7, 32};
const int af_fz_page_sizes[AF_FZ_N_PAGE] = {0, 16, 32, 64, 1, 256, 8};
const int af_fz_cp_sizes[AF_FZ_N_CP] = {1, 2, 2, 2, 2, 4, 4, 4, 4};
const af_cp_comm af_fz_cp_comms[AF_FZ_N_CP] = {AF_CP_NONE, AF_CP_P2P, AF_CP_ALL_GATHER, AF_CP_A2A, AF_CP_A2A_P2P,
                                               AF_CP_P2P, AF_CP_ALL_GATHER, AF_CP_A2A, AF_CP_A2A_P2P};
/* base distributions: kind, p0 */
static const af_data_term data_bases[AF_FZ_N_DATA_BASE] = {
    {AF_DATA_NORMAL, 1.0, 0}, {AF_DATA_NORMAL, 0.25, 0}, {AF_DATA_NORMAL, 4.0, 0},
    {AF_DATA_UNIFORM, 1.0, 0}, {AF_DATA_UNIFORM, 8.0, 0}, {AF_DATA_NORMAL, 16.0, 0}};
/* modifier presets: [preset][modifier] with modifiers outlier, sink, low_lse,
 * block_range, zeros (bits 0..4 of core byte 18) */
static const af_data_term data_presets[AF_FZ_N_DATA_PRESET][5] = {
    {{AF_DATA_OUTLIER_CHANNELS, 2, 20}, {AF_DATA_SINK, 30, 0}, {AF_DATA_LOW_LSE, 0.25, 20}, {AF_DATA_BLOCK_RANGE, 16, 0}, {AF_DATA_ZEROS, 0.5, 0}},
    {{AF_DATA_OUTLIER_CHANNELS, 1, 100}, {AF_DATA_SINK, 8, 0}, {AF_DATA_LOW_LSE, 0.5, 60}, {AF_DATA_BLOCK_RANGE, 30, 0}, {AF_DATA_ZEROS, 0.9, 0}},
    {{AF_DATA_OUTLIER_CHANNELS, 4, 8}, {AF_DATA_SINK, 100, 0}, {AF_DATA_LOW_LSE, 1.0, 5}, {AF_DATA_BLOCK_RANGE, 8, 0}, {AF_DATA_ZEROS, 0.1, 0}},
    {{AF_DATA_OUTLIER_CHANNELS, 8, -50}, {AF_DATA_SINK, -30, 0}, {AF_DATA_LOW_LSE, 0.125, 200}, {AF_DATA_BLOCK_RANGE, 40, 0}, {AF_DATA_ZEROS, 0.99, 0}}};

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

static void build_tables(void) {
    /* seqlens: equal lengths on every boundary, then sq vs skv relations around it */
    for (int i = 0; i < AF_FZ_N_SEQLEN; i++) pair_add(seq_pairs, &n_seq_pairs, af_fz_seqlen_values[i], af_fz_seqlen_values[i]);
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
    for (int i = 0; i < AF_FZ_N_HEAD_DIM; i++) pair_add(dim_pairs, &n_dim_pairs, af_fz_head_dims[i], af_fz_head_dims[i]);
    static const int asym[][2] = {{192, 128}, {128, 192}, {64, 128}, {128, 64}, {96, 64}, {32, 64}, {64, 32},
                                  {256, 128}, {40, 72}, {8, 64}, {64, 8}, {24, 40}, {72, 64}, {576, 512}, {128, 256}};
    for (size_t i = 0; i < sizeof asym / sizeof asym[0]; i++) pair_add(dim_pairs, &n_dim_pairs, asym[i][0], asym[i][1]);
    qsort(dim_pairs, (size_t)n_dim_pairs, sizeof dim_pairs[0], cmp_dim_pair);
}

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

/* Window edges relative to the lengths; index 0 = unbounded. */
int af_fz_window_value(int idx, int sq, int skv) {
    int d = skv > sq ? skv - sq : sq - skv;
    static const int fixed[] = {-1, 0, 1, 2, 31, 32, 33};
    if (idx < 7) return fixed[idx];
    switch (idx) {
    case 7: return sq - 1;
    case 8: return sq;
    case 9: return skv - 1;
    case 10: return skv;
    case 11: return d;
    case 12: return 63;
    case 13: return 64;
    case 14: return 127;
    case 15: return 128;
    case 16: return 3;
    case 17: return 8;
    default: return 16;
    }
}

/* Scale presets; index 0 = the default 1/sqrt(d_qk). */
bool af_fz_scale_value(int idx, int dqk, float *out) {
    double inv = 1.0 / sqrt((double)dqk);
    switch (idx) {
    case 0: return false;
    case 1: *out = 1.0f; return true;
    case 2: *out = (float)(0.5 * inv); return true;
    case 3: *out = (float)(2.0 * inv); return true;
    case 4: *out = 0.01f; return true;
    default: *out = 30.0f; return true;
    }
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Length of sequence b of B under a ragged pattern; max = the padded maximum. */
int af_fz_pattern_len(int pattern, int max, int b, int B, uint64_t seed, int salt) {
    switch (pattern) {
    case 1: return b == B - 1 ? max / 2 : max;
    case 2: return b == 0 && B > 1 ? 0 : max;
    case 3: return b == 0 ? 1 : max;
    case 4: return (int)(mix64(seed * 0x9e3779b97f4a7c15ull + (uint64_t)b * 131 + (uint64_t)salt) % (uint64_t)(max + 1));
    case 5: return max - (int)(((long long)b * max) / B);
    case 6: return max > 1 ? max - 1 : max;
    case 7: return b % 2 ? 1 : max;
    default: return max;
    }
}

/* ---- limits, work ------------------------------------------------------------------ */

void af_fuzz_limits_default(af_fuzz_limits *l) {
    memset(l, 0, sizeof *l);
    l->max_work = AF_FUZZ_DEFAULT_WORK;
    const char *env = af_config_get(AF_CFG_MAX_WORK);
    if (env && *env) {
        double w = strtod(env, NULL);
        if (w >= 1024) l->max_work = w;
    }
    l->dtype_mask = 0xF;
    l->backward = true;
    l->fp8_backward = true;
    l->mxfp8_backward = true;
    l->max_cp = 4;
    l->paged = true;
    l->ragged = true;
}

static bool backend_serves(af_backend *be, const af_case *c) {
    char why[256];
    return be->supports(be, c, why, sizeof why) == AF_RUN_OK;
}

void af_fuzz_limits_for_backend(af_fuzz_limits *l, af_backend *be) {
    af_case c;
    unsigned mask = 0;
    for (int d = 0; d < 4; d++) {
        af_case_defaults(&c);
        c.dtype = (af_dtype)d;
        if (backend_serves(be, &c)) mask |= 1u << d;
    }
    if (mask) l->dtype_mask &= mask;
    if (!l->dtype_mask) l->dtype_mask = 1;
    af_case_defaults(&c);
    c.backward = true;
    if (!backend_serves(be, &c)) l->backward = false;
    c.dtype = AF_DT_FP8_E4M3;
    if (!backend_serves(be, &c)) l->fp8_backward = false;
    c.dtype = AF_DT_MXFP8;
    if (!backend_serves(be, &c)) l->mxfp8_backward = false;
    af_case_defaults(&c);
    c.cp_size = 2;
    c.cp_comm = AF_CP_P2P;
    if (!backend_serves(be, &c)) l->max_cp = 1;
    af_case_defaults(&c);
    c.page_size = 16;
    if (!backend_serves(be, &c)) l->paged = false;
    af_case_defaults(&c);
    c.has_seqlens = true;
    c.seqlens_q[0] = 8;
    c.seqlens_kv[0] = 8;
    if (!backend_serves(be, &c)) l->ragged = false;
}

double af_fuzz_work(const af_case *c) {
    return (c->backward ? 3.0 : 1.0) * c->batch * (double)c->heads_q * c->seqlen_q * (double)c->seqlen_kv *
           (double)(c->head_dim_qk + c->head_dim_v);
}

static bool dtype_ok(const af_fuzz_limits *l, af_dtype d) { return (l->dtype_mask >> d) & 1u; }
static bool is_fp8(af_dtype d) { return d == AF_DT_FP8_E4M3 || d == AF_DT_MXFP8; }

/* May a case of dtype d have a backward pass under these limits? */
static bool backward_allowed(const af_fuzz_limits *l, af_dtype d) {
    if (!l->backward) return false;
    if (d == AF_DT_FP8_E4M3) return l->fp8_backward;
    if (d == AF_DT_MXFP8) return l->mxfp8_backward;
    return true;
}

static af_dtype first_allowed_dtype(const af_fuzz_limits *l) {
    for (int d = 0; d < 4; d++)
        if (dtype_ok(l, (af_dtype)d)) return (af_dtype)d;
    return AF_DT_FP16;
}

/* ---- repair --------------------------------------------------------------------------- */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static bool finite_in(double x, double lo, double hi) { return isfinite(x) && x >= lo && x <= hi; }

static void repair_data(af_case *c) {
    af_data_term in[AF_MAX_DATA_TERMS];
    int n_in = c->n_data < 0 ? 0 : c->n_data > AF_MAX_DATA_TERMS ? AF_MAX_DATA_TERMS : c->n_data;
    memcpy(in, c->data, sizeof in);
    af_data_term out[AF_MAX_DATA_TERMS];
    int n = 0;
    /* base first */
    if (n_in > 0 && (in[0].kind == AF_DATA_NORMAL || in[0].kind == AF_DATA_UNIFORM)) {
        out[0] = in[0];
        out[0].p1 = 0;
        if (!finite_in(out[0].p0, 1e-30, 1e4) ) out[0].p0 = 1.0;
    } else {
        out[0] = (af_data_term){AF_DATA_NORMAL, 1.0, 0};
    }
    n = 1;
    for (int i = 0; i < n_in && n < AF_MAX_DATA_TERMS; i++) {
        af_data_term t = in[i];
        if ((unsigned)t.kind >= AF_DATA_KIND_COUNT || t.kind == AF_DATA_NORMAL || t.kind == AF_DATA_UNIFORM) continue;
        bool dup = false;
        for (int j = 0; j < n; j++) dup |= out[j].kind == t.kind;
        if (dup) continue;
        switch (t.kind) {
        case AF_DATA_OUTLIER_CHANNELS:
            t.p0 = isfinite(t.p0) ? floor(t.p0) : 1;
            if (t.p0 < 1) t.p0 = 1;
            if (t.p0 > c->head_dim_qk) t.p0 = c->head_dim_qk;
            if (!isfinite(t.p1) || t.p1 == 0 || fabs(t.p1) > 1e4) t.p1 = 20;
            break;
        case AF_DATA_SINK:
            if (!isfinite(t.p0) || t.p0 == 0 || fabs(t.p0) > 1e4) t.p0 = 30;
            t.p1 = 0;
            break;
        case AF_DATA_LOW_LSE:
            if (!(isfinite(t.p0) && t.p0 > 0 && t.p0 <= 1)) t.p0 = 0.25;
            if (!(isfinite(t.p1) && t.p1 > 0 && t.p1 <= 1e4)) t.p1 = 20;
            break;
        case AF_DATA_BLOCK_RANGE:
            t.p0 = isfinite(t.p0) ? floor(t.p0) : 16;
            if (t.p0 < 1) t.p0 = 1;
            if (t.p0 > 40) t.p0 = 40;
            t.p1 = 0;
            break;
        case AF_DATA_ZEROS:
            if (!(isfinite(t.p0) && t.p0 > 0 && t.p0 < 1)) t.p0 = 0.5;
            t.p1 = 0;
            break;
        default: continue;
        }
        out[n++] = t;
    }
    memset(c->data, 0, sizeof c->data);
    memcpy(c->data, out, (size_t)n * sizeof out[0]);
    c->n_data = n;
}

/* Shrink a case until it fits the budget: batch, then heads, then head dims above
 * 64, then the longer sequence, then head dims down to 8. */
static void fit_budget(af_case *c, const af_fuzz_limits *l) {
    for (int guard = 0; guard < 200 && af_fuzz_work(c) > l->max_work; guard++) {
        if (c->batch > 1) {
            c->batch /= 2;
        } else if (c->heads_q > 1) {
            int ratio = c->heads_q / c->heads_kv;
            if (c->heads_kv > 1) c->heads_kv /= 2;
            else ratio = ratio / 2 > 0 ? ratio / 2 : 1;
            c->heads_q = c->heads_kv * ratio;
        } else if (c->head_dim_qk > 64 || c->head_dim_v > 64) {
            if (c->head_dim_qk >= c->head_dim_v) c->head_dim_qk = (c->head_dim_qk + 1) / 2;
            else c->head_dim_v = (c->head_dim_v + 1) / 2;
        } else if (c->seqlen_q > 1 || c->seqlen_kv > 1) {
            if (c->seqlen_q >= c->seqlen_kv) c->seqlen_q = (c->seqlen_q + 1) / 2;
            else c->seqlen_kv = (c->seqlen_kv + 1) / 2;
        } else if (c->head_dim_qk > 8 || c->head_dim_v > 8) {
            if (c->head_dim_qk >= c->head_dim_v) c->head_dim_qk = (c->head_dim_qk + 1) / 2;
            else c->head_dim_v = (c->head_dim_v + 1) / 2;
        } else {
            break;
        }
    }
}

static int lengths_visible(const af_case *c) {
    af_error err;
    return af_case_validate(c, &err) == 0;
}

/* Largest |input| the data terms can generate (gen_core.h): the base (normal: 2 sqrt(3)
 * sigma, Irwin-Hall of four fields; uniform: a; low_lse: shift / scale) times every
 * multiplier (outlier channels, sink, block_range's 2^(E - E/2)). */
static double data_bound(const af_case *c) {
    double base = 0, mult = 1;
    for (int i = 0; i < c->n_data; i++) {
        const af_data_term *t = &c->data[i];
        switch (t->kind) {
        case AF_DATA_NORMAL: base = fmax(base, 2 * sqrt(3.0) * fabs(t->p0)); break;
        case AF_DATA_UNIFORM: base = fmax(base, fabs(t->p0)); break;
        case AF_DATA_LOW_LSE: base = fmax(base, fabs(t->p1) / fabs((double)af_case_scale(c))); break;
        case AF_DATA_OUTLIER_CHANNELS: mult *= fmax(1, fabs(t->p1)); break;
        case AF_DATA_SINK: mult *= fmax(1, fabs(t->p0)); break;
        case AF_DATA_BLOCK_RANGE: mult *= ldexp(1, (int)t->p0 - (int)t->p0 / 2); break;
        default: break;
        }
    }
    return base * mult;
}

/* fp16 inputs that overflow become inf, and the oracle cannot judge such a case (it
 * would be counted in stats.json's "errors"): drop multiplier terms from the last one
 * until the largest generated value fits fp16 (65504). bf16 and fp32 cannot overflow
 * with the terms' ranges; fp8 and mxfp8 inputs are scaled to their range. */
static void repair_data_range(af_case *c) {
    while (c->dtype == AF_DT_FP16 && c->n_data > 1 && data_bound(c) > 65504.0) {
        int last = -1;
        for (int i = 1; i < c->n_data; i++) {
            af_data_kind k = c->data[i].kind;
            if (k == AF_DATA_OUTLIER_CHANNELS || k == AF_DATA_SINK || k == AF_DATA_BLOCK_RANGE || k == AF_DATA_LOW_LSE)
                last = i;
        }
        if (last < 0) break;
        for (int i = last; i + 1 < c->n_data; i++) c->data[i] = c->data[i + 1];
        c->n_data--;
    }
}

/* Repair combinations without touching the sizes (the decoder relies on that). */
static void repair_combinations(af_case *c, const af_fuzz_limits *l) {
    if (!dtype_ok(l, c->dtype)) c->dtype = first_allowed_dtype(l);
    if (c->backward && !backward_allowed(l, c->dtype)) c->backward = false;
    if (!l->ragged) {
        c->has_seqlens = false;
        if (c->layout == AF_LAYOUT_THD) c->layout = AF_LAYOUT_BSHD;
    }
    if ((unsigned)c->layout > AF_LAYOUT_THD) c->layout = AF_LAYOUT_BSHD;
    if ((unsigned)c->packing > AF_PACK_QKV) c->packing = AF_PACK_SEPARATE;
    if ((unsigned)c->mask > AF_MASK_CAUSAL) c->mask = AF_MASK_NONE;
    if ((unsigned)c->align > AF_ALIGN_BOTTOM_RIGHT) c->align = AF_ALIGN_TOP_LEFT;
    if (c->layout == AF_LAYOUT_THD && !c->has_seqlens) {
        c->has_seqlens = true;
        for (int b = 0; b < c->batch; b++) {
            c->seqlens_q[b] = c->seqlen_q;
            c->seqlens_kv[b] = c->seqlen_kv;
        }
    }
    if (c->has_seqlens) {
        for (int b = 0; b < c->batch; b++) {
            c->seqlens_q[b] = clampi(c->seqlens_q[b], 0, c->seqlen_q);
            c->seqlens_kv[b] = clampi(c->seqlens_kv[b], 0, c->seqlen_kv);
        }
    }
    for (int b = c->has_seqlens ? c->batch : 0; b < AF_MAX_BATCH; b++) c->seqlens_q[b] = c->seqlens_kv[b] = 0;
    if (c->layout != AF_LAYOUT_THD) c->thd_gap = 0;
    /* gaps cost memory, not work: keep them within the sizes they pad (a gap wider
     * than the sequence or the head vector exercises nothing more), so that memory
     * stays within a small factor of the work bound */
    {
        int smax = c->seqlen_q > c->seqlen_kv ? c->seqlen_q : c->seqlen_kv;
        int dmax = c->head_dim_qk > c->head_dim_v ? c->head_dim_qk : c->head_dim_v;
        c->thd_gap = clampi(c->thd_gap, 0, smax > 8 ? smax : 8);
        c->stride_gap = clampi(c->stride_gap, 0, dmax > 8 ? dmax : 8);
    }
    if (is_fp8(c->dtype)) {
        c->packing = AF_PACK_SEPARATE;
        c->stride_gap = 0;
    }
    if (c->packing == AF_PACK_QKV) {
        bool ok = c->heads_q == c->heads_kv && c->seqlen_q == c->seqlen_kv && c->head_dim_qk == c->head_dim_v;
        if (ok && c->has_seqlens)
            for (int b = 0; b < c->batch; b++) ok &= c->seqlens_q[b] == c->seqlens_kv[b];
        if (!ok) c->packing = AF_PACK_KV;
    }
    if (c->packing == AF_PACK_KV && c->head_dim_qk != c->head_dim_v) c->packing = AF_PACK_SEPARATE;
    if (c->page_size) {
        if (!l->paged || c->packing != AF_PACK_SEPARATE || c->layout == AF_LAYOUT_THD || c->backward || c->page_size < 0) {
            c->page_size = 0;
        } else {
            int p = 1;
            while (p * 2 <= c->page_size && p < AF_MAX_SEQLEN) p *= 2;
            while ((c->seqlen_kv + p - 1) / p > 1024 && p < AF_MAX_SEQLEN) p *= 2;
            /* pages cost memory, not work: a page beyond the next power of two of the KV
             * length (or 16) only adds unused tail slots, batch x heads_kv x d each (a
             * 65536-token page on 64 sequences took 4 GB under the probes) */
            int cap = 16;
            while (cap < c->seqlen_kv && cap < AF_MAX_SEQLEN) cap *= 2;
            c->page_size = p < cap ? p : cap;
        }
    }
    if (c->cp_size > l->max_cp) c->cp_size = l->max_cp;
    if (c->cp_size > 64) c->cp_size = 64;
    while (c->cp_size > 1 && (c->seqlen_q % (2 * c->cp_size) || c->seqlen_kv % (2 * c->cp_size))) c->cp_size--;
    if (c->cp_size <= 1) {
        c->cp_size = 1;
        c->cp_comm = AF_CP_NONE;
    } else if (c->cp_comm == AF_CP_NONE || (unsigned)c->cp_comm > AF_CP_A2A_P2P) {
        c->cp_comm = AF_CP_P2P;
    }
    c->window_left = clampi(c->window_left, -1, AF_MAX_SEQLEN);
    c->window_right = clampi(c->window_right, -1, AF_MAX_SEQLEN);
    if (c->has_scale && !(isfinite(c->scale) && c->scale != 0 && fabsf(c->scale) <= 1e6f && fabsf(c->scale) >= 1e-12f)) {
        c->has_scale = false;
        c->scale = 0;
    }
    if (!c->has_scale) c->scale = 0;
    repair_data(c);
    c->backend[AF_NAME_MAX - 1] = 0;
    c->engine[AF_NAME_MAX - 1] = 0;
    /* nothing visible anywhere: open the window, then the mask, then the lengths */
    if (!lengths_visible(c)) {
        c->window_left = c->window_right = -1;
        if (!lengths_visible(c) && c->has_seqlens) {
            c->seqlens_q[0] = c->seqlen_q;
            c->seqlens_kv[0] = c->seqlen_kv;
            if (c->packing == AF_PACK_QKV) c->packing = AF_PACK_KV;
            if (c->packing == AF_PACK_KV && c->head_dim_qk != c->head_dim_v) c->packing = AF_PACK_SEPARATE;
        }
    }
}

int af_fuzz_repair(af_case *c, const af_fuzz_limits *l) {
    c->batch = clampi(c->batch, 1, AF_MAX_BATCH);
    c->heads_kv = clampi(c->heads_kv, 1, AF_MAX_HEADS);
    c->heads_q = clampi(c->heads_q, 1, AF_MAX_HEADS);
    if (c->heads_q % c->heads_kv) c->heads_q = c->heads_kv * clampi(c->heads_q / c->heads_kv, 1, AF_MAX_HEADS / c->heads_kv);
    c->seqlen_q = clampi(c->seqlen_q, 1, AF_MAX_SEQLEN);
    c->seqlen_kv = clampi(c->seqlen_kv, 1, AF_MAX_SEQLEN);
    c->head_dim_qk = clampi(c->head_dim_qk, 1, AF_MAX_HEAD_DIM);
    c->head_dim_v = clampi(c->head_dim_v, 1, AF_MAX_HEAD_DIM);
    if (c->backward && !backward_allowed(l, c->dtype)) c->backward = false;
    fit_budget(c, l);
    repair_combinations(c, l);
    repair_data_range(c); /* after the dtype is final */
    af_error err;
    if (af_case_validate(c, &err) == 0) return 0;
    af_case_defaults(c);
    return -1;
}

/* ---- decoding ----------------------------------------------------------------------- */

enum {
    C_DTYPE, C_FLAGS, C_BATCH, C_RATIO, C_HKV, C_SEQ, C_DIM, C_MASK, C_WIN_L, C_WIN_R, C_PAD, C_LAYOUT,
    C_PACKING, C_STRIDE_GAP, C_THD_GAP, C_PAGE, C_CP, C_DATA_BASE, C_DATA_MODS, C_DATA_PRESET, C_SCALE,
    C_SEED, C_PATTERN, CORE_LEN
};
enum {
    F_BATCH = CORE_LEN, F_RATIO = F_BATCH + 2, F_HKV = F_RATIO + 2, F_SQ = F_HKV + 2, F_SKV = F_SQ + 2,
    F_DQK = F_SKV + 2, F_DV = F_DQK + 2, F_SEED = F_DV + 2, F_WIN_L = F_SEED + 7, F_WIN_R = F_WIN_L + 2,
    F_STRIDE_GAP = F_WIN_R + 2, F_THD_GAP = F_STRIDE_GAP + 2, F_PAGE = F_THD_GAP + 2, F_CP = F_PAGE + 1,
    F_SCALE = F_CP + 1, F_DATA = F_SCALE + 4, DATA_TERM_BYTES = 17
};

typedef struct {
    const uint8_t *d;
    size_t n;
} reader;

static unsigned rd(const reader *r, size_t i) { return i < r->n ? r->d[i] : 0u; }
static unsigned rd16(const reader *r, size_t i) { return rd(r, i) | rd(r, i + 1) << 8; }
/* Size offset: active when bit 7 of the first byte is set; 15 bits. */
static int rd_offset(const reader *r, size_t i) {
    unsigned lo = rd(r, i);
    return (lo & 0x80u) ? (int)((lo & 0x7fu) | rd(r, i + 1) << 7) : 0;
}
static uint64_t rd_le(const reader *r, size_t i, int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++) v |= (uint64_t)rd(r, i + (size_t)k) << (8 * k);
    return v;
}

typedef struct {
    int batch, ratio, hkv, sq, skv, dqk, dv;
} sizes;

static double sizes_work(const sizes *s, double bwf) {
    return bwf * s->batch * (double)s->ratio * s->hkv * (double)s->sq * s->skv * (double)(s->dqk + s->dv);
}

/* Largest value of a size field that keeps the work within the budget (other fields
 * as they are), never below the current value (which already fits). */
static int field_max(const sizes *s, double bwf, double budget, int field) {
    sizes t = *s;
    double rest;
    int hard;
    switch (field) {
    case 0: t.batch = 1; rest = sizes_work(&t, bwf); hard = AF_MAX_BATCH; break;
    case 1: t.ratio = 1; rest = sizes_work(&t, bwf); hard = AF_MAX_HEADS / s->hkv; break;
    case 2: t.hkv = 1; rest = sizes_work(&t, bwf); hard = AF_MAX_HEADS / s->ratio; break;
    case 3: t.sq = 1; rest = sizes_work(&t, bwf); hard = AF_MAX_SEQLEN; break;
    case 4: t.skv = 1; rest = sizes_work(&t, bwf); hard = AF_MAX_SEQLEN; break;
    case 5: {
        t.dqk = 0;
        t.dv = 1;
        double per = sizes_work(&t, bwf); /* work per unit of dqk + dv */
        double m = floor(budget / per) - s->dv;
        return (int)(m > AF_MAX_HEAD_DIM ? AF_MAX_HEAD_DIM : m < s->dqk ? s->dqk : m);
    }
    default: {
        t.dqk = 1;
        t.dv = 0;
        double per = sizes_work(&t, bwf);
        double m = floor(budget / per) - s->dqk;
        return (int)(m > AF_MAX_HEAD_DIM ? AF_MAX_HEAD_DIM : m < s->dv ? s->dv : m);
    }
    }
    double m = floor(budget / rest);
    int cur = field == 0 ? s->batch : field == 1 ? s->ratio : field == 2 ? s->hkv : field == 3 ? s->sq : s->skv;
    if (m > hard) m = hard;
    return m < cur ? cur : (int)m;
}

static void decode_sizes(const reader *r, double bwf, double budget, sizes *s) {
    int n_seq, n_dim;
    const af_fz_pair *sp = af_fz_seq_pairs(&n_seq), *dp = af_fz_dim_pairs(&n_dim);
    /* core stage: later fields reserved at their minima (1, 1, 1, 1x1, 8+8) */
    *s = (sizes){1, 1, 1, 1, 1, 8, 8};
    int want = af_fz_batch_table[rd(r, C_BATCH) % AF_FZ_N_BATCH];
    int m = field_max(s, bwf, budget, 0);
    s->batch = want < m ? want : m;
    want = af_fz_ratio_table[rd(r, C_RATIO) % AF_FZ_N_RATIO];
    m = field_max(s, bwf, budget, 1);
    s->ratio = want < m ? want : m;
    want = af_fz_hkv_table[rd(r, C_HKV) % AF_FZ_N_HKV];
    m = field_max(s, bwf, budget, 2);
    s->hkv = want < m ? want : m;
    for (int j = (int)(rd(r, C_SEQ) % (unsigned)n_seq); j >= 0; j--) {
        sizes t = *s;
        t.sq = sp[j].a;
        t.skv = sp[j].b;
        if (j == 0 || sizes_work(&t, bwf) <= budget) { *s = t; break; }
    }
    for (int j = (int)(rd(r, C_DIM) % (unsigned)n_dim); j >= 0; j--) {
        sizes t = *s;
        t.dqk = dp[j].a;
        t.dv = dp[j].b;
        if (j == 0 || sizes_work(&t, bwf) <= budget) { *s = t; break; }
    }
    /* fine stage: exact offsets, each clamped to what the budget leaves */
    int *field[7] = {&s->batch, &s->ratio, &s->hkv, &s->sq, &s->skv, &s->dqk, &s->dv};
    static const int pos[7] = {F_BATCH, F_RATIO, F_HKV, F_SQ, F_SKV, F_DQK, F_DV};
    for (int f = 0; f < 7; f++) {
        int off = rd_offset(r, (size_t)pos[f]);
        if (!off) continue;
        long long v = (long long)*field[f] + off;
        int mx = field_max(s, bwf, budget, f);
        *field[f] = (int)(v < mx ? v : mx);
    }
}

int af_fuzz_decode(const uint8_t *data, size_t size, const af_fuzz_limits *lim, af_case *c) {
    af_case_defaults(c);
    if (size == 0) return af_fuzz_repair(c, lim) ? 1 : 0;
    reader r = {data, size};
    af_dtype dt = (af_dtype)(rd(&r, C_DTYPE) % 4);
    c->dtype = dtype_ok(lim, dt) ? dt : first_allowed_dtype(lim);
    c->backward = (rd(&r, C_FLAGS) & 1u) && backward_allowed(lim, c->dtype);
    double budget = lim->max_work < 1024 ? 1024 : lim->max_work;
    sizes s;
    decode_sizes(&r, c->backward ? 3.0 : 1.0, budget, &s);
    c->batch = s.batch;
    c->heads_kv = s.hkv;
    c->heads_q = s.hkv * s.ratio;
    c->seqlen_q = s.sq;
    c->seqlen_kv = s.skv;
    c->head_dim_qk = s.dqk;
    c->head_dim_v = s.dv;

    unsigned mask = rd(&r, C_MASK) % 4;
    c->mask = (mask == 1 || mask == 2) ? AF_MASK_CAUSAL : AF_MASK_NONE;
    c->align = (mask >= 2) ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
    c->window_left = af_fz_window_value((int)(rd(&r, C_WIN_L) % AF_FZ_N_WINDOW), c->seqlen_q, c->seqlen_kv);
    c->window_right = af_fz_window_value((int)(rd(&r, C_WIN_R) % AF_FZ_N_WINDOW), c->seqlen_q, c->seqlen_kv);
    if (rd16(&r, F_WIN_L)) c->window_left = (int)rd16(&r, F_WIN_L) - 2;
    if (rd16(&r, F_WIN_R)) c->window_right = (int)rd16(&r, F_WIN_R) - 2;

    unsigned pad = rd(&r, C_PAD) % 3;
    c->layout = (af_layout)(rd(&r, C_LAYOUT) % 3);
    if (pad == 2) c->layout = AF_LAYOUT_THD;
    c->has_seqlens = pad != 0;
    c->packing = (af_packing)(rd(&r, C_PACKING) % 3);
    c->stride_gap = af_fz_stride_gaps[rd(&r, C_STRIDE_GAP) % AF_FZ_N_STRIDE_GAP];
    if (rd16(&r, F_STRIDE_GAP)) c->stride_gap = (int)rd16(&r, F_STRIDE_GAP) - 1;
    c->thd_gap = af_fz_thd_gaps[rd(&r, C_THD_GAP) % AF_FZ_N_THD_GAP];
    if (rd16(&r, F_THD_GAP)) c->thd_gap = (int)rd16(&r, F_THD_GAP) - 1;
    c->page_size = af_fz_page_sizes[rd(&r, C_PAGE) % AF_FZ_N_PAGE];
    if (rd(&r, F_PAGE)) c->page_size = 1 << ((rd(&r, F_PAGE) - 1) % 17);
    unsigned cp = rd(&r, C_CP) % AF_FZ_N_CP;
    c->cp_size = af_fz_cp_sizes[cp];
    c->cp_comm = af_fz_cp_comms[cp];
    if (rd(&r, F_CP)) {
        c->cp_size = 2 + (int)((rd(&r, F_CP) - 1) % 63);
        if (c->cp_comm == AF_CP_NONE) c->cp_comm = AF_CP_P2P;
    }

    /* data: core base + modifiers, or exact terms from the fine section */
    unsigned n_fine_terms = rd(&r, F_DATA) ? 1 + (rd(&r, F_DATA) - 1) % AF_MAX_DATA_TERMS : 0;
    if (n_fine_terms) {
        c->n_data = (int)n_fine_terms;
        for (unsigned i = 0; i < n_fine_terms; i++) {
            size_t at = F_DATA + 1 + i * DATA_TERM_BYTES;
            uint64_t b0 = rd_le(&r, at + 1, 8), b1 = rd_le(&r, at + 9, 8);
            c->data[i].kind = (af_data_kind)(rd(&r, at) % AF_DATA_KIND_COUNT);
            memcpy(&c->data[i].p0, &b0, 8);
            memcpy(&c->data[i].p1, &b1, 8);
        }
    } else {
        c->data[0] = data_bases[rd(&r, C_DATA_BASE) % AF_FZ_N_DATA_BASE];
        c->n_data = 1;
        unsigned mods = rd(&r, C_DATA_MODS);
        unsigned preset = rd(&r, C_DATA_PRESET) % AF_FZ_N_DATA_PRESET;
        if (mods & 0x20u)
            for (int k = 0; k < 5; k++)
                if (mods & (1u << k)) c->data[c->n_data++] = data_presets[preset][k];
    }

    float sc;
    c->has_scale = af_fz_scale_value((int)(rd(&r, C_SCALE) % AF_FZ_N_SCALE), c->head_dim_qk, &sc);
    c->scale = c->has_scale ? sc : 0;
    uint32_t bits = (uint32_t)rd_le(&r, F_SCALE, 4);
    if (bits) {
        float f;
        memcpy(&f, &bits, 4);
        if (isfinite(f) && f != 0 && fabsf(f) <= 1e6f && fabsf(f) >= 1e-12f) {
            c->has_scale = true;
            c->scale = f;
        }
    }
    c->seed = (uint64_t)rd(&r, C_SEED) + 1u + (rd_le(&r, F_SEED, 7) << 8);

    if (c->has_seqlens) {
        int pattern = (int)(rd(&r, C_PATTERN) % AF_FZ_N_PATTERN);
        size_t at = F_DATA + 1 + n_fine_terms * DATA_TERM_BYTES;
        for (int b = 0; b < c->batch; b++) {
            unsigned q = rd16(&r, at + 4 * (size_t)b), kv = rd16(&r, at + 4 * (size_t)b + 2);
            c->seqlens_q[b] = q ? (int)q - 1 : af_fz_pattern_len(pattern, c->seqlen_q, b, c->batch, c->seed, 1);
            c->seqlens_kv[b] = kv ? (int)kv - 1 : af_fz_pattern_len(pattern, c->seqlen_kv, b, c->batch, c->seed, 2);
        }
    }
    return af_fuzz_repair(c, lim) ? 1 : 0;
}

/* ---- encoding ------------------------------------------------------------------------ */

static int table_floor(const int *t, int n, int v) {
    int best = 0;
    for (int i = 0; i < n; i++)
        if (t[i] <= v && t[i] > t[best]) best = i;
    return best;
}

static int pair_floor(const af_fz_pair *p, int n, int a, int b) {
    int best = 0;
    long long best_gap = -1;
    for (int i = 0; i < n; i++) {
        if (p[i].a > a || p[i].b > b) continue;
        long long gap = (long long)(a - p[i].a) + (b - p[i].b);
        if (best_gap < 0 || gap < best_gap) { best = i; best_gap = gap; }
    }
    return best;
}

static void put_offset(uint8_t *o, int pos, int off) {
    if (off <= 0) return;
    o[pos] = (uint8_t)(0x80u | (off & 0x7f));
    o[pos + 1] = (uint8_t)(off >> 7);
}

static void put_le(uint8_t *o, int pos, uint64_t v, int bytes) {
    for (int k = 0; k < bytes; k++) o[pos + k] = (uint8_t)(v >> (8 * k));
}

static bool same_terms(const af_case *a, const af_data_term *t, int n) {
    if (a->n_data != n) return false;
    for (int i = 0; i < n; i++)
        if (a->data[i].kind != t[i].kind || a->data[i].p0 != t[i].p0 || a->data[i].p1 != t[i].p1) return false;
    return true;
}

size_t af_fuzz_encode(const af_case *c, uint8_t *out, size_t cap) {
    uint8_t o[AF_FUZZ_MAX_ENCODED];
    memset(o, 0, sizeof o);
    int n_seq, n_dim;
    const af_fz_pair *sp = af_fz_seq_pairs(&n_seq), *dp = af_fz_dim_pairs(&n_dim);
    o[C_DTYPE] = (uint8_t)c->dtype;
    o[C_FLAGS] = c->backward ? 1 : 0;
    int ratio = c->heads_q / c->heads_kv;
    int i = table_floor(af_fz_batch_table, AF_FZ_N_BATCH, c->batch);
    o[C_BATCH] = (uint8_t)i;
    put_offset(o, F_BATCH, c->batch - af_fz_batch_table[i]);
    i = table_floor(af_fz_ratio_table, AF_FZ_N_RATIO, ratio);
    o[C_RATIO] = (uint8_t)i;
    put_offset(o, F_RATIO, ratio - af_fz_ratio_table[i]);
    i = table_floor(af_fz_hkv_table, AF_FZ_N_HKV, c->heads_kv);
    o[C_HKV] = (uint8_t)i;
    put_offset(o, F_HKV, c->heads_kv - af_fz_hkv_table[i]);
    i = pair_floor(sp, n_seq, c->seqlen_q, c->seqlen_kv);
    o[C_SEQ] = (uint8_t)i;
    put_offset(o, F_SQ, c->seqlen_q - sp[i].a);
    put_offset(o, F_SKV, c->seqlen_kv - sp[i].b);
    i = pair_floor(dp, n_dim, c->head_dim_qk, c->head_dim_v);
    o[C_DIM] = (uint8_t)i;
    put_offset(o, F_DQK, c->head_dim_qk - dp[i].a);
    put_offset(o, F_DV, c->head_dim_v - dp[i].b);

    bool br = c->align == AF_ALIGN_BOTTOM_RIGHT;
    o[C_MASK] = (uint8_t)(c->mask == AF_MASK_CAUSAL ? (br ? 2 : 1) : (br ? 3 : 0));
    int win[2] = {c->window_left, c->window_right};
    for (int side = 0; side < 2; side++) {
        int found = -1;
        for (int k = 0; k < AF_FZ_N_WINDOW && found < 0; k++)
            if (af_fz_window_value(k, c->seqlen_q, c->seqlen_kv) == win[side]) found = k;
        if (found >= 0) o[C_WIN_L + side] = (uint8_t)found;
        else put_le(o, side ? F_WIN_R : F_WIN_L, (uint64_t)(win[side] + 2), 2);
    }
    o[C_PAD] = (uint8_t)(c->layout == AF_LAYOUT_THD ? 2 : c->has_seqlens ? 1 : 0);
    o[C_LAYOUT] = (uint8_t)(c->layout == AF_LAYOUT_THD ? 0 : c->layout);
    o[C_PACKING] = (uint8_t)c->packing;
    int found = -1;
    for (int k = 0; k < AF_FZ_N_STRIDE_GAP && found < 0; k++)
        if (af_fz_stride_gaps[k] == c->stride_gap) found = k;
    if (found >= 0) o[C_STRIDE_GAP] = (uint8_t)found;
    else put_le(o, F_STRIDE_GAP, (uint64_t)c->stride_gap + 1, 2);
    found = -1;
    for (int k = 0; k < AF_FZ_N_THD_GAP && found < 0; k++)
        if (af_fz_thd_gaps[k] == c->thd_gap) found = k;
    if (found >= 0) o[C_THD_GAP] = (uint8_t)found;
    else put_le(o, F_THD_GAP, (uint64_t)c->thd_gap + 1, 2);
    found = -1;
    for (int k = 0; k < AF_FZ_N_PAGE && found < 0; k++)
        if (af_fz_page_sizes[k] == c->page_size) found = k;
    if (found >= 0) {
        o[C_PAGE] = (uint8_t)found;
    } else {
        int lg = 0;
        while ((1 << lg) < c->page_size && lg < 16) lg++;
        o[F_PAGE] = (uint8_t)(lg + 1);
    }
    found = -1;
    for (int k = 0; k < AF_FZ_N_CP && found < 0; k++)
        if (af_fz_cp_sizes[k] == c->cp_size && af_fz_cp_comms[k] == c->cp_comm) found = k;
    if (found >= 0) {
        o[C_CP] = (uint8_t)found;
    } else {
        for (int k = 1; k < AF_FZ_N_CP; k++)
            if (af_fz_cp_comms[k] == c->cp_comm) { o[C_CP] = (uint8_t)k; break; }
        o[F_CP] = (uint8_t)(c->cp_size - 1);
    }

    /* data: a core combination when one gives exactly these terms, else exact terms */
    bool data_done = false;
    for (int base = 0; base < AF_FZ_N_DATA_BASE && !data_done; base++)
        for (int preset = 0; preset < AF_FZ_N_DATA_PRESET && !data_done; preset++)
            for (unsigned mods = 0; mods < 32 && !data_done; mods++) {
                af_data_term t[AF_MAX_DATA_TERMS];
                int n = 0;
                t[n++] = data_bases[base];
                for (int k = 0; k < 5; k++)
                    if (mods & (1u << k)) t[n++] = data_presets[preset][k];
                if (n > 1 && t[1].kind == AF_DATA_OUTLIER_CHANNELS && t[1].p0 > c->head_dim_qk) continue;
                if (same_terms(c, t, n)) {
                    o[C_DATA_BASE] = (uint8_t)base;
                    o[C_DATA_MODS] = (uint8_t)(mods ? 0x20u | mods : 0);
                    o[C_DATA_PRESET] = (uint8_t)preset;
                    data_done = true;
                }
            }
    int n_fine_terms = 0;
    if (!data_done) {
        n_fine_terms = c->n_data;
        o[F_DATA] = (uint8_t)n_fine_terms;
        for (int k = 0; k < n_fine_terms; k++) {
            int at = F_DATA + 1 + k * DATA_TERM_BYTES;
            uint64_t b0, b1;
            memcpy(&b0, &c->data[k].p0, 8);
            memcpy(&b1, &c->data[k].p1, 8);
            o[at] = (uint8_t)c->data[k].kind;
            put_le(o, at + 1, b0, 8);
            put_le(o, at + 9, b1, 8);
        }
    }

    found = -1;
    for (int k = 0; k < AF_FZ_N_SCALE && found < 0; k++) {
        float sc = 0;
        bool has = af_fz_scale_value(k, c->head_dim_qk, &sc);
        if (has == c->has_scale && (!has || sc == c->scale)) found = k;
    }
    if (found >= 0) {
        o[C_SCALE] = (uint8_t)found;
    } else {
        uint32_t bits;
        memcpy(&bits, &c->scale, 4);
        put_le(o, F_SCALE, bits, 4);
    }
    uint64_t s1 = c->seed - 1u;
    o[C_SEED] = (uint8_t)(s1 & 0xffu);
    put_le(o, F_SEED, s1 >> 8, 7);

    int end = F_DATA + 1 + n_fine_terms * DATA_TERM_BYTES;
    if (c->has_seqlens) {
        int best = 0, best_match = -1;
        for (int p = 0; p < AF_FZ_N_PATTERN; p++) {
            int match = 0;
            for (int b = 0; b < c->batch; b++)
                match += (af_fz_pattern_len(p, c->seqlen_q, b, c->batch, c->seed, 1) == c->seqlens_q[b]) +
                         (af_fz_pattern_len(p, c->seqlen_kv, b, c->batch, c->seed, 2) == c->seqlens_kv[b]);
            if (match > best_match) { best = p; best_match = match; }
        }
        o[C_PATTERN] = (uint8_t)best;
        for (int b = 0; b < c->batch; b++) {
            if (af_fz_pattern_len(best, c->seqlen_q, b, c->batch, c->seed, 1) != c->seqlens_q[b])
                put_le(o, end + 4 * b, (uint64_t)c->seqlens_q[b] + 1, 2);
            if (af_fz_pattern_len(best, c->seqlen_kv, b, c->batch, c->seed, 2) != c->seqlens_kv[b])
                put_le(o, end + 4 * b + 2, (uint64_t)c->seqlens_kv[b] + 1, 2);
        }
        end += 4 * c->batch;
    }
    /* missing bytes read as 0: drop trailing zeros, but never down to the empty input */
    while (end > 1 && o[end - 1] == 0) end--;
    if ((size_t)end > cap) return 0;
    memcpy(out, o, (size_t)end);
    return (size_t)end;
}

/* ---- feedback ----------------------------------------------------------------------- */

uint32_t af_fuzz_config_cell(const af_case *c) {
    char cls[256];
    af_config_class(c, cls, sizeof cls);
    return (uint32_t)(af_fnv1a64(cls, strlen(cls)) % AF_FUZZ_CELLS);
}

int af_fuzz_ratio_bucket(double ratio) {
    if (!(ratio > 0)) return 0;
    if (!isfinite(ratio)) return AF_FUZZ_RATIO_BUCKETS - 1;
    int b = (int)floor(log2(ratio)) + 24;
    return clampi(b, 1, AF_FUZZ_RATIO_BUCKETS - 1);
}

void af_fuzz_feedback(const af_case *c, const af_verdict *v, uint8_t *counters, size_t n) {
    if (n < AF_FUZZ_COUNTERS) return;
    uint32_t cell = af_fuzz_config_cell(c);
    counters[cell] = 1;
    size_t ratio_base = AF_FUZZ_CELLS, kind_base = ratio_base + AF_T_COUNT * AF_FUZZ_RATIO_BUCKETS;
    size_t pair_base = kind_base + 16 * AF_T_COUNT;
    int worst = 0;
    for (int t = 0; t < AF_T_COUNT; t++) {
        if (!v->stats[t].judged) continue;
        int b = af_fuzz_ratio_bucket(v->stats[t].ratio);
        counters[ratio_base + (size_t)t * AF_FUZZ_RATIO_BUCKETS + (size_t)b] = 1;
        if (b > worst) worst = b;
    }
    int nf = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < nf; i++)
        counters[kind_base + (size_t)(v->findings[i].kind & 15) * AF_T_COUNT + (size_t)v->findings[i].tensor % AF_T_COUNT] = 1;
    if (v->kind == AF_V_DECLINED) counters[kind_base + (size_t)AF_V_DECLINED * AF_T_COUNT] = 1;
    uint64_t h = (uint64_t)cell * 0x9e3779b97f4a7c15ull + (uint64_t)worst * 0xbf58476d1ce4e5b9ull;
    counters[pair_base + (size_t)(mix64(h) % 4096)] = 1;
}
