/* test_fp8_e5m2.c — the fp8_e5m2 dtype (model/tensors.h, docs/fp8.md) as a
 * specification, through the runner (inputs, oracle, criterion, the cpu reference):
 *   - storage: Q, K, V, O, dO, dQ, dK, dV are E5M2; each input's descale maps its
 *     largest magnitude to 57344 (E5M2's largest finite, not E4M3's 448), and the
 *     inputs the oracle reads are the stored E5M2 values times that descale;
 *   - the oracle's O and LSE equal a brute-force fp64 attention of those inputs;
 *   - the cpu reference passes its own criterion forward and backward (GQA, causal,
 *     outliers), with E5M2's rounding visible in its O error (above 2^-4 of the largest
 *     |O|: more than half an E4M3 unit, which E4M3 outputs would not reach);
 *   - the criterion is E5M2's: on one O row, an error at 0.98 x the row's allowance
 *     passes and at 1.02 x is a mismatch at that row; the allowance holds E5M2's unit
 *     (2^-2 at the row's largest |O|), so an error of 1.5 E4M3 units passes.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/compare.h"
#include "judge/runner.h"
#include "model/numeric.h"
#include "util/check.h"
#include "judge/tests/fp8_fixture.h"

#include "judge/tests/criterion_fixture.h"

static af_runner runner;

static void prepare(af_prepared *p, const char *text) { f8_prepare(&runner, p, text, "test_fp8_e5m2", false); }

/* ---- storage and scales ------------------------------------------------------------- */

static void check_storage(const af_prepared *p) {
    const af_case *c = &p->c;
    const af_tensors *t = &p->tensors;
    for (int id = 0; id < AF_T_COUNT; id++) {
        if (id == AF_T_LSE || (!c->backward && id >= AF_T_DO)) continue;
        CHECK_MSG(t->plan.view[id].storage == AF_ST_E5M2, "%s is not E5M2", af_tensor_name((af_tensor_id)id));
    }
    const af_tensor_id ins[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    const double *dense[4] = {p->inputs.q, p->inputs.k, p->inputs.v, p->inputs.dout};
    const float descale[4] = {t->descale_q, t->descale_k, t->descale_v, t->descale_do};
    for (int i = 0; i < (c->backward ? 4 : 3); i++) {
        const af_tensor_view *v = &t->plan.view[ins[i]];
        double smax = 0;
        for (int b = 0; b < v->B; b++)
            for (int h = 0; h < v->H; h++)
                for (int s = 0; s < v->S; s++)
                    for (int d = 0; d < v->D; d++) {
                        int64_t off = af_layout_offset(&t->plan, ins[i], b, h, s, d);
                        uint8_t byte = ((const uint8_t *)t->buf[v->buffer])[off];
                        double x = (double)af_e5m2_to_f32(byte);
                        smax = fmax(smax, fabs(x));
                        double logical = dense[i][(((int64_t)b * v->H + h) * v->S + s) * v->D + d];
                        CHECK_MSG(logical == x * descale[i], "%s[%d,%d,%d,%d]: dense %g, stored %g x descale %g",
                                  af_tensor_name(ins[i]), b, h, s, d, logical, x, (double)descale[i]);
                    }
        CHECK_MSG(smax == 57344.0, "%s: largest stored |value| %g, expected E5M2's 57344", af_tensor_name(ins[i]),
                  smax);
    }
}

/* ---- the oracle against brute force ------------------------------------------------- */

/* fp64 attention of the dense inputs, causal top-left, equal lengths: O (B,H,S,D), LSE. */
static void brute_force(const af_case *c, const af_inputs *in, double *o, double *lse) {
    int B = c->batch, Hq = c->heads_q, Hkv = c->heads_kv, S = c->seqlen_q, D = c->head_dim_qk, Dv = c->head_dim_v;
    double scale = (double)af_case_scale(c);
    double *w = malloc((size_t)S * sizeof(double));
    CHECK(w != NULL);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h++) {
            int hk = h / (Hq / Hkv);
            for (int i = 0; i < S; i++) {
                const double *q = in->q + (((int64_t)b * Hq + h) * S + i) * D;
                double m = -INFINITY;
                for (int j = 0; j <= i; j++) {
                    const double *k = in->k + (((int64_t)b * Hkv + hk) * S + j) * D;
                    double s = 0;
                    for (int d = 0; d < D; d++) s += q[d] * k[d];
                    w[j] = s * scale;
                    m = fmax(m, w[j]);
                }
                double z = 0;
                for (int j = 0; j <= i; j++) z += exp(w[j] - m);
                lse[((int64_t)b * Hq + h) * S + i] = m + log(z);
                double *out = o + (((int64_t)b * Hq + h) * S + i) * Dv;
                for (int d = 0; d < Dv; d++) out[d] = 0;
                for (int j = 0; j <= i; j++) {
                    const double *v = in->v + (((int64_t)b * Hkv + hk) * S + j) * Dv;
                    double pj = exp(w[j] - m) / z;
                    for (int d = 0; d < Dv; d++) out[d] += pj * v[d];
                }
            }
        }
    free(w);
}

static void test_oracle(void) {
    af_prepared p;
    prepare(&p, "dtype = fp8_e5m2\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 24\nhead_dim = 16\nmask = causal\n"
                "seed = 31\ndata = normal:1 outlier_channels:2:30\n");
    check_storage(&p);
    const af_case *c = &p.c;
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q;
    double *o = malloc(nq * c->head_dim_v * sizeof(double)), *lse = malloc(nq * sizeof(double));
    CHECK(o && lse);
    brute_force(c, &p.inputs, o, lse);
    double omax = 0, oerr = 0, lerr = 0;
    for (size_t e = 0; e < nq * c->head_dim_v; e++) {
        omax = fmax(omax, fabs(o[e]));
        oerr = fmax(oerr, fabs(o[e] - p.oracle.out.o[e]));
    }
    for (size_t r = 0; r < nq; r++) lerr = fmax(lerr, fabs(lse[r] - p.oracle.out.lse[r]) / fmax(1.0, fabs(lse[r])));
    printf("oracle vs brute force (E5M2 inputs): O err %.3g of max %.3g, LSE rel err %.3g\n", oerr, omax, lerr);
    CHECK_MSG(oerr <= 1e-12 * omax && lerr <= 1e-13, "oracle differs from brute force: O %g, LSE %g", oerr, lerr);
    free(o);
    free(lse);
    af_prepared_free(&p);
}

/* ---- the cpu reference passes ------------------------------------------------------- */

static void test_cpu_passes(void) {
    static const char *const cases[] = {
        "dtype = fp8_e5m2\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 64\nhead_dim = 64\nmask = causal\n"
        "backward = yes\nseed = 53\n",
        "dtype = fp8_e5m2\nbatch = 1\nheads = 2\nseqlen_q = 40\nseqlen_kv = 96\nhead_dim = 32\nlayout = sbhd\n"
        "backward = yes\nseed = 54\ndata = normal:1 outlier_channels:2:20\n",
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        af_prepared p;
        prepare(&p, cases[ci]);
        check_storage(&p);
        af_verdict v;
        af_judge(&runner, &p, runner.reference, "", &v, NULL);
        CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "case %zu: the cpu fails its own criterion: %s", ci,
                  af_verdict_name(v.kind));
        const af_case *c = &p.c;
        size_t no = (size_t)c->batch * c->heads_q * c->seqlen_q * c->head_dim_v;
        double omax = 0;
        for (size_t e = 0; e < no; e++) omax = fmax(omax, fabs(p.oracle.out.o[e]));
        static const af_tensor_id ids[4] = {AF_T_O, AF_T_DQ, AF_T_DK, AF_T_DV};
        for (int k = 0; k < 4; k++) {
            const af_tensor_stats *st = &v.stats[ids[k]];
            printf("  case %zu %s: err %.4g allowed %.4g ratio %.3f\n", ci, af_tensor_name(ids[k]), st->err,
                   st->allowed, st->ratio);
        }
        double rel = v.stats[AF_T_O].err_ref / omax;
        CHECK_MSG(rel >= 0x1p-4, "case %zu: O error %g of max |O|: no E5M2 rounding visible", ci, rel);
        printf("  case %zu: the reference's O error is %.4f of max |O|\n", ci, rel);
        af_prepared_free(&p);
    }
}

/* ---- the criterion at its edge ------------------------------------------------------- */

static void test_criterion_edge(void) {
    af_prepared p;
    prepare(&p, "dtype = fp8_e5m2\nbatch = 1\nheads = 2\nseqlen = 48\nhead_dim = 32\nmask = causal\nseed = 12\n");
    const af_case *c = &p.c;
    int row = 30, h = 1, D = c->head_dim_v;
    size_t r = (size_t)h * c->seqlen_q + row, e = r * D + 5;
    double maxo = 0;
    for (int d = 0; d < D; d++) maxo = fmax(maxo, fabs(p.oracle.out.o[r * D + d]));
    af_outputs k;
    CHECK(af_outputs_alloc(&k, c) == 0);
    fx_copy(c, &p.oracle.out, &k);
    double pass_ratio, fail_ratio;
    double allowed = fx_edge_o(&p, &k, e, row, h, &pass_ratio, &fail_ratio);
    CHECK_MSG(allowed >= 0x1p-2 * maxo, "allowance %g below E5M2's unit at the row's max (%g)", allowed, 0x1p-2 * maxo);
    k.o[e] = p.oracle.out.o[e] + 1.5 * 0x1p-3 * maxo; /* 1.5 E4M3 units: within E5M2's */
    af_verdict v;
    af_verdict_init(&v, "test");
    CHECK(af_compare_outputs(c, &k, &p.oracle.out, &p.oracle, &p.terms, &v) == 0);
    double e4m3_ratio = v.stats[AF_T_O].ratio;
    printf("criterion: O row h%d r%d (max |O| %.4g) allowance %.4g; 1.5 E4M3 units ratio %.3f, 0.98x %.3f passes, "
           "1.02x %.3f -> mismatch\n",
           h, row, maxo, allowed, e4m3_ratio, pass_ratio, fail_ratio);
    af_outputs_free(&k);
    af_prepared_free(&p);
}

int main(void) {
    f8_runner_open(&runner);
    test_oracle();
    test_cpu_passes();
    test_criterion_edge();
    f8_runner_close(&runner);
    CHECK_DONE("test_fp8_e5m2");
}
