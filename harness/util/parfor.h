/* util/parfor.h — a parallel for over independent items (POSIX threads).
 *
 * item(ctx, i) runs once for every i in [0, n), on up to `threads` threads (the caller's
 * among them), items pulled from one atomic counter. Each item must write only its own
 * outputs: then the results are the same bits whatever the thread count, which the
 * judge's row passes rely on (a verdict never depends on the machine's cores).
 */
#ifndef ATTNFUZZ_UTIL_PARFOR_H
#define ATTNFUZZ_UTIL_PARFOR_H

typedef void (*af_parfor_item)(void *ctx, long i);

/* Runs every item; falls back to the calling thread alone when threads cannot start. */
void af_parfor(long n, int threads, af_parfor_item item, void *ctx);

/* Threads for a pass of `work` element operations: 1 below AF_PARFOR_MIN_WORK, else the
 * online cores, at most AF_PARFOR_MAX_THREADS (a campaign runs several judges at once). */
#define AF_PARFOR_MIN_WORK    (1L << 20)
#define AF_PARFOR_MAX_THREADS 8
int af_parfor_threads(double work);

#endif
