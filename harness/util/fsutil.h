/* util/fsutil.h — the file-system habits of the project, one copy each:
 *   af_mkdirs             mkdir -p (every missing parent, 0755; each new one durable: its
 *                         parent directory fsync'd)
 *   af_write_all          write(2) until every byte is out (EINTR retried)
 *   af_write_file_atomic  the whole file or nothing, durably: the bytes go to a new file
 *                         with a unique name beside PATH (PATH.tmp-<pid>-<random hex>),
 *                         opened O_CREAT|O_EXCL|O_NOFOLLOW (a planted file or symlink of
 *                         that name is never followed nor reused), fsync'd, renamed onto
 *                         PATH (which replaces a symlink at PATH, never its target), and
 *                         the directory fsync'd, so a reader (or a concurrent writer of
 *                         the same PATH) never sees half a file and a file reported
 *                         written survives a crash. Every file attnfuzz writes goes here.
 *   af_read_file_inside   read a file that someone else's directory may hold (a findings
 *                         directory from a campaign, a received reproducer): only a
 *                         regular file (O_NOFOLLOW + fstat S_ISREG: no symlink, FIFO,
 *                         device or directory), only inside ROOT (its real path starts
 *                         with ROOT's real path), and only up to a size limit.
 *   af_subdirs_real       the named subdirectories of a directory that exist are real
 *                         directories (not symlinks, not files): what a campaign writes
 *                         and deletes stays inside its directory.
 * Errors are values: 0, or -1 with a one-line why naming the path and the system's reason
 * (strerror; why may be NULL), errno set to that reason.
 * Fault injection (tests): ATTNFUZZ_FAIL_WRITE=ERRNO:TEXT (util/config.h) makes every
 * af_write_parts_atomic / af_write_file_atomic of a path containing TEXT fail with ERRNO
 * before anything is written, as a full (ENOSPC) or failing (EIO) disk would. */
#ifndef ATTNFUZZ_UTIL_FSUTIL_H
#define ATTNFUZZ_UTIL_FSUTIL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Create path and its missing parents; an existing directory is fine, an existing file
 * of that name is not (ENOTDIR). */
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

/* Read path into a malloc'ed NUL-terminated buffer (*out; *len = bytes, may be NULL)
 * when path is a regular file, not a symlink, inside the directory root, of at most
 * max_bytes. 0, or -1 with why ("PATH: is a symbolic link", "...: not a regular file",
 * "...: outside ROOT", "...: over N bytes", or the system's reason). */
int af_read_file_inside(const char *root, const char *path, size_t max_bytes, char **out, size_t *len, char *why,
                        size_t cap);

/* Each dir/names[i] (n of them) that exists is a directory, not a symlink nor another
 * file. 0, or -1 with why naming the first that is not ("DIR/corpus is a symbolic link
 * (to TARGET): ..."). */
int af_subdirs_real(const char *dir, const char *const *names, int n, char *why, size_t cap);

/* True when path names a regular file (lstat: a symlink is not one). */
int af_is_regular_file(const char *path);

#ifdef __cplusplus
}
#endif
#endif
