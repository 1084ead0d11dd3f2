/* util/stage_mark.h — where a process running a case is, readable by the process that
 * forked it: marks in memory shared across fork (one mmap(MAP_SHARED | MAP_ANONYMOUS)
 * page of AF_STAGE_MARKS marks, made by the parent before it forks), written by the
 * child as it goes: the judge's stage (af_runner.mark) and the backend's calls in flight
 * (af_backend.mark, counted by af_backend_run). When a child outlives its deadline the
 * parent reads its mark: inside a backend call the hang is the kernel's (a hang finding);
 * in the judge's own stages (generation, the oracle, the reference, the checks) it is
 * attnfuzz's time, not a finding on the kernel (campaign/session_child.c).
 *
 * A mark is plain data written with relaxed atomics by any thread of the child; the
 * parent reads it after the child is gone or stopped, so no lock is needed. */
#ifndef ATTNFUZZ_UTIL_STAGE_MARK_H
#define ATTNFUZZ_UTIL_STAGE_MARK_H

#include <stdbool.h>
#include <stddef.h>

/* The judge's stages, in the order a case passes them. */
typedef enum {
    AF_STAGE_NONE = 0,  /* not started (or between cases) */
    AF_STAGE_GEN,       /* the inputs */
    AF_STAGE_ORACLE,    /* the oracle's values (and the term magnitudes) */
    AF_STAGE_REFERENCE, /* the low-precision reference */
    AF_STAGE_RUN,       /* the backend's runs of the case (the judged run, the repeats) */
    AF_STAGE_CHECK,     /* the buffer checks and the comparison of a run */
    AF_STAGE_CERT,      /* waiting for the MPFR certification */
    AF_STAGE_PROBES,    /* the probes (their reruns count as backend calls) */
    AF_STAGE_STORE,     /* writing the verdict and the finding */
    AF_STAGE_COUNT
} af_stage;

typedef struct af_stage_mark {
    int stage;            /* af_stage */
    int in_backend;       /* backend calls in flight (af_backend_run), any thread */
    double stage_since;   /* af_clock_mono when the stage began */
    double backend_since; /* af_clock_mono when the outermost backend call in flight began */
    char step[24];        /* the part of the stage ("capacity": the probe running); "" = none */
} af_stage_mark;

/* Marks per shared page: one per child a session can have in flight. */
#define AF_STAGE_MARKS 64

/* AF_STAGE_MARKS zeroed marks shared with every process forked after this call, or NULL
 * when the mapping fails (then nothing is marked). */
af_stage_mark *af_stage_marks_new(void);
void af_stage_marks_free(af_stage_mark *marks);

/* The child's writes (m NULL: nothing). */
void af_stage_mark_reset(af_stage_mark *m);
void af_stage_mark_set(af_stage_mark *m, af_stage stage);
/* The part of the stage now (a probe's name), until the next af_stage_mark_set. */
void af_stage_mark_step(af_stage_mark *m, const char *step);
void af_stage_mark_backend_enter(af_stage_mark *m);
void af_stage_mark_backend_leave(af_stage_mark *m);

/* "oracle", "reference", ... */
const char *af_stage_name(af_stage stage);

/* The parent's reading of a child's mark at time now (af_clock_mono): true when a backend
 * call was in flight (the hang is the backend's), and in buf one clause for a reason,
 * "in the backend's call for 290 s (attnfuzz's probes stage: capacity)" or "in attnfuzz's
 * oracle stage for 280 s, no backend call in flight". */
bool af_stage_mark_describe(const af_stage_mark *m, double now, char *buf, size_t cap);

#endif
