/* verdict.c — verdict kinds, findings, the one-line summary. */
#include "judge/verdict.h"
#include "util/text.h"

#include <stdio.h>
#include <string.h>

static const char *const verdict_names[AF_V_COUNT] = {
    "pass",           "mismatch",        "nan_inf",          "unwritten", "out_of_bounds", "leak",
    "inert",          "feature_ignored", "nondeterministic", "crash",     "hang",          "declined",
    "claim_mismatch", "resource",        "convention",       "error",     "input_mutation"};

const char *af_verdict_name(af_verdict_kind k) { return (unsigned)k < AF_V_COUNT ? verdict_names[k] : "?"; }

int af_verdict_from_name(const char *name) {
    for (int i = 0; i < AF_V_COUNT; i++)
        if (strcmp(name, verdict_names[i]) == 0) return i;
    return -1;
}

void af_verdict_init(af_verdict *v, const char *backend) {
    memset(v, 0, sizeof *v);
    v->kind = AF_V_PASS;
    snprintf(v->backend, sizeof v->backend, "%s", backend ? backend : "");
    v->info.workspace_bytes = -1;
}

af_finding af_finding_at(af_verdict_kind kind, af_tensor_id tensor, int b, int h, int row, int col,
                         const char *detail) {
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor = tensor;
    f.b = b;
    f.h = h;
    f.row = row;
    f.col = col;
    snprintf(f.detail, sizeof f.detail, "%s", detail ? detail : "");
    return f;
}

void af_verdict_add(af_verdict *v, const af_finding *f) {
    if (v->n_findings == 0) v->kind = f->kind;
    if (v->n_findings < AF_MAX_FINDINGS) v->findings[v->n_findings] = *f;
    v->n_findings++;
}

void af_verdict_drop(af_verdict *v, af_verdict_kind kind, af_tensor_id tensor) {
    int stored = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS, kept = 0;
    for (int i = 0; i < stored; i++) {
        const af_finding *f = &v->findings[i];
        if (f->kind == kind && (tensor == AF_T_COUNT || f->tensor == tensor)) continue;
        v->findings[kept++] = *f;
    }
    v->n_findings -= stored - kept;
    if (v->kind != AF_V_DECLINED && v->kind != AF_V_ERROR)
        v->kind = kept > 0 ? v->findings[0].kind : v->n_findings > 0 ? v->kind : AF_V_PASS;
}

static void verdict_line_raw(const af_verdict *v, char *buf, size_t cap) {
    if (v->kind == AF_V_DECLINED) {
        snprintf(buf, cap, "declined %s: %s", v->backend, v->reason);
        return;
    }
    if (v->kind == AF_V_ERROR) {
        snprintf(buf, cap, "error %s (no verdict on the kernel): %s", v->backend, v->reason);
        return;
    }
    if (v->n_findings == 0) {
        /* pass: the worst ratio over the judged tensors */
        double worst = 0;
        int wt = -1;
        for (int t = 0; t < AF_T_COUNT; t++)
            if (v->stats[t].judged && v->stats[t].ratio >= worst) {
                worst = v->stats[t].ratio;
                wt = t;
            }
        if (wt >= 0)
            snprintf(buf, cap, "pass worst %s ratio=%.3g err=%.3g allowed=%.3g", af_tensor_name((af_tensor_id)wt),
                     worst, v->stats[wt].err, v->stats[wt].allowed);
        else
            snprintf(buf, cap, "pass");
        return;
    }
    const af_finding *f = &v->findings[0];
    int n =
        snprintf(buf, cap, "FINDING %s %s b%d h%d r%d c%d err=%.4g allowed=%.4g ratio=%.4g", af_verdict_name(f->kind),
                 af_tensor_name(f->tensor), f->b, f->h, f->row, f->col, f->error, f->allowed, f->ratio);
    if (n > 0 && (size_t)n < cap && f->detail[0]) snprintf(buf + n, cap - (size_t)n, " (%s)", f->detail);
    if (v->n_findings > 1) {
        size_t len = strlen(buf);
        if (len < cap) snprintf(buf + len, cap - len, " +%d more", v->n_findings - 1);
    }
}

void af_verdict_line(const af_verdict *v, char *buf, size_t cap) {
    if (!buf || cap == 0) return;
    verdict_line_raw(v, buf, cap);
    /* names and messages come from backends and plugins: one safe terminal line */
    af_text_clean_inplace(buf, cap, AF_TEXT_ONE_LINE);
}

void af_verdict_clean_text(af_verdict *v) {
    af_text_clean_inplace(v->backend, sizeof v->backend, AF_TEXT_ONE_LINE);
    af_text_clean_inplace(v->info.engine, sizeof v->info.engine, AF_TEXT_ONE_LINE);
    af_text_clean_inplace(v->reason, sizeof v->reason, AF_TEXT_NO_CONTROLS);
    int n = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < n; i++)
        af_text_clean_inplace(v->findings[i].detail, sizeof v->findings[i].detail, AF_TEXT_NO_CONTROLS);
}
