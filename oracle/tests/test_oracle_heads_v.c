/* test_oracle_heads_v.c — V with its own head count (Hv != Hkv): the oracle's O, LSE, dQ,
 * dK and dV against a brute force written here from the definition, in long double:
 * query head h reads K head h / (Hq / Hkv) and V head h / (Hq / Hv); dK of a K head sums
 * over the query heads that read it, dV of a V head over those that read it. Shapes:
 * Hkv < Hv (4, 1, 2), Hkv > Hv (4, 2, 1) and lcm(Hkv, Hv) < Hq (12, 2, 3), causal and not,
 * padded lengths; the MPFR tier and the fp64 tier. An oracle that read V by K's head, or
 * summed dV over K's groups, is off by O(1) on these.
 */
#include "oracle/mask_spec.h"
#include "oracle/tests/oracle_testlib.h"

typedef struct {
    long double *o, *lse, *dq, *dk, *dv;
} brute_out;

/* The definition, straight: (B, H, S, D) row-major, H per tensor. */
static void brute(const af_oracle_problem *p, const af_inputs *in, int Hv, brute_out *r) {
    int gk = p->Hq / p->Hkv, gv = p->Hq / Hv;
    size_t rows = (size_t)p->B * p->Hq * p->Sq;
    r->o = calloc(rows * p->Dv, sizeof(long double));
    r->lse = calloc(rows, sizeof(long double));
    r->dq = calloc(rows * p->Dqk, sizeof(long double));
    r->dk = calloc((size_t)p->B * p->Hkv * p->Skv * p->Dqk, sizeof(long double));
    r->dv = calloc((size_t)p->B * Hv * p->Skv * p->Dv, sizeof(long double));
    long double *pr = calloc((size_t)p->Skv, sizeof(long double));
    CHECK(r->o && r->lse && r->dq && r->dk && r->dv && pr);
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->Hq; h++)
            for (int i = 0; i < p->len_q[b]; i++) {
                size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
                const double *q = in->q + row * p->Dqk, *dO = in->dout + row * p->Dv;
                long double m = -INFINITY, z = 0;
                for (int j = 0; j < p->len_kv[b]; j++) {
                    pr[j] = -INFINITY;
                    if (!af_mask_visible(&p->mask, p->len_q[b], p->len_kv[b], i, j)) continue;
                    const double *k = in->k + (((size_t)b * p->Hkv + h / gk) * p->Skv + j) * p->Dqk;
                    long double s = 0;
                    for (int d = 0; d < p->Dqk; d++) s += (long double)q[d] * k[d];
                    pr[j] = s * p->scale;
                    if (pr[j] > m) m = pr[j];
                }
                if (m == -INFINITY) {
                    r->lse[row] = -INFINITY;
                    continue;
                }
                for (int j = 0; j < p->len_kv[b]; j++) z += pr[j] == -INFINITY ? 0 : expl(pr[j] - m);
                r->lse[row] = m + logl(z);
                long double dd = 0;
                for (int j = 0; j < p->len_kv[b]; j++) {
                    pr[j] = pr[j] == -INFINITY ? 0 : expl(pr[j] - r->lse[row]);
                    const double *v = in->v + (((size_t)b * Hv + h / gv) * p->Skv + j) * p->Dv;
                    for (int d = 0; d < p->Dv; d++) r->o[row * p->Dv + d] += pr[j] * v[d];
                }
                for (int d = 0; d < p->Dv; d++) dd += dO[d] * r->o[row * p->Dv + d];
                for (int j = 0; j < p->len_kv[b]; j++) {
                    if (pr[j] == 0) continue;
                    size_t kr = ((size_t)b * p->Hkv + h / gk) * p->Skv + j, vr = ((size_t)b * Hv + h / gv) * p->Skv + j;
                    long double dp = 0;
                    for (int d = 0; d < p->Dv; d++) dp += (long double)dO[d] * in->v[vr * p->Dv + d];
                    long double ds = pr[j] * (dp - dd) * p->scale;
                    for (int d = 0; d < p->Dqk; d++) {
                        r->dq[row * p->Dqk + d] += ds * in->k[kr * p->Dqk + d];
                        r->dk[kr * p->Dqk + d] += ds * q[d];
                    }
                    for (int d = 0; d < p->Dv; d++) r->dv[vr * p->Dv + d] += pr[j] * dO[d];
                }
            }
    free(pr);
}

/* max |got - want| over n, relative to max |want| (1 when all are 0). */
static double gap(const double *got, const long double *want, size_t n) {
    long double worst = 0, mag = 0;
    for (size_t x = 0; x < n; x++) {
        if (isinf(want[x]) || isinf(got[x])) {
            CHECK(got[x] == want[x]);
            continue;
        }
        long double e = fabsl((long double)got[x] - want[x]);
        if (e > worst) worst = e;
        if (fabsl(want[x]) > mag) mag = fabsl(want[x]);
    }
    return (double)(worst / (mag > 0 ? mag : 1));
}

static void check_shape(int Hq, int Hkv, int Hv, bool causal, bool padded, af_oracle_tier tier, uint64_t seed) {
    test_shape s = {2, Hq, Hkv, 7, 11, 5, 6, causal, true, -1, -1, true, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, seed, 1.0); /* Q, K, dO (and a V of Hkv heads, replaced) */
    /* V and dV have Hv heads: V re-allocated at its own size */
    size_t nv = (size_t)s.B * Hv * s.Skv * s.Dv;
    free(t.in.v);
    t.in.v = calloc(nv, sizeof(double));
    CHECK(t.in.v != NULL);
    t.in.Hv = Hv;
    t.p.Hv = Hv;
    uint64_t st = seed ^ 0x5bd1e995u;
    for (size_t x = 0; x < nv; x++) t.in.v[x] = test_fp16(&st, 1.0);
    if (padded) t.len_q[1] = 5, t.len_kv[1] = 8;
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = tier;
    o.threads = 1;
    af_oracle_result r;
    char why[256] = "";
    int rc = af_oracle_run(&t.p, &o, &r, why, sizeof why);
    if (rc != 0) fprintf(stderr, "oracle: %s\n", why);
    CHECK(rc == 0);
    CHECK(r.out.Hkv == Hkv && af_outputs_hv(&r.out) == Hv);
    brute_out w;
    brute(&t.p, &t.in, Hv, &w);
    size_t rows = test_rows(&t);
    double lim = 1e-13;
    double g_o = gap(r.out.o, w.o, rows * s.Dv), g_l = gap(r.out.lse, w.lse, rows);
    double g_q = gap(r.out.dq, w.dq, rows * s.Dqk);
    double g_k = gap(r.out.dk, w.dk, (size_t)s.B * Hkv * s.Skv * s.Dqk);
    double g_v = gap(r.out.dv, w.dv, nv);
    if (!(g_o < lim && g_l < lim && g_q < lim && g_k < lim && g_v < lim))
        fprintf(stderr, "Hq %d Hkv %d Hv %d causal %d padded %d tier %d: gaps O %g LSE %g dQ %g dK %g dV %g\n", Hq, Hkv,
                Hv, causal, padded, (int)tier, g_o, g_l, g_q, g_k, g_v);
    CHECK(g_o < lim && g_l < lim && g_q < lim && g_k < lim && g_v < lim);
    /* the gradient magnitudes see the shared-head problem too: finite and at least |dV| */
    af_grad_magnitudes gm;
    af_oracle_grad_abs(&t.p, &r.out, &gm);
    CHECK(isfinite(gm.dk) && isfinite(gm.dv) && gm.dv >= test_max_abs(r.out.dv, nv) * (1 - 1e-12));
    free(w.o), free(w.lse), free(w.dq), free(w.dk), free(w.dv);
    af_oracle_result_free(&r);
    free(t.in.q), free(t.in.k), free(t.in.v), free(t.in.dout);
}

int main(void) {
    for (int tier = 0; tier < 2; tier++) {
        af_oracle_tier ti = tier ? AF_ORACLE_FP64 : AF_ORACLE_MPFR;
        check_shape(4, 1, 2, true, false, ti, 11);
        check_shape(4, 2, 1, false, true, ti, 12);
        check_shape(12, 2, 3, true, true, ti, 13);
        check_shape(6, 3, 6, false, false, ti, 14);
    }
    /* validation: Hv must divide Hq */
    test_shape s = {1, 4, 2, 3, 3, 2, 2, false, false, -1, -1, true, 0.0};
    test_problem t;
    test_problem_init(&t, &s);
    t.p.Hv = 3;
    t.in.Hv = 3;
    af_oracle_result r;
    char why[256] = "";
    CHECK(af_oracle_run(&t.p, NULL, &r, why, sizeof why) != 0);
    CHECK(strstr(why, "heads_v=3") != NULL);
    free(t.in.q), free(t.in.k), free(t.in.v), free(t.in.dout);
    printf("test_oracle_heads_v: ok\n");
    return 0;
}
