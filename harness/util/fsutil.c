/* util/fsutil.c — mkdir -p, write-all, durable atomic replace, confined reads (util/fsutil.h). */
#include "util/fsutil.h"
#include "util/clock.h"
#include "util/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static void say(char *why, size_t cap, const char *what, const char *path, int err) {
    if (why && cap) snprintf(why, cap, "%s %s: %s", what, path, strerror(err));
}

static int sync_parent_dir(const char *path);

/* An existing directory is fine (a symlink to one too: DIR itself may be one); an
 * existing file of that name is ENOTDIR. A new one is made durable: its parent is
 * fsync'd, so the files later renamed into it do not vanish with it after a crash. */
static int mkdir_one(const char *path, char *why, size_t cap) {
    if (mkdir(path, 0755) == 0) {
        if (sync_parent_dir(path) == 0) return 0;
        say(why, cap, "fsync the parent of", path, errno);
        return -1;
    }
    int err = errno;
    struct stat st;
    if (err == EEXIST) {
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
        err = ENOTDIR;
    }
    say(why, cap, "mkdir", path, err);
    errno = err;
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

/* A new file beside path, PATH.tmp-<pid>-<16 hex digits>, created exclusively and
 * never through a symlink. The name goes to tmp (cap bytes). fd, or -1 (errno set). */
static int create_unique(const char *path, char *tmp, size_t cap) {
    for (int attempt = 0; attempt < 32; attempt++) {
        unsigned long long r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = (unsigned long long)(af_clock_mono() * 1e9) * 0x9E3779B97F4A7C15ull + (unsigned long long)attempt;
        if (snprintf(tmp, cap, "%s.tmp-%ld-%016llx", path, (long)getpid(), r) >= (int)cap) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

/* fsync the directory holding path, so a rename into it is durable. 0 or -1. */
static int sync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : -1; /* EINVAL: a file system without dir sync */
    close(fd);
    return rc;
}

/* ATTNFUZZ_FAIL_WRITE=ERRNO:TEXT (util/config.h): the errno a write of path is to fail
 * with, 0 = none. Read at each write, so a test sets it for one process tree only. */
static int injected_failure(const char *path) {
    const char *spec = af_config_get(AF_CFG_FAIL_WRITE);
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon || !colon[1] || !strstr(path, colon + 1)) return 0;
    static const struct {
        const char *name;
        int value;
    } names[] = {{"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EACCES", EACCES}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT}};
    size_t n = (size_t)(colon - spec);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i].name) == n && !strncmp(spec, names[i].name, n)) return names[i].value;
    int value = atoi(spec);
    return value > 0 ? value : ENOSPC;
}

int af_write_parts_atomic(const char *path, const af_file_part *parts, int n_parts, char *why, size_t cap) {
    int injected = injected_failure(path);
    if (injected) {
        say(why, cap, "write", path, injected);
        errno = injected;
        return -1;
    }
    size_t n = strlen(path);
    size_t tmp_cap = n + 48;
    char *tmp = malloc(tmp_cap);
    if (!tmp) {
        say(why, cap, "write", path, ENOMEM);
        return -1;
    }
    int fd = create_unique(path, tmp, tmp_cap);
    if (fd < 0) {
        int err = errno;
        say(why, cap, "create", tmp, err);
        free(tmp);
        errno = err;
        return -1;
    }
    int rc = fchmod(fd, 0644) == 0 ? 0 : -1;
    for (int i = 0; i < n_parts && rc == 0; i++)
        if (parts[i].size) rc = af_write_all(fd, parts[i].data, parts[i].size);
    if (rc == 0 && fsync(fd) != 0) rc = -1;
    int err = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc == 0 && sync_parent_dir(path) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc) {
        say(why, cap, "write", path, err);
        unlink(tmp);
    }
    free(tmp);
    if (rc) errno = err; /* the reason, for callers that say it themselves */
    return rc;
}

int af_write_file_atomic(const char *path, const void *data, size_t n, char *why, size_t cap) {
    af_file_part part = {data, n};
    return af_write_parts_atomic(path, &part, 1, why, cap);
}

int af_subdirs_real(const char *dir, const char *const *names, int n, char *why, size_t cap) {
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (lstat(path, &st) != 0) {
            if (errno == ENOENT) continue;
            say(why, cap, "stat", path, errno);
            return -1;
        }
        if (S_ISDIR(st.st_mode)) continue;
        if (S_ISLNK(st.st_mode)) {
            char target[1024];
            ssize_t t = readlink(path, target, sizeof target - 1);
            target[t > 0 ? t : 0] = 0;
            if (why && cap)
                snprintf(why, cap, "%s is a symbolic link (to %s): only a real directory inside %s is written in", path,
                         target[0] ? target : "?", dir);
        } else if (why && cap) {
            snprintf(why, cap, "%s is not a directory: only a real directory inside %s is written in", path, dir);
        }
        return -1;
    }
    return 0;
}

int af_is_regular_file(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* True when the real path of child lies inside the real directory root. */
static bool inside(const char *root_real, const char *child_real) {
    size_t n = strlen(root_real);
    if (strncmp(root_real, child_real, n) != 0) return false;
    return child_real[n] == '/' || (n == 1 && root_real[0] == '/');
}

int af_read_file_inside(const char *root, const char *path, size_t max_bytes, char **out, size_t *len, char *why,
                        size_t cap) {
    *out = NULL;
    if (len) *len = 0;
    /* O_NONBLOCK: a FIFO planted in the directory must not block the open */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP) {
            if (why && cap) snprintf(why, cap, "%s: is a symbolic link (not read)", path);
        } else {
            say(why, cap, "open", path, errno);
        }
        return -1;
    }
    struct stat st;
    char *root_real = realpath(root, NULL), *path_real = realpath(path, NULL);
    struct stat real_st;
    int rc = -1;
    if (fstat(fd, &st) != 0) {
        say(why, cap, "stat", path, errno);
    } else if (!S_ISREG(st.st_mode)) {
        if (why && cap) snprintf(why, cap, "%s: not a regular file (not read)", path);
    } else if (!root_real || !path_real || stat(path_real, &real_st) != 0 || real_st.st_ino != st.st_ino ||
               real_st.st_dev != st.st_dev || !inside(root_real, path_real)) {
        if (why && cap) snprintf(why, cap, "%s: outside %s (not read)", path, root);
    } else if ((unsigned long long)st.st_size > (unsigned long long)max_bytes) {
        if (why && cap) snprintf(why, cap, "%s: over %zu bytes (not read)", path, max_bytes);
    } else {
        rc = 0;
    }
    free(root_real);
    free(path_real);
    char *buf = rc == 0 ? malloc((size_t)st.st_size + 1) : NULL;
    if (rc == 0 && !buf) {
        say(why, cap, "read", path, ENOMEM);
        rc = -1;
    }
    size_t got = 0;
    while (rc == 0 && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            say(why, cap, "read", path, errno);
            rc = -1;
        }
        if (r <= 0) break; /* a file that shrank: what was there */
        got += (size_t)r;
    }
    close(fd);
    if (rc) {
        free(buf);
        return -1;
    }
    buf[got] = 0;
    *out = buf;
    if (len) *len = got;
    return 0;
}
