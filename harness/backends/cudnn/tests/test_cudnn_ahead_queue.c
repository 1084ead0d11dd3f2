/* test_cudnn_ahead_queue.c — the builder thread of cudnn_ahead.h, on the CPU: a fake cuDNN
 * table whose cudnnCreate hands out a dummy handle (or fails), and jobs that record what
 * they saw, each holding the build lock as a cudnn build step does. Checks: jobs run in
 * order on the builder's own handle, under the build lock
 * (the owner holding it keeps the builder out); wait returns once the job ran, and at once
 * for a job never queued; stop lets the running job finish and drops the queued ones;
 * a builder whose cudnnCreate fails does not start and says why.
 * Without CUDA (the cudnn backend is not built) it prints SKIP and exits 77.
 */
#include <stdio.h>

#include "util/check.h"

#ifndef ATTNFUZZ_HAVE_CUDA
int main(void) {
    printf("SKIP test_cudnn_ahead_queue: built without CUDA (no cudnn backend)\n");
    return CHECK_SKIP_CODE;
}
#else

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "backends/cudnn/cudnn_ahead.h"

static int fake_handle_storage;
static int creates, destroys;
static cudnnStatus_t create_ok(cudnnHandle_t *h) {
    creates++;
    *h = (cudnnHandle_t)&fake_handle_storage;
    return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t create_fail(cudnnHandle_t *h) {
    *h = NULL;
    return CUDNN_STATUS_NOT_INITIALIZED;
}
static cudnnStatus_t destroy(cudnnHandle_t h) {
    destroys += h == (cudnnHandle_t)&fake_handle_storage;
    return CUDNN_STATUS_SUCCESS;
}
static const char *error_string(cudnnStatus_t st) { return st ? "CUDNN_STATUS_NOT_INITIALIZED" : "OK"; }
static void last_error(char *buf, size_t cap) { snprintf(buf, cap, "fake: no device"); }

typedef struct {
    af_ahead_job job; /* first: the builder hands back &job */
    af_cudnn_ahead *a;
    int id;
    cudnnHandle_t seen;
    int order;       /* position in which it ran */
    atomic_int hold; /* the job spins until the test clears it */
    atomic_int running;
} test_job;

static int ran_count;
static atomic_int in_build; /* a job is inside its fn */

static void job_fn(af_ahead_job *job, cudnnHandle_t handle) {
    test_job *t = (test_job *)job;
    af_cudnn_ahead_build_lock(t->a);
    in_build = 1;
    t->running = 1;
    t->seen = handle;
    t->order = ran_count++;
    while (t->hold) usleep(1000);
    usleep(20000); /* 20 ms of "building" */
    in_build = 0;
    af_cudnn_ahead_build_unlock(t->a);
}

int main(void) {
    af_cudnn_api api;
    memset(&api, 0, sizeof api);
    api.Create = create_ok;
    api.Destroy = destroy;
    api.GetErrorString = error_string;
    api.GetLastErrorString = last_error;
    char why[512];

    af_cudnn_ahead a;
    memset(&a, 0, sizeof a);
    CHECK_MSG(af_cudnn_ahead_start(&a, &api, why, sizeof why) == 0, "%s", why);
    CHECK(a.started && creates == 1);
    test_job jobs[3];
    memset(jobs, 0, sizeof jobs);
    test_job never;
    memset(&never, 0, sizeof never);
    CHECK_MSG(af_cudnn_ahead_wait(&a, &never.job) == 0, "a job never queued is waited for");
    for (int i = 0; i < 3; i++) {
        jobs[i].job.fn = job_fn;
        jobs[i].a = &a;
        jobs[i].id = i;
    }
    /* the owner holds the build lock: the queued jobs wait for it */
    af_cudnn_ahead_build_lock(&a);
    for (int i = 0; i < 3; i++) af_cudnn_ahead_submit(&a, &jobs[i].job);
    usleep(30000);
    int seen_building = in_build || jobs[0].running;
    CHECK(af_cudnn_ahead_pending(&a, &jobs[2].job));
    af_cudnn_ahead_build_unlock(&a);
    CHECK_MSG(!seen_building, "a job built while the owner held the build lock");
    double waited = af_cudnn_ahead_wait(&a, &jobs[2].job);
    CHECK_MSG(waited > 0, "waited %.6f s for a job queued behind two", waited);
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(jobs[i].job.ran && !jobs[i].job.pending, "job %d: ran %d pending %d", i, jobs[i].job.ran,
                  jobs[i].job.pending);
        CHECK_MSG(jobs[i].order == i, "job %d ran as number %d", i, jobs[i].order);
        CHECK_MSG(jobs[i].seen == (cudnnHandle_t)&fake_handle_storage, "job %d ran on another handle", i);
    }
    CHECK(af_cudnn_ahead_wait(&a, &jobs[1].job) == 0); /* done: no wait */

    /* stop with a job running and two queued: the first finishes, the others are dropped */
    test_job more[3];
    memset(more, 0, sizeof more);
    for (int i = 0; i < 3; i++) more[i].job.fn = job_fn, more[i].a = &a;
    more[0].hold = 1;
    for (int i = 0; i < 3; i++) af_cudnn_ahead_submit(&a, &more[i].job);
    while (!more[0].running) usleep(1000);
    pthread_mutex_lock(&a.mu); /* what af_cudnn_ahead_stop does first, then release the job */
    a.stop = true;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.mu);
    more[0].hold = 0;
    af_cudnn_ahead_stop(&a);
    CHECK_MSG(!a.started && destroys == 0, "the handle went with the thread, before the owner's graphs");
    CHECK_MSG(more[0].job.ran && !more[0].job.pending, "the running job did not finish");
    for (int i = 1; i < 3; i++)
        CHECK_MSG(!more[i].job.ran && !more[i].job.pending, "queued job %d: ran %d pending %d", i, more[i].job.ran,
                  more[i].job.pending);
    af_cudnn_ahead_stop(&a); /* twice: nothing */
    af_cudnn_ahead_close(&a);
    CHECK_MSG(destroys == 1, "close destroyed %d handles", destroys);
    af_cudnn_ahead_close(&a); /* twice: nothing */
    CHECK(destroys == 1);

    /* no handle: no builder, and why says so */
    api.Create = create_fail;
    af_cudnn_ahead b;
    memset(&b, 0, sizeof b);
    CHECK(af_cudnn_ahead_start(&b, &api, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "cudnnCreate failed") && strstr(why, "fake: no device"), "why: %s", why);
    CHECK(!b.started);
    CHECK(af_cudnn_ahead_wait(&b, &jobs[0].job) == 0);
    af_cudnn_ahead_build_lock(&b); /* no-ops when not started */
    af_cudnn_ahead_build_unlock(&b);
    af_cudnn_ahead_stop(&b);
    af_cudnn_ahead_close(&b);
    CHECK(destroys == 1);
    CHECK_DONE("test_cudnn_ahead_queue");
}
#endif
