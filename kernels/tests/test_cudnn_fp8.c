/* test_cudnn_fp8.c — the cudnn backend's FP8 (E4M3, per-tensor scaling) forward.
 *
 * Part 1 (any machine with the CUDA build, no GPU needed): which fp8_e4m3 cases the
 * backend builds a graph for (af_sdpa_desc_make) and the one-line reason for the rest:
 * backward, d_qk != d_v, d % 16, d > 256, bottom-right causal, thd, bhsd, paged KV,
 * windows, mxfp8.
 *
 * Part 2 (GPU + cuDNN): every fp8 case of corpora/gpu/fp8-*.case plus a few small ones
 * runs through the harness's own path (af_prepare: inputs, MPFR/fp64 oracle, the cpu
 * reference that mirrors cuDNN's FP8 recipe of attnfuzz/tensors.h; af_judge: poison,
 * guards, NaN, err <= 2 err_ref + floor) on EVERY engine config the backend lists, one
 * line per engine. Also checked: the graph's amax outputs (Amax_S = max P in (0, 1],
 * = 1 when some row sees one key; Amax_O = max |O| before scale_o, close to the
 * oracle's max |O|), and how many O bytes equal the cpu reference's (information).
 * Without a GPU or cuDNN, part 2 prints SKIP and the test passes.
 * ATTNFUZZ_CUDNN_TEST_ENGINES=default runs only the default engine per case.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/backend.h"
#include "attnfuzz/cudnn_backend.h"
#include "attnfuzz/runner.h"
#include "check.h"

#ifdef ATTNFUZZ_HAVE_CUDA
#include "../../harness/backends/cudnn_sdpa.h"
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
         "head_dim = 128\nmask = padding_causal\n", NULL},
        {"dtype = fp8_e4m3\nheads_q = 8\nheads_kv = 2\nseqlen = 256\nhead_dim = 256\nmask = causal\n", NULL},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 128\nbackward = yes\n", "backward"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim_qk = 128\nhead_dim_v = 64\n", "head_dim_qk"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 40\n", "% 16"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen = 64\nhead_dim = 288\n", "<= 256"},
        {"dtype = fp8_e4m3\nheads = 2\nseqlen_q = 32\nseqlen_kv = 64\nhead_dim = 64\nmask = causal_bottom_right\n",
         "Blackwell"},
        {"dtype = fp8_e4m3\nbatch = 2\nheads = 2\nseqlen = 64\nseqlens_q = 10,64\nseqlens_kv = 10,64\nhead_dim = 64\n"
         "layout = thd\nmask = padding\n", "thd"},
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
    "dtype = fp8_e4m3\nbatch = 1\nheads = 2\nseqlen = 128\nhead_dim = 256\nmask = causal\nseed = 813\n"
    "data = normal:1 low_lse:0.25:30\n",
};

static const char *const corpus[] = {
    "corpora/gpu/fp8-causal-b2h4s256d128-fwd.case",
    "corpora/gpu/fp8-nomask-s128-d64-fwd.case",
    "corpora/gpu/fp8-padding-causal-d128-fwd.case",
    "corpora/gpu/fp8-gqa-8to2-causal-d128-fwd.case",
};

static int failures = 0;

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
            failures++;
            af_prepared_free(&prep);
            return;
        }
    }
    double oracle_max = max_abs_o(c, prep.oracle.out.o);
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
        const char *amax_bad = !have_amax                                          ? " [amax: not read back]"
                               : !(amax_s > 0 && amax_s <= 1.0f + 0x1p-20f)        ? " [Amax_S outside (0,1]]"
                               : one_key_row && !(amax_s >= 1.0f - 0x1p-20f)       ? " [Amax_S < 1 with a one-key row]"
                               : !(fabs((double)amax_o - oracle_max) <= 0.15 * oracle_max + 1e-6)
                                   ? " [Amax_O far from max|O|]"
                                   : "";
        bool ok = v.kind == AF_V_PASS && v.n_findings == 0 && !amax_bad[0];
        char line[600];
        af_verdict_line(&v, line, sizeof line);
        printf("%s engine %-28s %s O ratio %.3f LSE ratio %.3f amax_s %.6g amax_o %.6g (oracle max|O| %.6g) "
               "O bytes = cpu ref %.1f%% ws %lld %.3fs | %s%s\n",
               label, v.info.engine[0] ? v.info.engine : "(default)", ok ? "ok  " : "FAIL",
               v.stats[AF_T_O].ratio, v.stats[AF_T_LSE].ratio, (double)amax_s, (double)amax_o, oracle_max,
               total ? 100.0 * (double)same / (double)total : 0.0, v.info.workspace_bytes, v.info.seconds, line,
               amax_bad);
        if (!ok) failures++;
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
        printf("SKIP test_cudnn_fp8 (device part): %s\n", why);
        be->destroy(be);
        return 0;
    }
    char desc[700];
    af_cudnn_describe(be, desc, sizeof desc);
    printf("test_cudnn_fp8: %s\n", desc);
    {
        /* The FP8 graph is opt-in (docs/cudnn-findings.md): without the switch a served
         * shape must be declined with the reason, and the engine runs are not made. */
        const char *optin = getenv("ATTNFUZZ_CUDNN_FP8");
        if (!optin || strcmp(optin, "1") != 0) {
            af_case c;
            parse("dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal\n", &c);
            CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "ATTNFUZZ_CUDNN_FP8=1"));
            printf("fp8 engine runs not made: the cuDNN FP8 graph is opt-in (ATTNFUZZ_CUDNN_FP8=1)\n");
            be->destroy(be);
            CHECK_DONE("test_cudnn_fp8");
        }
    }
    const char *sel = getenv("ATTNFUZZ_CUDNN_TEST_ENGINES");
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
    /* a served-shape backward is declined with its reason (fp8 backward not built) */
    af_case c;
    parse("dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 128\nmask = causal\nbackward = yes\n", &c);
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED && strstr(why, "backward"));
    runner.reference->destroy(runner.reference);
    be->destroy(be);
    CHECK_MSG(failures == 0, "%d fp8 engine runs failed", failures);
    CHECK_DONE("test_cudnn_fp8");
}
