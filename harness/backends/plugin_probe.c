/* backends/plugin_probe.c — the probe children of plugin_probe.h: started, killed and
 * reaped by util/proc.h, read through a pipe with poll. Its own small reading loop rather
 * than campaign/isolate.h: the backends lie below the campaign in the layering, and a
 * probe streams one record per plugin instead of one result. */
#include "backends/plugin_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/proc.h"

/* exit() inside a constructor: the child leaves with that status at once, before the
 * exit handlers it inherited from attnfuzz run (stdio buffers flushed a second time) and
 * before a sanitizer's leak check rewrites the status. */
static void leave_with_status(int status, void *unused) {
    (void)unused;
    _exit(status);
}

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The child: load paths[first..n) in order, one record each to fd. Never returns. */
static void probe_child(int fd, const char *const *paths, int first, int n) {
    on_exit(leave_with_status, NULL);
    dup2(STDERR_FILENO, STDOUT_FILENO); /* a constructor's output never reaches attnfuzz's stdout */
    for (int i = first; i < n; i++) {
        af_plugin_descriptor d;
        memset(&d, 0, sizeof d);
        d.index = i;
        af_plugin_check_in_child(paths[i], &d);
        if (write_all(fd, &d, sizeof d)) _exit(3);
    }
    _exit(0);
}

/* The record for a plugin whose probe child ended (or was killed) before reporting it. */
static void describe_death(const char *path, bool hung, int status, af_plugin_descriptor *d) {
    d->loaded = false;
    if (hung)
        snprintf(d->why, sizeof d->why, "plugin %s hung while loading (no descriptor after %d s)", path,
                 AF_PLUGIN_PROBE_DEADLINE_S);
    else if (WIFSIGNALED(status))
        snprintf(d->why, sizeof d->why, "plugin %s crashed while loading (killed by signal %d)", path,
                 WTERMSIG(status));
    else
        snprintf(d->why, sizeof d->why, "plugin %s crashed while loading (exited %d)", path,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* Read the child's records into out[*next..n) until it closes the pipe or stays silent
 * for a plugin's deadline (then it is killed: *hung). */
static void read_records(int fd, af_proc *proc, int n, af_plugin_descriptor *out, int *next, bool *hung) {
    af_plugin_descriptor d;
    size_t got = 0;
    double deadline = af_clock_mono() + AF_PLUGIN_PROBE_DEADLINE_S;
    *hung = false;
    for (;;) {
        double left = deadline - af_clock_mono();
        if (left <= 0) {
            af_proc_kill(proc, 0, true);
            *hung = true;
            return;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) continue; /* the deadline check above decides */
        ssize_t r = read(fd, (char *)&d + got, sizeof d - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return; /* end of file: the child is gone */
        got += (size_t)r;
        if (got < sizeof d) continue;
        got = 0;
        if (d.index != *next || *next >= n) { /* not the record expected: the stream is not ours */
            af_proc_kill(proc, 0, false);
            return;
        }
        d.name[sizeof d.name - 1] = 0;
        d.description[sizeof d.description - 1] = 0;
        d.why[sizeof d.why - 1] = 0;
        out[(*next)++] = d;
        deadline = af_clock_mono() + AF_PLUGIN_PROBE_DEADLINE_S;
    }
}

/* What a probe child runs (util/proc.h callback). */
typedef struct {
    int fds[2];
    const char *const *paths;
    int first, n;
} probe_job;

static void probe_child_main(void *user) {
    probe_job *job = user;
    close(job->fds[0]);
    probe_child(job->fds[1], job->paths, job->first, job->n);
}

int af_plugin_probe(const char *const *paths, int n, af_plugin_descriptor *out) {
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].index = i;
        snprintf(out[i].why, sizeof out[i].why, "cannot load plugin '%s': not probed", paths[i]);
    }
    int next = 0;
    while (next < n) {
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) != 0) {
            snprintf(out[next].why, sizeof out[next].why, "cannot load plugin '%s': pipe: %s", paths[next],
                     strerror(errno));
            return -1;
        }
        /* a probe never outlives attnfuzz (util/proc.h); buffered output is flushed first */
        probe_job job = {{fds[0], fds[1]}, paths, next, n};
        af_proc_opts po;
        memset(&po, 0, sizeof po);
        po.fn = probe_child_main;
        po.user = &job;
        af_proc proc;
        if (af_proc_start(&proc, &po)) {
            snprintf(out[next].why, sizeof out[next].why, "cannot load plugin '%s': fork: %s", paths[next],
                     strerror(errno));
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
        close(fds[1]);
        bool hung = false;
        read_records(fds[0], &proc, n, out, &next, &hung);
        close(fds[0]);
        af_proc_wait(&proc);
        int status = proc.wait_status;
        if (next < n) { /* the child ended (or was killed) inside paths[next] */
            describe_death(paths[next], hung, status, &out[next]);
            next++;
        }
    }
    return 0;
}
