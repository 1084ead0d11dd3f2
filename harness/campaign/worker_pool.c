/* campaign/worker_pool.c — persistent isolated workers (campaign/worker_pool.h): the
 * worker's loop, starting and retiring workers, sending a case, waiting for results. */
#include "campaign/worker_pool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fsutil.h"
#include "util/hash.h"
#include "util/proc.h"

#define RETIRE_WAIT_S 2.0 /* an idle worker told to go gets this long to exit */

/* One case for a worker: what af_session_run takes. Plain data (crosses the socket). */
typedef struct {
    af_case c;
    af_case original;
    int has_original;
    int mode;         /* af_store_mode */
    int deadline_s;   /* the worker's alarm(); 0 = none */
    int mark;         /* the case's mark in the session's shared marks, -1 = none */
    char label[1024]; /* the session's verdict_label for this case */
    af_case next;     /* the session's next_hint, when has_next */
    int has_next;
} pool_request;

/* ---- the worker ------------------------------------------------------------------ */

/* Read exactly n bytes (blocking); false at end of file or on an error. */
static bool read_full(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        got += (size_t)k;
    }
    return true;
}

/* The worker's life: cases until the parent closes its end (or the process dies in one). */
static void worker_main(af_session *s, int fd) {
    /* on the stack, not the heap: a backend that calls exit() inside a case must not
     * turn into a leak report (LeakSanitizer) and a different exit status */
    pool_request req;
    af_session_result r;
    af_session_allow_ahead(s); /* case after case in this process: the next one prepared ahead */
    while (read_full(fd, &req, sizeof req)) {
        memcpy(s->verdict_label, req.label, sizeof s->verdict_label);
        af_session_use_mark(s, req.mark);
        s->next_hint = req.has_next ? &req.next : NULL;
        if (req.deadline_s > 0) alarm((unsigned)req.deadline_s);
        af_session_run(s, &req.c, (af_store_mode)req.mode, req.has_original ? &req.original : NULL, &r);
        alarm(0);
        if (af_write_all(fd, &r, sizeof r)) break;
    }
    _exit(0);
}

/* ---- the parent: workers ------------------------------------------------------------- */

/* What a worker was forked with that af_session_run reads: a worker whose fingerprint
 * differs from the session's now is retired instead of used. */
static uint64_t settings_of(const af_session *s) {
    struct {
        const void *backend, *reference;
        char engine[AF_NAME_MAX];
        char out_dir[1024];
        bool defer_new;
        uint64_t limits, oracle, probe_opts;
        int ref_choice, repeats;
        bool skip_oracle, probes;
        unsigned long long max_memory;
    } f;
    memset(&f, 0, sizeof f);
    f.backend = s->backend;
    f.reference = s->runner.reference;
    memcpy(f.engine, s->engine, sizeof f.engine);
    memcpy(f.out_dir, s->out_dir, sizeof f.out_dir);
    f.defer_new = s->defer_new;
    f.limits = af_fnv1a64(&s->limits, sizeof s->limits);
    f.oracle = af_fnv1a64(&s->runner.oracle, sizeof s->runner.oracle);
    f.probe_opts = af_fnv1a64(&s->runner.probe_opts, sizeof s->runner.probe_opts);
    f.ref_choice = (int)s->runner.ref_choice;
    f.skip_oracle = s->runner.skip_oracle;
    f.probes = s->runner.probes;
    f.repeats = s->runner.repeats;
    f.max_memory = s->max_memory;
    return af_fnv1a64(&f, sizeof f);
}

af_worker_pool *af_pool_new(int cases_per_worker) {
    af_worker_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cases_per_worker = cases_per_worker > 0 ? cases_per_worker : AF_POOL_DEFAULT_CASES_PER_WORKER;
    for (int i = 0; i < AF_POOL_MAX_WORKERS; i++) p->workers[i].fd = -1;
    return p;
}

static void forget(af_pool_worker *w) {
    if (w->fd >= 0) close(w->fd);
    memset(w, 0, sizeof *w);
    w->fd = -1;
}

/* End an idle worker: close its socket (it exits on end of file), wait a moment, kill. */
static void retire(af_worker_pool *p, af_pool_worker *w) {
    if (!w->pid) return;
    af_proc proc = w->proc;
    forget(w);
    if (!af_proc_wait_for(&proc, RETIRE_WAIT_S)) af_proc_kill(&proc, 0, false);
    p->retired++;
}

void af_pool_free(af_worker_pool *p) {
    if (!p) return;
    for (int i = 0; i < AF_POOL_MAX_WORKERS; i++)
        if (p->workers[i].pid) {
            if (p->workers[i].busy) af_proc_kill(&p->workers[i].proc, 0, false);
            retire(p, &p->workers[i]);
        }
    free(p);
}

/* What a worker's child runs (util/proc.h callback): its GPU, its socket, its loop. */
typedef struct {
    af_session *s;
    af_worker_pool *p;
    int fds[2];
    int device;
} worker_job;

static void worker_child_main(void *user) {
    worker_job *job = user;
    /* its GPU first: nothing in this process may have looked at CUDA before */
    af_session_enter_device(job->s, job->device);
    /* the other workers' parent ends must not stay open here: each of them is told to
     * exit by end of file on its socket */
    for (int i = 0; i < AF_POOL_MAX_WORKERS; i++)
        if (job->p->workers[i].pid && job->p->workers[i].fd >= 0) close(job->p->workers[i].fd);
    close(job->fds[0]);
    worker_main(job->s, job->fds[1]);
}

/* Fork a worker for GPU device (-1 = none) into the free slot w. 0, or -1 with errno set. */
static int spawn(af_session *s, af_worker_pool *p, af_pool_worker *w, int device) {
    worker_job job = {s, p, {-1, -1}, device};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, job.fds)) return -1;
    /* a worker outlives no killed parent (kill -9): it would store findings after the
     * next triage has counted them (as a fresh child, isolate.c); --max-memory as for a
     * fresh child per case */
    af_proc_opts po;
    memset(&po, 0, sizeof po);
    po.fn = worker_child_main;
    po.user = &job;
    po.max_memory = s->max_memory;
    af_proc proc;
    if (af_proc_start(&proc, &po)) {
        int err = errno;
        close(job.fds[0]);
        close(job.fds[1]);
        errno = err;
        return -1;
    }
    close(job.fds[1]);
    memset(w, 0, sizeof *w);
    w->proc = proc;
    w->pid = proc.pid;
    w->fd = job.fds[0];
    w->settings = settings_of(s);
    w->device = device;
    p->started++;
    return 0;
}

/* An idle worker with the session's current settings on GPU device (-1 = any), forking
 * one when none is there. */
static af_pool_worker *idle_worker(af_session *s, af_worker_pool *p, int device, const af_case *c) {
    uint64_t now = settings_of(s);
    af_pool_worker *free_slot = NULL;
    for (int i = 0; i < AF_POOL_MAX_WORKERS; i++) { /* the worker told of c, first */
        af_pool_worker *w = &p->workers[i];
        if (w->pid && !w->busy && w->settings == now && (device < 0 || w->device == device) && w->hinted &&
            af_case_equal(&w->hint, c))
            return w;
    }
    af_pool_worker *hinted_idle = NULL; /* an idle worker told of another case: the last resort */
    for (int i = 0; i < AF_POOL_MAX_WORKERS; i++) {
        af_pool_worker *w = &p->workers[i];
        if (w->pid && !w->busy && w->settings != now) retire(p, w);
        if (w->pid && !w->busy && (device < 0 || w->device == device)) {
            if (!w->hinted) return w;
            if (!hinted_idle) hinted_idle = w;
        }
        if (!w->pid && !free_slot) free_slot = w;
    }
    if (hinted_idle) return hinted_idle;
    if (!free_slot) {
        errno = EAGAIN;
        return NULL;
    }
    return spawn(s, p, free_slot, af_session_device_for(s, device)) ? NULL : free_slot;
}

/* Send the whole request; false when the worker is gone (it is reaped then). */
static bool send_request(af_worker_pool *p, af_pool_worker *w, const pool_request *req) {
    size_t sent = 0;
    while (sent < sizeof *req) {
        ssize_t k = send(w->fd, (const char *)req + sent, sizeof *req - sent, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            af_proc proc = w->proc;
            forget(w);
            af_proc_kill(&proc, 0, false);
            p->retired++;
            return false;
        }
        sent += (size_t)k;
    }
    return true;
}

int af_pool_start(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, const af_case *original,
                  int deadline_s, double grace_s) {
    af_worker_pool *p = s->pool;
    af_pool_worker *w = NULL;
    int err = 0;
    /* an idle worker may have died since its last case: that one is replaced, once. The
     * request lives on the heap only between forks: a worker forked while it was live
     * would hold it unreachable, and a backend calling exit() inside a case there would
     * be turned into a leak report and exit status 1 by LeakSanitizer. */
    for (int attempt = 0; attempt < 2 && !w; attempt++) {
        w = idle_worker(s, p, af_session_device_for(s, slot->device) < 0 ? -1 : slot->device, c);
        if (!w) {
            err = errno;
            break;
        }
        pool_request *req = calloc(1, sizeof *req);
        if (!req) {
            err = ENOMEM;
            w = NULL;
            break;
        }
        req->c = *c;
        memcpy(req->label, s->verdict_label, sizeof req->label);
        if (original) req->original = *original;
        req->has_original = original != NULL;
        req->mode = (int)mode;
        req->deadline_s = deadline_s;
        req->mark = slot->mark;
        if (s->next_hint) req->next = *s->next_hint;
        req->has_next = s->next_hint != NULL;
        if (!send_request(p, w, req)) {
            err = errno;
            w = NULL;
        }
        free(req);
    }
    if (!w) {
        errno = err ? err : EPIPE;
        return -1;
    }
    w->busy = true;
    w->hinted = s->next_hint != NULL;
    if (s->next_hint) w->hint = *s->next_hint;
    slot->c = *c;
    slot->worker = w;
    slot->device = w->device;
    af_isolate_child *ch = &slot->proc;
    ch->pid = w->pid;
    ch->fd = w->fd;
    ch->started = af_clock_mono();
    af_proc_set_deadline(&w->proc, deadline_s > 0 ? deadline_s + grace_s : 0); /* this case's */
    ch->deadline = w->proc.deadline;
    ch->out = slot->result;
    ch->out_size = sizeof *slot->result;
    ch->got = 0;
    return 0;
}

/* ---- the parent: results ------------------------------------------------------------- */

/* Whether the verdict of a finished case leaves the worker's process suspect: a crash
 * (a sticky device error would fail every later case) or a resource finding. */
static bool poisoned(const af_session_result *r) {
    if (r->verdict.kind == AF_V_CRASH || r->verdict.kind == AF_V_RESOURCE) return true;
    int n = r->verdict.n_findings < AF_MAX_FINDINGS ? r->verdict.n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < n; i++)
        if (r->verdict.findings[i].kind == AF_V_CRASH || r->verdict.findings[i].kind == AF_V_RESOURCE) return true;
    return false;
}

/* The slot's worker is gone (or killed for time): reap it, fill *o as
 * af_isolate_wait_any does for a per-case child, free the slot. */
static void worker_ended(af_worker_pool *p, af_child *slot, bool killed_for_time, af_isolate_outcome *o) {
    af_proc proc = slot->worker->proc;
    forget(slot->worker);
    if (killed_for_time)
        af_proc_kill(&proc, 0, true);
    else
        af_proc_wait(&proc);
    af_proc_end e = af_proc_ended(&proc);
    p->retired += killed_for_time;
    memset(o, 0, sizeof *o);
    o->seconds = af_clock_mono() - slot->proc.started;
    o->term_signal = e.term_signal;
    o->exit_status = e.exit_status;
    o->timed_out = killed_for_time || o->term_signal == SIGALRM;
    o->complete = false;
    slot->proc.pid = 0;
    slot->proc.fd = -1;
    slot->worker = NULL;
}

/* The slot's result arrived whole: the worker goes back to idle, or is retired. */
static void case_done(af_worker_pool *p, af_child *slot, af_isolate_outcome *o) {
    af_pool_worker *w = slot->worker;
    w->busy = false;
    w->served++;
    memset(o, 0, sizeof *o);
    o->complete = true;
    o->seconds = af_clock_mono() - slot->proc.started;
    if (w->served >= p->cases_per_worker || poisoned(slot->result)) retire(p, w);
    slot->proc.pid = 0;
    slot->proc.fd = -1;
    slot->worker = NULL;
}

/* Read what the slot's worker sent: 1 the result is whole, -1 the worker ended first,
 * 0 more to come. */
static int drain(af_child *slot) {
    af_isolate_child *ch = &slot->proc;
    while (ch->got < ch->out_size) {
        ssize_t k = recv(ch->fd, (char *)ch->out + ch->got, ch->out_size - ch->got, MSG_DONTWAIT);
        if (k > 0) {
            ch->got += (size_t)k;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
        return -1; /* end of file or a reset: the process is gone */
    }
    return 1;
}

/* The pool's reading and ending of a slot (af_isolate_ops, the one wait loop). */
typedef struct {
    af_worker_pool *p;
    af_child *slots;
} pool_wait;

static int slot_drain(void *ctx, int i) { return drain(&((pool_wait *)ctx)->slots[i]); }

static void slot_settle(void *ctx, int i, int st, bool for_time, af_isolate_outcome *o) {
    pool_wait *x = ctx;
    if (st == 1)
        case_done(x->p, &x->slots[i], o);
    else
        worker_ended(x->p, &x->slots[i], for_time, o);
}

int af_pool_wait_any(af_session *s, af_child *slots, int n, int timeout_ms, af_isolate_outcome *o) {
    static const af_isolate_ops ops = {slot_drain, slot_settle};
    if (n > AF_POOL_MAX_WORKERS) n = AF_POOL_MAX_WORKERS;
    af_isolate_child *procs[AF_POOL_MAX_WORKERS];
    for (int i = 0; i < n; i++) procs[i] = &slots[i].proc;
    pool_wait x = {s->pool, slots};
    return af_isolate_wait_with(procs, n, timeout_ms, &ops, &x, o);
}
