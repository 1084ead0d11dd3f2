/* test_probes.c — the probes as a specification:
 *   1. the cpu backend (correct) passes every probe on a range of cases: no false alarm;
 *   2. an honest nondeterministic backend (declares it, adds 1-ulp noise) passes too;
 *   3. small deliberately buggy backends (the cpu backend with a planted bug, defined
 *      here) are each caught by the right probe (a backend that ignores the block or the
 *      element mask by the feature probe's block_mask / custom_mask toggles).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/probes/probes.h"
#include "judge/runner.h"
#include "model/case_fields.h"
#include "util/check.h"

/* ---- buggy backends: the cpu backend plus one planted bug ---------------------------- */

typedef enum {
    BUG_NONE = 0,
    BUG_IGNORE_CAUSAL, /* runs without the causal mask                  -> leak */
    BUG_FUTURE_TERM,   /* O_i0 += 2^-12 * K_{diag(i)+1, 0}              -> leak */
    BUG_DQ_FUTURE,     /* dQ_i0 += 2^-12 * K_{diag(i)+1, 0}             -> leak (dQ) */
    BUG_DK_EARLY_ROW,  /* dK_j0 += 2^-12 * q_{j-1, 0} (row j-1 can't see j) -> leak (dK) */
    BUG_IGNORE_WINDOW, /* runs without the window                       -> leak */
    BUG_READ_PADDING,  /* attends to keys past len_kv                   -> leak */
    BUG_ZERO_O,        /* O = 0                                         -> inert */
    BUG_STALE,         /* returns the first run's O and LSE forever     -> inert */
    BUG_IGNORE_SCALE,  /* always 1/sqrt(d)                              -> feature_ignored */
    BUG_FLIP_BIT,      /* flips one output bit per run, claims determinism -> nondeterministic */
    BUG_HONEST_NOISE,  /* flips one output bit per run, declares nondeterminism: no finding */
    BUG_IGNORE_BLOCK,  /* runs without the block mask                   -> feature_ignored */
    BUG_IGNORE_CUSTOM, /* runs without the element mask                 -> feature_ignored */
} bug_kind;

typedef struct {
    af_backend *cpu;
    bug_kind bug;
    unsigned long runs;
    uint8_t *stale_o, *stale_lse; /* BUG_STALE: the first run's O and LSE buffers */
    size_t stale_o_bytes, stale_lse_bytes;
} bug_state;

static double load(const af_tensors *t, af_tensor_id id, int b, int h, int s, int d) {
    const af_tensor_view *w = &t->plan.view[id];
    return af_storage_load(w->storage, t->buf[w->buffer], af_layout_offset(&t->plan, id, b, h, s, d));
}
static void store(af_tensors *t, af_tensor_id id, int b, int h, int s, int d, double x) {
    const af_tensor_view *w = &t->plan.view[id];
    af_storage_store(w->storage, t->buf[w->buffer], af_layout_offset(&t->plan, id, b, h, s, d), (float)x);
}
static void flip_low_bit(af_tensors *t, af_tensor_id id, int b, int h, int s, int d) {
    const af_tensor_view *w = &t->plan.view[id];
    uint8_t *p =
        (uint8_t *)t->buf[w->buffer] + af_layout_offset(&t->plan, id, b, h, s, d) * af_storage_bytes(w->storage);
    p[0] ^= 1;
}
/* The key just after row i's diagonal (top-left or bottom-right), if it is in the buffer. */
static int key_after_diagonal(const af_case *c, af_tensors *t, int b, int i) {
    int lq = af_case_len_q(c, b), lk = af_case_len_kv(c, b);
    int j = i + (c->align == AF_ALIGN_BOTTOM_RIGHT ? lk - lq : 0) + 1;
    int rows = t->plan.view[AF_T_K].ragged ? lk : c->seqlen_kv;
    return j >= 0 && j < rows ? j : -1;
}

static af_run_status bug_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                             char *why, size_t cap) {
    bug_state *s = be->state;
    af_case cc = *c;
    if (s->bug == BUG_IGNORE_CAUSAL) cc.mask = AF_MASK_NONE;
    if (s->bug == BUG_IGNORE_SCALE) cc.has_scale = false;
    if (s->bug == BUG_IGNORE_WINDOW) cc.window_left = cc.window_right = -1;
    if (s->bug == BUG_IGNORE_BLOCK) af_case_field_reset(&cc, AF_CF_BLOCK_MASK);
    if (s->bug == BUG_IGNORE_CUSTOM) af_case_field_reset(&cc, AF_CF_CUSTOM_MASK);
    if (s->bug == BUG_READ_PADDING)
        for (int b = 0; b < cc.batch; b++) cc.seqlens_kv[b] = cc.seqlen_kv;
    af_run_status st = s->cpu->run(s->cpu, &cc, engine, t, info, why, cap);
    if (st != AF_RUN_OK) return st;
    int group = c->heads_q / c->heads_kv;
    unsigned long run = s->runs++;
    switch (s->bug) {
        case BUG_FUTURE_TERM:
        case BUG_DQ_FUTURE: {
            af_tensor_id out = s->bug == BUG_FUTURE_TERM ? AF_T_O : AF_T_DQ;
            for (int b = 0; b < c->batch; b++)
                for (int h = 0; h < c->heads_q; h++)
                    for (int i = 0; i < af_case_len_q(c, b); i++) {
                        int j = key_after_diagonal(c, t, b, i);
                        if (j < 0) continue;
                        double k = load(t, AF_T_K, b, h / group, j, 0);
                        if (isfinite(k)) store(t, out, b, h, i, 0, load(t, out, b, h, i, 0) + 0x1p-12 * k);
                    }
            break;
        }
        case BUG_DK_EARLY_ROW:
            for (int b = 0; b < c->batch; b++)
                for (int g = 0; g < c->heads_kv; g++)
                    for (int j = 1; j < af_case_len_kv(c, b) && j - 1 < af_case_len_q(c, b); j++) {
                        double q = load(t, AF_T_Q, b, g * group, j - 1, 0);
                        store(t, AF_T_DK, b, g, j, 0, load(t, AF_T_DK, b, g, j, 0) + 0x1p-12 * q);
                    }
            break;
        case BUG_ZERO_O:
            for (int b = 0; b < c->batch; b++)
                for (int h = 0; h < c->heads_q; h++)
                    for (int i = 0; i < af_case_len_q(c, b); i++)
                        for (int d = 0; d < c->head_dim_v; d++) store(t, AF_T_O, b, h, i, d, 0.0);
            break;
        case BUG_STALE:
            if (!s->stale_o) {
                s->stale_o_bytes = t->bytes[AF_BUF_O];
                s->stale_lse_bytes = t->bytes[AF_BUF_LSE];
                s->stale_o = malloc(s->stale_o_bytes);
                s->stale_lse = malloc(s->stale_lse_bytes);
                if (s->stale_o) memcpy(s->stale_o, t->buf[AF_BUF_O], s->stale_o_bytes);
                if (s->stale_lse) memcpy(s->stale_lse, t->buf[AF_BUF_LSE], s->stale_lse_bytes);
            } else {
                memcpy(t->buf[AF_BUF_O], s->stale_o, s->stale_o_bytes);
                memcpy(t->buf[AF_BUF_LSE], s->stale_lse, s->stale_lse_bytes);
            }
            break;
        case BUG_FLIP_BIT:
        case BUG_HONEST_NOISE: {
            /* one nonzero element of O per run (a 1-ulp change), a different one each time;
         * zeros (fully masked rows) stay exact */
            int lq = af_case_len_q(c, 0), d = (int)(run % (unsigned long)c->head_dim_v);
            for (int k = 0; k < lq; k++) {
                int i = (int)((run + (unsigned long)k) % (unsigned long)lq);
                if (load(t, AF_T_O, 0, 0, i, d) != 0.0) {
                    flip_low_bit(t, AF_T_O, 0, 0, i, d);
                    break;
                }
            }
            if (s->bug == BUG_HONEST_NOISE && info) info->nondeterministic = true;
            break;
        }
        default:
            break;
    }
    return AF_RUN_OK;
}

static af_run_status bug_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    bug_state *s = be->state;
    return s->cpu->supports(s->cpu, c, why, cap);
}
static int bug_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    if (cap) why[0] = '\0';
    return 0;
}
static void bug_destroy(af_backend *be) {
    bug_state *s = be->state;
    s->cpu->destroy(s->cpu);
    free(s->stale_o);
    free(s->stale_lse);
    free(s);
    free(be);
}

static af_backend *bug_new(bug_kind bug) {
    af_backend *be = calloc(1, sizeof *be);
    bug_state *s = calloc(1, sizeof *s);
    CHECK(be && s);
    s->cpu = af_backend_cpu_new();
    CHECK(s->cpu);
    s->bug = bug;
    be->name = "planted";
    be->description = "cpu backend with a planted bug";
    be->flags = (bug == BUG_HONEST_NOISE ? 0u : AF_BACKEND_DETERMINISTIC) | AF_BACKEND_PLANTED;
    be->state = s;
    be->available = bug_available;
    be->supports = bug_supports;
    be->run = bug_run;
    be->destroy = bug_destroy;
    return be;
}

/* ---- cases ---------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    af_case c;
} named_case;

static af_case base(int sq, int skv, int d) {
    af_case c;
    af_case_defaults(&c);
    c.seqlen_q = sq;
    c.seqlen_kv = skv;
    c.head_dim_qk = c.head_dim_v = d;
    return c;
}

static void seqlens(af_case *c, int batch, const int *lq, const int *lk) {
    c->batch = batch;
    c->has_seqlens = true;
    for (int b = 0; b < batch; b++) {
        c->seqlens_q[b] = lq[b];
        c->seqlens_kv[b] = lk[b];
    }
}

static int make_cases(named_case *out) {
    int n = 0;
    af_case c;

    c = base(70, 70, 32);
    c.heads_q = c.heads_kv = 2;
    c.mask = AF_MASK_CAUSAL;
    out[n++] = (named_case){"causal top-left fp16 fwd", c};

    c = base(24, 70, 16);
    c.dtype = AF_DT_BF16;
    c.heads_q = 4;
    c.heads_kv = 2;
    c.mask = AF_MASK_CAUSAL;
    c.align = AF_ALIGN_BOTTOM_RIGHT;
    c.backward = true;
    c.seed = 7;
    out[n++] = (named_case){"causal bottom-right bf16 GQA bwd", c};

    c = base(80, 80, 16);
    c.layout = AF_LAYOUT_BHSD;
    c.window_left = 5;
    c.window_right = 3;
    c.backward = true;
    out[n++] = (named_case){"window 5,3 bhsd bwd", c};

    c = base(96, 96, 16);
    c.layout = AF_LAYOUT_SBHD;
    c.mask = AF_MASK_CAUSAL;
    c.window_left = 20;
    c.heads_q = 3;
    c.heads_kv = 1;
    out[n++] = (named_case){"causal window 20 sbhd MQA fwd", c};

    c = base(64, 64, 16);
    c.mask = AF_MASK_NONE;
    c.backward = true;
    c.heads_q = c.heads_kv = 2;
    seqlens(&c, 3, (int[]){40, 17, 64}, (int[]){50, 64, 9});
    out[n++] = (named_case){"padding bshd bwd", c};

    c = base(50, 70, 16);
    c.dtype = AF_DT_BF16;
    c.layout = AF_LAYOUT_THD;
    c.thd_gap = 3;
    c.stride_gap = 2;
    c.mask = AF_MASK_CAUSAL;
    c.align = AF_ALIGN_BOTTOM_RIGHT;
    c.backward = true;
    c.heads_q = 2;
    c.heads_kv = 1;
    seqlens(&c, 3, (int[]){33, 7, 50}, (int[]){33, 12, 70});
    out[n++] = (named_case){"thd causal bottom-right gaps GQA bwd", c};

    c = base(40, 40, 16);
    c.mask = AF_MASK_CAUSAL;
    c.align = AF_ALIGN_BOTTOM_RIGHT;
    c.backward = true;
    seqlens(&c, 2, (int[]){40, 30}, (int[]){20, 35});
    out[n++] = (named_case){"padding causal bottom-right fully masked rows bwd", c};

    c = base(48, 48, 16);
    c.packing = AF_PACK_KV;
    c.stride_gap = 3;
    c.mask = AF_MASK_CAUSAL;
    c.heads_q = 4;
    c.heads_kv = 2;
    c.backward = true;
    c.seed = 3;
    out[n++] = (named_case){"kv-packed stride gap GQA causal bwd", c};

    c = base(40, 40, 16);
    c.packing = AF_PACK_QKV;
    c.mask = AF_MASK_CAUSAL;
    c.backward = true;
    out[n++] = (named_case){"qkv-packed causal bwd", c};

    c = base(64, 64, 32);
    c.dtype = AF_DT_FP8_E4M3;
    c.mask = AF_MASK_CAUSAL;
    out[n++] = (named_case){"fp8_e4m3 causal fwd", c};

    c = base(100, 100, 32);
    c.dtype = AF_DT_MXFP8;
    c.window_left = 16;
    c.window_right = 0;
    out[n++] = (named_case){"mxfp8 window 16,0 fwd", c};

    c = base(10, 90, 16);
    c.page_size = 16;
    c.mask = AF_MASK_CAUSAL;
    c.align = AF_ALIGN_BOTTOM_RIGHT;
    seqlens(&c, 2, (int[]){10, 6}, (int[]){90, 41});
    out[n++] = (named_case){"paged KV decode-like fwd", c};

    c = base(20, 20, 16);
    out[n++] = (named_case){"no mask, one head fwd", c};

    c = base(66, 66, 16);
    c.mask = AF_MASK_CAUSAL;
    c.backward = true;
    c.seed = 11;
    c.n_data = 3;
    c.data[1] = (af_data_term){AF_DATA_SINK, 20.0, 0};
    c.data[2] = (af_data_term){AF_DATA_BLOCK_RANGE, 12.0, 0};
    out[n++] = (named_case){"causal sink + block range data bwd", c};

    c = base(33, 33, 16);
    c.has_scale = true;
    c.scale = 0.03125f;
    c.window_left = 0;
    c.window_right = 0;
    out[n++] = (named_case){"diagonal-only window, custom scale fwd", c};

    c = base(40, 48, 16);
    c.mask = AF_MASK_CAUSAL;
    c.block_mask_q = 8;
    c.block_mask_k = 4;
    c.block_mask_p = 0.6;
    c.seed = 5;
    out[n++] = (named_case){"causal block mask 8x4 p 0.6 fwd", c};

    c = base(24, 24, 16);
    c.custom_mask_p = 0.7;
    c.backward = true;
    c.seed = 6;
    out[n++] = (named_case){"element mask p 0.7 bwd", c};
    return n;
}

/* ---- running the probes on one case ---------------------------------------------------- */

static void probe_case(const af_case *c, af_backend *be, const af_probe_opts *o, af_verdict *v, af_probe_stats *st,
                       af_leak_matrix *lm) {
    af_error err;
    char why[512];
    if (af_case_validate(c, &err)) {
        af_error_format(&err, why, sizeof why);
        CHECK_MSG(0, "invalid test case: %s", why);
    }
    af_runner r;
    memset(&r, 0, sizeof r);
    r.skip_oracle = true; /* the probes need no oracle; keeps the test fast */
    af_prepared p;
    CHECK_MSG(af_prepare(&r, c, &p, why, sizeof why) == 0, "%s", why);
    af_tensors out;
    af_judge(&r, &p, be, "", v, &out);
    CHECK_MSG(v->kind != AF_V_DECLINED, "declined: %s", v->reason);
    af_probe_target tg = {&p.c, &p.tensors, &p.inputs, &out, &v->info, be, "", p.clones};
    af_probes_run(o, &tg, v, lm, st);
    af_tensors_free(&out);
    af_prepared_free(&p);
}

static void print_findings(const char *what, const af_verdict *v, const af_probe_stats *st) {
    for (int k = 0; k < v->n_findings && k < AF_MAX_FINDINGS; k++) {
        const af_finding *f = &v->findings[k];
        fprintf(stderr, "  %s: %s %s b%d h%d r%d c%d: %s\n", what, af_verdict_name(f->kind), af_tensor_name(f->tensor),
                f->b, f->h, f->row, f->col, f->detail);
    }
    if (st && st->notes[0]) fprintf(stderr, "  %s: notes: %s\n", what, st->notes);
}

static bool has_kind(const af_verdict *v, af_verdict_kind k, af_tensor_id *t) {
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++)
        if (v->findings[i].kind == k) {
            if (t) *t = v->findings[i].tensor;
            return true;
        }
    return false;
}

/* ---- 1. the correct backend passes everything ------------------------------------------ */

static void test_cpu_no_false_alarm(void) {
    named_case cases[32];
    int n = make_cases(cases);
    af_backend *cpu = af_backend_cpu_new();
    CHECK(cpu);
    af_probe_opts o;
    af_probe_opts_default(&o);
    for (int salt = 0; salt < 3; salt++) {
        o.salt = (uint64_t)salt;
        for (int k = 0; k < n; k++) {
            af_verdict v;
            af_probe_stats st;
            af_leak_matrix lm;
            probe_case(&cases[k].c, cpu, &o, &v, &st, &lm);
            if (v.n_findings) print_findings(cases[k].name, &v, &st);
            CHECK_MSG(v.n_findings == 0, "cpu backend: false alarm on '%s' (salt %d)", cases[k].name, salt);
            CHECK_MSG(st.exact, "'%s': the cpu backend is deterministic", cases[k].name);
            CHECK_MSG(st.failed_runs == 0, "'%s': %s", cases[k].name, st.notes);
            CHECK_MSG(st.hidden_sets >= 1 && st.protected_checked > 0, "'%s': visibility checked nothing (%s)",
                      cases[k].name, st.notes);
            CHECK_MSG(st.inclusion_checked > 0, "'%s': inclusion checked nothing (%s)", cases[k].name, st.notes);
            CHECK_MSG(st.feature_toggles >= 1 && st.feature_checked > 0, "'%s': feature checked nothing (%s)",
                      cases[k].name, st.notes);
            /* determinism, batch, visibility, stale (NaN, huge), capacity (one run: nothing
             * moved), inclusion, feature */
            CHECK_MSG(st.capacity_runs == 1 || (st.capacity_runs == 0 && strstr(st.notes, "capacity: skipped (fp8")),
                      "'%s': %d capacity runs (%s)", cases[k].name, st.capacity_runs, st.notes);
            CHECK(st.extra_runs <= 1 + 1 + o.visibility_runs + 2 + 1 + 1 + o.feature_runs);
            /* the leak matrix: rows x sets, no leak cell, labels filled */
            CHECK(lm.cols == st.hidden_sets && lm.rows > 0 && lm.cells);
            bool any_visible_changed = false;
            for (int i = 0; i < lm.rows * lm.cols; i++) {
                CHECK_MSG(lm.cells[i] != AF_LEAK_CHANGED, "'%s': leak cell %d", cases[k].name, i);
                any_visible_changed |= lm.cells[i] == (AF_LEAK_CHANGED | AF_LEAK_VISIBLE);
                /* a correct kernel changes no hidden row and nothing changes without cause */
                CHECK(!(lm.cells[i] & AF_LEAK_CHANGED) || (lm.cells[i] & AF_LEAK_VISIBLE));
            }
            (void)any_visible_changed;
            CHECK(lm.row_labels[0][0] && lm.col_labels[0][0]);
            if (salt == 0)
                printf("  %-48s runs %d sets %d protected rows %lld inclusion %d feature %d/%d\n", cases[k].name,
                       st.extra_runs, st.hidden_sets, st.protected_checked, st.inclusion_checked, st.feature_toggles,
                       st.feature_checked);
            af_leak_matrix_free(&lm);
        }
    }
    cpu->destroy(cpu);
}

/* An honest nondeterministic backend (declares it, 1-ulp noise) is measured, not flagged. */
static void test_honest_noise_tolerated(void) {
    named_case cases[32];
    int n = make_cases(cases);
    af_backend *be = bug_new(BUG_HONEST_NOISE);
    af_probe_opts o;
    af_probe_opts_default(&o);
    for (int k = 0; k < n; k++) {
        af_verdict v;
        af_probe_stats st;
        probe_case(&cases[k].c, be, &o, &v, &st, NULL);
        if (v.n_findings) print_findings(cases[k].name, &v, &st);
        CHECK_MSG(v.n_findings == 0, "honest noise: false alarm on '%s'", cases[k].name);
        CHECK(!st.exact);
        CHECK(st.spread[AF_T_O] > 0 && st.tolerance[AF_T_O] > st.spread[AF_T_O]);
    }
    be->destroy(be);
}

/* ---- 2. planted bugs are caught by the right probe ------------------------------------ */

static void expect_caught(const char *what, bug_kind bug, const af_case *c, af_verdict_kind kind,
                          af_tensor_id want_tensor, bool check_tensor) {
    af_backend *be = bug_new(bug);
    af_probe_opts o;
    af_probe_opts_default(&o);
    af_verdict v;
    af_probe_stats st;
    af_leak_matrix lm;
    probe_case(c, be, &o, &v, &st, &lm);
    af_tensor_id t = AF_T_O;
    bool found = has_kind(&v, kind, &t);
    if (!found || (check_tensor && t != want_tensor)) print_findings(what, &v, &st);
    CHECK_MSG(found, "%s: no %s finding", what, af_verdict_name(kind));
    if (check_tensor)
        CHECK_MSG(t == want_tensor, "%s: found in %s, expected %s", what, af_tensor_name(t),
                  af_tensor_name(want_tensor));
    if (kind == AF_V_LEAK) {
        bool leak_cell = false;
        for (int i = 0; i < lm.rows * lm.cols; i++) leak_cell |= lm.cells[i] == AF_LEAK_CHANGED;
        if (want_tensor == AF_T_O) CHECK_MSG(leak_cell, "%s: the leak matrix shows no leak", what);
    }
    printf("  caught %-28s -> %s\n", what, v.n_findings ? v.findings[0].detail : "");
    af_leak_matrix_free(&lm);
    be->destroy(be);
}

static void test_planted_bugs(void) {
    named_case cases[32];
    make_cases(cases);
    const af_case *causal = &cases[0].c, *causal_br_bwd = &cases[1].c, *window = &cases[2].c;
    const af_case *padding = &cases[4].c, *nomask = &cases[12].c;
    af_case causal_bwd = cases[8].c; /* qkv-packed causal bwd */
    af_case causal_tl_bwd = cases[13].c;

    expect_caught("ignores causal", BUG_IGNORE_CAUSAL, causal, AF_V_LEAK, AF_T_O, true);
    expect_caught("ignores causal (bwd, GQA)", BUG_IGNORE_CAUSAL, causal_br_bwd, AF_V_LEAK, AF_T_O, false);
    expect_caught("future-key term in O", BUG_FUTURE_TERM, causal, AF_V_LEAK, AF_T_O, true);
    expect_caught("future-key term in dQ", BUG_DQ_FUTURE, &causal_tl_bwd, AF_V_LEAK, AF_T_DQ, true);
    expect_caught("early-row term in dK", BUG_DK_EARLY_ROW, &causal_bwd, AF_V_LEAK, AF_T_DK, true);
    expect_caught("ignores window", BUG_IGNORE_WINDOW, window, AF_V_LEAK, AF_T_O, false);
    expect_caught("ignores window (feature)", BUG_IGNORE_WINDOW, window, AF_V_FEATURE_IGNORED, AF_T_O, false);
    expect_caught("reads padding keys", BUG_READ_PADDING, padding, AF_V_LEAK, AF_T_O, false);
    expect_caught("zero O", BUG_ZERO_O, causal, AF_V_INERT, AF_T_O, true);
    expect_caught("stale outputs", BUG_STALE, nomask, AF_V_INERT, AF_T_O, false);
    expect_caught("ignores scale", BUG_IGNORE_SCALE, nomask, AF_V_FEATURE_IGNORED, AF_T_O, false);
    expect_caught("ignores scale (causal bwd)", BUG_IGNORE_SCALE, causal_br_bwd, AF_V_FEATURE_IGNORED, AF_T_O, false);
    expect_caught("flips a bit per run", BUG_FLIP_BIT, causal, AF_V_NONDETERMINISTIC, AF_T_O, true);
    expect_caught("ignores block mask (feature)", BUG_IGNORE_BLOCK, &cases[15].c, AF_V_FEATURE_IGNORED, AF_T_O, false);
    expect_caught("ignores element mask (feature)", BUG_IGNORE_CUSTOM, &cases[16].c, AF_V_FEATURE_IGNORED, AF_T_O,
                  false);
}

/* ---- 3. options and the runner hook ---------------------------------------------------- */

static void test_options_and_runner(void) {
    named_case cases[32];
    make_cases(cases);
    af_backend *cpu = af_backend_cpu_new();
    /* zeroed options run nothing */
    af_probe_opts none;
    memset(&none, 0, sizeof none);
    af_verdict v;
    af_probe_stats st;
    probe_case(&cases[0].c, cpu, &none, &v, &st, NULL);
    CHECK(st.extra_runs == 0 && v.n_findings == 0);
    /* each probe alone costs what it says */
    af_probe_opts o;
    af_probe_opts_default(&o);
    o.visibility = o.inclusion = o.feature = o.batch = o.stale = o.capacity = false;
    probe_case(&cases[0].c, cpu, &o, &v, &st, NULL);
    CHECK(st.extra_runs == 1);
    o.capacity = true; /* one run more: the larger allocation, where nothing moves */
    probe_case(&cases[0].c, cpu, &o, &v, &st, NULL);
    CHECK(st.extra_runs == 2 && st.capacity_runs == 1 && v.n_findings == 0);
    af_probe_opts_default(&o);
    o.determinism = o.inclusion = o.feature = o.batch = o.stale = o.capacity = false;
    o.visibility_runs = 2;
    probe_case(&cases[0].c, cpu, &o, &v, &st, NULL);
    CHECK(st.extra_runs == 2 && st.hidden_sets == 2);
    cpu->destroy(cpu);

    /* af_judge runs the probes when the runner asks for them */
    af_backend *bad = bug_new(BUG_IGNORE_CAUSAL);
    af_runner r;
    memset(&r, 0, sizeof r);
    r.skip_oracle = true;
    r.probes = true;
    af_probe_opts_default(&r.probe_opts);
    af_prepared p;
    char why[256];
    CHECK(af_prepare(&r, &cases[0].c, &p, why, sizeof why) == 0);
    af_judge(&r, &p, bad, "", &v, NULL);
    CHECK(has_kind(&v, AF_V_LEAK, NULL));
    r.probes = false;
    af_judge(&r, &p, bad, "", &v, NULL);
    CHECK(!has_kind(&v, AF_V_LEAK, NULL));
    af_prepared_free(&p);
    bad->destroy(bad);
}

int main(void) {
    test_cpu_no_false_alarm();
    test_honest_noise_tolerated();
    test_planted_bugs();
    test_options_and_runner();
    CHECK_DONE("test_probes");
}
