/* campaign/dirlock.h — one campaign per directory: DIR/lock, held with flock(2) while a
 * campaign (or a merge) writes DIR. The file holds "pid <pid> host <host>" of the holder,
 * so that a refusal names who has it. flock is released by the kernel when the holder
 * dies; a lock still held by a process that is gone (its fd inherited by an orphaned
 * child, or a network file system that kept it) is taken over when the file names this
 * host and a pid that no longer exists. dirlock.c. */
#ifndef ATTNFUZZ_CAMPAIGN_DIRLOCK_H
#define ATTNFUZZ_CAMPAIGN_DIRLOCK_H

#include <stddef.h>

typedef struct {
    int fd; /* DIR/lock, flock(LOCK_EX) held; -1 = none */
    char path[1100];
} af_dir_lock;

enum { AF_DIR_LOCK_OK = 0, AF_DIR_LOCK_BUSY = 1, AF_DIR_LOCK_ERROR = -1 };

/* Take DIR/lock (DIR must exist). AF_DIR_LOCK_OK, AF_DIR_LOCK_BUSY (why names the
 * holder's pid and host) or AF_DIR_LOCK_ERROR (why names the file and errno). */
int af_dir_lock_acquire(af_dir_lock *l, const char *dir, char *why, size_t cap);
/* Release it (the file stays; the next holder rewrites it). No-op when not held. */
void af_dir_lock_release(af_dir_lock *l);

#endif
