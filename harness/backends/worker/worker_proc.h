/* backends/worker/worker_proc.h — one worker process: started with execv (no shell) on a
 * socketpair (its fd 0 and 1) with the shared-memory fd as its fd 3, in its own process
 * group, dead with the process that started it (util/proc.h); lines sent and received
 * under deadlines; killed and reaped.
 *
 * Its fd 2 is a pipe that attnfuzz copies to its own stderr whenever it waits on the
 * worker (and when it ends), keeping the last line, so that a worker that dies at its
 * start can be said to have died of it ("No module named 'torch'"). Between requests
 * what the worker writes waits in the pipe. */
#ifndef ATTNFUZZ_WORKER_PROC_H
#define ATTNFUZZ_WORKER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backends/worker/worker.h"
#include "util/proc.h"

#define AF_WORKER_SHM_FD 3 /* the worker finds the shared region on this fd */

typedef enum {
    AF_WP_OK = 0,
    AF_WP_EXITED,   /* end of stream: the worker closed its side or died */
    AF_WP_TIMEOUT,  /* the deadline passed */
    AF_WP_IO_ERROR, /* send/recv failed otherwise */
    AF_WP_TOO_LONG, /* a reply line longer than AF_WORKER_MAX_LINE */
} af_wp_status;

#define AF_WORKER_MAX_LINE (64u << 20)

typedef struct {
    af_proc proc; /* the process (util/proc.h): own group, dead with its starter */
    pid_t pid;    /* 0 = not running; else proc.pid */
    int sock;     /* attnfuzz's end of the socketpair, -1 = none */
    char *rbuf;   /* bytes received and not yet returned as lines */
    size_t rlen, rcap;
    int wait_status; /* waitpid status after af_worker_proc_stop */
    bool reaped;
    int err_fd;         /* read end of the worker's stderr pipe, -1 = none / at its end */
    char err_last[256]; /* its last complete non-blank line (control characters blanked) */
    char err_part[256]; /* the line it is writing */
    size_t err_part_len;
} af_worker_proc;

void af_worker_proc_init(af_worker_proc *p);
/* Start argv (argv[0] resolved on PATH when it has no '/'). 0, or -1 with why. */
int af_worker_proc_start(af_worker_proc *p, char *const argv[], int shm_fd, char *why, size_t cap);
bool af_worker_proc_running(const af_worker_proc *p);
/* Send text + '\n' before the deadline (af_clock_mono seconds). */
af_wp_status af_worker_proc_send(af_worker_proc *p, const char *text, double deadline);
/* Receive one line (without '\n') before the deadline; *line is malloc'd. */
af_wp_status af_worker_proc_recv(af_worker_proc *p, char **line, double deadline);
/* Kill the process group (SIGKILL) unless already gone, reap, close. */
void af_worker_proc_stop(af_worker_proc *p);
/* Close the socket, give the worker grace_s to exit on its own, then stop. */
void af_worker_proc_close(af_worker_proc *p, double grace_s);
/* The last non-blank line the worker wrote on its stderr so far ("" if none). */
const char *af_worker_proc_last_stderr(const af_worker_proc *p);
/* Forget the process without touching it (a forked child's copy of its parent's worker):
 * close this process's descriptors, then as af_worker_proc_init. */
void af_worker_proc_forget(af_worker_proc *p);
/* "exited with status 0" / "killed by signal 11 (Segmentation fault)" after stop. */
void af_worker_proc_describe_exit(const af_worker_proc *p, char *out, size_t cap);

#endif
