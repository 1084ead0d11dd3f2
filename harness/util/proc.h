/* util/proc.h — the one way attnfuzz starts a child process: fork, then a callback or an
 * exec, under one policy; its deadline; killing it with its process group; how it ended.
 *
 * The policy every child gets (zeroed af_proc_opts = all of it):
 *   - its own process group (the terminal's SIGINT reaches attnfuzz only, and a kill
 *     reaches the child's own children too); share_group keeps the parent's group
 *   - it dies with its parent: PR_SET_PDEATHSIG (death_signal, default SIGKILL), checked
 *     right after with getppid (a parent already gone: the child exits 127 at once).
 *     The signal follows the thread that forked: start children from the main thread.
 *   - an exec'd child in its own group also gets a guard: a small process (a fork of the
 *     parent, every descriptor closed, every signal blocked) that leads the group before
 *     the child joins it, waits for the parent's death and then SIGKILLs the group, so that what a foreign program
 *     started (a Python worker's helpers, libFuzzer's jobs) dies with attnfuzz too. A
 *     callback child needs none: its own children start through here again.
 *   - max_memory: RLIMIT_AS in the child; alarm_s: the child's own alarm() (SIGALRM)
 *   - deadline_s: when af_proc_expired says the parent should end it (af_proc_kill)
 * Ending: af_proc_kill sends SIGTERM to the group, gives it grace_s, then SIGKILL (at
 * once when grace_s is 0); after the child is reaped whatever is left of its group is
 * killed too and its guard ended. af_proc_end says how it ended: exit status, signal,
 * deadline (the parent's kill for time or the child's own SIGALRM), or out of memory (a
 * SIGKILL the parent did not send, with a memory limit set or the cgroup's oom_kill
 * counter grown since the start). */
#ifndef ATTNFUZZ_UTIL_PROC_H
#define ATTNFUZZ_UTIL_PROC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    /* what the child runs: fn(user) (returning exits 0), or with fn NULL the program
     * path (NULL = argv[0]) with argv and envp (NULL = this process's environment);
     * search_path looks a name without '/' up on PATH (execvp). A failed exec exits 127. */
    void (*fn)(void *user);
    void *user;
    const char *path;
    char *const *argv;
    char *const *envp;
    bool search_path;
    /* in the child after the group and death signal, before the limits and fn / exec:
     * descriptors, environment. Nonzero: the child exits 127. NULL = nothing. */
    int (*setup)(void *setup_user);
    void *setup_user;
    bool share_group;              /* stay in the parent's process group (no guard) */
    int death_signal;              /* signal on the parent's death; 0 = SIGKILL */
    unsigned long long max_memory; /* RLIMIT_AS of the child in bytes; 0 = none */
    int alarm_s;                   /* the child's own alarm(); 0 = none */
    double deadline_s;             /* the parent's deadline from the start; 0 = none */
} af_proc_opts;

typedef struct {
    int pid;       /* 0 = none */
    int pgid;      /* its process group: its pid, or its guard's; 0 = the parent's */
    int guard_pid; /* the guard of an exec'd child's group; 0 = none */
    int alarm_s;
    unsigned long long max_memory;
    double started;  /* af_clock_mono at the start */
    double ended;    /* af_clock_mono when reaped */
    double deadline; /* af_clock_mono when the parent ends it; 0 = never */
    int exec_errno;  /* an exec'd child whose exec failed: its errno (it exits 127) */
    bool killed;     /* the parent sent the kill (af_proc_kill) */
    bool for_time;   /* ... because the deadline passed */
    bool reaped;
    int wait_status;              /* waitpid's status once reaped */
    long long oom_kills_at_start; /* the cgroup's memory.events oom_kill; -1 = unknown */
} af_proc;

typedef enum {
    AF_PROC_RUNNING = 0, /* not reaped yet */
    AF_PROC_EXITED,      /* exit_status holds its status */
    AF_PROC_SIGNALED,    /* term_signal ended it (the parent's kill included) */
    AF_PROC_DEADLINE,    /* killed by the parent for time, or its own SIGALRM */
    AF_PROC_OOM,         /* a SIGKILL the parent did not send, memory limit or cgroup OOM */
} af_proc_how;

typedef struct {
    af_proc_how how;
    int exit_status; /* AF_PROC_EXITED: its status; else -1 */
    int term_signal; /* the signal that ended it; 0 when it exited */
    double seconds;  /* from the start until now, or until it was reaped */
} af_proc_end;

/* Start a child under o (see above). Returns 0, or -1 with errno set when fork failed
 * (nothing started). An exec that fails is not an error here: the child exits 127 and
 * p->exec_errno says why. Every output stream is flushed first (fflush(NULL)). */
int af_proc_start(af_proc *p, const af_proc_opts *o);

/* Reap the child if it has ended, without blocking. True when it is reaped (also when it
 * was before). */
bool af_proc_poll(af_proc *p);

/* Wait for the child to end (blocking) and reap it. */
void af_proc_wait(af_proc *p);

/* Wait up to seconds for the child to end. True when it is reaped. */
bool af_proc_wait_for(af_proc *p, double seconds);

/* Whether the deadline has passed (never when there is none). */
bool af_proc_expired(const af_proc *p);

/* A new deadline seconds from now (0 = none): a persistent child's next task. */
void af_proc_set_deadline(af_proc *p, double seconds);

/* End the child unless already reaped: SIGTERM to its group, up to grace_s for it to end,
 * then SIGKILL to the group (at once when grace_s is 0); reaped. for_time: the deadline
 * passed (af_proc_end says AF_PROC_DEADLINE). */
void af_proc_kill(af_proc *p, double grace_s, bool for_time);

/* How the child ended (AF_PROC_RUNNING before it is reaped). */
af_proc_end af_proc_ended(const af_proc *p);

/* One line: "exited with status 3", "killed by signal 11 (Segmentation fault)", "no
 * result after 61 s (deadline)", "out of memory (killed by signal 9)", "still running". */
void af_proc_describe(const af_proc *p, char *buf, size_t cap);

#endif
