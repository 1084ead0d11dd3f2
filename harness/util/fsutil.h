/* util/fsutil.h — the file-system habits of the project, one copy each:
 *   af_mkdirs             mkdir -p (every missing parent, 0755)
 *   af_write_all          write(2) until every byte is out (EINTR retried)
 *   af_write_file_atomic  the whole file or nothing: the bytes go to a temporary file
 *                         with a unique name beside PATH (PATH.tmp-XXXXXX, mkstemp), then
 *                         rename(2) puts it in place, so a reader (or a concurrent writer
 *                         of the same PATH) never sees half a file.
 * Errors are values: 0, or -1 with a one-line why naming the path (why may be NULL). */
#ifndef ATTNFUZZ_UTIL_FSUTIL_H
#define ATTNFUZZ_UTIL_FSUTIL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Create path and its missing parents; an existing directory is fine. */
int af_mkdirs(const char *path, char *why, size_t cap);

/* Write n bytes of buf to fd. -1 (errno set) when a write fails or writes nothing. */
int af_write_all(int fd, const void *buf, size_t n);

/* Replace path by the n bytes of data (mode 0644). */
int af_write_file_atomic(const char *path, const void *data, size_t n, char *why, size_t cap);

/* The same for a file made of n_parts pieces written one after the other (a header and
 * a body, without copying them together first). */
typedef struct {
    const void *data;
    size_t size;
} af_file_part;
int af_write_parts_atomic(const char *path, const af_file_part *parts, int n_parts, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
