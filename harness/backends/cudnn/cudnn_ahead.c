/* cudnn_ahead.c — the builder thread of cudnn_ahead.h. */
#include "backends/cudnn/cudnn_ahead.h"

#ifdef ATTNFUZZ_HAVE_CUDA

#include <stdio.h>
#include <string.h>

#include "util/clock.h"

static void *builder_main(void *arg) {
    af_cudnn_ahead *a = arg;
    cudnnStatus_t st = a->api->Create(&a->handle);
    pthread_mutex_lock(&a->mu);
    if (st != CUDNN_STATUS_SUCCESS) {
        char text[400];
        af_cudnn_status_text(a->api, st, text, sizeof text);
        snprintf(a->why, sizeof a->why, "cudnn: the builder's cudnnCreate failed: %s", text);
        a->handle = NULL;
        a->start_rc = -1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        return NULL;
    }
    a->start_rc = 0;
    pthread_cond_broadcast(&a->cv);
    for (;;) {
        while (!a->head && !a->stop) pthread_cond_wait(&a->cv, &a->mu);
        if (a->stop) break;
        af_ahead_job *job = a->head;
        a->head = job->next;
        if (!a->head) a->tail = NULL;
        pthread_mutex_unlock(&a->mu);
        job->fn(job, a->handle);
        pthread_mutex_lock(&a->mu);
        job->ran = true;
        job->pending = false;
        pthread_cond_broadcast(&a->cv);
    }
    for (af_ahead_job *job = a->head; job; job = job->next) job->pending = false; /* dropped */
    a->head = a->tail = NULL;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

int af_cudnn_ahead_start(af_cudnn_ahead *a, const af_cudnn_api *api, char *why, size_t cap) {
    a->api = api;
    a->start_rc = 1;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    pthread_mutex_init(&a->build_mu, NULL);
    if (pthread_create(&a->thread, NULL, builder_main, a) != 0) {
        snprintf(why, cap, "cudnn: no builder thread (pthread_create failed)");
        a->start_rc = -1;
        return -1;
    }
    a->started = true;
    pthread_mutex_lock(&a->mu);
    while (a->start_rc == 1) pthread_cond_wait(&a->cv, &a->mu);
    int rc = a->start_rc;
    pthread_mutex_unlock(&a->mu);
    if (rc) {
        snprintf(why, cap, "%s", a->why);
        pthread_join(a->thread, NULL);
        a->started = false;
    }
    return rc;
}

void af_cudnn_ahead_submit(af_cudnn_ahead *a, af_ahead_job *job) {
    pthread_mutex_lock(&a->mu);
    job->pending = true;
    job->ran = false;
    job->queued = af_clock_mono();
    job->next = NULL;
    if (a->tail)
        a->tail->next = job;
    else
        a->head = job;
    a->tail = job;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

double af_cudnn_ahead_wait(af_cudnn_ahead *a, af_ahead_job *job) {
    if (!a->started) return 0;
    double t0 = af_clock_mono();
    pthread_mutex_lock(&a->mu);
    bool waited = job->pending;
    while (job->pending) pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    return waited ? af_clock_mono() - t0 : 0;
}

bool af_cudnn_ahead_pending(af_cudnn_ahead *a, const af_ahead_job *job) {
    if (!a->started) return false;
    pthread_mutex_lock(&a->mu);
    bool p = job->pending;
    pthread_mutex_unlock(&a->mu);
    return p;
}

void af_cudnn_ahead_build_lock(af_cudnn_ahead *a) {
    if (a->started) pthread_mutex_lock(&a->build_mu);
}

void af_cudnn_ahead_build_unlock(af_cudnn_ahead *a) {
    if (a->started) pthread_mutex_unlock(&a->build_mu);
}

void af_cudnn_ahead_stop(af_cudnn_ahead *a) {
    if (!a->started) return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    a->started = false;
    a->joined = true;
}

void af_cudnn_ahead_close(af_cudnn_ahead *a) {
    if (a->started) af_cudnn_ahead_stop(a);
    if (!a->joined) return;
    a->joined = false;
    if (a->handle) a->api->Destroy(a->handle);
    a->handle = NULL;
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->build_mu);
}

#endif
