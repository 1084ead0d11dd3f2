/* backends/worker/worker_proc.c — the worker process (backends/worker/worker_proc.h). */
#include "backends/worker/worker_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/proc.h"

void af_worker_proc_init(af_worker_proc *p) {
    memset(p, 0, sizeof *p);
    p->sock = -1;
    p->err_fd = -1;
}

void af_worker_proc_forget(af_worker_proc *p) {
    if (p->sock >= 0) close(p->sock);
    if (p->err_fd >= 0) close(p->err_fd);
    free(p->rbuf);
    af_worker_proc_init(p);
}

/* Keep the last non-blank line of what the worker wrote (bytes in order). */
static void note_stderr(af_worker_proc *p, const char *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char ch = bytes[i];
        if (ch == '\n') {
            size_t k = p->err_part_len;
            while (k > 0 && p->err_part[k - 1] == ' ') k--;
            if (k > 0) snprintf(p->err_last, sizeof p->err_last, "%.*s", (int)k, p->err_part);
            p->err_part_len = 0;
        } else if (p->err_part_len + 1 < sizeof p->err_part) {
            bool blank = p->err_part_len == 0 && (ch == ' ' || ch == '\t' || ch == '\r');
            if (!blank) p->err_part[p->err_part_len++] = (unsigned char)ch < 0x20 || ch == 0x7f ? ' ' : ch;
        }
    }
}

/* Copy what the worker wrote on its stderr so far to ours (the bytes as they are), and
 * note its last line; at the end of the pipe close it. Never blocks on the worker. */
static void drain_stderr(af_worker_proc *p) {
    char buf[4096];
    while (p->err_fd >= 0) {
        ssize_t n = read(p->err_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) { /* its end (every writer gone), or an error: nothing more comes */
            close(p->err_fd);
            p->err_fd = -1;
            return;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(STDERR_FILENO, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break; /* our stderr is gone: the line is still noted */
            done += w;
        }
        note_stderr(p, buf, (size_t)n);
    }
}

const char *af_worker_proc_last_stderr(const af_worker_proc *p) { return p->err_last; }

/* argv[0] as given when it holds a '/', else the first executable PATH entry. */
static int resolve_program(const char *prog, char *out, size_t cap, char *why, size_t why_cap) {
    if (strchr(prog, '/')) {
        if (access(prog, X_OK)) {
            snprintf(why, why_cap, "worker program '%s' is not executable: %s", prog, strerror(errno));
            return -1;
        }
        snprintf(out, cap, "%s", prog);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    const char *p = path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(out, cap, "%.*s/%s", (int)(n ? n : 1), n ? p : ".", prog);
        struct stat sb;
        if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode) && access(out, X_OK) == 0) return 0;
        p += n;
        if (*p == ':') p++;
    }
    snprintf(why, why_cap, "worker program '%s' not found on PATH", prog);
    return -1;
}

/* The worker's descriptors, set in the child before the exec (util/proc.h setup). */
typedef struct {
    int sock, err, shm;
} worker_fds;

/* fd 0 and 1 = the socket, fd 2 = the stderr pipe, fd 3 = the shared region; every other
 * descriptor that the exec would keep is closed. */
static int setup_fds(void *user) {
    const worker_fds *f = user;
    if (dup2(f->sock, 0) < 0 || dup2(f->sock, 1) < 0 || dup2(f->err, 2) < 0) return -1;
    if (f->shm == AF_WORKER_SHM_FD) /* dup2 onto itself keeps close-on-exec: clear it */
        fcntl(f->shm, F_SETFD, 0);
    else if (f->shm >= 0 && dup2(f->shm, AF_WORKER_SHM_FD) < 0)
        return -1;
    long max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
    for (int fd = AF_WORKER_SHM_FD + 1; fd < max_fd; fd++) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0 && !(flags & FD_CLOEXEC)) close(fd); /* the exec closes the others */
    }
    signal(SIGPIPE, SIG_DFL);
    return 0;
}

int af_worker_proc_start(af_worker_proc *p, char *const argv[], int shm_fd, char *why, size_t cap) {
    af_worker_proc_init(p);
    char prog[4096];
    if (resolve_program(argv[0], prog, sizeof prog, why, cap)) return -1;
    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
        snprintf(why, cap, "worker: socketpair: %s", strerror(errno));
        return -1;
    }
    if (pipe2(ep, O_CLOEXEC)) {
        snprintf(why, cap, "worker: pipe: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    /* its own process group; it dies with the process that started it (a campaign's pool
     * worker killed for a hang must not leave its worker holding the GPU), and so does
     * what it starts (util/proc.h: the guard of its group) */
    worker_fds fds = {sv[1], ep[1], shm_fd};
    af_proc_opts po;
    memset(&po, 0, sizeof po);
    po.path = prog;
    po.argv = argv;
    po.setup = setup_fds;
    po.setup_user = &fds;
    if (af_proc_start(&p->proc, &po)) {
        snprintf(why, cap, "worker: fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        close(ep[0]);
        close(ep[1]);
        return -1;
    }
    if (p->proc.exec_errno) { /* said on its stderr, as the worker's last words */
        char msg[4200];
        int n = snprintf(msg, sizeof msg, "attnfuzz worker: execv %s: %s\n", prog, strerror(p->proc.exec_errno));
        if (write(ep[1], msg, n > 0 && (size_t)n < sizeof msg ? (size_t)n : 0) < 0) {}
    }
    close(sv[1]);
    close(ep[1]);
    fcntl(ep[0], F_SETFL, fcntl(ep[0], F_GETFL) | O_NONBLOCK);
    p->pid = p->proc.pid;
    p->sock = sv[0];
    p->err_fd = ep[0];
    return 0;
}

bool af_worker_proc_running(const af_worker_proc *p) { return p->pid > 0 && !p->reaped; }

/* Milliseconds left until deadline for poll(), at least 0. */
static int ms_left(double deadline) {
    double left = deadline - af_clock_mono();
    if (left <= 0) return 0;
    if (left > 3600) return 3600 * 1000;
    return (int)(left * 1000) + 1;
}

af_wp_status af_worker_proc_send(af_worker_proc *p, const char *text, double deadline) {
    if (p->sock < 0) return AF_WP_EXITED;
    size_t n = strlen(text);
    char *msg = malloc(n + 1);
    if (!msg) return AF_WP_IO_ERROR;
    memcpy(msg, text, n);
    msg[n] = '\n';
    size_t done = 0;
    af_wp_status st = AF_WP_OK;
    while (done < n + 1) {
        struct pollfd pf[2] = {{p->sock, POLLOUT, 0}, {p->err_fd, POLLIN, 0}};
        int pr = poll(pf, p->err_fd >= 0 ? 2 : 1, ms_left(deadline));
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) {
            st = AF_WP_IO_ERROR;
            break;
        }
        if (pr == 0) {
            st = AF_WP_TIMEOUT;
            break;
        }
        if (p->err_fd >= 0 && pf[1].revents) drain_stderr(p);
        if (!pf[0].revents) continue;
        ssize_t w = send(p->sock, msg + done, n + 1 - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (w < 0) {
            st = (errno == EPIPE || errno == ECONNRESET) ? AF_WP_EXITED : AF_WP_IO_ERROR;
            break;
        }
        done += (size_t)w;
    }
    free(msg);
    return st;
}

af_wp_status af_worker_proc_recv(af_worker_proc *p, char **line, double deadline) {
    *line = NULL;
    if (p->sock < 0) return AF_WP_EXITED;
    for (;;) {
        char *nl = p->rlen ? memchr(p->rbuf, '\n', p->rlen) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - p->rbuf);
            *line = malloc(n + 1);
            if (!*line) return AF_WP_IO_ERROR;
            memcpy(*line, p->rbuf, n);
            (*line)[n] = '\0';
            memmove(p->rbuf, nl + 1, p->rlen - n - 1);
            p->rlen -= n + 1;
            return AF_WP_OK;
        }
        if (p->rlen >= AF_WORKER_MAX_LINE) return AF_WP_TOO_LONG;
        if (p->rcap - p->rlen < 65536) {
            size_t ncap = p->rcap ? p->rcap * 2 : 131072;
            char *nb = realloc(p->rbuf, ncap);
            if (!nb) return AF_WP_IO_ERROR;
            p->rbuf = nb;
            p->rcap = ncap;
        }
        struct pollfd pf[2] = {{p->sock, POLLIN, 0}, {p->err_fd, POLLIN, 0}};
        int pr = poll(pf, p->err_fd >= 0 ? 2 : 1, ms_left(deadline));
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) return AF_WP_IO_ERROR;
        if (pr == 0) return AF_WP_TIMEOUT;
        if (p->err_fd >= 0 && pf[1].revents) drain_stderr(p);
        if (!pf[0].revents) continue;
        ssize_t r = recv(p->sock, p->rbuf + p->rlen, p->rcap - p->rlen, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (r < 0) return errno == ECONNRESET ? AF_WP_EXITED : AF_WP_IO_ERROR;
        if (r == 0) return AF_WP_EXITED;
        p->rlen += (size_t)r;
    }
}

static void close_socket(af_worker_proc *p) {
    if (p->sock >= 0) close(p->sock);
    p->sock = -1;
    free(p->rbuf);
    p->rbuf = NULL;
    p->rlen = p->rcap = 0;
}

/* After the worker is reaped: what it wrote last goes out too, then the pipe closes (a
 * leftover of its group that still holds it gets no more say). */
static void close_stderr(af_worker_proc *p) {
    drain_stderr(p);
    if (p->err_fd >= 0) close(p->err_fd);
    p->err_fd = -1;
}

/* The worker is reaped: its status, then its last words. */
static void reaped(af_worker_proc *p) {
    p->wait_status = p->proc.wait_status;
    p->reaped = true;
    close_stderr(p);
}

void af_worker_proc_stop(af_worker_proc *p) {
    close_socket(p);
    if (p->pid <= 0 || p->reaped) return;
    if (!af_proc_poll(&p->proc)) af_proc_kill(&p->proc, 0, false); /* the group: its own children go too */
    reaped(p);
}

void af_worker_proc_close(af_worker_proc *p, double grace_s) {
    close_socket(p);
    if (p->pid <= 0 || p->reaped) return;
    double until = af_clock_mono() + grace_s;
    while (af_clock_mono() < until) {
        if (af_proc_poll(&p->proc)) { /* leftovers of its group are killed with it */
            reaped(p);
            return;
        }
        drain_stderr(p); /* its last words, while it finishes */
        usleep(10000);
    }
    af_worker_proc_stop(p);
}

void af_worker_proc_describe_exit(const af_worker_proc *p, char *out, size_t cap) {
    int s = p->wait_status;
    if (!p->reaped)
        snprintf(out, cap, "still running");
    else if (WIFEXITED(s))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(s));
    else if (WIFSIGNALED(s))
        snprintf(out, cap, "killed by signal %d (%s)", WTERMSIG(s), strsignal(WTERMSIG(s)));
    else
        snprintf(out, cap, "ended with wait status 0x%x", s);
}
