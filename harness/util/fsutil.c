/* util/fsutil.c — mkdir -p, write-all, atomic replace (util/fsutil.h). */
#include "util/fsutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void say(char *why, size_t cap, const char *what, const char *path, int err) {
    if (why && cap) snprintf(why, cap, "%s %s: %s", what, path, strerror(err));
}

static int mkdir_one(const char *path, char *why, size_t cap) {
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return 0;
    say(why, cap, "mkdir", path, errno);
    return -1;
}

int af_mkdirs(const char *path, char *why, size_t cap) {
    size_t n = strlen(path);
    if (n == 0) {
        if (why && cap) snprintf(why, cap, "mkdir: empty path");
        return -1;
    }
    char *tmp = malloc(n + 1);
    if (!tmp) {
        say(why, cap, "mkdir", path, ENOMEM);
        return -1;
    }
    memcpy(tmp, path, n + 1);
    int rc = 0;
    for (char *p = tmp + 1; *p && rc == 0; p++) {
        if (*p != '/' || p[-1] == '/') continue;
        *p = 0;
        rc = mkdir_one(tmp, why, cap);
        *p = '/';
    }
    if (rc == 0) rc = mkdir_one(tmp, why, cap);
    free(tmp);
    return rc;
}

int af_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int af_write_parts_atomic(const char *path, const af_file_part *parts, int n_parts, char *why, size_t cap) {
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp) {
        say(why, cap, "write", path, ENOMEM);
        return -1;
    }
    snprintf(tmp, n + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        say(why, cap, "create", tmp, errno);
        free(tmp);
        return -1;
    }
    int rc = fchmod(fd, 0644) == 0 ? 0 : -1;
    for (int i = 0; i < n_parts && rc == 0; i++)
        if (parts[i].size) rc = af_write_all(fd, parts[i].data, parts[i].size);
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc) {
        say(why, cap, "write", path, err);
        remove(tmp);
    }
    free(tmp);
    return rc;
}

int af_write_file_atomic(const char *path, const void *data, size_t n, char *why, size_t cap) {
    af_file_part part = {data, n};
    return af_write_parts_atomic(path, &part, 1, why, cap);
}
