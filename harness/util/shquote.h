/* util/shquote.h — command lines printed for a user to paste into a POSIX shell (the
 * refusal hints, a finding's Reproduce line in every report, the minimiser's hint).
 *
 * The one rule, for every printer: a word made only of characters the shell never
 * interprets ([A-Za-z0-9] and _ @ % + = : , . / -) is written as it is; any other word
 * (empty, blanks, ; $ ` \ " ' * ? ~ # & | < > ( ) newlines, bytes above 0x7f...) is
 * wrapped in single quotes, inside which sh interprets nothing, and each ' in it is
 * written '\'' (close the quote, an escaped quote, reopen). Pasted into sh, the line
 * gives the program exactly these words, and runs nothing else. */
#ifndef ATTNFUZZ_UTIL_SHQUOTE_H
#define ATTNFUZZ_UTIL_SHQUOTE_H

#include <stddef.h>

/* word (NULL reads as "") quoted for sh into out, NUL-terminated; when it does not fit,
 * out gets "" (never a cut quote). Returns the length the quoted word needs (as snprintf
 * does), so out may be NULL with cap 0 to measure. */
size_t af_shell_quote(const char *word, char *out, size_t cap);

/* The words (a NULL-terminated array), each through af_shell_quote, separated by one
 * blank, into out. Returns the length needed; when it does not fit, out gets "" and
 * the caller sees the length is >= cap (a command cut short is never printed). */
size_t af_shell_join(const char *const *words, char *out, size_t cap);

#endif
