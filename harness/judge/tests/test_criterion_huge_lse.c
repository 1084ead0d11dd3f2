/* test_criterion_huge_lse.c — the stored O's share of dK carried by the kernel's own P
 * (judge/criterion/criterion.h af_criterion_stored_o_dd), on
 * corpora/regression/flash-ref-huge-lse-4.case: bf16 backward, one query per (b, h),
 * |LSE| ~ 1e6, so rho_i (P's first-order relative error: the fp32 scores and LSE) is about 1.
 *  1. flash_ref (the correct flash-style plugin) passes the whole judge. Measured on its dK
 *     row of key 1617 (b2 hk1): the error is more than the share with the exact P (dD_i
 *     scale P_ij |q|, the old rule: the row failed at ratio 1.012) and within dD_i (1 + rho_i)
 *     of it: the kernel's P, off by up to rho_i, carries its D error into dK.
 *  2. at the edge: flash_ref's O and LSE (which set dD_i) with the exact gradients except
 *     that element, moved by 0.98 x its allowance, pass; by 1.02 x, a dK mismatch.
 *  3. rows of ordinary size keep their share: rho_i (2^-21 (1 + |LSE|) plus the fp32 scores'
 *     accumulation) is below 2^-16 on every row of an fp16 case without shifted logits, so
 *     the factor moves no share there by more than 2^-16 of itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/tests/criterion_fixture.h"

static const char *const case_path = "corpora/regression/flash-ref-huge-lse-4.case";
enum { B = 2, HK = 1, KEY = 1617, COL = 0 };

int main(void) {
    char text[8192];
    fx_read_case(case_path, text, sizeof text);
    af_prepared p;
    af_backend *cpu;
    fx_prepare(text, &p, &cpu);
    const af_case *c = &p.c;
    CHECK(c->seqlen_q == 1 && c->heads_q == c->heads_kv && c->batch > B && c->heads_kv > HK && c->seqlen_kv > KEY);
    af_backend *flash = fx_load_plugin("flash_ref");

    /* 1. flash_ref's run, judged whole; its dK element against the two shares */
    af_verdict v;
    af_tensors out;
    af_outputs k;
    fx_judge_run_passes(&p, cpu, flash, "flash_ref", &v, &out, &k);
    int D = c->head_dim_qk;
    size_t key_row = ((size_t)B * c->heads_kv + HK) * c->seqlen_kv + KEY, e = key_row * D + COL;
    size_t q_row = ((size_t)B * c->heads_q + HK) * c->seqlen_q; /* the one query of (b2, h1) */
    double rho = p.terms.rho[q_row];
    double *share = af_criterion_stored_o_term(c, AF_T_DK, &p.terms, k.o);
    CHECK(share != NULL);
    double err = fabs(k.dk[e] - p.oracle.out.dk[e]);
    double with_exact_p = share[e] / (1.0 + rho);
    printf("dK key %d col %d: exact %.4g, flash_ref %.4g: error %.4g; share with the exact P %.4g (x %.3f of it), "
           "with the kernel's P (1 + rho = %.3f) %.4g\n",
           KEY, COL, p.oracle.out.dk[e], k.dk[e], err, with_exact_p, err / with_exact_p, 1.0 + rho, share[e]);
    CHECK(rho > 0.5);          /* the regime: P off by tens of percent */
    CHECK(err > with_exact_p); /* the old share does not explain the error */
    CHECK(err <= share[e]);    /* the kernel's P does */
    free(share);

    /* 2. the edge, on flash_ref's O and LSE with the exact gradients */
    size_t n;
    double *kdq = fx_tensor(c, &k, AF_T_DQ, &n);
    memcpy(kdq, p.oracle.out.dq, n * sizeof *kdq);
    double *kdk = fx_tensor(c, &k, AF_T_DK, &n);
    memcpy(kdk, p.oracle.out.dk, n * sizeof *kdk);
    double *kdv = fx_tensor(c, &k, AF_T_DV, &n);
    memcpy(kdv, p.oracle.out.dv, n * sizeof *kdv);
    double at98, at102;
    double allowed = fx_edge_element(&p, &k, &p.ref, AF_T_DK, e, B, HK, KEY, &at98, &at102);
    printf("edge: dK key %d allowance %.4g: 0.98x ratio %.3f passes, 1.02x ratio %.3f -> mismatch\n", KEY, allowed,
           at98, at102);
    af_outputs_free(&k);
    af_tensors_free(&out);
    af_prepared_free(&p);
    cpu->destroy(cpu);

    /* 3. an ordinary case: rho below 2^-16 on every judged row */
    fx_prepare("dtype = fp16\nheads = 2\nseqlen_q = 24\nseqlen_kv = 40\nhead_dim = 16\nbackward = yes\nseed = 3\n", &p,
               &cpu);
    double worst = 0;
    for (size_t i = 0; i < (size_t)p.c.batch * p.c.heads_q * p.c.seqlen_q; i++) worst = fmax(worst, p.terms.rho[i]);
    printf("ordinary fp16 case: largest rho %.3g (2^-16 = %.3g)\n", worst, 0x1p-16);
    CHECK(worst > 0 && worst < 0x1p-16);
    af_prepared_free(&p);
    flash->destroy(flash);
    cpu->destroy(cpu);
    CHECK_DONE("test_criterion_huge_lse");
}
