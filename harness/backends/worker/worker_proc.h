/* backends/worker/worker_proc.h — one worker process: started with execv (no shell) on a
 * socketpair (its fd 0 and 1) with the shared-memory fd as its fd 3, in its own process
 * group; lines sent and received under deadlines; killed and reaped. */
#ifndef ATTNFUZZ_WORKER_PROC_H
#define ATTNFUZZ_WORKER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backends/worker/worker.h"

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
    pid_t pid;  /* 0 = not running */
    int sock;   /* attnfuzz's end of the socketpair, -1 = none */
    char *rbuf; /* bytes received and not yet returned as lines */
    size_t rlen, rcap;
    int wait_status; /* waitpid status after af_worker_proc_stop */
    bool reaped;
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
/* "exited with status 0" / "killed by signal 11 (Segmentation fault)" after stop. */
void af_worker_proc_describe_exit(const af_worker_proc *p, char *out, size_t cap);

#endif
