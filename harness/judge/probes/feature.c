/* feature.c — the feature probe (AF_V_FEATURE_IGNORED, probes.h): rerun with the case's
 * declared features removed one at a time (softcap, sinks, bias, ALiBi, score_mod: first, since a
 * backend that accepts and ignores one is the bug this catches), attention_chunk -> none,
 * documents -> none, global_keys -> 0, block_mask -> none, custom_mask -> none, causal -> none,
 * window -> none, scale -> 2 * scale,
 * alignment flipped; outputs whose exact value moves by more than any correct kernel's error
 * (expect.h) must move. */
#include "judge/probes/expect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "judge/clone.h"
#include "judge/problem.h"
#include "model/case_fields.h"

typedef struct {
    const char *name;
    af_case toggled;
    bool scores_change; /* a feature toggle: every visible row's scores or denominator move */
} toggle;

/* The dense inputs of a toggled case: base's, with the features tc lacks switched off. */
static af_inputs toggled_inputs(const af_inputs *base, const af_case *tc) {
    af_inputs in = *base;
    if (tc->softcap == 0.0) in.feat.softcap = 0.0;
    if (tc->score_mod == AF_SCORE_MOD_NONE) in.feat.score_mod = AF_SCORE_MOD_NONE;
    if (tc->softmax == AF_SOFTMAX_VANILLA) in.feat.sink = 0, in.sink = NULL;
    if (tc->bias == AF_BIAS_NONE) in.feat.bias_b = in.feat.bias_h = in.feat.bias_q = 0, in.bias = NULL;
    if (!tc->alibi) in.feat.alibi = in.feat.alibi_signed = false, in.feat.alibi_b = 0, in.alibi_slope = NULL;
    return in;
}

static int make_toggles(const af_case *c, toggle *t) {
    int n = 0;
    for (int f = 0; f < 5; f++) {
        static const char *const names[] = {"softcap -> none", "sinks -> none", "bias -> none", "alibi -> none",
                                            "score_mod -> none"};
        bool has = f == 0   ? c->softcap != 0.0
                   : f == 1 ? c->softmax != AF_SOFTMAX_VANILLA
                   : f == 2 ? c->bias != AF_BIAS_NONE
                   : f == 3 ? c->alibi != AF_ALIBI_NO
                            : c->score_mod != AF_SCORE_MOD_NONE;
        if (!has) continue;
        t[n].name = names[f];
        t[n].toggled = *c;
        t[n].scores_change = true;
        if (f == 0) t[n].toggled.softcap = 0.0;
        if (f == 1) t[n].toggled.softmax = AF_SOFTMAX_VANILLA;
        if (f == 2) t[n].toggled.bias = AF_BIAS_NONE;
        if (f == 3) t[n].toggled.alibi = AF_ALIBI_NO, t[n].toggled.alibi_slopes = AF_SLOPES_STANDARD;
        if (f == 4) t[n].toggled.score_mod = AF_SCORE_MOD_NONE;
        n++;
    }
    /* the mask features, each switched off through the case-field table: the rows whose
     * chunk or document hid keys move, the rows that saw a global key only through G, and
     * the rows a dropped block or element hid keys of */
    static const struct {
        af_case_field field;
        const char *name;
    } mask_features[] = {{AF_CF_ATTENTION_CHUNK, "attention_chunk -> none"},
                         {AF_CF_DOCUMENTS, "documents -> none"},
                         {AF_CF_GLOBAL_KEYS, "global_keys -> 0"},
                         {AF_CF_BLOCK_MASK, "block_mask -> none"},
                         {AF_CF_CUSTOM_MASK, "custom_mask -> none"}};
    for (size_t k = 0; k < sizeof mask_features / sizeof mask_features[0]; k++) {
        if (!af_case_field_printed(c, mask_features[k].field)) continue;
        t[n].name = mask_features[k].name;
        t[n].scores_change = false;
        t[n].toggled = *c;
        af_case_field_reset(&t[n].toggled, mask_features[k].field);
        n++;
    }
    if (c->mask == AF_MASK_CAUSAL) {
        t[n].name = "causal -> none";
        t[n].scores_change = false;
        t[n].toggled = *c;
        t[n].toggled.mask = AF_MASK_NONE;
        n++;
    }
    if (c->window_left >= 0 || c->window_right >= 0) {
        t[n].name = "window -> none";
        t[n].scores_change = false;
        t[n].toggled = *c;
        t[n].toggled.window_left = t[n].toggled.window_right = -1;
        n++;
    }
    t[n].name = "scale -> 2 * scale";
    t[n].scores_change = false;
    t[n].toggled = *c;
    t[n].toggled.has_scale = true;
    t[n].toggled.scale = 2.0f * af_case_scale(c);
    n++;
    bool uneven = false;
    for (int b = 0; b < c->batch; b++) uneven |= af_case_len_q(c, b) != af_case_len_kv(c, b);
    if (uneven && (c->mask == AF_MASK_CAUSAL || c->window_left >= 0 || c->window_right >= 0)) {
        t[n].name = "alignment flipped";
        t[n].scores_change = false;
        t[n].toggled = *c;
        t[n].toggled.align = c->align == AF_ALIGN_TOP_LEFT ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
        n++;
    }
    return n;
}

/* Rows to examine under a toggle: up to `cap` rows of the focus head, over all
 * sequences, whose visible set or scale changes. */
static int feature_rows(const probe_ctx *x, const af_case *tc, bool scores_change, int *rb, int *ri, int cap) {
    af_mask_rule r2 = af_mask_rule_of_case(tc);
    bool scale_changes = scores_change || af_case_scale(tc) != af_case_scale(x->c);
    bool drops = af_mask_rule_drops(&x->rule) || af_mask_rule_drops(&r2);
    int n = 0;
    for (int b = 0; b < x->c->batch && n < cap; b++) {
        int lq = len_q(x, b), lk = len_kv(x, b);
        int per_seq = (cap - n) / (x->c->batch - b);
        if (per_seq < 1) per_seq = 1;
        int taken = 0, step = lq / per_seq > 1 ? lq / per_seq : 1;
        for (int i = 0; i < lq && taken < per_seq && n < cap; i += step) {
            /* within a stride, the first row whose visible set changes */
            for (int k = i; k < i + step && k < lq; k++) {
                af_mask_keys k1, k2;
                int n1 = af_mask_visible_keys(&x->rule, b, lq, lk, k, &k1);
                int n2 = af_mask_visible_keys(&r2, b, lq, lk, k, &k2);
                bool same = n1 == n2 && k1.n == k2.n;
                for (int s = 0; same && s < k1.n; s++) same = k1.first[s] == k2.first[s] && k1.last[s] == k2.last[s];
                if (same && n1 && drops) /* same envelope: the drops may still differ inside */
                    same = af_mask_visible_count(&x->rule, b, lq, lk, k) == af_mask_visible_count(&r2, b, lq, lk, k);
                if ((n1 || n2) && (scale_changes || !same)) {
                    rb[n] = b;
                    ri[n] = k;
                    n++;
                    taken++;
                    break;
                }
            }
        }
    }
    return n;
}

int probe_feature_cases(const af_probe_opts *o, const af_case *c, af_case *out, int cap) {
    toggle tg[14];
    int nt = make_toggles(c, tg), n = 0;
    for (int k = 0; k < nt && k < o->feature_runs && n < cap; k++) out[n++] = tg[k].toggled;
    return n;
}

void probe_feature(probe_ctx *x) {
    const af_case *c = x->c;
    toggle tg[14]; /* 5 score features, 5 mask features, causal, window, scale, alignment */
    int nt = make_toggles(c, tg), want = x->o->feature_runs;
    int Dv = c->head_dim_v, h = x->fh;
    double *o1 = calloc((size_t)Dv, sizeof(double)), *m1 = calloc((size_t)Dv, sizeof(double));
    double *o2 = calloc((size_t)Dv, sizeof(double)), *m2 = calloc((size_t)Dv, sizeof(double));
    if (!o1 || !m1 || !o2 || !m2) goto done;
    for (int k = 0; k < nt && k < want && !x->stop; k++) {
        af_case *tc = &tg[k].toggled;
        char why[512] = "";
        if (x->tg->be->supports(x->tg->be, tc, why, sizeof why) != AF_RUN_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s declined: %s", tg[k].name, why);
            probe_note(x, "feature: %s", msg);
            continue;
        }
        int rb[16], ri[16];
        int nr = feature_rows(x, tc, tg[k].scores_change, rb, ri, 16);
        af_inputs tin = toggled_inputs(x->tg->inputs, tc);
        if (nr == 0) continue;
        af_mask_rule r2 = af_mask_rule_of_case(tc);
        double s1 = af_case_scale(c), s2 = af_case_scale(tc);
        af_tensors w;
        if (probe_work_begin(x, tc, &w)) break;
        if (probe_work_run(x, tc, &w, "feature")) {
            probe_work_end(x, &w);
            continue;
        }
        /* dropout_rng = kernel: the toggled run drew its own mask (a kernel's stream may
         * follow the mask it computes); what it must give is weighed by that mask */
        if (c->dropout_rng == AF_DROPOUT_RNG_KERNEL) {
            if (!w.dropout_keep || !w.dropout_keep_returned) {
                probe_note(x, "feature: %s skipped (dropout_rng = kernel: the toggled run returned no mask)",
                           tg[k].name);
                probe_work_end(x, &w);
                continue;
            }
            tin.feat.dropout_keep = w.dropout_keep;
        }
        x->st->feature_toggles++;
        const af_tensors *base = x->tg->baseline;
        int n_must = 0, n_bad = 0;
        bool reported = false;
        for (int r = 0; r < nr && !reported; r++) {
            int b = rb[r], i = ri[r], lq = len_q(x, b), lk = len_kv(x, b), lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
            af_mask_keys k1, k2; /* the hulls [lo, hi]: probe_row_fp64 skips a gap */
            int n1 = af_mask_visible_keys(&x->rule, b, lq, lk, i, &k1);
            int n2 = af_mask_visible_keys(&r2, b, lq, lk, i, &k2);
            if (n1) lo1 = k1.first[0], hi1 = k1.last[k1.n - 1];
            if (n2) lo2 = k2.first[0], hi2 = k2.last[k2.n - 1];
            row_stats a, z;
            if (n1 == 0 || n2 == 0) continue; /* fully masked on one side: convention's business */
            if (probe_row_fp64(x, &x->rule, x->tg->inputs, b, h, i, lo1, hi1, s1, o1, m1, NULL, &a) ||
                probe_row_fp64(x, &r2, &tin, b, h, i, lo2, hi2, s2, o2, m2, NULL, &z))
                break;
            if (!probe_row_checkable(&a) || !probe_row_checkable(&z)) continue;
            double eps1 = probe_eps(c, a.score_err), eps2 = probe_eps(c, z.score_err), ulp = probe_ulp(c);
            double tol = x->exact ? 0 : x->tol[AF_T_O], out_abs = probe_out_abs(c, base);
            for (int d = 0; d < Dv && !reported; d++) {
                double margin = probe_o_margin(&a, &z, eps1, m1[d], o1[d], eps2, m2[d], o2[d], ulp, out_abs);
                if (!probe_o_must_move(o1[d], o2[d], probe_o_threshold(margin, tol))) continue;
                n_must++;
                double va, vb;
                if (probe_moved(x, base, &w, AF_T_O, offset_of(&w, AF_T_O, b, h, i, d), &va, &vb)) continue;
                n_bad++;
                char msg[256];
                snprintf(msg, sizeof msg,
                         "%s: O must move from %.6g to %.6g (row %d sees %d..%d, then %d..%d) but "
                         "stayed %.6g",
                         tg[k].name, o1[d], o2[d], i, lo1, hi1, lo2, hi2, va);
                probe_finding(x, AF_V_FEATURE_IGNORED, AF_T_O, b, h, i, d, va, vb, tol, msg);
                reported = true;
            }
            if (reported) break;
            double ltol = x->exact ? 0 : x->tol[AF_T_LSE];
            double lmargin = 0x1p-10 * (1 + fabs(a.lse) + fabs(z.lse)) + 4 * (a.score_err + z.score_err);
            if (fabs(z.lse - a.lse) > 2 * lmargin + 2 * ltol) {
                n_must++;
                double va, vb;
                if (!probe_moved(x, base, &w, AF_T_LSE, offset_of(&w, AF_T_LSE, b, h, i, 0), &va, &vb)) {
                    n_bad++;
                    char msg[256];
                    snprintf(msg, sizeof msg, "%s: LSE must move from %.6g to %.6g (row %d) but stayed %.6g",
                             tg[k].name, a.lse, z.lse, i, va);
                    probe_finding(x, AF_V_FEATURE_IGNORED, AF_T_LSE, b, h, i, -1, va, vb, ltol, msg);
                    reported = true;
                }
            }
        }
        x->st->feature_checked += n_must;
        probe_work_end(x, &w);
    }
done:
    free(o1);
    free(m1);
    free(o2);
    free(m2);
}
