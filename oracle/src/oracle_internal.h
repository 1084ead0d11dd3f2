/* oracle_internal.h — what the oracle's own files share. Not a public API: only
 * the files under oracle/src and oracle/tests include it.
 *
 * Files:  oracle.c         run, tiering, problem_from_case, result
 *         oracle_mpfr.c    one query row / one key column at MPFR precision
 *         oracle_fp64.c    the same in fp64 with compensated sums
 *         oracle_sample.c  which rows / key columns the sampled mode computes in MPFR
 *         oracle_cert.c    per-element masses and gap / bound of the certification
 *         oracle_heads_v.c V with its own head count, through the shared-head problem
 *         ../gpu/          the GPU fp64 tier (oracle_gpu.h)
 */
#ifndef ATTNFUZZ_ORACLE_INTERNAL_H
#define ATTNFUZZ_ORACLE_INTERNAL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h> /* before mpfr.h: its intmax_t functions */
#include <mpfr.h>
#include "oracle/src/exact_dot.h"
#include "oracle/oracle.h"

/* Limit of the worst fp64-vs-MPFR gap on sampled rows, relative to the row's
 * magnitude (max of |value| and the mass of its terms); above it af_oracle_run fails. */
#define AF_ORACLE_FP64_GAP_LIMIT 1e-10

/* The generous constant C of the stated bounds (README.md derives <= 24). */
#define AF_ORACLE_BOUND_C 64.0

/* Measured MPFR cost of one work unit (multiply-add at 128 bits) on one thread; turns
 * opts.cert_seconds into work units (README.md, "Measured time"). */
#define AF_ORACLE_MPFR_UNIT_SECONDS 1.5e-7

/* V with its own head count (oracle_heads_v.c): whether p has one; the shared-head problem
 * of L = lcm(Hkv, Hv) heads (wide->Hkv = L; K and V widened into wide_in, -1 when out of
 * memory; af_oracle_widen_release frees them either way); a result of the wide problem
 * back to p's heads (dK, dV summed, compensated; -1 when out of memory). */
bool af_oracle_split_v(const af_oracle_problem *p);
int af_oracle_widen_v(const af_oracle_problem *p, af_oracle_problem *wide, af_inputs *wide_in);
void af_oracle_widen_release(af_inputs *wide_in);
int af_oracle_narrow_v(const af_oracle_problem *p, int L, af_oracle_result *r);

/* The GPU fp64 tier's bound_abs_scale for the problem (oracle.c; README.md derives it). */
double af_oracle_gpu_bound_abs(const af_oracle_problem *p, double sigma);

/* One run's shared state. Each row item writes only its own row of the outputs and
 * of the statistics; each key item only its own key column. */
typedef struct {
    const af_oracle_problem *p;
    int prec;        /* MPFR precision (bits) of every rounded intermediate */
    bool sums_only;  /* af_oracle_opts.mpfr_sums_only: no integer paths */
    bool backward;   /* p->in->dout != NULL */
    af_outputs *out; /* dense outputs being filled (see tensors.h for shapes) */
    /* Softmax statistics of each query row for the key-column pass, (B, Hq, Sq): */
    double *lse64;   /* fp64-tier LSE, -inf when fully masked */
    double *drow64;  /* fp64-tier D_i = dO_i . O_i */
    mpfr_t *lse_mp;  /* MPFR LSE at prec; NULL in sampled mode (then lse64 is used) */
    mpfr_t *drow_mp; /* MPFR D_i at prec; NULL in sampled mode (then drow64) */
    /* (B, Hq, Sq) each row's share -P_sink,i D_i of dsink (feature_spec.h); NULL unless
     * learnable sinks with backward. D_i above already holds the dLSE term. */
    double *dsink_row;
    /* (B, Hq, Sq) each row's score statistics (feature_spec.h: the max of its visible
     * scores, the sink's logit not among them, and the sum of exp(score - max)); NULL
     * unless the case asks for them (feat.outputs). The row functions write them; the
     * background certification's copy of the context holds NULL (it only measures). */
    double *stat_max, *stat_sumexp;
    /* 53-bit MPFR copies of p->in's dense inputs (exact; af_mpfr_inputs_new), or NULL: the
     * row and key functions then convert each double where they use it. Read-only. */
    const struct af_mpfr_inputs *x;
} af_oracle_ctx;

/* Magnitudes used to judge a gap between tiers: for each output of one row / key
 * column, an upper estimate of max over the elements of the mass M (sum of |terms|). */
typedef struct {
    double o, lse, dq; /* row */
    double dk, dv;     /* key column */
} af_oracle_mass;

/* Flat indexes of the dense arrays. */
static inline size_t af_idx_row(const af_oracle_problem *p, int b, int h, int i) {
    return ((size_t)b * (size_t)p->Hq + (size_t)h) * (size_t)p->Sq + (size_t)i;
}
static inline size_t af_idx_key(const af_oracle_problem *p, int b, int g, int j) {
    return ((size_t)b * (size_t)p->Hkv + (size_t)g) * (size_t)p->Skv + (size_t)j;
}

/* ---- MPFR tier (oracle_mpfr.c) ---- */
/* Exact 53-bit MPFR copies of a problem's dense inputs, each the shape of its array in
 * p->in (tensors.h): q (B,Hq,Sq,Dqk), k (B,Hkv,Skv,Dqk), v (B,Hkv,Skv,Dv), dout
 * (B,Hq,Sq,Dv) or NULL without backward. The limbs live in one block (MPFR's custom
 * interface), so a copy costs one conversion per element instead of one per product. */
typedef struct af_mpfr_inputs {
    mpfr_t *q, *k, *v, *dout;
    mpfr_t *all; /* the four arrays, one after another */
    void *limbs; /* their significands */
} af_mpfr_inputs;
/* Inputs of at most this many elements (q, k, v, dout together) get copies (40 bytes an
 * element: at most 160 MiB); larger ones convert where used. */
#define AF_MPFR_INPUTS_MAX_ELEMS (1L << 22)
/* Elements of p's q, k, v and dout together. */
double af_mpfr_inputs_elems(const af_oracle_problem *p);
/* The copies of p's inputs, or NULL (too many elements, out of memory). */
af_mpfr_inputs *af_mpfr_inputs_new(const af_oracle_problem *p);
void af_mpfr_inputs_free(af_mpfr_inputs *x);
/* dst = a * x rounded once to dst's precision, as mpfr_mul_d: for a finite nonzero x by
 * its integer significand (|k| < 2^53, x = k 2^(e - 53)) with mpfr_mul_si, then the power
 * of two (exact), which skips mpfr_mul_d's conversion of x into a temporary (1.28-1.39x
 * faster a product on the development machine: build/bench_mpfr_mul, which times this function); a power of two does not
 * move a rounding, so the bits are mpfr_mul_d's. Zeros (their sign), infinities and NaN
 * take mpfr_mul_d. */
_Static_assert(sizeof(long) >= 8, "mul_d_exact passes a 53-bit significand as a long");
static inline void mul_d_exact(mpfr_ptr dst, mpfr_srcptr a, double x) {
    if (x == 0.0 || !isfinite(x)) {
        mpfr_mul_d(dst, a, x, MPFR_RNDN);
        return;
    }
    int e;
    long k = (long)ldexp(frexp(x, &e), 53);
    mpfr_mul_si(dst, a, k, MPFR_RNDN);
    mpfr_mul_2si(dst, dst, e - 53, MPFR_RNDN);
}

typedef struct af_mpfr_scratch af_mpfr_scratch;
/* dst = v * 2^exp2 (exact_dot.h's integer), rounded once to dst's precision (RNDN). */
void af_mpfr_set_i128(mpfr_t dst, af_i128 v, int exp2);
/* integer_sums: the integer paths (exact_dot.h, exact_wsum.h) where they apply, else every
 * sum by mpfr_sum (the same bits). */
af_mpfr_scratch *af_mpfr_scratch_new(const af_oracle_problem *p, int prec, bool integer_sums);
void af_mpfr_scratch_free(af_mpfr_scratch *s);
/* Row (b, h, i): o_row is (Dv), *lse one value, dq_row is (Dqk) or NULL (forward
 * only). Stores the row's statistics in c->lse_mp / c->drow_mp when those exist. */
void af_mpfr_row(const af_oracle_ctx *c, af_mpfr_scratch *s, int b, int h, int i, double *o_row, double *lse,
                 double *dq_row, af_oracle_mass *mass);
/* Key column (b, g, j) of kv head g: dk_col is (Dqk), dv_col is (Dv). Needs the
 * statistics of every row that sees key j (mpfr ones when present, else fp64). */
void af_mpfr_key(const af_oracle_ctx *c, af_mpfr_scratch *s, int b, int g, int j, double *dk_col, double *dv_col,
                 af_oracle_mass *mass);

/* ---- fp64 tier (oracle_fp64.c) ---- */
typedef struct af_fp64_scratch af_fp64_scratch;
af_fp64_scratch *af_fp64_scratch_new(const af_oracle_problem *p);
void af_fp64_scratch_free(af_fp64_scratch *s);
/* Same contracts as the MPFR functions; the row stores c->lse64 / c->drow64. */
void af_fp64_row(const af_oracle_ctx *c, af_fp64_scratch *s, int b, int h, int i, double *o_row, double *lse,
                 double *dq_row);
void af_fp64_key(const af_oracle_ctx *c, af_fp64_scratch *s, int b, int g, int j, double *dk_col, double *dv_col);

/* ---- sampling (oracle_sample.c) ---- */
typedef struct {
    int b, h, idx; /* row: (b, q head, i); key column: (b, kv head, j) */
} af_sample_item;
/* Rows that the sampled mode computes in MPFR: mandatory boundary rows (first and
 * last valid row, rows where the visible interval changes shape, for heads 0 and
 * Hq-1) always; then rows at multiples of 128, 64, 32 and their neighbours, then a
 * few pseudo-random rows, while their MPFR work fits `budget`. Sorted, distinct.
 * Returns the count, *items malloc'd (caller frees), -1 on allocation failure. */
int af_oracle_sample_rows(const af_oracle_problem *p, double budget, af_sample_item **items);
/* The same for key columns (dK, dV), over kv heads 0 and Hkv-1 and rows seeing j. */
int af_oracle_sample_keys(const af_oracle_problem *p, double budget, af_sample_item **items);
/* The MPFR work allowed for sampled rows and for sampled key columns: each half (all
 * for rows without backward) of max(mpfr_budget, min(cert_fraction * total work,
 * cert_seconds * threads / AF_ORACLE_MPFR_UNIT_SECONDS)), so the certified set grows with
 * the case until the time budget caps it. */
void af_oracle_sample_budgets(const af_oracle_problem *p, const af_oracle_opts *o, int threads, double *row_budget,
                              double *key_budget);
/* Hashed (class 4) rows or key columns per sequence: grows with sqrt(len * heads). */
int af_oracle_sample_hashed(int len, int heads);
/* MPFR work (multiply-adds) of one row / one key column / the whole problem. */
double af_oracle_row_work(const af_oracle_problem *p, int b, int i);
double af_oracle_key_work(const af_oracle_problem *p, int b, int j);
double af_oracle_total_work(const af_oracle_problem *p);

/* ---- certification (oracle_cert.c) ---- */
/* The fp64 tiers' underflow allowance per term (README.md, "Underflow"): 16 roundings of
 * at most half the smallest subnormal, 2^-1075 each, per term of a sum. */
#define AF_ORACLE_UNDERFLOW_UNIT 0x1p-1071
/* Per-element masses M of README.md ("the error bound") of row (b, h, i), from that row's
 * LSE: m_o (Dv) M of each O element, m_dq (Dqk, NULL without backward) M of each dQ
 * element; scratch holds max(Skv, Dv) doubles. Plain fp64 (magnitudes), widened by 1 %.
 * uf[0] / uf[1]: the underflow allowance U of every O / dQ element of the row
 * (AF_ORACLE_UNDERFLOW_UNIT times the sum over its terms of the product of
 * (1 + |factor|) over the factors that follow the term's weight P; uf[1] = 0 without dQ). */
void af_cert_row_mass(const af_oracle_problem *p, int b, int h, int i, double lse, double *m_o, double *m_dq,
                      double uf[2], double *scratch);
/* The same for key column (b, g, j), from the row statistics lse64: m_dk (Dqk), m_dv (Dv),
 * uf[0] / uf[1] the underflow allowance of every dK / dV element.
 * The O masses inside M_dK are bounded by the column maxima of V (an upper bound). */
void af_cert_key_mass(const af_oracle_problem *p, const double *lse64, int b, int g, int j, double *m_dk, double *m_dv,
                      double uf[2], double *scratch);
/* Worst over n elements of |x - ref| / (rel |x| + 2^-53 |ref| + abs_scale * mass + uf + 2^-1074)
 * (0 where x == ref, both infinities included): <= 1 means within the stated bound; uf is
 * the elements' underflow allowance, 2^-1074 the reference's own rounding as a subnormal
 * (at most 2^-1075, the smallest subnormal the nearest double above it). */
double af_cert_ratio(const double *x, const double *ref, int n, const double *mass, double rel, double abs_scale,
                     double uf);
/* Largest |x - ref| over n elements relative to the larger of max |ref| and mass, counting
 * only the elements whose |x - ref| exceeds uf + 2^-1074 (an fp64 tier's underflow and the
 * reference's rounding as a subnormal); 0 when none does, INFINITY for a NaN or a gap over
 * a zero magnitude. */
double af_cert_gap(const double *x, const double *ref, int n, double mass, double uf);

/* ---- certification of an fp64 tier (oracle.c, oracle_pipeline.c) ---- */
/* The stated bounds the sampled pass checks: the fp64 tier's and the MPFR tier's. */
typedef struct {
    double rel, abs_scale; /* fp64 tier (CPU or GPU) */
    double mpfr_abs_scale; /* MPFR tier at its precision (bound_rel 2^-53) */
    bool keep_fp64;        /* measure only: the sampled rows keep their fp64 values (pipelined) */
} af_cert_bounds;
/* The sampled MPFR passes over c's outputs, measuring the fp64 gap into r's cert fields
 * (r->tier_used names the tier in messages); 0 or -1 with why (oracle.c). */
int af_oracle_sampled_mpfr(af_oracle_ctx *c, const af_oracle_opts *o, int threads, const af_cert_bounds *bounds,
                           af_oracle_result *r, char *why, size_t cap);
/* The same in two halves. af_cert_plan_rows chooses the sampled rows and key columns and
 * computes the rows' MPFR values, which read the inputs only, so it may run while the fp64
 * tier computes c->out; af_cert_plan_finish (once c->out, c->lse64 and c->drow64 hold the
 * tier's values) compares the rows, runs the key columns' MPFR pass and measures the gap
 * into r, as af_oracle_sampled_mpfr does, and frees the plan (af_cert_plan_free frees one
 * that will not finish). Each 0, or -1 with why. */
typedef struct af_cert_plan af_cert_plan;
int af_cert_plan_rows(af_oracle_ctx *c, const af_oracle_opts *o, int threads, af_cert_plan **out, char *why,
                      size_t cap);
int af_cert_plan_finish(af_oracle_ctx *c, int threads, const af_cert_bounds *bounds, af_oracle_result *r,
                        af_cert_plan *pl, char *why, size_t cap);
void af_cert_plan_free(af_oracle_ctx *c, af_cert_plan *pl);
/* The pipelined certification (oracle_pipeline.c). af_oracle_cert_begin, before the fp64
 * tier runs: copies the problem and its lengths and starts a thread that runs
 * af_cert_plan_rows (o decides the sampled set), then waits; it leaves c->dsink_row and
 * the score statistics alone (the copy holds NULL: the caller frees them); r->out (c->out)
 * must stay where it is. 0 with *pending, or -1 with why. af_oracle_cert_release, once
 * the tier has filled c->out, c->lse64 and c->drow64: hands those two to the thread (the
 * caller must not free them: c's pointers are cleared) with the tier's bounds, and the
 * thread finishes (af_cert_plan_finish); af_oracle_cert_finish waits for it.
 * af_oracle_cert_abandon: the tier failed; the thread ends after its rows' half and the
 * handle is freed. */
int af_oracle_cert_begin(const af_oracle_ctx *c, const af_oracle_opts *o, int threads, char *why, size_t cap,
                         af_oracle_cert **pending);
void af_oracle_cert_release(af_oracle_cert *h, af_oracle_ctx *c, const af_cert_bounds *bounds,
                            af_oracle_tier tier_used);
void af_oracle_cert_abandon(af_oracle_cert *h);

#endif
