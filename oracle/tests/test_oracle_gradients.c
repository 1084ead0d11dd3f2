/* test_oracle_gradients.c — every gradient (dQ, dK, dV) against central finite
 * differences of L = sum(dO * O), computed here by an independent, naive MPFR
 * forward at 320 bits with step h = 2^-66 (~1.4e-20; x +- h is exact). The
 * difference quotient is then accurate to ~h^2 ~ 1e-40, far below the oracle's
 * stated bound, so the oracle's gradients must match it to ~1 ulp.
 * Cases: GQA, causal top-left, bottom-right with sq < skv and sq > skv (fully
 * masked rows), windows, padding, Dqk != Dv, a non-power-of-two scale. The fp64
 * tier is checked against the same differences at 1e-13 of the tensor's magnitude.
 */
#include <mpfr.h>
#include "oracle/mask_spec.h"
#include "oracle/tests/oracle_testlib.h"

#define FD_BITS      320
#define FD_STEP_LOG2 (-66)

typedef enum { WRT_Q, WRT_K, WRT_V } wrt;

/* L over heads [h_first, h_last] of batch b, with element `index` of tensor `which`
 * moved by `delta` (a power of two times +-1). Naive and independent of the oracle. */
static void loss(const test_problem *t, int b, int h_first, int h_last, wrt which, size_t index, double delta,
                 mpfr_t result) {
    const af_oracle_problem *p = &t->p;
    int group = p->Hq / p->Hkv;
    mpfr_t acc, x, y, m, z, o;
    mpfr_inits2(FD_BITS, acc, x, y, m, z, o, (mpfr_ptr)0);
    mpfr_t *s = malloc((size_t)p->Skv * sizeof *s);
    for (int j = 0; j < p->Skv; j++) mpfr_init2(s[j], FD_BITS);
    mpfr_set_zero(result, 1);
#define ELEM(var, tensor, w, idx)                                                                                      \
    do {                                                                                                               \
        mpfr_set_d(var, (tensor)[idx], MPFR_RNDN);                                                                     \
        if (which == (w) && (size_t)(idx) == index) mpfr_add_d(var, var, delta, MPFR_RNDN);                            \
    } while (0)
    for (int h = h_first; h <= h_last; h++) {
        int g = h / group;
        for (int i = 0; i < p->len_q[b]; i++) {
            size_t row = ((size_t)b * p->Hq + h) * p->Sq + i;
            bool any = false;
            for (int j = 0; j < p->Skv; j++) {
                if (!af_mask_visible(&p->mask, p->len_q[b], p->len_kv[b], i, j)) continue;
                size_t key = ((size_t)b * p->Hkv + g) * p->Skv + j;
                mpfr_set_zero(acc, 1);
                for (int d = 0; d < p->Dqk; d++) {
                    ELEM(x, t->in.q, WRT_Q, row * p->Dqk + d);
                    ELEM(y, t->in.k, WRT_K, key * p->Dqk + d);
                    mpfr_mul(x, x, y, MPFR_RNDN);
                    mpfr_add(acc, acc, x, MPFR_RNDN);
                }
                mpfr_mul_d(s[j], acc, p->scale, MPFR_RNDN);
                if (!any || mpfr_greater_p(s[j], m)) mpfr_set(m, s[j], MPFR_RNDN);
                any = true;
            }
            if (!any) continue; /* fully masked: O = 0 contributes nothing */
            mpfr_set_zero(z, 1);
            for (int j = 0; j < p->Skv; j++) {
                if (!af_mask_visible(&p->mask, p->len_q[b], p->len_kv[b], i, j)) continue;
                mpfr_sub(s[j], s[j], m, MPFR_RNDN);
                mpfr_exp(s[j], s[j], MPFR_RNDN);
                mpfr_add(z, z, s[j], MPFR_RNDN);
            }
            for (int d = 0; d < p->Dv; d++) {
                mpfr_set_zero(o, 1);
                for (int j = 0; j < p->Skv; j++) {
                    if (!af_mask_visible(&p->mask, p->len_q[b], p->len_kv[b], i, j)) continue;
                    size_t key = ((size_t)b * p->Hkv + g) * p->Skv + j;
                    ELEM(x, t->in.v, WRT_V, key * p->Dv + d);
                    mpfr_mul(x, x, s[j], MPFR_RNDN);
                    mpfr_add(o, o, x, MPFR_RNDN);
                }
                mpfr_div(o, o, z, MPFR_RNDN);
                mpfr_mul_d(o, o, t->in.dout[row * p->Dv + d], MPFR_RNDN);
                mpfr_add(result, result, o, MPFR_RNDN);
            }
        }
    }
#undef ELEM
    for (int j = 0; j < p->Skv; j++) mpfr_clear(s[j]);
    free(s);
    mpfr_clears(acc, x, y, m, z, o, (mpfr_ptr)0);
}

static double finite_difference(const test_problem *t, int b, int h_first, int h_last, wrt which, size_t index) {
    double h = ldexp(1.0, FD_STEP_LOG2);
    mpfr_t plus, minus;
    mpfr_inits2(FD_BITS, plus, minus, (mpfr_ptr)0);
    loss(t, b, h_first, h_last, which, index, h, plus);
    loss(t, b, h_first, h_last, which, index, -h, minus);
    mpfr_sub(plus, plus, minus, MPFR_RNDN);
    mpfr_div_d(plus, plus, 2.0 * h, MPFR_RNDN);
    double g = mpfr_get_d(plus, MPFR_RNDN);
    mpfr_clears(plus, minus, (mpfr_ptr)0);
    return g;
}

/* Compares one gradient tensor with the differences. */
/* fp64: within 1e-13 of |value| + M (M: crude mass, see oracle_testlib.h); the
 * fp64 tier is accurate relative to the mass of the terms, not to a value that
 * cancellation made small. */
static void check_gradient(const char *name, const test_problem *t, wrt which, const double *mpfr_grad,
                           const double *fp64_grad) {
    test_masses masses = test_crude_masses(t);
    double mass = which == WRT_Q ? masses.dq : which == WRT_K ? masses.dk : masses.dv;
    const af_oracle_problem *p = &t->p;
    int group = p->Hq / p->Hkv;
    int heads = which == WRT_Q ? p->Hq : p->Hkv;
    int len = which == WRT_Q ? p->Sq : p->Skv;
    int dim = which == WRT_V ? p->Dv : p->Dqk;
    size_t n = (size_t)p->B * heads * len * dim;
    double magnitude = test_max_abs(mpfr_grad, n);
    for (size_t x = 0; x < n; x++) {
        int b = (int)(x / ((size_t)heads * len * dim));
        int h = (int)(x / ((size_t)len * dim) % heads);
        int h_first = which == WRT_Q ? h : h * group;
        int h_last = which == WRT_Q ? h : h * group + group - 1;
        double fd = finite_difference(t, b, h_first, h_last, which, x);
        double tol = 0x1p-52 * fabs(fd) + 1e-30 * (1.0 + magnitude);
        CHECK_MSG(fabs(mpfr_grad[x] - fd) <= tol, "%s[%zu]: oracle %.17g, finite difference %.17g", name, x,
                  mpfr_grad[x], fd);
        CHECK_MSG(fabs(fp64_grad[x] - fd) <= 1e-13 * (fabs(fd) + mass),
                  "%s[%zu]: fp64 tier %.17g, finite difference %.17g", name, x, fp64_grad[x], fd);
    }
}

typedef struct {
    test_shape s;
    int len_q1, len_kv1;
} gradient_case;

int main(void) {
    static const gradient_case cases[] = {
        {{2, 4, 2, 5, 6, 4, 3, false, false, -1, -1, true, 0.0}, 0, 0}, /* GQA, no mask */
        {{1, 2, 1, 5, 7, 3, 5, true, false, -1, -1, true, 0.0}, 0, 0},  /* causal top-left, MQA */
        {{1, 2, 2, 4, 7, 4, 4, true, true, 2, 1, true, 0.0}, 0, 0},     /* bottom-right window */
        {{1, 3, 1, 7, 4, 4, 2, true, true, -1, -1, true, 0.0}, 0, 0},   /* sq > skv: empty rows */
        {{2, 2, 1, 6, 6, 3, 4, true, false, -1, -1, true, 0.0}, 4, 3},  /* padding */
        {{2, 2, 2, 6, 5, 4, 3, false, true, 1, 0, true, 0.0}, 3, 5},    /* padding, BR window */
        {{1, 2, 1, 6, 3, 5, 3, false, false, 1, 0, true, 0.0}, 0, 0},   /* window excludes rows */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        test_problem t;
        test_problem_init(&t, &cases[c].s);
        test_problem_randomize(&t, 31 + c, 2.0);
        if (cases[c].len_q1) t.len_q[1] = cases[c].len_q1, t.len_kv[1] = cases[c].len_kv1;
        af_oracle_result r, f;
        test_run(&t, AF_ORACLE_MPFR, 128, 2, &r);
        test_run(&t, AF_ORACLE_FP64, 128, 2, &f);
        check_gradient("dQ", &t, WRT_Q, r.out.dq, f.out.dq);
        check_gradient("dK", &t, WRT_K, r.out.dk, f.out.dk);
        check_gradient("dV", &t, WRT_V, r.out.dv, f.out.dv);
        af_oracle_result_free(&r);
        af_oracle_result_free(&f);
        test_problem_free(&t);
    }
    /* 25 random small problems: every mask, alignment, window, length, GQA. */
    for (int c = 0; c < 25; c++) {
        test_problem t;
        test_problem_random(&t, 300 + (uint64_t)c);
        af_oracle_result r, f;
        test_run(&t, AF_ORACLE_MPFR, 128, 2, &r);
        test_run(&t, AF_ORACLE_FP64, 128, 2, &f);
        check_gradient("dQ", &t, WRT_Q, r.out.dq, f.out.dq);
        check_gradient("dK", &t, WRT_K, r.out.dk, f.out.dk);
        check_gradient("dV", &t, WRT_V, r.out.dv, f.out.dv);
        af_oracle_result_free(&r);
        af_oracle_result_free(&f);
        test_problem_free(&t);
    }
    CHECK_DONE("test_oracle_gradients");
}
