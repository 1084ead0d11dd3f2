/* criterion_rows.c — the fp16/bf16 criterion (verdict.h) in two halves: the per-row
 * summaries of a tensor (kernels/row_summary.h; computed here on the host, or on the
 * device: by kernels/compare_gpu.cu for long cases without budgets, by
 * gpu/criterion_rows.cu where the GPU pass kept the budgets) and the decision from them, which
 * runs on the host whichever side summarised. The decision walks the rows in the same
 * order and takes the checks in the same order (a row's element check, its row check,
 * its bias check; the tensor bias last), so the result does not depend on who
 * summarised. */
#include "judge/criterion/criterion.h"
#include "judge/criterion/row_terms.h"
#include "judge/problem.h"
#include "judge/tolerance.h"
#include "judge/verdict.h"

#include <math.h>

#include "judge/criterion/criterion_gpu.h"
#include "util/config.h"
#include "util/parfor.h"
#include <string.h>

bool af_criterion_terms_have(const af_criterion_terms *terms, af_tensor_id id) {
    if (!terms || !terms->kappa[id]) return false;
    if (terms->lse_only) return id == AF_T_LSE;
    return terms->ready && (id == AF_T_LSE || terms->mass[id]);
}

/* Shape of tensor id as the criterion walks it: H heads, S rows per head, D per row. */
static void tensor_shape(const af_case *c, af_tensor_id id, int *H, int *S, int *D) {
    bool kvside = id == AF_T_DK || id == AF_T_DV;
    *H = af_tensor_heads(c, id);
    *S = kvside ? c->seqlen_kv : c->seqlen_q;
    *D = id == AF_T_LSE ? 1 : (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
}

void af_row_summary_of(const double *kernel, const double *ref, const double *exact, int D, af_row_summary *s) {
    af_row_summary_row(kernel, ref, exact, D, s);
}

/* One block of rows of af_criterion_row_summaries (a parfor item). */
typedef struct {
    const double *kernel, *ref, *exact, *dterm, *kappa, *mass; /* (rows, D) dense; kappa NULL: no budgets */
    int D;
    size_t n;
    bool lse;
    double unit;
    af_storage st;
    af_row_summary *rows;
} summaries_ctx;

#define SUMMARY_BLOCK_ROWS 64

static void summarise_block(void *ctx, long block) {
    const summaries_ctx *x = ctx;
    size_t r0 = (size_t)block * SUMMARY_BLOCK_ROWS,
           r1 = r0 + SUMMARY_BLOCK_ROWS < x->n ? r0 + SUMMARY_BLOCK_ROWS : x->n;
    for (size_t r = r0; r < r1; r++) {
        size_t e = r * (size_t)x->D;
        af_row_summary_of(x->kernel + e, x->ref ? x->ref + e : NULL, x->exact + e, x->D, &x->rows[r]);
        if (x->kappa)
            af_row_terms_row(x->kernel + e, x->ref ? x->ref + e : NULL, x->exact + e, x->kappa + e,
                             x->mass ? x->mass + e : NULL, x->dterm ? x->dterm + e : NULL, x->D, x->lse, x->unit,
                             af_storage_min_normal(x->st), af_storage_subnormal_half_step(x->st), &x->rows[r]);
    }
}

/* ATTNFUZZ_ROWS_ON_GPU (util/config.h): unset or anything but "0" lets the device serve */
static bool rows_on_gpu(void) {
    const char *v = af_config_get(AF_CFG_ROWS_ON_GPU);
    return !v || strcmp(v, "0") != 0;
}

void af_criterion_row_summaries(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                                const double *exact, const af_criterion_terms *terms, const double *dterm, double unit,
                                af_row_summary *rows) {
    af_criterion_row_summaries_at(c, id, kernel, ref, NULL, exact, NULL, terms, dterm, unit, rows);
}

void af_criterion_row_summaries_at(const af_case *c, af_tensor_id id, const double *kernel, const double *ref,
                                   const double *ref_dev, const double *exact, const double *exact_dev,
                                   const af_criterion_terms *terms, const double *dterm, double unit,
                                   af_row_summary *rows) {
    int H, S, D;
    tensor_shape(c, id, &H, &S, &D);
    bool have = af_criterion_terms_have(terms, id);
    summaries_ctx x = {kernel,
                       ref,
                       exact,
                       dterm,
                       have ? terms->kappa[id] : NULL,
                       have ? terms->mass[id] : NULL,
                       D,
                       (size_t)c->batch * H * S,
                       id == AF_T_LSE,
                       unit,
                       af_case_tensor_storage(c, id),
                       rows};
    /* where the GPU pass kept the budgets on the device, the device summarises (the
     * host's functions and bits: criterion_gpu.h); a failure there falls back here */
    if (have && id != AF_T_LSE && terms->dev && rows_on_gpu()) {
        char why[256];
        if (af_criterion_row_summaries_gpu(c, id, kernel, ref, ref_dev, exact, exact_dev, terms, dterm, unit, rows, why,
                                           sizeof why) == 0)
            return;
    }
    /* the host's copies of budgets the GPU pass left on the device (criterion_gpu.h) */
    if (have && af_criterion_terms_gpu_host_budgets(terms) != 0) x.kappa = x.mass = NULL;
    /* rows are independent: the same summaries whatever the thread count (parfor.h) */
    long blocks = (long)((x.n + SUMMARY_BLOCK_ROWS - 1) / SUMMARY_BLOCK_ROWS);
    af_parfor(blocks, af_parfor_threads((double)x.n * D), summarise_block, &x);
}

static void take(af_criterion_result *out, af_check_kind k, double ratio, double err, double allowed, double floor,
                 double err_ref, int b, int h, int row, int col, double kv, double ov) {
    if (!(ratio > out->ratio)) return;
    out->check = k;
    out->ratio = ratio;
    out->err = err;
    out->allowed = allowed;
    out->floor = floor;
    out->err_ref = err_ref;
    out->b = b;
    out->h = h;
    out->row = row;
    out->col = col;
    out->kernel_value = kv;
    out->oracle_value = ov;
}

void af_criterion_decide(const af_case *c, af_tensor_id id, const af_row_summary *rows, bool have_ref,
                         const af_criterion_terms *terms, double unit, double grad_mass, af_criterion_result *out) {
    memset(out, 0, sizeof *out);
    out->ratio = -1; /* the first check taken replaces it */
    bool kvside = id == AF_T_DK || id == AF_T_DV, grad = id == AF_T_DQ || kvside;
    int H, S, D;
    tensor_shape(c, id, &H, &S, &D);
    bool have = af_criterion_terms_have(terms, id);
    const double *sig2 = have ? terms->sig2[id] : NULL;
    af_mask_rule rule = af_mask_rule_of_case(c);
    const double sd_unit = unit / (2.0 * sqrt(3.0)); /* std of one rounding, relative */
    /* the tensor-wide bias: sums over rows */
    double tb_k = 0, tb_ref = 0, tb_var = 0, tb_kappa = 0, tb_worst = -1;
    int tb_b = 0, tb_h = 0, tb_r = 0;
    /* LSE is one fp32 value per row: a row holds one sample of the reference's error,
     * which can be 0 by luck, so the LSE row check takes the reference's error and the
     * magnitude over the whole tensor (the FlashAttention rule per tensor), with the
     * row's own term budget. Measured on the H200 (cuDNN 9.14/9.19, GPU corpus): the
     * per-row form flagged correct engines at ratios up to 1.68. */
    double lse_err_ref = 0, lse_max = 0;
    if (id == AF_T_LSE)
        for (int b = 0; b < c->batch; b++) {
            int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b);
            for (int h = 0; h < H; h++)
                for (int i = 0; i < lq; i++) {
                    af_mask_keys keys;
                    if (af_mask_visible_keys(&rule, b, lq, lkv, i, &keys) == 0) continue;
                    const af_row_summary *s = &rows[((size_t)b * H + h) * S + i];
                    lse_max = fmax(lse_max, s->lse_abs);
                    if (have_ref) lse_err_ref = fmax(lse_err_ref, s->lse_err_ref);
                }
        }
    for (int b = 0; b < c->batch; b++) {
        int nrows = kvside ? af_case_len_kv(c, b) : af_case_len_q(c, b);
        int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < nrows; s++) {
                af_mask_keys keys;
                if (!kvside && af_mask_visible_keys(&rule, b, lq, lkv, s, &keys) == 0) continue;
                size_t r = ((size_t)b * H + h) * S + s;
                const af_row_summary *rs = &rows[r];
                if (have && id != AF_T_LSE && rs->n > 0)
                    take(out, AF_CHECK_ELEMENT, rs->el_ratio, rs->el_err, rs->el_allowed, 0, rs->el_err_ref, b, h, s,
                         rs->el_d, rs->el_kernel, rs->el_exact);
                if (rs->n == 0) continue;
                double err_ref = rs->err_ref, maxo = rs->maxo;
                if (id == AF_T_LSE) { /* see lse_err_ref above */
                    err_ref = lse_err_ref;
                    maxo = lse_max;
                }
                /* row: 2 err_ref(row) + floor(row) */
                double floor_r = unit * maxo + (have ? rs->maxkappa : 0);
                if (grad && !have) floor_r += AF_GRAD_CANCEL_UNIT * grad_mass + rs->floor_extra;
                /* dQ, dK: where a kernel places its dS roundings (verdict.h rule 1) */
                if (have && (id == AF_T_DQ || id == AF_T_DK)) floor_r += 0.5 * unit * rs->maxmass;
                floor_r = fmax(floor_r, 0x1p-24);
                double allowed = have_ref ? 2.0 * err_ref + floor_r : 8.0 * floor_r;
                double ratio = rs->err / allowed;
                take(out, AF_CHECK_ROW, ratio, rs->err, allowed, floor_r, err_ref, b, h, s,
                     id == AF_T_LSE ? -1 : rs->worst_d, rs->kernel_at, rs->exact_at);
                out->elements += rs->n;
                if (!have || id == AF_T_LSE || D < 2) continue;
                /* row bias: the signed error projected on sign(exact row); the outputs'
                 * relative rounding is in sigma, their absolute rounding below the
                 * smallest normal (half a subnormal step each, in any direction: a row
                 * rounding to zero errs in one) adds up in sub_abs */
                double sigma = sd_unit * (sqrt(sig2[r]) + sqrt(rs->o2));
                double noise = AF_BIAS_SIGMAS * 2.0 * sigma + rs->sumkappa + rs->sub_abs;
                /* no check judges an absolute error below 2^-24 (as the row and element
                 * checks): fp32 kernels legitimately flush values of ~1e-36 to zero
                 * (H200, cuDNN, bf16 low_lse data: kernel 0, oracle 5e-37) */
                double ab = fmax(have_ref ? 2.0 * fabs(rs->beta_ref) + noise : 4.0 * noise, 0x1p-24);
                double rb = fabs(rs->beta_k) / ab;
                take(out, AF_CHECK_ROW_BIAS, rb, fabs(rs->beta_k), ab, floor_r, fabs(rs->beta_ref), b, h, s,
                     rs->worst_d, rs->kernel_at, rs->exact_at);
                tb_k += rs->beta_k;
                tb_ref += rs->beta_ref;
                tb_var += sigma * sigma;
                tb_kappa += rs->sumkappa + rs->sub_abs;
                if (rb > tb_worst) {
                    tb_worst = rb;
                    tb_b = b;
                    tb_h = h;
                    tb_r = s;
                }
            }
    }
    if (tb_worst >= 0) {
        double noise = AF_BIAS_SIGMAS * 2.0 * sqrt(tb_var) + tb_kappa;
        double ab = fmax(have_ref ? 2.0 * fabs(tb_ref) + noise : 4.0 * noise, 0x1p-24);
        double rt = fabs(tb_k) / ab;
        const af_row_summary *rs = &rows[((size_t)tb_b * H + tb_h) * S + tb_r];
        take(out, AF_CHECK_TENSOR_BIAS, rt, fabs(tb_k), ab, 0, fabs(tb_ref), tb_b, tb_h, tb_r, 0, rs->kernel_first,
             rs->exact_first);
    }
    if (out->ratio < 0) out->ratio = 0; /* nothing judged */
}
