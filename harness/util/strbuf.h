/* util/strbuf.h — appending formatted text to a fixed buffer, snprintf-style: the
 * length counts what the full text needs, the buffer holds what fits. */
#ifndef ATTNFUZZ_STRBUF_H
#define ATTNFUZZ_STRBUF_H

#include <stddef.h>

typedef struct {
    char *buf;
    size_t cap, len;
} af_strbuf;

void af_strbuf_printf(af_strbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
