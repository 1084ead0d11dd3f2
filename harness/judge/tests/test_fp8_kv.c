/* test_fp8_kv.c — kv_dtype (an fp8 KV cache under fp16 / bf16 queries; docs/fp8.md) as a
 * specification, through the runner:
 *   - storage: K and V are stored in the kv_dtype's fp8 (E4M3 / E5M2), Q and O in the
 *     dtype; descale_k and descale_v are powers of two, the largest with amax / descale
 *     within the fp8's max (never saturating, at least half of it used); every dense
 *     logical K, V element the oracle reads is exactly stored * descale;
 *   - the oracle computes attention of the DEQUANTISED K, V: its O matches a brute-force
 *     softmax(Q K^T * scale) V in long double over the stored bytes decoded by the test
 *     itself (relative 1e-13), and differs from the same on the unquantised generated
 *     values by far more than that (quantisation error is not the kernel's);
 *   - the cpu reference (dequantise on load, then the dtype's recipe) passes its own
 *     criterion, whose terms are the dtype's: the worst O ratio is printed;
 *   - the criterion's edge on an O row: 0.98 x the row's allowance passes, 1.02 x is a
 *     mismatch at that row.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/compare.h"
#include "judge/runner.h"
#include "model/gen.h"
#include "model/numeric.h"
#include "util/check.h"
#include "judge/tests/fp8_fixture.h"

#include "judge/tests/criterion_fixture.h"

static af_runner runner;

static void prepare(af_prepared *p, const char *text) { f8_prepare(&runner, p, text, "test_fp8_kv", false); }

/* A power of two (exactly). */
static bool is_pow2(float x) {
    int e;
    return x > 0 && frexpf(x, &e) == 0.5f;
}

/* The test's own decoding of a stored fp8 element: E4M3 or E5M2 bytes. */
static double decode(af_storage st, const void *buf, int64_t off) {
    uint8_t b = ((const uint8_t *)buf)[off];
    return st == AF_ST_E4M3 ? (double)af_e4m3_to_f32(b) : (double)af_e5m2_to_f32(b);
}

/* Brute force O[b, h, i, :] (no mask, one sequence length) from dense q and key / value
 * element functions; long double throughout. */
typedef double (*elem_fn)(const af_prepared *p, int id, int b, int h, int s, int d);

static double stored_logical(const af_prepared *p, int id, int b, int h, int s, int d) {
    const af_tensors *t = &p->tensors;
    const af_tensor_view *v = &t->plan.view[id];
    double descale = id == AF_T_K ? (double)t->descale_k : (double)t->descale_v;
    return decode(v->storage, t->buf[v->buffer], af_layout_offset(&t->plan, (af_tensor_id)id, b, h, s, d)) * descale;
}

static double unquantised(const af_prepared *p, int id, int b, int h, int s, int d) {
    return (double)af_gen_element(&p->c, (af_tensor_id)id, b, h, s, d);
}

static void brute_row(const af_prepared *p, elem_fn kv, int b, int h, int i, long double *o /* (Dv) */) {
    const af_case *c = &p->c;
    const af_inputs *in = &p->inputs;
    int hk = h / (c->heads_q / c->heads_kv), Dqk = c->head_dim_qk, Dv = c->head_dim_v;
    long double s[256], m = -INFINITY, z = 0;
    const double *q = in->q + (((size_t)b * c->heads_q + h) * c->seqlen_q + i) * Dqk;
    for (int j = 0; j < c->seqlen_kv; j++) {
        long double dot = 0;
        for (int d = 0; d < Dqk; d++) dot += (long double)q[d] * kv(p, AF_T_K, b, hk, j, d);
        s[j] = dot * (long double)af_case_scale(c);
        if (s[j] > m) m = s[j];
    }
    for (int d = 0; d < Dv; d++) o[d] = 0;
    for (int j = 0; j < c->seqlen_kv; j++) {
        long double w = expl(s[j] - m);
        z += w;
        for (int d = 0; d < Dv; d++) o[d] += w * kv(p, AF_T_V, b, hk, j, d);
    }
    for (int d = 0; d < Dv; d++) o[d] /= z;
}

static void test_storage_oracle_reference(void) {
    static const char *const kvs[] = {"fp8_e4m3", "fp8_e5m2"};
    static const char *const dts[] = {"fp16", "bf16"};
    for (int ki = 0; ki < 2; ki++)
        for (int di = 0; di < 2; di++) {
            char text[512];
            snprintf(text, sizeof text,
                     "dtype = %s\nkv_dtype = %s\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 8\nseqlen_kv = 40\n"
                     "head_dim = 32\ndata = normal:1 outlier_channels:3:20\nseed = 23\n",
                     dts[di], kvs[ki]);
            af_prepared p;
            prepare(&p, text);
            const af_case *c = &p.c;
            const af_tensors *t = &p.tensors;
            af_storage fp8 = ki == 0 ? AF_ST_E4M3 : AF_ST_E5M2, wide = di == 0 ? AF_ST_F16 : AF_ST_BF16;
            CHECK(t->plan.view[AF_T_K].storage == fp8 && t->plan.view[AF_T_V].storage == fp8);
            CHECK(t->plan.view[AF_T_Q].storage == wide && t->plan.view[AF_T_O].storage == wide);
            CHECK(t->descale_q == 1.0f && t->descale_o == 1.0f);
            /* descales: powers of two, the largest with amax / descale <= max */
            float descale[2] = {t->descale_k, t->descale_v};
            const double *dense[2] = {p.inputs.k, p.inputs.v};
            for (int x = 0; x < 2; x++) {
                int id = x ? AF_T_V : AF_T_K;
                CHECK_MSG(is_pow2(descale[x]), "%s: descale %g is not a power of two", x ? "V" : "K", descale[x]);
                double amax = 0, logical_amax = 0;
                for (int b = 0; b < c->batch; b++)
                    for (int h = 0; h < c->heads_kv; h++)
                        for (int s = 0; s < c->seqlen_kv; s++)
                            for (int d = 0; d < c->head_dim_qk; d++) {
                                double u = fabs(unquantised(&p, id, b, h, s, d));
                                if (u > amax) amax = u;
                                double l = stored_logical(&p, id, b, h, s, d);
                                size_t e = (((size_t)b * c->heads_kv + h) * c->seqlen_kv + s) * c->head_dim_qk + d;
                                CHECK_MSG(dense[x][e] == l, "%s[%zu]: oracle input %.17g, stored * descale %.17g",
                                          x ? "V" : "K", e, dense[x][e], l);
                                if (fabs(l) > logical_amax) logical_amax = fabs(l);
                            }
                double used = amax / descale[x], max = af_storage_fp8_max(fp8);
                CHECK_MSG(used <= max && used > max / 2, "%s: amax / descale = %g of %g", x ? "V" : "K", used, max);
            }
            CHECK_MSG(t->descale_k != t->descale_v, "K's outlier channels should move its descale (both %g)",
                      t->descale_k);
            /* the oracle: attention of the dequantised K, V */
            double worst_deq = 0, worst_raw = 0;
            for (int b = 0; b < c->batch; b++)
                for (int h = 0; h < c->heads_q; h++)
                    for (int i = 0; i < c->seqlen_q; i++) {
                        long double o_deq[64], o_raw[64];
                        brute_row(&p, stored_logical, b, h, i, o_deq);
                        brute_row(&p, unquantised, b, h, i, o_raw);
                        for (int d = 0; d < c->head_dim_v; d++) {
                            double got =
                                p.oracle.out.o[(((size_t)b * c->heads_q + h) * c->seqlen_q + i) * c->head_dim_v + d];
                            double scale = fabsl(o_deq[d]) + 1e-3;
                            double e_deq = fabs(got - (double)o_deq[d]) / scale;
                            double e_raw = fabs(got - (double)o_raw[d]) / scale;
                            if (e_deq > worst_deq) worst_deq = e_deq;
                            if (e_raw > worst_raw) worst_raw = e_raw;
                        }
                    }
            CHECK_MSG(worst_deq < 1e-13, "oracle O vs brute force on dequantised K, V: %g", worst_deq);
            CHECK_MSG(worst_raw > 1e-4, "oracle O vs the unquantised values only %g apart", worst_raw);
            /* the cpu reference dequantises on load and passes */
            CHECK(p.have_ref);
            af_verdict v;
            af_judge(&runner, &p, runner.reference, "", &v, NULL);
            CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "%s kv %s: the cpu fails its own criterion: %s",
                      dts[di], kvs[ki], af_verdict_name(v.kind));
            printf("%s Q, kv %s: descale_k 2^%d, descale_v 2^%d; oracle vs brute force %.2g (vs unquantised %.2g); "
                   "cpu passes: worst O err %.3g allowed %.3g ratio %.3f, LSE ratio %.3f\n",
                   dts[di], kvs[ki], (int)log2f(t->descale_k), (int)log2f(t->descale_v), worst_deq, worst_raw,
                   v.stats[AF_T_O].err, v.stats[AF_T_O].allowed, v.stats[AF_T_O].ratio, v.stats[AF_T_LSE].ratio);
            af_prepared_free(&p);
        }
}

static void test_criterion_edge(void) {
    af_prepared p;
    prepare(&p, "dtype = fp16\nkv_dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen = 48\nhead_dim = 32\nmask = causal\n"
                "seed = 12\n");
    fx_edge_row30(&p, "fp16 O over an E4M3 KV cache");
    af_prepared_free(&p);
}

int main(void) {
    f8_runner_open(&runner);
    test_storage_oracle_reference();
    test_criterion_edge();
    f8_runner_close(&runner);
    CHECK_DONE("test_fp8_kv");
}
