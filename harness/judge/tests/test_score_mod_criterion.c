/* test_score_mod_criterion.c — the score_mod terms of the criterion (judge/verdict.h
 * AF_SCORE_MOD_TRIG_ABS, AF_SCORE_MOD_SQR_REL; criterion.h af_criterion_score_mod_*), at
 * their edge, on two backward cases:
 *   squared: fp16, 2 heads, 64 tokens (|r| up to a few units: f' = 2 r amplifies r's error);
 *   trig:    bf16, 12 sequences (tan(11) = -225.95: the largest tan(b) of the first twelve),
 *            causal, 16 tokens.
 * For each:
 *  1. the cpu backend (fp32 f from glibc's sinf, cosf, tanf) passes the whole judge;
 *  2. with the oracle's outputs standing for the kernel and the reference (the allowance is
 *     the budgets' alone), one element of O, dQ and dK moved by 0.98 x its allowance passes
 *     and by 1.02 x is a mismatch at its row (criterion_fixture.h fx_edge_element);
 *  3. the LSE of that row likewise, and its allowance holds the score_mod's shares (f's own
 *     error and, for trig, tan(b)'s, which dominates at b = 11): an LSE off by them alone
 *     passes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/criterion/criterion.h"
#include "judge/tests/criterion_fixture.h"
#include "judge/verdict.h"

typedef struct {
    const char *name, *text;
    int b, h, row, key; /* the element's sequence, head, query row and key */
} sm_case;

static const sm_case cases[2] = {
    {"squared fp16",
     "dtype = fp16\nbatch = 1\nheads = 2\nseqlen = 64\nhead_dim = 32\nbackward = yes\nscore_mod = squared\n"
     "seed = 11\n",
     0, 1, 30, 17},
    {"trig bf16 causal",
     "dtype = bf16\nbatch = 12\nheads = 1\nseqlen = 16\nhead_dim = 32\nmask = causal\nbackward = yes\n"
     "score_mod = trig\nseed = 5\n",
     11, 0, 15, 3},
};

int main(void) {
    for (int t = 0; t < 2; t++) {
        const sm_case *sc = &cases[t];
        af_prepared p;
        af_backend *cpu;
        fx_prepare(sc->text, &p, &cpu);
        const af_case *c = &p.c;
        CHECK(c->score_mod != AF_SCORE_MOD_NONE);

        /* 1. the cpu backend, judged whole */
        af_backend *kernel = af_backend_cpu_new();
        af_verdict v;
        af_tensors out;
        af_outputs k;
        fx_judge_run_passes(&p, cpu, kernel, sc->name, &v, &out, &k);
        af_outputs_free(&k);
        af_tensors_free(&out);
        kernel->destroy(kernel);

        /* 2. the edge on O, dQ, dK: the exact outputs but that element */
        CHECK(af_outputs_alloc(&k, c) == 0);
        fx_copy(c, &p.oracle.out, &k);
        int H = c->heads_q, S = c->seqlen_q, D = c->head_dim_qk;
        size_t row = ((size_t)sc->b * H + sc->h) * S + sc->row;
        size_t key = ((size_t)sc->b * c->heads_kv + sc->h) * c->seqlen_kv + sc->key;
        struct {
            af_tensor_id id;
            size_t e;
            int r;
        } edges[3] = {{AF_T_O, row * c->head_dim_v + 5, sc->row},
                      {AF_T_DQ, row * D + 7, sc->row},
                      {AF_T_DK, key * D + 3, sc->key}};
        for (int x = 0; x < 3; x++) {
            double at98, at102;
            double allowed = fx_edge_element(&p, &k, &p.oracle.out, edges[x].id, edges[x].e, sc->b, sc->h, edges[x].r,
                                             &at98, &at102);
            printf("%s: %s b%d h%d r%d allowance %.4g: 0.98x ratio %.3f passes, 1.02x %.3f -> mismatch\n", sc->name,
                   af_tensor_name(edges[x].id), sc->b, sc->h, edges[x].r, allowed, at98, at102);
            fx_copy(c, &p.oracle.out, &k); /* exact again */
        }

        /* 3. the LSE row: its allowance holds the score_mod's shares */
        {
            double at98, at102;
            double allowed =
                fx_edge_element(&p, &k, &p.oracle.out, AF_T_LSE, row, sc->b, sc->h, sc->row, &at98, &at102);
            /* r's magnitude over the row (a bound of every |r_ij|), from the dense inputs */
            const double *q = p.inputs.q + row * D;
            double r_abs = 0;
            for (int j = 0; j < c->seqlen_kv; j++) {
                const double *kk = p.inputs.k + (((size_t)sc->b * c->heads_kv + sc->h) * c->seqlen_kv + j) * D;
                double a = 0;
                for (int d = 0; d < D; d++) a += fabs(q[d] * kk[d]);
                r_abs = fmax(r_abs, a * fabs((double)af_case_scale(c)));
            }
            double share =
                af_criterion_score_mod_err(c->score_mod, r_abs) + af_criterion_score_mod_tan_err(c->score_mod, sc->b);
            printf("%s: LSE b%d h%d r%d allowance %.4g (score_mod shares %.4g): 0.98x ratio %.3f passes, 1.02x %.3f "
                   "-> mismatch\n",
                   sc->name, sc->b, sc->h, sc->row, allowed, share, at98, at102);
            CHECK_MSG(share > 0 && allowed >= share, "the LSE allowance %g lacks the score_mod's %g", allowed, share);
            if (c->score_mod == AF_SCORE_MOD_TRIG) /* tan(11)^2 = 51052: tan(b)'s share dominates */
                CHECK(af_criterion_score_mod_tan_err(c->score_mod, sc->b) > 1e3 * AF_SCORE_MOD_TRIG_ABS);
            fx_copy(c, &p.oracle.out, &k);
            double *lse = fx_tensor(c, &k, AF_T_LSE, &(size_t){0});
            lse[row] = p.oracle.out.lse[row] + share; /* off by the shares alone */
            af_tensor_stats s = fx_stats(&p, &k, &p.oracle.out, AF_T_LSE, &v);
            CHECK_MSG(s.ratio <= 1 && v.n_findings == 0, "an LSE off by the score_mod's shares: ratio %g", s.ratio);
        }
        af_outputs_free(&k);
        af_prepared_free(&p);
        cpu->destroy(cpu);
    }
    CHECK_DONE("test_score_mod_criterion");
}
