/* report.c — reports of a findings directory: JSON, JUnit XML, SARIF 2.1.0, HTML.
 *
 * All four list the same buckets in the same order (verdict kind, then signature) and
 * hold no time of their own making, so rebuilding from the same DIR gives the same
 * bytes. Paths inside the reports are relative to DIR. The two JSON reports are built
 * with jansson (util/json.h) and written compactly on one line; the XML is written as
 * text here, the HTML in report_html.c. Each report is built in memory and put in
 * place by af_write_file_atomic (util/fsutil.h), so a planted DIR/report.html.tmp
 * symlink is never followed. Text from buckets goes through util/text.h first.
 */
#include "judge/signature.h"
#include "judge/evidence.h"
#include "triage/findings.h"
#include "triage/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "triage/src/triage_internal.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/text.h"

typedef tr_item report_item;

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
const char *tr_kind_description(int k) {
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
        case AF_V_ERROR:
            return "The harness side (a worker's adapter code) failed: no verdict on the kernel.";
        case AF_V_INPUT_MUTATION:
            return "The run wrote into an input it was given (Q, K, V, dO, page table, offsets, scales).";
        default:
            return "Unknown verdict kind.";
    }
}

/* ---- report.json ----------------------------------------------------------------- */

/* "findings/<bucket>/<name>", or null when the file is not there. */
static json_t *rel_or_null(bool present, const char *bucket, const char *name) {
    char rel[128];
    if (!present) return json_null();
    snprintf(rel, sizeof rel, "findings/%s/%s", bucket, name);
    return json_string(rel);
}

static json_t *bucket_json(const report_item *it) {
    const af_finding_record *r = &it->rec;
    /* the bucket's verdict.json as it was stored (read_bucket checked that it parses) */
    json_t *verdict = json_loads(r->verdict_json, 0, NULL);
    json_t *o = json_pack(
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
    /* the GPU that ran the stored finding (campaign --gpus), null when none was recorded */
    if (o) json_object_set_new(o, "device", r->device[0] ? af_json_text(r->device) : json_null());
    /* one defect seen through several tensors or probes: its linked buckets and group */
    json_t *linked = json_array();
    for (int i = 0; linked && i < it->n_linked; i++) json_array_append_new(linked, json_string(it->linked[i]));
    if (o && linked) json_object_set_new(o, "linked", linked);
    if (o) json_object_set_new(o, "group", json_string(it->group));
    return o;
}

/* New reference, or NULL when out of memory. */
static json_t *report_json(const report_list *l, const af_triage_summary *s, const tr_report *rep) {
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
        if (json_array_append_new(buckets, bucket_json(&l->items[i]))) {
            json_decref(buckets);
            buckets = NULL;
        }
    }
    json_t *interrupted = json_array();
    for (int i = 0; interrupted && i < rep->interrupted->n; i++) {
        const tr_interrupted_case *c = &rep->interrupted->cases[i];
        if (json_array_append_new(interrupted, json_pack("{s:o, s:o}", "case", af_json_text(c->name), "backend",
                                                         af_json_text(c->backend)))) {
            json_decref(interrupted);
            interrupted = NULL;
        }
    }
    /* write_errors, findings_unstored: from stats.json, the campaign's failures to keep
     * what it found (0 when it kept everything, or no campaign wrote stats.json) */
    return json_pack("{s:s, s:s, s:i, s:{s:i, s:I, s:o, s:I, s:o, s:i, s:I, s:I, s:i}, s:o, s:o}", "tool", "attnfuzz",
                     "report", "triage", "format_version", 1, "summary", "buckets", s->buckets, "findings",
                     (json_int_t)s->findings, "by_kind", by_kind, "cases_judged", (json_int_t)tr_cases_judged(rep),
                     "elapsed_s", rep->stats->present ? af_json_real(rep->stats->elapsed_s) : json_null(),
                     "interrupted_cases", rep->interrupted->total, "write_errors", (json_int_t)rep->stats->write_errors,
                     "findings_unstored", (json_int_t)rep->stats->findings_unstored, "groups", s->groups, "buckets",
                     buckets, "interrupted", interrupted);
}

/* ---- report.junit.xml ------------------------------------------------------------- */

/* XML 1.0 escaping of text cleaned by util/text.h: valid UTF-8, and control characters
 * other than tab/newline (which XML does not allow at all, not even as references)
 * written as the visible \xNN; inside attributes tab and newline are written as
 * character references, since a parser would otherwise normalise them to spaces. */
static void xml_escape(FILE *f, const char *s, bool attribute) {
    char *clean = af_text_clean_dup(s, AF_TEXT_NO_CONTROLS);
    for (const unsigned char *p = (const unsigned char *)(clean ? clean : ""); *p; p++) {
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
                fputc(*p, f);
        }
    }
    free(clean);
}
static void xml_attr(FILE *f, const char *s) { xml_escape(f, s, true); }
static void xml_text(FILE *f, const char *s) { xml_escape(f, s, false); }

long long tr_cases_judged(const tr_report *rep) {
    long long judged = rep->stats->present ? rep->stats->cases - rep->stats->errors : 0;
    return judged > rep->buckets ? judged : rep->buckets;
}

/* tests = cases judged (stats.json), failures = findings (every duplicate), capped at
 * tests; one testcase per bucket with its failure, and one passing testcase that
 * stands for the judged cases without a finding. */
static void write_junit(FILE *f, const report_list *l, const tr_report *rep) {
    long long tests = tr_cases_judged(rep), failures = rep->findings < tests ? rep->findings : tests;
    double seconds = rep->stats->present ? rep->stats->elapsed_s : 0;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f, "<testsuites name=\"attnfuzz\" tests=\"%lld\" failures=\"%lld\" errors=\"0\" time=\"%.3f\">\n", tests,
            failures, seconds);
    fprintf(f,
            "  <testsuite name=\"attnfuzz.findings\" tests=\"%lld\" failures=\"%lld\" errors=\"0\" skipped=\"0\" "
            "time=\"%.3f\">\n",
            tests, failures, seconds);
    if (tests > l->n)
        fprintf(f,
                "    <testcase classname=\"attnfuzz.campaign\" name=\"judged cases\" time=\"%.3f\">"
                "<system-out>%lld cases judged, %lld findings in %d buckets</system-out></testcase>\n",
                seconds, tests, rep->findings, l->n);
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
    /* cases in flight when a run stopped: no verdict, so no testcase; named for the reader */
    if (rep->interrupted->total > 0) {
        fprintf(f, "    <system-out>%d case(s) in flight when a run of the campaign stopped:\n",
                rep->interrupted->total);
        for (int i = 0; i < rep->interrupted->n; i++) {
            xml_text(f, rep->interrupted->cases[i].name);
            fputs(" (backend ", f);
            xml_text(f, rep->interrupted->cases[i].backend);
            fputs(")\n", f);
        }
        fputs("</system-out>\n", f);
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
                      tr_kind_description(k), "defaultConfiguration", "level", "error");
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

/* ---- build --------------------------------------------------------------------------- */

/* The report built by write(f) in memory, then put in place atomically. 0 or -1. */
static int write_report(const char *dir, const char *name,
                        int (*write)(FILE *f, const report_list *l, const af_triage_summary *s, const tr_report *rep),
                        const report_list *l, const af_triage_summary *s, const tr_report *rep, char *why, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f) {
        snprintf(why, cap, "%s: out of memory", path);
        return -1;
    }
    int built = write(f, l, s, rep);
    int bad = built != 0 || ferror(f);
    bad |= fclose(f) != 0;
    if (bad) {
        snprintf(why, cap, "%s: cannot build (out of memory)", path);
        free(text);
        return -1;
    }
    int rc = af_write_file_atomic(path, text, n, why, cap);
    free(text);
    return rc;
}

static int json_writer(FILE *f, const report_list *l, const af_triage_summary *s, const tr_report *rep) {
    return write_json_report(f, report_json(l, s, rep));
}
static int junit_writer(FILE *f, const report_list *l, const af_triage_summary *s, const tr_report *rep) {
    (void)s;
    write_junit(f, l, rep);
    return 0;
}
static int sarif_writer(FILE *f, const report_list *l, const af_triage_summary *s, const tr_report *rep) {
    (void)s;
    (void)rep;
    return write_json_report(f, report_sarif(l));
}
static int html_writer(FILE *f, const report_list *l, const af_triage_summary *s, const tr_report *rep) {
    (void)l;
    (void)s;
    tr_write_html(f, rep);
    return 0;
}

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
    s.groups = tr_links_read(dir, l.items, l.n);
    for (int i = 0; i < l.n; i++) {
        int size = 0; /* the buckets of its group */
        for (int j = 0; j < l.n; j++) size += !strcmp(l.items[j].group, l.items[i].group);
        if (size > s.largest_group_size) {
            s.largest_group_size = size;
            snprintf(s.largest_group, sizeof s.largest_group, "%s", l.items[i].group);
        }
    }
    for (int i = 0; i < l.n; i++) {
        s.findings += l.items[i].rec.count;
        if (l.items[i].kind > 0) s.by_kind[l.items[i].kind]++;
    }
    tr_campaign_stats *stats = malloc(sizeof *stats);
    if (!stats) {
        snprintf(why, cap, "out of memory");
        list_free(&l);
        return -1;
    }
    tr_stats_read(dir, stats);
    tr_interrupted *interrupted = malloc(sizeof *interrupted);
    if (!interrupted) {
        snprintf(why, cap, "out of memory");
        free(stats);
        list_free(&l);
        return -1;
    }
    tr_interrupted_read(dir, stats->backend[0] ? stats->backend : "?", interrupted);
    tr_report rep = {dir, l.items, l.n, s.buckets, s.findings, s.by_kind, stats, interrupted};

    static const char *const names[4] = {"report.json", "report.junit.xml", "report.sarif", "report.html"};
    int (*const writers[4])(FILE *, const report_list *, const af_triage_summary *,
                            const tr_report *) = {json_writer, junit_writer, sarif_writer, html_writer};
    int rc = 0;
    for (int i = 0; i < 4 && rc == 0; i++) rc = write_report(dir, names[i], writers[i], &l, &s, &rep, why, cap);
    s.interrupted_cases = interrupted->total;
    s.write_errors = stats->write_errors;
    s.findings_unstored = stats->findings_unstored;
    free(interrupted);
    free(stats);
    list_free(&l);
    if (summary) *summary = s;
    return rc;
}

int af_triage_check_dir(const char *dir, char *why, size_t cap) {
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(why, cap, "%s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "%s: not a directory", dir);
        return -1;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    if (af_is_regular_file(path)) return 0;
    snprintf(path, sizeof path, "%s/gate.json", dir);
    if (af_is_regular_file(path)) return 0;
    snprintf(path, sizeof path, "%s/findings", dir);
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    snprintf(why, cap, "%s holds no campaign (no stats.json, findings/ or gate.json): no report written", dir);
    return -1;
}
