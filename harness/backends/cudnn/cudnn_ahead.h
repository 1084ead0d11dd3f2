/* cudnn_ahead.h — builds ahead: one background thread, with a cuDNN handle of its own,
 * that runs the cudnn backend's build jobs (operation graphs, heuristics, execution
 * plans: cuDNN compiling its kernels) while the caller's thread goes on with other work,
 * e.g. the judge generating the case's inputs and computing its oracle.
 *
 * A job belongs to the builder from af_cudnn_ahead_submit until it is done; the owner
 * waits for it (af_cudnn_ahead_wait) before it touches what the job builds. Every build
 * step, the owner's and a job's alike (one graph, one heuristics query, one plan), holds
 * the build lock (af_cudnn_ahead_build_lock) while it calls cuDNN: no two threads build at
 * once, so a graph made with the builder's handle is never used by two threads together
 * (cuDNN: a handle is used by one thread at a time), while the owner executes plans on its
 * own handle beside a build, and a step that needs nothing built takes no lock.
 *
 * cuDNN's docs recommend one handle per thread, the first created synchronously before
 * the others; the owner's handle exists before af_cudnn_ahead_start creates the builder's.
 */
#ifndef ATTNFUZZ_CUDNN_AHEAD_H
#define ATTNFUZZ_CUDNN_AHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "backends/cudnn/cudnn_api.h"

#ifdef ATTNFUZZ_HAVE_CUDA

typedef struct af_ahead_job af_ahead_job;
struct af_ahead_job {
    /* runs on the builder thread with the builder's handle; its build steps take the lock */
    void (*fn)(af_ahead_job *job, cudnnHandle_t handle);
    bool pending;  /* queued or running (guarded by the builder's mutex) */
    bool ran;      /* fn ran (a job dropped at af_cudnn_ahead_stop did not) */
    double queued; /* af_clock_mono() at submit */
    af_ahead_job *next;
};

typedef struct {
    const af_cudnn_api *api;
    pthread_t thread;
    bool started, stop;
    bool joined;              /* stopped: the handle and locks wait for af_cudnn_ahead_close */
    pthread_mutex_t mu;       /* the queue and every job's pending / ran */
    pthread_cond_t cv;        /* a job queued, a job done, stop, the handle made */
    pthread_mutex_t build_mu; /* held by each build step of either thread */
    af_ahead_job *head, *tail;
    cudnnHandle_t handle; /* the builder's own */
    int start_rc;         /* 1 while the builder makes its handle, then 0 or -1 */
    char why[512];        /* why the builder could not start */
} af_cudnn_ahead;

/* Start the builder thread (it makes its own handle). 0, or -1 with why (no thread or no
 * handle: the caller builds everything itself). a is zeroed by the caller before. */
int af_cudnn_ahead_start(af_cudnn_ahead *a, const af_cudnn_api *api, char *why, size_t cap);
/* Queue job (its fn set); the builder runs the jobs in order. */
void af_cudnn_ahead_submit(af_cudnn_ahead *a, af_ahead_job *job);
/* Wait until job is not pending (at once when it is not); the seconds waited. */
double af_cudnn_ahead_wait(af_cudnn_ahead *a, af_ahead_job *job);
/* Whether job is queued or running now. */
bool af_cudnn_ahead_pending(af_cudnn_ahead *a, const af_ahead_job *job);
/* The build lock around one build step, on either thread (no-ops when not started). */
void af_cudnn_ahead_build_lock(af_cudnn_ahead *a);
void af_cudnn_ahead_build_unlock(af_cudnn_ahead *a);
/* Stop: the job running finishes, the queued ones are dropped (pending cleared, ran
 * false); the thread is joined. Its handle stays until af_cudnn_ahead_close, so the owner
 * destroys the graphs and plans built with it first. Safe when never started, and twice. */
void af_cudnn_ahead_stop(af_cudnn_ahead *a);
/* After af_cudnn_ahead_stop and after everything built with the builder's handle is gone:
 * the handle destroyed, the locks released. Safe when never started, and twice. */
void af_cudnn_ahead_close(af_cudnn_ahead *a);

#endif /* ATTNFUZZ_HAVE_CUDA */
#endif
