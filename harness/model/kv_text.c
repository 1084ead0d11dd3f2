/* model/kv_text.c — `key = value` lines (kv_text.h). */
#include "model/kv_text.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

void af_kv_init(af_kv_reader *r, const char *text, const char *name) {
    r->name = name ? name : "<text>";
    r->p = text ? text : "";
    r->line = 0;
    r->buf[0] = 0;
}

int af_kv_error(af_error *err, const char *name, int line, const char *field, const char *fmt, ...) {
    if (!err) return -1;
    snprintf(err->file, sizeof err->file, "%s", name ? name : "<text>");
    err->line = line;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

int af_kv_next(af_kv_reader *r, char **key, char **value, af_error *err) {
    while (*r->p) {
        r->line++;
        const char *eol = strchr(r->p, '\n');
        size_t len = eol ? (size_t)(eol - r->p) : strlen(r->p);
        if (len >= sizeof r->buf)
            return af_kv_error(err, r->name, r->line, "line", "longer than %zu characters", sizeof r->buf - 1);
        memcpy(r->buf, r->p, len);
        r->buf[len] = 0;
        r->p = eol ? eol + 1 : r->p + len;
        char *hash = strchr(r->buf, '#');
        if (hash) *hash = 0;
        char *s = trim(r->buf);
        if (!*s) continue;
        for (char *q = s; *q; q++)
            if ((unsigned char)*q < 0x20 && *q != '\t')
                return af_kv_error(err, r->name, r->line, "line", "control character 0x%02x",
                                   (unsigned)(unsigned char)*q);
        char *eq = strchr(s, '=');
        if (!eq) return af_kv_error(err, r->name, r->line, "line", "expected 'key = value', got '%.80s'", s);
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        if (!*k) return af_kv_error(err, r->name, r->line, "line", "missing key before '='");
        if (!*v) return af_kv_error(err, r->name, r->line, k, "missing value");
        *key = k;
        *value = v;
        return 1;
    }
    return 0;
}
