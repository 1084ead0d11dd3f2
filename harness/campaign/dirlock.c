/* campaign/dirlock.c — DIR/lock with flock, holder pid + host inside (campaign/dirlock.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/dirlock.h"

typedef struct {
    long pid;
    char host[256];
} lock_owner;

static void this_host(char *out, size_t cap) {
    if (gethostname(out, cap) != 0) snprintf(out, cap, "unknown");
    out[cap - 1] = 0;
}

/* The holder written in the lock file; false when the file says nothing usable. */
static bool read_owner(int fd, lock_owner *o) {
    char buf[400];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = 0;
    return sscanf(buf, "pid %ld host %255s", &o->pid, o->host) == 2 && o->pid > 0;
}

/* The holder is on this host and its pid is gone. */
static bool owner_is_dead(const lock_owner *o) {
    char host[256];
    this_host(host, sizeof host);
    if (strcmp(host, o->host) != 0) return false;
    return kill((pid_t)o->pid, 0) != 0 && errno == ESRCH;
}

/* fd still is the file at path (nobody replaced it since it was opened). */
static bool same_file(int fd, const char *path) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int af_dir_lock_acquire(af_dir_lock *l, const char *dir, char *why, size_t cap) {
    l->fd = -1;
    snprintf(l->path, sizeof l->path, "%s/lock", dir);
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644); /* never a planted link */
        if (fd < 0) {
            snprintf(why, cap, "%s: cannot open: %s", l->path, strerror(errno));
            return AF_DIR_LOCK_ERROR;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            lock_owner o;
            bool known = read_owner(fd, &o);
            if (e == EWOULDBLOCK && known && owner_is_dead(&o) && same_file(fd, l->path)) {
                /* stale: its holder is gone; a fresh file (new inode) replaces it */
                unlink(l->path);
                close(fd);
                continue;
            }
            close(fd);
            if (e != EWOULDBLOCK) {
                snprintf(why, cap, "%s: flock: %s", l->path, strerror(e));
                return AF_DIR_LOCK_ERROR;
            }
            if (known)
                snprintf(why, cap, "%s is in use by a running campaign (pid %ld on host %s; lock %s)", dir, o.pid,
                         o.host, l->path);
            else
                snprintf(why, cap, "%s is in use by a running campaign (lock %s held)", dir, l->path);
            return AF_DIR_LOCK_BUSY;
        }
        if (!same_file(fd, l->path)) { /* replaced between open and flock: take the new one */
            close(fd);
            continue;
        }
        char host[256], text[400];
        this_host(host, sizeof host);
        int n = snprintf(text, sizeof text, "pid %ld host %s\n", (long)getpid(), host);
        if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
            snprintf(why, cap, "%s: cannot write the holder: %s", l->path, strerror(errno));
            close(fd);
            return AF_DIR_LOCK_ERROR;
        }
        l->fd = fd;
        return AF_DIR_LOCK_OK;
    }
    snprintf(why, cap, "%s: the lock file kept being replaced (8 attempts)", l->path);
    return AF_DIR_LOCK_ERROR;
}

void af_dir_lock_release(af_dir_lock *l) {
    if (l->fd < 0) return;
    flock(l->fd, LOCK_UN);
    close(l->fd);
    l->fd = -1;
}
