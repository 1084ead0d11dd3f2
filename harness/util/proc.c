/* util/proc.c — start, time out, kill and classify a child (util/proc.h). */
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

#define GUARD_WAKE_SIGNAL SIGRTMAX /* the guard's death signal: the only one it waits for */
#define POLL_SLICE_US     2000     /* af_proc_wait_for and the grace period look this often */

/* The cgroup (v2) of this process: how many of its processes an OOM killer has killed
 * (memory.events oom_kill), or -1 when that cannot be read. */
static long long cgroup_oom_kills(void) {
    char line[4096], path[4200];
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    path[0] = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "0::", 3)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.events", line + 3);
        }
    fclose(f);
    if (!path[0] || !(f = fopen(path, "r"))) return -1;
    long long n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "oom_kill %lld", &n) == 1) break;
    fclose(f);
    return n;
}

static void close_from(int first) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0u, 0) == 0) return;
#endif
    long max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
    for (int fd = first; fd < max_fd; fd++) close(fd);
}

/* The guard: the leader of a new group that the child then joins (so it is there before
 * the child runs, and no signal of the parent's group reaches it). It waits, every
 * descriptor closed and every signal blocked, for the parent's death, then kills its
 * group. A kill of the group ends it too. */
static void guard_main(int parent) {
    sigset_t all, wake;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    setpgid(0, 0);
    close_from(0);
    prctl(PR_SET_PDEATHSIG, GUARD_WAKE_SIGNAL);
    if (getppid() == parent) {
        sigemptyset(&wake);
        sigaddset(&wake, GUARD_WAKE_SIGNAL);
        int sig = 0;
        while (sigwait(&wake, &sig) != 0) {}
    }
    kill(0, SIGKILL);
    _exit(0);
}

/* In the child: the policy, the setup, the limits, then fn or exec. Never returns. */
static void child_main(const af_proc_opts *o, int parent, int pgid, int errno_fd) {
    if (!o->share_group) setpgid(0, pgid); /* 0: a group of its own */
    if (prctl(PR_SET_PDEATHSIG, o->death_signal ? o->death_signal : SIGKILL) != 0 || getppid() != parent) _exit(127);
    if (o->setup && o->setup(o->setup_user)) _exit(127);
    if (o->max_memory > 0) {
        struct rlimit lim = {(rlim_t)o->max_memory, (rlim_t)o->max_memory};
        setrlimit(RLIMIT_AS, &lim);
    }
    if (o->alarm_s > 0) alarm((unsigned)o->alarm_s);
    if (o->fn) {
        o->fn(o->user);
        _exit(0);
    }
    const char *path = o->path ? o->path : o->argv[0];
    if (o->search_path)
        execvpe(path, o->argv, o->envp ? o->envp : environ);
    else
        execve(path, o->argv, o->envp ? o->envp : environ);
    int e = errno;
    if (errno_fd >= 0 && write(errno_fd, &e, sizeof e) < 0) _exit(127);
    _exit(127);
}

int af_proc_start(af_proc *p, const af_proc_opts *o) {
    memset(p, 0, sizeof *p);
    p->alarm_s = o->alarm_s;
    p->max_memory = o->max_memory;
    p->oom_kills_at_start = cgroup_oom_kills();
    fflush(NULL); /* nothing buffered is written twice */
    int parent = (int)getpid();
    if (!o->fn && !o->share_group) { /* an exec'd child: its guard leads its group */
        pid_t guard = fork();
        if (guard < 0) return -1;
        if (guard == 0) guard_main(parent);
        setpgid(guard, guard); /* also here: the child joins it next */
        p->guard_pid = (int)guard;
    }
    /* an exec reports its failure on a close-on-exec pipe: end of file = it started */
    int errp[2] = {-1, -1};
    if (!o->fn && pipe2(errp, O_CLOEXEC)) errp[0] = errp[1] = -1;
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        if (errp[0] >= 0) close(errp[0]), close(errp[1]);
        if (p->guard_pid > 0) {
            kill(p->guard_pid, SIGKILL);
            while (waitpid(p->guard_pid, NULL, 0) < 0 && errno == EINTR) {}
        }
        p->guard_pid = 0;
        errno = err;
        return -1;
    }
    if (pid == 0) {
        if (errp[0] >= 0) close(errp[0]);
        child_main(o, parent, p->guard_pid, errp[1]);
    }
    if (!o->share_group) {
        p->pgid = p->guard_pid > 0 ? p->guard_pid : (int)pid;
        setpgid(pid, p->pgid); /* also here: no race with the child's own call */
    }
    p->pid = (int)pid;
    p->started = af_clock_mono();
    p->deadline = o->deadline_s > 0 ? p->started + o->deadline_s : 0;
    if (errp[0] >= 0) {
        close(errp[1]);
        int e = 0;
        ssize_t n;
        while ((n = read(errp[0], &e, sizeof e)) < 0 && errno == EINTR) {}
        close(errp[0]);
        p->exec_errno = n == (ssize_t)sizeof e ? e : 0;
    }
    return 0;
}

/* After the child is reaped: what is left of its group goes, and its guard. */
static void after_reap(af_proc *p, int status) {
    p->reaped = true;
    p->wait_status = status;
    p->ended = af_clock_mono();
    if (p->pgid > 0) kill(-p->pgid, SIGKILL);
    if (p->guard_pid > 0) {
        kill(p->guard_pid, SIGKILL);
        while (waitpid(p->guard_pid, NULL, 0) < 0 && errno == EINTR) {}
        p->guard_pid = 0;
    }
}

bool af_proc_poll(af_proc *p) {
    if (p->reaped || p->pid <= 0) return true;
    int status = 0;
    pid_t w;
    while ((w = waitpid(p->pid, &status, WNOHANG)) < 0 && errno == EINTR) {}
    if (w == 0) return false;
    after_reap(p, w == p->pid ? status : 0);
    return true;
}

void af_proc_wait(af_proc *p) {
    if (p->reaped || p->pid <= 0) return;
    int status = 0;
    pid_t w;
    while ((w = waitpid(p->pid, &status, 0)) < 0 && errno == EINTR) {}
    after_reap(p, w == p->pid ? status : 0);
}

bool af_proc_wait_for(af_proc *p, double seconds) {
    double until = af_clock_mono() + seconds;
    for (;;) {
        if (af_proc_poll(p)) return true;
        if (af_clock_mono() >= until) return false;
        usleep(POLL_SLICE_US);
    }
}

bool af_proc_expired(const af_proc *p) { return p->deadline > 0 && af_clock_mono() > p->deadline; }

void af_proc_set_deadline(af_proc *p, double seconds) { p->deadline = seconds > 0 ? af_clock_mono() + seconds : 0; }

static void signal_child(const af_proc *p, int sig) {
    if (p->pgid > 0) kill(-p->pgid, sig);
    kill(p->pid, sig); /* the child itself, should it have left its group */
}

void af_proc_kill(af_proc *p, double grace_s, bool for_time) {
    if (p->reaped || p->pid <= 0) return;
    p->killed = true;
    p->for_time = for_time;
    if (grace_s > 0) {
        signal_child(p, SIGTERM);
        if (af_proc_wait_for(p, grace_s)) return;
    }
    signal_child(p, SIGKILL);
    af_proc_wait(p);
}

af_proc_end af_proc_ended(const af_proc *p) {
    af_proc_end e = {AF_PROC_RUNNING, -1, 0, (p->reaped ? p->ended : af_clock_mono()) - p->started};
    if (!p->reaped) return e;
    int s = p->wait_status;
    e.term_signal = WIFSIGNALED(s) ? WTERMSIG(s) : 0;
    e.exit_status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    if (p->for_time || (p->alarm_s > 0 && e.term_signal == SIGALRM))
        e.how = AF_PROC_DEADLINE;
    else if (e.term_signal == SIGKILL && !p->killed &&
             (p->max_memory > 0 || (p->oom_kills_at_start >= 0 && cgroup_oom_kills() > p->oom_kills_at_start)))
        e.how = AF_PROC_OOM;
    else if (e.term_signal)
        e.how = AF_PROC_SIGNALED;
    else
        e.how = AF_PROC_EXITED;
    return e;
}

void af_proc_describe(const af_proc *p, char *buf, size_t cap) {
    af_proc_end e = af_proc_ended(p);
    switch (e.how) {
        case AF_PROC_RUNNING:
            snprintf(buf, cap, "still running");
            break;
        case AF_PROC_EXITED:
            snprintf(buf, cap, "exited with status %d", e.exit_status);
            break;
        case AF_PROC_SIGNALED:
            snprintf(buf, cap, "killed by signal %d (%s)", e.term_signal, strsignal(e.term_signal));
            break;
        case AF_PROC_DEADLINE:
            snprintf(buf, cap, "no result after %.0f s (deadline)", e.seconds);
            break;
        case AF_PROC_OOM:
            snprintf(buf, cap, "out of memory (killed by signal %d)", e.term_signal);
            break;
    }
}
