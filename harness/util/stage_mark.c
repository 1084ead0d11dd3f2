/* util/stage_mark.c — marks shared across fork (util/stage_mark.h). */
#include "util/stage_mark.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "util/clock.h"

af_stage_mark *af_stage_marks_new(void) {
    void *p =
        mmap(NULL, AF_STAGE_MARKS * sizeof(af_stage_mark), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : (af_stage_mark *)p; /* anonymous pages come zeroed */
}

void af_stage_marks_free(af_stage_mark *marks) {
    if (marks) munmap(marks, AF_STAGE_MARKS * sizeof(af_stage_mark));
}

void af_stage_mark_reset(af_stage_mark *m) {
    if (!m) return;
    __atomic_store_n(&m->in_backend, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&m->stage, (int)AF_STAGE_NONE, __ATOMIC_RELAXED);
    m->stage_since = m->backend_since = af_clock_mono();
    m->step[0] = '\0';
}

void af_stage_mark_set(af_stage_mark *m, af_stage stage) {
    if (!m) return;
    m->stage_since = af_clock_mono();
    m->step[0] = '\0';
    __atomic_store_n(&m->stage, (int)stage, __ATOMIC_RELEASE);
}

void af_stage_mark_step(af_stage_mark *m, const char *step) {
    if (m) snprintf(m->step, sizeof m->step, "%s", step ? step : "");
}

void af_stage_mark_backend_enter(af_stage_mark *m) {
    if (!m) return;
    double now = af_clock_mono();
    if (__atomic_fetch_add(&m->in_backend, 1, __ATOMIC_ACQ_REL) == 0) m->backend_since = now;
}

void af_stage_mark_backend_leave(af_stage_mark *m) {
    if (m) __atomic_fetch_sub(&m->in_backend, 1, __ATOMIC_ACQ_REL);
}

const char *af_stage_name(af_stage stage) {
    static const char *const names[AF_STAGE_COUNT] = {"start",  "generation",    "oracle", "reference", "run",
                                                      "checks", "certification", "probes", "store"};
    return (unsigned)stage < AF_STAGE_COUNT ? names[stage] : "unknown";
}

bool af_stage_mark_describe(const af_stage_mark *m, double now, char *buf, size_t cap) {
    int stage = __atomic_load_n(&m->stage, __ATOMIC_ACQUIRE);
    int in_backend = __atomic_load_n(&m->in_backend, __ATOMIC_ACQUIRE);
    char step[sizeof m->step + 2] = "";
    if (m->step[0]) snprintf(step, sizeof step, ": %.*s", (int)sizeof m->step - 1, m->step);
    if (in_backend > 0) {
        snprintf(buf, cap, "in the backend's call for %.0f s (attnfuzz's %s stage%s)", now - m->backend_since,
                 af_stage_name((af_stage)stage), step);
        return true;
    }
    snprintf(buf, cap, "in attnfuzz's %s stage%s for %.0f s, no backend call in flight", af_stage_name((af_stage)stage),
             step, now - m->stage_since);
    return false;
}
