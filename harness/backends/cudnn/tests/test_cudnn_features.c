/* test_cudnn_features.c — the features the cudnn backend serves (bias of each broadcast
 * shape, ALiBi, softcap, sinks off_by_one and learnable with dsink, dropout through the
 * case's keep mask), each on the GPU against the oracle (oracle/feature_spec.h's
 * definitions, fp64 tier; for dropout the oracle's own mask, oracle/dropout_spec.c):
 *   - the run is served (a decline is a failure, printed with cuDNN's reason) and O, LSE
 *     (dQ dK dV, dsink with backward) are within 24 units of the dtype, relative to the
 *     largest exact value (at least 1), of the oracle's: the judge's criterion is tighter,
 *     this proves the wiring;
 *   - a control: the same case without the feature, also through cudnn, differs from the
 *     featured run's O (or dQ) by more than that allowance, so the feature reached the
 *     kernel (a graph that ignored it would pass the first check only by accident);
 *     for dropout the control is judged against the oracle of the dropout case instead:
 *     the same case run with p = 0 (the mask ignored) must fail the first check on O or a
 *     gradient, so the check above can tell a served mask from an ignored one.
 * Every feature is tried and reported ("feature ...: pass" or the reason) before the
 * test fails. Without a GPU or cuDNN it prints SKIP and exits 77 (skipped, not passed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cudnn/cudnn_backend.h"
#include "backends/tests/oracle_problem.h"
#include "model/gen.h"
#include "model/tensors.h"
#include "oracle/oracle.h"
#include "util/check.h"

typedef struct {
    const char *name;
    const char *base;    /* the case without the feature (the control) */
    const char *feature; /* the line(s) that switch it on */
} feature_case;

/* Each base is chosen so that the feature moves the outputs far past the allowance:
 * causal rows see few keys (a sink's share is large), data = normal:2 gives scores of
 * several units (softcap 5 bends them), bias and ALiBi add O(1) and O(distance) terms. */
static const feature_case cases[] = {
    {"bias 11ss fp16 fwd", "dtype = fp16\nbatch = 2\nheads = 4\nseqlen = 128\nhead_dim = 64\nseed = 301\n",
     "bias = 11ss\n"},
    {"bias 1hss bf16 gqa causal bwd",
     "dtype = bf16\nbatch = 1\nheads_q = 8\nheads_kv = 2\nseqlen = 128\nhead_dim = 64\nmask = causal\n"
     "backward = yes\nseed = 302\n",
     "bias = 1hss\n"},
    {"bias b1ss fp16 bwd",
     "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 96\nhead_dim = 64\nbackward = yes\nseed = 303\n", "bias = b1ss\n"},
    {"bias bhss bf16 padding bwd",
     "dtype = bf16\nbatch = 2\nheads = 4\nseqlen = 128\nseqlens_q = 100,128\nseqlens_kv = 90,128\nhead_dim = 64\n"
     "mask = padding\nbackward = yes\nseed = 304\n",
     "bias = bhss\n"},
    {"alibi causal fp16 bwd",
     "dtype = fp16\nbatch = 1\nheads = 4\nseqlen = 128\nhead_dim = 64\nmask = causal\nbackward = yes\nseed = 305\n",
     "alibi = yes\n"},
    {"alibi causal bottom-right s_q != s_kv bf16 bwd",
     "dtype = bf16\nbatch = 1\nheads = 4\nseqlen_q = 96\nseqlen_kv = 160\nhead_dim = 64\nmask = causal\n"
     "align = bottom_right\nbackward = yes\nseed = 306\n",
     "alibi = yes\n"},
    {"alibi no mask gqa bf16 fwd",
     "dtype = bf16\nbatch = 1\nheads_q = 4\nheads_kv = 2\nseqlen = 128\nhead_dim = 64\nseed = 307\n", "alibi = yes\n"},
    {"softcap 5 fp16 fwd",
     "dtype = fp16\nbatch = 1\nheads = 4\nseqlen = 128\nhead_dim = 64\ndata = normal:2\nseed = 308\n", "softcap = 5\n"},
    {"softcap 5 bf16 causal bwd",
     "dtype = bf16\nbatch = 1\nheads = 4\nseqlen = 128\nhead_dim = 64\nmask = causal\ndata = normal:2\n"
     "backward = yes\nseed = 309\n",
     "softcap = 5\n"},
    {"sinks off_by_one fp16 causal gqa bwd",
     "dtype = fp16\nbatch = 1\nheads_q = 4\nheads_kv = 2\nseqlen = 128\nhead_dim = 64\nmask = causal\n"
     "backward = yes\nseed = 310\n",
     "softmax = off_by_one\n"},
    {"sinks learnable bf16 causal fwd",
     "dtype = bf16\nbatch = 2\nheads = 4\nseqlen = 128\nhead_dim = 64\nmask = causal\nseed = 311\n",
     "softmax = learnable\n"},
    {"sinks learnable fp16 causal bwd (dsink)",
     "dtype = fp16\nbatch = 2\nheads = 4\nseqlen = 128\nhead_dim = 64\nmask = causal\nbackward = yes\nseed = 312\n",
     "softmax = learnable\n"},
    /* dropout: the keep mask of model/dropout.h as a tensor; causal rows see few keys, so a
     * dropped key moves their O by O(|v|) */
    {"dropout 0.1 fp16 causal fwd",
     "dtype = fp16\nbatch = 2\nheads = 4\nseqlen = 128\nhead_dim = 64\nmask = causal\nseed = 313\n",
     "dropout = 0.1 4242 0\n"},
    {"dropout 0.5 bf16 bwd",
     "dtype = bf16\nbatch = 2\nheads = 4\nseqlen = 128\nhead_dim = 64\nbackward = yes\nseed = 314\n",
     "dropout = 0.5 77 1000\n"},
    {"dropout 0.1 fp16 gqa causal bwd",
     "dtype = fp16\nbatch = 1\nheads_q = 8\nheads_kv = 2\nseqlen = 128\nhead_dim = 64\nmask = causal\n"
     "backward = yes\nseed = 315\n",
     "dropout = 0.1 9 5\n"},
    {"dropout 0.5 bf16 padding causal bwd",
     "dtype = bf16\nbatch = 2\nheads = 4\nseqlen = 128\nseqlens_q = 100,128\nseqlens_kv = 90,128\nhead_dim = 64\n"
     "mask = padding_causal\nbackward = yes\nseed = 316\n",
     "dropout = 0.5 31337 0\n"},
    {"dropout 0.25 with learnable sinks bf16 causal bwd (dsink)",
     "dtype = bf16\nbatch = 2\nheads = 4\nseqlen = 128\nhead_dim = 64\nmask = causal\nsoftmax = learnable\n"
     "backward = yes\nseed = 318\n",
     "dropout = 0.25 2026 64\n"},
    {"dropout 0.5 fp16 s_q != s_kv fwd",
     "dtype = fp16\nbatch = 1\nheads = 4\nseqlen_q = 96\nseqlen_kv = 160\nhead_dim = 64\nseed = 317\n",
     "dropout = 0.5 1 0\n"},
};

typedef struct {
    af_case c;
    af_tensors t;
    af_inputs in;
    af_outputs out;
} run_t;

/* Run text on be; 0, or -1 with why (parse error, decline, run error). */
static int run_text(af_backend *be, const char *text, run_t *r, char *why, size_t cap) {
    memset(r, 0, sizeof *r);
    af_error e;
    if (af_case_parse(text, "test_cudnn_features", &r->c, &e) != 0) {
        snprintf(why, cap, "case: %s: %s", e.field, e.message);
        return -1;
    }
    CHECK_MSG(af_tensors_alloc(&r->t, &r->c, why, cap) == 0, "%s", why);
    CHECK(af_inputs_alloc(&r->in, &r->c) == 0);
    CHECK(af_inputs_generate(&r->c, &r->t, &r->in) == 0);
    af_tensors_poison_outputs(&r->t, &r->c);
    af_run_info info;
    af_run_status st = be->run(be, &r->c, "", &r->t, &info, why, cap);
    if (st != AF_RUN_OK) {
        char w[700];
        snprintf(w, sizeof w, "%s: %s", st == AF_RUN_DECLINED ? "declined" : "run failed", why);
        snprintf(why, cap, "%s", w);
        return -1;
    }
    CHECK(af_outputs_alloc(&r->out, &r->c) == 0);
    af_outputs_read(&r->t, &r->c, &r->out);
    return 0;
}

static void run_free(run_t *r) {
    af_tensors_free(&r->t);
    af_inputs_free(&r->in);
    af_outputs_free(&r->out);
}

static void oracle_of(const run_t *r, af_oracle_result *res) {
    int lq[AF_MAX_BATCH], lk[AF_MAX_BATCH];
    af_oracle_problem p;
    bt_oracle_problem(&r->c, &r->in, lq, lk, &p);
    af_oracle_opts o;
    af_oracle_opts_default(&o);
    o.tier = AF_ORACLE_FP64;
    char why[512] = "";
    CHECK_MSG(af_oracle_run(&p, &o, res, why, sizeof why) == 0, "oracle: %s", why);
}

/* Over the elements of rows the case has (b, h, i < len_q; keys j < len_kv). */
static double max_abs_diff(const double *a, const double *b, size_t n) {
    double m = 0;
    for (size_t k = 0; k < n; k++)
        if (!isfinite(a[k]) || !isfinite(b[k])) {
            if (!(isinf(a[k]) && a[k] == b[k])) return INFINITY; /* equal infinities (masked LSE) agree */
        } else if (fabs(a[k] - b[k]) > m) {
            m = fabs(a[k] - b[k]);
        }
    return m;
}

static double max_abs(const double *a, size_t n) {
    double m = 0;
    for (size_t k = 0; k < n; k++)
        if (isfinite(a[k]) && fabs(a[k]) > m) m = fabs(a[k]);
    return m;
}

/* Zero the rows past each sequence's length (the case has no such rows; the backend
 * leaves them as it likes) so that the comparisons read only the case's elements. */
static void clear_padded_rows(const af_case *c, af_outputs *o) {
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++)
            for (int i = af_case_len_q(c, b); i < c->seqlen_q; i++) {
                size_t r = ((size_t)b * c->heads_q + h) * c->seqlen_q + i;
                o->lse[r] = 0;
                memset(o->o + r * c->head_dim_v, 0, sizeof(double) * (size_t)c->head_dim_v);
                if (o->dq) memset(o->dq + r * c->head_dim_qk, 0, sizeof(double) * (size_t)c->head_dim_qk);
            }
    if (!o->dk) return;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_kv; h++)
            for (int j = af_case_len_kv(c, b); j < c->seqlen_kv; j++) {
                size_t r = ((size_t)b * c->heads_kv + h) * c->seqlen_kv + j;
                memset(o->dk + r * c->head_dim_qk, 0, sizeof(double) * (size_t)c->head_dim_qk);
                memset(o->dv + r * c->head_dim_v, 0, sizeof(double) * (size_t)c->head_dim_v);
            }
}

/* The first check: every output of run out against the oracle's ex within 24 units of
 * the dtype relative to max(1, max |exact|). label NULL: silent. Returns the worst ratio
 * err / allowed over the outputs (> 1: the check fails; INFINITY for a missing output). */
static double compare_outputs(const af_case *c, const af_outputs *out, const af_outputs *ex, const char *name,
                              const char *label) {
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q, nk = (size_t)c->batch * c->heads_kv * c->seqlen_kv;
    double unit = c->dtype == AF_DT_BF16 ? 0x1p-8 : 0x1p-11;
    struct {
        const char *name;
        const double *a, *b;
        size_t n;
    } t[] = {{"O", out->o, ex->o, nq * c->head_dim_v},     {"LSE", out->lse, ex->lse, nq},
             {"dQ", out->dq, ex->dq, nq * c->head_dim_qk}, {"dK", out->dk, ex->dk, nk * c->head_dim_qk},
             {"dV", out->dv, ex->dv, nk * c->head_dim_v},  {"dsink", out->dsink, ex->dsink, (size_t)c->heads_q}};
    double worst = 0;
    for (size_t x = 0; x < sizeof t / sizeof t[0]; x++) {
        if (!t[x].b) continue; /* not an output of this case */
        if (!t[x].a) {
            if (label) printf("feature %s: FAIL: %s missing from the run\n", name, t[x].name);
            worst = INFINITY;
            continue;
        }
        double err = max_abs_diff(t[x].a, t[x].b, t[x].n), mag = max_abs(t[x].b, t[x].n);
        double allowed = 24 * unit * (mag > 1 ? mag : 1);
        if (label)
            printf("  %s%s %s: max err %.3g (allowed %.3g), max |exact| %.3g\n", name, label, t[x].name, err, allowed,
                   mag);
        if (label && !(err <= allowed))
            printf("feature %s: FAIL: %s error %.3g > %.3g\n", name, t[x].name, err, allowed);
        double ratio = err / allowed;
        if (!(ratio <= worst)) worst = isnan(ratio) ? INFINITY : ratio;
    }
    return worst;
}

/* One feature: 0 when it passes both checks, else -1 (the reason printed). */
static int check_feature(af_backend *be, const feature_case *fc) {
    char text[1024], why[1024] = "";
    snprintf(text, sizeof text, "%s%s", fc->base, fc->feature);
    run_t r, ctl;
    if (run_text(be, text, &r, why, sizeof why)) {
        printf("feature %s: FAIL: %s\n", fc->name, why);
        return -1;
    }
    af_oracle_result ex;
    oracle_of(&r, &ex);
    clear_padded_rows(&r.c, &r.out);
    clear_padded_rows(&r.c, &ex.out);
    const af_case *c = &r.c;
    size_t nq = (size_t)c->batch * c->heads_q * c->seqlen_q;
    double unit = c->dtype == AF_DT_BF16 ? 0x1p-8 : 0x1p-11;
    int bad = !(compare_outputs(c, &r.out, &ex.out, fc->name, "") <= 1);
    bool dropout = c->dropout_p != 0.0;
    if (!bad && dropout) {
        /* the control of dropout: the case with p = 0 (its base: the same inputs, the mask
         * ignored) judged against the dropout oracle must fail the first check */
        if (run_text(be, fc->base, &ctl, why, sizeof why) == 0) {
            clear_padded_rows(&ctl.c, &ctl.out);
            double worst = compare_outputs(c, &ctl.out, &ex.out, fc->name, NULL);
            printf("  %s control: with p = 0 the worst output is %.3g x its allowance against the dropout oracle\n",
                   fc->name, worst);
            if (!(worst > 1)) {
                printf("feature %s: FAIL: the run without dropout passes the dropout oracle (%.3g x the allowance): "
                       "the check cannot tell an ignored mask\n",
                       fc->name, worst);
                bad = 1;
            }
            run_free(&ctl);
        } else {
            printf("feature %s: FAIL: control run: %s\n", fc->name, why);
            bad = 1;
        }
    }
    /* the control: the feature must move O (forward) or O / dQ (backward) past the allowance */
    if (!bad && !dropout && run_text(be, fc->base, &ctl, why, sizeof why) == 0) {
        clear_padded_rows(&ctl.c, &ctl.out);
        size_t no = nq * c->head_dim_v;
        double moved = max_abs_diff(r.out.o, ctl.out.o, no), mag = max_abs(ex.out.o, no);
        if (c->backward) {
            size_t nd = nq * c->head_dim_qk;
            double dq_moved = max_abs_diff(r.out.dq, ctl.out.dq, nd), dq_mag = max_abs(ex.out.dq, nd);
            double rel_o = moved / (24 * unit * (mag > 1 ? mag : 1)),
                   rel_dq = dq_moved / (24 * unit * (dq_mag > 1 ? dq_mag : 1));
            if (rel_dq > rel_o) moved = dq_moved, mag = dq_mag;
        }
        double allowed = 24 * unit * (mag > 1 ? mag : 1);
        printf("  %s control: without the feature the outputs move by %.3g (allowance %.3g)\n", fc->name, moved,
               allowed);
        if (!(moved > allowed)) {
            printf("feature %s: FAIL: the run without the feature differs by only %.3g (<= %.3g): did the feature "
                   "reach the kernel?\n",
                   fc->name, moved, allowed);
            bad = 1;
        }
        run_free(&ctl);
    } else if (!bad && !dropout) {
        printf("feature %s: FAIL: control run: %s\n", fc->name, why);
        bad = 1;
    }
    if (!bad) printf("feature %s: pass\n", fc->name);
    af_oracle_result_free(&ex);
    run_free(&r);
    return bad ? -1 : 0;
}

int main(int argc, char **argv) {
    af_backend *be = af_backend_cudnn_new();
    CHECK(be != NULL);
    char why[512];
    if (be->available(be, why, sizeof why) != 0) {
        printf("SKIP test_cudnn_features: %s\n", why);
        be->destroy(be);
        return CHECK_SKIP_CODE;
    }
    char desc[700];
    af_cudnn_describe(be, desc, sizeof desc);
    printf("test_cudnn_features: %s\n", desc);
    int only = argc > 1 ? atoi(argv[1]) : -1, failed = 0, n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++)
        if (only < 0 || only == i) failed += check_feature(be, &cases[i]) != 0;
    be->destroy(be);
    CHECK_MSG(failed == 0, "%d of %d feature cases failed (lines 'feature ...: FAIL' above)", failed, n);
    CHECK_DONE("test_cudnn_features");
}
