/* test_compare_overflow.c — an infinity in a gradient is an overflow, not a defect, when a
 * value within the element's allowance of the exact value rounds to it (judge/compare.h,
 * af_overflow_within, af_element_reach), as a specification:
 *  1. the rounding it models, measured through the harness's own fp16 store: 65519.99
 *     rounds to 65504, 65520 (the midpoint to 2^16) and above to inf, both signs; bf16 and
 *     the float range's end likewise;
 *  2. corpora/regression/cpu-fp16-dq-inf-within-allowance.case (found by the cpu backend's
 *     default campaign): the cpu backend stores one dQ element as inf whose exact value is
 *     far inside fp16's range; the element's allowance (the stored O's share of a scale-30,
 *     dropout-0.9 case) reaches 65520, so the case passes;
 *  3. at the edge, with that element's own exact value: an allowance 1 short of 65520 -
 *     |exact| does not excuse the inf, exactly that much does;
 *  4. an inf planted in the same run at a dQ element whose allowance does not reach 65520
 *     is still a nan_inf finding at that element.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/tests/criterion_fixture.h"
#include "model/layout.h"
#include "model/numeric.h"

#define CASE_PATH "corpora/regression/cpu-fp16-dq-inf-within-allowance.case"

static double stored(af_storage st, double x) {
    uint8_t tmp[4];
    af_storage_store(st, tmp, 0, (float)x);
    return af_storage_load(st, tmp, 0);
}

/* 1. the store's overflow edge, which the rule relies on. */
static void rounding_edge(void) {
    CHECK(stored(AF_ST_F16, 65519.99) == 65504.0);
    CHECK(isinf(stored(AF_ST_F16, 65520.0)) && stored(AF_ST_F16, 65520.0) > 0);
    CHECK(isinf(stored(AF_ST_F16, -65520.0)) && stored(AF_ST_F16, -65520.0) < 0);
    CHECK(!af_overflow_within(AF_ST_F16, 0.0, 65519.0, INFINITY));
    CHECK(af_overflow_within(AF_ST_F16, 0.0, 65520.0, INFINITY));
    CHECK(af_overflow_within(AF_ST_F16, 0.0, 65520.0, -INFINITY));
    CHECK(!af_overflow_within(AF_ST_F16, 65000.0, 519.0, INFINITY));
    CHECK(af_overflow_within(AF_ST_F16, 65000.0, 520.0, INFINITY));
    CHECK(!af_overflow_within(AF_ST_F16, 65000.0, 520.0, -INFINITY)); /* the other side is far */
    CHECK(af_overflow_within(AF_ST_F16, 70000.0, 0.0, INFINITY));     /* reach 0: the old rule */
    CHECK(!af_overflow_within(AF_ST_F16, 70000.0, 0.0, NAN));         /* NaN is never an overflow */
    CHECK(!af_overflow_within(AF_ST_BF16, 1e38, 1e37, INFINITY));
    CHECK(af_overflow_within(AF_ST_BF16, 3.3e38, 1e37, INFINITY));
    printf("fp16 store: 65519.99 -> 65504, 65520 -> inf (both signs); the rule's edge follows it\n");
}

typedef struct {
    int b, h, s, d;
    size_t e;
    double exact, reach;
} elem;

/* The element's full allowance: the budgets and the kernel's stored O's share. */
static double reach_of(const af_prepared *p, const double *extra, size_t e) {
    double o = p->oracle.out.dq[e];
    return af_element_reach(&p->c, AF_T_DQ, &p->terms, &p->ref, e, o, extra ? extra[e] : 0.0);
}

int main(void) {
    rounding_edge();

    char text[8192];
    fx_read_case(CASE_PATH, text, sizeof text);
    af_prepared p;
    af_backend *cpu;
    fx_prepare_any(text, &p, &cpu);
    CHECK(af_criterion_terms_have(&p.terms, AF_T_DQ));
    const af_case *c = &p.c;

    /* 2. the found case: one dQ element inf, the case passes */
    af_verdict v;
    af_tensors out;
    af_outputs k;
    fx_judge_run(&p, cpu, cpu, &v, &out, &k);
    double *extra = af_criterion_extra_terms(c, AF_T_DQ, &p.terms, k.o, k.lse);
    int H = c->heads_q, S = c->seqlen_q, D = c->head_dim_qk;
    elem inf_el = {-1, 0, 0, 0, 0, 0, 0}, low_el = {-1, 0, 0, 0, 0, 0, 0};
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < af_case_len_q(c, b); s++)
                for (int d = 0; d < D; d++) {
                    size_t e = (((size_t)b * H + h) * S + s) * D + d;
                    double o = p.oracle.out.dq[e], r = reach_of(&p, extra, e);
                    elem x = {b, h, s, d, e, o, r};
                    if (isinf(k.dq[e]) && inf_el.b < 0) inf_el = x;
                    /* an element far from the edge: where an inf would be a defect */
                    if (isfinite(k.dq[e]) && fabs(o) + r < 0.5 * 65520.0 && low_el.b < 0) low_el = x;
                }
    char line[1024];
    af_verdict_line(&v, line, sizeof line);
    CHECK_MSG(inf_el.b >= 0, "the cpu backend no longer stores an inf dQ in %s: %s", CASE_PATH, line);
    CHECK_MSG(v.kind == AF_V_PASS, "%s: %s", CASE_PATH, line);
    CHECK(fabs(inf_el.exact) + inf_el.reach >= 65520.0);
    printf("%s: dQ b%d h%d r%d c%d stored inf, exact %.6g, allowance %.6g (|exact| + allowance %.6g >= 65520): %s\n",
           CASE_PATH, inf_el.b, inf_el.h, inf_el.s, inf_el.d, inf_el.exact, inf_el.reach,
           fabs(inf_el.exact) + inf_el.reach, line);

    /* 3. the edge at that element's exact value */
    double need = 65520.0 - fabs(inf_el.exact);
    double sign = k.dq[inf_el.e] > 0 ? INFINITY : -INFINITY;
    bool toward = (inf_el.exact >= 0) == (sign > 0);
    CHECK(toward); /* the allowance reaches toward the stored infinity */
    CHECK(!af_overflow_within(AF_ST_F16, inf_el.exact, need - 1.0, sign));
    CHECK(af_overflow_within(AF_ST_F16, inf_el.exact, need, sign));
    printf("edge: an allowance of %.6g (1 short) leaves the inf a defect, %.6g excuses it\n", need - 1.0, need);

    /* 4. an inf where the allowance does not reach: still nan_inf */
    CHECK_MSG(low_el.b >= 0, "no dQ element far from the edge in %s", CASE_PATH);
    int64_t off = af_layout_offset(&out.plan, AF_T_DQ, low_el.b, low_el.h, low_el.s, low_el.d);
    const af_tensor_view *w = &out.plan.view[AF_T_DQ];
    af_storage_store(w->storage, out.buf[w->buffer], off, INFINITY);
    af_verdict v2;
    af_verdict_init(&v2, "test");
    af_check_buffers(c, &out, &p.oracle.out, &p.ref, &p.terms, &v2);
    bool caught = false;
    for (int i = 0; i < v2.n_findings && i < AF_MAX_FINDINGS; i++) {
        const af_finding *f = &v2.findings[i];
        caught |= f->kind == AF_V_NAN_INF && f->tensor == AF_T_DQ && f->b == low_el.b && f->h == low_el.h &&
                  f->row == low_el.s && f->col == low_el.d;
    }
    CHECK_MSG(caught, "an inf at dQ b%d h%d r%d c%d (exact %g, allowance %g) was not reported", low_el.b, low_el.h,
              low_el.s, low_el.d, low_el.exact, low_el.reach);
    printf("planted inf at dQ b%d h%d r%d c%d (exact %.6g, allowance %.6g): nan_inf, as before\n", low_el.b, low_el.h,
           low_el.s, low_el.d, low_el.exact, low_el.reach);

    free(extra);
    af_outputs_free(&k);
    af_tensors_free(&out);
    af_prepared_free(&p);
    cpu->destroy(cpu);
    CHECK_DONE("test_compare_overflow");
}
