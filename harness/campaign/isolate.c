/* campaign/isolate.c — a callback in a forked child with a deadline (campaign/isolate.h). */
#include "campaign/isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fsutil.h"
#include "util/proc.h"

#define WAIT_SLICE_MS 200 /* wake up at least this often to check deadlines */
#define MAX_WAITED    64  /* children one af_isolate_wait_any looks at */

/* What the child runs: fn into a zeroed buffer, the buffer to the pipe, exit 0. */
typedef struct {
    af_isolate_fn fn;
    void *user;
    size_t out_size;
    int read_fd, write_fd;
} isolate_job;

static void isolate_child_main(void *user) {
    isolate_job *job = user;
    close(job->read_fd);
    void *buf = calloc(1, job->out_size ? job->out_size : 1);
    if (!buf) _exit(3);
    job->fn(job->user, buf, job->out_size);
    alarm(0); /* the run is over: a parent slow to read (minimising) is no hang of ours */
    af_write_all(job->write_fd, buf, job->out_size);
    close(job->write_fd);
    _exit(0);
}

int af_isolate_start(af_isolate_child *ch, af_isolate_fn fn, void *user, void *out, size_t out_size, int deadline_s,
                     double grace_s) {
    int fds[2];
    if (pipe(fds)) return -1;
    isolate_job job = {fn, user, out_size, fds[0], fds[1]};
    /* a run outlives no killed parent (kill -9): it would store findings after the next
     * triage has counted them (util/proc.h: the child dies with its parent) */
    af_proc_opts po;
    memset(&po, 0, sizeof po);
    po.fn = isolate_child_main;
    po.user = &job;
    po.max_memory = ch->max_memory;
    po.alarm_s = deadline_s > 0 ? deadline_s : 0;
    po.deadline_s = deadline_s > 0 ? deadline_s + grace_s : 0;
    if (af_proc_start(&ch->run, &po)) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        errno = err;
        return -1;
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ch->pid = ch->run.pid;
    ch->fd = fds[0];
    ch->started = ch->run.started;
    ch->deadline = ch->run.deadline;
    ch->out = out;
    ch->out_size = out_size;
    ch->got = 0;
    return 0;
}

/* Reap ch (blocking: it has ended, or is killed now for time) and free its slot. */
static void finish(af_isolate_child *ch, bool killed_for_time, af_isolate_outcome *o) {
    if (killed_for_time)
        af_proc_kill(&ch->run, 0, true);
    else
        af_proc_wait(&ch->run);
    af_proc_end e = af_proc_ended(&ch->run);
    memset(o, 0, sizeof *o);
    o->seconds = af_clock_mono() - ch->started;
    o->term_signal = e.term_signal;
    o->exit_status = e.exit_status;
    o->timed_out = killed_for_time || o->term_signal == SIGALRM;
    o->complete = !killed_for_time && ch->got == ch->out_size && o->exit_status == 0;
    close(ch->fd);
    ch->pid = 0;
    ch->fd = -1;
}

/* Read what ch has sent: 1 when its pipe has ended with the whole result (gone or about
 * to be), -1 ended short, 0 more may come. */
static int drain(af_isolate_child *ch) {
    for (;;) {
        if (ch->got == ch->out_size) {
            char extra;
            ssize_t n = read(ch->fd, &extra, 1);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
            if (n > 0) continue; /* more than promised: ignored */
            return 1;
        }
        ssize_t n = read(ch->fd, (char *)ch->out + ch->got, ch->out_size - ch->got);
        if (n > 0) {
            ch->got += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
        return -1;
    }
}

int af_isolate_wait_with(af_isolate_child *const *children, int n, int timeout_ms, const af_isolate_ops *ops, void *ctx,
                         af_isolate_outcome *o) {
    double until = af_clock_mono() + timeout_ms / 1000.0;
    for (;;) {
        struct pollfd pfd[MAX_WAITED];
        int idx[MAX_WAITED], m = 0;
        double now = af_clock_mono();
        for (int i = 0; i < n && m < MAX_WAITED; i++) {
            af_isolate_child *ch = children[i];
            if (!ch->pid) continue;
            if (ch->deadline > 0 && now > ch->deadline) {
                /* the parent may have been away past the deadline: a result sent
                 * meanwhile, or under way, is a run that ended in time (its alarm is off) */
                int st = ops->drain(ctx, i);
                if (st != 0 || ch->got == 0 || now > ch->deadline + AF_RESULT_ARRIVING_S) {
                    ops->settle(ctx, i, st, st == 0, o);
                    return i;
                }
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
            int st = ops->drain(ctx, idx[k]);
            if (st != 0) {
                ops->settle(ctx, idx[k], st, false, o);
                return idx[k];
            }
        }
        if (af_clock_mono() >= until) return -1;
    }
}

/* The per-case children's reading and ending (af_isolate_ops): ctx is the children. */
static int child_drain(void *ctx, int i) { return drain(((af_isolate_child *const *)ctx)[i]); }

static void child_settle(void *ctx, int i, int st, bool for_time, af_isolate_outcome *o) {
    (void)st; /* finish reads how it ended from the process and the bytes it sent */
    finish(((af_isolate_child *const *)ctx)[i], for_time, o);
}

int af_isolate_wait_any(af_isolate_child *const *children, int n, int timeout_ms, af_isolate_outcome *o) {
    static const af_isolate_ops ops = {child_drain, child_settle};
    return af_isolate_wait_with(children, n, timeout_ms, &ops, (void *)children, o);
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
