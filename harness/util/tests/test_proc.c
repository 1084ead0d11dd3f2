/* test_proc.c — starting, timing out, killing and classifying a child (util/proc.h).
 *
 * A child that exits gives its status, one that is killed its signal, one past its
 * deadline (the parent's kill or its own alarm) says deadline, a SIGKILL nobody sent
 * with a memory limit says out of memory; an exec that fails says its errno and exits
 * 127; af_proc_kill sends SIGTERM first and SIGKILL after the grace period, and takes the
 * child's own children (its group) with it. When the parent dies, the child gets its
 * death signal (SIGKILL, or the one asked for), and the guard of an exec'd child kills
 * what that child started too. This process is a child subreaper, so that the orphans of
 * a parent that died come back here and their end can be read with waitpid. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/check.h"
#include "util/clock.h"
#include "util/proc.h"

static void exit_7(void *user) {
    (void)user;
    _exit(7);
}

static void segfault(void *user) {
    (void)user;
    signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn the signal into an exit */
    raise(SIGSEGV);
}

static void sleep_long(void *user) {
    (void)user;
    sleep(30);
}

static void self_sigkill(void *user) {
    (void)user;
    raise(SIGKILL);
}

static void on_term_exit_42(int sig) {
    (void)sig;
    _exit(42);
}

static void term_exits_42(void *user) {
    (void)user;
    signal(SIGTERM, on_term_exit_42);
    for (;;) pause();
}

static void term_ignored(void *user) {
    (void)user;
    signal(SIGTERM, SIG_IGN);
    for (;;) pause();
}

/* A grandchild (plain fork: this is a test) that sleeps; its pid goes to the pipe in user. */
static void fork_sleeper(void *user) {
    int fd = *(int *)user;
    pid_t g = fork();
    if (g == 0) {
        sleep(30);
        _exit(0);
    }
    if (write(fd, &g, sizeof g) != (ssize_t)sizeof g) _exit(3);
    for (;;) pause();
}

static int stdout_fd; /* the pipe to the test of parent_dies' child */

/* Says it is up (past the death-signal check) on stdout_fd, then sleeps. */
static void announce_then_sleep(void *user) {
    (void)user;
    if (write(stdout_fd, "up\n", 3) != 3) _exit(3);
    sleep(30);
}

static int stdout_to_pipe(void *user) {
    (void)user;
    return dup2(stdout_fd, 1) < 0 ? -1 : 0;
}

/* Wait up to seconds for pid (our child or an orphan given back to this subreaper) to
 * end; its wait status, or -1 when it is still there (then it is killed and reaped). */
static int reap_within(pid_t pid, double seconds) {
    double until = af_clock_mono() + seconds;
    int status = 0;
    while (af_clock_mono() < until) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) return status;
        if (w < 0 && errno != EINTR) return -2;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static af_proc_end run(af_proc_opts *o) {
    af_proc p;
    CHECK(af_proc_start(&p, o) == 0);
    af_proc_wait(&p);
    return af_proc_ended(&p);
}

/* A middle process starts a child under o and is killed (SIGKILL) once the child has said
 * a line on stdout_fd (it is past its death-signal check then); the child's end as this
 * subreaper sees it. The child's pid and its line come through a pipe. */
static int parent_dies(af_proc_opts *o, char *line, size_t cap) {
    int pid_pipe[2], line_pipe[2];
    CHECK(pipe(pid_pipe) == 0 && pipe(line_pipe) == 0);
    pid_t middle = fork();
    CHECK(middle >= 0);
    if (middle == 0) {
        close(pid_pipe[0]), close(line_pipe[0]);
        stdout_fd = line_pipe[1];
        af_proc p;
        if (af_proc_start(&p, o)) _exit(3);
        if (write(pid_pipe[1], &p.pid, sizeof p.pid) != (ssize_t)sizeof p.pid) _exit(3);
        for (;;) pause(); /* killed from the test */
    }
    close(pid_pipe[1]), close(line_pipe[1]);
    int child = 0;
    CHECK(read(pid_pipe[0], &child, sizeof child) == (ssize_t)sizeof child);
    size_t got = 0;
    char ch;
    while (read(line_pipe[0], &ch, 1) == 1 && ch != '\n')
        if (got + 1 < cap) line[got++] = ch;
    if (cap) line[got] = 0;
    kill(middle, SIGKILL);
    CHECK(waitpid(middle, NULL, 0) == middle);
    close(pid_pipe[0]), close(line_pipe[0]);
    return reap_within(child, 5);
}

int main(void) {
    CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    af_proc_opts o;

    /* exits: a callback's status, a returning callback's 0, a program's status */
    memset(&o, 0, sizeof o);
    o.fn = exit_7;
    af_proc_end e = run(&o);
    CHECK(e.how == AF_PROC_EXITED && e.exit_status == 7 && e.term_signal == 0);
    char *sh_exit5[] = {"sh", "-c", "exit 5", NULL};
    memset(&o, 0, sizeof o);
    o.argv = sh_exit5;
    o.search_path = true;
    e = run(&o);
    CHECK_MSG(e.how == AF_PROC_EXITED && e.exit_status == 5, "how %d status %d", (int)e.how, e.exit_status);

    /* an exec that fails: its errno, exit 127 */
    char *missing[] = {"/nonexistent/af-no-such-program", NULL};
    memset(&o, 0, sizeof o);
    o.argv = missing;
    af_proc p;
    CHECK(af_proc_start(&p, &o) == 0);
    CHECK(p.exec_errno == ENOENT);
    af_proc_wait(&p);
    e = af_proc_ended(&p);
    CHECK(e.how == AF_PROC_EXITED && e.exit_status == 127);

    /* killed by a signal of its own */
    memset(&o, 0, sizeof o);
    o.fn = segfault;
    e = run(&o);
    CHECK(e.how == AF_PROC_SIGNALED && e.term_signal == SIGSEGV && e.exit_status == -1);
    char line[256];

    /* af_proc_kill: SIGTERM first (a handler that exits 42 gets to run) ... */
    memset(&o, 0, sizeof o);
    o.fn = term_exits_42;
    CHECK(af_proc_start(&p, &o) == 0);
    usleep(100000); /* its handler installed */
    af_proc_kill(&p, 2.0, false);
    e = af_proc_ended(&p);
    CHECK_MSG(e.how == AF_PROC_EXITED && e.exit_status == 42 && e.seconds < 2.0, "how %d status %d after %.2f s",
              (int)e.how, e.exit_status, e.seconds);
    /* ... SIGKILL after the grace period when SIGTERM does nothing */
    o.fn = term_ignored;
    CHECK(af_proc_start(&p, &o) == 0);
    usleep(100000);
    double t0 = af_clock_mono();
    af_proc_kill(&p, 0.3, false);
    double took = af_clock_mono() - t0;
    e = af_proc_ended(&p);
    CHECK_MSG(e.how == AF_PROC_SIGNALED && e.term_signal == SIGKILL && took >= 0.3 && took < 2,
              "how %d signal %d after %.2f s", (int)e.how, e.term_signal, took);
    af_proc_describe(&p, line, sizeof line);
    CHECK_MSG(!strcmp(line, "killed by signal 9 (Killed)"), "%s", line);

    /* past its deadline: the parent's kill, and the child's own alarm */
    memset(&o, 0, sizeof o);
    o.fn = sleep_long;
    o.deadline_s = 0.2;
    CHECK(af_proc_start(&p, &o) == 0);
    CHECK(!af_proc_expired(&p));
    while (!af_proc_expired(&p)) CHECK(!af_proc_wait_for(&p, 0.05));
    af_proc_kill(&p, 0, true);
    e = af_proc_ended(&p);
    CHECK(e.how == AF_PROC_DEADLINE && e.term_signal == SIGKILL && e.seconds >= 0.2 && e.seconds < 5);
    af_proc_describe(&p, line, sizeof line);
    CHECK_MSG(strstr(line, "(deadline)"), "%s", line);
    memset(&o, 0, sizeof o);
    o.fn = sleep_long;
    o.alarm_s = 1;
    e = run(&o);
    CHECK(e.how == AF_PROC_DEADLINE && e.term_signal == SIGALRM);

    /* a SIGKILL nobody here sent: out of memory with a memory limit, a signal without */
    memset(&o, 0, sizeof o);
    o.fn = self_sigkill;
    o.max_memory = 1ull << 34;
    e = run(&o);
    CHECK(e.how == AF_PROC_OOM && e.term_signal == SIGKILL);
    o.max_memory = 0;
    e = run(&o);
    CHECK(e.how == AF_PROC_SIGNALED || e.how == AF_PROC_OOM); /* OOM only if this cgroup's OOM count grew */

    /* the group: the child's own child is killed with it */
    int fds[2];
    CHECK(pipe(fds) == 0);
    memset(&o, 0, sizeof o);
    o.fn = fork_sleeper;
    o.user = &fds[1];
    CHECK(af_proc_start(&p, &o) == 0);
    pid_t grandchild = 0;
    CHECK(read(fds[0], &grandchild, sizeof grandchild) == (ssize_t)sizeof grandchild);
    close(fds[0]), close(fds[1]);
    af_proc_kill(&p, 0, false);
    int ws = reap_within(grandchild, 5); /* an orphan now: given back to this subreaper */
    CHECK_MSG(ws >= 0 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "the grandchild: wait status %d", ws);
    /* ... and a child sharing the parent's group is killed alone */
    memset(&o, 0, sizeof o);
    o.fn = sleep_long;
    o.share_group = true;
    CHECK(af_proc_start(&p, &o) == 0);
    CHECK(getpgid(p.pid) == getpgrp() && p.guard_pid == 0);
    af_proc_kill(&p, 0, false);
    CHECK(af_proc_ended(&p).term_signal == SIGKILL);

    /* the parent dies: the child gets SIGKILL, or the death signal asked for */
    memset(&o, 0, sizeof o);
    o.fn = announce_then_sleep;
    ws = parent_dies(&o, NULL, 0);
    CHECK_MSG(ws >= 0 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "child of a dead parent: wait status %d", ws);
    o.death_signal = SIGTERM;
    ws = parent_dies(&o, NULL, 0);
    CHECK_MSG(ws >= 0 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGTERM, "child of a dead parent: wait status %d", ws);

    /* ... and what an exec'd program started goes too (its guard kills the group) */
    char *sh_bg[] = {"sh", "-c", "sleep 30 & echo $!; wait", NULL};
    memset(&o, 0, sizeof o);
    o.argv = sh_bg;
    o.search_path = true;
    o.setup = stdout_to_pipe;
    ws = parent_dies(&o, line, sizeof line);
    CHECK_MSG(ws >= 0 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "sh: wait status %d", ws);
    pid_t sleeper = (pid_t)atoi(line);
    CHECK_MSG(sleeper > 0, "no pid from sh: '%s'", line);
    ws = reap_within(sleeper, 5);
    CHECK_MSG(ws >= 0 && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "sh's sleep after the parent died: wait status %d",
              ws);
    while (waitpid(-1, NULL, WNOHANG) > 0) {} /* the guard, gone with the group */

    CHECK_DONE("test_proc");
}
