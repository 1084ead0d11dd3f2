/* parfor.c — see parfor.h. */
#include "util/parfor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

typedef struct {
    af_parfor_item item;
    void *ctx;
    long n;
    atomic_long next; /* the next item to take */
} parfor_shared;

static void *parfor_worker(void *arg) {
    parfor_shared *sh = arg;
    for (;;) {
        long i = atomic_fetch_add(&sh->next, 1);
        if (i >= sh->n) break;
        sh->item(sh->ctx, i);
    }
    return NULL;
}

void af_parfor(long n, int threads, af_parfor_item item, void *ctx) {
    if (n <= 0) return;
    if (threads > AF_PARFOR_MAX_THREADS) threads = AF_PARFOR_MAX_THREADS;
    if ((long)threads > n) threads = (int)n;
    parfor_shared sh = {item, ctx, n, 0};
    atomic_init(&sh.next, 0);
    pthread_t tid[AF_PARFOR_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&tid[started], NULL, parfor_worker, &sh) != 0) break;
        started++;
    }
    parfor_worker(&sh); /* the calling thread works too */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
}

int af_parfor_threads(double work) {
    if (!(work >= (double)AF_PARFOR_MIN_WORK)) return 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    return cores > AF_PARFOR_MAX_THREADS ? AF_PARFOR_MAX_THREADS : (int)cores;
}
