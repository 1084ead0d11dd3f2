/* test_triage_safety.c — a findings directory from someone else cannot make triage
 * read files outside it or write through planted links, and hostile text cannot break
 * the reports or reach a terminal.
 *
 *   - findings/<bucket>/original.case -> /etc/passwd and finding.case -> /etc/passwd:
 *     no line of /etc/passwd reaches report.html, report.json, report.sarif or
 *     report.junit.xml (the first bucket is reported without its original, the second
 *     is skipped);
 *   - a pre-planted DIR/report.html.tmp symlink: its target keeps its bytes and
 *     report.html is a regular file;
 *   - a backend message and engine name holding invalid UTF-8 and ESC [31m go through
 *     verdict.json, the four reports and the terminal line (af_verdict_line): every
 *     output is valid UTF-8 without a raw ESC, and python3's json and xml.etree parse
 *     them;
 *   - the summary page of a clean campaign (a stats.json of 471 cases) names the
 *     backend, the cases, the time, the config cells and draws the histogram and the
 *     timeline; JUnit says 471 cases judged (a property) and counts its one testcase.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "judge/signature.h"
#include "triage/findings.h"
#include "triage/report.h"
#include "util/check.h"
#include "util/fsutil.h"
#include "util/text.h"

static char *slurp(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "%s", path);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    CHECK(buf);
    fclose(f);
    buf[n] = 0;
    CHECK(strlen(buf) == n); /* no NUL inside */
    return buf;
}

static af_case small_case(void) {
    af_case c;
    af_case_defaults(&c);
    c.seqlen_q = c.seqlen_kv = 16;
    return c;
}

static af_verdict hostile_verdict(const char *engine) {
    af_verdict v;
    af_verdict_init(&v, "planted");
    snprintf(v.info.engine, sizeof v.info.engine, "%s", engine);
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = AF_V_MISMATCH;
    f.tensor = AF_T_O;
    f.error = 1;
    f.allowed = 0.1;
    f.ratio = 10;
    snprintf(f.detail, sizeof f.detail,
             "bad \xff\xfe bytes \x1b[31mred\x1b[0m \xc2\x9b"
             "2J end");
    af_verdict_add(&v, &f);
    return v;
}

static void expect_safe(const char *what, const char *text) {
    CHECK_MSG(af_text_is_clean(text, strlen(text), AF_TEXT_UTF8), "%s is not valid UTF-8", what);
    CHECK_MSG(strchr(text, 0x1b) == NULL, "%s holds a raw ESC", what);
    CHECK_MSG(strstr(text, "\xc2\x9b") == NULL, "%s holds a raw C1 CSI", what);
}

/* The first line of /etc/passwd ("root:x:0:0:..."), the secret that must not leak. */
static void passwd_line(char *out, size_t cap) {
    FILE *f = fopen("/etc/passwd", "r");
    CHECK_MSG(f != NULL, "the test needs /etc/passwd");
    CHECK(fgets(out, (int)cap, f) != NULL);
    fclose(f);
    out[strcspn(out, "\n")] = 0;
    CHECK(strlen(out) > 8);
}

static void test_symlinks(const char *root) {
    char dir[512], why[512], path[1024], bucket1[AF_BUCKET_ID_LEN + 1], bucket2[AF_BUCKET_ID_LEN + 1];
    snprintf(dir, sizeof dir, "%s/links", root);
    CHECK(af_mkdirs(dir, why, sizeof why) == 0);
    af_case c = small_case(), orig = small_case();
    orig.seqlen_q = 64;
    af_finding_extra x = {0};
    x.original = &orig;
    af_verdict v1 = hostile_verdict("eng_a"), v2 = hostile_verdict("eng_b");
    CHECK_MSG(af_finding_store(dir, &c, &v1, &x, bucket1, why, sizeof why) == 1, "%s", why);
    CHECK_MSG(af_finding_store(dir, &c, &v2, NULL, bucket2, why, sizeof why) == 1, "%s", why);
    /* the attacker's edits: the reproducers become links to a secret */
    snprintf(path, sizeof path, "%s/findings/%s/original.case", dir, bucket1);
    CHECK(unlink(path) == 0 && symlink("/etc/passwd", path) == 0);
    snprintf(path, sizeof path, "%s/findings/%s/finding.case", dir, bucket2);
    CHECK(unlink(path) == 0 && symlink("/etc/passwd", path) == 0);
    /* and a planted temp name of the old writer, pointing at a file of theirs */
    char victim[1024];
    snprintf(victim, sizeof victim, "%s/victim.txt", root);
    CHECK(af_write_file_atomic(victim, "untouched", 9, why, sizeof why) == 0);
    snprintf(path, sizeof path, "%s/report.html.tmp", dir);
    CHECK(symlink(victim, path) == 0);

    af_triage_summary s;
    CHECK_MSG(af_triage_build(dir, &s, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(s.buckets == 1, "%d buckets: the one whose finding.case is a link is skipped", s.buckets);
    char secret[512];
    passwd_line(secret, sizeof secret);
    static const char *const reports[4] = {"report.html", "report.json", "report.sarif", "report.junit.xml"};
    for (int i = 0; i < 4; i++) {
        char *text = slurp(dir, reports[i]);
        CHECK_MSG(strstr(text, secret) == NULL, "%s holds /etc/passwd", reports[i]);
        CHECK_MSG(strstr(text, "root:x:") == NULL, "%s holds /etc/passwd", reports[i]);
        free(text);
    }
    char *html = slurp(dir, "report.html");
    CHECK(strstr(html, "case before minimisation") == NULL); /* the linked original is not shown */
    free(html);
    char *kept = slurp(root, "victim.txt");
    CHECK_MSG(strcmp(kept, "untouched") == 0, "the planted link's target was written: %s", kept);
    free(kept);
    snprintf(path, sizeof path, "%s/report.html", dir);
    CHECK(af_is_regular_file(path));
}

static void test_text(const char *root) {
    char dir[512], why[512], bucket[AF_BUCKET_ID_LEN + 1];
    snprintf(dir, sizeof dir, "%s/text", root);
    CHECK(af_mkdirs(dir, why, sizeof why) == 0);
    af_case c = small_case();
    af_verdict v = hostile_verdict("eng\x1b]0;title\x07\xff");
    snprintf(v.reason, sizeof v.reason, "reason \x1b[2J\xc3");
    char line[1024];
    af_verdict_line(&v, line, sizeof line);
    expect_safe("af_verdict_line", line);
    CHECK(strstr(line, "\\x1b[31mred") != NULL); /* shown, not obeyed */
    CHECK_MSG(af_finding_store(dir, &c, &v, NULL, bucket, why, sizeof why) == 1, "%s", why);
    CHECK_MSG(af_triage_build(dir, NULL, why, sizeof why) == 0, "%s", why);
    char name[128];
    snprintf(name, sizeof name, "findings/%s/verdict.json", bucket);
    static const char *const outputs[5] = {NULL, "report.html", "report.json", "report.sarif", "report.junit.xml"};
    for (int i = 0; i < 5; i++) {
        char *text = slurp(dir, outputs[i] ? outputs[i] : name);
        expect_safe(outputs[i] ? outputs[i] : name, text);
        CHECK(strstr(text, "x1b[31mred") != NULL); /* the message is there, escaped */
        free(text);
    }
    /* and real parsers accept them */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json, sys, xml.etree.ElementTree as ET\n"
             "d = sys.argv[1]\n"
             "for n in (\"report.json\", \"report.sarif\", \"findings/%s/verdict.json\"):\n"
             "    json.load(open(d + \"/\" + n, encoding=\"utf-8\"))\n"
             "t = ET.parse(d + \"/report.junit.xml\").getroot()\n"
             "assert t.tag == \"testsuites\", t.tag\n"
             "open(d + \"/report.html\", encoding=\"utf-8\").read()\n' '%s'",
             bucket, dir);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "python3 could not parse the reports (rc %d)", rc);
}

static void test_clean_summary(const char *root) {
    char dir[512], why[512];
    snprintf(dir, sizeof dir, "%s/clean", root);
    CHECK(af_mkdirs(dir, why, sizeof why) == 0);
    static const char stats[] =
        "{\"start_time\": \"2026-01-02T03:04:05Z\", \"elapsed_s\": 60.5, \"cases\": 473, \"cases_per_s\": 7.8182,"
        " \"findings\": 0, \"buckets\": 0, \"crashes\": 0, \"hangs\": 0, \"declined\": 5, \"errors\": 2,"
        " \"corpus\": 31, \"backend\": \"cpu\", \"engine\": \"\", \"jobs\": 1, \"mode\": \"inprocess\","
        " \"time_to_first_finding_s\": null,"
        " \"seqlen_q_hist\": {\"1\": 0, \"2-3\": 3, \"4-7\": 470}, \"seqlen_kv_hist\": {\"1\": 0, \"2-3\": 0,"
        " \"4-7\": 473}, \"config_cells\": 57, \"config_cells_total\": 4096,"
        " \"timeline\": {\"interval_s\": 1, \"points\": [[0, 0, 0], [30, 200, 0], [60.5, 473, 0]]}}\n";
    char path[1024];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    CHECK(af_write_file_atomic(path, stats, sizeof stats - 1, why, sizeof why) == 0);
    CHECK_MSG(af_triage_build(dir, NULL, why, sizeof why) == 0, "%s", why);
    char *html = slurp(dir, "report.html");
    CHECK(strstr(html, "No findings in 471 judged cases.") != NULL);
    CHECK(strstr(html, "<tr><th>backend</th><td>cpu</td></tr>") != NULL);
    CHECK(strstr(html, "471 judged (473 run, 5 declined, 2 could not run)") != NULL);
    CHECK(strstr(html, "60.5 s, 7.82 cases/s, 1 job, inprocess") != NULL);
    CHECK(strstr(html, "57 of 4096 (1.4 %)") != NULL);
    CHECK(strstr(html, "<h2>Sequence lengths</h2>") != NULL &&
          strstr(html, "<td>4-7</td><td class=\"num\">470") != NULL);
    CHECK(strstr(html, "<svg class=\"timeline\"") != NULL && strstr(html, "<polyline") != NULL);
    CHECK(strstr(html, "Leak matrix") == NULL); /* no leak findings */
    free(html);
    char *xml = slurp(dir, "report.junit.xml");
    CHECK_MSG(strstr(xml, "<testsuite name=\"attnfuzz.findings\" tests=\"1\" failures=\"0\"") != NULL, "%s", xml);
    CHECK(strstr(xml, "<property name=\"attnfuzz.cases_judged\" value=\"471\"/>") != NULL);
    CHECK(strstr(xml, "<testcase classname=\"attnfuzz.campaign\" name=\"judged cases\"") != NULL);
    free(xml);
    char *json = slurp(dir, "report.json");
    CHECK(strstr(json, "\"cases_judged\":471") != NULL);
    free(json);
}

int main(void) {
    char root[] = "/tmp/af_triage_safety_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    test_symlinks(root);
    test_text(root);
    test_clean_summary(root);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    CHECK_DONE("test_triage_safety");
}
