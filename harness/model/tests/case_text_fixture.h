/* case_text_fixture.h — shared by the case-model tests of the features: parse a case text
 * as the file "f.case", expect an error naming file:line and field, and a print / parse
 * round trip. */
#ifndef ATTNFUZZ_MODEL_TESTS_CASE_TEXT_FIXTURE_H
#define ATTNFUZZ_MODEL_TESTS_CASE_TEXT_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "model/case.h"
#include "util/check.h"

static int parse(const char *text, af_case *c, af_error *e) { return af_case_parse(text, "f.case", c, e); }

/* text must fail with "f.case:LINE: FIELD: " and a message holding needle. */
static void expect_error(const char *text, int line, const char *field, const char *needle) {
    af_case c;
    af_error e;
    memset(&e, 0, sizeof e);
    CHECK_MSG(parse(text, &c, &e) == -1, "expected an error for:\n%s", text);
    char buf[1024], prefix[96];
    af_error_format(&e, buf, sizeof buf);
    snprintf(prefix, sizeof prefix, "f.case:%d: %s: ", line, field);
    CHECK_MSG(strncmp(buf, prefix, strlen(prefix)) == 0, "'%s' does not start with '%s'", buf, prefix);
    CHECK_MSG(strstr(e.message, needle) != NULL, "message '%s' lacks '%s'", e.message, needle);
}

/* text parses, prints with must_print, and print(parse(print)) is the same case. */
static void roundtrip(const char *text, const char *must_print) {
    af_case a, b;
    af_error e;
    CHECK_MSG(parse(text, &a, &e) == 0, "%s: %s", e.field, e.message);
    char p1[8192], p2[8192];
    af_case_print(&a, p1, sizeof p1);
    CHECK_MSG(strstr(p1, must_print) != NULL, "print lacks '%s':\n%s", must_print, p1);
    CHECK_MSG(parse(p1, &b, &e) == 0, "reparse: %s: %s\n%s", e.field, e.message, p1);
    af_case_print(&b, p2, sizeof p2);
    CHECK_MSG(strcmp(p1, p2) == 0, "print(parse(print)) differs:\n%s\n---\n%s", p1, p2);
    CHECK(af_case_equal(&a, &b));
}

#endif
