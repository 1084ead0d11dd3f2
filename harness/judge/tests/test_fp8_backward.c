/* test_fp8_backward.c — the fp8_e4m3 backward recipe (model/tensors.h, docs/fp8.md)
 * as a specification, through the runner (inputs, oracle, the cpu reference):
 *   - storage: dO, dQ, dK, dV are E4M3; dO's descale maps its largest value to 448;
 *   - scales the harness chooses before the run: scale_dp, scale_dq, scale_dk, scale_dv
 *     are the largest powers of two with 2 * amax * scale <= 448, amax the exact max |dS|
 *     (restated here in fp64, fp8_bwd_exact.h) and max |exact dX| (the oracle's);
 *   - the cpu reference follows the recipe bit for bit: dQ, dK, dV restated here in plain
 *     fp32 (GQA, causal + padding) equal the reference's values exactly;
 *   - the quantisation points are real: the same restatement without the dS cast, or
 *     without the P cast, or with D from an unquantised O, gives other values;
 *   - the reference's gradients are within 2^-1 * max|exact dX| of the oracle on cases
 *     of every served shape kind (masks, sbhd, s_q != s_kv, GQA, outliers), and above
 *     2^-9 * max (the FP8 rounding is visible: the floor of a correct kernel comes from
 *     it); the cpu passes its own criterion on them (err <= 2 err_ref + floor). Most of
 *     that error is D's: D = dO . O uses the E4M3 O of the forward (as cuDNN's graph
 *     does), and with outlier channels it reaches ~0.3 * max; the same recipe with the
 *     exact O in D stays within 2^-3 * max (one E4M3 ulp at the top binade);
 *   - the probes (visibility with garbage in padding rows of E4M3 dO, inclusion,
 *     feature, determinism) find nothing on the cpu's fp8 backward;
 *   - the cpu serves fp8_e4m3 backward (mxfp8's: test_mxfp8_backward.c).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/runner.h"
#include "model/mathf.h"
#include "model/numeric.h"
#include "util/check.h"
#include "judge/tests/fp8_fixture.h"
#include "judge/tests/fp8_bwd_exact.h"

static af_runner runner;

static void prepare(af_prepared *p, const char *text) { f8_prepare(&runner, p, text, "test_fp8_backward", true); }

/* Stored value of input element (b, h, s, d) of tensor id (the E4M3 value, no descale). */
static float stored(const af_prepared *p, af_tensor_id id, int b, int h, int s, int d) {
    const af_tensors *t = &p->tensors;
    const af_tensor_view *v = &t->plan.view[id];
    return (float)af_storage_load(v->storage, t->buf[v->buffer], af_layout_offset(&t->plan, id, b, h, s, d));
}

static bool power_of_two(float x) {
    int e;
    return x > 0 && frexpf(x, &e) == 0.5f;
}

static float e4m3(float x) { return af_e4m3_to_f32(af_f32_to_e4m3(x)); }

/* ---- storage and scales ------------------------------------------------------------- */

static void check_scales(const af_prepared *p) {
    const af_case *c = &p->c;
    const af_tensors *t = &p->tensors;
    for (int id = AF_T_DO; id <= AF_T_DV; id++)
        CHECK_MSG(t->plan.view[id].storage == AF_ST_E4M3, "%s is not E4M3", af_tensor_name((af_tensor_id)id));
    /* dO: per-tensor current scaling, the largest magnitude stored as 448 */
    double dmax = 0;
    const af_tensor_view *dv = &t->plan.view[AF_T_DO];
    for (int b = 0; b < dv->B; b++)
        for (int h = 0; h < dv->H; h++)
            for (int s = 0; s < dv->S; s++)
                for (int d = 0; d < dv->D; d++) dmax = fmax(dmax, fabs(stored(p, AF_T_DO, b, h, s, d)));
    CHECK_MSG(dmax == 448.0, "max stored |dO| = %g", dmax);
    CHECK(t->descale_do > 0 && t->descale_do != 1.0f);
    /* scale_dp from the exact max |dS| (computed here independently), one binade of
     * headroom: the exact max lands in (112, 224] */
    float scale_dp = 1.0f / t->descale_dp;
    CHECK_MSG(power_of_two(t->descale_dp), "descale_dp %g", t->descale_dp);
    double ds_max = fp8_exact_ds_amax(c, &p->inputs, &p->oracle.out);
    CHECK_MSG(ds_max > 0 && 2 * ds_max * scale_dp <= 448.0 && 4 * ds_max * scale_dp > 448.0,
              "exact max|dS| %g scale_dp %g", ds_max, scale_dp);
    /* gradient scales from the exact gradients, one binade of headroom */
    const double *ex[3] = {p->oracle.out.dq, p->oracle.out.dk, p->oracle.out.dv};
    const float desc[3] = {t->descale_dq, t->descale_dk, t->descale_dv};
    for (int k = 0; k < 3; k++) {
        double m = max_abs_rows(c, ex[k], k > 0, k == 2 ? c->head_dim_v : c->head_dim_qk);
        double sc = 1.0 / desc[k];
        CHECK_MSG(power_of_two(desc[k]), "descale %g", desc[k]);
        CHECK_MSG(m > 0 && 2 * m * sc <= 448.0 && 4 * m * sc > 448.0, "grad %d: max %g scale %g", k, m, sc);
    }
    printf("  scales: descale_do %.4g scale_dp %.4g (exact max|dS| %.4g -> %.1f of 448) scale_dq %.4g "
           "scale_dk %.4g scale_dv %.4g\n",
           (double)t->descale_do, (double)scale_dp, ds_max, ds_max * scale_dp, 1.0 / t->descale_dq, 1.0 / t->descale_dk,
           1.0 / t->descale_dv);
}

/* ---- the recipe restated ------------------------------------------------------------- */

typedef struct {
    bool cast_ds, cast_p, quantised_o; /* the recipe's three quantisation points */
} variant;

/* dQ, dK, dV of the recipe (tensors.h) in plain fp32 from the stored values, as logical
 * values (stored E4M3 * descale), dense (B, H, S, D) like af_outputs. O and LSE are the
 * reference's own forward outputs (the backward consumes them). v.quantised_o = false
 * uses the oracle's exact O in D instead of the stored E4M3 O. */
static void restate(const af_prepared *p, variant v, double *dq, double *dk, double *dv) {
    const af_case *c = &p->c;
    const af_tensors *t = &p->tensors;
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv, D = c->head_dim_qk;
    int group = Hq / Hkv;
    CHECK(c->head_dim_v == D); /* small cases only: a plain O(B Hq Sq Skv D) loop */
    float scale = af_case_scale(c), scale_dp = 1.0f / t->descale_dp;
    float scale_dq = 1.0f / t->descale_dq, scale_dk = 1.0f / t->descale_dk, scale_dv = 1.0f / t->descale_dv;
    af_oracle_problem prob;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_problem_from_case(&prob, c, &p->inputs, len_q, len_kv);
    size_t nq = (size_t)c->batch * Hq * Sq * D, nk = (size_t)c->batch * Hkv * Skv * D;
    memset(dq, 0, nq * sizeof *dq);
    memset(dk, 0, nk * sizeof *dk);
    memset(dv, 0, nk * sizeof *dv);
    float *p8 = calloc((size_t)Hq * Sq * Skv, sizeof(float)), *ds8 = calloc((size_t)Hq * Sq * Skv, sizeof(float));
    CHECK(p8 && ds8);
    for (int b = 0; b < c->batch; b++) {
        /* P8 and dS8 of every (head, row, key), 0 where masked: (Hq, Sq, Skv) */
        memset(p8, 0, (size_t)Hq * Sq * Skv * sizeof(float));
        memset(ds8, 0, (size_t)Hq * Sq * Skv * sizeof(float));
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < len_q[b]; i++) {
                af_mask_keys keys;
                if (af_mask_visible_keys(&prob.mask, b, len_q[b], len_kv[b], i, &keys) == 0) continue;
                size_t row = ((size_t)b * Hq + h) * Sq + i;
                float lse = (float)p->ref.lse[row], delta = 0.0f;
                for (int d = 0; d < D; d++) {
                    float o = v.quantised_o ? (float)(p->ref.o[row * D + d] / t->descale_o)
                                            : (float)(p->oracle.out.o[row * D + d] / t->descale_o);
                    delta += stored(p, AF_T_DO, b, h, i, d) * o;
                }
                delta = (delta * t->descale_do) * t->descale_o;
                for (int ks = 0; ks < keys.n; ks++)
                    for (int j = keys.first[ks]; j <= keys.last[ks]; j++) {
                        float s = 0.0f, dp = 0.0f;
                        for (int d = 0; d < D; d++)
                            s += stored(p, AF_T_Q, b, h, i, d) * stored(p, AF_T_K, b, h / group, j, d);
                        s = ((s * scale) * t->descale_q) * t->descale_k;
                        for (int d = 0; d < D; d++)
                            dp += stored(p, AF_T_DO, b, h, i, d) * stored(p, AF_T_V, b, h / group, j, d);
                        dp = (dp * t->descale_do) * t->descale_v;
                        float pr = af_expf(s - lse);
                        float ds = ((dp - delta) * pr) * scale;
                        size_t k = ((size_t)h * Sq + i) * Skv + j;
                        p8[k] = v.cast_p ? e4m3(pr * AF_FP8_SCALE_S) : pr * AF_FP8_SCALE_S;
                        ds8[k] = v.cast_ds ? e4m3(ds * scale_dp) : ds * scale_dp;
                    }
            }
        /* dQ_i = sum_j dS8 k8, j ascending */
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < len_q[b]; i++)
                for (int d = 0; d < D; d++) {
                    float acc = 0.0f;
                    for (int j = 0; j < len_kv[b]; j++)
                        acc += ds8[((size_t)h * Sq + i) * Skv + j] * stored(p, AF_T_K, b, h / group, j, d);
                    float x = ((acc * t->descale_dp) * t->descale_k) * scale_dq;
                    dq[(((size_t)b * Hq + h) * Sq + i) * D + d] = (double)e4m3(x) * t->descale_dq;
                }
        /* dK_j, dV_j: heads of the group ascending, then rows ascending */
        for (int g = 0; g < Hkv; g++)
            for (int j = 0; j < len_kv[b]; j++)
                for (int d = 0; d < D; d++) {
                    float ak = 0.0f, av = 0.0f;
                    for (int h = g * group; h < (g + 1) * group; h++)
                        for (int i = 0; i < len_q[b]; i++) {
                            size_t k = ((size_t)h * Sq + i) * Skv + j;
                            ak += ds8[k] * stored(p, AF_T_Q, b, h, i, d);
                            av += p8[k] * stored(p, AF_T_DO, b, h, i, d);
                        }
                    size_t o = (((size_t)b * Hkv + g) * Skv + j) * D + d;
                    dk[o] = (double)e4m3(((ak * t->descale_dp) * t->descale_q) * scale_dk) * t->descale_dk;
                    dv[o] = (double)e4m3(((av * AF_FP8_DESCALE_S) * t->descale_do) * scale_dv) * t->descale_dv;
                }
    }
    free(p8);
    free(ds8);
}

/* max |a - b| over the valid rows. */
static double max_diff(const af_case *c, const double *a, const double *b, bool kv) {
    int H = kv ? c->heads_kv : c->heads_q, S = kv ? c->seqlen_kv : c->seqlen_q, D = c->head_dim_qk;
    double e = 0;
    for (int bb = 0; bb < c->batch; bb++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < (kv ? af_case_len_kv(c, bb) : af_case_len_q(c, bb)); i++)
                for (int d = 0; d < D; d++) {
                    size_t k = (((size_t)bb * H + h) * S + i) * D + d;
                    e = fmax(e, fabs(a[k] - b[k]));
                }
    return e;
}

/* Elements of the valid rows where a and b differ. */
static long long differ(const af_case *c, const double *a, const double *b, bool kv) {
    int H = kv ? c->heads_kv : c->heads_q, S = kv ? c->seqlen_kv : c->seqlen_q, D = c->head_dim_qk;
    long long n = 0;
    for (int bb = 0; bb < c->batch; bb++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < (kv ? af_case_len_kv(c, bb) : af_case_len_q(c, bb)); i++)
                for (int d = 0; d < D; d++) {
                    size_t k = (((size_t)bb * H + h) * S + i) * D + d;
                    n += !(a[k] == b[k]);
                }
    return n;
}

static void test_recipe_bit_for_bit(void) {
    static const char *const cases[] = {
        "dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 24\nseqlen_kv = 40\nseqlens_q = 24,11\n"
        "seqlens_kv = 40,29\nhead_dim = 16\nmask = padding_causal\nlayout = sbhd\nbackward = yes\nseed = 71\n",
        "dtype = fp8_e4m3\nheads = 2\nseqlen = 32\nhead_dim = 32\nmask = none\nbackward = yes\nseed = 72\n"
        "data = normal:1 outlier_channels:2:8\n",
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        af_prepared p;
        prepare(&p, cases[ci]);
        const af_case *c = &p.c;
        printf("recipe case %zu:\n", ci);
        check_scales(&p);
        size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q * c->head_dim_qk;
        size_t nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv * c->head_dim_qk;
        double *dq = malloc(nq * sizeof *dq), *dk = malloc(nk * sizeof *dk), *dv = malloc(nk * sizeof *dv);
        CHECK(dq && dk && dv);
        restate(&p, (variant){true, true, true}, dq, dk, dv);
        long long bq = differ(c, dq, p.ref.dq, false), bk = differ(c, dk, p.ref.dk, true),
                  bv = differ(c, dv, p.ref.dv, true);
        CHECK_MSG(bq == 0 && bk == 0 && bv == 0,
                  "case %zu: the reference differs from the recipe: dQ %lld dK %lld dV %lld", ci, bq, bk, bv);
        /* each quantisation point changes the result */
        restate(&p, (variant){false, true, true}, dq, dk, dv);
        long long no_ds_q = differ(c, dq, p.ref.dq, false), no_ds_k = differ(c, dk, p.ref.dk, true);
        CHECK_MSG(no_ds_q > 0 && no_ds_k > 0, "case %zu: dS cast invisible (dQ %lld dK %lld)", ci, no_ds_q, no_ds_k);
        CHECK_MSG(differ(c, dv, p.ref.dv, true) == 0, "case %zu: dV must not depend on the dS cast", ci);
        restate(&p, (variant){true, false, true}, dq, dk, dv);
        long long no_p = differ(c, dv, p.ref.dv, true);
        CHECK_MSG(no_p > 0, "case %zu: P cast invisible in dV", ci);
        restate(&p, (variant){true, true, false}, dq, dk, dv);
        long long exact_o = differ(c, dq, p.ref.dq, false);
        CHECK_MSG(exact_o > 0, "case %zu: D from an unquantised O gives the same dQ", ci);
        printf("  bit for bit; without the dS cast %lld dQ / %lld dK values differ, without the P cast %lld dV, "
               "with an exact O in D %lld dQ\n",
               no_ds_q, no_ds_k, no_p, exact_o);
        free(dq);
        free(dk);
        free(dv);
        af_prepared_free(&p);
    }
}

/* ---- the reference against the oracle ------------------------------------------------ */

static void test_reference_error(void) {
    static const char *const cases[] = {
        "dtype = fp8_e4m3\nbatch = 2\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal\nbackward = yes\nseed = "
        "81\n",
        "dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen_q = 64\nseqlen_kv = 160\nhead_dim = 64\nlayout = sbhd\n"
        "backward = yes\nseed = 82\n",
        "dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 1\nseqlen = 96\nseqlens_q = 96,50\nseqlens_kv = 70,96\n"
        "head_dim = 32\nmask = padding_causal\nbackward = yes\nseed = 83\ndata = normal:1 outlier_channels:2:20\n",
        "dtype = fp8_e4m3\nbatch = 1\nheads = 1\nseqlen = 200\nhead_dim = 48\nmask = padding\nseqlens_q = 180\n"
        "seqlens_kv = 200\nbackward = yes\nseed = 84\ndata = uniform:0.05\n",
    };
    af_backend *cpu = runner.reference;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        af_prepared p;
        prepare(&p, cases[ci]);
        const af_case *c = &p.c;
        printf("reference case %zu:\n", ci);
        check_scales(&p);
        af_verdict v;
        af_judge(&runner, &p, cpu, "", &v, NULL);
        CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "case %zu: the cpu fails its own criterion: %s", ci,
                  af_verdict_name(v.kind));
        static const af_tensor_id ids[3] = {AF_T_DQ, AF_T_DK, AF_T_DV};
        const double *ex[3] = {p.oracle.out.dq, p.oracle.out.dk, p.oracle.out.dv};
        size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q * c->head_dim_qk;
        size_t nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv * c->head_dim_qk;
        double *g[3] = {malloc(nq * sizeof(double)), malloc(nk * sizeof(double)), malloc(nk * sizeof(double))};
        CHECK(g[0] && g[1] && g[2]);
        restate(&p, (variant){true, true, false}, g[0], g[1], g[2]); /* D from the exact O */
        for (int k = 0; k < 3; k++) {
            double m = max_abs_rows(c, ex[k], k > 0, k == 2 ? c->head_dim_v : c->head_dim_qk);
            double e = v.stats[ids[k]].err_ref, e_exact_o = max_diff(c, g[k], ex[k], k > 0);
            printf("  %s: err_ref %.4g = %.4f of max|exact| %.4g (floor %.4g); with the exact O in D %.4f\n",
                   af_tensor_name(ids[k]), e, e / m, m, v.stats[ids[k]].floor, e_exact_o / m);
            CHECK_MSG(e <= 0x1p-1 * m, "case %zu %s: reference error %g above 2^-1 * %g", ci, af_tensor_name(ids[k]), e,
                      m);
            CHECK_MSG(e >= 0x1p-9 * m, "case %zu %s: reference error %g: no FP8 rounding visible", ci,
                      af_tensor_name(ids[k]), e);
            CHECK_MSG(e_exact_o <= 0x1p-3 * m, "case %zu %s: recipe error with the exact O in D %g above 2^-3 * %g", ci,
                      af_tensor_name(ids[k]), e_exact_o, m);
            free(g[k]);
        }
        af_prepared_free(&p);
    }
}

static void test_probes(void) {
    af_runner pr = runner;
    pr.probes = true;
    af_probe_opts_default(&pr.probe_opts);
    static const char *const cases[] = {
        "dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 48\nseqlens_q = 48,30\nseqlens_kv = 40,48\n"
        "head_dim = 32\nmask = padding_causal\nbackward = yes\nseed = 91\n",
        "dtype = fp8_e4m3\nheads = 2\nseqlen_q = 32\nseqlen_kv = 64\nhead_dim = 16\nlayout = sbhd\nbackward = yes\n"
        "seed = 92\n",
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        af_prepared p;
        prepare(&p, cases[ci]);
        af_verdict v;
        af_judge(&pr, &p, pr.reference, "", &v, NULL);
        char line[600];
        af_verdict_line(&v, line, sizeof line);
        CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "probes case %zu: %s", ci, line);
        af_prepared_free(&p);
    }
}

static void test_declines(void) {
    af_backend *cpu = runner.reference;
    af_case c;
    af_error e;
    char why[256] = "";
    CHECK(af_case_parse("dtype = fp8_e4m3\nbackward = yes\n", "t", &c, &e) == 0);
    CHECK(cpu->supports(cpu, &c, why, sizeof why) == AF_RUN_OK);
}

int main(void) {
    f8_runner_open(&runner);
    test_declines();
    test_recipe_bit_for_bit();
    test_reference_error();
    test_probes();
    f8_runner_close(&runner);
    CHECK_DONE("test_fp8_backward");
}
