/* util/text.h — text from outside attnfuzz (a backend's message, a plugin's engine name,
 * a case file) made safe for where it goes: JSON, XML, HTML, the terminal.
 *
 * The rules, one copy for every writer:
 *   - the result is valid UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
 *     U+10FFFF); each byte that is not part of a valid sequence becomes U+FFFD;
 *   - with AF_TEXT_NO_CONTROLS, C0 controls (0x00..0x1F) other than tab and newline,
 *     DEL (0x7F) and the C1 controls U+0080..U+009F (which some terminals obey like
 *     ESC) are written as the four visible characters \xNN (a C1 control as its
 *     code point's low byte: U+009B -> \x9b), so no escape sequence reaches a terminal
 *     and XML 1.0 (which allows none of them) stays well-formed;
 *   - AF_TEXT_ONE_LINE also writes tab, newline and carriage return as \xNN.
 * Text that already follows the rules is copied unchanged.
 */
#ifndef ATTNFUZZ_UTIL_TEXT_H
#define ATTNFUZZ_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum {
    AF_TEXT_UTF8 = 0,        /* valid UTF-8 only (JSON: the writer escapes controls itself) */
    AF_TEXT_NO_CONTROLS = 1, /* and control characters made visible (terminal, XML, HTML) */
    AF_TEXT_ONE_LINE = 2,    /* and tab / newline / CR too (one terminal line); implies 1 */
};

/* Length of the valid UTF-8 sequence starting at p (1..4), or 0 when none does. p is
 * NUL-terminated (NUL is never a continuation byte, so reads stop at the end). */
size_t af_utf8_sequence_length(const unsigned char *p);

/* True when the n bytes at s already follow the rules of flags (a NUL byte inside the
 * n never does). */
bool af_text_is_clean(const char *s, size_t n, unsigned flags);

/* The cleaned text of s (NULL reads as "") into out, NUL-terminated, truncated at a
 * character boundary to cap - 1 bytes. Returns the length the whole cleaned text needs
 * (as snprintf does). out may be s itself only when cap == 0 (to measure). */
size_t af_text_clean(const char *s, char *out, size_t cap, unsigned flags);

/* The cleaned text of s in a malloc'ed string (NULL when out of memory). */
char *af_text_clean_dup(const char *s, unsigned flags);

/* Clean buf in place (cap bytes, NUL-terminated): the cleaned text, truncated to fit. */
void af_text_clean_inplace(char *buf, size_t cap, unsigned flags);

/* How af_text_write_markup escapes: XML 1.0 (report.junit.xml, SARIF's XML cousins) or
 * HTML (report.html); in an XML attribute tab and newline also become character
 * references, since a parser would otherwise normalise them to spaces. */
typedef enum {
    AF_MARKUP_XML_TEXT,      /* & < > " ' as &amp; &lt; &gt; &quot; &apos; */
    AF_MARKUP_XML_ATTRIBUTE, /* the same, and tab, newline as &#9; &#10; */
    AF_MARKUP_HTML,          /* & < > " ' as &amp; &lt; &gt; &quot; &#39; */
} af_markup;

/* s (NULL reads as "") cleaned with AF_TEXT_NO_CONTROLS (so the control characters XML 1.0
 * does not allow, even as references, are the visible \xNN) and escaped for markup, written
 * to f. The one markup escape of every report. */
void af_text_write_markup(FILE *f, const char *s, af_markup how);

#endif
