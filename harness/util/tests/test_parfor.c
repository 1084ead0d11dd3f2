/* test_parfor.c — af_parfor runs every item exactly once, with 1, 3 and 8 threads and
 * with more threads than items; af_parfor_threads is 1 below its minimum work. */
#include <stdatomic.h>
#include <stdlib.h>

#include "util/check.h"
#include "util/parfor.h"

typedef struct {
    atomic_int *hits; /* (n) how often item i ran */
} hits_ctx;

static void hit(void *ctx, long i) { atomic_fetch_add(&((hits_ctx *)ctx)->hits[i], 1); }

static void once_each(long n, int threads) {
    atomic_int *hits = calloc((size_t)n + 1, sizeof *hits);
    CHECK(hits != NULL);
    for (long i = 0; i < n; i++) atomic_init(&hits[i], 0);
    hits_ctx x = {hits};
    af_parfor(n, threads, hit, &x);
    long wrong = 0;
    for (long i = 0; i < n; i++) wrong += atomic_load(&hits[i]) != 1;
    CHECK_MSG(wrong == 0, "%ld of %ld items did not run exactly once with %d threads", wrong, n, threads);
    free(hits);
}

int main(void) {
    once_each(100000, 1);
    once_each(100000, 3);
    once_each(100000, 8);
    once_each(2, 8);
    once_each(0, 4);
    CHECK(af_parfor_threads(10) == 1);
    CHECK(af_parfor_threads(0.0 / 0.0) == 1);
    int t = af_parfor_threads(1e9);
    CHECK_MSG(t >= 1 && t <= AF_PARFOR_MAX_THREADS, "threads %d", t);
    CHECK_DONE("test_parfor");
}
