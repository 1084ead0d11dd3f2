/* util/parfor.h — a parallel for over independent items (POSIX threads).
 *
 * item(ctx, i) runs once for every i in [0, n), on up to `threads` threads (the caller's
 * among them), items pulled from one atomic counter. Each item must write only its own
 * outputs: then the results are the same bits whatever the thread count, which the
 * judge's row passes and the oracle's passes rely on (a verdict never depends on the
 * machine's cores). af_parfor_run is the primitive (per-thread state, as the oracle's
 * MPFR passes need); af_parfor is it without state.
 */
#ifndef ATTNFUZZ_UTIL_PARFOR_H
#define ATTNFUZZ_UTIL_PARFOR_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pass whose threads each hold a state (scratch buffers, MPFR variables). */
typedef struct {
    void *(*thread_init)(void *ctx);              /* a thread's state; NULL = failure (that thread takes no item);
                                                     the hook NULL: no state, every state NULL */
    void (*item)(void *ctx, void *state, long i); /* one item */
    void (*thread_end)(void *ctx, void *state);   /* every thread ends with it, state NULL where its init failed;
                                                     may be NULL */
} af_parfor_job;

/* Runs job->item for i in [0, n) on up to `threads` threads (no cap here), the calling
 * thread among them; falls back to the calling thread alone when threads cannot start.
 * Returns 0, or -1 when a thread's state could not be made (the other threads still ran
 * every item; with one thread, none ran). */
int af_parfor_run(const af_parfor_job *job, void *ctx, long n, int threads);

typedef void (*af_parfor_item)(void *ctx, long i);

/* Runs every item, on at most AF_PARFOR_MAX_THREADS threads. */
void af_parfor(long n, int threads, af_parfor_item item, void *ctx);

/* Threads for a pass of `work` element operations: 1 below AF_PARFOR_MIN_WORK, else the
 * online cores, at most AF_PARFOR_MAX_THREADS (a campaign runs several judges at once). */
#define AF_PARFOR_MIN_WORK    (1L << 20)
#define AF_PARFOR_MAX_THREADS 8
int af_parfor_threads(double work);

/* Bulk memory passes on the same threads (the same bytes as memcpy / memset / a repeated
 * pattern, written in chunks of AF_PARMEM_CHUNK bytes): a long case's buffers are GiBs,
 * and a fresh buffer's first write also pays the kernel's zeroing of its pages, which
 * then spreads over the threads too. Below AF_PARMEM_MIN bytes they are the plain calls. */
#define AF_PARMEM_CHUNK (4L << 20)
#define AF_PARMEM_MIN   (16L << 20)
void af_par_memcpy(void *dst, const void *src, size_t bytes);
void af_par_memset(void *dst, int byte, size_t bytes);
/* dst[0, bytes) = the pattern (psize bytes, 1..16, a divisor of AF_PARMEM_CHUNK) repeated
 * from dst's first byte; a last partial copy is not written (as a loop of whole copies). */
void af_par_fill(void *dst, const void *pattern, size_t psize, size_t bytes);
/* memcmp(a, b, bytes) == 0, compared in chunks on the same threads. */
bool af_par_memeq(const void *a, const void *b, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
