/* oracle_testlib.h — small helpers shared by the oracle's tests (header-only, so
 * that every test_*.c stays one self-contained CTest executable). */
#ifndef ATTNFUZZ_ORACLE_TESTLIB_H
#define ATTNFUZZ_ORACLE_TESTLIB_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/oracle.h"
#include "util/check.h"

static inline double test_max_abs(const double *a, size_t n) {
    double m = 0.0;
    for (size_t x = 0; x < n; x++)
        if (fabs(a[x]) > m && isfinite(a[x])) m = fabs(a[x]);
    return m;
}

/* A problem that owns its inputs and lengths. */
typedef struct {
    af_oracle_problem p;
    af_inputs in;
    int len_q[64], len_kv[64];
} test_problem;

typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    bool causal, bottom_right;
    int left, right;
    bool backward;
    double scale; /* 0: 1/sqrt(Dqk) rounded to float */
} test_shape;

static inline uint64_t test_random(uint64_t *state) {
    uint64_t x = (*state += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* A random value of `bits` significant bits (the leading one included), exponent in
 * [lo, hi], random sign; a zero of either sign with probability 1/16 (the integer paths'
 * tests draw every input format from it). */
static inline double test_format_value(uint64_t *r, int bits, int lo, int hi) {
    if (test_random(r) % 16 == 0) return test_random(r) & 1 ? -0.0 : 0.0;
    uint64_t m = (UINT64_C(1) << (bits - 1)) | (test_random(r) & ((UINT64_C(1) << (bits - 1)) - 1));
    int ex = lo + (int)(test_random(r) % (uint64_t)(hi - lo + 1));
    double v = ldexp((double)m, ex - (bits - 1));
    return test_random(r) & 1 ? -v : v;
}

/* A random fp16-representable value m * 2^-10 with |m| <= 2047 (11 bits), times
 * `spread` (a power of two). */
static inline double test_fp16(uint64_t *state, double spread) {
    int m = (int)(test_random(state) % 4095) - 2047;
    return ldexp((double)m, -10) * spread;
}

static inline size_t test_rows(const test_problem *t) { return (size_t)t->p.B * (size_t)t->p.Hq * (size_t)t->p.Sq; }
static inline size_t test_keys(const test_problem *t) { return (size_t)t->p.B * (size_t)t->p.Hkv * (size_t)t->p.Skv; }

/* Allocates zeroed inputs of the shape, full lengths, the mask of the shape. */
static inline void test_problem_init(test_problem *t, const test_shape *s) {
    memset(t, 0, sizeof *t);
    CHECK(s->B <= 64);
    af_oracle_problem *p = &t->p;
    p->B = s->B, p->Hq = s->Hq, p->Hkv = s->Hkv, p->Sq = s->Sq, p->Skv = s->Skv;
    p->Dqk = s->Dqk, p->Dv = s->Dv;
    for (int b = 0; b < s->B; b++) t->len_q[b] = s->Sq, t->len_kv[b] = s->Skv;
    p->len_q = t->len_q;
    p->len_kv = t->len_kv;
    p->mask.causal = s->causal;
    p->mask.bottom_right = s->bottom_right;
    p->mask.window_left = s->left;
    p->mask.window_right = s->right;
    p->scale = s->scale != 0.0 ? s->scale : (double)(float)(1.0 / sqrt((double)s->Dqk));
    af_inputs *in = &t->in;
    in->B = s->B, in->Hq = s->Hq, in->Hkv = s->Hkv, in->Sq = s->Sq, in->Skv = s->Skv;
    in->Dqk = s->Dqk, in->Dv = s->Dv;
    in->q = calloc(test_rows(t) * (size_t)s->Dqk, sizeof(double));
    in->k = calloc(test_keys(t) * (size_t)s->Dqk, sizeof(double));
    in->v = calloc(test_keys(t) * (size_t)s->Dv, sizeof(double));
    in->dout = s->backward ? calloc(test_rows(t) * (size_t)s->Dv, sizeof(double)) : NULL;
    CHECK(in->q && in->k && in->v && (!s->backward || in->dout));
    p->in = in;
}

/* Fills every input with random fp16 values (q and k times q_spread). */
static inline void test_problem_randomize(test_problem *t, uint64_t seed, double q_spread) {
    uint64_t st = seed;
    af_inputs *in = &t->in;
    for (size_t x = 0; x < test_rows(t) * (size_t)t->p.Dqk; x++) in->q[x] = test_fp16(&st, q_spread);
    for (size_t x = 0; x < test_keys(t) * (size_t)t->p.Dqk; x++) in->k[x] = test_fp16(&st, q_spread);
    for (size_t x = 0; x < test_keys(t) * (size_t)t->p.Dv; x++) in->v[x] = test_fp16(&st, 1.0);
    if (in->dout)
        for (size_t x = 0; x < test_rows(t) * (size_t)t->p.Dv; x++) in->dout[x] = test_fp16(&st, 1.0);
}

/* A random small problem: B 1..3, Hkv 1..2, group 1..3, Sq and Skv 1..12, Dqk and
 * Dv 1..9, random causal / alignment / windows (-1..5), random lengths (0..max),
 * backward, fp16 inputs. */
static inline void test_problem_random(test_problem *t, uint64_t seed) {
    uint64_t st = seed * 0x100000001B3ull + 17;
    test_shape s;
    memset(&s, 0, sizeof s);
    s.B = 1 + (int)(test_random(&st) % 3);
    s.Hkv = 1 + (int)(test_random(&st) % 2);
    s.Hq = s.Hkv * (1 + (int)(test_random(&st) % 3));
    s.Sq = 1 + (int)(test_random(&st) % 12);
    s.Skv = 1 + (int)(test_random(&st) % 12);
    s.Dqk = 1 + (int)(test_random(&st) % 9);
    s.Dv = 1 + (int)(test_random(&st) % 9);
    s.causal = test_random(&st) & 1;
    s.bottom_right = test_random(&st) & 1;
    s.left = (int)(test_random(&st) % 7) - 1;
    s.right = (int)(test_random(&st) % 7) - 1;
    s.backward = true;
    test_problem_init(t, &s);
    test_problem_randomize(t, seed, 1.0 + (double)(test_random(&st) % 4));
    if (test_random(&st) & 1)
        for (int b = 0; b < s.B; b++) {
            t->len_q[b] = (int)(test_random(&st) % (uint64_t)(s.Sq + 1));
            t->len_kv[b] = (int)(test_random(&st) % (uint64_t)(s.Skv + 1));
        }
}

/* Crude upper bounds of the mass M of every element of each output (README.md: the
 * formula with absolute values), from maxima of the inputs:
 *   O: max|v|;  dQ: |scale| max|k| 2 Dv max|dO| max|v|;  dK: the same with max|q|,
 *   times group*Sq rows;  dV: max|dO| group*Sq;  LSE: 1. */
typedef struct {
    double o, lse, dq, dk, dv;
} test_masses;

static inline test_masses test_crude_masses(const test_problem *t) {
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t), keys = test_keys(t);
    double mq = test_max_abs(t->in.q, rows * p->Dqk), mk = test_max_abs(t->in.k, keys * p->Dqk);
    double mv = test_max_abs(t->in.v, keys * p->Dv);
    double mdo = t->in.dout ? test_max_abs(t->in.dout, rows * p->Dv) : 0.0;
    double n_rows = (double)(p->Hq / p->Hkv) * p->Sq;
    test_masses m;
    m.o = mv;
    m.lse = 1.0;
    m.dq = fabs(p->scale) * mk * 2.0 * p->Dv * mdo * mv;
    m.dk = fabs(p->scale) * mq * 2.0 * p->Dv * mdo * mv * n_rows;
    m.dv = mdo * n_rows;
    return m;
}

/* Largest |a - ref| / (rel |ref| + abs * mass) over n values (<= 1: within). */
static inline double test_bound_ratio(const double *a, const double *ref, size_t n, double rel, double abs,
                                      double mass) {
    double worst = 0.0;
    for (size_t x = 0; x < n; x++) {
        if (a[x] == ref[x]) continue;
        double den = rel * fabs(ref[x]) + abs * mass;
        double ratio = den > 0 ? fabs(a[x] - ref[x]) / den : INFINITY;
        if (!(ratio <= worst)) worst = ratio;
    }
    return worst;
}

static inline void test_problem_free(test_problem *t) {
    free(t->in.q);
    free(t->in.k);
    free(t->in.v);
    free(t->in.dout);
    memset(t, 0, sizeof *t);
}

static inline void test_run(const test_problem *t, af_oracle_tier tier, int bits, int threads, af_oracle_result *r) {
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = tier;
    o.precision_bits = bits;
    o.threads = threads;
    char why[512] = "";
    int rc = af_oracle_run(&t->p, &o, r, why, sizeof why);
    CHECK_MSG(rc == 0, "af_oracle_run failed: %s", why);
}

/* Distance in units in the last place between two finite doubles of the same sign
 * (a large number when the signs differ and both are nonzero). */
static inline double test_ulps(double a, double b) {
    if (a == b) return 0.0;
    if (!isfinite(a) || !isfinite(b)) return INFINITY;
    double scale = fmax(fabs(a), fabs(b));
    return fabs(a - b) / (nextafter(scale, INFINITY) - scale);
}

/* Largest |a - b| / max(norm, |b|) over n values. */
static inline double test_max_rel(const double *a, const double *b, size_t n, double norm) {
    double worst = 0.0;
    for (size_t x = 0; x < n; x++) {
        if (a[x] == b[x]) continue;
        double den = fmax(norm, fabs(b[x]));
        double rel = den > 0 ? fabs(a[x] - b[x]) / den : INFINITY;
        if (!(rel <= worst)) worst = rel;
    }
    return worst;
}

#endif
