/* oracle_pool.c — a parallel-for over independent items, one state per thread.
 *
 * Items are pulled from one atomic counter, so the work balances itself; each item
 * writes only its own outputs, so the results do not depend on the thread count.
 * MPFR is thread-safe with per-thread variables; every thread frees its MPFR caches
 * before it ends (only the local ones: shared caches must not be freed while other
 * threads compute; the calling thread frees everything after the join).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "oracle/src/oracle_internal.h"

typedef struct {
    const af_pool_job *job;
    void *ctx;
    long n;
    atomic_long next;
    atomic_int failed;
} pool_shared;

static void *pool_worker(void *arg) {
    pool_shared *sh = arg;
    void *state = sh->job->thread_init(sh->ctx);
    if (!state) {
        atomic_store(&sh->failed, 1);
    } else {
        for (;;) {
            long index = atomic_fetch_add(&sh->next, 1);
            if (index >= sh->n) break;
            sh->job->item(sh->ctx, state, index);
        }
        sh->job->thread_fini(state);
    }
    mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    return NULL;
}

int af_pool_run(const af_pool_job *job, void *ctx, long n, int threads) {
    if (n <= 0) return 0;
    if (threads < 1) threads = 1;
    if ((long)threads > n) threads = (int)n;
    pool_shared sh;
    sh.job = job;
    sh.ctx = ctx;
    sh.n = n;
    atomic_init(&sh.next, 0);
    atomic_init(&sh.failed, 0);

    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    int started = 0;
    if (tid) {
        for (int t = 1; t < threads; t++) {
            if (pthread_create(&tid[started], NULL, pool_worker, &sh) != 0) break;
            started++;
        }
    }
    pool_worker(&sh); /* the calling thread works too */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(tid);
    return atomic_load(&sh.failed) ? -1 : 0;
}
