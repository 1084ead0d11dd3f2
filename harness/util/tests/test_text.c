/* test_text.c — outside text made safe (util/text.h).
 *
 * Valid UTF-8 passes unchanged; every byte outside a valid sequence becomes U+FFFD;
 * with AF_TEXT_NO_CONTROLS the C0 controls but tab and newline, DEL and the C1 controls
 * become \xNN (so ESC [31m reaches no terminal); AF_TEXT_ONE_LINE escapes tab and
 * newline too; truncation never cuts a character; the checker agrees with the cleaner.
 * The markup escape (the reports' one copy) writes the five XML specials as entities, the
 * apostrophe as &apos; (XML) or &#39; (HTML), and tab / newline as references in an XML
 * attribute only, after the same cleaning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/check.h"
#include "util/text.h"

#define FFFD "\xef\xbf\xbd"

static void expect(const char *in, unsigned flags, const char *want) {
    char out[256];
    size_t need = af_text_clean(in, out, sizeof out, flags);
    CHECK_MSG(strcmp(out, want) == 0 && need == strlen(want), "flags %u: got \"%s\" want \"%s\"", flags, out, want);
    CHECK(af_text_is_clean(out, strlen(out), flags));
    CHECK(af_text_is_clean(in, strlen(in), flags) == (strcmp(in, want) == 0));
    char *dup = af_text_clean_dup(in, flags);
    CHECK(dup && strcmp(dup, want) == 0);
    free(dup);
}

static void expect_markup(const char *in, af_markup how, const char *want) {
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    CHECK(f);
    af_text_write_markup(f, in, how);
    CHECK(fclose(f) == 0);
    CHECK_MSG(out && strcmp(out, want) == 0, "markup %d of '%s': '%s', expected '%s'", (int)how, in ? in : "(null)",
              out ? out : "(null)", want);
    free(out);
}

int main(void) {
    expect("plain ascii", AF_TEXT_NO_CONTROLS, "plain ascii");
    expect("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", AF_TEXT_ONE_LINE, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    /* invalid UTF-8: stray byte, overlong, surrogate, above U+10FFFF, cut sequence */
    expect("a\xff"
           "b",
           AF_TEXT_UTF8, "a" FFFD "b");
    expect("\xc0\xaf", AF_TEXT_UTF8, FFFD FFFD);
    expect("\xed\xa0\x80", AF_TEXT_UTF8, FFFD FFFD FFFD);
    expect("\xf4\x90\x80\x80", AF_TEXT_UTF8, FFFD FFFD FFFD FFFD);
    expect("x\xe2\x82", AF_TEXT_UTF8, "x" FFFD FFFD);
    /* controls: kept in plain UTF-8 mode (JSON escapes them), shown otherwise */
    expect("\x1b[31mred\x1b[0m", AF_TEXT_UTF8, "\x1b[31mred\x1b[0m");
    expect("\x1b[31mred\x1b[0m", AF_TEXT_NO_CONTROLS, "\\x1b[31mred\\x1b[0m");
    expect("a\tb\nc\rd\x7f\x01", AF_TEXT_NO_CONTROLS, "a\tb\nc\\x0dd\\x7f\\x01");
    expect("a\tb\nc", AF_TEXT_ONE_LINE, "a\\x09b\\x0ac");
    expect("csi \xc2\x9b"
           "2J nbsp \xc2\xa0",
           AF_TEXT_NO_CONTROLS, "csi \\x9b2J nbsp \xc2\xa0"); /* U+009B is a C1 CSI; U+00A0 is text */
    expect("bad \xff\x1b", AF_TEXT_ONE_LINE, "bad " FFFD "\\x1b");
    /* a NUL inside the counted bytes is never clean */
    CHECK(!af_text_is_clean("a\0b", 3, AF_TEXT_UTF8));
    /* truncation keeps whole characters: "é€" into 4 bytes holds "é" only */
    char small[4];
    CHECK(af_text_clean("\xc3\xa9\xe2\x82\xac", small, sizeof small, AF_TEXT_UTF8) == 5);
    CHECK(strcmp(small, "\xc3\xa9") == 0);
    CHECK(af_text_clean("\x1b", small, sizeof small, AF_TEXT_NO_CONTROLS) == 4 && small[0] == 0);
    /* in place, within its buffer */
    char buf[16] = "x\x1b[1m\xff";
    af_text_clean_inplace(buf, sizeof buf, AF_TEXT_NO_CONTROLS);
    CHECK_MSG(strcmp(buf, "x\\x1b[1m" FFFD) == 0, "%s", buf);
    /* markup: the five specials, the apostrophe by dialect, tab / newline in attributes */
    expect_markup("a<b> & \"c\" 'd'", AF_MARKUP_XML_TEXT, "a&lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;");
    expect_markup("a<b> & \"c\" 'd'", AF_MARKUP_HTML, "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
    expect_markup("t\tn\n'", AF_MARKUP_XML_TEXT, "t\tn\n&apos;");
    expect_markup("t\tn\n'", AF_MARKUP_XML_ATTRIBUTE, "t&#9;n&#10;&apos;");
    expect_markup("t\tn\n", AF_MARKUP_HTML, "t\tn\n");
    /* cleaned first: a control shown as \xNN (its backslash is no special), bad UTF-8 as U+FFFD */
    expect_markup("\x1b[1m<\xff", AF_MARKUP_XML_TEXT, "\\x1b[1m&lt;" FFFD);
    expect_markup("&amp;", AF_MARKUP_HTML, "&amp;amp;"); /* an entity in the text is text */
    expect_markup(NULL, AF_MARKUP_XML_ATTRIBUTE, "");
    CHECK_DONE("test_text");
}
