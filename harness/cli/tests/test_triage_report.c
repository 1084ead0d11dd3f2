/* test_triage_report.c — the four reports are well formed and agree with the buckets.
 *
 * report.json parses (a small JSON checker below) and lists every bucket; report.sarif
 * has the SARIF 2.1.0 keys (version, $schema, runs[0].tool.driver.name, rules, results
 * with ruleId, level, message, locations, partialFingerprints); report.junit.xml has one
 * testcase and one failure per bucket and balanced tags; report.html embeds the pictures
 * as data: URIs whose base64 decodes to PNG. Rebuilding gives the same bytes; an empty
 * DIR gives empty reports; `attnfuzz triage` runs the same build.
 * Buckets come in severity order (leak before mismatch); no report holds the campaign
 * directory's path (Reproduce lines name findings/<bucket>/finding.case); JUnit's
 * counts are its elements; DIR/provenance.json (campaign/provenance.h) shows in all four;
 * a probe's bucket (leak) keeps no heatmap of the unperturbed run in the HTML but its
 * own evidence, and heatmaps are drawn at 32 px a cell for small matrices.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "campaign/provenance.h"
#include "cli/cli.h"
#include "judge/signature.h"
#include "judge/evidence.h"
#include "triage/findings.h"
#include "triage/report.h"
#include "util/check.h"

/* ---- a small JSON checker, independent of the library's reader ---- */
static const char *jc_value(const char *p, int depth);
static const char *jc_ws(const char *p) {
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
    return p;
}
static const char *jc_string(const char *p) {
    if (*p++ != '"') return NULL;
    while (*p != '"') {
        if ((unsigned char)*p < 0x20) return NULL; /* raw control characters are not JSON */
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i]) return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
        p++;
    }
    return p + 1;
}
static const char *jc_value(const char *p, int depth) {
    if (depth > 100) return NULL;
    p = jc_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = jc_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                p = jc_string(jc_ws(p));
                if (!p) return NULL;
                p = jc_ws(p);
                if (*p++ != ':') return NULL;
            }
            p = jc_value(p, depth + 1);
            if (!p) return NULL;
            p = jc_ws(p);
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
        }
    }
    if (*p == '"') return jc_string(p);
    if (!strncmp(p, "true", 4)) return p + 4;
    if (!strncmp(p, "false", 5)) return p + 5;
    if (!strncmp(p, "null", 4)) return p + 4;
    char *end;
    strtod(p, &end);
    return end > p && *p != '+' && strncmp(p, "nan", 3) && strncmp(p, "inf", 3) ? end : NULL;
}
static int json_ok(const char *text) {
    const char *p = jc_value(text, 0);
    return p && *jc_ws(p) == 0;
}

static char *slurp(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static int b64_value(char c) {
    const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c ? strchr(digits, c) : NULL;
    return p ? (int)(p - digits) : -1;
}

/* Check every <img src="data:image/png;base64,..."> decodes to a PNG; returns how many
 * and the IHDR width/height of each (pictures are one pixel per cell, scaled by the
 * browser to the width/height attributes). */
static int check_html_images(const char *html, unsigned w[], unsigned h[], int cap) {
    const char *tag = "<img src=\"data:image/png;base64,";
    int n = 0;
    for (const char *p = strstr(html, tag); p; p = strstr(p, tag)) {
        p += strlen(tag);
        const char *end = strchr(p, '"');
        CHECK(end && (end - p) % 4 == 0 && end - p >= 32);
        unsigned char head[24]; /* signature + IHDR length, type, width, height */
        for (int i = 0; i < 8; i++) {
            int v = 0;
            for (int j = 0; j < 4; j++) {
                int d = b64_value(p[i * 4 + j]);
                CHECK(d >= 0);
                v = v * 64 + d;
            }
            head[i * 3] = (unsigned char)(v >> 16);
            head[i * 3 + 1] = (unsigned char)(v >> 8);
            head[i * 3 + 2] = (unsigned char)v;
        }
        CHECK(memcmp(head, "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16) == 0);
        for (const char *q = p; q < end; q++) CHECK(b64_value(*q) >= 0 || *q == '=');
        CHECK(n < cap);
        w[n] = (unsigned)head[16] << 24 | (unsigned)head[17] << 16 | (unsigned)head[18] << 8 | head[19];
        h[n] = (unsigned)head[20] << 24 | (unsigned)head[21] << 16 | (unsigned)head[22] << 8 | head[23];
        n++;
        p = end;
    }
    return n;
}

static af_verdict make_verdict(af_verdict_kind kind, af_tensor_id t, const char *detail) {
    af_verdict v;
    af_verdict_init(&v, "planted");
    snprintf(v.info.engine, sizeof v.info.engine, "window_off_by_one");
    af_finding f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.tensor = t;
    f.error = 0.125;
    f.allowed = 0.001;
    f.ratio = 125;
    snprintf(f.detail, sizeof f.detail, "%s", detail);
    af_verdict_add(&v, &f);
    return v;
}

static void populate(const char *dir, char buckets[2][AF_BUCKET_ID_LEN + 1]) {
    char why[512];
    af_case c;
    af_case_defaults(&c);
    c.mask = AF_MASK_CAUSAL;
    c.window_left = 4;
    /* a detail with every character the formats must escape */
    af_verdict leak = make_verdict(AF_V_LEAK, AF_T_O, "K row 3 -> O row 9 <&> \"q\" 'a' \\ \ttab\x01");
    unsigned char cells[3 * 5] = {0};
    cells[1 * 5 + 4] = AF_LEAK_CHANGED; /* output row 1 moved by hidden set 4 */
    cells[0] = AF_LEAK_VISIBLE | AF_LEAK_CHANGED;
    char rows[3][AF_LEAK_LABEL] = {"O b0 h0 r0", "O b0 h0 r<9>", "O b0 h0 r15"};
    char cols[5][AF_LEAK_LABEL] = {"s0", "s1", "s2", "s3", "K/V rows 12..13 (left of window)"};
    af_leak_matrix lm = {3, 5, cells, rows, cols};
    af_finding_extra x;
    memset(&x, 0, sizeof x);
    x.leaks = &lm;
    x.original = &c;
    /* the unperturbed run's heatmap, all within tolerance (a campaign of an older attnfuzz
     * stored one with a probe's finding): the report does not draw it */
    af_heatmap calm;
    CHECK(af_heatmap_alloc(&calm, 2, 2) == 0);
    calm.allowed = 1;
    x.heatmap = &calm;
    x.time_to_first_seconds = 12.5;
    CHECK_MSG(af_finding_store(dir, &c, &leak, &x, buckets[0], why, sizeof why) == 1, "%s", why);
    CHECK(af_finding_store(dir, &c, &leak, NULL, NULL, why, sizeof why) == 0);
    af_heatmap_free(&calm);

    af_case m = c;
    m.mask = AF_MASK_NONE;
    m.window_left = -1;
    m.backward = true;
    af_verdict mism = make_verdict(AF_V_MISMATCH, AF_T_DK, "");
    af_heatmap hm;
    CHECK(af_heatmap_alloc(&hm, 4, 2) == 0);
    for (int i = 0; i < 8; i++) hm.cells[i] = 0.01f * (float)i;
    hm.cells[7] = 3;
    hm.allowed = 0.05f;
    snprintf(hm.title, sizeof hm.title, "dK: max |kernel - oracle| per (key block of 4, head)");
    memset(&x, 0, sizeof x);
    x.heatmap = &hm;
    CHECK(af_finding_store(dir, &m, &mism, &x, buckets[1], why, sizeof why) == 1);
    af_heatmap_free(&hm);
}

static const char *root_path; /* no report may name it */

int main(void) {
    char root[] = "/tmp/af_triage_report_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    root_path = root;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/run", root);
    char buckets[2][AF_BUCKET_ID_LEN + 1];
    populate(dir, buckets);
    /* the campaign's record of itself (campaign/provenance.h) */
    const char *const words[] = {"attnfuzz", "campaign", "--seed", "77", "--out", "a b"};
    af_provenance_run run = {words, 6, 77, true, "planted:window_off_by_one", "", "inprocess", 1, 1.8e9, NULL};
    char pwhy[512];
    CHECK_MSG(af_provenance_begin(dir, &run, pwhy, sizeof pwhy) == 0, "%s", pwhy);
    CHECK_MSG(af_provenance_end(dir, 1.8e9 + 5, "findings", true, NULL, pwhy, sizeof pwhy) == 0, "%s", pwhy);

    char why[512];
    af_triage_summary s;
    CHECK_MSG(af_triage_build(dir, &s, why, sizeof why) == 0, "%s", why);
    CHECK(s.buckets == 2 && s.findings == 3);
    CHECK(s.by_kind[AF_V_LEAK] == 1 && s.by_kind[AF_V_MISMATCH] == 1 && s.by_kind[AF_V_CRASH] == 0);

    /* report.json */
    char *json = slurp(dir, "report.json");
    CHECK(json_ok(json));
    CHECK(strstr(json, "\"summary\":{\"buckets\":2,\"findings\":3,") != NULL);
    CHECK(count_of(json, "\"bucket\":\"") >= 2);
    for (int i = 0; i < 2; i++) CHECK(strstr(json, buckets[i]) != NULL);
    CHECK(strstr(json, "\"signature\":\"leak|planted:window_off_by_one|O|fp16,causal-tl,win(L),") != NULL);
    CHECK(strstr(json, "\"signature\":\"mismatch|planted:window_off_by_one|dK|fp16,none,nowin,") != NULL);
    CHECK(strstr(json, "\"count\":2") != NULL);
    CHECK(strstr(json, "\"time_to_first_seconds\":12.5") != NULL);
    /* leak sorts before mismatch (severity order, triage/report.h) */
    CHECK(strstr(json, "\"kind\":\"leak\"") < strstr(json, "\"kind\":\"mismatch\""));
    /* provenance: every key, from the run recorded below */
    CHECK(strstr(json, "\"provenance\":{\"attnfuzz_version\":\"") != NULL);
    const char *keys[] = {"git_commit",     "command_line", "seed",         "host",  "gpu",
                          "nvidia_driver",  "cuda_driver",  "cuda_runtime", "cudnn", "backend",
                          "start_time_utc", "end_time_utc", "outcome",      "runs"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\":", keys[k]);
        CHECK_MSG(strstr(strstr(json, "\"provenance\":"), key) != NULL, "report.json provenance lacks %s", keys[k]);
    }
    CHECK(strstr(json, "\"command_line\":\"attnfuzz campaign --seed 77 --out 'a b'\"") != NULL);
    CHECK(strstr(json, "\"seed\":\"77\"") != NULL && strstr(json, "\"outcome\":\"findings\"") != NULL);
    /* paths relative to DIR: the Reproduce lines too */
    CHECK_MSG(strstr(json, root_path) == NULL, "report.json names %s", root_path);
    CHECK(strstr(json, "\"repro\":\"attnfuzz repro findings/") != NULL);

    /* report.sarif */
    char *sarif = slurp(dir, "report.sarif");
    CHECK(json_ok(sarif));
    CHECK(strstr(sarif, "\"version\":\"2.1.0\"") != NULL);
    CHECK(strstr(sarif, "\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\"") != NULL);
    CHECK(strstr(sarif, "\"runs\":[{\"tool\":{\"driver\":{\"name\":\"attnfuzz\",\"version\":\"") != NULL);
    CHECK(strstr(sarif, "\"invocations\":[{\"commandLine\":\"attnfuzz campaign --seed 77 --out 'a b'\"") != NULL);
    CHECK(strstr(sarif, "\"executionSuccessful\":true") != NULL && strstr(sarif, "\"startTimeUtc\":\"") != NULL &&
          strstr(sarif, "\"endTimeUtc\":\"") != NULL);
    CHECK(strstr(sarif, root_path) == NULL);
    CHECK(count_of(sarif, "{\"id\":\"") == AF_V_COUNT - 1); /* a rule per kind but pass */
    CHECK(strstr(sarif, "{\"id\":\"leak\",\"shortDescription\":{\"text\":") != NULL);
    CHECK(count_of(sarif, "\"ruleId\":") == 2);
    CHECK(strstr(sarif, "\"ruleId\":\"leak\",\"ruleIndex\":4,") != NULL); /* rules[4] is leak */
    CHECK(strstr(sarif, "\"ruleId\":\"mismatch\",\"ruleIndex\":0,") != NULL);
    CHECK(count_of(sarif, "\"level\":\"error\",\"message\":{\"text\":") == 2);
    CHECK(count_of(sarif, "\"locations\":[{\"physicalLocation\":{\"artifactLocation\":{\"uri\":\"findings/") == 2);
    CHECK(count_of(sarif, "\"partialFingerprints\":{\"attnfuzzBucket/v1\":\"") == 2);
    for (int i = 0; i < 2; i++) {
        char uri[128], fp[128];
        snprintf(uri, sizeof uri, "\"uri\":\"findings/%s/finding.case\"", buckets[i]);
        snprintf(fp, sizeof fp, "\"attnfuzzBucket/v1\":\"%s\"", buckets[i]);
        CHECK(strstr(sarif, uri) && strstr(sarif, fp));
    }

    /* report.junit.xml */
    char *xml = slurp(dir, "report.junit.xml");
    CHECK(strncmp(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 39) == 0);
    CHECK(count_of(xml, "<testsuites ") == 1 && count_of(xml, "</testsuites>") == 1);
    CHECK(count_of(xml, "<testsuite ") == 1 && count_of(xml, "</testsuite>") == 1);
    CHECK(strstr(xml, "<testsuite name=\"attnfuzz.findings\" tests=\"2\" failures=\"2\"") != NULL);
    CHECK(count_of(xml, "<testcase ") == 2 && count_of(xml, "</testcase>") == 2);
    CHECK(count_of(xml, "<failure ") == 2 && count_of(xml, "</failure>") == 2);
    CHECK(strstr(xml, "message=\"leak|planted:window_off_by_one|O|") != NULL);
    CHECK(strstr(xml, ": FINDING leak O ") != NULL);
    /* escaped: no raw specials inside the detail, no control characters */
    CHECK(strstr(xml, "&lt;&amp;&gt; &quot;q&quot; &apos;a&apos; \\ \\x09tab\\x01") != NULL); /* util/text.h */
    for (const char *p = xml; *p; p++) CHECK((unsigned char)*p >= 0x20 || *p == '\n' || *p == '\t');
    CHECK(count_of(xml, "<") == count_of(xml, ">"));
    CHECK(strstr(xml, "<property name=\"attnfuzz.attnfuzz_version\" value=\"") != NULL);
    CHECK(strstr(xml, "<property name=\"attnfuzz.seed\" value=\"77\"/>") != NULL);
    CHECK(strstr(xml, "<property name=\"attnfuzz.command_line\" value=\"attnfuzz campaign --seed 77 --out &apos;a "
                      "b&apos;\"/>") != NULL);
    CHECK(strstr(xml, "<property name=\"attnfuzz.cases_judged\" value=\"2\"/>") != NULL);
    CHECK(strstr(xml, root_path) == NULL);

    /* report.html */
    char *html = slurp(dir, "report.html");
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0 && strstr(html, "</html>") != NULL);
    CHECK(strstr(html, "<style>") != NULL && strstr(html, "<link") == NULL && strstr(html, "<script") == NULL);
    unsigned iw[4], ih[4];
    /* the leak matrix and the mismatch's heatmap; not the leak bucket's calm heatmap */
    CHECK(check_html_images(html, iw, ih, 4) == 2);
    /* drawn at a readable size (picture.h: 256 / cells px a cell within [4, 32]): leak
     * first, 3 x 5 cells of 32 px; heatmap 4 x 2 cells of 32 px */
    CHECK_MSG(iw[0] == 5 * 32 && ih[0] == 3 * 32, "%u x %u", iw[0], ih[0]);
    CHECK_MSG(iw[1] == 2 * 32 && ih[1] == 4 * 32, "%u x %u", iw[1], ih[1]);
    /* the leak bucket shows its probe's evidence (its findings), the mismatch its heatmap */
    CHECK(count_of(html, "<table class=\"evidence\">") == 1);
    CHECK(count_of(html, "error heatmap") == 1);
    CHECK(strstr(html, "<h2>Provenance</h2>") != NULL && strstr(html, "<th>seed</th><td><code>77</code>") != NULL);
    CHECK(strstr(html, root_path) == NULL);
    CHECK(strstr(html, "class=\"legend\"") != NULL && strstr(html, "&ge;1024&times;") != NULL);
    CHECK(count_of(html, "<section ") == 2);
    CHECK(strstr(html, "attnfuzz repro ") != NULL);
    CHECK(strstr(html, "leak matrix 3 &times; 5") != NULL);
    CHECK(strstr(html, "1 leaking pair:<br>O b0 h0 r&lt;9&gt; &larr; K/V rows 12..13 (left of window)") != NULL);
    CHECK(strstr(html, "case before minimisation") != NULL);
    CHECK(strstr(html, "dK: max |kernel - oracle| per (key block of 4, head)") != NULL);
    CHECK(strstr(html, "&lt;&amp;&gt;") != NULL && strstr(html, "<&>") == NULL);

    /* rebuild: same bytes */
    CHECK(af_triage_build(dir, NULL, why, sizeof why) == 0);
    char *json2 = slurp(dir, "report.json"), *html2 = slurp(dir, "report.html");
    CHECK(strcmp(json, json2) == 0 && strcmp(html, html2) == 0);
    free(json2);
    free(html2);

    /* the command: rebuilds quietly; --fail-on-findings exits 1; bad usage exits 2; no campaign 4 */
    char *argv_ok[] = {dir, "--quiet", NULL};
    CHECK(af_cli_triage(2, argv_ok) == AF_EXIT_PASS);
    char *argv_fail[] = {dir, "--quiet", "--fail-on-findings", NULL};
    CHECK(af_cli_triage(3, argv_fail) == AF_EXIT_FINDING);
    char *argv_none[] = {NULL};
    CHECK(af_cli_triage(0, argv_none) == AF_EXIT_USAGE);
    /* a missing DIR, or one that is no campaign: bad-file, nothing written there */
    char *argv_bad[] = {"/nonexistent/af_triage_dir", NULL};
    CHECK(af_cli_triage(1, argv_bad) == AF_EXIT_BAD_FILE);
    char plain[300];
    snprintf(plain, sizeof plain, "%s/plain", root);
    CHECK(mkdir(plain, 0755) == 0);
    char *argv_plain[] = {plain, "--fail-on-findings", NULL};
    CHECK(af_cli_triage(2, argv_plain) == AF_EXIT_BAD_FILE);
    char plain_report[400];
    snprintf(plain_report, sizeof plain_report, "%s/report.json", plain);
    CHECK(access(plain_report, F_OK) != 0);
    char *argv_opt[] = {dir, "--bogus", NULL};
    CHECK(af_cli_triage(2, argv_opt) == AF_EXIT_USAGE);

    /* an empty campaign: valid, empty reports */
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", root);
    CHECK(mkdir(empty, 0755) == 0);
    CHECK(af_triage_build(empty, &s, why, sizeof why) == 0);
    CHECK(s.buckets == 0 && s.findings == 0);
    char *ej = slurp(empty, "report.json"), *es = slurp(empty, "report.sarif"), *ex = slurp(empty, "report.junit.xml");
    char *eh = slurp(empty, "report.html");
    CHECK(json_ok(ej) && json_ok(es));
    CHECK(strstr(es, "\"results\":[]") != NULL);
    CHECK(strstr(ex, "tests=\"0\" failures=\"0\"") != NULL && count_of(ex, "<testcase") == 0);
    CHECK(strstr(eh, "No findings in 0 judged cases.") != NULL);
    CHECK(strstr(eh, "no stats.json in this directory") != NULL);
    free(ej);
    free(es);
    free(ex);
    free(eh);

    /* the checker itself rejects broken JSON */
    CHECK(!json_ok("{\"a\":1") && !json_ok("{\"a\":\"x}") && !json_ok("[1,]") && !json_ok("{\"a\":nan}"));
    CHECK(json_ok("{\"a\":[1,2.5e-3,null,true,\"\\u00e9\"]}"));

    free(json);
    free(sarif);
    free(xml);
    free(html);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    CHECK_DONE("test_triage_report");
}
