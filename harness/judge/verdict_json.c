/* json.c — JSON output of verdicts. */
#include "judge/verdict_json.h"

#include <math.h>

void af_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

void af_json_number(FILE *f, double x) {
    if (isfinite(x)) fprintf(f, "%.17g", x);
    else fputs("null", f);
}

void af_json_verdict(FILE *f, const char *case_path, const af_verdict *v) {
    fputs("{\"case\":", f);
    af_json_string(f, case_path);
    fputs(",\"backend\":", f);
    af_json_string(f, v->backend);
    fputs(",\"engine\":", f);
    af_json_string(f, v->info.engine);
    fputs(",\"verdict\":", f);
    af_json_string(f, af_verdict_name(v->kind));
    if (v->reason[0]) {
        fputs(",\"reason\":", f);
        af_json_string(f, v->reason);
    }
    fprintf(f, ",\"seconds\":%.6f,\"workspace_bytes\":%lld,\"nondeterministic\":%s", v->info.seconds,
            v->info.workspace_bytes, v->info.nondeterministic ? "true" : "false");
    fputs(",\"oracle_bound_rel\":", f);
    af_json_number(f, v->oracle_bound_rel);
    fputs(",\"tensors\":{", f);
    int first = 1;
    for (int t = 0; t < AF_T_COUNT; t++) {
        const af_tensor_stats *s = &v->stats[t];
        if (!s->judged) continue;
        if (!first) fputc(',', f);
        first = 0;
        af_json_string(f, af_tensor_name((af_tensor_id)t));
        fputs(":{\"err\":", f);
        af_json_number(f, s->err);
        fputs(",\"err_ref\":", f);
        af_json_number(f, s->err_ref);
        fputs(",\"floor\":", f);
        af_json_number(f, s->floor);
        fputs(",\"allowed\":", f);
        af_json_number(f, s->allowed);
        fputs(",\"ratio\":", f);
        af_json_number(f, s->ratio);
        fprintf(f, ",\"worst\":{\"b\":%d,\"h\":%d,\"row\":%d,\"col\":%d},\"elements\":%lld}", s->b, s->h, s->row, s->col,
                s->elements);
    }
    fputs("},\"findings\":[", f);
    int n = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < n; i++) {
        const af_finding *x = &v->findings[i];
        if (i) fputc(',', f);
        fputs("{\"kind\":", f);
        af_json_string(f, af_verdict_name(x->kind));
        fputs(",\"tensor\":", f);
        af_json_string(f, af_tensor_name(x->tensor));
        fprintf(f, ",\"b\":%d,\"h\":%d,\"row\":%d,\"col\":%d,\"error\":", x->b, x->h, x->row, x->col);
        af_json_number(f, x->error);
        fputs(",\"allowed\":", f);
        af_json_number(f, x->allowed);
        fputs(",\"ratio\":", f);
        af_json_number(f, x->ratio);
        fputs(",\"detail\":", f);
        af_json_string(f, x->detail);
        fputc('}', f);
    }
    fprintf(f, "],\"findings_total\":%d}", v->n_findings);
}
