/* util/json.h — the conventions every JSON file of attnfuzz shares, over jansson.
 *
 * Writers build jansson values and dump them; readers load with jansson and look keys up
 * in the top-level object. What jansson does not decide for us:
 *   - JSON has no NaN or Inf: a non-finite number is written as null, and null reads
 *     back as NaN (af_json_real, af_json_get_number);
 *   - jansson refuses text that is not UTF-8: af_json_text cleans outside text by the
 *     rules of util/text.h (a byte outside a valid UTF-8 sequence becomes U+FFFD,
 *     control characters other than tab and newline become the visible \xNN), so a
 *     stray byte in a path or a plugin's message never loses the whole file, and no
 *     escape sequence reaches a terminal that prints the value;
 *   - a load error names the file, line and column ("path:3:14: ...").
 */
#ifndef ATTNFUZZ_UTIL_JSON_H
#define ATTNFUZZ_UTIL_JSON_H

#include <jansson.h>
#include <stddef.h>

/* A real, or null when x is NaN or infinite. New reference (NULL when out of memory). */
json_t *af_json_real(double x);
/* A string of s (NULL reads as ""), cleaned as above. New reference. */
json_t *af_json_text(const char *s);

/* Top-level reads. 0 when obj[key] exists with the right type, -1 otherwise (out is
 * then left as it was). A number is an integer or a real; null reads as NaN. Text is
 * copied NUL-terminated and truncated to cap - 1 bytes. */
int af_json_get_number(const json_t *obj, const char *key, double *out);
int af_json_get_text(const json_t *obj, const char *key, char *out, size_t cap);

/* Parse text that must be one JSON object; name (a path) heads the error message.
 * New reference, or NULL with "name:line:column: what" in why. */
json_t *af_json_parse_object(const char *text, const char *name, char *why, size_t cap);
/* The same for a file. */
json_t *af_json_load_object(const char *path, char *why, size_t cap);

#endif
