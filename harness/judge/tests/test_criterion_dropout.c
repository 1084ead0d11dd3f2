/* test_criterion_dropout.c — the criterion with dropout (criterion.h, "Dropout"):
 *  - the O budget is the weighted one: mass[O] of every element equals
 *    sum_j P_ij w_ij |v_jd| recomputed here from the dense inputs and the oracle's LSE,
 *    with w_ij = 0 (dropped) or 1 / (1 - p) from the oracle's mask (never model/dropout.c);
 *  - a perfect kernel (exact outputs rounded once) passes, and the cpu reference passes;
 *  - a kernel that ignores dropout (the undropped outputs, rounded once) is a mismatch;
 *  - at the edge: on the O element and the dV element with the largest budget, the
 *    largest error that passes is found by bisection and 1.02 times it is a mismatch of
 *    that tensor (the grown allowance still catches what exceeds it).
 */
#include "judge/tests/criterion_fixture.h"
#include "judge/problem.h"
#include "oracle/feature_spec.h"

#define CASE_TEXT                                                                                                      \
    "dtype = fp16\nbatch = 2\nheads_q = 2\nheads_kv = 1\nseqlen_q = 12\nseqlen_kv = 20\nhead_dim_qk = 16\n"            \
    "head_dim_v = 8\nmask = causal\nalign = bottom_right\nbackward = yes\nseed = 41\n"

static bool passes_with(const af_prepared *p, const af_outputs *perfect, af_outputs *k, af_tensor_id id, size_t e,
                        double err, af_verdict *v) {
    size_t n;
    fx_copy(&p->c, perfect, k);
    double *x = fx_tensor(&p->c, k, id, &n);
    x[e] += err;
    double worst;
    return fx_judge(p, k, v, &worst) == 0;
}

static void edge_at(const af_prepared *p, const af_outputs *perfect, af_outputs *k, af_tensor_id id, size_t e) {
    af_verdict v;
    double lo = 0, hi = 1e-4;
    CHECK(passes_with(p, perfect, k, id, e, 0, &v));
    while (passes_with(p, perfect, k, id, e, hi, &v) && hi < 1e6) hi *= 2;
    CHECK(!passes_with(p, perfect, k, id, e, hi, &v));
    while (hi - lo > 1e-4 * hi) {
        double mid = 0.5 * (lo + hi);
        if (passes_with(p, perfect, k, id, e, mid, &v))
            lo = mid;
        else
            hi = mid;
    }
    CHECK(lo > 0 && passes_with(p, perfect, k, id, e, lo, &v));
    CHECK(!passes_with(p, perfect, k, id, e, 1.02 * lo, &v));
    CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == id,
              "1.02 x the edge gave no %s mismatch", af_tensor_name(id));
    printf("%s[%zu]: mass %.4g kappa %.4g, largest passing error %.4g; x1.02 -> mismatch (ratio %.3f)\n",
           af_tensor_name(id), e, p->terms.mass[id][e], p->terms.kappa[id][e], lo, v.findings[0].ratio);
}

/* mass[O] against sum_j P_ij w_ij |v_jd| from the dense inputs (full lengths, bottom-right causal). */
static void o_mass_is_weighted(const af_prepared *p) {
    af_oracle_problem problem;
    int len_q[AF_MAX_BATCH], len_kv[AF_MAX_BATCH];
    af_problem_from_case(&problem, &p->c, &p->inputs, len_q, len_kv);
    const af_oracle_problem *op = &problem;
    const af_inputs *in = op->in;
    int Sq = op->Sq, Skv = op->Skv, Dqk = op->Dqk, Dv = op->Dv;
    double worst = 0;
    int dropped_terms = 0;
    for (int b = 0; b < op->B; b++)
        for (int h = 0; h < op->Hq; h++)
            for (int i = 0; i < Sq; i++) {
                size_t row = ((size_t)b * op->Hq + h) * Sq + i;
                double lse = p->oracle.out.lse[row];
                for (int d = 0; d < Dv; d++) {
                    double want = 0;
                    for (int j = 0; j <= i + Skv - Sq; j++) {
                        const double *q = in->q + row * Dqk, *kk = in->k + ((size_t)b * Skv + j) * Dqk;
                        double s = 0;
                        for (int x = 0; x < Dqk; x++) s += q[x] * kk[x];
                        double w = af_feat_dropout_weight(op, b, h, i, j);
                        dropped_terms += w == 0 && d == 0;
                        want += exp(s * op->scale - lse) * w * fabs(in->v[((size_t)b * Skv + j) * Dv + d]);
                    }
                    double got = p->terms.mass[AF_T_O][row * Dv + d];
                    worst = fmax(worst, fabs(got - want) / fmax(want, 1e-300));
                }
            }
    CHECK_MSG(worst < 1e-12 && dropped_terms > 0, "mass[O] vs sum P w |v|: relative gap %.3g (%d dropped terms)", worst,
              dropped_terms);
    printf("mass[O] = sum_j P w |v| (relative gap %.2g, %d dropped terms)\n", worst, dropped_terms);
}

int main(void) {
    af_prepared p, plain;
    af_backend *cpu, *cpu2;
    fx_prepare(CASE_TEXT "dropout = 0.25 77 5\n", &p, &cpu);
    fx_prepare(CASE_TEXT, &plain, &cpu2);
    o_mass_is_weighted(&p);

    af_outputs perfect, k, undropped;
    af_verdict v;
    double worst;
    fx_perfect(&p, &perfect);
    CHECK(af_outputs_alloc(&k, &p.c) == 0);
    CHECK_MSG(fx_judge(&p, &perfect, &v, &worst) == 0, "a perfect dropout kernel has findings (ratio %.3g)", worst);
    CHECK_MSG(fx_judge(&p, &p.ref, &v, &worst) == 0, "the cpu reference with dropout has findings (ratio %.3g)", worst);
    printf("perfect kernel and cpu reference pass (worst ratio %.3g)\n", worst);
    fx_perfect(&plain, &undropped);
    CHECK(fx_judge(&p, &undropped, &v, &worst) > 0 && v.findings[0].kind == AF_V_MISMATCH);
    printf("a kernel ignoring dropout: %d findings, first %s ratio %.3g\n", v.n_findings,
           af_tensor_name(v.findings[0].tensor), v.findings[0].ratio);

    size_t n_o, n_v, e_o = 0, e_v = 0;
    fx_tensor(&p.c, &k, AF_T_O, &n_o);
    fx_tensor(&p.c, &k, AF_T_DV, &n_v);
    for (size_t e = 0; e < n_o; e++)
        if (p.terms.kappa[AF_T_O][e] > p.terms.kappa[AF_T_O][e_o]) e_o = e;
    for (size_t e = 0; e < n_v; e++)
        if (p.terms.kappa[AF_T_DV][e] > p.terms.kappa[AF_T_DV][e_v]) e_v = e;
    edge_at(&p, &perfect, &k, AF_T_O, e_o);
    edge_at(&p, &perfect, &k, AF_T_DV, e_v);

    af_outputs_free(&perfect);
    af_outputs_free(&undropped);
    af_outputs_free(&k);
    af_prepared_free(&p);
    af_prepared_free(&plain);
    cpu->destroy(cpu);
    cpu2->destroy(cpu2);
    CHECK_DONE("test_criterion_dropout");
}
