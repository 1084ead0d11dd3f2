/* oracle.c — af_oracle_run: validation, tiering, the passes, the stated bound.
 *
 * Passes (each a parallel-for; an item writes only its own row / key column):
 *   all MPFR:  rows (O, LSE, dQ, row statistics at prec)  ->  key columns (dK, dV)
 *   sampled:   fp64 rows  ->  fp64 key columns (CPU tier; or the whole GPU tier,
 *              oracle/gpu/)  ->  MPFR sampled rows  ->  MPFR sampled key columns (with
 *              the fp64 row statistics), each MPFR value replacing the fp64 one after
 *              the gap between them is measured against the fp64 tier's stated bound,
 *              element by element (oracle_cert.c: masses).
 * See oracle/README.md for the error bound and its derivation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "oracle/feature_spec.h"
#include "oracle/src/oracle_internal.h"
#include "oracle/gpu/oracle_gpu.h"
#include "util/clock.h"
#include "util/parfor.h"

#define U53 0x1p-53

void af_oracle_opts_default(af_oracle_opts *o) {
    memset(o, 0, sizeof *o);
    o->tier = AF_ORACLE_AUTO;
    o->precision_bits = 128;
    o->threads = 0;
    o->mpfr_budget = 5e8;
    o->cert_fraction = 1e-3;
    o->cert_seconds = 15.0;
    o->gpu_mpfr_budget = 4e6;
}

void af_oracle_result_free(af_oracle_result *r) {
    free(r->out.o);
    free(r->out.lse);
    free(r->out.dq);
    free(r->out.dk);
    free(r->out.dv);
    free(r->out.dsink);
    free(r->out.row_max);
    free(r->out.row_sumexp);
    free(r->out.max_logit);
    free(r->score_abs);
    r->score_abs = NULL;
    af_oracle_gpu_kept_free(r->gpu_kept);
    r->gpu_kept = NULL;
    memset(&r->out, 0, sizeof r->out);
}

/* The oracle's own output allocator: dense, zero-filled (padding rows stay 0). */
static int outputs_calloc(af_outputs *out, const af_oracle_problem *p, bool backward) {
    memset(out, 0, sizeof *out);
    out->B = p->B, out->Hq = p->Hq, out->Hkv = p->Hkv, out->Sq = p->Sq, out->Skv = p->Skv;
    out->Dqk = p->Dqk, out->Dv = p->Dv;
    size_t rows = (size_t)p->B * (size_t)p->Hq * (size_t)p->Sq;
    size_t keys = (size_t)p->B * (size_t)p->Hkv * (size_t)p->Skv;
    out->o = calloc(rows * (size_t)p->Dv, sizeof(double)); /* (B, Hq, Sq, Dv) */
    out->lse = calloc(rows, sizeof(double));               /* (B, Hq, Sq) */
    if (!out->o || !out->lse) return -1;
    int outputs = p->in->feat.outputs;
    if (outputs == 1 && (!(out->row_max = calloc(rows, sizeof(double))) || /* (B, Hq, Sq) */
                         !(out->row_sumexp = calloc(rows, sizeof(double)))))
        return -1;
    if (outputs == 2 && !(out->max_logit = calloc((size_t)p->B * (size_t)p->Hq, sizeof(double))))
        return -1; /* (B, Hq) */
    if (backward) {
        out->dq = calloc(rows * (size_t)p->Dqk, sizeof(double)); /* (B, Hq, Sq, Dqk) */
        out->dk = calloc(keys * (size_t)p->Dqk, sizeof(double)); /* (B, Hkv, Skv, Dqk) */
        out->dv = calloc(keys * (size_t)p->Dv, sizeof(double));  /* (B, Hkv, Skv, Dv) */
        if (!out->dq || !out->dk || !out->dv) return -1;
        if (p->in->feat.sink == 2 && !(out->dsink = calloc((size_t)p->Hq, sizeof(double)))) return -1; /* (Hq) */
    }
    return 0;
}

static bool all_finite(const double *x, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!isfinite(x[k])) return false;
    return true;
}

static int validate(const af_oracle_problem *p, const af_oracle_opts *o, char *why, size_t cap) {
    const af_inputs *in = p->in;
    if (p->B < 1 || p->Hq < 1 || p->Hkv < 1 || p->Sq < 1 || p->Skv < 1 || p->Dqk < 1 || p->Dv < 1) {
        snprintf(why, cap, "oracle: dims must be >= 1 (B=%d Hq=%d Hkv=%d Sq=%d Skv=%d Dqk=%d Dv=%d)", p->B, p->Hq,
                 p->Hkv, p->Sq, p->Skv, p->Dqk, p->Dv);
        return -1;
    }
    if (p->Hq % p->Hkv != 0) {
        snprintf(why, cap, "oracle: heads_q=%d is not a multiple of heads_kv=%d", p->Hq, p->Hkv);
        return -1;
    }
    if (!in || !in->q || !in->k || !in->v) {
        snprintf(why, cap, "oracle: inputs q, k, v are required");
        return -1;
    }
    if (!isfinite(p->scale)) {
        snprintf(why, cap, "oracle: scale %g is not finite", p->scale);
        return -1;
    }
    if (o->precision_bits < 53 || o->precision_bits > 100000) {
        snprintf(why, cap, "oracle: precision_bits=%d outside [53, 100000]", o->precision_bits);
        return -1;
    }
    for (int b = 0; b < p->B; b++) {
        if (p->len_q[b] < 0 || p->len_q[b] > p->Sq || p->len_kv[b] < 0 || p->len_kv[b] > p->Skv) {
            snprintf(why, cap, "oracle: batch %d: lengths (%d, %d) outside [0, %d] x [0, %d]", b, p->len_q[b],
                     p->len_kv[b], p->Sq, p->Skv);
            return -1;
        }
    }
    size_t rows = (size_t)p->B * (size_t)p->Hq * (size_t)p->Sq;
    size_t keys = (size_t)p->B * (size_t)p->Hkv * (size_t)p->Skv;
    const char *bad = NULL;
    if (!all_finite(in->q, rows * (size_t)p->Dqk))
        bad = "q";
    else if (!all_finite(in->k, keys * (size_t)p->Dqk))
        bad = "k";
    else if (!all_finite(in->v, keys * (size_t)p->Dv))
        bad = "v";
    else if (in->dout && !all_finite(in->dout, rows * (size_t)p->Dv))
        bad = "dout";
    if (bad) {
        snprintf(why, cap, "oracle: input %s holds a non-finite value", bad);
        return -1;
    }
    const af_features *f = &in->feat;
    if ((f->sink && !in->sink) || (f->bias_b && !in->bias) || (f->alibi && !in->alibi_slope) ||
        (f->bias_b && f->bias_b != 1 && f->bias_b != p->B) || (f->bias_h && f->bias_h != 1 && f->bias_h != p->Hq) ||
        (f->bias_b && f->bias_q != 1 && f->bias_q != p->Sq) || (f->alibi && f->alibi_b != 1 && f->alibi_b != p->B) ||
        !(f->softcap >= 0.0) || !isfinite(f->softcap) || !(f->dropout_p >= 0.0 && f->dropout_p < 1.0) ||
        (unsigned)f->score_mod > (unsigned)AF_SCORE_MOD_TRIG2 ||
        (f->score_mod != AF_SCORE_MOD_NONE && f->softcap != 0.0)) {
        snprintf(why, cap,
                 "oracle: feature inputs are inconsistent (sink, bias extents, ALiBi slopes, softcap, score_mod (not "
                 "with softcap) or dropout p)");
        return -1;
    }
    return 0;
}

/* The score statistics the case asks for (feature_spec.h), from the rows' (padding rows
 * keep their zeros): row_max and row_sumexp as the rows computed them; max_logit of
 * (b, h) the max of its rows' maxima (exact: a max of exact values), -inf when no row
 * sees a key. */
static void score_statistics(const af_oracle_problem *p, const af_oracle_ctx *c, af_outputs *out) {
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++) {
            double ml = -INFINITY;
            for (int i = 0; i < p->len_q[b]; i++) {
                size_t row = af_idx_row(p, b, h, i);
                if (out->row_max) out->row_max[row] = c->stat_max[row], out->row_sumexp[row] = c->stat_sumexp[row];
                if (c->stat_max[row] > ml) ml = c->stat_max[row];
            }
            if (out->max_logit) out->max_logit[(size_t)b * (size_t)p->Hq + (size_t)h] = ml;
        }
}

/* ---- the passes ---- */

/* PASS_ROW_MPFR_KEEP: sampled rows' MPFR values into an af_cert_plan, compared later */
typedef enum { PASS_ROW_MPFR, PASS_KEY_MPFR, PASS_ROW_FP64, PASS_KEY_FP64, PASS_ROW_MPFR_KEEP } pass_kind;

/* Worst gap between the fp64 and MPFR values of one sampled item. */
typedef struct {
    double gap;
    const char *tensor;
    int b, h, idx;
    double ratio; /* worst |fp64 - MPFR| / stated bound over the item's elements */
    const char *ratio_tensor;
} gap_record;

typedef af_cert_bounds cert_bounds;

/* The sampled certification between its halves (af_cert_plan_rows, af_cert_plan_finish):
 * the items chosen, and each sampled row's MPFR values (rounded to fp64, as the immediate
 * comparison used them) with the masses its bound needs. */
struct af_cert_plan {
    af_sample_item *rows, *keys;
    int n_rows, n_keys;
    af_mpfr_inputs *inputs_mp; /* made here (c->x points at it until the plan is freed) */
    size_t stride;             /* doubles a row: O (Dv) | dQ (Dqk) | O's masses (Dv) | dQ's (Dqk) */
    double *res;               /* (n_rows, stride) */
    double *lse;               /* (n_rows) MPFR's LSE of the row */
    af_oracle_mass *mass;      /* (n_rows) */
    double *uf;                /* (n_rows, 2) the underflow allowance of the row's O and dQ elements */
};

typedef struct {
    af_oracle_ctx *c;
    pass_kind kind;
    const af_sample_item *items; /* NULL: every row / key column, in flat order */
    gap_record *gaps;            /* (n items) when sampled */
    const cert_bounds *bounds;   /* sampled: the bounds to check */
    af_cert_plan *plan;          /* PASS_ROW_MPFR_KEEP: where the rows' values go */
} pass_job;

typedef struct {
    af_mpfr_scratch *mpfr;
    af_fp64_scratch *fp64;
    double *tmp_a, *tmp_b;   /* (max(Dqk, Dv)) MPFR values before they replace fp64 */
    double *mass_a, *mass_b; /* (max(Dqk, Dv)) per-element masses M (sampled passes) */
    double *scratch;         /* (max(Skv, Dv)) for the masses */
} pass_state;

static void pass_fini(void *state) {
    pass_state *s = state;
    af_mpfr_scratch_free(s->mpfr);
    af_fp64_scratch_free(s->fp64);
    free(s->tmp_a);
    free(s->tmp_b);
    free(s->mass_a);
    free(s->mass_b);
    free(s->scratch);
    free(s);
}

static void *pass_init(void *ctx) {
    const pass_job *job = ctx;
    const af_oracle_problem *p = job->c->p;
    pass_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    bool mpfr = job->kind == PASS_ROW_MPFR || job->kind == PASS_KEY_MPFR || job->kind == PASS_ROW_MPFR_KEEP;
    size_t dim = (size_t)(p->Dqk > p->Dv ? p->Dqk : p->Dv);
    if (mpfr)
        s->mpfr = af_mpfr_scratch_new(p, job->c->prec, !job->c->sums_only);
    else
        s->fp64 = af_fp64_scratch_new(p);
    s->tmp_a = malloc(dim * sizeof *s->tmp_a);
    s->tmp_b = malloc(dim * sizeof *s->tmp_b);
    s->mass_a = malloc(dim * sizeof *s->mass_a);
    s->mass_b = malloc(dim * sizeof *s->mass_b);
    size_t n_scratch = (size_t)(p->Skv > p->Dv ? p->Skv : p->Dv);
    s->scratch = malloc(n_scratch * sizeof *s->scratch);
    if ((mpfr ? (void *)s->mpfr : (void *)s->fp64) == NULL || !s->tmp_a || !s->tmp_b || !s->mass_a || !s->mass_b ||
        !s->scratch) {
        pass_fini(s);
        return NULL;
    }
    return s;
}

/* A pass thread's end: its state, then its own MPFR caches (only the local ones: shared
 * caches must not be freed while other threads compute; the caller frees everything
 * after the pass). MPFR is thread-safe with per-thread variables. */
static void pass_end(void *ctx, void *state) {
    (void)ctx;
    if (state) pass_fini(state);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
}

static void note_gap(gap_record *g, double gap, const char *tensor) {
    if (!(gap <= g->gap)) { /* NaN counts as the worst */
        g->gap = gap;
        g->tensor = tensor;
    }
}

static void note_ratio(gap_record *g, double ratio, const char *tensor) {
    if (!(ratio <= g->ratio)) {
        g->ratio = ratio;
        g->ratio_tensor = tensor;
    }
}

/* The gap of one sampled row: its fp64 outputs in out (O row o, LSE *lse64, dQ row dq or
 * NULL) against MPFR's (o_mp, lse, dq_mp) under the bound's masses (m_o, m_dq) and
 * underflow allowances (uf: O, dQ) into *g; without keep_fp64 the row then takes MPFR's values. */
static void row_gap(const af_oracle_problem *p, const cert_bounds *cb, int b, int h, int idx, double *o, double *lse64,
                    double *dq, const double *o_mp, double lse, const double *dq_mp, const af_oracle_mass *mass,
                    const double *m_o, const double *m_dq, const double uf[2], gap_record *g) {
    *g = (gap_record){0.0, "O", b, h, idx, 0.0, "O"};
    note_gap(g, af_cert_gap(o, o_mp, p->Dv, mass->o, uf[0]), "O");
    note_ratio(g, af_cert_ratio(o, o_mp, p->Dv, m_o, cb->rel, cb->abs_scale + cb->mpfr_abs_scale, uf[0]), "O");
    if (!(isinf(lse) && lse == *lse64)) {
        double one = 1.0;
        note_gap(g, fabs(*lse64 - lse) / mass->lse, "LSE");
        note_ratio(g, af_cert_ratio(lse64, &lse, 1, &one, cb->rel, cb->abs_scale + cb->mpfr_abs_scale, 0.0), "LSE");
    }
    if (!cb->keep_fp64) {
        memcpy(o, o_mp, (size_t)p->Dv * sizeof *o);
        *lse64 = lse;
    }
    if (dq) {
        note_gap(g, af_cert_gap(dq, dq_mp, p->Dqk, mass->dq, uf[1]), "dQ");
        note_ratio(g, af_cert_ratio(dq, dq_mp, p->Dqk, m_dq, cb->rel, cb->abs_scale + cb->mpfr_abs_scale, uf[1]), "dQ");
        if (!cb->keep_fp64) memcpy(dq, dq_mp, (size_t)p->Dqk * sizeof *dq);
    }
}

static void pass_item(void *ctx, void *state, long index) {
    const pass_job *job = ctx;
    af_oracle_ctx *c = job->c;
    const af_oracle_problem *p = c->p;
    pass_state *s = state;
    af_outputs *out = c->out;
    int b, h, idx;
    if (job->items) {
        b = job->items[index].b, h = job->items[index].h, idx = job->items[index].idx;
    } else {
        bool keys = job->kind == PASS_KEY_MPFR || job->kind == PASS_KEY_FP64;
        int heads = keys ? p->Hkv : p->Hq, len = keys ? p->Skv : p->Sq;
        idx = (int)(index % len);
        h = (int)((index / len) % heads);
        b = (int)(index / len / heads);
        /* Padding rows and keys keep their zeros. */
        if (idx >= (keys ? p->len_kv[b] : p->len_q[b])) return;
    }
    af_oracle_mass mass;
    if (job->kind == PASS_ROW_MPFR_KEEP) { /* reads the inputs only: the fp64 tier may still run */
        af_cert_plan *pl = job->plan;
        bool bwd = c->out->dq != NULL;
        double *res = pl->res + (size_t)index * pl->stride, *o_mp = res, *dq_mp = res + p->Dv;
        double *m_o = dq_mp + p->Dqk, *m_dq = m_o + p->Dv;
        af_mpfr_row(c, s->mpfr, b, h, idx, o_mp, &pl->lse[index], bwd ? dq_mp : NULL, &pl->mass[index]);
        af_cert_row_mass(p, b, h, idx, pl->lse[index], m_o, bwd ? m_dq : NULL, pl->uf + 2 * index, s->scratch);
        return;
    }
    if (job->kind == PASS_ROW_FP64 || job->kind == PASS_ROW_MPFR) {
        size_t row = af_idx_row(p, b, h, idx);
        double *o = out->o + row * (size_t)p->Dv;
        double *dq = out->dq ? out->dq + row * (size_t)p->Dqk : NULL;
        if (job->kind == PASS_ROW_FP64) {
            af_fp64_row(c, s->fp64, b, h, idx, o, &out->lse[row], dq);
            return;
        }
        /* every row in MPFR (the sampled rows take PASS_ROW_MPFR_KEEP, then row_gap) */
        af_mpfr_row(c, s->mpfr, b, h, idx, o, &out->lse[row], dq, &mass);
        return;
    }
    size_t key = af_idx_key(p, b, h, idx);
    double *dk = out->dk + key * (size_t)p->Dqk;
    double *dv = out->dv + key * (size_t)p->Dv;
    if (job->kind == PASS_KEY_FP64) {
        af_fp64_key(c, s->fp64, b, h, idx, dk, dv);
        return;
    }
    if (!job->gaps) {
        af_mpfr_key(c, s->mpfr, b, h, idx, dk, dv, &mass);
        return;
    }
    af_mpfr_key(c, s->mpfr, b, h, idx, s->tmp_a, s->tmp_b, &mass);
    gap_record *g = &job->gaps[index];
    *g = (gap_record){0.0, "dK", b, h, idx, 0.0, "dK"};
    const cert_bounds *cb = job->bounds;
    double uf[2]; /* dK, dV */
    af_cert_key_mass(p, c->lse64, b, h, idx, s->mass_a, s->mass_b, uf, s->scratch);
    note_gap(g, af_cert_gap(dk, s->tmp_a, p->Dqk, mass.dk, uf[0]), "dK");
    note_gap(g, af_cert_gap(dv, s->tmp_b, p->Dv, mass.dv, uf[1]), "dV");
    note_ratio(g, af_cert_ratio(dk, s->tmp_a, p->Dqk, s->mass_a, cb->rel, cb->abs_scale + cb->mpfr_abs_scale, uf[0]),
               "dK");
    note_ratio(g, af_cert_ratio(dv, s->tmp_b, p->Dv, s->mass_b, cb->rel, cb->abs_scale + cb->mpfr_abs_scale, uf[1]),
               "dV");
    if (cb->keep_fp64) return;
    memcpy(dk, s->tmp_a, (size_t)p->Dqk * sizeof *dk);
    memcpy(dv, s->tmp_b, (size_t)p->Dv * sizeof *dv);
}

static int run_pass_into(af_oracle_ctx *c, pass_kind kind, const af_sample_item *items, long n_items, gap_record *gaps,
                         const cert_bounds *bounds, af_cert_plan *plan, int threads) {
    const af_oracle_problem *p = c->p;
    pass_job job = {c, kind, items, gaps, bounds, plan};
    long n = n_items;
    if (!items) {
        bool keys = kind == PASS_KEY_MPFR || kind == PASS_KEY_FP64;
        n = (long)p->B * (keys ? (long)p->Hkv * p->Skv : (long)p->Hq * p->Sq);
    }
    af_parfor_job each = {pass_init, pass_item, pass_end};
    return af_parfor_run(&each, &job, n, threads);
}

static int run_pass(af_oracle_ctx *c, pass_kind kind, const af_sample_item *items, long n_items, gap_record *gaps,
                    const cert_bounds *bounds, int threads) {
    return run_pass_into(c, kind, items, n_items, gaps, bounds, NULL, threads);
}

/* sigma: an upper bound of |score| (and of scale * sum |q_d k_d|) over the problem,
 * by Cauchy-Schwarz: sigma_r = |scale| * max ||q_i|| * max ||k_j||, through the
 * score_mod's growth (af_feat_score_bound: an error of r moves f(r) by |f'| times it). */
static double score_bound(const af_oracle_problem *p) {
    const af_inputs *in = p->in;
    double qmax = 0.0, kmax = 0.0;
    size_t rows = (size_t)p->B * (size_t)p->Hq * (size_t)p->Sq;
    size_t keys = (size_t)p->B * (size_t)p->Hkv * (size_t)p->Skv;
    for (size_t r = 0; r < rows; r++) {
        double n2 = 0.0;
        for (int d = 0; d < p->Dqk; d++)
            n2 += in->q[r * (size_t)p->Dqk + (size_t)d] * in->q[r * (size_t)p->Dqk + (size_t)d];
        if (n2 > qmax) qmax = n2;
    }
    for (size_t r = 0; r < keys; r++) {
        double n2 = 0.0;
        for (int d = 0; d < p->Dqk; d++)
            n2 += in->k[r * (size_t)p->Dqk + (size_t)d] * in->k[r * (size_t)p->Dqk + (size_t)d];
        if (n2 > kmax) kmax = n2;
    }
    /* 1.01: covers the rounding of the norms themselves. */
    return af_feat_score_bound(p, 1.01 * fabs(p->scale) * sqrt(qmax) * sqrt(kmax)) + af_feat_additive_bound(p);
}

static mpfr_t *stats_new(size_t n, int prec) {
    mpfr_t *a = malloc((n ? n : 1) * sizeof *a);
    if (!a) return NULL;
    for (size_t k = 0; k < n; k++) {
        mpfr_init2(a[k], prec);
        mpfr_set_zero(a[k], 1);
    }
    return a;
}

static void stats_free(mpfr_t *a, size_t n) {
    if (!a) return;
    for (size_t k = 0; k < n; k++) mpfr_clear(a[k]);
    free(a);
}

/* The GPU tier's stated bound_abs_scale (oracle/README.md, "GPU fp64 tier"):
 * 2 ((4 Dqk + 20) sigma + 4 ln Skv + Dv + 240) 2^-53. */
double af_oracle_gpu_bound_abs(const af_oracle_problem *p, double sigma) {
    return 2.0 * ((4.0 * p->Dqk + 20.0) * sigma + 4.0 * log((double)p->Skv) + p->Dv + 240.0) * U53;
}

/* Whether run_gpu_tier will serve p (its checks, but the run's own failure). */
static bool gpu_tier_expected(const af_oracle_problem *p, char *why, size_t cap) {
    return af_oracle_gpu_implements(p, why, cap) == 0 && af_oracle_gpu_usable(why, cap) == 0 &&
           af_oracle_gpu_supports(p, why, cap) == 0;
}

/* Runs the GPU tier into c->out / lse64 / drow64 and sets r->tier_used = GPU (keep: its
 * device copies into r->gpu_kept, r->out.dev); when no
 * GPU is usable, the shape is not supported or the GPU fails, leaves tier_used = FP64
 * (the CPU fp64 tier then runs) and says why in r->note. */
static void run_gpu_tier(af_oracle_ctx *c, const af_oracle_opts *o, bool keep, af_oracle_result *r) {
    char why[160] = "";
    af_oracle_gpu_stats st = {0};
    if (!gpu_tier_expected(c->p, why, sizeof why)) { /* features, statistics, drops; no GPU; a shape it lacks */
        snprintf(r->note, sizeof r->note, "%sGPU fp64 tier not used (%s): CPU fp64 tier instead",
                 o->tier == AF_ORACLE_GPU ? "" : "auto: ", why);
        return;
    }
    /* the magnitudes asked for come from the tier's own passes */
    size_t n_rows = (size_t)c->p->B * (size_t)c->p->Hq * (size_t)c->p->Sq;
    af_oracle_gpu_mags mags = {NULL, NULL};
    if (o->gpu_magnitudes & AF_ORACLE_MAG_SCORE_ABS) mags.score_abs = malloc((n_rows ? n_rows : 1) * sizeof(double));
    if ((o->gpu_magnitudes & AF_ORACLE_MAG_GRAD) && c->backward) mags.grad = &r->grad;
    if (af_oracle_gpu_run(c->p, c->out, c->lse64, c->drow64, &mags, keep ? &r->gpu_kept : NULL, &st, why, sizeof why) ==
        0) {
        r->tier_used = AF_ORACLE_GPU;
        if (r->gpu_kept) r->out.dev = &r->gpu_kept->out;
        r->gpu_seconds = st.seconds;
        r->gpu_peak_bytes = st.peak_bytes;
        if (mags.score_abs) r->score_abs = mags.score_abs, r->magnitudes |= AF_ORACLE_MAG_SCORE_ABS;
        if (mags.grad) r->magnitudes |= AF_ORACLE_MAG_GRAD;
        return;
    }
    free(mags.score_abs);
    memset(&r->grad, 0, sizeof r->grad);
    r->gpu_peak_bytes = st.peak_bytes;
    snprintf(r->note, sizeof r->note, "%sGPU fp64 tier not used (%s): CPU fp64 tier instead",
             o->tier == AF_ORACLE_GPU ? "" : "auto: ", why);
}

void af_cert_plan_free(af_oracle_ctx *c, af_cert_plan *pl) {
    if (!pl) return;
    if (pl->inputs_mp) c->x = NULL;
    af_mpfr_inputs_free(pl->inputs_mp);
    free(pl->rows);
    free(pl->keys);
    free(pl->res);
    free(pl->lse);
    free(pl->mass);
    free(pl->uf);
    free(pl);
}

int af_cert_plan_rows(af_oracle_ctx *c, const af_oracle_opts *o, int threads, af_cert_plan **out, char *why,
                      size_t cap) {
    const af_oracle_problem *p = c->p;
    *out = NULL;
    double row_budget, key_budget;
    af_oracle_sample_budgets(p, o, threads, &row_budget, &key_budget);
    af_cert_plan *pl = calloc(1, sizeof *pl);
    if (!pl) {
        snprintf(why, cap, "oracle: out of memory choosing sampled rows");
        return -1;
    }
    pl->n_rows = af_oracle_sample_rows(p, row_budget, &pl->rows);
    pl->n_keys = c->backward ? af_oracle_sample_keys(p, key_budget, &pl->keys) : 0;
    if (pl->n_rows < 0 || pl->n_keys < 0) {
        pl->n_rows = pl->n_keys = 0;
        af_cert_plan_free(c, pl);
        snprintf(why, cap, "oracle: out of memory choosing sampled rows");
        return -1;
    }
    /* the input copies pay off once the sampled products outnumber the input elements
     * (each product converts one input element without them) */
    if (!c->x && row_budget + key_budget >= af_mpfr_inputs_elems(p)) c->x = pl->inputs_mp = af_mpfr_inputs_new(p);
    pl->stride = 2 * (size_t)p->Dv + 2 * (size_t)p->Dqk;
    size_t n = (size_t)pl->n_rows + 1;
    pl->res = malloc(n * pl->stride * sizeof *pl->res);
    pl->lse = malloc(n * sizeof *pl->lse);
    pl->mass = malloc(n * sizeof *pl->mass);
    pl->uf = malloc(2 * n * sizeof *pl->uf);
    if (!pl->res || !pl->lse || !pl->mass || !pl->uf ||
        (pl->n_rows && run_pass_into(c, PASS_ROW_MPFR_KEEP, pl->rows, pl->n_rows, NULL, NULL, pl, threads) != 0)) {
        af_cert_plan_free(c, pl);
        snprintf(why, cap, "oracle: out of memory in the sampled MPFR passes");
        return -1;
    }
    *out = pl;
    return 0;
}

int af_cert_plan_finish(af_oracle_ctx *c, int threads, const cert_bounds *bounds, af_oracle_result *r, af_cert_plan *pl,
                        char *why, size_t cap) {
    const af_oracle_problem *p = c->p;
    af_outputs *out = c->out;
    int n_rows = pl->n_rows, n_keys = pl->n_keys, status = -1;
    gap_record *row_gaps = calloc((size_t)n_rows + 1, sizeof *row_gaps);
    gap_record *key_gaps = calloc((size_t)n_keys + 1, sizeof *key_gaps);
    if (!row_gaps || !key_gaps) {
        snprintf(why, cap, "oracle: out of memory in the sampled MPFR passes");
        goto done;
    }
    for (int k = 0; k < n_rows; k++) { /* the rows' comparison, now that the fp64 tier has run */
        const af_sample_item *it = &pl->rows[k];
        size_t row = af_idx_row(p, it->b, it->h, it->idx);
        const double *res = pl->res + (size_t)k * pl->stride;
        double *dq = out->dq ? out->dq + row * (size_t)p->Dqk : NULL;
        row_gap(p, bounds, it->b, it->h, it->idx, out->o + row * (size_t)p->Dv, &out->lse[row], dq, res, pl->lse[k],
                res + p->Dv, &pl->mass[k], res + p->Dv + p->Dqk, res + 2 * p->Dv + p->Dqk, pl->uf + 2 * k,
                &row_gaps[k]);
    }
    if (n_keys && run_pass(c, PASS_KEY_MPFR, pl->keys, n_keys, key_gaps, bounds, threads) != 0) {
        snprintf(why, cap, "oracle: out of memory in the sampled MPFR passes");
        goto done;
    }
    gap_record worst = {0.0, "O", 0, 0, 0, 0.0, "O"}, worst_ratio = worst;
    const char *axis = "row", *ratio_axis = "row";
    for (int k = 0; k < n_rows; k++) {
        if (!(row_gaps[k].gap <= worst.gap)) worst = row_gaps[k];
        if (!(row_gaps[k].ratio <= worst_ratio.ratio)) worst_ratio = row_gaps[k];
    }
    for (int k = 0; k < n_keys; k++) {
        if (!(key_gaps[k].gap <= worst.gap)) worst = key_gaps[k], axis = "key";
        if (!(key_gaps[k].ratio <= worst_ratio.ratio)) worst_ratio = key_gaps[k], ratio_axis = "key";
    }
    r->mpfr_rows = n_rows;
    r->cert_rows = n_rows;
    r->cert_keys = n_keys;
    r->cert_gap_over_bound = worst_ratio.ratio;
    r->fp64_vs_mpfr_rel = worst.gap;
    if (!(worst_ratio.ratio <= 1.0)) {
        snprintf(why, cap,
                 "oracle: %s fp64 tier exceeds its stated bound on %s (b=%d, h=%d, %s=%d): gap / bound = %.3g "
                 "(an oracle error, not a kernel finding)",
                 r->tier_used == AF_ORACLE_GPU ? "GPU" : "CPU", worst_ratio.ratio_tensor, worst_ratio.b, worst_ratio.h,
                 ratio_axis, worst_ratio.idx, worst_ratio.ratio);
        goto done;
    }
    if (!(worst.gap <= AF_ORACLE_FP64_GAP_LIMIT)) {
        snprintf(why, cap,
                 "oracle: fp64 tier disagrees with MPFR on %s (b=%d, h=%d, %s=%d): relative gap %.3g "
                 "> limit %.3g",
                 worst.tensor, worst.b, worst.h, axis, worst.idx, worst.gap, AF_ORACLE_FP64_GAP_LIMIT);
        goto done;
    }
    status = 0;
done:
    af_cert_plan_free(c, pl);
    free(row_gaps);
    free(key_gaps);
    return status;
}

/* Runs the sampled MPFR passes and measures the fp64 gap; 0 or -1 with why. */
int af_oracle_sampled_mpfr(af_oracle_ctx *c, const af_oracle_opts *o, int threads, const cert_bounds *bounds,
                           af_oracle_result *r, char *why, size_t cap) {
    af_cert_plan *pl;
    if (af_cert_plan_rows(c, o, threads, &pl, why, cap) != 0) return -1;
    return af_cert_plan_finish(c, threads, bounds, r, pl, why, cap);
}

int af_oracle_run(const af_oracle_problem *p_in, const af_oracle_opts *o_in, af_oracle_result *r, char *why,
                  size_t cap) {
    return af_oracle_run_pipelined(p_in, o_in, r, NULL, why, cap);
}

/* heads_v != heads_kv: the exact shared-head problem (oracle_heads_v.c), certified in place
 * (not pipelined: the widened K and V go once it returns). */
static int run_split_v(const af_oracle_problem *p, const af_oracle_opts *o, af_oracle_result *r, char *why,
                       size_t cap) {
    memset(r, 0, sizeof *r);
    if (p->Hv < 1 || p->Hkv < 1 || p->Hq % p->Hv != 0 || p->Hq % p->Hkv != 0) {
        snprintf(why, cap, "oracle: heads_q=%d is not a multiple of heads_kv=%d and heads_v=%d", p->Hq, p->Hkv, p->Hv);
        return -1;
    }
    af_oracle_problem wide;
    af_inputs wide_in;
    af_oracle_opts ow; /* the wide problem's magnitudes are not this problem's: none asked */
    if (o)
        ow = *o;
    else
        af_oracle_opts_default(&ow);
    ow.gpu_magnitudes = 0;
    ow.gpu_keep = false; /* nor its device copies (narrowing changes dK, dV on the host) */
    int st = af_oracle_widen_v(p, &wide, &wide_in);
    if (st != 0) snprintf(why, cap, "oracle: out of memory widening K and V to shared heads");
    if (st == 0) st = af_oracle_run_pipelined(&wide, &ow, r, NULL, why, cap);
    af_oracle_widen_release(&wide_in);
    if (st != 0) return st;
    if (af_oracle_narrow_v(p, wide.Hkv, r) != 0) {
        af_oracle_result_free(r);
        snprintf(why, cap, "oracle: out of memory summing dK and dV over shared heads");
        return -1;
    }
    return 0;
}

int af_oracle_run_pipelined(const af_oracle_problem *p_in, const af_oracle_opts *o_in, af_oracle_result *r,
                            af_oracle_cert **pending, char *why, size_t cap) {
    double t0 = af_clock_mono();
    if (pending) *pending = NULL;
    if (af_oracle_split_v(p_in)) return run_split_v(p_in, o_in, r, why, cap);
    memset(r, 0, sizeof *r);
    af_oracle_opts o;
    if (o_in)
        o = *o_in;
    else
        af_oracle_opts_default(&o);
    if (o.precision_bits == 0) o.precision_bits = 128;
    if (!(o.mpfr_budget > 0.0)) o.mpfr_budget = 5e8;

    /* NULL length arrays mean "the maxima". */
    af_oracle_problem p = *p_in;
    int *lengths = NULL;
    if (p.B >= 1 && (!p.len_q || !p.len_kv)) {
        lengths = malloc(2 * (size_t)p.B * sizeof *lengths);
        if (!lengths) {
            snprintf(why, cap, "oracle: out of memory");
            return -1;
        }
        for (int b = 0; b < p.B; b++) {
            lengths[b] = p.len_q ? p.len_q[b] : p.Sq;
            lengths[p.B + b] = p.len_kv ? p.len_kv[b] : p.Skv;
        }
        p.len_q = lengths;
        p.len_kv = lengths + p.B;
    }
    if (validate(&p, &o, why, cap) != 0) {
        free(lengths);
        return -1;
    }

    int threads = o.threads > 0 ? o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    af_oracle_ctx c;
    memset(&c, 0, sizeof c);
    c.p = &p;
    c.prec = o.precision_bits;
    c.sums_only = o.mpfr_sums_only;
    c.backward = p.in->dout != NULL;
    c.out = &r->out;
    size_t n_rows = (size_t)p.B * (size_t)p.Hq * (size_t)p.Sq;
    af_mpfr_inputs *inputs_mp = NULL;
    int status = -1;
    if (outputs_calloc(&r->out, &p, c.backward) != 0) {
        snprintf(why, cap, "oracle: out of memory for the outputs");
        goto done;
    }
    if (c.backward && p.in->feat.sink == 2 && !(c.dsink_row = calloc(n_rows ? n_rows : 1, sizeof *c.dsink_row))) {
        snprintf(why, cap, "oracle: out of memory for the sink gradient");
        goto done;
    }
    if (p.in->feat.outputs && (!(c.stat_max = malloc((n_rows ? n_rows : 1) * sizeof(double))) ||
                               !(c.stat_sumexp = malloc((n_rows ? n_rows : 1) * sizeof(double))))) {
        snprintf(why, cap, "oracle: out of memory for the score statistics");
        goto done;
    }
    double sigma = score_bound(&p);
    double log_n = log((double)p.Skv);
    /* With a usable GPU, AUTO keeps MPFR-everywhere to the small cases (gpu_mpfr_budget):
     * the GPU tier, certified by MPFR on sampled rows, is as trustworthy and far faster. */
    double auto_budget = o.mpfr_budget;
    char gpu_why[160];
    if (o.tier == AF_ORACLE_AUTO && o.gpu_mpfr_budget > 0.0 && af_oracle_total_work(&p) > o.gpu_mpfr_budget &&
        af_oracle_gpu_usable(gpu_why, sizeof gpu_why) == 0)
        auto_budget = fmin(o.mpfr_budget, o.gpu_mpfr_budget);
    bool all_mpfr = o.tier == AF_ORACLE_MPFR || (o.tier == AF_ORACLE_AUTO && af_oracle_total_work(&p) <= auto_budget);
    r->tier_used = all_mpfr ? AF_ORACLE_MPFR : AF_ORACLE_FP64;
    if (all_mpfr) {
        if (c.backward) {
            c.lse_mp = stats_new(n_rows, c.prec);
            c.drow_mp = stats_new(n_rows, c.prec);
            if (!c.lse_mp || !c.drow_mp) {
                snprintf(why, cap, "oracle: out of memory for the row statistics");
                goto done;
            }
        }
        /* every row and key reads each input element many times: convert each once
         * (NULL when the case is too large or memory is short: then each use converts) */
        c.x = inputs_mp = af_mpfr_inputs_new(&p);
        if (run_pass(&c, PASS_ROW_MPFR, NULL, 0, NULL, NULL, threads) != 0 ||
            (c.backward && run_pass(&c, PASS_KEY_MPFR, NULL, 0, NULL, NULL, threads) != 0)) {
            snprintf(why, cap, "oracle: out of memory in the MPFR passes");
            goto done;
        }
        r->all_mpfr = true;
        for (int b = 0; b < p.B; b++) r->mpfr_rows += p.Hq * p.len_q[b];
        r->bound_rel = U53;
        r->bound_abs_scale = AF_ORACLE_BOUND_C * (1.0 + sigma + log_n) * ldexp(1.0, -c.prec);
    } else {
        c.lse64 = malloc((n_rows ? n_rows : 1) * sizeof *c.lse64);
        c.drow64 = calloc((n_rows ? n_rows : 1), sizeof *c.drow64);
        if (!c.lse64 || !c.drow64) {
            snprintf(why, cap, "oracle: out of memory for the row statistics");
            goto done;
        }
        /* with the GPU tier expected to serve, the certification's rows start now, beside
         * its passes (oracle_pipeline.c), from the budget that tier certifies with (below);
         * the CPU tier would share the cores with them (a 2048-token backward on 2 cores:
         * 19.0 s -> 19.3 s), so its certification starts after it unless cert_early > 0 */
        af_oracle_cert *cert = NULL;
        bool fp64_tiers = o.tier == AF_ORACLE_AUTO || o.tier == AF_ORACLE_GPU;
        char gwhy[160];
        bool gpu_expected = fp64_tiers && pending && o.cert_early >= 0 && gpu_tier_expected(&p, gwhy, sizeof gwhy);
        if (fp64_tiers && pending && (o.cert_early > 0 || gpu_expected)) {
            af_oracle_opts oc = o;
            if (gpu_expected && o.gpu_mpfr_budget > 0.0) oc.mpfr_budget = fmin(o.mpfr_budget, o.gpu_mpfr_budget);
            if (af_oracle_cert_begin(&c, &oc, threads, why, cap, &cert) != 0) goto done;
        }
        if (fp64_tiers) run_gpu_tier(&c, &o, o.gpu_keep && pending, r); /* kept copies stay equal: fp64 rows stay */
        if (r->tier_used == AF_ORACLE_GPU) {
            /* the certification's floor follows the GPU's small-case budget too */
            if (o.gpu_mpfr_budget > 0.0) o.mpfr_budget = fmin(o.mpfr_budget, o.gpu_mpfr_budget);
            r->bound_rel = 4.0 * U53;
            r->bound_abs_scale = af_oracle_gpu_bound_abs(&p, sigma);
        } else {
            if (run_pass(&c, PASS_ROW_FP64, NULL, 0, NULL, NULL, threads) != 0 ||
                (c.backward && run_pass(&c, PASS_KEY_FP64, NULL, 0, NULL, NULL, threads) != 0)) {
                af_oracle_cert_abandon(cert);
                snprintf(why, cap, "oracle: out of memory in the fp64 passes");
                goto done;
            }
            r->bound_rel = 4.0 * U53;
            r->bound_abs_scale = AF_ORACLE_BOUND_C * (1.0 + sigma + log_n) * U53;
        }
        cert_bounds cb = {r->bound_rel, r->bound_abs_scale,
                          AF_ORACLE_BOUND_C * (1.0 + sigma + log_n) * ldexp(1.0, -c.prec), false};
        if (fp64_tiers && pending) { /* the certification goes on in the background (oracle_pipeline.c) */
            if (!cert && af_oracle_cert_begin(&c, &o, threads, why, cap, &cert) != 0) goto done;
            af_oracle_cert_release(cert, &c, &cb, r->tier_used); /* takes c.lse64, c.drow64 */
            *pending = cert;
        } else if (fp64_tiers && af_oracle_sampled_mpfr(&c, &o, threads, &cb, r, why, cap) != 0)
            goto done;
    }
    if (c.dsink_row) { /* dsink_h = sum over (b, i) of the rows' shares, compensated */
        for (int h = 0; h < p.Hq; h++) {
            double sum = 0.0, comp = 0.0;
            for (int b = 0; b < p.B; b++)
                for (int i = 0; i < p.len_q[b]; i++) {
                    double x = c.dsink_row[af_idx_row(&p, b, h, i)], t = sum + x;
                    comp += fabs(sum) >= fabs(x) ? (sum - t) + x : (x - t) + sum;
                    sum = t;
                }
            r->out.dsink[h] = sum + comp;
        }
    }
    if (c.stat_max) score_statistics(&p, &c, &r->out);
    status = 0;
done:
    af_mpfr_inputs_free(inputs_mp);
    free(c.dsink_row);
    free(c.stat_max);
    free(c.stat_sumexp);
    stats_free(c.lse_mp, c.lse_mp ? n_rows : 0);
    stats_free(c.drow_mp, c.drow_mp ? n_rows : 0);
    free(c.lse64);
    free(c.drow64);
    free(lengths);
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    if (status != 0) {
        af_oracle_result_free(r);
        return -1;
    }
    r->seconds = af_clock_mono() - t0;
    return 0;
}
