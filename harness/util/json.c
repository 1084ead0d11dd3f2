/* json.c — the shared JSON conventions (util/json.h) over jansson. */
#include "util/json.h"
#include "util/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *af_json_real(double x) { return isfinite(x) ? json_real(x) : json_null(); }

json_t *af_json_text(const char *s) {
    if (!s) s = "";
    size_t n = strlen(s);
    if (af_text_is_clean(s, n, AF_TEXT_NO_CONTROLS)) return json_stringn(s, n);
    char *clean = af_text_clean_dup(s, AF_TEXT_NO_CONTROLS);
    if (!clean) return NULL;
    json_t *out = json_string(clean);
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
