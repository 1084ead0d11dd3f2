/* test_criterion_gpu.c — the GPU pass of the criterion's term budgets (criterion_gpu.h)
 * against the host loop (criterion.c), array by array, on cases that reach every branch:
 *   1. every array (mass, kappa, sig2 of O, dQ, dK, dV; kq, wq, rho, log_f, the LSE
 *      budget; P and |dS| + budget where kept) equals the host's to 1e-11 relative per
 *      element (the sums run in the host's order; exp and the block reductions of sig2
 *      differ by rounding only), on fp16 / bf16, forward / backward, causal, windows,
 *      bottom-right, padding, GQA, fully masked rows, d up to 256, fp16 subnormal P;
 *   2. a second GPU pass gives the same bits (no atomics, fixed reduction trees); the
 *      stored O's share of dK from the device copy of P equals the host's bit for bit;
 *   3. a case above AF_CRITERION_TERMS_MAX_WORK whose rows span two scratch chunks is
 *      prepared with the element budgets from the GPU (judge summary terms_gpu), equal
 *      to the host's; judged with either set of budgets, a perfect kernel passes, and a
 *      kernel whose dQ row is off by 2^-6 relative is caught with the same ratio;
 *   4. at that size, with the GPU budgets, one dQ element moved by 0.98 x its allowance
 *      passes and by 1.02 x is a finding at that element;
 *   5. the row summaries with budgets computed on the device (criterion_rows.cu) equal
 *      the host's bit for bit, every field, O and the gradients (rows_case).
 * Without a CUDA build or a usable GPU it prints SKIP and exits 77.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/criterion/criterion_gpu.h"
#include "judge/problem.h"
#include "judge/tolerance.h"
#include "model/case_measure.h"
#include "judge/tests/criterion_fixture.h"
#ifdef ATTNFUZZ_HAVE_CUDA
#include "kernels/af_gpu.h"
#endif
#include "oracle/gpu/oracle_gpu.h"

static const char *const cases[] = {
    /* fp16 GQA 4:2, padding, causal bottom-right, backward */
    "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 100\nseqlen_kv = 150\nseqlens_q = 100,61\n"
    "seqlens_kv = 150,97\nhead_dim = 64\nmask = padding_causal_bottom_right\nbackward = yes\nseed = 11\n",
    /* bf16 MQA 8:1, Dqk 128 / Dv 64, left window, backward */
    "dtype = bf16\nbatch = 1\nheads_q = 8\nheads_kv = 1\nseqlen_q = 257\nseqlen_kv = 513\nhead_dim_qk = 128\n"
    "head_dim_v = 64\nmask = causal\nalign = bottom_right\nwindow = 32,0\nbackward = yes\nseed = 12\n",
    /* fp16 forward, d 256, no mask */
    "dtype = fp16\nbatch = 1\nheads = 2\nseqlen_q = 300\nseqlen_kv = 211\nhead_dim = 256\nmask = none\nseed = 13\n",
    /* bf16 causal top-left with more queries than keys (fully masked rows), two-sided window */
    "dtype = bf16\nbatch = 2\nheads = 3\nseqlen_q = 90\nseqlen_kv = 40\nhead_dim = 32\nmask = causal\n"
    "window = 7,5\nbackward = yes\nseed = 14\n",
    /* fp16 with large scores: many P below 2^-14 (the subnormal terms) */
    "dtype = fp16\nbatch = 1\nheads = 2\nseqlen = 200\nhead_dim = 64\nmask = none\nbackward = yes\nseed = 15\n"
    "data = normal:3\n",
};

/* rows x Skv pairs of case 5: 8 x 2100 x 2100 > 2^25, two scratch chunks; work above
 * AF_CRITERION_TERMS_MAX_WORK */
static const char *const long_case =
    "dtype = fp16\nbatch = 1\nheads_q = 8\nheads_kv = 2\nseqlen = 2100\nhead_dim = 32\n"
    "mask = causal\nbackward = yes\nseed = 16\n";

static double worst_rel;

static void same_d(const char *what, const double *h, const double *g, size_t n) {
    CHECK_MSG((h == NULL) == (g == NULL), "%s: present on one side only", what);
    if (!h) return;
    for (size_t e = 0; e < n; e++) {
        double d = fabs(h[e] - g[e]), rel = d / (fabs(h[e]) + 1e-300);
        if (h[e] == g[e]) continue;
        CHECK_MSG(d <= 1e-11 * fabs(h[e]), "%s[%zu]: host %.17g gpu %.17g", what, e, h[e], g[e]);
        if (rel > worst_rel) worst_rel = rel;
    }
}

static void same_f(const char *what, const float *h, const float *g, size_t n) {
    CHECK_MSG((h == NULL) == (g == NULL), "%s: present on one side only", what);
    if (!h) return;
    for (size_t e = 0; e < n; e++)
        CHECK_MSG(fabsf(h[e] - g[e]) <= 0x1p-23f * fabsf(h[e]), "%s[%zu]: host %.9g gpu %.9g", what, e, h[e], g[e]);
}

static void same_terms(const af_oracle_problem *p, const af_criterion_terms *h, const af_criterion_terms *g) {
    size_t nq = (size_t)p->B * p->Hq * p->Sq, nk = (size_t)p->B * p->Hkv * p->Skv;
    CHECK(h->ready && g->ready);
    size_t elems[AF_T_COUNT] = {0}, rows[AF_T_COUNT] = {0};
    elems[AF_T_O] = nq * p->Dv, rows[AF_T_O] = nq;
    elems[AF_T_DQ] = nq * p->Dqk, rows[AF_T_DQ] = nq;
    elems[AF_T_DK] = nk * p->Dqk, rows[AF_T_DK] = nk;
    elems[AF_T_DV] = nk * p->Dv, rows[AF_T_DV] = nk;
    elems[AF_T_LSE] = nq;
    for (int id = 0; id < AF_T_COUNT; id++) {
        char what[64];
        snprintf(what, sizeof what, "mass %s", af_tensor_name((af_tensor_id)id));
        same_d(what, h->mass[id], g->mass[id], elems[id]);
        snprintf(what, sizeof what, "kappa %s", af_tensor_name((af_tensor_id)id));
        same_d(what, h->kappa[id], g->kappa[id], elems[id]);
        snprintf(what, sizeof what, "sig2 %s", af_tensor_name((af_tensor_id)id));
        same_d(what, h->sig2[id], g->sig2[id], rows[id]);
    }
    same_d("kq", h->kq, g->kq, nq * p->Dqk);
    same_d("wq", h->wq, g->wq, nk * p->Dqk);
    same_d("rho", h->rho, g->rho, nq);
    same_d("log_f", h->log_f, g->log_f, nq);
    same_f("prob", h->prob, g->prob, nq * p->Skv);
    same_f("ds_abs", h->ds_abs, g->ds_abs, nq * p->Skv);
}

static void same_bits(const af_oracle_problem *p, const af_criterion_terms *a, const af_criterion_terms *b) {
    size_t nq = (size_t)p->B * p->Hq * p->Sq, nk = (size_t)p->B * p->Hkv * p->Skv;
    size_t elems[AF_T_COUNT] = {0};
    elems[AF_T_O] = nq * p->Dv, elems[AF_T_DQ] = nq * p->Dqk, elems[AF_T_DK] = nk * p->Dqk, elems[AF_T_DV] = nk * p->Dv;
    for (int id = 0; id < AF_T_COUNT; id++) {
        if (!a->mass[id]) continue;
        CHECK_MSG(memcmp(a->mass[id], b->mass[id], elems[id] * sizeof(double)) == 0, "mass %d moved", id);
        CHECK_MSG(memcmp(a->kappa[id], b->kappa[id], elems[id] * sizeof(double)) == 0, "kappa %d moved", id);
    }
    CHECK(memcmp(a->kappa[AF_T_LSE], b->kappa[AF_T_LSE], nq * sizeof(double)) == 0);
    if (a->kq) CHECK(memcmp(a->kq, b->kq, nq * p->Dqk * sizeof(double)) == 0);
}

/* Bit for bit, field by field (the struct's padding is not compared): NULL when every
 * field is equal, else the first field that differs. */
static const char *differing_field(const af_row_summary *a, const af_row_summary *b) {
#define SS_F(f)                                                                                                        \
    { #f, offsetof(af_row_summary, f), sizeof a->f }
    const struct {
        const char *name;
        size_t off, size;
    } fields[] = {SS_F(n),          SS_F(worst_d),    SS_F(err),          SS_F(err_ref),     SS_F(maxo),
                  SS_F(kernel_at),  SS_F(exact_at),   SS_F(kernel_first), SS_F(exact_first), SS_F(beta_k),
                  SS_F(beta_ref),   SS_F(o2),         SS_F(lse_abs),      SS_F(lse_err_ref), SS_F(maxkappa),
                  SS_F(sumkappa),   SS_F(maxmass),    SS_F(sub_abs),      SS_F(el_d),        SS_F(el_ratio),
                  SS_F(el_err),     SS_F(el_allowed), SS_F(el_err_ref),   SS_F(el_kernel),   SS_F(el_exact),
                  SS_F(floor_extra)};
#undef SS_F
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
        if (memcmp((const char *)a + fields[k].off, (const char *)b + fields[k].off, fields[k].size) != 0)
            return fields[k].name;
    return NULL;
}

/* 5. The row summaries with budgets on the device (af_criterion_row_summaries_gpu) equal
 * the host's bit for bit, for O and the gradients: from the pass's resident budgets (g)
 * and from uploaded host budgets (h), with and without a reference, with the per-run
 * extra budget (dterm), on a kernel whose values are the cpu reference's with a NaN, an
 * Inf and a few large errors planted. */
static void rows_case(const af_prepared *pr, af_criterion_terms *h, af_criterion_terms *g, int index) {
    const af_case *c = &pr->c;
    af_tensor_id ids[4] = {AF_T_O, AF_T_DQ, AF_T_DK, AF_T_DV};
    const double *refs[4] = {pr->ref.o, pr->ref.dq, pr->ref.dk, pr->ref.dv};
    const double *exact[4] = {pr->oracle.out.o, pr->oracle.out.dq, pr->oracle.out.dk, pr->oracle.out.dv};
    int checked = 0;
    long long planted = 0;
    for (int i = 0; i < (c->backward ? 4 : 1); i++) {
        af_tensor_id id = ids[i];
        CHECK_MSG(g->dev != NULL, "the GPU pass keeps its budgets on the device");
        /* the oracle's values on the device: the oracle tier's kept copy (the pass read it,
         * the judge hands it over as exact_dev) or, where the tier kept none, the pass's own
         * upload (read through g) */
        const double *exact_dev[4] = {NULL, NULL, NULL, NULL};
        if (pr->oracle.out.dev) {
            const af_outputs_dev *od = pr->oracle.out.dev;
            exact_dev[0] = od->o, exact_dev[1] = od->dq, exact_dev[2] = od->dk, exact_dev[3] = od->dv;
        }
        CHECK_MSG(exact_dev[i] ? !af_criterion_terms_gpu_keeps_exact(g, id, exact[i])
                               : af_criterion_terms_gpu_keeps_exact(g, id, exact[i]),
                  "case %d %s: the exact values on the device once (%s)", index, af_tensor_name(id),
                  exact_dev[i] ? "the tier's" : "the pass's");
        CHECK_MSG(!af_criterion_terms_gpu_keeps_exact(h, id, exact[i]), "case %d %s: h has no device copy", index,
                  af_tensor_name(id));
        bool kvside = id == AF_T_DK || id == AF_T_DV;
        int D = (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
        size_t rows = (size_t)c->batch * af_tensor_heads(c, id) * (kvside ? c->seqlen_kv : c->seqlen_q);
        size_t n = rows * D;
        double *kernel = malloc(n * sizeof(double));
        CHECK(kernel != NULL);
        memcpy(kernel, refs[i], n * sizeof(double));
        kernel[0] = NAN;
        if (n > 7) kernel[7] = INFINITY;
        for (size_t e = 11; e < n; e += 997, planted++) kernel[e] = exact[i][e] * (1 + 0x1p-5) + 0x1p-20;
        double *dterm = af_criterion_extra_terms(c, id, g, pr->ref.o, pr->ref.lse);
        af_row_summary *hs = calloc(rows, sizeof *hs), *gs = calloc(rows, sizeof *gs);
        CHECK(hs && gs);
        double unit = af_output_unit(c, id);
        for (int with_ref = 0; with_ref < 2; with_ref++) {
            const double *ref = with_ref ? refs[i] : NULL;
            af_criterion_terms *sets[2] = {g, h};
            for (int k = 0; k < 2; k++) {
                /* the host's, from the same budgets (g's host copies with its device copies
                 * hidden, or h's): the device's sums must equal them bit for bit; g's and
                 * h's budgets themselves agree to 1e-11 only (section 1) */
                struct af_terms_dev *keep = sets[k]->dev;
                sets[k]->dev = NULL;
                af_criterion_row_summaries(c, id, kernel, ref, exact[i], sets[k], dterm, unit, hs);
                sets[k]->dev = keep;
                char why[256] = "";
                int rc = af_criterion_row_summaries_gpu(c, id, kernel, ref, NULL, exact[i], NULL, sets[k], dterm, unit,
                                                        gs, why, sizeof why);
                CHECK_MSG(rc == 0, "case %d %s: %s", index, af_tensor_name(id), why);
                if (exact_dev[i]) { /* the tier's kept exact values read in place of their upload */
                    af_row_summary *gd = calloc(rows, sizeof *gd);
                    CHECK(gd != NULL);
                    rc = af_criterion_row_summaries_gpu(c, id, kernel, ref, NULL, exact[i], exact_dev[i], sets[k],
                                                        dterm, unit, gd, why, sizeof why);
                    size_t moved = 0;
                    for (size_t r = 0; rc == 0 && r < rows; r++) moved += differing_field(&gs[r], &gd[r]) != NULL;
                    CHECK_MSG(rc == 0 && moved == 0,
                              "case %d %s: the tier's device copy of exact gives other summaries on %zu rows (%s)",
                              index, af_tensor_name(id), moved, why);
                    free(gd);
                }
#ifdef ATTNFUZZ_HAVE_CUDA  /* (a build without CUDA has no device allocator: the test skips there) */
                if (ref) { /* the reference's device copy read in place of its upload: the same summaries */
                    void *ref_dev = NULL;
                    af_row_summary *gd = calloc(rows, sizeof *gd);
                    CHECK(gd && af_gpu_malloc(&ref_dev, n * sizeof(double), why, sizeof why) == AF_RUN_OK &&
                          af_gpu_h2d(ref_dev, ref, n * sizeof(double), why, sizeof why) == AF_RUN_OK);
                    rc = af_criterion_row_summaries_gpu(c, id, kernel, ref, (const double *)ref_dev, exact[i], NULL,
                                                        sets[k], dterm, unit, gd, why, sizeof why);
                    size_t moved = 0;
                    for (size_t r = 0; rc == 0 && r < rows; r++) moved += differing_field(&gs[r], &gd[r]) != NULL;
                    CHECK_MSG(rc == 0 && moved == 0,
                              "case %d %s: the reference's device copy gives other summaries on %zu rows (%s)", index,
                              af_tensor_name(id), moved, why);
                    af_gpu_free(ref_dev);
                    free(gd);
                }
#endif
                size_t bad = 0;
                for (size_t r = 0; r < rows; r++) {
                    const char *field = differing_field(&hs[r], &gs[r]);
                    if (field && bad++ == 0)
                        CHECK_MSG(0,
                                  "case %d %s row %zu (%s budgets, %s): field %s differs; device err %.17g el_ratio "
                                  "%.17g, host %.17g %.17g",
                                  index, af_tensor_name(id), r, k ? "uploaded" : "resident", ref ? "ref" : "no ref",
                                  field, gs[r].err, gs[r].el_ratio, hs[r].err, hs[r].el_ratio);
                }
                checked++;
            }
        }
        /* the planted errors reach the element check (the comparison is not of empty rows) */
        double worst = 0;
        for (size_t r = 0; r < rows; r++) worst = fmax(worst, hs[r].el_ratio);
        CHECK_MSG(worst > 1, "case %d %s: a planted error of 2^-5 relative is over its allowance (%.3g)", index,
                  af_tensor_name(id), worst);
        free(hs), free(gs), free(dterm), free(kernel);
    }
    printf("case %d: row summaries with budgets on the device equal the host's bit for bit (%d comparisons, %lld "
           "planted errors)\n",
           index, checked, planted);
}

static void compare_case(const char *text, int index) {
    af_prepared pr;
    af_backend *cpu;
    fx_prepare_any(text, &pr, &cpu);
    af_oracle_problem p;
    int lq[AF_MAX_BATCH], lkv[AF_MAX_BATCH];
    af_problem_from_case(&p, &pr.c, &pr.inputs, lq, lkv);
    af_criterion_terms h, g, g2;
    double gs = 0;
    CHECK(af_criterion_terms_compute_on(&p, &pr.oracle.out, pr.c.dtype, AF_TERMS_HOST, &h, NULL) == 0);
    CHECK(af_criterion_terms_compute_on(&p, &pr.oracle.out, pr.c.dtype, AF_TERMS_GPU, &g, &gs) == 0);
    CHECK(af_criterion_terms_compute_on(&p, &pr.oracle.out, pr.c.dtype, AF_TERMS_GPU, &g2, NULL) == 0);
    /* P and |dS| stay on the device until a host reader asks: ask, as such a reader does */
    CHECK(af_criterion_terms_gpu_host_pds(&g) == 0 && af_criterion_terms_gpu_host_pds(&g2) == 0);
    CHECK(af_criterion_terms_gpu_host_budgets(&g) == 0 && af_criterion_terms_gpu_host_budgets(&g2) == 0);
    same_terms(&p, &h, &g);
    same_bits(&p, &g, &g2);
    if (pr.c.backward && g.prob) { /* the stored O's share of dK from the device copy of P: the host's bits */
        CHECK_MSG(g.dev != NULL, "the GPU pass keeps P on the device");
        double *dk_dev = af_criterion_stored_o_term(&pr.c, AF_T_DK, &g, pr.ref.o);
        struct af_terms_dev *keep = g.dev;
        g.dev = NULL;
        double *dk_host = af_criterion_stored_o_term(&pr.c, AF_T_DK, &g, pr.ref.o);
        g.dev = keep;
        size_t n = (size_t)p.B * p.Hkv * p.Skv * p.Dqk;
        CHECK(dk_dev && dk_host && memcmp(dk_dev, dk_host, n * sizeof(double)) == 0);
        double mx = 0;
        for (size_t e = 0; e < n; e++) mx = fmax(mx, dk_host[e]);
        CHECK_MSG(mx > 0, "the stored O's share of dK is not all zero");
        free(dk_dev);
        free(dk_host);
        printf("case %d: the stored O's share of dK on the device equals the host's bit for bit\n", index);
    }
    rows_case(&pr, &h, &g, index);
    printf("case %d: B%d Hq%d Hkv%d Sq%d Skv%d Dqk%d Dv%d %s: GPU terms equal the host's (%.3f s on the GPU)\n", index,
           p.B, p.Hq, p.Hkv, p.Sq, p.Skv, p.Dqk, p.Dv, pr.c.backward ? "bwd" : "fwd", gs);
    af_criterion_terms_free(&h);
    af_criterion_terms_free(&g);
    af_criterion_terms_free(&g2);
    af_prepared_free(&pr);
    cpu->destroy(cpu);
}

/* Case 3 above: prepared with GPU budgets; judged with them and with the host's. */
static void long_case_check(void) {
    af_prepared pr;
    af_backend *cpu;
    fx_prepare_any(long_case, &pr, &cpu);
    CHECK_MSG(pr.terms.ready && pr.judged.element_terms && pr.judged.terms_gpu,
              "a long case on a GPU gets the element budgets from the GPU pass");
    af_oracle_problem p;
    int lq[AF_MAX_BATCH], lkv[AF_MAX_BATCH];
    af_problem_from_case(&p, &pr.c, &pr.inputs, lq, lkv);
    af_criterion_terms h;
    CHECK(af_criterion_terms_compute_on(&p, &pr.oracle.out, pr.c.dtype, AF_TERMS_HOST, &h, NULL) == 0);
    af_outputs k;
    fx_perfect(&pr, &k);
    af_verdict *v = malloc(sizeof *v);
    CHECK(v);
    double worst_gpu, worst_host;
    /* judged first as the judge does, with the budgets, P and |dS| still on the device only */
    CHECK_MSG(fx_judge(&pr, &k, v, &worst_gpu) == 0, "perfect kernel judged a finding (%.3f)", worst_gpu);
    CHECK(af_criterion_terms_gpu_host_budgets(&pr.terms) == 0 && af_criterion_terms_gpu_host_pds(&pr.terms) == 0);
    same_terms(&p, &h, &pr.terms);
    /* a dQ row 2^-6 off: caught with either set of budgets, at the same ratio */
    size_t row = (size_t)5 * pr.c.seqlen_q + 1500; /* b 0, h 5, i 1500 */
    for (int d = 0; d < pr.c.head_dim_qk; d++) k.dq[row * pr.c.head_dim_qk + d] *= 1.0 + 0x1p-6;
    CHECK(fx_judge(&pr, &k, v, &worst_gpu) > 0);
    bool at_row = false;
    for (int f = 0; f < v->n_findings && f < AF_MAX_FINDINGS; f++)
        at_row |= v->findings[f].tensor == AF_T_DQ && v->findings[f].h == 5 && v->findings[f].row == 1500;
    CHECK_MSG(at_row && v->stats[AF_T_DQ].ratio > 1, "the dQ row 2^-6 off is not a finding at h 5 row 1500");
    double ratio_gpu = v->stats[AF_T_DQ].ratio;
    af_criterion_terms keep = pr.terms;
    pr.terms = h;
    CHECK(fx_judge(&pr, &k, v, &worst_host) > 0);
    double ratio_host = v->stats[AF_T_DQ].ratio;
    pr.terms = keep;
    CHECK_MSG(fabs(ratio_gpu - ratio_host) <= 1e-9 * ratio_host, "dQ ratio %.12g (GPU budgets) vs %.12g (host)",
              ratio_gpu, ratio_host);
    /* 4. the rule's edge with the GPU budgets: one dQ element moved by 0.98 x the largest
     *    error its checks allow passes, by 1.02 x it is a finding at that element */
    af_outputs_free(&k);
    fx_perfect(&pr, &k);
    size_t el = row * pr.c.head_dim_qk + 7; /* h 5, i 1500, d 7 */
    double exact = pr.oracle.out.dq[el], base = k.dq[el];
    /* the worst check's ratio is affine in the moved error (a row's bias carries the other
     * elements' rounding): two moves well above any allowance fix it */
    double step = 0x1p-30; /* doubled until the move is a finding, then once more */
    for (int g = 0; g < 80; g++, step *= 2) {
        k.dq[el] = exact + step;
        if (fx_judge(&pr, &k, v, &worst_gpu) > 0 && v->stats[AF_T_DQ].ratio > 4) break;
    }
    double dx[2] = {step, 2 * step}, rx[2];
    for (int e = 0; e < 2; e++) {
        k.dq[el] = exact + dx[e];
        CHECK(fx_judge(&pr, &k, v, &worst_gpu) > 0);
        rx[e] = v->stats[AF_T_DQ].ratio;
        CHECK_MSG(v->stats[AF_T_DQ].h == 5 && v->stats[AF_T_DQ].row == 1500, "worst dQ element not at h 5 row 1500");
    }
    double slope = (rx[1] - rx[0]) / (dx[1] - dx[0]), at0 = rx[0] - slope * dx[0];
    double edge[2] = {0.98, 1.02}, r_edge[2];
    for (int e = 0; e < 2; e++) {
        k.dq[el] = exact + (edge[e] - at0) / slope;
        int n = fx_judge(&pr, &k, v, &worst_gpu);
        r_edge[e] = v->stats[AF_T_DQ].ratio;
        if (e == 0)
            CHECK_MSG(n == 0, "0.98 x the allowance judged a finding (dQ ratio %.4f)", r_edge[e]);
        else
            CHECK_MSG(n > 0 && v->stats[AF_T_DQ].h == 5 && v->stats[AF_T_DQ].row == 1500 && r_edge[e] > 1,
                      "1.02 x the allowance not caught at h 5 row 1500 (dQ ratio %.4f)", r_edge[e]);
    }
    k.dq[el] = base;
    printf("edge, GPU budgets, dQ element (h 5, i 1500, d 7): 0.98x -> ratio %.4f passes, 1.02x -> ratio %.4f "
           "caught\n",
           r_edge[0], r_edge[1]);
    printf("long case (B1 Hq8 Hkv2 S2100 D32 causal bwd, work %.3g): element budgets from the GPU (%.3f s), equal to "
           "the host's; a perfect kernel passes, a dQ row 2^-6 off is caught at %.3f with either\n",
           af_attention_work(1.0, 1, 8, 2100, 2100, 64), pr.judged.terms_gpu_s, ratio_gpu);
    af_criterion_terms_free(&h);
    af_outputs_free(&k);
    free(v);
    af_prepared_free(&pr);
    cpu->destroy(cpu);
}

int main(void) {
    char why[256];
    if (af_oracle_gpu_usable(why, sizeof why) != 0) {
        printf("SKIP test_criterion_gpu: %s\n", why);
        return CHECK_SKIP_CODE;
    }
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) compare_case(cases[i], i + 1);
    long_case_check();
    printf("worst relative gap GPU vs host over every array: %.3g\n", worst_rel);
    CHECK_DONE("test_criterion_gpu");
}
