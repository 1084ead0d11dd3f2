/* parfor.c — see parfor.h. */
#include "util/parfor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const af_parfor_job *job;
    void *ctx;
    long n;
    atomic_long next; /* the next item to take */
    atomic_int failed;
} parfor_shared;

static void *parfor_worker(void *arg) {
    parfor_shared *sh = arg;
    const af_parfor_job *job = sh->job;
    void *state = NULL;
    if (job->thread_init) state = job->thread_init(sh->ctx);
    if (job->thread_init && !state) {
        atomic_store(&sh->failed, 1);
    } else {
        for (;;) {
            long i = atomic_fetch_add(&sh->next, 1);
            if (i >= sh->n) break;
            job->item(sh->ctx, state, i);
        }
    }
    if (job->thread_end) job->thread_end(sh->ctx, state);
    return NULL;
}

int af_parfor_run(const af_parfor_job *job, void *ctx, long n, int threads) {
    if (n <= 0) return 0;
    if (threads < 1) threads = 1;
    if ((long)threads > n) threads = (int)n;
    parfor_shared sh = {job, ctx, n, 0, 0};
    atomic_init(&sh.next, 0);
    atomic_init(&sh.failed, 0);
    pthread_t *tid = threads > 1 ? calloc((size_t)threads, sizeof *tid) : NULL;
    int started = 0;
    if (tid) {
        for (int t = 1; t < threads; t++) {
            if (pthread_create(&tid[started], NULL, parfor_worker, &sh) != 0) break;
            started++;
        }
    }
    parfor_worker(&sh); /* the calling thread works too */
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    free(tid);
    return atomic_load(&sh.failed) ? -1 : 0;
}

/* af_parfor: the stateless item behind the job's. */
typedef struct {
    af_parfor_item item;
    void *ctx;
} plain_ctx;

static void plain_item(void *ctx, void *state, long i) {
    (void)state;
    plain_ctx *x = ctx;
    x->item(x->ctx, i);
}

void af_parfor(long n, int threads, af_parfor_item item, void *ctx) {
    if (threads > AF_PARFOR_MAX_THREADS) threads = AF_PARFOR_MAX_THREADS;
    plain_ctx x = {item, ctx};
    af_parfor_job job = {NULL, plain_item, NULL};
    af_parfor_run(&job, &x, n, threads);
}

int af_parfor_threads(double work) {
    if (!(work >= (double)AF_PARFOR_MIN_WORK)) return 1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    return cores > AF_PARFOR_MAX_THREADS ? AF_PARFOR_MAX_THREADS : (int)cores;
}

/* ---- bulk memory passes ---- */

typedef struct {
    uint8_t *dst;
    const uint8_t *src;  /* memcpy; NULL: fill */
    uint8_t pattern[16]; /* fill: the repeated bytes */
    size_t psize, bytes;
} mem_pass;

/* dst[0 .. n) with the psize-byte pattern repeated, whole patterns only (a tail shorter
 * than psize is left as it was): the pattern once, then the filled part copied onto what
 * follows, doubling (a call per element would cost more than the bytes). */
static void fill_pattern(uint8_t *dst, const uint8_t *pattern, size_t psize, size_t n) {
    size_t whole = n / psize * psize;
    if (!whole) return;
    memcpy(dst, pattern, psize);
    for (size_t done = psize; done < whole;) {
        size_t c = done < whole - done ? done : whole - done;
        memcpy(dst + done, dst, c);
        done += c;
    }
}

static void mem_item(void *ctx, long i) {
    const mem_pass *x = ctx;
    size_t off = (size_t)i * (size_t)AF_PARMEM_CHUNK;
    size_t n = x->bytes - off < (size_t)AF_PARMEM_CHUNK ? x->bytes - off : (size_t)AF_PARMEM_CHUNK;
    if (x->src) {
        memcpy(x->dst + off, x->src + off, n);
    } else if (x->psize == 1) {
        memset(x->dst + off, x->pattern[0], n);
    } else { /* chunks start at multiples of psize (it divides the chunk size) */
        fill_pattern(x->dst + off, x->pattern, x->psize, n);
    }
}

static void mem_run(mem_pass *x) {
    long chunks = (long)((x->bytes + (size_t)AF_PARMEM_CHUNK - 1) / (size_t)AF_PARMEM_CHUNK);
    int threads = x->bytes < (size_t)AF_PARMEM_MIN ? 1 : af_parfor_threads((double)x->bytes);
    if (threads <= 1) {
        for (long i = 0; i < chunks; i++) mem_item(x, i);
        return;
    }
    af_parfor(chunks, threads, mem_item, x);
}

void af_par_memcpy(void *dst, const void *src, size_t bytes) {
    if (bytes < (size_t)AF_PARMEM_MIN) {
        memcpy(dst, src, bytes);
        return;
    }
    mem_pass x = {dst, src, {0}, 0, bytes};
    mem_run(&x);
}

void af_par_memset(void *dst, int byte, size_t bytes) {
    if (bytes < (size_t)AF_PARMEM_MIN) {
        memset(dst, byte, bytes);
        return;
    }
    mem_pass x = {dst, NULL, {(uint8_t)byte}, 1, bytes};
    mem_run(&x);
}

void af_par_fill(void *dst, const void *pattern, size_t psize, size_t bytes) {
    if (psize < 1 || psize > 16) return;
    mem_pass x = {dst, NULL, {0}, psize, bytes};
    memcpy(x.pattern, pattern, psize);
    if (bytes < (size_t)AF_PARMEM_MIN) {
        fill_pattern(x.dst, x.pattern, psize, bytes);
        return;
    }
    mem_run(&x);
}

typedef struct {
    const uint8_t *a, *b;
    size_t bytes;
    atomic_int differs;
} eq_pass;

static void eq_item(void *ctx, long i) {
    eq_pass *x = ctx;
    if (atomic_load(&x->differs)) return; /* the answer is known */
    size_t off = (size_t)i * (size_t)AF_PARMEM_CHUNK;
    size_t n = x->bytes - off < (size_t)AF_PARMEM_CHUNK ? x->bytes - off : (size_t)AF_PARMEM_CHUNK;
    if (memcmp(x->a + off, x->b + off, n)) atomic_store(&x->differs, 1);
}

bool af_par_memeq(const void *a, const void *b, size_t bytes) {
    if (bytes < (size_t)AF_PARMEM_MIN) return memcmp(a, b, bytes) == 0;
    eq_pass x;
    x.a = a, x.b = b, x.bytes = bytes;
    atomic_init(&x.differs, 0);
    long chunks = (long)((bytes + (size_t)AF_PARMEM_CHUNK - 1) / (size_t)AF_PARMEM_CHUNK);
    af_parfor(chunks, af_parfor_threads((double)bytes), eq_item, &x);
    return !atomic_load(&x.differs);
}
