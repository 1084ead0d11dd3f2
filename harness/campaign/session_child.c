/* campaign/session_child.c — a session's cases in forked children (campaign/isolate.h):
 * one waited for, or N in flight; a child that dies or outlives its deadline becomes a
 * crash / hang verdict instead of ending the caller (campaign/session.h). */
#include "campaign/session.h"
#include "campaign/worker_pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"

#define GRACE_S 2 /* the parent kills a child this long after its own alarm should have */

typedef struct {
    af_session *s;
    const af_case *c;
    af_store_mode mode;
    const af_case *original;
    int device; /* index into s->gpus, -1 = none */
    int mark;   /* index into s->marks, -1 = none */
} case_job;

static void run_in_child(void *user, void *out, size_t out_size) {
    case_job *job = user;
    (void)out_size;
    af_session_enter_device(job->s, job->device);
    af_session_use_mark(job->s, job->mark);
    af_session_run(job->s, job->c, job->mode, job->original, out);
}

void af_session_use_mark(af_session *s, int mark) {
    af_stage_mark *m = s->marks && mark >= 0 && mark < AF_STAGE_MARKS ? &s->marks[mark] : NULL;
    af_stage_mark_reset(m);
    s->runner.mark = m;
    if (s->backend) s->backend->mark = m;
}

/* A free mark for a child about to start (reset), or -1 when none is free. */
static int mark_take(af_session *s) {
    if (!s->marks) return -1;
    for (int i = 0; i < AF_STAGE_MARKS; i++)
        if (!(s->marks_taken >> i & 1u)) {
            s->marks_taken |= 1ull << i;
            af_stage_mark_reset(&s->marks[i]);
            return i;
        }
    return -1;
}

static void mark_release(af_session *s, int mark) {
    if (mark >= 0 && mark < AF_STAGE_MARKS) s->marks_taken &= ~(1ull << mark);
}

void af_session_enter_device(af_session *s, int device) {
    if (!s->gpus || device < 0 || device >= s->gpus->n) return;
    setenv("CUDA_VISIBLE_DEVICES", s->gpus->id[device], 1);
    snprintf(s->device, sizeof s->device, "%s", s->gpus->id[device]);
}

int af_session_device_for(const af_session *s, int device) {
    if (!s->gpus || s->gpus->n == 0) return -1;
    return device >= 0 && device < s->gpus->n ? device : 0;
}

/* A persistent worker serves the case (worker_pool.h) unless the session wants a fresh
 * child per case (worker_cases 0) or the pool cannot be made. */
static bool use_pool(af_session *s) {
    if (s->worker_cases > 0 && !s->pool) s->pool = af_pool_new(s->worker_cases);
    return s->worker_cases > 0 && s->pool;
}

static int child_spawn(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, const af_case *original,
                       int deadline_s) {
    slot->worker = NULL;
    slot->mark = mark_take(s);
    int rc;
    if (use_pool(s)) {
        rc = af_pool_start(s, slot, c, mode, original, deadline_s, GRACE_S);
    } else {
        slot->device = af_session_device_for(s, slot->device);
        case_job job = {s, c, mode, original, slot->device, slot->mark};
        slot->c = *c;
        slot->proc.max_memory = s->max_memory;
        rc = af_isolate_start(&slot->proc, run_in_child, &job, slot->result, sizeof *slot->result, deadline_s, GRACE_S);
    }
    if (rc) {
        int err = errno;
        mark_release(s, slot->mark);
        slot->mark = -1;
        errno = err;
    }
    return rc;
}

int af_child_start(af_session *s, af_child *slot, const af_case *c, af_store_mode mode, int deadline_s) {
    return child_spawn(s, slot, c, mode, NULL, deadline_s);
}

/* A child past its deadline with no backend call in flight (its mark says so): attnfuzz's
 * own stages held it, so the case is not judged, and nothing is said of the kernel. */
static bool judge_timed_out(af_session *s, const af_child *slot, const af_isolate_outcome *o, char *where, size_t cap) {
    if (!o->timed_out || !s->marks || slot->mark < 0 || slot->mark >= AF_STAGE_MARKS) return false;
    return !af_stage_mark_describe(&s->marks[slot->mark], af_clock_mono(), where, cap);
}

/* The result of a finished child: its own, a crash / hang verdict, or (a judge timeout)
 * no verdict. */
static void child_finish(af_session *s, af_child *slot, const af_isolate_outcome *o) {
    af_session_result *r = slot->result;
    char where[160] = "";
    bool judge_timeout = judge_timed_out(s, slot, o, where, sizeof where);
    /* where a hang or a crash found the child: inside the backend's call, or in which stage */
    if (!o->complete && !judge_timeout && slot->mark >= 0 && slot->mark < AF_STAGE_MARKS && s->marks)
        af_stage_mark_describe(&s->marks[slot->mark], af_clock_mono(), where, sizeof where);
    mark_release(s, slot->mark);
    slot->mark = -1;
    if (o->complete) {
        r->seconds = o->seconds;
        return;
    }
    char detail[400];
    af_isolate_describe(o, detail, sizeof detail);
    memset(r, 0, sizeof *r);
    r->stored = -1;
    if (judge_timeout) {
        r->status = AF_CASE_NOT_RUN;
        r->judge_timeout = true;
        af_verdict_init(&r->verdict, s->backend_name);
        snprintf(r->why, sizeof r->why,
                 "not judged: %s, %s; no verdict on the kernel (rerun it alone or with a longer --deadline)", detail,
                 where);
        r->seconds = o->seconds;
        af_fuzz_feedback(&slot->c, &r->verdict, r->counters, sizeof r->counters);
        return;
    }
    if (where[0]) {
        size_t n = strlen(detail);
        snprintf(detail + n, sizeof detail - n, ", %s", where);
    }
    r->status = o->timed_out ? AF_CASE_HUNG : AF_CASE_CRASHED;
    af_session_fatal_verdict(s, &slot->c, o->timed_out ? AF_V_HANG : AF_V_CRASH, detail, &r->verdict);
    if (s->gpus && slot->device >= 0 && slot->device < s->gpus->n) { /* the GPU the dead process had */
        snprintf(r->device, sizeof r->device, "%s", s->gpus->id[slot->device]);
        snprintf(r->verdict.info.device, sizeof r->verdict.info.device, "%s", r->device);
    }
    snprintf(r->why, sizeof r->why, "%s", detail);
    r->seconds = o->seconds;
    af_fuzz_feedback(&slot->c, &r->verdict, r->counters, sizeof r->counters);
}

int af_child_wait_any(af_session *s, af_child *slots, int n, int timeout_ms) {
    af_isolate_child *procs[64];
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) procs[i] = &slots[i].proc;
    af_isolate_outcome o;
    int done = s->pool ? af_pool_wait_any(s, slots, n, timeout_ms, &o) : af_isolate_wait_any(procs, n, timeout_ms, &o);
    if (done >= 0) child_finish(s, &slots[done], &o);
    return done;
}

void af_session_run_isolated(af_session *s, const af_case *c, af_store_mode mode, const af_case *original,
                             int deadline_s, af_session_result *r) {
    af_child slot;
    memset(&slot, 0, sizeof slot);
    slot.result = r;
    slot.device = s->isolated_device; /* campaign --gpus: the GPU a minimisation runs on (-1 any) */
    if (child_spawn(s, &slot, c, mode, original, deadline_s)) {
        /* cannot fork: run here, unless the backend must stay out of this process */
        int err = errno;
        af_session_run(s, c, mode, original, r);
        if (s->isolated) snprintf(r->why, sizeof r->why, "fork failed: %s", strerror(err));
        return;
    }
    while (slot.proc.pid) {
        if (s->idle) s->idle(s->idle_user);
        if (af_child_wait_any(s, &slot, 1, s->idle ? 50 : 1000) >= 0) break;
    }
}
