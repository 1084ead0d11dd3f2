/* test_oracle_gpu.c — the GPU fp64 oracle tier against the MPFR tier, element by element,
 * within its stated bound; against the CPU fp64 tier; certification fields of
 * af_oracle_run(tier GPU); GPU magnitude passes against the host ones.
 *
 * Cases: every mask kind (none, causal top-left / bottom-right, windows), padding, GQA /
 * MQA, Dqk != Dv (all three kernel widths 64 / 128 / 256), fully masked rows, zero-length
 * sequences, large scores, a score ramp that makes the online softmax rescale, lengths
 * across the 16/32-row and 32-key tiles, and 60 random small problems.
 * Without a GPU (or a CUDA build) it prints SKIP with the reason and exits 77.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oracle/gpu/oracle_gpu.h"
#include "oracle/src/oracle_internal.h"
#include "oracle/tests/oracle_testlib.h"

static double g_worst_mpfr = 0.0, g_worst_cpu = 0.0;

/* n doubles of a kept device array equal host's bit for bit (NaN and signed zeros too). */
static void check_kept(const double *dev, const double *host, size_t n, const char *what) {
    CHECK_MSG(dev != NULL, "kept %s missing", what);
    if (!dev || !n) return;
    double *back = malloc(n * sizeof *back);
    char why[512] = "";
    CHECK(back != NULL);
    CHECK_MSG(af_oracle_gpu_fetch(back, dev, n, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(memcmp(back, host, n * sizeof *back) == 0, "kept %s differs from the host copy", what);
    free(back);
}

/* GPU tier straight from af_oracle_gpu_run (no MPFR replacement), with the magnitudes of
 * its own passes: score_abs (B,Hq,Sq) into `score_abs`, the gradients' into *grad; its
 * kept device copies (inputs and outputs) equal the problem's inputs and the host
 * outputs bit for bit. */
static void gpu_tier(const test_problem *t, af_oracle_result *g, double *lse64, double *drow64, double *score_abs,
                     af_grad_magnitudes *grad) {
    af_oracle_result tmp;
    test_run(t, AF_ORACLE_FP64, 128, 2, &tmp); /* allocates outputs of the right shapes */
    *g = tmp;
    char why[512] = "";
    af_oracle_gpu_stats st;
    af_oracle_gpu_mags mags = {score_abs, grad};
    af_oracle_gpu_kept *kept = NULL;
    CHECK_MSG(af_oracle_gpu_run(&t->p, &g->out, lse64, drow64, &mags, &kept, &st, why, sizeof why) == 0, "%s", why);
    CHECK(st.peak_bytes > 0);
    CHECK(kept != NULL && kept->bytes > 0);
    if (!kept) return;
    const af_oracle_problem *p = &t->p;
    size_t rows = test_rows(t), keys = test_keys(t);
    check_kept(kept->in.q, t->in.q, rows * p->Dqk, "q");
    check_kept(kept->in.k, t->in.k, keys * p->Dqk, "k");
    check_kept(kept->in.v, t->in.v, keys * p->Dv, "v");
    check_kept(kept->out.o, g->out.o, rows * p->Dv, "O");
    check_kept(kept->out.lse, g->out.lse, rows, "LSE");
    if (t->in.dout) {
        check_kept(kept->in.dout, t->in.dout, rows * p->Dv, "dO");
        check_kept(kept->out.dq, g->out.dq, rows * p->Dqk, "dQ");
        check_kept(kept->out.dk, g->out.dk, keys * p->Dqk, "dK");
        check_kept(kept->out.dv, g->out.dv, keys * p->Dv, "dV");
    } else {
        CHECK(kept->in.dout == NULL && kept->out.dq == NULL);
    }
    af_oracle_gpu_kept_free(kept);
}

/* The magnitudes of the value passes (mode 2) are those of the magnitude passes (mode 1)
 * over the same O and LSE: the same chains, bit for bit. */
static void check_fused_magnitudes(const test_problem *t, const af_oracle_result *g, const double *fused_sa,
                                   const af_grad_magnitudes *fused, const char *name) {
    size_t rows = test_rows(t);
    char why[512] = "";
    double *sa = malloc((rows ? rows : 1) * sizeof *sa);
    CHECK(sa != NULL);
    CHECK_MSG(af_oracle_gpu_score_abs(&t->p, sa, why, sizeof why) == 0, "%s", why);
    for (size_t x = 0; x < rows; x++)
        CHECK_MSG(sa[x] == fused_sa[x], "%s: fused score_abs %zu: %.17g vs %.17g", name, x, fused_sa[x], sa[x]);
    free(sa);
    af_grad_magnitudes sep;
    CHECK_MSG(af_oracle_gpu_grad_abs(&t->p, &g->out, &sep, why, sizeof why) == 0, "%s", why);
    if (!t->in.dout) return;
    CHECK_MSG(sep.dq == fused->dq && sep.dk == fused->dk && sep.dv == fused->dv && sep.ds_max == fused->ds_max,
              "%s: fused grad magnitudes %.17g %.17g %.17g %.17g, separate passes %.17g %.17g %.17g %.17g", name,
              fused->dq, fused->dk, fused->dv, fused->ds_max, sep.dq, sep.dk, sep.dv, sep.ds_max);
}

/* sigma as oracle.c states it: 1.01 |scale| max ||q|| max ||k|| */
static double sigma_of(const test_problem *t) {
    const af_oracle_problem *p = &t->p;
    double qn = 0, kn = 0;
    for (size_t r = 0; r < test_rows(t); r++) {
        double s = 0;
        for (int d = 0; d < p->Dqk; d++) s += t->in.q[r * p->Dqk + d] * t->in.q[r * p->Dqk + d];
        qn = fmax(qn, s);
    }
    for (size_t r = 0; r < test_keys(t); r++) {
        double s = 0;
        for (int d = 0; d < p->Dqk; d++) s += t->in.k[r * p->Dqk + d] * t->in.k[r * p->Dqk + d];
        kn = fmax(kn, s);
    }
    return 1.01 * fabs(p->scale) * sqrt(qn) * sqrt(kn);
}

/* |g - m| <= bound_rel |g| + 2^-53 |m| + abs M for every element; returns the worst ratio. */
static double compare_to_mpfr(const test_problem *t, const af_oracle_result *g, const af_oracle_result *m,
                              const double *lse64, const char *name) {
    const af_oracle_problem *p = &t->p;
    double abs_scale = af_oracle_gpu_bound_abs(p, sigma_of(t)) + 1e-30;
    double rel = 4.0 * 0x1p-53, worst = 0.0;
    int dim = p->Dqk > p->Dv ? p->Dqk : p->Dv;
    double *ma = malloc((size_t)dim * sizeof *ma), *mb = malloc((size_t)dim * sizeof *mb);
    double *scratch = malloc((size_t)(p->Skv > p->Dv ? p->Skv : p->Dv) * sizeof *scratch);
    CHECK(ma && mb && scratch);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->Sq; i++) {
                size_t row = af_idx_row(p, b, h, i);
                if (i >= p->len_q[b]) {
                    CHECK_MSG(g->out.lse[row] == 0.0, "%s: padding row LSE", name);
                    for (int d = 0; d < p->Dv; d++) CHECK(g->out.o[row * p->Dv + d] == 0.0);
                    continue;
                }
                double uf[2]; /* O, dQ */
                af_cert_row_mass(p, b, h, i, m->out.lse[row], ma, mb, uf, scratch);
                double one = 1.0, r;
                r = af_cert_ratio(&g->out.lse[row], &m->out.lse[row], 1, &one, rel, abs_scale, 0.0);
                CHECK_MSG(r <= 1.0, "%s: LSE (%d,%d,%d) gpu %.17g mpfr %.17g ratio %g", name, b, h, i, g->out.lse[row],
                          m->out.lse[row], r);
                worst = fmax(worst, r);
                r = af_cert_ratio(g->out.o + row * p->Dv, m->out.o + row * p->Dv, p->Dv, ma, rel, abs_scale, uf[0]);
                CHECK_MSG(r <= 1.0, "%s: O row (%d,%d,%d) ratio %g", name, b, h, i, r);
                worst = fmax(worst, r);
                if (g->out.dq) {
                    r = af_cert_ratio(g->out.dq + row * p->Dqk, m->out.dq + row * p->Dqk, p->Dqk, mb, rel, abs_scale,
                                      uf[1]);
                    CHECK_MSG(r <= 1.0, "%s: dQ row (%d,%d,%d) ratio %g", name, b, h, i, r);
                    worst = fmax(worst, r);
                }
            }
    if (g->out.dk)
        for (int b = 0; b < p->B; b++)
            for (int h = 0; h < p->Hkv; h++)
                for (int j = 0; j < p->Skv; j++) {
                    size_t key = af_idx_key(p, b, h, j);
                    double uf[2]; /* dK, dV */
                    af_cert_key_mass(p, lse64, b, h, j, ma, mb, uf, scratch);
                    double r = af_cert_ratio(g->out.dk + key * p->Dqk, m->out.dk + key * p->Dqk, p->Dqk, ma, rel,
                                             abs_scale, uf[0]);
                    CHECK_MSG(r <= 1.0, "%s: dK key (%d,%d,%d) ratio %g", name, b, h, j, r);
                    worst = fmax(worst, r);
                    r = af_cert_ratio(g->out.dv + key * p->Dv, m->out.dv + key * p->Dv, p->Dv, mb, rel, abs_scale,
                                      uf[1]);
                    CHECK_MSG(r <= 1.0, "%s: dV key (%d,%d,%d) ratio %g", name, b, h, j, r);
                    worst = fmax(worst, r);
                }
    free(ma), free(mb), free(scratch);
    return worst;
}

static void check_case(test_problem *t, const char *name) {
    size_t rows = test_rows(t);
    double *lse64 = malloc((rows ? rows : 1) * sizeof *lse64), *drow64 = calloc(rows ? rows : 1, sizeof *drow64);
    CHECK(lse64 && drow64);
    af_oracle_result g, m, c;
    double *fused_sa = malloc((rows ? rows : 1) * sizeof *fused_sa);
    af_grad_magnitudes fused;
    CHECK(fused_sa != NULL);
    gpu_tier(t, &g, lse64, drow64, fused_sa, &fused);
    check_fused_magnitudes(t, &g, fused_sa, &fused, name);
    test_run(t, AF_ORACLE_MPFR, 128, 2, &m);
    test_run(t, AF_ORACLE_FP64, 128, 2, &c);
    double w = compare_to_mpfr(t, &g, &m, lse64, name);
    if (w > g_worst_mpfr) g_worst_mpfr = w;
    /* against the CPU fp64 tier: both within their bounds of the exact values */
    test_masses ms = test_crude_masses(t);
    double sigma = sigma_of(t);
    double tol = af_oracle_gpu_bound_abs(&t->p, sigma) + 64.0 * (1 + sigma + log((double)t->p.Skv)) * 0x1p-53;
    double r = test_bound_ratio(g.out.o, c.out.o, rows * t->p.Dv, 0, tol, ms.o);
    if (t->in.dout) {
        r = fmax(r, test_bound_ratio(g.out.dq, c.out.dq, rows * t->p.Dqk, 0, tol, ms.dq));
        r = fmax(r, test_bound_ratio(g.out.dk, c.out.dk, test_keys(t) * t->p.Dqk, 0, tol, ms.dk));
        r = fmax(r, test_bound_ratio(g.out.dv, c.out.dv, test_keys(t) * t->p.Dv, 0, tol, ms.dv));
    }
    for (size_t x = 0; x < rows; x++) {
        if (isinf(c.out.lse[x]))
            CHECK_MSG(g.out.lse[x] == c.out.lse[x], "%s: LSE -inf row %zu", name, x);
        else
            CHECK_MSG(fabs(g.out.lse[x] - c.out.lse[x]) <= tol + 1e-15 * fabs(c.out.lse[x]), "%s: LSE %zu", name, x);
    }
    CHECK_MSG(r <= 1.0, "%s: GPU vs CPU fp64 ratio %g", name, r);
    if (r > g_worst_cpu) g_worst_cpu = r;
    /* the tier through af_oracle_run: certified by MPFR */
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = AF_ORACLE_GPU;
    o.threads = 2;
    o.gpu_magnitudes = AF_ORACLE_MAG_SCORE_ABS | AF_ORACLE_MAG_GRAD;
    af_oracle_result a;
    char why[512] = "";
    CHECK_MSG(af_oracle_run(&t->p, &o, &a, why, sizeof why) == 0, "%s: %s", name, why);
    CHECK_MSG(a.tier_used == AF_ORACLE_GPU && a.note[0] == 0, "%s: tier %d note %s", name, (int)a.tier_used, a.note);
    /* the magnitudes asked for: filled from the tier's passes, those of af_oracle_gpu_run */
    unsigned want = AF_ORACLE_MAG_SCORE_ABS | (t->in.dout ? AF_ORACLE_MAG_GRAD : 0u);
    CHECK_MSG(a.magnitudes == want && a.score_abs, "%s: magnitudes %u", name, a.magnitudes);
    for (size_t x = 0; a.score_abs && x < rows; x++) CHECK(a.score_abs[x] == fused_sa[x]);
    if (t->in.dout)
        CHECK_MSG(a.grad.dq == fused.dq && a.grad.dk == fused.dk && a.grad.dv == fused.dv &&
                      a.grad.ds_max == fused.ds_max,
                  "%s: af_oracle_run's grad magnitudes", name);
    int valid_rows = 0;
    for (int b = 0; b < t->p.B; b++) valid_rows += t->p.len_q[b];
    CHECK_MSG(valid_rows == 0 || a.cert_rows > 0, "%s: no certified rows", name);
    CHECK_MSG(a.cert_gap_over_bound <= 1.0, "%s: gap/bound %g", name, a.cert_gap_over_bound);
    CHECK(a.bound_rel == 4.0 * 0x1p-53 && a.bound_abs_scale > 0 && a.gpu_seconds > 0);
    /* gpu_keep without a pipelined certification keeps nothing (MPFR's rows replace
     * the tier's on the host, so device copies would differ) */
    CHECK_MSG(a.gpu_kept == NULL && a.out.dev == NULL, "%s: kept without a pipeline", name);
    af_oracle_result_free(&a);
    /* pipelined with gpu_keep: the device copies equal the host outputs the
     * certification leaves (the sampled rows keep the fp64 values), after it too */
    o.gpu_keep = true;
    af_oracle_cert *pending = NULL;
    CHECK_MSG(af_oracle_run_pipelined(&t->p, &o, &a, &pending, why, sizeof why) == 0, "%s: %s", name, why);
    double cert_s = 0;
    CHECK_MSG(af_oracle_cert_finish(pending, &a, &cert_s, why, sizeof why) == 0, "%s: %s", name, why);
    CHECK_MSG(a.gpu_kept != NULL && a.out.dev == &a.gpu_kept->out, "%s: nothing kept", name);
    if (a.gpu_kept) {
        check_kept(a.out.dev->o, a.out.o, rows * t->p.Dv, "pipelined O");
        check_kept(a.out.dev->lse, a.out.lse, rows, "pipelined LSE");
        if (t->in.dout) {
            check_kept(a.out.dev->dq, a.out.dq, rows * t->p.Dqk, "pipelined dQ");
            check_kept(a.out.dev->dk, a.out.dk, test_keys(t) * t->p.Dqk, "pipelined dK");
            check_kept(a.out.dev->dv, a.out.dv, test_keys(t) * t->p.Dv, "pipelined dV");
        }
    }
    af_oracle_result_free(&a);
    CHECK(a.gpu_kept == NULL);
    /* magnitude passes: GPU against the host ones (small cases run on the host) */
    double *sa = malloc((rows ? rows : 1) * sizeof *sa), *sh = malloc((rows ? rows : 1) * sizeof *sh);
    CHECK(sa && sh);
    CHECK_MSG(af_oracle_gpu_score_abs(&t->p, sa, why, sizeof why) == 0, "%s", why);
    af_oracle_score_abs(&t->p, sh);
    for (size_t x = 0; x < rows; x++)
        CHECK_MSG(fabs(sa[x] - sh[x]) <= 1e-12 * fabs(sh[x]), "%s: score_abs %zu: %g vs %g", name, x, sa[x], sh[x]);
    if (t->in.dout) {
        af_grad_magnitudes gg, gh;
        CHECK_MSG(af_oracle_gpu_grad_abs(&t->p, &m.out, &gg, why, sizeof why) == 0, "%s", why);
        af_oracle_grad_abs(&t->p, &m.out, &gh);
        /* scores from an fma chain vs mul + add: exp(s - LSE) moves by ~ Dqk u |s| */
        double tol = 1e-12 + 4.0 * t->p.Dqk * 0x1p-53 * (1.0 + sigma);
        CHECK_MSG(fabs(gg.dq - gh.dq) <= tol * gh.dq && fabs(gg.dk - gh.dk) <= tol * gh.dk &&
                      fabs(gg.dv - gh.dv) <= tol * gh.dv && fabs(gg.ds_max - gh.ds_max) <= tol * gh.ds_max,
                  "%s: grad_abs gpu %g %g %g %g host %g %g %g %g", name, gg.dq, gg.dk, gg.dv, gg.ds_max, gh.dq, gh.dk,
                  gh.dv, gh.ds_max);
    }
    free(sa), free(sh), free(lse64), free(drow64), free(fused_sa);
    af_oracle_result_free(&g);
    af_oracle_result_free(&m);
    af_oracle_result_free(&c);
}

static void shaped(const char *name, test_shape s, uint64_t seed, double spread, const int *lq, const int *lkv) {
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, seed, spread);
    if (lq)
        for (int b = 0; b < s.B; b++) t.len_q[b] = lq[b], t.len_kv[b] = lkv[b];
    check_case(&t, name);
    test_problem_free(&t);
}

/* Every case once, on the kernels ATTNFUZZ_ORACLE_GPU_MMA selects. */
static void all_cases(void) {
    /*                                 B Hq Hkv Sq Skv Dqk Dv causal br  L   R  bwd scale */
    shaped("none", (test_shape){1, 2, 2, 40, 70, 16, 16, false, false, -1, -1, true, 0}, 1, 1, NULL, NULL);
    shaped("causal", (test_shape){2, 2, 1, 70, 70, 32, 24, true, false, -1, -1, true, 0}, 2, 1, NULL, NULL);
    shaped("causal_br sq<skv", (test_shape){1, 3, 1, 33, 100, 8, 40, true, true, -1, -1, true, 0}, 3, 1, NULL, NULL);
    shaped("causal_br sq>skv (masked rows)", (test_shape){1, 2, 2, 90, 40, 16, 16, true, true, -1, -1, true, 0}, 4, 1,
           NULL, NULL);
    shaped("window 5,0", (test_shape){1, 2, 1, 64, 64, 16, 8, false, false, 5, 0, true, 0}, 5, 1, NULL, NULL);
    shaped("window 0,3 br", (test_shape){1, 2, 2, 50, 77, 16, 16, false, true, 0, 3, true, 0}, 6, 1, NULL, NULL);
    shaped("window 40,-1 causal", (test_shape){1, 1, 1, 130, 130, 8, 8, true, false, 40, -1, true, 0}, 7, 1, NULL,
           NULL);
    int lq[3] = {0, 17, 50}, lkv[3] = {30, 0, 45};
    shaped("padding + len 0", (test_shape){3, 2, 1, 50, 60, 16, 16, true, true, -1, -1, true, 0}, 8, 1, lq, lkv);
    shaped("MQA Dqk 100 Dv 200", (test_shape){1, 4, 1, 35, 45, 100, 200, true, false, -1, -1, true, 0}, 9, 1, NULL,
           NULL);
    shaped("Dqk 256 Dv 130", (test_shape){1, 2, 2, 20, 33, 256, 130, false, false, -1, -1, true, 0}, 10, 1, NULL, NULL);
    shaped("Dqk 128 Dv 128 fwd", (test_shape){1, 2, 1, 65, 97, 128, 128, true, false, -1, -1, false, 0}, 11, 1, NULL,
           NULL);
    shaped("large scores", (test_shape){1, 2, 1, 40, 70, 8, 8, false, false, -1, -1, true, 0}, 12, 16, NULL, NULL);
    /* a score ramp: s_j = j, the online softmax moves its reference maximum */
    {
        test_shape s = {1, 1, 1, 3, 300, 16, 8, false, false, -1, -1, true, 0.25};
        test_problem t;
        test_problem_init(&t, &s);
        test_problem_randomize(&t, 13, 1);
        for (int i = 0; i < 3; i++)
            for (int d = 0; d < 16; d++) t.in.q[i * 16 + d] = 1.0;
        for (int j = 0; j < 300; j++)
            for (int d = 0; d < 16; d++) t.in.k[j * 16 + d] = (double)j / 4.0;
        check_case(&t, "score ramp");
        test_problem_free(&t);
    }
    for (int k = 0; k < 60; k++) {
        test_problem t;
        test_problem_random(&t, 1000 + (uint64_t)k);
        char name[64];
        snprintf(name, sizeof name, "random %d", k);
        check_case(&t, name);
        test_problem_free(&t);
    }
}

int main(void) {
    char why[256];
    if (af_oracle_gpu_usable(why, sizeof why) != 0) {
        printf("SKIP test_oracle_gpu: %s\n", why);
        return CHECK_SKIP_CODE;
    }
    /* the tile products as fma chains on the CUDA cores, then on the fp64 tensor cores
     * (DMAX 256 runs the chains in both) */
    const char *path[3] = {"fma chains (ATTNFUZZ_ORACLE_GPU_MMA=0)", "tensor cores m8n8k4 (ATTNFUZZ_ORACLE_GPU_MMA=1)",
                           "tensor cores m16n8k4 (ATTNFUZZ_ORACLE_GPU_MMA=2)"};
    const char *value[3] = {"0", "1", "2"};
    for (int k = 0; k < 3; k++) {
        setenv("ATTNFUZZ_ORACLE_GPU_MMA", value[k], 1);
        g_worst_mpfr = g_worst_cpu = 0.0;
        all_cases();
        printf("%s: worst GPU-vs-MPFR gap / stated bound %.3g; GPU vs CPU fp64 within %.3g of both bounds\n", path[k],
               g_worst_mpfr, g_worst_cpu);
    }
    CHECK_DONE("test_oracle_gpu");
}
