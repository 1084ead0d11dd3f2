/* gate/claims_jobs.c — claim checks in worker processes (claims_jobs.h). */
#include "gate/claims_jobs.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/proc.h"

/* What a worker sends back per case: the check's status and message, then the result. */
typedef struct {
    int rc;         /* af_claims_check's: 0 or -1 */
    char why[1024]; /* when rc < 0 */
} job_status;

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k, n -= (size_t)k;
    }
    return 0;
}

/* 1 read in full, 0 end of file before the first byte, -1 error or a short read */
static int read_all(int fd, void *buf, size_t n) {
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) return got ? -1 : 0;
        if (k < 0) return -1;
        got += (size_t)k;
    }
    return 1;
}

/* The worker's loop: one case in, one status and result out, until end of file. */
static void worker_main(int fd, af_claims_ctx *x, const af_selector *sel, const af_select_facts *facts) {
    af_case *c = malloc(sizeof *c);
    af_claim_result *r = malloc(sizeof *r);
    job_status *st = malloc(sizeof *st);
    if (!c || !r || !st) _exit(1);
    while (read_all(fd, c, sizeof *c) == 1) {
        memset(st, 0, sizeof *st);
        st->rc = af_claims_check(x, sel, facts, c, true, r, st->why, sizeof st->why);
        if (write_all(fd, st, sizeof *st) || write_all(fd, r, sizeof *r)) break;
    }
    af_claims_close(x);
    _exit(0);
}

/* What a worker's child runs (util/proc.h callback). */
typedef struct {
    af_claims_workers *w;
    int sv[2];
    af_claims_ctx *x;
    const af_selector *sel;
    const af_select_facts *facts;
} worker_job;

static void worker_child_main(void *user) {
    worker_job *job = user;
    close(job->sv[0]);
    for (int j = 0; j < job->w->n; j++) close(job->w->fd[j]); /* the earlier workers' sockets */
    signal(SIGINT, SIG_IGN);                                  /* the campaign decides when to stop */
    worker_main(job->sv[1], job->x, job->sel, job->facts);
}

int af_claims_workers_start(af_claims_workers *w, int n, af_claims_ctx *x, const af_selector *sel,
                            const af_select_facts *facts, char *why, size_t cap) {
    memset(w, 0, sizeof *w);
    if (n < 1 || n > AF_CLAIMS_MAX_JOBS) {
        snprintf(why, cap, "claims workers: %d jobs (1..%d)", n, AF_CLAIMS_MAX_JOBS);
        return -1;
    }
    if (x->n) {
        snprintf(why, cap, "claims workers: started after a session was opened");
        return -1;
    }
    for (int k = 0; k < n; k++) {
        worker_job job = {w, {-1, -1}, x, sel, facts};
        int *sv = job.sv;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
            snprintf(why, cap, "claims workers: socketpair: %s", strerror(errno));
            af_claims_workers_stop(w);
            return -1;
        }
        af_proc_opts po; /* its own group, dead with the campaign (util/proc.h) */
        memset(&po, 0, sizeof po);
        po.fn = worker_child_main;
        po.user = &job;
        if (af_proc_start(&w->proc[w->n], &po)) {
            snprintf(why, cap, "claims workers: fork: %s", strerror(errno));
            close(sv[0]), close(sv[1]);
            af_claims_workers_stop(w);
            return -1;
        }
        close(sv[1]);
        w->pid[w->n] = w->proc[w->n].pid;
        w->fd[w->n] = sv[0];
        w->n++;
    }
    return 0;
}

int af_claims_workers_send(af_claims_workers *w, int k, const af_case *c, char *why, size_t cap) {
    if (write_all(w->fd[k], c, sizeof *c)) {
        snprintf(why, cap, "claims worker %d (pid %d) is gone: %s", k, w->pid[k], strerror(errno));
        return -1;
    }
    return 0;
}

int af_claims_workers_recv(af_claims_workers *w, int k, af_claim_result *r, char *why, size_t cap) {
    job_status st;
    if (read_all(w->fd[k], &st, sizeof st) != 1 || read_all(w->fd[k], r, sizeof *r) != 1) {
        snprintf(why, cap, "claims worker %d (pid %d) ended inside a case", k, w->pid[k]);
        return -1;
    }
    if (st.rc) {
        snprintf(why, cap, "%s", st.why);
        return -1;
    }
    return 0;
}

void af_claims_workers_stop(af_claims_workers *w) {
    /* shutdown, not only close: processes forked from this one since (the campaign's own
     * isolated runs) hold copies of these descriptors, and the worker must see the end */
    for (int k = 0; k < w->n; k++)
        if (w->fd[k] >= 0) shutdown(w->fd[k], SHUT_RDWR), close(w->fd[k]), w->fd[k] = -1;
    for (int k = 0; k < w->n; k++)
        if (w->pid[k] > 0) {
            af_proc_wait(&w->proc[k]);
            w->pid[k] = 0;
        }
    w->n = 0;
}
