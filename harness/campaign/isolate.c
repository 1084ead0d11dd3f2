/* campaign/isolate.c — a callback in a forked child with a deadline (campaign/isolate.h). */
#include "campaign/isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fsutil.h"

#define WAIT_SLICE_MS 200 /* wake up at least this often to check deadlines */
#define MAX_WAITED    64  /* children one af_isolate_wait_any looks at */

int af_isolate_start(af_isolate_child *ch, af_isolate_fn fn, void *user, void *out, size_t out_size, int deadline_s,
                     double grace_s) {
    int fds[2];
    if (pipe(fds)) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        errno = err;
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        /* a run outlives no killed parent (kill -9): it would store findings after the
         * next triage has counted them */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(3);
        if (ch->max_memory > 0) {
            struct rlimit lim = {(rlim_t)ch->max_memory, (rlim_t)ch->max_memory};
            setrlimit(RLIMIT_AS, &lim);
        }
        if (deadline_s > 0) alarm((unsigned)deadline_s);
        void *buf = calloc(1, out_size ? out_size : 1);
        if (!buf) _exit(3);
        fn(user, buf, out_size);
        af_write_all(fds[1], buf, out_size);
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ch->pid = pid;
    ch->fd = fds[0];
    ch->started = af_clock_mono();
    ch->deadline = deadline_s > 0 ? ch->started + deadline_s + grace_s : 0;
    ch->out = out;
    ch->out_size = out_size;
    ch->got = 0;
    return 0;
}

/* Reap ch (blocking: it has ended, or was just killed) and free its slot. */
static void finish(af_isolate_child *ch, bool killed_for_time, af_isolate_outcome *o) {
    int ws = 0;
    while (waitpid(ch->pid, &ws, 0) < 0 && errno == EINTR) {}
    memset(o, 0, sizeof *o);
    o->seconds = af_clock_mono() - ch->started;
    o->term_signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    o->exit_status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    o->timed_out = killed_for_time || o->term_signal == SIGALRM;
    o->complete = !killed_for_time && ch->got == ch->out_size && o->exit_status == 0;
    close(ch->fd);
    ch->pid = 0;
    ch->fd = -1;
}

/* Read what ch has sent; true when it has ended (end of file: gone or about to be). */
static bool drain(af_isolate_child *ch) {
    for (;;) {
        if (ch->got == ch->out_size) {
            char extra;
            ssize_t n = read(ch->fd, &extra, 1);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
            if (n > 0) continue; /* more than promised: ignored */
            return true;
        }
        ssize_t n = read(ch->fd, (char *)ch->out + ch->got, ch->out_size - ch->got);
        if (n > 0) {
            ch->got += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
        return true;
    }
}

int af_isolate_wait_any(af_isolate_child *const *children, int n, int timeout_ms, af_isolate_outcome *o) {
    double until = af_clock_mono() + timeout_ms / 1000.0;
    for (;;) {
        struct pollfd pfd[MAX_WAITED];
        int idx[MAX_WAITED], m = 0;
        double now = af_clock_mono();
        for (int i = 0; i < n && m < MAX_WAITED; i++) {
            af_isolate_child *ch = children[i];
            if (!ch->pid) continue;
            if (ch->deadline > 0 && now > ch->deadline) {
                kill(ch->pid, SIGKILL);
                finish(ch, true, o);
                return i;
            }
            pfd[m].fd = ch->fd;
            pfd[m].events = POLLIN;
            pfd[m].revents = 0;
            idx[m++] = i;
        }
        if (m == 0) return -1;
        int wait_ms = (int)((until - now) * 1000);
        if (wait_ms < 0) wait_ms = 0;
        if (wait_ms > WAIT_SLICE_MS) wait_ms = WAIT_SLICE_MS;
        int rc = poll(pfd, (nfds_t)m, wait_ms);
        if (rc < 0 && errno != EINTR) return -1;
        for (int k = 0; k < m && rc > 0; k++) {
            if (!pfd[k].revents) continue;
            af_isolate_child *ch = children[idx[k]];
            if (drain(ch)) {
                finish(ch, false, o);
                return idx[k];
            }
        }
        if (af_clock_mono() >= until) return -1;
    }
}

int af_isolate_run(af_isolate_fn fn, void *user, void *out, size_t out_size, int deadline_s, double grace_s,
                   af_isolate_outcome *o) {
    af_isolate_child ch;
    memset(&ch, 0, sizeof ch);
    if (af_isolate_start(&ch, fn, user, out, out_size, deadline_s, grace_s)) return -1;
    af_isolate_child *one = &ch;
    while (af_isolate_wait_any(&one, 1, 1000, o) < 0) {}
    return 0;
}

void af_isolate_describe(const af_isolate_outcome *o, char *buf, size_t cap) {
    if (o->timed_out)
        snprintf(buf, cap, "no result after %.0f s", o->seconds);
    else if (o->term_signal)
        snprintf(buf, cap, "killed by signal %d (%s)", o->term_signal, strsignal(o->term_signal));
    else if (o->exit_status == 0)
        snprintf(buf, cap, "exited 0 inside run (before reporting a result)");
    else
        snprintf(buf, cap, "exited with status %d before reporting", o->exit_status);
}
