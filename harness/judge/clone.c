/* clone.c — working copies of template buffers and their pool (clone.h). */
#include "judge/clone.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_CAP 64 /* blocks: a case keeps at most a few copies of AF_BUF_COUNT buffers alive */

struct af_clone_pool {
    pthread_mutex_t mu;
    int n;
    void *block[POOL_CAP];
    size_t size[POOL_CAP];
};

af_clone_pool *af_clone_pool_new(void) {
    af_clone_pool *p = calloc(1, sizeof *p);
    if (p && pthread_mutex_init(&p->mu, NULL)) {
        free(p);
        return NULL;
    }
    return p;
}

void af_clone_pool_free(af_clone_pool *pool) {
    if (!pool) return;
    for (int k = 0; k < pool->n; k++) free(pool->block[k]);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

size_t af_clone_pool_held(af_clone_pool *pool, int *blocks) {
    size_t bytes = 0;
    pthread_mutex_lock(&pool->mu);
    for (int k = 0; k < pool->n; k++) bytes += pool->size[k];
    if (blocks) *blocks = pool->n;
    pthread_mutex_unlock(&pool->mu);
    return bytes;
}

/* af_tensors_mem.take: a held block of exactly this size, or NULL */
static void *pool_take(void *ctx, size_t size) {
    af_clone_pool *pool = ctx;
    void *b = NULL;
    pthread_mutex_lock(&pool->mu);
    for (int k = pool->n - 1; k >= 0; k--)
        if (pool->size[k] == size) {
            b = pool->block[k];
            pool->block[k] = pool->block[pool->n - 1];
            pool->size[k] = pool->size[pool->n - 1];
            pool->n--;
            break;
        }
    pthread_mutex_unlock(&pool->mu);
    return b;
}

/* Keep block b of size bytes; false when the pool is full (the caller frees it). */
static bool pool_give(af_clone_pool *pool, void *b, size_t size) {
    bool kept = false;
    pthread_mutex_lock(&pool->mu);
    if (pool->n < POOL_CAP) {
        pool->block[pool->n] = b;
        pool->size[pool->n] = size;
        pool->n++;
        kept = true;
    }
    pthread_mutex_unlock(&pool->mu);
    return kept;
}

int af_clone_tensors(af_tensors *dst, const af_case *c, const af_tensors *template_tensors, af_clone_pool *pool,
                     char *why, size_t cap) {
    /* every byte of every buffer (guards included) is copied next: no guard fill */
    af_tensors_mem mem = {pool ? pool_take : NULL, pool, false};
    if (af_tensors_alloc_from(dst, c, &mem, why, cap)) return -1;
    for (int i = 0; i < AF_BUF_COUNT; i++) /* a buffer the copy below does not cover: filled as fresh */
        if (dst->alloc[i] && (!template_tensors->alloc[i] || template_tensors->bytes[i] != dst->bytes[i]))
            memset(dst->alloc[i], (int)AF_GUARD_BYTE, dst->bytes[i] + 2 * AF_GUARD_BYTES);
    if (template_tensors->bias_given && !af_tensors_bias_alloc(dst, c)) { /* the copy owns its own */
        snprintf(why, cap, "out of host memory for the given bias");
        af_tensors_free(dst);
        return -1;
    }
    af_tensors_copy(dst, template_tensors);
    dst->mx_scale_q = template_tensors->mx_scale_q;
    dst->mx_scale_k = template_tensors->mx_scale_k;
    dst->mx_scale_v = template_tensors->mx_scale_v;
    return 0;
}

void af_clone_disown_scales(af_tensors *t) { t->mx_scale_q = t->mx_scale_k = t->mx_scale_v = NULL; }

void af_clone_release(af_tensors *t, af_clone_pool *pool) {
    af_clone_disown_scales(t);
    if (pool)
        for (int i = 0; i < AF_BUF_COUNT; i++)
            if (t->alloc[i] && pool_give(pool, t->alloc[i], t->bytes[i] + 2 * AF_GUARD_BYTES)) t->alloc[i] = NULL;
    af_tensors_free(t);
}
