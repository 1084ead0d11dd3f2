/* test_fp8_head_descale.c — descale = head (Q, K, V descales per (batch, kv head), as
 * FlashAttention 3's fp8 forward takes them; docs/fp8.md) as a specification, through the
 * runner:
 *   - the descales: one per (sequence, kv head) slice of Q (the query heads of the kv
 *     head's group), K and V, each the per-tensor rule on its slice alone (amax / max, the
 *     slice's largest stored magnitude exactly the fp8's max at headroom 0; 2^h times that
 *     descale with fp8_headroom h); the per-tensor descale_q / _k / _v are 1; slices differ;
 *   - every dense logical Q, K, V element the oracle reads is exactly stored x its slice's
 *     descale, and the oracle's O matches a brute-force softmax(Q K^T scale) V in long
 *     double over the stored bytes decoded here with those descales;
 *   - the cpu reference applies them and passes its own criterion (figures printed);
 *     a case with the same data and descale = tensor has other stored bytes.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "judge/runner.h"
#include "model/numeric.h"
#include "util/check.h"
#include "judge/tests/fp8_fixture.h"

static af_runner runner;

static void prepare(af_prepared *p, const char *text) { f8_prepare(&runner, p, text, "test_fp8_head_descale", false); }

static double stored(const af_prepared *p, af_tensor_id id, int b, int h, int s, int d) {
    const af_tensors *t = &p->tensors;
    const af_tensor_view *v = &t->plan.view[id];
    uint8_t byte = ((const uint8_t *)t->buf[v->buffer])[af_layout_offset(&t->plan, id, b, h, s, d)];
    return v->storage == AF_ST_E4M3 ? (double)af_e4m3_to_f32(byte) : (double)af_e5m2_to_f32(byte);
}

/* The tensor's own head count and length, head dim. */
static void dims(const af_case *c, af_tensor_id id, int *H, int *S, int *D) {
    *H = id == AF_T_Q ? c->heads_q : c->heads_kv;
    *S = id == AF_T_Q ? c->seqlen_q : c->seqlen_kv;
    *D = id == AF_T_V ? c->head_dim_v : c->head_dim_qk;
}

static void case_text(char *text, size_t cap, const char *dtype, const char *descale, int headroom_q) {
    snprintf(text, cap,
             "dtype = %s\ndescale = %s\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 12\nseqlen_kv = 10\n"
             "head_dim = 32\ndata = normal:1 block_range:8\nfp8_headroom = %d,0,0,0,0\nseed = 31\n",
             dtype, descale, headroom_q);
}

static void test_case_kind(const char *dtype, int headroom_q) {
    char text[640];
    case_text(text, sizeof text, dtype, "head", headroom_q);
    af_prepared p;
    prepare(&p, text);
    const af_case *c = &p.c;
    const af_tensors *t = &p.tensors;
    CHECK(t->descale_head && t->descale_q == 1.0f && t->descale_k == 1.0f && t->descale_v == 1.0f);
    af_storage st = t->plan.view[AF_T_Q].storage;
    double max = af_storage_fp8_max(st);
    int group = c->heads_q / c->heads_kv, distinct = 0;
    af_tensor_id ids[3] = {AF_T_Q, AF_T_K, AF_T_V};
    const double *dense[3] = {p.inputs.q, p.inputs.k, p.inputs.v};
    for (int k = 0; k < 3; k++) {
        int H, S, D;
        dims(c, ids[k], &H, &S, &D);
        for (int b = 0; b < c->batch; b++)
            for (int hk = 0; hk < c->heads_kv; hk++) {
                float dsc = af_head_descale(t, c, ids[k], b, hk);
                distinct += dsc != af_head_descale(t, c, ids[k], 0, 0);
                double stored_amax = 0;
                for (int h = 0; h < H; h++) {
                    if ((ids[k] == AF_T_Q ? h / group : h) != hk) continue;
                    for (int s = 0; s < S; s++)
                        for (int d = 0; d < D; d++) {
                            double x = stored(&p, ids[k], b, h, s, d);
                            stored_amax = fmax(stored_amax, fabs(x));
                            size_t e = (((size_t)b * H + h) * S + s) * D + d;
                            CHECK_MSG(dense[k][e] == x * dsc, "%s[%zu]: oracle input %.17g, stored x descale %.17g",
                                      af_tensor_name(ids[k]), e, dense[k][e], x * dsc);
                        }
                }
                double want = ids[k] == AF_T_Q ? ldexp(max, -headroom_q) : max;
                CHECK_MSG(stored_amax == want, "%s slice (%d, %d): stored amax %g, expected %g", af_tensor_name(ids[k]),
                          b, hk, stored_amax, want);
            }
    }
    CHECK_MSG(distinct >= 6, "only %d of 9 slice descales differ from slice (0, 0)'s", distinct);
    /* the oracle against brute force over the stored bytes and the slice descales */
    double worst = 0;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++) {
            int hk = h / group;
            double dq = af_head_descale(t, c, AF_T_Q, b, hk), dk = af_head_descale(t, c, AF_T_K, b, hk),
                   dv = af_head_descale(t, c, AF_T_V, b, hk);
            for (int i = 0; i < c->seqlen_q; i++) {
                long double s[64], m = -INFINITY, z = 0, o[64] = {0};
                for (int j = 0; j < c->seqlen_kv; j++) {
                    long double dot = 0;
                    for (int d = 0; d < c->head_dim_qk; d++)
                        dot +=
                            (long double)(stored(&p, AF_T_Q, b, h, i, d) * dq) * (stored(&p, AF_T_K, b, hk, j, d) * dk);
                    s[j] = dot * (long double)af_case_scale(c);
                    m = s[j] > m ? s[j] : m;
                }
                for (int j = 0; j < c->seqlen_kv; j++) {
                    long double w = expl(s[j] - m);
                    z += w;
                    for (int d = 0; d < c->head_dim_v; d++) o[d] += w * (stored(&p, AF_T_V, b, hk, j, d) * dv);
                }
                for (int d = 0; d < c->head_dim_v; d++) {
                    double got = p.oracle.out.o[(((size_t)b * c->heads_q + h) * c->seqlen_q + i) * c->head_dim_v + d];
                    double want = (double)(o[d] / z);
                    worst = fmax(worst, fabs(got - want) / (fabs(want) + 1e-3));
                }
            }
        }
    CHECK_MSG(worst < 1e-13, "oracle O vs brute force with per-head descales: %g", worst);
    CHECK(p.have_ref);
    af_verdict v;
    af_judge(&runner, &p, runner.reference, "", &v, NULL);
    CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "%s descale = head: the cpu fails its own criterion: %s", dtype,
              af_verdict_name(v.kind));
    printf(
        "%s descale = head (q headroom %d): %d of 9 slice descales differ from (0, 0)'s; oracle vs brute force %.2g; "
        "cpu passes (O err %.3g allowed %.3g ratio %.3f)\n",
        dtype, headroom_q, distinct, worst, v.stats[AF_T_O].err, v.stats[AF_T_O].allowed, v.stats[AF_T_O].ratio);
    /* the same data per tensor: other scales, so other stored bytes */
    case_text(text, sizeof text, dtype, "tensor", headroom_q);
    af_prepared q;
    prepare(&q, text);
    CHECK(!q.tensors.descale_head && q.tensors.descale_k != 1.0f);
    size_t differ = 0;
    for (int s = 0; s < c->seqlen_kv; s++)
        for (int d = 0; d < c->head_dim_qk; d++)
            differ += stored(&p, AF_T_K, 1, 1, s, d) != stored(&q, AF_T_K, 1, 1, s, d);
    CHECK_MSG(differ > 0, "descale = tensor stores the same K bytes");
    af_prepared_free(&q);
    af_prepared_free(&p);
}

int main(void) {
    f8_runner_open(&runner);
    test_case_kind("fp8_e4m3", 0);
    test_case_kind("fp8_e5m2", 2);
    f8_runner_close(&runner);
    CHECK_DONE("test_fp8_head_descale");
}
