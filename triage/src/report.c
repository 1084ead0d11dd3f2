/* report.c — reports of a findings directory: JSON, JUnit XML, SARIF 2.1.0, HTML.
 *
 * All four list the same buckets in the same order (severity, then count, then
 * signature: triage/report.h) and
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
#include "util/version.h"

typedef tr_item report_item;

typedef struct {
    report_item *items;
    int n, cap;
    int failed;
} report_list;

/* The Reproduce line with the case path relative to DIR (findings/<bucket>/finding.case,
 * run from DIR), rebuilt from verdict.json's repro_args; the stored line is kept when a
 * bucket has no repro_args (written by an older attnfuzz) or the line does not fit. */
static void relative_repro(af_finding_record *r) {
    json_t *v = json_loads(r->verdict_json, 0, NULL);
    const json_t *args = json_object_get(v, "repro_args");
    enum { MAX_WORDS = 32 };
    const char *words[MAX_WORDS + 1];
    size_t n = 0;
    bool ok = json_is_array(args) && json_array_size(args) <= MAX_WORDS;
    for (; ok && n < json_array_size(args); n++) {
        words[n] = json_string_value(json_array_get(args, n));
        ok = words[n] != NULL;
    }
    words[n] = NULL;
    char case_rel[64], line[sizeof r->repro];
    snprintf(case_rel, sizeof case_rel, "findings/%s/finding.case", r->bucket);
    if (ok && af_repro_command(case_rel, NULL, words, line, sizeof line) < sizeof line)
        snprintf(r->repro, sizeof r->repro, "%s", line);
    json_decref(v);
}

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
    relative_repro(&it->rec);
    l->n++;
    return 0;
}

/* Severity (triage/report.h), then count (most first), then signature. */
static int cmp_items(const void *a, const void *b) {
    const report_item *x = a, *y = b;
    int rx = af_triage_severity_rank(x->kind), ry = af_triage_severity_rank(y->kind);
    if (rx != ry) return rx < ry ? -1 : 1;
    if (x->rec.count != y->rec.count) return x->rec.count > y->rec.count ? -1 : 1;
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
    /* its Reproduce line as the report gives it: relative to DIR */
    if (json_is_object(verdict)) json_object_set_new(verdict, "repro", af_json_text(r->repro));
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

/* report.json "provenance": the last run's keys flattened (every shown key present,
 * "unknown" when not recorded) and "runs", DIR/provenance.json's runs ([] without one). */
static json_t *provenance_json(const tr_report *rep) {
    tr_provenance_pairs pairs;
    tr_provenance_flatten(rep->provenance, &pairs);
    json_t *o = json_object();
    for (int i = 0; o && i < pairs.n; i++)
        json_object_set_new(o, pairs.pair[i].name, af_json_text(pairs.pair[i].value));
    const json_t *runs = json_object_get(rep->provenance, "runs");
    if (o) json_object_set_new(o, "runs", runs ? json_deep_copy(runs) : json_array());
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
    return json_pack("{s:s, s:s, s:i, s:{s:i, s:I, s:o, s:I, s:o, s:i, s:I, s:I, s:i}, s:o, s:o, s:o}", "tool",
                     "attnfuzz", "report", "triage", "format_version", 1, "summary", "buckets", s->buckets, "findings",
                     (json_int_t)s->findings, "by_kind", by_kind, "cases_judged", (json_int_t)tr_cases_judged(rep),
                     "elapsed_s", rep->stats->present ? af_json_real(rep->stats->elapsed_s) : json_null(),
                     "interrupted_cases", rep->interrupted->total, "write_errors", (json_int_t)rep->stats->write_errors,
                     "findings_unstored", (json_int_t)rep->stats->findings_unstored, "groups", s->groups, "buckets",
                     buckets, "interrupted", interrupted, "provenance", provenance_json(rep));
}

/* ---- report.junit.xml ------------------------------------------------------------- */

/* XML 1.0 escaping (util/text.h): text, and attributes with tab and newline as references. */
static void xml_attr(FILE *f, const char *s) { af_text_write_markup(f, s, AF_MARKUP_XML_ATTRIBUTE); }
static void xml_text(FILE *f, const char *s) { af_text_write_markup(f, s, AF_MARKUP_XML_TEXT); }

long long tr_cases_judged(const tr_report *rep) {
    long long judged = rep->stats->present ? rep->stats->cases - rep->stats->errors : 0;
    return judged > rep->buckets ? judged : rep->buckets;
}

/* tests and failures count the elements: one testcase per bucket with its failure,
 * and (when cases were judged without a finding) one passing testcase that stands for
 * them. The campaign's figures (cases judged, findings with every duplicate) and the
 * provenance are the suite's <properties>. */
static void junit_property(FILE *f, const char *name, const char *value) {
    fputs("      <property name=\"", f);
    xml_attr(f, name);
    fputs("\" value=\"", f);
    xml_attr(f, value);
    fputs("\"/>\n", f);
}

static void write_junit(FILE *f, const report_list *l, const tr_report *rep) {
    long long judged = tr_cases_judged(rep);
    bool judged_case = judged > l->n;
    int tests = l->n + (judged_case ? 1 : 0), failures = l->n;
    double seconds = rep->stats->present ? rep->stats->elapsed_s : 0;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f, "<testsuites name=\"attnfuzz\" tests=\"%d\" failures=\"%d\" errors=\"0\" time=\"%.3f\">\n", tests,
            failures, seconds);
    fprintf(f,
            "  <testsuite name=\"attnfuzz.findings\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"0\" "
            "time=\"%.3f\">\n    <properties>\n",
            tests, failures, seconds);
    tr_provenance_pairs pairs;
    tr_provenance_flatten(rep->provenance, &pairs);
    char name[TR_PROVENANCE_NAME + 16], number[32];
    for (int i = 0; i < pairs.n; i++) {
        snprintf(name, sizeof name, "attnfuzz.%s", pairs.pair[i].name);
        junit_property(f, name, pairs.pair[i].value);
    }
    snprintf(number, sizeof number, "%lld", judged);
    junit_property(f, "attnfuzz.cases_judged", number);
    snprintf(number, sizeof number, "%lld", rep->findings);
    junit_property(f, "attnfuzz.findings", number);
    snprintf(number, sizeof number, "%d", l->n);
    junit_property(f, "attnfuzz.buckets", number);
    fputs("    </properties>\n", f);
    if (judged_case)
        fprintf(f,
                "    <testcase classname=\"attnfuzz.campaign\" name=\"judged cases\" time=\"%.3f\">"
                "<system-out>%lld cases judged, %lld findings in %d buckets</system-out></testcase>\n",
                seconds, judged, rep->findings, l->n);
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
        fprintf(f, "\">bucket %s, %lld finding%s\nrepro (from the campaign directory): ", r->bucket, r->count,
                r->count == 1 ? "" : "s");
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

/* One SARIF invocation per run of DIR/provenance.json (campaign/provenance.h). A run
 * with no recorded end (still running, or killed) did not execute successfully. */
static json_t *sarif_invocation(const json_t *run) {
    json_t *inv = json_object();
    if (!inv) return NULL;
    const json_t *line = json_object_get(run, "command_line"), *args = json_object_get(run, "arguments");
    if (json_is_string(line)) json_object_set_new(inv, "commandLine", json_deep_copy(line));
    if (json_is_array(args)) json_object_set_new(inv, "arguments", json_deep_copy(args));
    const char *times[2][2] = {{"start_time_utc", "startTimeUtc"}, {"end_time_utc", "endTimeUtc"}};
    for (int i = 0; i < 2; i++) {
        const json_t *t = json_object_get(run, times[i][0]);
        if (json_is_string(t)) json_object_set_new(inv, times[i][1], json_deep_copy(t));
    }
    json_object_set_new(inv, "executionSuccessful", json_boolean(json_is_true(json_object_get(run, "successful"))));
    const json_t *host = json_object_get(run, "host");
    if (json_is_string(host)) json_object_set_new(inv, "machine", json_deep_copy(host));
    /* the rest (seed, GPU, driver and library versions, target, outcome) as properties */
    json_t *props = json_object();
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)run, key, v) {
        if (strcmp(key, "command_line") && strcmp(key, "arguments") && strcmp(key, "start_time_utc") &&
            strcmp(key, "end_time_utc") && strcmp(key, "host"))
            json_object_set_new(props, key, json_deep_copy(v));
    }
    json_object_set_new(inv, "properties", props);
    return inv;
}

/* New reference, or NULL when out of memory. */
static json_t *report_sarif(const report_list *l, const tr_report *rep) {
    json_t *results = json_array();
    for (int i = 0; results && i < l->n; i++) {
        if (json_array_append_new(results, sarif_result(&l->items[i].rec, l->items[i].kind))) {
            json_decref(results);
            results = NULL;
        }
    }
    json_t *invocations = json_array();
    const json_t *runs = json_object_get(rep->provenance, "runs");
    size_t i;
    const json_t *run;
    json_array_foreach(runs, i, run) {
        if (json_is_object(run) && invocations) json_array_append_new(invocations, sarif_invocation(run));
    }
    /* the version of the attnfuzz that ran the campaign (its last run), else this one's */
    const json_t *last = tr_provenance_last(rep->provenance);
    const char *version = json_string_value(json_object_get(last, "attnfuzz_version"));
    const char *commit = json_string_value(json_object_get(last, "git_commit"));
    json_t *driver = json_pack("{s:s, s:s, s:o, s:{s:s, s:s}}", "name", "attnfuzz", "version",
                               version ? version : af_version(), "rules", sarif_rules(), "properties", "gitCommit",
                               commit ? commit : af_git_commit(), "reportBuiltBy", af_version());
    return json_pack("{s:s, s:s, s:[{s:{s:o}, s:o, s:{s:{s:{s:s}}}, s:o}]}", "version", "2.1.0", "$schema",
                     "https://json.schemastore.org/sarif-2.1.0.json", "runs", "tool", "driver", driver, "invocations",
                     invocations, "originalUriBaseIds", "REPORTDIR", "description", "text",
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
    return write_json_report(f, report_sarif(l, rep));
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
    tr_plot *plot = malloc(sizeof *plot);
    if (!plot) {
        snprintf(why, cap, "out of memory");
        free(interrupted);
        free(stats);
        list_free(&l);
        return -1;
    }
    tr_plot_read(dir, plot);
    json_t *provenance = tr_provenance_read(dir);
    tr_report rep = {dir, l.items, l.n, s.buckets, s.findings, s.by_kind, stats, interrupted, provenance, plot};

    static const char *const names[4] = {"report.json", "report.junit.xml", "report.sarif", "report.html"};
    int (*const writers[4])(FILE *, const report_list *, const af_triage_summary *,
                            const tr_report *) = {json_writer, junit_writer, sarif_writer, html_writer};
    int rc = 0;
    for (int i = 0; i < 4 && rc == 0; i++) rc = write_report(dir, names[i], writers[i], &l, &s, &rep, why, cap);
    s.interrupted_cases = interrupted->total;
    s.write_errors = stats->write_errors;
    s.findings_unstored = stats->findings_unstored;
    json_decref(provenance);
    free(plot);
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
