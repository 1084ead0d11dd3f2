/* test_parfor.c — af_parfor runs every item exactly once, with 1, 3 and 8 threads and
 * with more threads than items; af_parfor_threads is 1 below its minimum work;
 * af_parfor_run (the oracle's passes) gives every thread its own state, takes as many
 * threads as asked (12: no cap), ends every thread with thread_end, and returns -1 when a
 * thread's state cannot be made while the other threads still run every item once.
 * af_par_memcpy / af_par_memset / af_par_fill write exactly the bytes of memcpy, memset and
 * a loop of whole pattern copies, below and above their threshold and at sizes that end
 * inside a chunk and inside a pattern, and nothing past the end. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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

/* af_parfor_run: the states made, ended and failed; each item's state is the running thread's. */
typedef struct {
    atomic_int *hits;
    atomic_int inits, ends, ended_null, wrong_state;
    int fail_first; /* the first thread_init fails */
} state_ctx;

typedef struct {
    state_ctx *x;
    pthread_t self;
} thread_state;

static void *state_init(void *ctx) {
    state_ctx *x = ctx;
    if (atomic_fetch_add(&x->inits, 1) == 0 && x->fail_first) return NULL;
    thread_state *s = malloc(sizeof *s);
    CHECK(s != NULL);
    s->x = x;
    s->self = pthread_self();
    return s;
}

static void state_item(void *ctx, void *state, long i) {
    state_ctx *x = ctx;
    thread_state *s = state;
    if (!s || s->x != x || !pthread_equal(s->self, pthread_self())) atomic_fetch_add(&x->wrong_state, 1);
    atomic_fetch_add(&x->hits[i], 1);
}

static void state_end(void *ctx, void *state) {
    state_ctx *x = ctx;
    atomic_fetch_add(&x->ends, 1);
    if (!state) atomic_fetch_add(&x->ended_null, 1);
    free(state);
}

static void with_state(long n, int threads, int fail_first) {
    state_ctx x;
    x.hits = calloc((size_t)n, sizeof *x.hits);
    CHECK(x.hits != NULL);
    for (long i = 0; i < n; i++) atomic_init(&x.hits[i], 0);
    atomic_init(&x.inits, 0);
    atomic_init(&x.ends, 0);
    atomic_init(&x.ended_null, 0);
    atomic_init(&x.wrong_state, 0);
    x.fail_first = fail_first;
    af_parfor_job job = {state_init, state_item, state_end};
    int rc = af_parfor_run(&job, &x, n, threads);
    long wrong = 0;
    for (long i = 0; i < n; i++) wrong += atomic_load(&x.hits[i]) != (fail_first && threads == 1 ? 0 : 1);
    int inits = atomic_load(&x.inits);
    CHECK_MSG(rc == (fail_first ? -1 : 0), "rc %d with %d threads, fail_first %d", rc, threads, fail_first);
    CHECK_MSG(wrong == 0, "%ld of %ld items ran a wrong number of times (%d threads, fail_first %d)", wrong, n, threads,
              fail_first);
    CHECK_MSG(inits == threads, "%d states made for %d threads", inits, threads);
    CHECK_MSG(atomic_load(&x.ends) == inits, "%d threads ended of %d", atomic_load(&x.ends), inits);
    CHECK(atomic_load(&x.ended_null) == fail_first);
    CHECK(atomic_load(&x.wrong_state) == 0);
    free(x.hits);
}

/* The three bulk passes against their plain forms over n bytes, with a canary after. */
static void bulk_same(size_t n) {
    unsigned char *src = malloc(n + 64), *got = malloc(n + 64), *want = malloc(n + 64);
    CHECK(src && got && want);
    for (size_t i = 0; i < n + 64; i++) src[i] = (unsigned char)(i * 131u + (i >> 9));
    memset(got, 0xA5, n + 64);
    memset(want, 0xA5, n + 64);
    af_par_memcpy(got, src, n);
    memcpy(want, src, n);
    CHECK_MSG(memcmp(got, want, n + 64) == 0, "af_par_memcpy differs from memcpy at %zu bytes", n);
    af_par_memset(got, 0x3C, n);
    memset(want, 0x3C, n);
    CHECK_MSG(memcmp(got, want, n + 64) == 0, "af_par_memset differs from memset at %zu bytes", n);
    const unsigned char pat[4] = {0x00, 0x7E, 0xC0, 0x7F};
    for (size_t ps = 1; ps <= 4; ps *= 2) {
        af_par_fill(got, pat, ps, n);
        for (size_t k = 0; k + ps <= n; k += ps) memcpy(want + k, pat, ps);
        CHECK_MSG(memcmp(got, want, n + 64) == 0, "af_par_fill (pattern of %zu) differs at %zu bytes", ps, n);
    }
    CHECK_MSG(af_par_memeq(got, want, n), "af_par_memeq: equal buffers of %zu bytes differ", n);
    if (n > 0) { /* one byte moved, at the end (the last chunk) and at the start */
        got[n - 1] ^= 1;
        CHECK_MSG(!af_par_memeq(got, want, n), "af_par_memeq misses the last byte of %zu", n);
        got[n - 1] ^= 1;
        got[0] ^= 0x80;
        CHECK_MSG(!af_par_memeq(got, want, n), "af_par_memeq misses the first byte of %zu", n);
    }
    free(src);
    free(got);
    free(want);
}

int main(void) {
    bulk_same(0);
    bulk_same(3);
    bulk_same(4096 + 3);
    bulk_same((size_t)AF_PARMEM_MIN - 1);
    bulk_same((size_t)AF_PARMEM_MIN);
    bulk_same((size_t)AF_PARMEM_MIN + (size_t)AF_PARMEM_CHUNK / 2 + 1); /* ends inside a chunk and a pattern */
    once_each(100000, 1);
    once_each(100000, 3);
    once_each(100000, 8);
    once_each(2, 8);
    once_each(0, 4);
    CHECK(af_parfor_threads(10) == 1);
    CHECK(af_parfor_threads(0.0 / 0.0) == 1);
    int t = af_parfor_threads(1e9);
    CHECK_MSG(t >= 1 && t <= AF_PARFOR_MAX_THREADS, "threads %d", t);
    with_state(20000, 1, 0);
    with_state(20000, 12, 0);
    with_state(20000, 4, 1);
    with_state(50, 1, 1);
    CHECK_DONE("test_parfor");
}
