/* json_read.c — just enough JSON reading to get back what triage wrote. */
#include "triage/src/triage_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JR_MAX_DEPTH 64

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* p at the opening quote. Returns the position after the closing quote or NULL.
 * When out != NULL the unescaped text is stored (truncated to cap - 1). */
static const char *read_string(const char *p, char *out, size_t cap) {
    size_t n = 0;
    if (*p != '"') return NULL;
    p++;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        char emit;
        if (c == 0 || c < 0x20) return NULL;
        if (c == '"') break;
        if (c == '\\') {
            p++;
            switch (*p) {
            case '"': emit = '"'; break;
            case '\\': emit = '\\'; break;
            case '/': emit = '/'; break;
            case 'b': emit = '\b'; break;
            case 'f': emit = '\f'; break;
            case 'n': emit = '\n'; break;
            case 'r': emit = '\r'; break;
            case 't': emit = '\t'; break;
            case 'u': {
                int v = 0;
                for (int i = 1; i <= 4; i++) {
                    int h = hex_value(p[i]);
                    if (h < 0) return NULL;
                    v = v * 16 + h;
                }
                p += 4;
                emit = v < 0x80 ? (char)v : '?';
                break;
            }
            default: return NULL;
            }
        } else {
            emit = (char)c;
        }
        if (out && n + 1 < cap) out[n++] = emit;
        p++;
    }
    if (out && cap) out[n] = 0;
    return p + 1;
}

static const char *skip_value(const char *p, int depth);

static const char *skip_number(const char *p) {
    const char *s = p;
    if (*p == '-') p++;
    if (*p < '0' || *p > '9') return NULL;
    while (*p >= '0' && *p <= '9') p++;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (*p < '0' || *p > '9') return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    return p > s ? p : NULL;
}

static const char *skip_container(const char *p, int depth, char close) {
    bool object = close == '}';
    p = skip_ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
        if (object) {
            p = read_string(p, NULL, 0);
            if (!p) return NULL;
            p = skip_ws(p);
            if (*p != ':') return NULL;
            p = skip_ws(p + 1);
        }
        p = skip_value(p, depth + 1);
        if (!p) return NULL;
        p = skip_ws(p);
        if (*p == close) return p + 1;
        if (*p != ',') return NULL;
        p = skip_ws(p + 1);
    }
}

static const char *skip_value(const char *p, int depth) {
    if (depth > JR_MAX_DEPTH) return NULL;
    switch (*p) {
    case '"': return read_string(p, NULL, 0);
    case '{': return skip_container(p, depth, '}');
    case '[': return skip_container(p, depth, ']');
    case 't': return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f': return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
    case 'n': return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
    default: return skip_number(p);
    }
}

bool jr_valid(const char *json) {
    const char *p = skip_value(skip_ws(json), 0);
    return p && *skip_ws(p) == 0;
}

int jr_top_raw(const char *json, const char *key, const char **start, size_t *len) {
    const char *p = skip_ws(json);
    if (*p != '{') return -1;
    p = skip_ws(p + 1);
    if (*p == '}') return -1;
    for (;;) {
        char name[128];
        p = read_string(p, name, sizeof name);
        if (!p) return -1;
        p = skip_ws(p);
        if (*p != ':') return -1;
        p = skip_ws(p + 1);
        const char *value = p;
        p = skip_value(p, 1);
        if (!p) return -1;
        if (strcmp(name, key) == 0) {
            *start = value;
            *len = (size_t)(p - value);
            return 0;
        }
        p = skip_ws(p);
        if (*p != ',') return -1;
        p = skip_ws(p + 1);
    }
}

int jr_top_string(const char *json, const char *key, char *out, size_t cap) {
    const char *v;
    size_t n;
    if (jr_top_raw(json, key, &v, &n) || *v != '"') return -1;
    return read_string(v, out, cap) ? 0 : -1;
}

int jr_top_number(const char *json, const char *key, double *out) {
    const char *v;
    size_t n;
    if (jr_top_raw(json, key, &v, &n)) return -1;
    if (strncmp(v, "null", 4) == 0) {
        *out = NAN;
        return 0;
    }
    if (!skip_number(v)) return -1;
    *out = strtod(v, NULL);
    return 0;
}

char *tr_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) { free(buf); buf = NULL; break; }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) { free(buf); return NULL; }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int tr_write_file_atomic(const char *path, const void *data, size_t n) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, n, f) == n;
    ok = (fflush(f) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) != 0) ok = 0;
    if (!ok) remove(tmp);
    return ok ? 0 : -1;
}
