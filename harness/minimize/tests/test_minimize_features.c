/* test_minimize_features.c — the minimiser and the attention features:
 *   - a finding that needs its feature keeps it: planted:ignores_softcap on a softcap
 *     case shrinks (batch, heads, lengths, head dims) but still has softcap, and
 *     planted:ignores_bias keeps a bias (the lightest broadcast that fails);
 *   - a feature the finding does not need goes: planted:window_off_by_one on a case with
 *     a window plus softcap, ALiBi and sinks minimises to the window alone, and on a case
 *     with a window and attention_chunk loses the chunk;
 *   - planted:ignores_chunk keeps its chunk, made coarser (4 -> 32: the lighter variant);
 *   - planted:ignores_documents keeps its documents (merged: fewer), planted:ignores_global
 *     its global keys (fewer), and a window bug loses both;
 *   - a window bug loses heads_v (back to heads_kv), planted:v_head_kv keeps it;
 *   - planted:block_mask_transposed keeps its block mask, made lighter; a kernel that
 *     ignores the element mask (planted:none run without it) keeps custom_mask with a
 *     higher keep probability; a window bug loses both;
 *   - a kernel that ignores score_mod (the cpu backend run without it) keeps it; a kernel
 *     that ignores the window (the same, without the window) loses score_mod;
 *   - planted:dsink_dropped keeps learnable sinks and the backward (its dsink needs
 *     both); flash_fp8_bug:descale_v_ignored loses its fp8_headroom (fails without).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/runner.h"
#include "minimize/minimize.h"
#include "model/case_fields.h"
#include "util/check.h"

typedef struct {
    af_runner runner;
    af_backend *be;
} ctx;

static int run_case(const af_case *c, void *user, af_verdict *v) {
    ctx *x = user;
    af_prepared p;
    char why[512];
    if (af_prepare(&x->runner, c, &p, why, sizeof why)) return -1;
    af_judge(&x->runner, &p, x->be, "", v, NULL);
    af_prepared_free(&p);
    return 0;
}

/* A backend that ignores one field: a correct one (planted:none, or the cpu backend for
 * what planted declines: score_mod) run on the case with that field reset. */
static af_backend *ignores_inner;
static af_case_field ignores_field;
static af_run_status ignores_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                 char *why, size_t cap) {
    (void)be;
    af_case without = *c;
    af_case_field_reset(&without, ignores_field);
    return ignores_inner->run(ignores_inner, &without, engine, t, info, why, cap);
}
static void ignores_destroy(af_backend *be) {
    ignores_inner->destroy(ignores_inner);
    free(be);
}
static af_backend *ignores_new(af_backend *inner, af_case_field field, const char *name) {
    ignores_inner = inner;
    ignores_field = field;
    af_backend *be = malloc(sizeof *be);
    CHECK(be != NULL);
    *be = *ignores_inner;
    be->name = name;
    be->run = ignores_run;
    be->destroy = ignores_destroy;
    return be;
}

/* The backend under test by name: a plugin, or one of the ignoring wrappers above. */
static af_backend *backend_named(const char *name) {
    if (!strcmp(name, "ignores_custom_mask"))
        return ignores_new(fx_load_plugin("planted_none"), AF_CF_CUSTOM_MASK, "test:ignores_custom_mask");
    if (!strcmp(name, "cpu_ignores_score_mod"))
        return ignores_new(af_backend_cpu_new(), AF_CF_SCORE_MOD, "test:cpu_ignores_score_mod");
    if (!strcmp(name, "cpu_ignores_window"))
        return ignores_new(af_backend_cpu_new(), AF_CF_WINDOW, "test:cpu_ignores_window");
    return fx_load_plugin(name);
}

static void minimise(const char *plugin, const char *text, af_min_result *r) {
    ctx x;
    memset(&x, 0, sizeof x);
    x.be = backend_named(plugin);
    x.runner.reference = af_backend_cpu_new();
    af_oracle_opts_default(&x.runner.oracle);
    x.runner.oracle.tier = AF_ORACLE_FP64;
    af_case c;
    af_error e;
    CHECK_MSG(af_case_parse(text, plugin, &c, &e) == 0, "%s: %s", e.field, e.message);
    af_min_opts o;
    af_min_opts_default(&o);
    o.max_runs = 300;
    CHECK_MSG(af_minimize(&c, run_case, &x, &o, r) == 0, "%s: the case does not fail (%s)", plugin,
              af_verdict_name(r->verdict.kind));
    char text_out[8192];
    af_case_print(&r->best, text_out, sizeof text_out);
    fprintf(stderr, "%s: %d runs, cost %.3g -> %.3g, minimised to:\n%s", plugin, r->runs, r->cost_before, r->cost_after,
            text_out);
    CHECK_MSG(r->cost_after < r->cost_before, "%s: nothing shrank", plugin);
    x.be->destroy(x.be);
    x.runner.reference->destroy(x.runner.reference);
}

int main(void) {
    af_min_result r;
    minimise("planted_ignores_softcap",
             "dtype = bf16\nbatch = 2\nheads = 2\nseqlen_q = 33\nseqlen_kv = 70\nhead_dim = 64\nsoftcap = 5\n"
             "data = normal:3\nseed = 7\n",
             &r);
    CHECK_MSG(r.best.softcap != 0.0, "the softcap was minimised away");
    CHECK(r.best.batch == 1 && r.best.heads_q == 1);
    minimise(
        "planted_ignores_bias",
        "dtype = fp16\nbatch = 2\nheads = 3\nseqlen_q = 20\nseqlen_kv = 36\nhead_dim = 48\nbias = bhss\nalibi = yes\n"
        "seed = 9\n",
        &r);
    CHECK_MSG(r.best.bias != AF_BIAS_NONE, "the bias was minimised away");
    CHECK_MSG(r.best.bias == AF_BIAS_11SS, "bias %s, expected the lightest (11ss)", af_bias_shape_name(r.best.bias));
    CHECK_MSG(!r.best.alibi, "ALiBi (not needed by the bug) survived");
    /* a query-broadcast bias: the lightest of its kind (111s); signed ALiBi with drawn slopes
     * (not needed by the bias bug) dropped */
    minimise("planted_ignores_bias",
             "dtype = fp16\nbatch = 2\nheads = 3\nseqlen_q = 20\nseqlen_kv = 36\nhead_dim = 48\nbias = bh1s\n"
             "alibi = signed\nalibi_slopes = random_batch\nseed = 9\n",
             &r);
    CHECK_MSG(r.best.bias == AF_BIAS_111S, "bias %s, expected the lightest row broadcast (111s)",
              af_bias_shape_name(r.best.bias));
    CHECK_MSG(!r.best.alibi && r.best.alibi_slopes == AF_SLOPES_STANDARD, "ALiBi (not needed by the bug) survived");
    /* planted:alibi_unsigned keeps the signed convention (yes would pass) and its slopes go
     * to the standard ones */
    minimise("planted_alibi_unsigned",
             "dtype = fp16\nbatch = 2\nheads = 3\nseqlen_q = 8\nseqlen_kv = 24\nhead_dim = 16\nalibi = signed\n"
             "alibi_slopes = random_batch\nseed = 53\n",
             &r);
    CHECK_MSG(r.best.alibi == AF_ALIBI_SIGNED, "alibi %s, expected signed", af_alibi_name(r.best.alibi));
    CHECK_MSG(r.best.alibi_slopes == AF_SLOPES_STANDARD, "alibi_slopes %s survived",
              af_alibi_slopes_name(r.best.alibi_slopes));
    minimise("planted_window_off_by_one",
             "dtype = fp16\nseqlen = 64\nhead_dim = 32\nmask = causal\nwindow = 5,0\nsoftcap = 30\nalibi = yes\n"
             "softmax = off_by_one\ndropout = 0.25 77 9\nseed = 3\n",
             &r);
    CHECK_MSG(!af_case_has_features(&r.best), "features the window bug does not need survived (dropout too)");
    CHECK(r.best.window_left >= 0);
    minimise("planted_window_off_by_one",
             "dtype = fp16\nseqlen = 64\nhead_dim = 32\nmask = causal\nwindow = 5,0\nattention_chunk = 16\nseed = 3\n",
             &r);
    CHECK_MSG(r.best.attention_chunk == 0, "attention_chunk %d (not needed by the window bug) survived",
              r.best.attention_chunk);
    CHECK(r.best.window_left >= 0);
    minimise("planted_ignores_chunk",
             "dtype = fp16\nbatch = 2\nheads = 2\nseqlen_q = 37\nseqlen_kv = 53\nhead_dim = 32\n"
             "mask = causal_bottom_right\nattention_chunk = 4\nseed = 5\n",
             &r);
    CHECK_MSG(r.best.attention_chunk > 4, "attention_chunk %d: minimised away, or not made coarser",
              r.best.attention_chunk);
    CHECK(r.best.batch == 1 && r.best.heads_q == 1);
    /* planted:ignores_documents keeps a document mask, its documents merged where that
     * still fails (the lighter variant) */
    minimise("planted_ignores_documents",
             "dtype = fp16\nheads = 2\nseqlen = 48\nhead_dim = 32\nmask = causal\ndocuments = 1,8,13,16\nseed = 6\n",
             &r);
    CHECK_MSG(r.best.n_documents > 0, "documents minimised away");
    CHECK_MSG(r.best.n_documents < 4, "%d documents: none merged", r.best.n_documents);
    /* planted:ignores_global keeps its global keys, fewer of them */
    minimise("planted_ignores_global",
             "dtype = fp16\nheads = 2\nseqlen = 48\nhead_dim = 32\nmask = causal\nwindow = 5,0\nglobal_keys = 6\n"
             "seed = 7\n",
             &r);
    CHECK_MSG(r.best.global_keys > 0 && r.best.global_keys < 6, "global_keys %d: minimised away, or not fewer",
              r.best.global_keys);
    /* a window bug does not need documents nor global keys: both go */
    minimise("planted_window_off_by_one",
             "dtype = fp16\nseqlen = 64\nhead_dim = 32\nmask = causal\nwindow = 5,0\ndocuments = 30,20\n"
             "global_keys = 2\nseed = 3\n",
             &r);
    CHECK_MSG(r.best.n_documents == 0 && r.best.global_keys == 0, "documents %d / global_keys %d survived",
              r.best.n_documents, r.best.global_keys);
    CHECK(r.best.window_left >= 0);
    /* heads_v: a window bug does not need V's own head count (it goes back to heads_kv);
     * planted:v_head_kv (V read at K's head) keeps it */
    minimise("planted_window_off_by_one",
             "dtype = fp16\nheads_q = 4\nheads_kv = 1\nheads_v = 2\nseqlen = 64\nhead_dim = 32\nmask = causal\n"
             "window = 5,0\nseed = 3\n",
             &r);
    CHECK_MSG(af_case_heads_v(&r.best) == r.best.heads_kv, "heads_v %d (not needed by the window bug) survived",
              r.best.heads_v);
    minimise("planted_v_head_kv",
             "dtype = fp16\nheads_q = 4\nheads_kv = 1\nheads_v = 2\nseqlen = 32\nhead_dim = 32\nmask = causal\n"
             "seed = 8\n",
             &r);
    CHECK_MSG(r.best.heads_v != 0 && r.best.heads_v != r.best.heads_kv, "heads_v minimised away (%d, heads_kv %d)",
              r.best.heads_v, r.best.heads_kv);
    /* planted:block_mask_transposed keeps its block mask, made lighter (a higher keep
     * probability or larger blocks); a kernel that ignores the element mask keeps it, with
     * a higher keep probability; a window bug needs neither: both go */
    minimise("planted_block_mask_transposed",
             "dtype = fp16\nheads = 2\nseqlen = 48\nhead_dim = 32\nblock_mask = 8 4 0.5\nseed = 5\n", &r);
    CHECK_MSG(r.best.block_mask_q > 0, "block_mask minimised away");
    CHECK_MSG(r.best.block_mask_p > 0.5 || r.best.block_mask_q > 8 || r.best.block_mask_k > 4,
              "block_mask = %d %d %g: not made lighter", r.best.block_mask_q, r.best.block_mask_k, r.best.block_mask_p);
    minimise("ignores_custom_mask",
             "dtype = fp16\nheads = 2\nseqlen = 40\nhead_dim = 32\ncustom_mask = 0.4\nseed = 6\n", &r);
    CHECK_MSG(r.best.custom_mask_p > 0.4, "custom_mask = %g: minimised away, or not made lighter",
              r.best.custom_mask_p);
    minimise("planted_window_off_by_one",
             "dtype = fp16\nseqlen = 64\nhead_dim = 32\nmask = causal\nwindow = 5,0\nblock_mask = 4 4 0.8\n"
             "custom_mask = 0.9\nseed = 3\n",
             &r);
    CHECK_MSG(r.best.block_mask_q == 0 && r.best.custom_mask_p == 0.0, "block_mask %d / custom_mask %g survived",
              r.best.block_mask_q, r.best.custom_mask_p);
    CHECK(r.best.window_left >= 0);
    /* score_mod: a kernel that ignores it keeps it (trig stays trig); a window bug does not
     * need it: it goes (the cpu backend serves score_mod, the planted plugins decline it) */
    minimise("cpu_ignores_score_mod",
             "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 40\nhead_dim = 32\nscore_mod = trig\nseed = 4\n", &r);
    CHECK_MSG(r.best.score_mod == AF_SCORE_MOD_TRIG, "score_mod %s: minimised away",
              af_score_mod_name(r.best.score_mod));
    minimise("cpu_ignores_window",
             "dtype = fp16\nseqlen = 64\nhead_dim = 32\nmask = causal\nwindow = 5,0\nscore_mod = squared\n"
             "seed = 3\n",
             &r);
    CHECK_MSG(r.best.score_mod == AF_SCORE_MOD_NONE, "score_mod %s (not needed by the window bug) survived",
              af_score_mod_name(r.best.score_mod));
    CHECK_MSG(r.best.window_left >= 0 || r.best.window_right >= 0, "the window the bug needs went");
    /* planted:dsink_dropped needs learnable sinks and the backward: both stay */
    minimise("planted_dsink_dropped",
             "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 40\nhead_dim = 32\nmask = causal\nsoftmax = learnable\n"
             "backward = yes\nseed = 8\n",
             &r);
    CHECK_MSG(r.best.softmax == AF_SOFTMAX_LEARNABLE && r.best.backward, "the learnable sink or the backward went");
    CHECK(r.best.batch == 1 && r.best.heads_q == 1);
    /* fp8 scale headroom the finding does not need goes (descale_v ignored fails at any) */
    minimise("flash_fp8_bug_descale_v_ignored",
             "dtype = fp8_e4m3\nheads = 2\nseqlen = 48\nhead_dim = 32\nfp8_headroom = 2,1,3,0,1\nseed = 4\n", &r);
    CHECK_MSG(!af_case_has_fp8_headroom(&r.best), "fp8_headroom the bug does not need survived");
    /* planted:dropout_no_rescale needs dropout: it stays, p and the Philox state simplified */
    minimise("planted_dropout_no_rescale",
             "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 40\nhead_dim = 32\nmask = causal\n"
             "dropout = 0.25 123456789 4242\nseed = 6\n",
             &r);
    CHECK_MSG(r.best.dropout_p != 0.0, "dropout was minimised away");
    CHECK_MSG(r.best.dropout_p == 0.5 && r.best.dropout_seed == 1 && r.best.dropout_offset == 0,
              "dropout not simplified: p %g seed %llu offset %llu", r.best.dropout_p,
              (unsigned long long)r.best.dropout_seed, (unsigned long long)r.best.dropout_offset);
    /* planted:dropout_offset_ignored needs a nonzero offset: it stays */
    minimise("planted_dropout_offset_ignored",
             "dtype = fp16\nheads = 2\nseqlen = 40\nhead_dim = 32\ndropout = 0.5 99 1000\nseed = 6\n", &r);
    CHECK_MSG(r.best.dropout_p != 0.0 && r.best.dropout_offset != 0, "dropout or its offset was minimised away");
    /* dropout_rng = kernel: the stream goes back to attnfuzz's when the finding survives
     * without it (dropout_no_rescale fails on either stream), and stays when it does not
     * (dropout_mask_lies lies only about its own stream) */
    minimise(
        "planted_dropout_no_rescale",
        "dtype = fp16\nheads = 2\nseqlen = 40\nhead_dim = 32\ndropout = 0.5 99 7\ndropout_rng = kernel\nseed = 6\n",
        &r);
    CHECK_MSG(r.best.dropout_p != 0.0 && r.best.dropout_rng == AF_DROPOUT_RNG_ATTNFUZZ,
              "dropout_no_rescale: p %g, stream %d (want attnfuzz's)", r.best.dropout_p, (int)r.best.dropout_rng);
    minimise(
        "planted_dropout_mask_lies",
        "dtype = fp16\nheads = 2\nseqlen = 40\nhead_dim = 32\ndropout = 0.5 99 7\ndropout_rng = kernel\nseed = 6\n",
        &r);
    CHECK_MSG(r.best.dropout_p != 0.0 && r.best.dropout_rng == AF_DROPOUT_RNG_KERNEL,
              "dropout_mask_lies: p %g, stream %d (want the kernel's)", r.best.dropout_p, (int)r.best.dropout_rng);
    printf("test_minimize_features: ok\n");
    return 0;
}
