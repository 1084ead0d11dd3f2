/* model/kv_text.h — the line tokenizer of attnfuzz's `key = value` text (the case
 * conventions: `#` starts a comment, blank lines are skipped, key and value are trimmed,
 * control characters other than tab are refused, every error names file:line). Used by
 * the selection policies (select/policy.h); the case parser keeps its own copy of the
 * same rules inline (case.c). */
#ifndef ATTNFUZZ_MODEL_KV_TEXT_H
#define ATTNFUZZ_MODEL_KV_TEXT_H

#include "model/case.h"

#define AF_KV_LINE_MAX 8192

typedef struct {
    const char *name; /* file name for messages */
    const char *p;    /* next unread byte */
    int line;         /* line number of the last line returned */
    char buf[AF_KV_LINE_MAX];
} af_kv_reader;

void af_kv_init(af_kv_reader *r, const char *text, const char *name);
/* The next `key = value` line: 1 with *key, *value (pointing into r->buf, valid until
 * the next call), 0 at the end, -1 with *err (file:line, field "line" or the key). */
int af_kv_next(af_kv_reader *r, char **key, char **value, af_error *err);
/* Fill err with name:line: field: message (printf-style); returns -1. */
int af_kv_error(af_error *err, const char *name, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
