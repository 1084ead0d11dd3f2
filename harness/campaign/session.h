/* campaign/session.h — everything needed to run cases against one backend: open a
 * session, run one case (prepare, judge every engine with probes, feedback, store), and
 * the same in a forked child (campaign/isolate.h) so that a crash or hang becomes a
 * verdict. Files: session.c (open, close, run here), session_child.c (run in children).
 *
 * GPU safety. CUDA does not survive fork(): a process that initialised CUDA cannot use
 * it in a forked child. So for a backend flagged AF_BACKEND_NEEDS_GPU (cudnn, plugins
 * that want device buffers) a session that forks (campaign, minimize, repro) never
 * calls into the backend in its own process: available() and the limits probing
 * (af_fuzz_limits_for_backend) run in a forked child that reports back through a pipe,
 * and every case runs in a forked child (af_session_run_isolated, af_child_start) that
 * initialises CUDA itself: a persistent worker serving many cases (worker_pool.h), or
 * with ATTNFUZZ_POOL=0 / worker_cases 0 a fresh child per case. s->isolated says so;
 * af_session_run refuses to run such a backend in an isolated session's own process.
 * Only a caller that runs its cases in this process (the libFuzzer target,
 * AF_SESSION_INPROCESS) talks to the backend directly. */
#ifndef ATTNFUZZ_CAMPAIGN_SESSION_H
#define ATTNFUZZ_CAMPAIGN_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "campaign/gpus.h"
#include "campaign/isolate.h"
#include "fuzz/fuzz.h"
#include "judge/prepare_ahead.h"
#include "judge/runner.h"
#include "judge/signature.h"
#include "util/stage_mark.h"

#define AF_SESSION_REPRO_OPTIONS 4

/* Why af_session_open failed (s->open_error), so that every verb maps it to one exit code. */
typedef enum {
    AF_OPEN_OK = 0,
    AF_OPEN_UNKNOWN_BACKEND, /* no backend of that name */
    AF_OPEN_PLUGIN_ERROR,    /* plugin:PATH could not be loaded */
    AF_OPEN_UNAVAILABLE,     /* the backend is not usable on this machine */
} af_open_error;

/* Called for every engine's verdict of a case, in the process that judged it (for an
 * isolated run: the child, before it reports back), e.g. to print it at once. */
typedef void (*af_session_verdict_fn)(void *user, const char *engine, const af_verdict *v, bool ran);

typedef struct {
    af_registry registry;
    af_runner runner;
    af_backend *backend;
    char backend_name[AF_NAME_MAX];
    char engine[AF_NAME_MAX];         /* "" = the case's engine field, else this one */
    af_fuzz_limits limits;            /* af_fuzz_limits_for_backend of the backend */
    char out_dir[1024];               /* campaign directory; "" = findings are not stored */
    double start_unix;                /* campaign start, for time_to_first_seconds */
    bool defer_new;                   /* findings with a new raw signature go to DIR/pending */
    bool isolated;                    /* never call the backend in this process (NEEDS_GPU) */
    bool backend_owned;               /* backend came from the registry (else the caller's) */
    int default_deadline_s;           /* per case: 60 s, 300 s for a NEEDS_GPU backend */
    int owner_pid;                    /* the process that opened the session */
    af_open_error open_error;         /* after a failed open: why */
    unsigned long long max_memory;    /* per isolated run: RLIMIT_AS bytes, 0 = none (set after open) */
    af_session_verdict_fn on_verdict; /* optional, set after open: every engine's verdict */
    void *on_verdict_user;
    /* persistent workers (campaign/worker_pool.h): cases one worker serves before it is
     * replaced, 0 = a fresh child per case (ATTNFUZZ_POOL=0); the pool is made on the
     * first isolated case and ended by af_session_close */
    int worker_cases;
    struct af_worker_pool *pool;
    /* the caller's name for the case about to run (run: its path), for on_verdict; set
     * before each case, it travels with the case to a persistent worker */
    char verdict_label[1024];
    /* the case expected after the one about to run on this session (NULL = unknown; set
     * before each case, not owned): af_session_run announces it to the backend's prepare
     * after the case's own (backends/backend.h), so its builds start while this case is
     * judged; it travels with the case to a persistent worker */
    const af_case *next_hint;
    /* the next case (next_hint) prepared on a thread of its own while this one is judged
     * (judge/prepare_ahead.h): on in the processes that judge case after case (attnfuzz run
     * --in-process, a persistent worker: af_session_allow_ahead), for the backends
     * ATTNFUZZ_PREPARE_AHEAD names; joined and freed by af_session_close */
    bool ahead_on;
    af_prepare_ahead ahead;
    /* cases in flight at once (run --jobs, campaign --jobs; 1 from open, the caller sets it
     * after): ATTNFUZZ_PREPARE_AHEAD's default depends on it (judge/prepare_ahead.h) */
    int cases_at_once;
    /* campaign --gpus (campaign/gpus.h; not owned, set after open; NULL = none): every
     * forked run sets CUDA_VISIBLE_DEVICES to one entry before anything else, and device
     * holds it in that process ("" = the variable as inherited); verdicts stored there
     * carry it (af_run_info.device) */
    const af_gpu_list *gpus;
    char device[AF_GPU_ID_MAX];
    int isolated_device; /* the GPU (index) af_session_run_isolated runs on, -1 = any (open) */
    /* called before and about every 50 ms while af_session_run_isolated waits for its child (NULL =
     * none; not owned): a campaign keeps its own cases going beside a minimisation */
    void (*idle)(void *user);
    void *idle_user;
    /* the options that recreate the backend in another attnfuzz (a worker's --worker-cmd
     * TEXT / --worker-config FILE; af_worker_cli_options), NULL-terminated, pointing into
     * the backend: stored findings' Reproduce lines carry them */
    const char *repro_options[AF_SESSION_REPRO_OPTIONS + 1];
    /* why the last af_session_store that returned AF_SESSION_STORE_FAILED failed (a path
     * and the system's reason), in the process that stored */
    char store_error[512];
    /* AF_STAGE_MARKS marks shared with the forked children (util/stage_mark.h), made at
     * open (NULL when the mapping failed: a timeout is then a hang, as before); bit i of
     * marks_taken: marks[i] is the mark of a child in flight (session_child.c) */
    af_stage_mark *marks;
    uint64_t marks_taken;
} af_session;

enum {
    AF_SESSION_INPROCESS = 1u << 0, /* cases run in this process: probe the backend here */
    AF_SESSION_NO_LIMITS = 1u << 1, /* skip af_fuzz_limits_for_backend (repro, minimize) */
    AF_SESSION_ISOLATE = 1u << 2,   /* isolate whatever the backend's flags say (tests) */
};

/* Prepare the hinted next case ahead in this process from now on, when
 * ATTNFUZZ_PREPARE_AHEAD names the session's backend (call it where cases run one after
 * another in this process, never in a child that runs a single case). */
void af_session_allow_ahead(af_session *s);
/* Whether ATTNFUZZ_PREPARE_AHEAD names the session's backend (a campaign then hints each
 * job's next case to its worker). */
bool af_session_wants_ahead(const af_session *s);

/* Per-case deadlines when none is given: CPU backends 60 s; GPU backends 300 s (with
 * --engine all, runtime compilation of cuDNN engines takes tens of seconds). */
#define AF_DEADLINE_CPU_S 60
#define AF_DEADLINE_GPU_S 300

/* Open a session; backend "" = "cpu". Probes are on. Returns 0, or -1 with why
 * (unknown or unavailable backend). Same as af_session_open_ex(..., NULL, 0, ...). */
int af_session_open(af_session *s, const char *backend, const char *engine, const char *out_dir, char *why, size_t cap);
/* backend_obj (may be NULL): run this backend (not owned; its name is used) instead of
 * looking `backend` up in the registry. flags: AF_SESSION_*. */
int af_session_open_ex(af_session *s, const char *backend, af_backend *backend_obj, const char *engine,
                       const char *out_dir, unsigned flags, char *why, size_t cap);
void af_session_close(af_session *s);

/* What happened to one case. Plain data: it crosses a pipe from an isolated child. */
typedef enum {
    AF_CASE_RAN = 0, /* verdict is valid */
    AF_CASE_NOT_RUN, /* the case could not be prepared, or its judging outlived the deadline
                        after the backend's runs had returned (judge_timeout; why) */
    AF_CASE_CRASHED, /* the child died of a signal; verdict = crash */
    AF_CASE_HUNG,    /* past the deadline; verdict = hang */
} af_case_status;

typedef enum {
    AF_STORE_NONE = 0, /* run only */
    AF_STORE_ALWAYS,   /* store a finding (af_finding_store) */
    AF_STORE_FUZZ,     /* store a duplicate; a new bucket goes to DIR/pending */
} af_store_mode;

typedef struct {
    af_case_status status;
    af_verdict verdict;
    int stored; /* 1 new bucket, 0 duplicate, 2 pending, -1 not stored */
    /* a finding of this case could not be written (af_session_store returned
     * AF_SESSION_STORE_FAILED): the path and the system's reason; "" = none */
    char store_error[256];
    char bucket[AF_BUCKET_ID_LEN + 1];
    char why[256];
    /* NOT_RUN because attnfuzz's own stages (the oracle, the reference, the checks) held the
     * case past its deadline with no backend call in flight: no verdict on the kernel */
    bool judge_timeout;
    /* NOT_RUN because the backend itself went away after the session opened: it declined
     * and its available() fails now (a GPU that fell off the bus: cudaErrorNoDevice). No
     * verdict on the case; a campaign stops on it (lost.c) instead of counting declines */
    bool unavailable;
    double seconds;
    int engines_declined;               /* engines that declined the case or were not run */
    uint8_t counters[AF_FUZZ_COUNTERS]; /* feedback (af_fuzz_feedback) */
    char device[AF_GPU_ID_MAX];         /* CUDA_VISIBLE_DEVICES the run had (session device) */
} af_session_result;

/* Whether r counts as a crash in a campaign's stats (stats.json "crashes", fuzzer_stats
 * unique_crashes): the child died (AF_CASE_CRASHED), or the case ran and one of its
 * findings is a crash (a plugin's AF_PLUGIN_ERROR / AF_PLUGIN_CRASH, AF_RUN_CRASH).
 * Every engine counts with this one rule. */
bool af_session_result_is_crash(const af_session_result *r);

/* Run one case in this process (prepare, judge with probes), set feedback counters,
 * and store per mode. original (may be NULL) becomes original.case. In an isolated
 * session this is for forked children only: called in the session's own process it
 * returns AF_CASE_NOT_RUN. */
void af_session_run(af_session *s, const af_case *c, af_store_mode mode, const af_case *original, af_session_result *r);

/* The same in a forked child with a deadline (seconds, 0 = none): a crash, abort or
 * hang of the backend becomes a crash / hang verdict instead of ending the caller. */
void af_session_run_isolated(af_session *s, const af_case *c, af_store_mode mode, const af_case *original,
                             int deadline_s, af_session_result *r);

/* Whether the backend is usable now (its available(); for an isolated session in a forked
 * child, so this process never touches the device): 0, or -1 with why. */
int af_session_available(af_session *s, char *why, size_t cap);

/* Verdict for a case that killed or outlived its process. */
void af_session_fatal_verdict(const af_session *s, const af_case *c, af_verdict_kind kind, const char *detail,
                              af_verdict *v);

/* Write DIR/current/<name>.case (before a case runs, so a crash loses nothing);
 * name = the worker's pid (libFuzzer) or job<i> (in-process). */
void af_session_write_current(const af_session *s, const af_case *c, const char *name);

/* ---- isolated runs: one waited for (af_session_run_isolated), or N in flight -------- */

typedef struct {
    af_isolate_child proc;         /* proc.pid 0 = free slot */
    af_case c;                     /* the case it runs */
    af_session_result *result;     /* the caller points this at storage before starting */
    struct af_pool_worker *worker; /* the persistent worker serving it; NULL = a fresh child */
    int device;                    /* with s->gpus: the index of the GPU it runs on, -1 = any
                                      (set before the start; the start says which one served) */
    int mark;                      /* its mark in s->marks (set by the start), -1 = none */
} af_child;

/* Start c in a child; fills slot (slot->device: the GPU to run on, see af_child).
 * Returns 0 or -1 (fork failed, errno set). */
int af_child_start(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, int deadline_s);
/* In a child just forked to run cases, before anything else: CUDA_VISIBLE_DEVICES =
 * s->gpus->id[device] and s->device = that (no --gpus, or device out of range: nothing
 * changes). session_child.c; worker_pool.c calls it too. */
void af_session_enter_device(af_session *s, int device);
/* The GPU index a run asking for device (-1 = any) starts on: device, or 0 with --gpus;
 * -1 without. */
int af_session_device_for(const af_session *s, int device);

/* In a child about to run a case: the runner's and the backend's marks (util/stage_mark.h)
 * point at s->marks[mark], reset (mark -1 or no marks: nothing is marked). */
void af_session_use_mark(af_session *s, int mark);

/* Wait up to timeout_ms for any of n slots (at most 64) to finish; returns the index of
 * one that finished (its result complete, the child reaped), or -1 when none did. */
int af_child_wait_any(af_session *s, af_child *slots, int n, int timeout_ms);

#endif
