/* test_json.c — the JSON conventions of util/json.h.
 *
 * Non-finite numbers are written as null and null reads back as NaN; text that is not
 * UTF-8 keeps its valid sequences and has each bad byte written as U+FFFD (overlong forms,
 * surrogates, code points above U+10FFFF, cut sequences); reads check the type and
 * truncate; parse and load errors name the file, line and column.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/check.h"
#include "util/json.h"

/* The string af_json_text makes of s, as dumped JSON. */
static void expect_text(const char *s, const char *want_json) {
    json_t *v = af_json_text(s);
    CHECK(v != NULL);
    char *got = json_dumps(v, JSON_ENCODE_ANY);
    CHECK_MSG(got && strcmp(got, want_json) == 0, "got %s, want %s", got ? got : "(null)", want_json);
    free(got);
    json_decref(v);
}

int main(void) {
    /* numbers: finite ones as reals (17 significant digits by default), the rest null */
    json_t *o = json_object();
    CHECK(json_object_set_new(o, "x", af_json_real(0.1)) == 0);
    CHECK(json_object_set_new(o, "nan", af_json_real(NAN)) == 0);
    CHECK(json_object_set_new(o, "inf", af_json_real(-INFINITY)) == 0);
    CHECK(json_object_set_new(o, "n", json_integer(7)) == 0);
    CHECK(json_object_set_new(o, "s", af_json_text("abc")) == 0);
    char *text = json_dumps(o, JSON_COMPACT);
    CHECK(text && strcmp(text, "{\"x\":0.10000000000000001,\"nan\":null,\"inf\":null,\"n\":7,\"s\":\"abc\"}") == 0);
    json_decref(o);

    /* reads: numbers (integer or real; null is NaN), text; wrong type or absent: -1 */
    char why[256];
    o = af_json_parse_object(text, "mem.json", why, sizeof why);
    CHECK_MSG(o != NULL, "%s", why);
    free(text);
    double x = 5;
    CHECK(af_json_get_number(o, "x", &x) == 0 && x == 0.1);
    CHECK(af_json_get_number(o, "nan", &x) == 0 && isnan(x));
    CHECK(af_json_get_number(o, "n", &x) == 0 && x == 7);
    x = 5;
    CHECK(af_json_get_number(o, "s", &x) == -1 && x == 5);
    CHECK(af_json_get_number(o, "missing", &x) == -1 && x == 5);
    char buf[3] = "zz";
    CHECK(af_json_get_text(o, "n", buf, sizeof buf) == -1 && strcmp(buf, "zz") == 0);
    CHECK(af_json_get_text(o, "s", buf, sizeof buf) == 0 && strcmp(buf, "ab") == 0); /* truncated */
    json_decref(o);

    /* text: valid UTF-8 (1 to 4 bytes) unchanged, escapes by jansson, each bad byte
     * U+FFFD (util/text.h), controls other than tab and newline the visible \xNN */
    expect_text(NULL, "\"\"");
    expect_text("q\"\\\n\t\x01\x1b[31m", "\"q\\\"\\\\\\n\\t\\\\x01\\\\x1b[31m\"");
    expect_text("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
#define FFFD "\xef\xbf\xbd"
    expect_text("a\xff"
                "b",
                "\"a" FFFD "b\"");
    expect_text("\xc0\xaf", "\"" FFFD FFFD "\"");                   /* overlong '/' */
    expect_text("\xe0\x80\xaf", "\"" FFFD FFFD FFFD "\"");          /* overlong, 3 bytes */
    expect_text("\xed\xa0\x80", "\"" FFFD FFFD FFFD "\"");          /* surrogate U+D800 */
    expect_text("\xf4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\""); /* above U+10FFFF */
    expect_text("x\xe2\x82", "\"x" FFFD FFFD "\"");                 /* cut at the end */
    expect_text("\xe2\x82"
                "A\xc3\xa9",
                "\"" FFFD FFFD "A\xc3\xa9\""); /* cut, then valid again */
#undef FFFD

    /* errors name the source, line and column; a non-object is refused */
    CHECK(af_json_parse_object("{\n\"a\": 1,\n}", "bad.json", why, sizeof why) == NULL);
    CHECK_MSG(strncmp(why, "bad.json:3:1: ", 14) == 0, "%s", why);
    CHECK(af_json_parse_object("[1]", "list.json", why, sizeof why) == NULL);
    CHECK(strcmp(why, "list.json: not a JSON object") == 0);
    CHECK(af_json_load_object("/nonexistent/af_json.json", why, sizeof why) == NULL);
    CHECK_MSG(strstr(why, "/nonexistent/af_json.json: ") == why, "%s", why);

    char path[] = "/tmp/af_json_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    static const char file_text[] = "{\"signature\": \"a|b\", \"count\": 3}\n";
    CHECK(write(fd, file_text, sizeof file_text - 1) == (ssize_t)(sizeof file_text - 1));
    close(fd);
    o = af_json_load_object(path, why, sizeof why);
    CHECK_MSG(o != NULL, "%s", why);
    char sig[16];
    CHECK(af_json_get_text(o, "signature", sig, sizeof sig) == 0 && strcmp(sig, "a|b") == 0);
    CHECK(af_json_get_number(o, "count", &x) == 0 && x == 3);
    json_decref(o);
    remove(path);

    CHECK_DONE("test_json");
}
