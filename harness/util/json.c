/* json.c — the shared JSON conventions (util/json.h) over jansson. */
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *af_json_real(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* Length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at
 * most U+10FFFF) that starts at p, or 0 when none does. p is NUL-terminated, and NUL
 * is never a continuation byte, so the reads stop at the end. */
static size_t utf8_sequence_length(const unsigned char *p) {
    unsigned char lead = p[0];
    if (lead < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (lead >= 0xC2 && lead <= 0xDF) {
        len = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        len = 3;
        if (lead == 0xE0) lo = 0xA0; /* overlong below U+0800 */
        if (lead == 0xED) hi = 0x9F; /* U+D800..DFFF are surrogates */
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        len = 4;
        if (lead == 0xF0) lo = 0x90; /* overlong below U+10000 */
        if (lead == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

json_t *af_json_text(const char *s) {
    if (!s) s = "";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0;
    while (i < n) {
        size_t len = utf8_sequence_length(p + i);
        if (!len) break;
        i += len;
    }
    if (i == n) return json_stringn(s, n);
    char *clean = malloc(n + 1);
    if (!clean) return NULL;
    memcpy(clean, s, i);
    while (i < n) {
        size_t len = utf8_sequence_length(p + i);
        if (len) {
            memcpy(clean + i, s + i, len);
            i += len;
        } else {
            clean[i++] = '?';
        }
    }
    json_t *out = json_stringn(clean, n);
    free(clean);
    return out;
}

int af_json_get_number(const json_t *obj, const char *key, double *out) {
    const json_t *v = json_object_get(obj, key);
    if (json_is_null(v)) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v)) return -1;
    *out = json_number_value(v);
    return 0;
}

int af_json_get_text(const json_t *obj, const char *key, char *out, size_t cap) {
    const json_t *v = json_object_get(obj, key);
    if (!json_is_string(v) || cap == 0) return -1;
    snprintf(out, cap, "%s", json_string_value(v));
    return 0;
}

static json_t *object_or_why(json_t *root, const json_error_t *err, const char *name, char *why, size_t cap) {
    if (!root) {
        if (err->line > 0)
            snprintf(why, cap, "%s:%d:%d: %s", name, err->line, err->column, err->text);
        else
            snprintf(why, cap, "%s: %s", name, err->text); /* e.g. unable to open */
        return NULL;
    }
    if (!json_is_object(root)) {
        snprintf(why, cap, "%s: not a JSON object", name);
        json_decref(root);
        return NULL;
    }
    return root;
}

json_t *af_json_parse_object(const char *text, const char *name, char *why, size_t cap) {
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    return object_or_why(root, &err, name, why, cap);
}

json_t *af_json_load_object(const char *path, char *why, size_t cap) {
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    return object_or_why(root, &err, path, why, cap);
}
