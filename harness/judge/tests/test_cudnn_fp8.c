/* test_cudnn_fp8.c — the cudnn backend's FP8 (E4M3, per-tensor scaling) forward and
 * backward.
 *
 * Part 1 (any machine with the CUDA build, no GPU needed): which fp8_e4m3 cases the
 * backend builds a graph for (af_sdpa_desc_make) and the one-line reason for the rest:
 * backward with d != 128, d_qk != d_v, d % 16, d > 256, bottom-right causal, thd, bhsd,
 * paged KV, windows, mxfp8.
 *
 * Part 2 (GPU + cuDNN): every fp8 case of corpora/gpu/fp8-*.case plus a few small ones
 * runs through the harness's own path (af_prepare: inputs, MPFR/fp64 oracle, the cpu
 * reference that mirrors cuDNN's FP8 recipe of model/tensors.h; af_judge: poison,
 * guards, NaN, err <= 2 err_ref + floor) on EVERY engine config the backend lists, one
 * line per engine. Also checked: the graph's amax outputs (Amax_S = max P in (0, 1],
 * = 1 when some row sees one key; Amax_O = max |O| before scale_o, close to the
 * oracle's max |O|), and how many O bytes equal the cpu reference's (information).
 * Backward cases (corpora/gpu/fp8-*-bwd.case and small extras; cuDNN's SM90 FP8
 * backward, cudnn_graph_bwd_fp8.c) are judged the same way on every engine config:
 * dQ, dK, dV (E4M3, dequantised) against the oracle with the normal criterion, one line
 * per engine with the O/LSE/dQ/dK/dV ratios, the scales the harness chose and the
 * Amax_dP/dQ/dK/dV the graph wrote. Checked: each Amax_dX (before scale_dX) lies within
 * allowed(dX) + max|oracle dX| / 16 of max|oracle dX| (|max|a| - max|b|| <= max|a - b|,
 * plus one E4M3 half-ulp for the stored value), Amax_dP within a factor 2 of the exact
 * max |dS| (fp8_bwd_exact.h; D uses the E4M3 O, so not closer) and Amax_dP * scale_dp
 * <= 448 (no saturation of dS). Gradient failures are counted separately from O/LSE
 * ones (the FP8 forward's LSE is finding F5).
 * Known cuDNN finding F8 (docs/cudnn-findings.md: FP8 backward with a causal mask on SM90,
 * dQ/dK off; cudnn-frontend blocks its own masked FP8 backward tests on Hopper): a run of
 * one of F8's two corpus cases whose only findings are dQ/dK mismatches, with O, LSE, dV,
 * every amax check and the scales in order, is counted and printed as "KNOWN F8", not as
 * a failure; any other failure of those cases (a crash, a forward or dV finding, an amax
 * complaint) still fails the test, and the count of F8 runs is printed at the end. A
 * campaign or `attnfuzz run` still reports those runs as mismatches: only this test of
 * the backend's plumbing sets them apart.
 * Without a GPU or cuDNN, part 2 prints SKIP and the test passes.
 * ATTNFUZZ_CUDNN_TEST_ENGINES=default runs only the default engine per case.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "util/config.h"
#include "backends/cudnn/cudnn_backend.h"
#include "judge/runner.h"
#include "util/check.h"
#include "judge/tests/fp8_bwd_exact.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include "backends/cudnn/cudnn_sdpa.h"
#endif

static void parse(const char *text, af_case *c) {
    af_error err;
    CHECK_MSG(af_case_parse(text, "test_cudnn_fp8", c, &err) == 0, "%s: %s\n%s", err.field, err.message, text);
}

#ifdef ATTNFUZZ_HAVE_CUDA
/* Part 1: the backend's own fp8 support surface (no device needed). */
static void test_support_surface(void) {
    static const struct {
        const char *text;
        const char *decline; /* NULL = served; else a word of the reason */
    } t[] = {
        {"dtype = fp8_e4m3\nbatch = 2\nheads = 4\nseqlen = 256\nhead_dim = 128\nmask = causal\n", NULL},
        {"dtype = fp8_e4m3\nheads = 4\nseqlen_q = 128\nseqlen_kv = 192\nhead_dim = 64\nlayout = sbhd\n", NULL},
        {"dtype = fp8_e4m3\nbatch = 2\nheads = 4\nseqlen = 128\nseqlens_q = 100,128\nseqlens_kv = 100,128\n"
         "head_dim = 128\nmask = padding_causal\n",
         NULL},
        {"dtype = fp8_e4m3\nheads_q = 8\nheads_kv = 2\nseqlen = 256\nhead_dim = 256\nmask = causal\n", NULL},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 128\nbackward = yes\n", NULL},
        {"dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 256\nseqlens_q = 200,256\n"
         "seqlens_kv = 256,130\nhead_dim = 128\nmask = padding_causal\nlayout = sbhd\nbackward = yes\n",
         NULL},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 64\nbackward = yes\n", "head_dim_qk = head_dim_v = 128"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim_qk = 128\nhead_dim_v = 64\nbackward = yes\n",
         "head_dim_qk = head_dim_v = 128"},
        {"dtype = fp8_e4m3\nbatch = 2\nheads = 2\nseqlen = 128\nseqlens_q = 10,128\nseqlens_kv = 10,128\n"
         "head_dim = 128\nlayout = thd\nmask = padding\nbackward = yes\n",
         "thd"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 128\nlayout = bhsd\nbackward = yes\n", "bhsd"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal\nwindow = 16,-1\n"
         "backward = yes\n",
         "window"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal_bottom_right\nbackward = yes\n",
         "Blackwell"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim_qk = 128\nhead_dim_v = 64\n", "head_dim_qk"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 40\n", "% 16"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 288\n", "<= 256"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen_q = 32\nseqlen_kv = 64\nhead_dim = 64\nmask = causal_bottom_right\n",
         "Blackwell"},
        {"dtype = fp8_e4m3\nbatch = 2\nheads = 2\nseqlen = 64\nseqlens_q = 10,64\nseqlens_kv = 10,64\nhead_dim = 64\n"
         "layout = thd\nmask = padding\n",
         "thd"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 64\nlayout = bhsd\n", "bhsd"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 64\npage_size = 32\n", "paged"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 64\nmask = causal\nwindow = 16,-1\n", "window"},
        {"dtype = mxfp8\nheads = 2\nseqlen = 64\nhead_dim = 64\n", "Blackwell"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        af_case c;
        parse(t[i].text, &c);
        af_layout_plan *p = malloc(sizeof *p);
        CHECK(p);
        char why[512] = "";
        CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
        af_sdpa_desc d;
        int rc = af_sdpa_desc_make(&c, p, 91900, &d, why, sizeof why);
        free(p);
        if (!t[i].decline) {
            CHECK_MSG(rc == 0, "case %zu should be served: %s", i, why);
            CHECK(d.fp8 && d.io == CUDNN_DATA_FP8_E4M3 && !af_sdpa_unified_applies(&d));
        } else {
            CHECK_MSG(rc != 0, "case %zu should be declined", i);
            CHECK_MSG(strstr(why, t[i].decline) && !strchr(why, '\n'), "case %zu: reason '%s' lacks '%s'", i, why,
                      t[i].decline);
        }
        printf("surface %2zu: %s%s\n", i, rc ? "declined: " : "served", rc ? why : "");
    }
    /* cuDNN versions without FP8 SDPA */
    af_case c;
    parse(t[0].text, &c);
    af_layout_plan *p = malloc(sizeof *p);
    CHECK(p);
    char why[512];
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    af_sdpa_desc d;
    CHECK(af_sdpa_desc_make(&c, p, 90000, &d, why, sizeof why) != 0 && strstr(why, "9.1.0"));
    CHECK(af_sdpa_desc_make(&c, p, 91000, &d, why, sizeof why) != 0 && strstr(why, "9.10.0"));
    CHECK(af_sdpa_desc_make(&c, p, 91400, &d, why, sizeof why) == 0);
    free(p);
}
#endif

/* Small extra cases (the corpus files are read from corpora/gpu/). */
static const char *const extra[] = {
    "dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen = 64\nhead_dim = 64\nmask = causal\nseed = 811\n",
    "dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 1\nseqlen_q = 96\nseqlen_kv = 160\nhead_dim = 128\n"
    "seed = 812\ndata = uniform:4\n",
    /* (d = 256 is F4: eng2_k24=32 faults with an illegal address and the context is lost
     * for the rest of the process; its reproducer is corpora/regression/
     * cudnn-fp8-d256-illegal-address.case, so it is not run here) */
    "dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal\nseed = 813\n"
    "data = normal:1 low_lse:0.25:30\n",
    /* backward: small causal, padding_causal GQA (seq_len overrides), uniform data */
    "dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal\nbackward = yes\nseed = 831\n",
    "dtype = fp8_e4m3\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 256\nseqlens_q = 200,256\n"
    "seqlens_kv = 256,130\nhead_dim = 128\nmask = padding_causal\nbackward = yes\nseed = 832\n",
    "dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen_q = 256\nseqlen_kv = 128\nhead_dim = 128\nlayout = sbhd\n"
    "backward = yes\nseed = 833\ndata = uniform:3\n",
};

static const char *const corpus[] = {
    "corpora/gpu/fp8-causal-b2h4s256d128-fwd.case",       "corpora/gpu/fp8-nomask-s128-d64-fwd.case",
    "corpora/gpu/fp8-padding-causal-d128-fwd.case",       "corpora/gpu/fp8-gqa-8to2-causal-d128-fwd.case",
    "corpora/gpu/fp8-causal-b2h4s256d128-bwd.case",       "corpora/gpu/fp8-nomask-sbhd-s128x256-d128-bwd.case",
    "corpora/gpu/fp8-gqa-4to2-causal-sbhd-d128-bwd.case",
};

static int failures = 0, grad_failures = 0, bwd_runs = 0, known_f8 = 0;

/* F8's reproducers (docs/cudnn-findings.md) */
static const char *const f8_cases[] = {"corpora/gpu/fp8-causal-b2h4s256d128-bwd.case",
                                       "corpora/gpu/fp8-gqa-4to2-causal-sbhd-d128-bwd.case"};

/* Is this run F8 as documented: a case of f8_cases, every finding a dQ or dK mismatch
 * (at least one), and nothing else wrong (amax_bad, bwd_bad: the run's complaints)? */
static bool is_known_f8(const char *label, const af_verdict *v, const char *amax_bad, const char *bwd_bad) {
    bool listed = false;
    for (size_t i = 0; i < sizeof f8_cases / sizeof f8_cases[0]; i++) listed |= strcmp(label, f8_cases[i]) == 0;
    if (!listed || v->kind != AF_V_MISMATCH || v->n_findings == 0 || v->n_findings > AF_MAX_FINDINGS) return false;
    if (amax_bad[0] || bwd_bad[0]) return false;
    for (int f = 0; f < v->n_findings; f++)
        if (v->findings[f].kind != AF_V_MISMATCH ||
            (v->findings[f].tensor != AF_T_DQ && v->findings[f].tensor != AF_T_DK))
            return false;
    return true;
}

/* Backward part of one engine run: gradient ratios, the scales and the amax outputs.
 * Returns the amax complaint ("" when none). */
static const char *bwd_report(af_backend *be, const af_case *c, const af_prepared *prep, const af_verdict *v,
                              double ds_exact, char *line, size_t cap) {
    float amax[4] = {NAN, NAN, NAN, NAN};
    bool have = af_cudnn_last_fp8_bwd_amax(be, amax) == 0;
    static const af_tensor_id ids[3] = {AF_T_DQ, AF_T_DK, AF_T_DV};
    const double *ex[3] = {prep->oracle.out.dq, prep->oracle.out.dk, prep->oracle.out.dv};
    const float desc[3] = {prep->tensors.descale_dq, prep->tensors.descale_dk, prep->tensors.descale_dv};
    const char *bad = !have ? " [bwd amax: not read back]" : "";
    size_t n = (size_t)snprintf(line, cap,
                                "dQ %.3f dK %.3f dV %.3f | Amax_dP %.6g (exact max|dS| %.6g, x scale_dp "
                                "%.4g = %.4g)",
                                v->stats[AF_T_DQ].ratio, v->stats[AF_T_DK].ratio, v->stats[AF_T_DV].ratio,
                                (double)amax[0], ds_exact, 1.0 / (double)prep->tensors.descale_dp,
                                (double)amax[0] / (double)prep->tensors.descale_dp);
    if (have && !(amax[0] >= 0.5 * ds_exact && amax[0] <= 2.0 * ds_exact)) bad = " [Amax_dP not within 2x of max|dS|]";
    if (have && !((double)amax[0] / (double)prep->tensors.descale_dp <= 448.0))
        bad = " [dS saturates: Amax_dP * scale_dp > 448]";
    for (int t = 0; t < 3; t++) {
        bool kv = ids[t] != AF_T_DQ;
        double m = max_abs_rows(c, ex[t], kv, ids[t] == AF_T_DV ? c->head_dim_v : c->head_dim_qk);
        double slack = v->stats[ids[t]].allowed + m / 16;
        if (n < cap)
            n += (size_t)snprintf(line + n, cap - n, " Amax_%s %.6g (max|oracle| %.6g, scale %.4g)",
                                  af_tensor_name(ids[t]), (double)amax[t + 1], m, 1.0 / (double)desc[t]);
        if (have && !(fabs((double)amax[t + 1] - m) <= slack)) bad = " [Amax_dQ/dK/dV far from max|oracle|]";
    }
    return bad;
}

/* max |x| over the judged (non fully masked, valid) rows of a dense O. */
static double max_abs_o(const af_case *c, const double *o) {
    double m = 0;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++)
            for (int i = 0; i < af_case_len_q(c, b); i++)
                for (int d = 0; d < c->head_dim_v; d++) {
                    double x = fabs(o[(((size_t)b * c->heads_q + h) * c->seqlen_q + i) * c->head_dim_v + d]);
                    if (x > m) m = x;
                }
    return m;
}

static void run_case(af_backend *be, af_runner *runner, const char *label, const af_case *c, bool only_default) {
    char why[1024];
    af_prepared prep;
    CHECK_MSG(af_prepare(runner, c, &prep, why, sizeof why) == 0, "%s: %s", label, why);
    CHECK_MSG(prep.have_ref, "%s: no cpu reference: %s", label, prep.ref_note);
    static char names[64][AF_NAME_MAX];
    int n = 1;
    strcpy(names[0], "");
    if (be->supports(be, c, why, sizeof why) != AF_RUN_OK) {
        printf("%s: DECLINED %s\n", label, why);
        failures++;
        af_prepared_free(&prep);
        return;
    }
    if (!only_default) {
        n = be->engines(be, c, names, 64, why, sizeof why);
        if (n <= 0) {
            printf("%s: no engine: %s\n", label, n < 0 ? why : "none finalizes");
            if (c->backward) { /* the op list and every candidate with cuDNN's own message */
                char w2[512];
                af_cudnn_engines_report(be, c, stdout, w2, sizeof w2);
                grad_failures++;
            }
            failures++;
            af_prepared_free(&prep);
            return;
        }
    }
    double oracle_max = max_abs_o(c, prep.oracle.out.o);
    double ds_exact = c->backward ? fp8_exact_ds_amax(c, &prep.inputs, &prep.oracle.out) : 0;
    if (c->backward)
        printf("%s: backward scales (harness, before the run): descale_do %.4g scale_dp %.4g scale_dq %.4g "
               "scale_dk %.4g scale_dv %.4g; exact max|dS| %.6g\n",
               label, (double)prep.tensors.descale_do, 1.0 / (double)prep.tensors.descale_dp,
               1.0 / (double)prep.tensors.descale_dq, 1.0 / (double)prep.tensors.descale_dk,
               1.0 / (double)prep.tensors.descale_dv, ds_exact);
    bool one_key_row = c->mask == AF_MASK_CAUSAL && c->align == AF_ALIGN_TOP_LEFT; /* row 0 sees key 0 only */
    for (int e = 0; e < n; e++) {
        af_verdict v;
        af_tensors out;
        memset(&out, 0, sizeof out);
        af_judge(runner, &prep, be, names[e], &v, &out);
        float amax_s = NAN, amax_o = NAN;
        bool have_amax = af_cudnn_last_fp8_amax(be, &amax_s, &amax_o) == 0;
        /* O bytes equal to the cpu reference's (information: both follow the recipe) */
        long long same = 0, total = 0;
        if (out.alloc[AF_BUF_O]) {
            af_outputs got;
            if (af_outputs_alloc(&got, c) == 0) {
                af_outputs_read(&out, c, &got);
                for (int b = 0; b < c->batch; b++)
                    for (int h = 0; h < c->heads_q; h++)
                        for (int i = 0; i < af_case_len_q(c, b); i++)
                            for (int d = 0; d < c->head_dim_v; d++) {
                                size_t k = (((size_t)b * c->heads_q + h) * c->seqlen_q + i) * c->head_dim_v + d;
                                same += got.o[k] == prep.ref.o[k];
                                total++;
                            }
                af_outputs_free(&got);
            }
        }
        char bwd_line[900] = "";
        const char *bwd_bad = "";
        bool grads_ok = true;
        if (c->backward) {
            bwd_runs++;
            bwd_bad = bwd_report(be, c, &prep, &v, ds_exact, bwd_line, sizeof bwd_line);
            if (out.alloc[AF_BUF_DQ]) { /* gradient values equal to the cpu reference's (information) */
                af_outputs got;
                if (af_outputs_alloc(&got, c) == 0) {
                    af_outputs_read(&out, c, &got);
                    const double *gk[3] = {got.dq, got.dk, got.dv}, *gr[3] = {prep.ref.dq, prep.ref.dk, prep.ref.dv};
                    size_t used = strlen(bwd_line);
                    for (int t = 0; t < 3; t++) {
                        bool kv = t > 0;
                        int H = kv ? c->heads_kv : c->heads_q, S = kv ? c->seqlen_kv : c->seqlen_q;
                        int D = t == 2 ? c->head_dim_v : c->head_dim_qk;
                        long long eq = 0, all = 0;
                        for (int b = 0; b < c->batch; b++)
                            for (int h = 0; h < H; h++)
                                for (int i = 0; i < (kv ? af_case_len_kv(c, b) : af_case_len_q(c, b)); i++)
                                    for (int d = 0; d < D; d++) {
                                        size_t k = (((size_t)b * H + h) * S + i) * D + d;
                                        eq += gk[t][k] == gr[t][k];
                                        all++;
                                    }
                        if (used < sizeof bwd_line)
                            used += (size_t)snprintf(bwd_line + used, sizeof bwd_line - used, "%s%s = cpu ref %.1f%%",
                                                     t ? ", " : " | ",
                                                     t == 0   ? "dQ"
                                                     : t == 1 ? "dK"
                                                              : "dV",
                                                     all ? 100.0 * (double)eq / (double)all : 0.0);
                    }
                    af_outputs_free(&got);
                }
            }
            for (int f = 0; f < v.n_findings; f++)
                if (v.findings[f].tensor == AF_T_DQ || v.findings[f].tensor == AF_T_DK ||
                    v.findings[f].tensor == AF_T_DV)
                    grads_ok = false;
            if (v.kind == AF_V_CRASH || v.kind == AF_V_DECLINED || bwd_bad[0]) grads_ok = false;
            if (!grads_ok) grad_failures++;
        }
        const char *amax_bad = !have_amax ? " [amax: not read back]"
                               /* P = E / Z can exceed 1 by the FP8 score accumulation error
                                * (F5: 1.00016 seen on the outlier GQA case) */
                               : !(amax_s > 0 && amax_s <= 1.0f + 0x1p-10f)  ? " [Amax_S outside (0,1+2^-10]]"
                               : one_key_row && !(amax_s >= 1.0f - 0x1p-20f) ? " [Amax_S < 1 with a one-key row]"
                               : !(fabs((double)amax_o - oracle_max) <= 0.15 * oracle_max + 1e-6)
                                   ? " [Amax_O far from max|O|]"
                                   : "";
        bool ok = v.kind == AF_V_PASS && v.n_findings == 0 && !amax_bad[0] && grads_ok;
        bool known = !ok && c->backward && is_known_f8(label, &v, amax_bad, bwd_bad);
        const char *mark = ok ? "ok  " : known ? "KNOWN F8" : "FAIL";
        char line[600];
        af_verdict_line(&v, line, sizeof line);
        printf("%s engine %-28s %s O ratio %.3f LSE ratio %.3f amax_s %.6g amax_o %.6g (oracle max|O| %.6g) "
               "O bytes = cpu ref %.1f%% ws %lld %.3fs | %s%s\n",
               label, v.info.engine[0] ? v.info.engine : "(default)", mark, v.stats[AF_T_O].ratio,
               v.stats[AF_T_LSE].ratio, (double)amax_s, (double)amax_o, oracle_max,
               total ? 100.0 * (double)same / (double)total : 0.0, v.info.workspace_bytes, v.info.seconds, line,
               amax_bad);
        if (c->backward) {
            /* a failed run: the reason (declined) or the crash/error text (cuDNN's last error) */
            const char *msg = v.kind == AF_V_DECLINED                    ? v.reason
                              : v.kind == AF_V_CRASH && v.n_findings > 0 ? v.findings[0].detail
                                                                         : "";
            printf("%s engine %-28s   backward %s: %s%s%s%s\n", label, v.info.engine[0] ? v.info.engine : "(default)",
                   grads_ok ? "ok  "
                   : known  ? "KNOWN F8"
                            : "FAIL",
                   bwd_line, bwd_bad, msg[0] ? " | " : "", msg);
        }
        if (known) {
            known_f8++;
            grad_failures--; /* counted above; reported on its own */
        } else if (!ok)
            failures++;
        af_tensors_free(&out);
    }
    af_prepared_free(&prep);
}

int main(int argc, char **argv) {
#ifdef ATTNFUZZ_HAVE_CUDA
    test_support_surface();
#endif
    af_backend *be = af_backend_cudnn_new();
    CHECK(be != NULL);
    char why[512];
    if (be->available(be, why, sizeof why) != 0) {
        printf("SKIP test_cudnn_fp8 (device part, after %d support-surface checks): %s\n", check_count_, why);
        be->destroy(be);
        return CHECK_SKIP_CODE;
    }
    char desc[700];
    af_cudnn_describe(be, desc, sizeof desc);
    printf("test_cudnn_fp8: %s\n", desc);
    {
        /* The FP8 graph is served by default; ATTNFUZZ_CUDNN_FP8=0 switches it off: then a
         * served shape must be declined with that reason, and the engine runs are not made. */
        const char *optout = af_config_get(AF_CFG_CUDNN_FP8);
        if (optout && strcmp(optout, "0") == 0) {
            af_case c;
            parse("dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal\n", &c);
            CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "ATTNFUZZ_CUDNN_FP8=0"));
            printf("fp8 engine runs not made: the cuDNN FP8 graph is switched off (ATTNFUZZ_CUDNN_FP8=0)\n");
            be->destroy(be);
            CHECK_DONE("test_cudnn_fp8");
        }
    }
    const char *sel = af_config_get(AF_CFG_CUDNN_TEST_ENGINES);
    bool only_default = sel && strcmp(sel, "default") == 0;
    af_runner runner;
    memset(&runner, 0, sizeof runner);
    af_oracle_opts_default(&runner.oracle);
    runner.reference = af_backend_cpu_new();
    CHECK(runner.reference);
    int only = argc > 1 ? atoi(argv[1]) : -1;
    int idx = 0;
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++, idx++) {
        if (only >= 0 && only != idx) continue;
        af_case c;
        af_error err;
        CHECK_MSG(af_case_load(corpus[i], &c, &err) == 0, "%s: %s", corpus[i], err.message);
        run_case(be, &runner, corpus[i], &c, only_default);
    }
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++, idx++) {
        if (only >= 0 && only != idx) continue;
        af_case c;
        parse(extra[i], &c);
        char label[64];
        snprintf(label, sizeof label, "extra %zu", i);
        run_case(be, &runner, label, &c, only_default);
    }
    /* a backward the SM90 FP8 graph cannot serve is declined with the field named */
    af_case c;
    parse("dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 64\nmask = causal\nbackward = yes\n", &c);
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "head_dim"));
    runner.reference->destroy(runner.reference);
    be->destroy(be);
    printf("test_cudnn_fp8: %d engine runs failed (%d of %d backward runs with a gradient or amax failure); "
           "%d backward runs are the known cuDNN finding F8 (docs/cudnn-findings.md)%s\n",
           failures, grad_failures, bwd_runs, known_f8, known_f8 ? "" : ": F8 did not reproduce here");
    CHECK_MSG(failures == 0, "%d fp8 engine runs failed (%d backward runs with gradient/amax failures)", failures,
              grad_failures);
    CHECK_DONE("test_cudnn_fp8");
}
