/* criterion_fixture.h — shared by the criterion tests: prepare a case (oracle, cpu
 * reference, term budgets), build kernels from the exact outputs, judge them. */
#ifndef ATTNFUZZ_CRITERION_FIXTURE_H
#define ATTNFUZZ_CRITERION_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "backends/backend.h"
#include "judge/compare.h"
#include "judge/runner.h"
#include "model/tensors.h"
#include "util/check.h"

/* Prepare case text as the runner does before a run (a kernel-stream dropout case gets its
 * oracle and budgets from the judge, with the mask the run returns), the oracle's tier
 * `tier` (AF_ORACLE_AUTO: the runner's default). */
static void fx_prepare_case_tier(const char *text, af_oracle_tier tier, af_prepared *p, af_backend **cpu) {
    af_case c;
    af_error err;
    CHECK_MSG(af_case_parse(text, "criterion", &c, &err) == 0, "%s: %s", err.field, err.message);
    af_runner r;
    memset(&r, 0, sizeof r);
    af_oracle_opts_default(&r.oracle);
    r.oracle.tier = tier;
    *cpu = af_backend_cpu_new();
    r.reference = *cpu;
    char why[256];
    CHECK_MSG(af_prepare(&r, &c, p, why, sizeof why) == 0, "%s", why);
}

static void fx_prepare_case(const char *text, af_prepared *p, af_backend **cpu) {
    fx_prepare_case_tier(text, AF_ORACLE_AUTO, p, cpu);
}

/* Prepare case text with the oracle and the cpu reference; the term budgets are
 * whatever the runner computes for it (fx_prepare: asserts they are complete). */
static void fx_prepare_any(const char *text, af_prepared *p, af_backend **cpu) {
    fx_prepare_case(text, p, cpu);
    CHECK(p->have_oracle && p->have_ref);
}

static __attribute__((unused)) void fx_prepare(const char *text, af_prepared *p, af_backend **cpu) {
    fx_prepare_any(text, p, cpu);
    CHECK(p->terms.ready);
}

/* The LSE row rule's tensor-wide figures (criterion_rows.c): the reference's largest
 * LSE error and the largest |LSE| over the rows with a finite exact LSE. */
static __attribute__((unused)) double fx_lse_err_ref(const af_prepared *p, double *lse_max) {
    size_t n = (size_t)p->c.batch * p->c.heads_q * p->c.seqlen_q;
    double err_ref = 0;
    *lse_max = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(p->oracle.out.lse[i])) {
            *lse_max = fmax(*lse_max, fabs(p->oracle.out.lse[i]));
            err_ref = fmax(err_ref, fabs(p->ref.lse[i] - p->oracle.out.lse[i]));
        }
    return err_ref;
}

/* A case file's text (tests run in the source directory). */
static __attribute__((unused)) void fx_read_case(const char *path, char *text, size_t cap) {
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s: cannot open (tests run in the source directory)", path);
    size_t n = fread(text, 1, cap - 1, f);
    fclose(f);
    text[n] = '\0';
}

/* Tensor id's stats after comparing kernel k against the oracle of p, with ref as the
 * reference (p's own, or the oracle's outputs: the allowance is then the budgets' alone). */
static __attribute__((unused)) af_tensor_stats fx_stats(const af_prepared *p, const af_outputs *k,
                                                        const af_outputs *ref, af_tensor_id id, af_verdict *v) {
    af_verdict_init(v, "test");
    af_compare_outputs(&p->c, k, ref, &p->oracle, &p->terms, v);
    return v->stats[id];
}

/* The dense arrays of tensor id in o, and their element count for case c. */
static double *fx_tensor(const af_case *c, af_outputs *o, af_tensor_id id, size_t *n) {
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    switch (id) {
        case AF_T_O:
            *n = nq * c->head_dim_v;
            return o->o;
        case AF_T_LSE:
            *n = nq;
            return o->lse;
        case AF_T_DQ:
            *n = nq * c->head_dim_qk;
            return o->dq;
        case AF_T_DK:
            *n = nk * c->head_dim_qk;
            return o->dk;
        default:
            *n = nk * c->head_dim_v;
            return o->dv;
    }
}

/* dst = the exact outputs, each rounded once to its storage (a perfect kernel). */
static __attribute__((unused)) void fx_perfect(const af_prepared *p, af_outputs *dst) {
    const af_case *c = &p->c;
    CHECK(af_outputs_alloc(dst, c) == 0);
    af_storage st = c->dtype == AF_DT_FP16 ? AF_ST_F16 : AF_ST_BF16;
    af_tensor_id ids[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    for (int t = 0; t < (c->backward ? 5 : 2); t++) {
        size_t n;
        double *d = fx_tensor(c, dst, ids[t], &n);
        const double *s = fx_tensor(c, (af_outputs *)&p->oracle.out, ids[t], &n);
        for (size_t e = 0; e < n; e++) {
            uint8_t tmp[4];
            af_storage store = ids[t] == AF_T_LSE ? AF_ST_F32 : st;
            af_storage_store(store, tmp, 0, (float)s[e]);
            d[e] = isfinite(s[e]) ? af_storage_load(store, tmp, 0) : s[e];
        }
    }
}

/* dst (allocated) = src, every tensor of case c. */
static __attribute__((unused)) void fx_copy(const af_case *c, const af_outputs *src, af_outputs *dst) {
    af_tensor_id ids[5] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    for (int t = 0; t < (c->backward ? 5 : 2); t++) {
        size_t n;
        double *d = fx_tensor(c, dst, ids[t], &n);
        memcpy(d, fx_tensor(c, (af_outputs *)src, ids[t], &n), n * sizeof(double));
    }
}

/* Run backend be on the prepared case p and judge it whole (no probes; the oracle's default
 * options, cpu the reference), the run's tensors into *out and its outputs read into *k
 * (allocated here; the caller frees both). */
static __attribute__((unused)) void fx_judge_run(af_prepared *p, af_backend *cpu, af_backend *be, af_verdict *v,
                                                 af_tensors *out, af_outputs *k) {
    af_runner r;
    memset(&r, 0, sizeof r);
    af_oracle_opts_default(&r.oracle);
    r.reference = cpu;
    af_judge(&r, p, be, "", v, out);
    CHECK(af_outputs_alloc(k, &p->c) == 0);
    af_outputs_read(out, &p->c, k);
}

/* fx_judge_run, then print "who: <verdict line>" and require a pass. */
static __attribute__((unused)) void fx_judge_run_passes(af_prepared *p, af_backend *cpu, af_backend *be,
                                                        const char *who, af_verdict *v, af_tensors *out,
                                                        af_outputs *k) {
    fx_judge_run(p, cpu, be, v, out, k);
    char line[1024];
    af_verdict_line(v, line, sizeof line);
    printf("%s: %s\n", who, line);
    CHECK_MSG(v->kind == AF_V_PASS, "%s does not pass: %s", who, line);
}

/* Judge kernel k; returns the number of findings, *worst the largest tensor ratio. */
static __attribute__((unused)) int fx_judge(const af_prepared *p, const af_outputs *k, af_verdict *v, double *worst) {
    af_verdict_init(v, "test");
    int n = af_compare_outputs(&p->c, k, &p->ref, &p->oracle, &p->terms, v);
    *worst = 0;
    for (int t = 0; t < AF_T_COUNT; t++)
        if (v->stats[t].judged && v->stats[t].ratio > *worst) *worst = v->stats[t].ratio;
    return n;
}

/* The criterion at its edge on element e of O (row `row` of head h, batch 0), the oracle's
 * outputs standing for both the exact values and the reference: k (allocated, a copy of
 * them) gets a tiny error there to read the row's allowance (returned); then 0.98 x the
 * allowance must pass (*pass_ratio <= 1) and -1.02 x must be an O mismatch at (h, row)
 * (*fail_ratio). k is left holding the last. */
static __attribute__((unused)) double fx_edge_o(const af_prepared *p, af_outputs *k, size_t e, int row, int h,
                                                double *pass_ratio, double *fail_ratio) {
    const af_case *c = &p->c;
    const af_outputs *ex = &p->oracle.out;
    af_verdict v;
    k->o[e] = ex->o[e] + 0x1p-40;
    af_verdict_init(&v, "test");
    CHECK(af_compare_outputs(c, k, ex, &p->oracle, &p->terms, &v) == 0);
    double allowed = v.stats[AF_T_O].allowed;
    CHECK_MSG(v.stats[AF_T_O].row == row && v.stats[AF_T_O].h == h, "judged at h%d r%d", v.stats[AF_T_O].h,
              v.stats[AF_T_O].row);
    k->o[e] = ex->o[e] + 0.98 * allowed;
    af_verdict_init(&v, "test");
    CHECK(af_compare_outputs(c, k, ex, &p->oracle, &p->terms, &v) == 0);
    *pass_ratio = v.stats[AF_T_O].ratio;
    CHECK(*pass_ratio <= 1);
    k->o[e] = ex->o[e] - 1.02 * allowed;
    af_verdict_init(&v, "test");
    CHECK(af_compare_outputs(c, k, ex, &p->oracle, &p->terms, &v) >= 1);
    CHECK_MSG(v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == AF_T_O &&
                  v.findings[0].row == row && v.findings[0].h == h,
              "1.02 x the allowance: no O mismatch at h%d r%d", h, row);
    *fail_ratio = v.stats[AF_T_O].ratio;
    return allowed;
}

/* The criterion at its edge on element e of tensor id (batch b, head h, row `row`), judged
 * against ref: kernel k holds the exact value there plus a tiny error, which reads the
 * element's allowance (returned; every other element of k must be exact, so this one is the
 * worst); then 0.98 x the allowance must pass (*pass_ratio) and -1.02 x must be a mismatch at
 * that row (*fail_ratio). k is left holding the last. */
static __attribute__((unused)) double fx_edge_element(const af_prepared *p, af_outputs *k, const af_outputs *ref,
                                                      af_tensor_id id, size_t e, int b, int h, int row,
                                                      double *pass_ratio, double *fail_ratio) {
    size_t n;
    double *kx = fx_tensor(&p->c, k, id, &n), *ex = fx_tensor(&p->c, (af_outputs *)&p->oracle.out, id, &n);
    CHECK(e < n);
    af_verdict v;
    double x0 = 1e-12;
    kx[e] = ex[e] + x0;
    af_tensor_stats s = fx_stats(p, k, ref, id, &v);
    CHECK_MSG(s.ratio > 0 && s.row == row && s.h == h && s.b == b, "judged at b%d h%d r%d", s.b, s.h, s.row);
    double allowed = x0 / s.ratio;
    kx[e] = ex[e] + 0.98 * allowed;
    s = fx_stats(p, k, ref, id, &v);
    *pass_ratio = s.ratio;
    CHECK_MSG(s.ratio <= 1 && v.n_findings == 0, "0.98 x: %s ratio %g", af_tensor_name(id), s.ratio);
    kx[e] = ex[e] - 1.02 * allowed;
    s = fx_stats(p, k, ref, id, &v);
    *fail_ratio = s.ratio;
    CHECK_MSG(s.ratio > 1 && v.n_findings >= 1 && v.findings[0].kind == AF_V_MISMATCH && v.findings[0].tensor == id &&
                  v.findings[0].row == row,
              "1.02 x: %s ratio %g, %d findings", af_tensor_name(id), s.ratio, v.n_findings);
    return allowed;
}

/* fx_edge_o on element 5 of O's row 30, head 1 (batch 0) of p, from a copy of the oracle's
 * outputs, printed as "criterion: WHAT, row ...: 0.98x ratio .. passes, 1.02x .. -> mismatch". */
static __attribute__((unused)) void fx_edge_row30(const af_prepared *p, const char *what) {
    const af_case *c = &p->c;
    int row = 30, h = 1, D = c->head_dim_v;
    size_t e = ((size_t)h * c->seqlen_q + row) * D + 5;
    af_outputs k;
    CHECK(af_outputs_alloc(&k, c) == 0);
    fx_copy(c, &p->oracle.out, &k);
    double pass_ratio, fail_ratio;
    double allowed = fx_edge_o(p, &k, e, row, h, &pass_ratio, &fail_ratio);
    printf("criterion: %s, row h%d r%d allowance %.4g: 0.98x ratio %.3f passes, 1.02x %.3f -> mismatch\n", what, h, row,
           allowed, pass_ratio, fail_ratio);
    af_outputs_free(&k);
}

#endif
