/* report.c — reports of a findings directory: JSON, JUnit XML, SARIF 2.1.0, HTML.
 *
 * All four list the same buckets in the same order (verdict kind, then signature) and
 * hold no time of their own making, so rebuilding from the same DIR gives the same
 * bytes. Paths inside the reports are relative to DIR. The two JSON reports are built
 * with jansson (util/json.h) and written compactly on one line; the XML and HTML are
 * written as text here.
 */
#include "judge/signature.h"
#include "judge/evidence.h"
#include "triage/findings.h"
#include "triage/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "triage/src/triage_internal.h"
#include "util/json.h"

typedef struct {
    af_finding_record rec; /* case_text and verdict_json owned here */
    int kind;              /* af_verdict_kind, or -1 when the name is unknown */
} report_item;

typedef struct {
    report_item *items;
    int n, cap;
    int failed;
} report_list;

static int collect(const af_finding_record *r, void *user) {
    report_list *l = user;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 32;
        report_item *bigger = realloc(l->items, (size_t)cap * sizeof *bigger);
        if (!bigger) {
            l->failed = 1;
            return 1;
        }
        l->items = bigger;
        l->cap = cap;
    }
    report_item *it = &l->items[l->n];
    it->rec = *r;
    it->rec.case_text = strdup(r->case_text ? r->case_text : "");
    it->rec.verdict_json = strdup(r->verdict_json ? r->verdict_json : "{}");
    if (!it->rec.case_text || !it->rec.verdict_json) {
        free(it->rec.case_text);
        free(it->rec.verdict_json);
        l->failed = 1;
        return 1;
    }
    it->kind = af_verdict_from_name(r->kind);
    l->n++;
    return 0;
}

static int cmp_items(const void *a, const void *b) {
    const report_item *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return strcmp(x->rec.signature, y->rec.signature);
}

static void list_free(report_list *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->items[i].rec.case_text);
        free(l->items[i].rec.verdict_json);
    }
    free(l->items);
}

/* One short sentence per verdict kind: SARIF rule descriptions and the HTML legend. */
static const char *kind_description(int k) {
    switch (k) {
        case AF_V_MISMATCH:
            return "Output differs from the MPFR oracle by more than twice the low-precision reference's error plus "
                   "the noise floor.";
        case AF_V_NAN_INF:
            return "Output holds NaN or Inf where the oracle is finite.";
        case AF_V_UNWRITTEN:
            return "Poison survived: an output element was never written.";
        case AF_V_OUT_OF_BOUNDS:
            return "A guard margin, stride gap or pad token outside the outputs changed.";
        case AF_V_LEAK:
            return "An input hidden by the mask (future token, out of window, padding) changed a visible output.";
        case AF_V_INERT:
            return "A visible input changed nothing.";
        case AF_V_FEATURE_IGNORED:
            return "Toggling a declared feature (mask, window, scale) changed nothing.";
        case AF_V_NONDETERMINISTIC:
            return "Two runs on the same inputs gave different bits.";
        case AF_V_CRASH:
            return "The backend crashed or left the device in an error state.";
        case AF_V_HANG:
            return "The backend did not finish within the time limit.";
        case AF_V_DECLINED:
            return "The backend declined a case it was expected to serve.";
        case AF_V_CLAIM_MISMATCH:
            return "The selection rules and the backend disagree about support for the case.";
        case AF_V_RESOURCE:
            return "Out of memory or workspace over budget.";
        case AF_V_CONVENTION:
            return "Fully masked rows differ from the convention O = 0, LSE = -inf.";
        default:
            return "Unknown verdict kind.";
    }
}

static void path_in(char *out, size_t cap, const char *dir, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

/* Open DIR/name.tmp for writing; commit_report renames it into place. */
static FILE *open_report(const char *dir, const char *name, char *tmp, size_t cap) {
    snprintf(tmp, cap, "%s/%s.tmp", dir, name);
    return fopen(tmp, "w");
}

/* built_ok false: the writer could not build its report (out of memory); the tmp file
 * goes and why says so, as for a failed write. */
static int commit_report(FILE *f, bool built_ok, const char *tmp, const char *dir, const char *name, char *why,
                         size_t cap) {
    char final_path[1200];
    path_in(final_path, sizeof final_path, dir, name);
    int bad = !built_ok || ferror(f);
    bad |= fclose(f) != 0;
    if (!bad && rename(tmp, final_path) != 0) bad = 1;
    if (bad) {
        remove(tmp);
        snprintf(why, cap, "%s: cannot write", final_path);
        return -1;
    }
    return 0;
}

/* ---- report.json ----------------------------------------------------------------- */

/* "findings/<bucket>/<name>", or null when the file is not there. */
static json_t *rel_or_null(bool present, const char *bucket, const char *name) {
    char rel[128];
    if (!present) return json_null();
    snprintf(rel, sizeof rel, "findings/%s/%s", bucket, name);
    return json_string(rel);
}

static json_t *bucket_json(const af_finding_record *r) {
    /* the bucket's verdict.json as it was stored (read_bucket checked that it parses) */
    json_t *verdict = json_loads(r->verdict_json, 0, NULL);
    return json_pack(
        "{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "bucket",
        r->bucket, "signature", af_json_text(r->signature), "kind", af_json_text(r->kind), "backend",
        af_json_text(r->backend), "engine", af_json_text(r->engine), "tensor", af_json_text(r->tensor), "config_class",
        af_json_text(r->config_class), "count", (json_int_t)r->count, "first_seen", af_json_text(r->first_seen),
        "time_to_first_seconds", af_json_real(r->time_to_first_seconds >= 0 ? r->time_to_first_seconds : NAN),
        "verdict_line", af_json_text(r->verdict_line), "repro", af_json_text(r->repro), "case",
        rel_or_null(true, r->bucket, "finding.case"), "original_case",
        rel_or_null(r->has_original, r->bucket, "original.case"), "heatmap",
        rel_or_null(r->has_heatmap, r->bucket, "heatmap.png"), "leak", rel_or_null(r->has_leak, r->bucket, "leak.png"),
        "case_text", af_json_text(r->case_text), "verdict", verdict);
}

/* New reference, or NULL when out of memory. */
static json_t *report_json(const report_list *l, const af_triage_summary *s) {
    json_t *by_kind = json_object();
    for (int k = 1; by_kind && k < AF_V_COUNT; k++) {
        if (s->by_kind[k] &&
            json_object_set_new(by_kind, af_verdict_name((af_verdict_kind)k), json_integer(s->by_kind[k]))) {
            json_decref(by_kind);
            by_kind = NULL;
        }
    }
    json_t *buckets = json_array();
    for (int i = 0; buckets && i < l->n; i++) {
        if (json_array_append_new(buckets, bucket_json(&l->items[i].rec))) {
            json_decref(buckets);
            buckets = NULL;
        }
    }
    return json_pack("{s:s, s:s, s:i, s:{s:i, s:I, s:o}, s:o}", "tool", "attnfuzz", "report", "triage",
                     "format_version", 1, "summary", "buckets", s->buckets, "findings", (json_int_t)s->findings,
                     "by_kind", by_kind, "buckets", buckets);
}

/* ---- report.junit.xml ------------------------------------------------------------- */

/* XML 1.0 escaping. Control characters other than tab/newline are not allowed in XML
 * at all and become '?'; inside attributes tab and newline are written as character
 * references, since a parser would otherwise normalise them to spaces. */
static void xml_escape(FILE *f, const char *s, bool attribute) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
            case '&':
                fputs("&amp;", f);
                break;
            case '<':
                fputs("&lt;", f);
                break;
            case '>':
                fputs("&gt;", f);
                break;
            case '"':
                fputs("&quot;", f);
                break;
            case '\'':
                fputs("&apos;", f);
                break;
            case '\n':
                fputs(attribute ? "&#10;" : "\n", f);
                break;
            case '\t':
                fputs(attribute ? "&#9;" : "\t", f);
                break;
            default:
                fputc(*p < 0x20 ? '?' : *p, f);
        }
    }
}
static void xml_attr(FILE *f, const char *s) { xml_escape(f, s, true); }
static void xml_text(FILE *f, const char *s) { xml_escape(f, s, false); }

static void write_junit(FILE *f, const report_list *l) {
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f, "<testsuites name=\"attnfuzz\" tests=\"%d\" failures=\"%d\" errors=\"0\">\n", l->n, l->n);
    fprintf(f,
            "  <testsuite name=\"attnfuzz.findings\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"0\" "
            "time=\"0\">\n",
            l->n, l->n);
    for (int i = 0; i < l->n; i++) {
        const af_finding_record *r = &l->items[i].rec;
        fputs("    <testcase classname=\"attnfuzz.", f);
        xml_attr(f, r->kind);
        fputs("\" name=\"", f);
        xml_attr(f, r->signature);
        fputs("\" time=\"0\">\n      <failure type=\"", f);
        xml_attr(f, r->kind);
        fputs("\" message=\"", f);
        xml_attr(f, r->signature);
        fputs(": ", f);
        xml_attr(f, r->verdict_line);
        fprintf(f, "\">bucket %s, %lld finding%s\nrepro: ", r->bucket, r->count, r->count == 1 ? "" : "s");
        xml_text(f, r->repro);
        fprintf(f, "\ncase findings/%s/finding.case:\n", r->bucket);
        xml_text(f, r->case_text);
        fputs("</failure>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
}

/* ---- report.sarif ------------------------------------------------------------------ */

/* rules = every verdict kind but pass; ruleIndex = kind - 1 */
static json_t *sarif_rules(void) {
    json_t *rules = json_array();
    for (int k = 1; rules && k < AF_V_COUNT; k++) {
        json_t *rule =
            json_pack("{s:s, s:{s:s}, s:{s:s}}", "id", af_verdict_name((af_verdict_kind)k), "shortDescription", "text",
                      kind_description(k), "defaultConfiguration", "level", "error");
        if (json_array_append_new(rules, rule)) {
            json_decref(rules);
            rules = NULL;
        }
    }
    return rules;
}

static json_t *sarif_result(const af_finding_record *r, int kind) {
    char text[AF_SIGNATURE_MAX + 1100], uri[128];
    snprintf(text, sizeof text, "%s: %s", r->signature, r->verdict_line);
    snprintf(uri, sizeof uri, "findings/%s/finding.case", r->bucket);
    /* o* leaves ruleIndex out for a kind this build does not know */
    return json_pack("{s:o, s:o*, s:s, s:{s:o}, s:[{s:{s:{s:s, s:s}, s:{s:i}}}], s:{s:s}, s:{s:o, s:I, s:o}}", "ruleId",
                     af_json_text(r->kind), "ruleIndex", kind > 0 ? json_integer(kind - 1) : NULL, "level", "error",
                     "message", "text", af_json_text(text), "locations", "physicalLocation", "artifactLocation", "uri",
                     uri, "uriBaseId", "REPORTDIR", "region", "startLine", 1, "partialFingerprints",
                     "attnfuzzBucket/v1", r->bucket, "properties", "signature", af_json_text(r->signature), "count",
                     (json_int_t)r->count, "repro", af_json_text(r->repro));
}

/* New reference, or NULL when out of memory. */
static json_t *report_sarif(const report_list *l) {
    json_t *results = json_array();
    for (int i = 0; results && i < l->n; i++) {
        if (json_array_append_new(results, sarif_result(&l->items[i].rec, l->items[i].kind))) {
            json_decref(results);
            results = NULL;
        }
    }
    return json_pack("{s:s, s:s, s:[{s:{s:{s:s, s:o}}, s:{s:{s:{s:s}}}, s:o}]}", "version", "2.1.0", "$schema",
                     "https://json.schemastore.org/sarif-2.1.0.json", "runs", "tool", "driver", "name", "attnfuzz",
                     "rules", sarif_rules(), "originalUriBaseIds", "REPORTDIR", "description", "text",
                     "The directory holding this report (the campaign directory).", "results", results);
}

/* A JSON report on f: compact, one line. 0, or -1 when it could not be built. */
static int write_json_report(FILE *f, json_t *report) {
    int rc = report ? json_dumpf(report, f, JSON_COMPACT) : -1;
    json_decref(report);
    if (rc == 0 && fputc('\n', f) == EOF) rc = -1;
    return rc;
}

/* ---- report.html -------------------------------------------------------------------- */

static const char base64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *af_base64(const unsigned char *data, size_t n) {
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16;
        if (i + 1 < n) v |= (uint32_t)data[i + 1] << 8;
        if (i + 2 < n) v |= data[i + 2];
        out[o++] = base64_digits[(v >> 18) & 63];
        out[o++] = base64_digits[(v >> 12) & 63];
        out[o++] = i + 1 < n ? base64_digits[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? base64_digits[v & 63] : '=';
    }
    out[o] = 0;
    return out;
}

static void html_text(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
            case '&':
                fputs("&amp;", f);
                break;
            case '<':
                fputs("&lt;", f);
                break;
            case '>':
                fputs("&gt;", f);
                break;
            case '"':
                fputs("&quot;", f);
                break;
            case '\'':
                fputs("&#39;", f);
                break;
            default:
                fputc(*p < 0x20 && *p != '\n' && *p != '\t' ? '?' : *p, f);
        }
    }
}

/* width/height > 0: the browser scales the (one pixel per cell) picture up. */
static void html_img(FILE *f, const unsigned char *png, size_t n, const char *alt, int width, int height) {
    char *b64 = af_base64(png, n);
    if (!b64) return;
    fputs("<img src=\"data:image/png;base64,", f);
    fputs(b64, f);
    if (width > 0 && height > 0) fprintf(f, "\" width=\"%d\" height=\"%d", width, height);
    fputs("\" alt=\"", f);
    html_text(f, alt);
    fputs("\">", f);
    free(b64);
}

/* A bucket's stored PNG (drawn when its matrix file is missing), inlined with a caption. */
static void html_png_file(FILE *f, const af_finding_record *r, const char *name, const char *caption) {
    char path[1200];
    size_t n = 0;
    path_in(path, sizeof path, r->dir, name);
    unsigned char *png = (unsigned char *)tr_read_file(path, &n);
    if (!png) return;
    fputs("<figure>", f);
    html_img(f, png, n, caption, 0, 0);
    fprintf(f, "<figcaption>%s</figcaption></figure>\n", caption);
    free(png);
}

/* Redraw from the stored matrix; fall back to the stored PNG. */
static void html_heatmap(FILE *f, const af_finding_record *r) {
    char path[1200];
    af_heatmap m;
    unsigned char *png = NULL;
    size_t n = 0;
    path_in(path, sizeof path, r->dir, "heatmap.txt");
    if (af_heatmap_load(&m, path) == 0) {
        int w = 0, h = 0;
        if (tr_heatmap_png_native(&m, &png, &n, &w, &h) == 0) {
            fputs("<figure>", f);
            html_img(f, png, n, "error heatmap", w, h);
            fputs("<figcaption>", f);
            html_text(f, m.title[0] ? m.title : "error heatmap");
            fputs(" &mdash; rows: ", f);
            html_text(f, m.row_label);
            fputs(", columns: ", f);
            html_text(f, m.col_label);
            if (m.allowed > 0)
                fprintf(f, "; colour = error / allowed (%.3g)", (double)m.allowed);
            else
                fputs("; colour = error / largest cell", f);
            fputs("</figcaption></figure>\n", f);
        }
        af_heatmap_free(&m);
        free(png);
        return;
    }
    html_png_file(f, r, "heatmap.png", "error heatmap");
}

/* The leak matrix with a legend and the first leaking (output, hidden set) pairs. */
static void html_leak(FILE *f, const af_finding_record *r) {
    enum { MAX_LISTED = 8 };
    char path[1200];
    af_leak_matrix m;
    unsigned char *png = NULL;
    size_t n = 0;
    path_in(path, sizeof path, r->dir, "leak.txt");
    if (af_leak_load(path, &m) == 0) {
        int w = 0, h = 0;
        if (tr_leak_png_native(&m, &png, &n, &w, &h) == 0) {
            long long leaked = af_leak_count(&m);
            fputs("<figure>", f);
            html_img(f, png, n, "leak matrix", w, h);
            fprintf(f,
                    "<figcaption>leak matrix %d &times; %d (rows: outputs, columns: hidden input sets): "
                    "<span style=\"color:#d21e1e\">red</span> = a hidden set moved the output (leak), dark blue = "
                    "hidden and unchanged, pale green = visible and changed, grey = visible and unchanged; "
                    "%lld leaking pair%s",
                    m.rows, m.cols, leaked, leaked == 1 ? "" : "s");
            int listed = 0;
            for (int i = 0; i < m.rows && listed < MAX_LISTED; i++)
                for (int j = 0; j < m.cols && listed < MAX_LISTED; j++) {
                    if ((m.cells[(size_t)i * m.cols + j] & 3) != AF_LEAK_CHANGED) continue;
                    fputs(listed ? "<br>" : ":<br>", f);
                    if (m.row_labels[i][0])
                        html_text(f, m.row_labels[i]);
                    else
                        fprintf(f, "row %d", i);
                    fputs(" &larr; ", f);
                    if (m.col_labels[j][0])
                        html_text(f, m.col_labels[j]);
                    else
                        fprintf(f, "set %d", j);
                    listed++;
                }
            if (leaked > listed) fprintf(f, "<br>&hellip; and %lld more", leaked - listed);
            fputs("</figcaption></figure>\n", f);
        }
        af_leak_matrix_free(&m);
        free(png);
        return;
    }
    html_png_file(f, r, "leak.png", "leak matrix");
}

static const char html_style[] =
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}"
    "h1{font-size:1.5em}h2{font-size:1.05em;font-family:monospace;word-break:break-all;margin:0 0 .5em}"
    "section{border:1px solid #ccc;border-left:6px solid #c33;border-radius:4px;padding:1em;margin:1em 0}"
    "table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left;border-bottom:1px solid #eee}"
    "pre{background:#f6f6f6;padding:.6em;overflow-x:auto}code{background:#f6f6f6}"
    "figure{display:inline-block;margin:.5em 1em .5em 0;vertical-align:top}"
    "figcaption{font-size:.85em;color:#555;max-width:400px}img{image-rendering:pixelated;border:1px solid #999}"
    ".kind{font-weight:bold;color:#c33}.ok{color:#282}";

static void write_html(FILE *f, const report_list *l, const af_triage_summary *s) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>attnfuzz findings</title>\n<style>",
          f);
    fputs(html_style, f);
    fputs("</style></head><body>\n<h1>attnfuzz findings</h1>\n", f);
    if (s->buckets == 0) {
        fputs("<p class=\"ok\">No findings.</p>\n</body></html>\n", f);
        return;
    }
    fprintf(f,
            "<p>%d bucket%s (distinct signatures), %lld finding%s in all.</p>\n<table><tr><th>verdict</th>"
            "<th>buckets</th><th>meaning</th></tr>\n",
            s->buckets, s->buckets == 1 ? "" : "s", s->findings, s->findings == 1 ? "" : "s");
    for (int k = 1; k < AF_V_COUNT; k++) {
        if (!s->by_kind[k]) continue;
        fprintf(f, "<tr><td class=\"kind\">%s</td><td>%d</td><td>", af_verdict_name((af_verdict_kind)k), s->by_kind[k]);
        html_text(f, kind_description(k));
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
    for (int i = 0; i < l->n; i++) {
        const af_finding_record *r = &l->items[i].rec;
        fprintf(f, "<section id=\"b%s\">\n<h2>", r->bucket);
        html_text(f, r->signature);
        fputs("</h2>\n<table><tr><th>verdict</th><td class=\"kind\">", f);
        html_text(f, r->kind);
        fputs("</td></tr><tr><th>backend</th><td>", f);
        html_text(f, r->backend);
        if (r->engine[0]) {
            fputs(" : ", f);
            html_text(f, r->engine);
        }
        fprintf(f, "</td></tr><tr><th>bucket</th><td><code>%s</code></td></tr>", r->bucket);
        fprintf(f, "<tr><th>count</th><td>%lld</td></tr><tr><th>first seen</th><td>", r->count);
        html_text(f, r->first_seen);
        if (r->time_to_first_seconds >= 0) fprintf(f, " (%.1f s into the campaign)", r->time_to_first_seconds);
        fputs("</td></tr><tr><th>result</th><td><code>", f);
        html_text(f, r->verdict_line);
        fputs("</code></td></tr></table>\n<p>Reproduce:</p><pre>", f);
        html_text(f, r->repro);
        fprintf(f, "</pre>\n<p>Reproducer <code>findings/%s/finding.case</code>:</p><pre>", r->bucket);
        html_text(f, r->case_text);
        fputs("</pre>\n", f);
        if (r->has_original) {
            char path[1200];
            path_in(path, sizeof path, r->dir, "original.case");
            char *orig = tr_read_file(path, NULL);
            if (orig) {
                fputs("<details><summary>case before minimisation</summary><pre>", f);
                html_text(f, orig);
                fputs("</pre></details>\n", f);
                free(orig);
            }
        }
        html_heatmap(f, r);
        html_leak(f, r);
        fputs("</section>\n", f);
    }
    fputs("</body></html>\n", f);
}

/* ---- build --------------------------------------------------------------------------- */

int af_triage_build(const char *dir, af_triage_summary *summary, char *why, size_t cap) {
    report_list l = {0};
    af_triage_summary s;
    memset(&s, 0, sizeof s);
    int n = af_findings_scan(dir, collect, &l, why, cap);
    if (n < 0 || l.failed) {
        if (l.failed) snprintf(why, cap, "out of memory reading %s/findings", dir);
        list_free(&l);
        return -1;
    }
    if (l.n > 1) qsort(l.items, (size_t)l.n, sizeof *l.items, cmp_items);
    s.buckets = l.n;
    for (int i = 0; i < l.n; i++) {
        s.findings += l.items[i].rec.count;
        if (l.items[i].kind > 0) s.by_kind[l.items[i].kind]++;
    }

    static const char *const names[4] = {"report.json", "report.junit.xml", "report.sarif", "report.html"};
    int rc = 0;
    for (int i = 0; i < 4 && rc == 0; i++) {
        char tmp[1200];
        FILE *f = open_report(dir, names[i], tmp, sizeof tmp);
        if (!f) {
            snprintf(why, cap, "%s: cannot create", tmp);
            rc = -1;
            break;
        }
        int built = 0;
        switch (i) {
            case 0:
                built = write_json_report(f, report_json(&l, &s));
                break;
            case 1:
                write_junit(f, &l);
                break;
            case 2:
                built = write_json_report(f, report_sarif(&l));
                break;
            default:
                write_html(f, &l, &s);
                break;
        }
        rc = commit_report(f, built == 0, tmp, dir, names[i], why, cap);
    }
    list_free(&l);
    if (summary) *summary = s;
    return rc;
}
